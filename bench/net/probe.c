/* probe.c — ll-probe: the TCP round trip to some servers, as a client on
 * another host would see it.
 *
 *     ll-probe [--count N] [--interval-ms MS] [--json] HOST:PORT...
 *     ll-probe --serve HOST:PORT
 *
 * A TCP connect sends a SYN and completes when the server's SYN-ACK comes
 * back: one round trip of the network, and nothing of the server's
 * application (its kernel answers the SYN). `bench/stack up --netns --rtt
 * MS` puts a delay on the path between an instance's network namespace and
 * each backend (bench/net/delay.c); run inside the namespace (`ip netns exec`),
 * this measures what the delay really adds, which tests/rtt.sh checks
 * against what was asked.
 *
 * Two clocks per connect. The kernel's own: the round trip TCP measured
 * from the SYN's departure to the SYN-ACK's arrival (TCP_INFO's tcpi_rtt,
 * µs, its first and only sample), taken in the kernel as the packets pass,
 * so a busy machine that is slow to wake this process does not add to it.
 * And this process's: connect() to the socket writable, which adds that
 * wake-up (up to hundreds of µs on a loaded 2-vCPU VM). The first is the
 * network's round trip; the second is what a client thread sees.
 *
 * It connects N times (default 40) to each target, the targets taken in
 * turn so that every one sees the same moments of a run, MS milliseconds
 * apart (default 5), each connection closed at once (a normal close: the
 * server sees a client that left before saying anything). A connect that
 * fails or takes more than 2 s counts as failed. Per target it prints the
 * minimum, median, 90th percentile and maximum of the kernel's round trip,
 * and the median and 90th percentile of the connect, in microseconds.
 *
 * --serve listens on HOST:PORT (port 0: any free one), prints the port,
 * and accepts and closes every connection until it is killed: a server at
 * the end of a path with no delay on it, so that a test can probe it in
 * turn with the delayed ones and subtract what the machine itself takes
 * at that moment (tests/rtt.sh).
 *
 * Output: a line per target, or with --json one object:
 *     {"count":40,"targets":[{"target":"10.77.70.1:18306","n":40,
 *      "failed":0,"rtt_min_us":…,"rtt_p50_us":…,"rtt_p90_us":…,
 *      "rtt_max_us":…,"connect_p50_us":…,"connect_p90_us":…}, …]}
 * Exit status 0 when every target answered at least once, 1 otherwise,
 * 2 on bad usage.
 */
#define _GNU_SOURCE
#include "../common/cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROBE_MAX_TARGETS 64
#define PROBE_TIMEOUT_MS  2000

struct target {
    const char        *text;        /* as given, HOST:PORT */
    struct sockaddr_in addr;
    double            *rtt;         /* the kernel's round trip, µs       */
    double            *conn;        /* connect() to writable, µs          */
    int                n, failed;
};

static void usage(void)
{
    fprintf(stderr, "usage: ll-probe [--count N] [--interval-ms MS] [--json] HOST:PORT...\n"
                    "       ll-probe --serve HOST:PORT\n");
    exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p == NULL) {            /* nothing sensible to do without memory */
        fprintf(stderr, "ll-probe: out of memory\n");
        abort();
    }
    return p;
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int parse_target(const char *text, struct sockaddr_in *addr)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    long long port;

    if (colon == NULL || (size_t)(colon - text) >= sizeof host)
        return -1;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    if (cli_number(colon + 1, 0, 65535, &port) != 0)
        return -1;
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_port = htons((unsigned short)port);
    return inet_pton(AF_INET, host, &addr->sin_addr) == 1 ? 0 : -1;
}

/* One connect to addr: its time in µs into *conn and the kernel's round
 * trip into *rtt; 0, or -1 when it fails. */
static int probe_once(const struct sockaddr_in *addr, double *rtt, double *conn)
{
    struct tcp_info ti;
    struct pollfd pfd;
    socklen_t len = sizeof(int);
    double t0;
    int fd, err = 0, ok = 0;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    t0 = now_us();
    if (connect(fd, (const struct sockaddr *)addr, sizeof *addr) == 0) {
        ok = 1;
    } else if (errno == EINPROGRESS) {
        pfd.fd = fd;
        pfd.events = POLLOUT;
        ok = poll(&pfd, 1, PROBE_TIMEOUT_MS) == 1 &&
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    *conn = now_us() - t0;
    len = sizeof ti;
    if (ok && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_rtt > 0)
        *rtt = ti.tcpi_rtt;
    else
        ok = 0;
    close(fd);
    return ok ? 0 : -1;
}

/* --serve: accept and close, forever. */
static int serve(const char *text)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    int fd, one = 1;

    if (parse_target(text, &addr) != 0) {
        fprintf(stderr, "ll-probe: '%s' is not IPV4:PORT\n", text);
        return 2;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        fprintf(stderr, "ll-probe: cannot listen on %s: %s\n", text, strerror(errno));
        return 1;
    }
    printf("%d\n", ntohs(addr.sin_port));
    fflush(stdout);
    for (;;) {
        int c = accept(fd, NULL, NULL);

        if (c >= 0)
            close(c);
        else if (errno != EINTR && errno != ECONNABORTED)
            return 1;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The sample of rank ceil(q·n) (n > 0, sorted). */
static double rank(const double *v, int n, double q)
{
    int r = (int)(q * n + 0.999999);

    if (r < 1)
        r = 1;
    return v[r > n ? n - 1 : r - 1];
}

static void print_target(const struct target *t, int json, int first)
{
    double lo = -1, p50 = -1, p90 = -1, hi = -1, c50 = -1, c90 = -1;

    if (t->n > 0) {
        qsort(t->rtt, (size_t)t->n, sizeof *t->rtt, cmp_double);
        qsort(t->conn, (size_t)t->n, sizeof *t->conn, cmp_double);
        lo = t->rtt[0];
        p50 = rank(t->rtt, t->n, 0.5);
        p90 = rank(t->rtt, t->n, 0.9);
        hi = t->rtt[t->n - 1];
        c50 = rank(t->conn, t->n, 0.5);
        c90 = rank(t->conn, t->n, 0.9);
    }
    if (json)
        printf("%s{\"target\":\"%s\",\"n\":%d,\"failed\":%d,\"rtt_min_us\":%.0f,"
               "\"rtt_p50_us\":%.0f,\"rtt_p90_us\":%.0f,\"rtt_max_us\":%.0f,"
               "\"connect_p50_us\":%.1f,\"connect_p90_us\":%.1f}",
               first ? "" : ",", t->text, t->n, t->failed, lo, p50, p90, hi, c50, c90);
    else
        printf("%-22s n=%d failed=%d rtt min=%.0f p50=%.0f p90=%.0f max=%.0f us;"
               " connect p50=%.1f p90=%.1f us\n",
               t->text, t->n, t->failed, lo, p50, p90, hi, c50, c90);
}

int main(int argc, char **argv)
{
    struct target targets[PROBE_MAX_TARGETS];
    struct timespec pause;
    int count = 40, interval_ms = 5, json = 0, nt = 0, i, k, ok = 1;
    long long v;

    if (argc == 3 && strcmp(argv[1], "--serve") == 0)
        return serve(argv[2]);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            if (cli_number(argv[++i], 1, 100000, &v) != 0)
                usage();
            count = (int)v;
        } else if (strcmp(argv[i], "--interval-ms") == 0 && i + 1 < argc) {
            if (cli_number(argv[++i], 0, 60000, &v) != 0)
                usage();
            interval_ms = (int)v;
        } else if (argv[i][0] == '-') {
            usage();
        } else {
            if (nt == PROBE_MAX_TARGETS) {
                fprintf(stderr, "ll-probe: at most %d targets\n", PROBE_MAX_TARGETS);
                return 2;
            }
            targets[nt].text = argv[i];
            if (parse_target(argv[i], &targets[nt].addr) != 0) {
                fprintf(stderr, "ll-probe: '%s' is not IPV4:PORT\n", argv[i]);
                return 2;
            }
            targets[nt].rtt = xcalloc((size_t)count, sizeof(double));
            targets[nt].conn = xcalloc((size_t)count, sizeof(double));
            targets[nt].n = targets[nt].failed = 0;
            nt++;
        }
    }
    if (nt == 0)
        usage();
    pause.tv_sec = interval_ms / 1000;
    pause.tv_nsec = (long)(interval_ms % 1000) * 1000000L;
    for (k = 0; k < count; k++) {
        for (i = 0; i < nt; i++) {
            struct target *t = &targets[i];

            if (probe_once(&t->addr, &t->rtt[t->n], &t->conn[t->n]) == 0)
                t->n++;
            else
                t->failed++;
            if (interval_ms > 0)
                nanosleep(&pause, NULL);
        }
    }
    if (json)
        printf("{\"count\":%d,\"targets\":[", count);
    for (i = 0; i < nt; i++) {
        print_target(&targets[i], json, i == 0);
        if (targets[i].n == 0)
            ok = 0;
        free(targets[i].rtt);
        free(targets[i].conn);
    }
    if (json)
        printf("]}\n");
    return ok ? 0 : 1;
}
