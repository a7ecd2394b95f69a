/* db_pipe.c — prepared statements in one round trip (see db_pipe.h).
 *
 * The wire format, from MariaDB's client/server protocol: a packet is a
 * 3-byte little-endian payload length, a 1-byte sequence number (0 for the
 * first packet of a command, 1 for the first of its answer) and the payload.
 *
 *     COM_STMT_EXECUTE  0x17, statement id (4), flags (1: no cursor),
 *                       iteration count (4: always 1), and with n > 0
 *                       parameters: NULL bitmap ((n + 7) / 8), 1 (types
 *                       follow), n × (type, flags), the n values: an
 *                       integer in 8 bytes, a string as its length (one
 *                       byte below 251) and its bytes
 *     OK                0x00, affected rows (length-encoded), last insert
 *                       id (length-encoded), status flags (2), warnings (2)
 *     ERR               0xFF, error number (2), '#' and SQLSTATE (5), text
 *
 * Between two commands libmariadb has nothing buffered (the server never
 * speaks unasked), so the two answers are ours to read off the socket to
 * the last byte, and the connection is then where libmariadb left it.
 *
 * A binary result set (the answer db_pipe_row() reads), as MariaDB 10.11
 * sends it to libmariadb 3.3:
 *
 *     column count      length-encoded; then, with CACHE_METADATA, one byte:
 *                       1 if column definitions follow, 0 if skipped
 *     column defs       one packet each, when they follow
 *     EOF               0xFE, warnings (2), status flags (2)
 *     rows              0x00, NULL bitmap ((columns + 9) / 8), the values
 *                       (an INT in 4 bytes, a BIGINT in 8, little-endian)
 *     EOF               as above: the end
 *
 * or a lone ERR packet instead.
 */
#define _POSIX_C_SOURCE 200809L     /* clock_gettime, for ll-limits too */
#include "db_pipe.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <assert.h>
#include <errmsg.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

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

/* One COM_STMT_EXECUTE packet at buf; returns its length with the header.
 * Parameter i is strs[i] when strs and strs[i] are not NULL, else
 * params[i]. */
static size_t pack_execute(unsigned char *buf, unsigned long stmt_id,
                           const long long *params, const char *const *strs, int n)
{
    unsigned char *p = buf + 4;
    size_t len;
    int i;

    *p++ = 0x17;
    put_le(p, stmt_id, 4), p += 4;
    *p++ = 0;                       /* CURSOR_TYPE_NO_CURSOR */
    put_le(p, 1, 4), p += 4;
    if (n > 0) {
        memset(p, 0, (size_t)(n + 7) / 8), p += (n + 7) / 8;   /* no NULLs */
        *p++ = 1;
        for (i = 0; i < n; i++)                                /* signed */
            *p++ = strs && strs[i] ? MYSQL_TYPE_STRING : MYSQL_TYPE_LONGLONG, *p++ = 0;
        for (i = 0; i < n; i++) {
            if (strs && strs[i]) {
                len = strlen(strs[i]);
                assert(len <= DB_PIPE_STR_MAX);
                *p++ = (unsigned char)len;
                memcpy(p, strs[i], len), p += len;
            } else {
                put_le(p, (unsigned long long)params[i], 8), p += 8;
            }
        }
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

/* Wait until fd is ready for `events` (core/wait.h: a coroutine parks, a
 * thread polls); 0, or -1 with errno ETIMEDOUT. */
static int pipe_wait(int fd, int events, const struct timespec *deadline)
{
    long long left = ms_left(deadline);

    if (left <= 0 || wait_fd(fd, events, now_us() + left * 1000) == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return 0;
}

/* Write all of buf; *sent says whether any of it left (a statement that
 * left may have run, one that did not cannot have). */
static int send_all(int fd, const unsigned char *buf, size_t len, const struct timespec *deadline,
                    int *sent)
{
    *sent = 0;
    while (len > 0) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            buf += w, len -= (size_t)w;
            *sent = 1;
        } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        } else if (w < 0 && errno != EINTR && pipe_wait(fd, WAIT_WRITE, deadline) != 0) {
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
        ssize_t r = recv(fd, buf + *have, DB_PIPE_BUF - *have, MSG_DONTWAIT);
        if (r > 0) {
            *have += (size_t)r;
        } else if (r == 0) {
            errno = ECONNRESET;
            return -1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        } else if (errno != EINTR && pipe_wait(fd, WAIT_READ, deadline) != 0) {
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

/* Decode one OK or ERR answer's payload into *a and the connection's status flags. */
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

static void set_deadline(struct timespec *deadline, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, deadline);
    deadline->tv_sec += timeout_ms / 1000;
    deadline->tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (deadline->tv_nsec >= 1000000000)
        deadline->tv_sec++, deadline->tv_nsec -= 1000000000;
}

static int refuse_tls(MYSQL *conn, struct db_pipe_answer *a)
{
    if (mysql_get_ssl_cipher(conn) == NULL && !conn->options.compress)
        return 0;
    a->err = CR_NOT_IMPLEMENTED;
    snprintf(a->msg, sizeof a->msg, "cannot pipeline statements over TLS or compression");
    return -1;
}

/* An answer that cannot be read. It is only ever read after the
 * statements left, so they may have run: to the caller it is an answer
 * lost (CR_SERVER_LOST), never a refusal, whatever came before it (a
 * COMMIT's OK included: what follows it says the exchange is out of
 * step, so the OK cannot be trusted either). */
static int malformed(struct db_pipe_answer *a, const char *what)
{
    a->err = CR_SERVER_LOST;
    snprintf(a->msg, sizeof a->msg, "%s (malformed: the statements may have run)", what);
    return -1;
}

static int lost(struct db_pipe_answer *a)
{
    a->err = CR_SERVER_LOST;
    snprintf(a->msg, sizeof a->msg, "lost the connection during a pipelined statement: %s",
             strerror(errno));
    return -1;
}

/* The connection failed before any of the statements left. */
static int gone(struct db_pipe_answer *a)
{
    a->err = CR_SERVER_GONE_ERROR;
    snprintf(a->msg, sizeof a->msg, "the connection failed before a pipelined statement "
             "was sent: %s", strerror(errno));
    return -1;
}

/* The next whole packet in b at *at, read from fd as needed: its payload
 * and length. 0, or -1 with *a telling why. */
static int next_packet(int fd, struct db_pipe_buf *b, size_t *at, const struct timespec *deadline,
                       const unsigned char **payload, size_t *len, struct db_pipe_answer *a)
{
    if (recv_until(fd, b->data, &b->have, *at + 4, deadline) != 0)
        return lost(a);
    *len = (size_t)get_le(b->data + *at, 3);
    if (*at + 4 + *len > DB_PIPE_BUF)
        return malformed(a, "an answer too long for a pipelined statement");
    if (recv_until(fd, b->data, &b->have, *at + 4 + *len, deadline) != 0)
        return lost(a);
    *payload = b->data + *at + 4;
    *at += 4 + *len;
    return 0;
}

/* Send the packets in out[0..len) and read two OK or ERR answers; what
 * comes after them stays in b. */
static int send_read2(MYSQL *conn, const unsigned char *out, size_t len, int timeout_ms,
                      struct db_pipe_answer a[2], struct db_pipe_buf *b)
{
    struct timespec deadline;
    const unsigned char *p;
    int fd = (int)mysql_get_socket(conn), i, sent;
    size_t at = 0, n;

    set_deadline(&deadline, timeout_ms);
    b->have = 0;
    if (send_all(fd, out, len, &deadline, &sent) != 0)
        return sent ? lost(&a[0]) : gone(&a[0]);
    for (i = 0; i < 2; i++) {
        if (next_packet(fd, b, &at, &deadline, &p, &n, &a[0]) != 0)
            return -1;
        if (parse_answer(conn, p, n, &a[i]) != 0)
            return malformed(&a[0], "a malformed answer to a pipelined statement");
    }
    memmove(b->data, b->data + at, b->have - at);
    b->have -= at;
    return 0;
}

int db_pipe2(MYSQL *conn, MYSQL_STMT *first, const long long *params, const char *const *strs,
             int n, MYSQL_STMT *second, int timeout_ms, struct db_pipe_answer a[2])
{
    struct db_pipe_buf b;
    unsigned char out[DB_PIPE_BUF];
    size_t len;

    memset(a, 0, 2 * sizeof *a);
    assert(n >= 0 && n <= DB_PIPE_PARAMS);
    if (refuse_tls(conn, &a[0]) != 0)
        return -1;
    len = pack_execute(out, first->stmt_id, params, strs, n);
    len += pack_execute(out + len, second->stmt_id, NULL, NULL, 0);
    if (send_read2(conn, out, len, timeout_ms, a, &b) != 0)
        return -1;
    if (b.have == 0)
        return 0;
    return malformed(&a[0], "bytes past the answers");
}

int db_pipe_repeat(MYSQL *conn, MYSQL_STMT *stmt, const long long *params, int n, int times,
                   int timeout_ms, struct db_pipe_answer *a)
{
    unsigned char out[DB_PIPE_REPEAT_MAX * (4 + 14 + 10 * DB_PIPE_PARAMS)];
    struct db_pipe_buf b;
    struct timespec deadline;
    const unsigned char *p;
    int fd = (int)mysql_get_socket(conn), i, sent;
    size_t len = 0, at, plen;

    memset(a, 0, (size_t)times * sizeof *a);
    assert(n >= 0 && n <= DB_PIPE_PARAMS && times >= 1 && times <= DB_PIPE_REPEAT_MAX);
    if (refuse_tls(conn, &a[0]) != 0)
        return -1;
    for (i = 0; i < times; i++)
        len += pack_execute(out + len, stmt->stmt_id, params, NULL, n);
    set_deadline(&deadline, timeout_ms);
    b.have = 0;
    if (send_all(fd, out, len, &deadline, &sent) != 0)
        return sent ? lost(&a[0]) : gone(&a[0]);
    /* One answer at a time, each moved out of the buffer once read: the
     * buffer holds at most one answer and the start of the next. */
    for (i = 0; i < times; i++) {
        at = 0;
        if (next_packet(fd, &b, &at, &deadline, &p, &plen, &a[0]) != 0)
            return -1;
        if (parse_answer(conn, p, plen, &a[i]) != 0)
            return malformed(&a[0], "a malformed answer to a pipelined statement");
        memmove(b.data, b.data + at, b.have - at);
        b.have -= at;
    }
    if (b.have == 0)
        return 0;
    return malformed(&a[0], "bytes past the answers");
}

int db_pipe2_then(MYSQL *conn, MYSQL_STMT *first, const long long *params, int n,
                  MYSQL_STMT *second, MYSQL_STMT *third, const long long *tparams, int m,
                  int timeout_ms, struct db_pipe_answer a[2], struct db_pipe_buf *rest)
{
    unsigned char out[DB_PIPE_BUF];
    size_t len;

    memset(a, 0, 2 * sizeof *a);
    assert(n >= 0 && n <= DB_PIPE_PARAMS && m >= 0 && m <= DB_PIPE_PARAMS);
    if (refuse_tls(conn, &a[0]) != 0)
        return -1;
    len = pack_execute(out, first->stmt_id, params, NULL, n);
    len += pack_execute(out + len, second->stmt_id, NULL, NULL, 0);
    len += pack_execute(out + len, third->stmt_id, tparams, NULL, m);
    return send_read2(conn, out, len, timeout_ms, a, rest);
}

/* An integer column's value at p in a binary row, by the type the column
 * was prepared with: the bytes it takes, or -1 for any other type. */
static int get_int(const MYSQL_FIELD *f, const unsigned char *p, size_t len, long long *v)
{
    int w, uns = (f->flags & UNSIGNED_FLAG) != 0;
    unsigned long long u;

    switch (f->type) {
    case MYSQL_TYPE_TINY:     w = 1; break;
    case MYSQL_TYPE_SHORT:    w = 2; break;
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONG:     w = 4; break;
    case MYSQL_TYPE_LONGLONG: w = 8; break;
    default:                  return -1;
    }
    if (len < (size_t)w)
        return -1;
    u = get_le(p, w);
    if (!uns && w < 8 && (u >> (8 * w - 1)) & 1)
        u |= ~0ULL << (8 * w);                      /* sign-extend */
    *v = (long long)u;
    return w;
}

/* One binary row of stmt's integer columns into values[]; 0 or -1. */
static int get_row(MYSQL_STMT *stmt, const unsigned char *p, size_t len, long long *values)
{
    size_t i, nulls = (stmt->field_count + 9) / 8, at = 1 + nulls;
    int w;

    if (len < at || p[0] != 0x00)
        return -1;
    for (i = 0; i < stmt->field_count; i++) {
        if (p[1 + (i + 2) / 8] & (1u << ((i + 2) % 8)))
            return -1;                              /* NULL */
        if ((w = get_int(&stmt->fields[i], p + at, len - at, &values[i])) < 0)
            return -1;
        at += (size_t)w;
    }
    return at == len ? 0 : -1;
}

/* The answer to stmt at *at in b, read from fd as needed: a result set of
 * at most one row, or an ERR. 0 with *found, values[] and a->err; -1 when
 * the connection failed or the answer is not one. */
static int read_result(MYSQL *conn, MYSQL_STMT *stmt, struct db_pipe_buf *b, size_t *at,
                       const struct timespec *deadline, long long *values, int *found,
                       struct db_pipe_answer *a)
{
    int fd = (int)mysql_get_socket(conn), meta = 1;
    const unsigned char *p, *q;
    unsigned long long cols;
    size_t len, i;

    memset(a, 0, sizeof *a);
    *found = 0;
    if (next_packet(fd, b, at, deadline, &p, &len, a) != 0)
        return -1;
    if (len >= 1 && p[0] == 0xff)                   /* ERR: the whole answer */
        return parse_answer(conn, p, len, a) == 0 ? 0 :
               malformed(a, "a malformed error answer to a pipelined query");
    q = p;
    if (get_lenenc(&q, len, &cols) != 0 || cols != stmt->field_count || cols == 0 ||
        cols > DB_PIPE_COLS || (size_t)(q - p) + 1 < len)
        return malformed(a, "a pipelined query answered with other columns");
    if ((size_t)(q - p) < len)
        meta = *q;                                  /* 0: definitions skipped */
    for (i = 0; meta && i < cols; i++)
        if (next_packet(fd, b, at, deadline, &p, &len, a) != 0)
            return -1;
    if (next_packet(fd, b, at, deadline, &p, &len, a) != 0)
        return -1;
    if (len < 1 || len >= 9 || p[0] != 0xfe)
        return malformed(a, "no EOF after a pipelined query's columns");
    for (;;) {
        if (next_packet(fd, b, at, deadline, &p, &len, a) != 0)
            return -1;
        if (len >= 5 && len < 9 && p[0] == 0xfe) {  /* EOF: the end */
            conn->server_status = (unsigned)get_le(p + 3, 2);
            return 0;
        }
        if (len >= 1 && p[0] == 0xff) {             /* failed mid-way */
            *found = 0;
            return parse_answer(conn, p, len, a) == 0 ? 0 :
                   malformed(a, "a malformed error answer to a pipelined query");
        }
        if (*found || get_row(stmt, p, len, values) != 0)
            return malformed(a, "a pipelined query's answer is not one row of integers");
        *found = 1;
    }
}

int db_pipe_row(MYSQL *conn, MYSQL_STMT *stmt, struct db_pipe_buf *rest, int timeout_ms,
                long long *values, int *found, struct db_pipe_answer *a)
{
    struct timespec deadline;
    size_t at = 0;
    int rc;

    set_deadline(&deadline, timeout_ms);
    rc = read_result(conn, stmt, rest, &at, &deadline, values, found, a);
    if (rc == 0 && at != rest->have)
        rc = malformed(a, "bytes past a pipelined query's answer");
    rest->have = 0;
    return rc;
}

int db_pipe_exec_query(MYSQL *conn, MYSQL_STMT *first, const long long *params, int n,
                       MYSQL_STMT *query, const long long *qparams, int m, int timeout_ms,
                       struct db_pipe_answer a[2], long long *values, int *found)
{
    unsigned char out[DB_PIPE_BUF];
    struct db_pipe_buf b;
    struct timespec deadline;
    const unsigned char *p;
    int fd = (int)mysql_get_socket(conn), sent;
    size_t len, at = 0;

    memset(a, 0, 2 * sizeof *a);
    *found = 0;
    assert(n >= 0 && n <= DB_PIPE_PARAMS && m >= 0 && m <= DB_PIPE_PARAMS);
    if (refuse_tls(conn, &a[0]) != 0)
        return -1;
    set_deadline(&deadline, timeout_ms);
    len = pack_execute(out, first->stmt_id, params, NULL, n);
    len += pack_execute(out + len, query->stmt_id, qparams, NULL, m);
    b.have = 0;
    if (send_all(fd, out, len, &deadline, &sent) != 0)
        return sent ? lost(&a[0]) : gone(&a[0]);
    if (next_packet(fd, &b, &at, &deadline, &p, &len, &a[0]) != 0)
        return -1;
    if (parse_answer(conn, p, len, &a[0]) != 0)
        return malformed(&a[0], "a malformed answer to a pipelined statement");
    /* From here the first's answer is known: a failure is the query's. */
    if (read_result(conn, query, &b, &at, &deadline, values, found, &a[1]) != 0)
        return 1;
    if (at == b.have)
        return 0;
    malformed(&a[1], "bytes past a pipelined query's answer");
    return 1;
}
