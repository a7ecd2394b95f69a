/* halfopen.c — ll-halfopen: a crowd that never finishes its requests.
 *
 *     ll-halfopen --connect HOST:PORT --count N [--hold S] [--partial]
 *                 [--probe URL-PATH] [--probe-every-ms MS]
 *
 * Opens N TCP connections to HOST:PORT as fast as the server accepts them
 * (non-blocking connects, a few hundred in flight at once) and holds them
 * for --hold seconds; with --partial each sends the first half of a request
 * line and never the rest (a slow-loris client), otherwise nothing at all.
 * Meanwhile, on one more connection of its own, it asks GET PROBE (default
 * /health) every --probe-every-ms (100) and times each answer: what another
 * client gets while the crowd sits there. At the end it prints one line of
 * JSON: connections opened, refused or reset by the server before the hold
 * ended (the server may close them when its header time-out passes:
 * "closed_by_server", and when, to the second), and the probe's answers
 * (count, failures, latency max and p99 in ms).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROBES_MAX 100000

static long long now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int sock_to(const struct sockaddr_in *sa, int nonblock)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);

    if (fd < 0)
        return -1;
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One GET on its own short connection: the latency in µs, or -1. */
static long long probe(const struct sockaddr_in *sa, const char *path, int timeout_ms)
{
    char req[256], buf[4096];
    long long t0 = now_us();
    struct pollfd p;
    int fd = sock_to(sa, 0), n, got = 0;

    if (fd < 0)
        return -1;
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        close(fd);
        return -1;
    }
    p.fd = fd;
    p.events = POLLIN;
    while (poll(&p, 1, timeout_ms) == 1 && (n = (int)read(fd, buf + got, sizeof buf - 1 - (size_t)got)) > 0)
        got += n;
    close(fd);
    buf[got] = '\0';
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 ? now_us() - t0 : -1;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *target = NULL, *path = "/health";
    int count = 1000, hold_s = 10, partial = 0, every_ms = 100, i;
    struct sockaddr_in sa = { .sin_family = AF_INET };
    static long long lat[PROBES_MAX];
    int nlat = 0, failed = 0, opened = 0, refused = 0, closed = 0;
    long long t_end, first_close_ms = -1, last_close_ms = -1, t_open;
    int *fds;
    struct rlimit rl;
    char host[64];
    int port;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--connect") && i + 1 < argc) target = argv[++i];
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hold") && i + 1 < argc) hold_s = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--partial")) partial = 1;
        else if (!strcmp(argv[i], "--probe") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--probe-every-ms") && i + 1 < argc) every_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: ll-halfopen --connect HOST:PORT --count N [--hold S] "
                    "[--partial] [--probe PATH] [--probe-every-ms MS]\n");
            return 2;
        }
    }
    if (target == NULL || sscanf(target, "%63[^:]:%d", host, &port) != 2 ||
        inet_pton(AF_INET, host, &sa.sin_addr) != 1 || count < 1 || every_ms < 1) {
        fprintf(stderr, "ll-halfopen: --connect HOST:PORT (an IPv4 address) and --count N are needed\n");
        return 2;
    }
    sa.sin_port = htons((uint16_t)port);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    fds = calloc((size_t)count, sizeof *fds);
    t_open = now_us();
    for (i = 0; i < count; i++) {
        fds[i] = sock_to(&sa, 1);
        if (fds[i] < 0) {
            refused++;
            continue;
        }
        opened++;
        if (partial && write(fds[i], "GET /check/lo", 13) < 0 && errno != EAGAIN)
            refused++;
        if (i % 200 == 199)
            usleep(1000);       /* let the accept queue drain */
    }
    t_end = now_us() + (long long)hold_s * 1000000;
    for (long long next_check = 0; now_us() < t_end;) {
        long long l = probe(&sa, path, 2000);
        if (l < 0)
            failed++;
        else if (nlat < PROBES_MAX)
            lat[nlat++] = l;
        usleep((useconds_t)every_ms * 1000);
        if (now_us() < next_check)
            continue;
        next_check = now_us() + 1000000;
        /* Once a second: which of ours has the server closed (its header
         * time-out)? */
        for (i = 0; i < count; i++) {
            char c;
            if (fds[i] < 0)
                continue;
            if (recv(fds[i], &c, 1, MSG_DONTWAIT | MSG_PEEK) == 0 ||
                (errno == ECONNRESET)) {
                long long ms = (now_us() - t_open) / 1000;
                close(fds[i]);
                fds[i] = -1;
                closed++;
                if (first_close_ms < 0)
                    first_close_ms = ms;
                last_close_ms = ms;
            }
            errno = 0;
        }
    }
    for (i = 0; i < count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    qsort(lat, (size_t)nlat, sizeof lat[0], cmp_ll);
    printf("{\"connections\":%d,\"opened\":%d,\"refused\":%d,\"closed_by_server\":%d,"
           "\"first_close_ms\":%lld,\"last_close_ms\":%lld,\"probes\":%d,\"probe_failures\":%d,"
           "\"probe_p99_ms\":%.2f,\"probe_max_ms\":%.2f}\n",
           count, opened, refused, closed, first_close_ms, last_close_ms, nlat, failed,
           nlat ? lat[(nlat * 99) / 100 < nlat ? (nlat * 99) / 100 : nlat - 1] / 1000.0 : -1.0,
           nlat ? lat[nlat - 1] / 1000.0 : -1.0);
    free(fds);
    return 0;
}
