/* load_http.h — how ll-load reads an HTTP/1.1 answer and counts it.
 *
 * Every sold and lost count of the tests and of bench/compare rests on
 * ll-load reading each answer whole and to its end, and on the "result" it
 * finds in the body; this is that part of ll-load, apart from the sockets,
 * so that tests/test_load.c can feed it answers byte by byte.
 *
 * A struct reader is the unread bytes of one connection. It takes more
 * from its source, a function: in ll-load poll + recv on the socket until
 * the request's deadline, in the test a script of pieces. resp_read()
 * reads one answer from it — status line, headers, then a body delimited
 * by Content-Length, by chunked transfer-encoding (nginx may send it) or
 * by the end of the connection — keeping the first BODY_CAP bytes of the
 * body, where resp_result() finds "result" : "...". Bytes after the
 * answer stay in the reader (reader_pending()): ll-load never pipelines,
 * so it closes such a connection before its next request.
 *
 * A struct tally is what one ll-load thread counts: answers by status and
 * by result, answers without a result, transport failures by kind, TCP
 * connects, a latency histogram (load_stats.h) and, in an open loop, how
 * late the requests left against their schedule.
 */
#ifndef LOCKLAB_LOAD_HTTP_H
#define LOCKLAB_LOAD_HTTP_H

#include "load_stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONN_BUF     16384              /* an answer's head must fit here    */
#define BODY_CAP     8192               /* body bytes kept to find "result"  */
#define RESULT_MAX   32                 /* distinct results per tally        */
#define RESULT_LEN   48                 /* longest result kept, NUL included */
#define STATUS_MAX   600                /* status codes 100..599             */
#define OVERFLOW_RESULT "_overflow"     /* where results past RESULT_MAX go  */

/* Outcome of one I/O step. Anything but IO_OK ends the request. */
enum io_rc { IO_OK = 0, IO_EOF, IO_ERR, IO_TIMEOUT, IO_PROTO, IO_CONNECT };

/* Transport error kinds, reported as err_<name>. */
enum err_kind { ERR_CONNECT, ERR_TIMEOUT, ERR_IO, ERR_PROTOCOL, ERR_KINDS };
extern const char *const err_names[ERR_KINDS];

/* ---------------------------------------------------------------- reader */

/* A source puts between 1 and cap bytes at buf and sets *got (IO_OK), or
 * answers IO_EOF, IO_ERR or IO_TIMEOUT (deadline: CLOCK_MONOTONIC ns). */
typedef int reader_source(void *src, char *buf, size_t cap, size_t *got, int64_t deadline);

struct reader {
    size_t         head, tail;          /* unread bytes: buf[head..tail)     */
    reader_source *read;
    void          *src;
    char           buf[CONN_BUF];
};

void reader_init(struct reader *in, reader_source *read, void *src);

/* Forget every unread byte (a new connection). */
void reader_clear(struct reader *in);

/* True when bytes nobody asked for are waiting. */
bool reader_pending(const struct reader *in);

/* ---------------------------------------------------------------- response */

struct response {
    int     status;
    bool    close;                      /* the server closes after it        */
    bool    chunked;
    int64_t length;                     /* Content-Length, -1 if none        */
    size_t  body_len;                   /* bytes kept in body                */
    char    body[BODY_CAP];
};

/* Read one whole answer: IO_OK, or why not (IO_PROTO: not HTTP as
 * expected). Interim 1xx answers are skipped; 101 is refused. */
int resp_read(struct reader *in, struct response *r, int64_t deadline);

/* The string value of the body's "result" key, if any, into out (cut to
 * cap - 1 bytes). */
bool resp_result(const struct response *r, char *out, size_t cap);

/* ---------------------------------------------------------------- tally */

struct result_count {
    char     name[RESULT_LEN];
    uint64_t n;
};

/* Everything one thread counts; merged after the join. */
struct tally {
    uint64_t status[STATUS_MAX];
    uint64_t errors[ERR_KINDS];
    uint64_t missing;                   /* answers without a "result"        */
    uint64_t connects;                  /* TCP connections opened            */
    uint64_t late;                      /* open loop: requests sent late     */
    struct hist lag;                    /* ... each request's send lag, in µs */
    unsigned nresults;
    struct result_count result[RESULT_MAX];
    struct hist latency;
};

void tally_init(struct tally *t);

/* Count n answers with result `name`. The last slot is kept for
 * OVERFLOW_RESULT, so that a flood of distinct results still adds up. */
void tally_result(struct tally *t, const char *name, uint64_t n);

/* One answer read in ns nanoseconds: its status, its result (or a missing
 * one) and its latency. */
void tally_answer(struct tally *t, const struct response *r, int64_t ns);

/* A request that failed below HTTP with rc (IO_EOF .. IO_CONNECT). */
void tally_failure(struct tally *t, int rc);

/* A request of an open loop left lag_ns after it was due: late when that
 * is more than late_ns. */
void tally_sent(struct tally *t, int64_t lag_ns, int64_t late_ns);

void tally_merge(struct tally *dst, const struct tally *src);
uint64_t tally_errors(const struct tally *t);

#endif /* LOCKLAB_LOAD_HTTP_H */
