/* util.c — allocation that cannot fail, clocks, jitter, small parsers, a socket peek. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void oom(size_t size)
{
    fprintf(stderr, "locklab: out of memory allocating %zu bytes\n", size);
    abort();
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        oom(size);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        oom(n * size);
    return p;
}

int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t now_ms(void)
{
    return now_us() / 1000;
}

static _Thread_local uint64_t rand_state;

uint64_t rand64(void)
{
    uint64_t x = rand_state;
    if (x == 0) {   /* first use on this thread: seed from the OS */
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, &x, sizeof x) != (ssize_t)sizeof x)
            x = (uint64_t)now_us() ^ (uint64_t)(uintptr_t)&x;
        if (fd >= 0)
            close(fd);
        x |= 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rand_state = x;
    return x;
}

int64_t rand_range(int64_t lo, int64_t hi)
{
    if (hi <= lo)
        return lo;
    return lo + (int64_t)(rand64() % (uint64_t)(hi - lo + 1));
}

size_t strlcopy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);
    if (size) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}

uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

int parse_int(const char *s, long long min, long long max, long long *out)
{
    char *end;
    long long v;

    if (s == NULL || *s == '\0' || (*s != '-' && (*s < '0' || *s > '9')))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

void uuid4(char out[37])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t a = rand64(), b = rand64();
    unsigned char u[16];
    int i, o = 0;

    memcpy(u, &a, 8);
    memcpy(u + 8, &b, 8);
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    for (i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[u[i] >> 4];
        out[o++] = hex[u[i] & 15];
    }
    out[o] = '\0';
}

int fd_peer_closed(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

    if (n > 0)
        return 0;
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

int word_valid(const char *s, size_t max)
{
    size_t i, n = strlen(s);

    if (n == 0 || n > max)
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return 0;
    }
    return 1;
}
