/* db_pipe.c — two prepared statements in one round trip (see db_pipe.h).
 *
 * The wire format, from MariaDB's client/server protocol: a packet is a
 * 3-byte little-endian payload length, a 1-byte sequence number (0 for the
 * first packet of a command, 1 for the first of its answer) and the payload.
 *
 *     COM_STMT_EXECUTE  0x17, statement id (4), flags (1: no cursor),
 *                       iteration count (4: always 1), and with n > 0
 *                       parameters: NULL bitmap ((n + 7) / 8), 1 (types
 *                       follow), n × (type, flags), n × 8-byte values
 *     OK                0x00, affected rows (length-encoded), last insert
 *                       id (length-encoded), status flags (2), warnings (2)
 *     ERR               0xFF, error number (2), '#' and SQLSTATE (5), text
 *
 * Between two commands libmariadb has nothing buffered (the server never
 * speaks unasked), so the two answers are ours to read off the socket to
 * the last byte, and the connection is then where libmariadb left it.
 */
#define _POSIX_C_SOURCE 200809L     /* clock_gettime, for ll-limits too */
#include "db_pipe.h"

#include <assert.h>
#include <errmsg.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define PIPE_BUF_LEN 2048           /* two OKs are ~20 bytes; an ERR ≤ 530 */

static void put_le(unsigned char *p, unsigned long long v, int bytes)
{
    int i;
    for (i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static unsigned long long get_le(const unsigned char *p, int bytes)
{
    unsigned long long v = 0;
    int i;
    for (i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* One COM_STMT_EXECUTE packet at buf; returns its length with the header. */
static size_t pack_execute(unsigned char *buf, unsigned long stmt_id,
                           const long long *params, int n)
{
    unsigned char *p = buf + 4;
    int i;

    *p++ = 0x17;
    put_le(p, stmt_id, 4), p += 4;
    *p++ = 0;                       /* CURSOR_TYPE_NO_CURSOR */
    put_le(p, 1, 4), p += 4;
    if (n > 0) {
        memset(p, 0, (size_t)(n + 7) / 8), p += (n + 7) / 8;   /* no NULLs */
        *p++ = 1;
        for (i = 0; i < n; i++)
            *p++ = MYSQL_TYPE_LONGLONG, *p++ = 0;              /* signed */
        for (i = 0; i < n; i++)
            put_le(p, (unsigned long long)params[i], 8), p += 8;
    }
    put_le(buf, (unsigned long long)(p - buf - 4), 3);
    buf[3] = 0;
    return (size_t)(p - buf);
}

static long long ms_left(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* Wait until fd is ready for `events`; 0, or -1 with errno (ETIMEDOUT). */
static int wait_fd(int fd, short events, const struct timespec *deadline)
{
    struct pollfd pfd = { .fd = fd, .events = events };
    long long left = ms_left(deadline);
    int rc;

    if (left <= 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    do
        rc = poll(&pfd, 1, (int)left);
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        errno = ETIMEDOUT;
    return rc > 0 ? 0 : -1;
}

static int send_all(int fd, const unsigned char *buf, size_t len, const struct timespec *deadline)
{
    while (len > 0) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            buf += w, len -= (size_t)w;
        } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        } else if (w < 0 && errno != EINTR && wait_fd(fd, POLLOUT, deadline) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Read until buf holds `want` bytes in all; *have counts what it holds. */
static int recv_until(int fd, unsigned char *buf, size_t *have, size_t want,
                      const struct timespec *deadline)
{
    while (*have < want) {
        ssize_t r = recv(fd, buf + *have, PIPE_BUF_LEN - *have, MSG_DONTWAIT);
        if (r > 0) {
            *have += (size_t)r;
        } else if (r == 0) {
            errno = ECONNRESET;
            return -1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        } else if (errno != EINTR && wait_fd(fd, POLLIN, deadline) != 0) {
            return -1;
        }
    }
    return 0;
}

/* A length-encoded integer at *p, of at most `len` bytes; -1 if cut short. */
static int get_lenenc(const unsigned char **p, size_t len, unsigned long long *v)
{
    static const int width[4] = { 0, 2, 3, 8 };     /* after 0xfb..0xfe */
    int w;

    if (len == 0 || **p == 0xfb || **p == 0xff)     /* NULL, ERR: not counts */
        return -1;
    w = **p < 0xfc ? 0 : width[**p - 0xfb];
    if (1 + (size_t)w > len)
        return -1;
    *v = w ? get_le(*p + 1, w) : **p;
    *p += 1 + w;
    return 0;
}

/* Decode one answer's payload into *a and the connection's status flags. */
static int parse_answer(MYSQL *conn, const unsigned char *p, size_t len, struct db_pipe_answer *a)
{
    const unsigned char *end = p + len;
    unsigned long long id;

    memset(a, 0, sizeof *a);
    if (len >= 3 && p[0] == 0xff) {
        size_t skip = len > 3 && p[3] == '#' ? 9 : 3;
        a->err = (unsigned)get_le(p + 1, 2);
        snprintf(a->msg, sizeof a->msg, "%.*s", len > skip ? (int)(len - skip) : 0, p + skip);
        return 0;
    }
    if (len < 1 || *p++ != 0x00 || get_lenenc(&p, (size_t)(end - p), &a->affected) ||
        get_lenenc(&p, (size_t)(end - p), &id) || end - p < 2)
        return -1;
    conn->server_status = (unsigned)get_le(p, 2);
    return 0;
}

int db_pipe2(MYSQL *conn, MYSQL_STMT *first, const long long *params, int n,
             MYSQL_STMT *second, int timeout_ms, struct db_pipe_answer a[2])
{
    unsigned char buf[PIPE_BUF_LEN];
    size_t out, have = 0, at = 0;
    struct timespec deadline;
    int fd = (int)mysql_get_socket(conn), i;

    memset(a, 0, 2 * sizeof *a);
    assert(n >= 0 && n <= DB_PIPE_PARAMS);
    if (mysql_get_ssl_cipher(conn) != NULL || conn->options.compress) {
        a[0].err = CR_NOT_IMPLEMENTED;
        snprintf(a[0].msg, sizeof a[0].msg, "cannot pipeline statements over TLS or compression");
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000)
        deadline.tv_sec++, deadline.tv_nsec -= 1000000000;

    out = pack_execute(buf, first->stmt_id, params, n);
    out += pack_execute(buf + out, second->stmt_id, NULL, 0);
    if (send_all(fd, buf, out, &deadline) != 0)
        goto lost;
    for (i = 0; i < 2; i++) {
        size_t len;
        if (recv_until(fd, buf, &have, at + 4, &deadline) != 0)
            goto lost;
        len = (size_t)get_le(buf + at, 3);
        if (at + 4 + len > PIPE_BUF_LEN) {
            a[0].err = CR_MALFORMED_PACKET;
            snprintf(a[0].msg, sizeof a[0].msg, "an answer of %zu bytes to a pipelined statement", len);
            return -1;
        }
        if (recv_until(fd, buf, &have, at + 4 + len, &deadline) != 0)
            goto lost;
        if (parse_answer(conn, buf + at + 4, len, &a[i]) != 0) {
            a[0].err = CR_MALFORMED_PACKET;
            snprintf(a[0].msg, sizeof a[0].msg, "a malformed answer to a pipelined statement");
            return -1;
        }
        at += 4 + len;
    }
    if (have == at)
        return 0;
    a[0].err = CR_MALFORMED_PACKET;
    snprintf(a[0].msg, sizeof a[0].msg, "%zu bytes past the answers", have - at);
    return -1;

lost:
    a[0].err = CR_SERVER_LOST;
    snprintf(a[0].msg, sizeof a[0].msg, "lost the connection during a pipelined statement: %s",
             strerror(errno));
    return -1;
}
