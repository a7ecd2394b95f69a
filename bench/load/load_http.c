/* load_http.c — reading one HTTP/1.1 answer and counting it, for ll-load.
 *
 * See load_http.h for what it does. The reader is a pull parser: each step
 * asks for a line or for n body bytes, and the reader takes more from its
 * source until it has them, so an answer may arrive in pieces of any size.
 * A line must fit in the reader's buffer (CONN_BUF), the whole head need
 * not; a body is consumed to its end but only its first BODY_CAP bytes are
 * kept. Sections: reader, response, result, tally.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE            /* memmem, strcasestr */
#endif

#include "load_http.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHUNK_MAX    (UINT64_C(1) << 40)

const char *const err_names[ERR_KINDS] = {
    "connect", "timeout", "io", "protocol"
};

/* ---------------------------------------------------------------- reader */

void reader_init(struct reader *in, reader_source *read, void *src)
{
    in->read = read;
    in->src = src;
    reader_clear(in);
}

void reader_clear(struct reader *in)
{
    in->head = in->tail = 0;
}

bool reader_pending(const struct reader *in)
{
    return in->head != in->tail;
}

/* Read more bytes into the buffer, first sliding unread bytes to its
 * start. IO_PROTO when the buffer is full of one unfinished line. */
static int reader_fill(struct reader *in, int64_t deadline)
{
    if (in->head > 0) {
        memmove(in->buf, in->buf + in->head, in->tail - in->head);
        in->tail -= in->head;
        in->head = 0;
    }
    if (in->tail == sizeof in->buf)
        return IO_PROTO;
    size_t got = 0;
    int rc = in->read(in->src, in->buf + in->tail, sizeof in->buf - in->tail, &got, deadline);
    if (rc != IO_OK)
        return rc;
    assert(got > 0 && got <= sizeof in->buf - in->tail);
    in->tail += got;
    return IO_OK;
}

/* Next line, without its CR LF, NUL-terminated in place. *line stays
 * valid until the next read from the reader. */
static int reader_line(struct reader *in, int64_t deadline, char **line, size_t *len)
{
    size_t scanned = 0;
    for (;;) {
        char *start = in->buf + in->head;
        char *nl = memchr(start + scanned, '\n', in->tail - in->head - scanned);
        if (nl != NULL) {
            size_t n = (size_t)(nl - start);
            in->head += n + 1;
            if (n > 0 && start[n - 1] == '\r')
                n--;
            start[n] = '\0';
            *line = start;
            *len = n;
            return IO_OK;
        }
        scanned = in->tail - in->head;
        int rc = reader_fill(in, deadline);
        if (rc != IO_OK)
            return rc;
    }
}

/* ---------------------------------------------------------------- response */

/* Keep the first BODY_CAP bytes of the body, drop the rest. */
static void resp_keep(struct response *r, const char *p, size_t n)
{
    size_t room = sizeof r->body - r->body_len;
    if (n > room)
        n = room;
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
}

/* Consume exactly n body bytes. */
static int resp_take(struct reader *in, struct response *r, uint64_t n, int64_t deadline)
{
    while (n > 0) {
        if (in->head == in->tail) {
            int rc = reader_fill(in, deadline);
            if (rc != IO_OK)
                return rc;
        }
        size_t k = in->tail - in->head;
        if (k > n)
            k = (size_t)n;
        resp_keep(r, in->buf + in->head, k);
        in->head += k;
        n -= k;
    }
    return IO_OK;
}

/* A body delimited by the end of the connection. */
static int resp_until_eof(struct reader *in, struct response *r, int64_t deadline)
{
    for (;;) {
        resp_keep(r, in->buf + in->head, in->tail - in->head);
        in->head = in->tail;
        int rc = reader_fill(in, deadline);
        if (rc == IO_EOF)
            return IO_OK;
        if (rc != IO_OK)
            return rc;
    }
}

static int resp_chunk_size(const char *line, uint64_t *size)
{
    char *end;
    if (!((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f') ||
          (line[0] >= 'A' && line[0] <= 'F')))
        return IO_PROTO;
    errno = 0;
    unsigned long long v = strtoull(line, &end, 16);
    if (errno != 0 || v > CHUNK_MAX || (*end != '\0' && *end != ';' && *end != ' ' && *end != '\t'))
        return IO_PROTO;
    *size = v;
    return IO_OK;
}

/* Transfer-Encoding: chunked — size line, data, CR LF, ..., 0, trailers. */
static int resp_chunked(struct reader *in, struct response *r, int64_t deadline)
{
    char *line;
    size_t len;
    for (;;) {
        uint64_t size;
        int rc = reader_line(in, deadline, &line, &len);
        if (rc == IO_OK)
            rc = resp_chunk_size(line, &size);
        if (rc != IO_OK)
            return rc;
        if (size == 0)
            break;
        rc = resp_take(in, r, size, deadline);
        if (rc == IO_OK)
            rc = reader_line(in, deadline, &line, &len);
        if (rc != IO_OK)
            return rc;
        if (len != 0)
            return IO_PROTO;
    }
    do {                                /* trailers, up to the empty line */
        int rc = reader_line(in, deadline, &line, &len);
        if (rc != IO_OK)
            return rc;
    } while (len != 0);
    return IO_OK;
}

/* "HTTP/1.x SSS reason" */
static int resp_status_line(struct reader *in, struct response *r, int64_t deadline)
{
    char *line;
    size_t len;
    int rc = reader_line(in, deadline, &line, &len);
    if (rc != IO_OK)
        return rc;
    if (len < 12 || memcmp(line, "HTTP/1.", 7) != 0 || line[8] != ' ' ||
        (len > 12 && line[12] != ' '))
        return IO_PROTO;
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (line[i] < '0' || line[i] > '9')
            return IO_PROTO;
        status = status * 10 + (line[i] - '0');
    }
    if (status < 100 || status >= STATUS_MAX)
        return IO_PROTO;
    r->status = status;
    r->close = line[7] == '0';          /* HTTP/1.0 closes unless told not to */
    return IO_OK;
}

static int resp_header(struct response *r, char *line, size_t len)
{
    char *colon = memchr(line, ':', len);
    if (colon == NULL)
        return IO_PROTO;
    *colon = '\0';
    char *value = colon + 1;
    while (*value == ' ' || *value == '\t')
        value++;

    if (strcasecmp(line, "Content-Length") == 0) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (*value < '0' || *value > '9' || errno != 0 || v > INT64_MAX ||
            (*end != '\0' && *end != ' ' && *end != '\t'))
            return IO_PROTO;
        r->length = (int64_t)v;
    } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
        r->chunked = strcasestr(value, "chunked") != NULL;
    } else if (strcasecmp(line, "Connection") == 0) {
        if (strcasestr(value, "close"))
            r->close = true;
        else if (strcasestr(value, "keep-alive"))
            r->close = false;
    }
    return IO_OK;
}

static int resp_headers(struct reader *in, struct response *r, int64_t deadline)
{
    for (;;) {
        char *line;
        size_t len;
        int rc = reader_line(in, deadline, &line, &len);
        if (rc != IO_OK)
            return rc;
        if (len == 0)
            return IO_OK;
        rc = resp_header(r, line, len);
        if (rc != IO_OK)
            return rc;
    }
}

static int resp_body(struct reader *in, struct response *r, int64_t deadline)
{
    if (r->status < 200 || r->status == 204 || r->status == 304)
        return IO_OK;
    if (r->chunked)
        return resp_chunked(in, r, deadline);
    if (r->length >= 0)
        return resp_take(in, r, (uint64_t)r->length, deadline);
    r->close = true;
    return resp_until_eof(in, r, deadline);
}

int resp_read(struct reader *in, struct response *r, int64_t deadline)
{
    int rc;
    do {
        r->status = 0;
        r->close = r->chunked = false;
        r->length = -1;
        r->body_len = 0;
        rc = resp_status_line(in, r, deadline);
        if (rc == IO_OK && r->status == 101)
            rc = IO_PROTO;
        if (rc == IO_OK)
            rc = resp_headers(in, r, deadline);
    } while (rc == IO_OK && r->status < 200);
    if (rc != IO_OK)
        return rc;
    return resp_body(in, r, deadline);
}

/* ---------------------------------------------------------------- result */

static bool is_json_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

bool resp_result(const struct response *r, char *out, size_t cap)
{
    static const char key[] = "\"result\"";
    const char *end = r->body + r->body_len;
    const char *p = memmem(r->body, r->body_len, key, sizeof key - 1);
    if (p == NULL)
        return false;
    for (p += sizeof key - 1; p < end && is_json_space(*p); p++)
        ;
    if (p == end || *p++ != ':')
        return false;
    for (; p < end && is_json_space(*p); p++)
        ;
    if (p == end || *p++ != '"')
        return false;
    const char *q = memchr(p, '"', (size_t)(end - p));
    if (q == NULL)
        return false;
    size_t n = (size_t)(q - p) < cap - 1 ? (size_t)(q - p) : cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

/* ---------------------------------------------------------------- tally */

void tally_init(struct tally *t)
{
    memset(t, 0, sizeof *t);           /* zeros: an empty histogram too   */
}

void tally_result(struct tally *t, const char *name, uint64_t n)
{
    for (unsigned i = 0; i < t->nresults; i++) {
        if (strcmp(t->result[i].name, name) == 0) {
            t->result[i].n += n;
            return;
        }
    }
    /* >=: once OVERFLOW_RESULT has taken the last slot, nresults is
     * RESULT_MAX and every new name still goes there. */
    if (t->nresults >= RESULT_MAX - 1 && strcmp(name, OVERFLOW_RESULT) != 0) {
        tally_result(t, OVERFLOW_RESULT, n);
        return;
    }
    assert(t->nresults < RESULT_MAX);
    struct result_count *rc = &t->result[t->nresults++];
    snprintf(rc->name, sizeof rc->name, "%s", name);
    rc->n = n;
}

void tally_answer(struct tally *t, const struct response *r, int64_t ns)
{
    char result[RESULT_LEN];
    t->status[r->status]++;
    hist_add(&t->latency, (uint64_t)((ns + 500) / 1000));
    if (resp_result(r, result, sizeof result))
        tally_result(t, result, 1);
    else
        t->missing++;
}

void tally_failure(struct tally *t, int rc)
{
    static const enum err_kind kind[] = {
        [IO_EOF] = ERR_IO, [IO_ERR] = ERR_IO, [IO_TIMEOUT] = ERR_TIMEOUT,
        [IO_PROTO] = ERR_PROTOCOL, [IO_CONNECT] = ERR_CONNECT,
    };
    assert(rc > IO_OK && rc <= IO_CONNECT);
    t->errors[kind[rc]]++;
}

void tally_sent(struct tally *t, int64_t lag_ns, int64_t late_ns)
{
    uint64_t us = lag_ns > 0 ? (uint64_t)(lag_ns / 1000) : 0;
    if (lag_ns > late_ns)
        t->late++;
    hist_add(&t->lag, us);
}

void tally_merge(struct tally *dst, const struct tally *src)
{
    for (int i = 0; i < STATUS_MAX; i++)
        dst->status[i] += src->status[i];
    for (int i = 0; i < ERR_KINDS; i++)
        dst->errors[i] += src->errors[i];
    dst->missing += src->missing;
    dst->connects += src->connects;
    dst->late += src->late;
    hist_merge(&dst->lag, &src->lag);
    for (unsigned i = 0; i < src->nresults; i++)
        tally_result(dst, src->result[i].name, src->result[i].n);
    hist_merge(&dst->latency, &src->latency);
}

uint64_t tally_errors(const struct tally *t)
{
    uint64_t n = 0;
    for (int i = 0; i < ERR_KINDS; i++)
        n += t->errors[i];
    return n;
}
