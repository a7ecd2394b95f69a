/* test_load.c — ll-load's reading and counting of answers (bench/load/load_http.c),
 * on which every sold and lost count of the tests and of bench/compare
 * depends. Each case is what a server sends on one connection, and what
 * ll-load must make of it: for every answer its status, its "result" and
 * whether the connection is then closed, or the failure that ends the
 * request. Every case is fed whole, cut in two at every byte, and one byte
 * at a time, and must read the same each way. Then the counts a thread
 * derives from a stream of answers (struct tally), the seconds of a run
 * (struct timeline), the latency histogram (HdrHistogram's buckets at 3
 * significant digits: its edges, and its percentiles against a sort of the
 * same samples) and the open loop's schedule (load_sched.h: how many
 * requests each step holds, when they are due). Prints "N passed, M
 * failed".
 */
#include "../bench/load/load_http.h"
#include "../bench/load/load_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond) do {                                              \
        if (cond) passed++;                                           \
        else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)

/* ---------------------------------------------------------------- the server */

/* What a server sends: its bytes, handed out first up to `first` bytes,
 * then up to `step` bytes a read, and after the last one `end` (IO_EOF: it
 * closed; IO_TIMEOUT: it went quiet until the deadline). */
struct script {
    const char *data;
    size_t      len, pos, first, step;
    int         end, reads;
};

static int script_read(void *src, char *buf, size_t cap, size_t *got, int64_t deadline)
{
    struct script *s = src;
    size_t n = s->len - s->pos, limit = s->reads++ == 0 ? s->first : s->step;

    (void)deadline;
    if (n == 0)
        return s->end;
    if (n > limit)
        n = limit;
    if (n > cap)
        n = cap;
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    *got = n;
    return IO_OK;
}

static const char *const rc_names[] = { "ok", "eof", "err", "timeout", "proto", "connect" };

/* Read the stream as one ll-load connection does: answer after answer
 * until the script is spent, a failure, or an answer after which the
 * server closes. Each answer is "STATUS RESULT keep|close" (RESULT "-"
 * when there is none), answers are joined by " | ", a failure is "!RC".
 * Every answer and failure also goes to t when t is not NULL. */
static void read_all(struct script *s, char *out, size_t cap, struct tally *t)
{
    static struct reader in;
    static struct response r;
    size_t used = 0;

    reader_init(&in, script_read, s);
    out[0] = '\0';
    while (reader_pending(&in) || s->pos < s->len || s->len == 0) {
        char result[RESULT_LEN];
        int rc = resp_read(&in, &r, 0);

        if (rc != IO_OK) {
            snprintf(out + used, cap - used, "%s!%s", used ? " | " : "", rc_names[rc]);
            if (t)
                tally_failure(t, rc);
            return;
        }
        if (t)
            tally_answer(t, &r, 1000000);
        used += (size_t)snprintf(out + used, cap - used, "%s%d %s %s", used ? " | " : "",
                                 r.status, resp_result(&r, result, sizeof result) ? result : "-",
                                 r.close ? "close" : "keep");
        if (r.close || used >= cap)
            return;
    }
}

/* Feed `data` whole, cut in two at every byte (at a stride past 2 KB),
 * and one byte at a time: each way must read `want`. */
static void expect(const char *data, size_t len, int end, const char *want)
{
    char got[1024];
    size_t k, stride = len > 2048 ? 97 : 1;
    int bad = 0;

    for (k = 0; k <= len + 1 && bad < 3; k += k + 1 >= len ? 1 : stride) {
        struct script s = { data, len, 0, k == len + 1 ? 1 : k ? k : len, k == len + 1 ? 1 : len,
                            end, 0 };
        read_all(&s, got, sizeof got, NULL);
        if (strcmp(got, want) != 0) {
            bad++;
            printf("FAIL fed %s: got \"%s\", want \"%s\"\n  stream: \"%.120s\"\n",
                   k == len + 1 ? "a byte at a time" : k == 0 ? "whole" : "cut in two",
                   got, want, data);
        }
    }
    if (bad)
        failed++;
    else
        passed++;
}

#define EXPECT(data, end, want) expect(data, sizeof data - 1, end, want)

/* ---------------------------------------------------------------- cases */

#define SOLD "{\"result\":\"sold\",\"product\":1001,\"count\":4999}"

static void test_complete(void)
{
    /* locklab's own answers: jansson's compact JSON, Content-Length. */
    EXPECT("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 45\r\n\r\n"
           SOLD, IO_EOF, "200 sold keep");
    EXPECT("HTTP/1.1 409 Conflict\r\nContent-Length: 42\r\nConnection: keep-alive\r\n\r\n"
           "{\"result\":\"sold_out\",\"product\":1001,\"x\":1}", IO_EOF, "409 sold_out keep");
    EXPECT("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 27\r\n\r\n"
           "{\"result\": \"lock_timeout\"}\n", IO_EOF, "503 lock_timeout keep");
    /* Whitespace JSON allows, a reason phrase of any length or none. */
    EXPECT("HTTP/1.1 500 \r\nContent-Length: 31\r\n\r\n{ \"result\" :\n\t\"error\", \"a\": 2 }",
           IO_EOF, "500 error keep");
    EXPECT("HTTP/1.1 200\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}", IO_EOF,
           "200 sold keep");
    /* Bare LF line ends. */
    EXPECT("HTTP/1.1 200 OK\nContent-Length: 17\n\n{\"result\":\"sold\"}", IO_EOF, "200 sold keep");
    /* No result to count: none in the body, not a string, or no body. */
    EXPECT("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 21\r\n\r\n<html>502 nginx</html", IO_EOF,
           "502 - keep");
    EXPECT("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"result\":1}", IO_EOF, "200 - keep");
    EXPECT("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"result\"}", IO_EOF, "200 - keep");
    EXPECT("HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n{\"result\":\"sol", IO_EOF, "200 - keep");
    EXPECT("HTTP/1.1 204 No Content\r\n\r\n", IO_EOF, "204 - keep");
    /* A result longer than RESULT_LEN - 1 is cut there. */
    EXPECT("HTTP/1.1 200 OK\r\nContent-Length: 75\r\n\r\n"
           "{\"result\":\"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ\"}",
           IO_EOF, "200 abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJK keep");
    /* Interim answers are skipped. */
    EXPECT("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n"
           "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}", IO_EOF,
           "200 sold keep");
}

static void test_keep_alive(void)
{
    EXPECT("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}",
           IO_EOF, "200 sold close");
    EXPECT("HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 2\r\n\r\n{}",
           IO_EOF, "200 - close");
    /* HTTP/1.0 closes unless it says keep-alive. */
    EXPECT("HTTP/1.0 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}", IO_EOF,
           "200 sold close");
    EXPECT("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 17\r\n\r\n"
           "{\"result\":\"sold\"}", IO_EOF, "200 sold keep");
    /* No length and not chunked: the body ends with the connection. */
    EXPECT("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" SOLD, IO_EOF,
           "200 sold close");
    EXPECT("HTTP/1.1 200 OK\r\n\r\n", IO_EOF, "200 - close");
    /* ... and a server that goes quiet instead never ends it. */
    EXPECT("HTTP/1.1 200 OK\r\n\r\n" SOLD, IO_TIMEOUT, "!timeout");
}

static void test_chunked(void)
{
    /* nginx's chunks; the result split across three of them, a size in
     * upper case with an extension, trailers after the last. */
    EXPECT("HTTP/1.1 200 OK\r\nServer: nginx\r\nTransfer-Encoding: chunked\r\n\r\n"
           "5\r\n{\"res\r\n9;ext=1\r\nult\":\"sol\r\nA \r\nd\", \"n\":1}\r\n"
           "0\r\nX-Trailer: 1\r\n\r\n", IO_EOF, "200 sold keep");
    EXPECT("HTTP/1.1 409 Conflict\r\ntransfer-encoding: gzip, Chunked\r\n\r\n"
           "15\r\n{\"result\":\"sold_out\"}\r\n0\r\n\r\n", IO_EOF, "409 sold_out keep");
    EXPECT("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n",
           IO_EOF, "200 - close");
}

static void test_pipelined(void)
{
    /* Three answers in a row on one connection, then a fourth cut short:
     * each body is consumed to its end, whatever delimits it. */
    EXPECT("HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}"
           "HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n"
           "15\r\n{\"result\":\"sold_out\"}\r\n0\r\n\r\n"
           "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"
           "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 24\r\n\r\n"
           "{\"result\":\"unavailable\"}"
           "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\"", IO_EOF,
           "200 sold keep | 409 sold_out keep | 304 - keep | 503 unavailable keep | !eof");
    /* After an answer that closes, what follows is not read. */
    EXPECT("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}"
           "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}", IO_EOF,
           "200 sold close");
}

static void test_malformed(void)
{
    static const char *const bad[] = {
        "HTTX/1.1 200 OK\r\n\r\n",
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 2x0 OK\r\n\r\n",
        "HTTP/1.1 200OK\r\n\r\n",
        "HTTP/1.1  200 OK\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "HTTP/1.1 600 High\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length 17\r\n\r\n{\"result\":\"sold\"}",
        "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 17x\r\n\r\n{\"result\":\"sold\"}",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;1\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000001\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\nhello\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
    };
    static char huge[CONN_BUF + 64];
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect(bad[i], strlen(bad[i]), IO_EOF, "!proto");
    /* A header line the buffer cannot hold. */
    memcpy(huge, "HTTP/1.1 200 OK\r\nX-Big: ", 24);
    memset(huge + 24, 'a', sizeof huge - 24);
    expect(huge, sizeof huge, IO_EOF, "!proto");
    /* A complete answer first, then nonsense. */
    EXPECT("HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}garbage\r\n",
           IO_EOF, "200 sold keep | !proto");
}

static void test_truncated(void)
{
    static const char whole[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}";
    static const char chunked[] =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "11\r\n{\"result\":\"sold\"}\r\n0\r\nX-T: 1\r\n\r\n";
    size_t n;

    /* The server closes (or goes quiet) before the last byte, wherever
     * that is: the request fails, nothing is counted as an answer. */
    for (n = 0; n < sizeof whole - 1; n++) {
        expect(whole, n, IO_EOF, "!eof");
        expect(whole, n, IO_TIMEOUT, "!timeout");
    }
    for (n = 0; n < sizeof chunked - 1; n++)
        expect(chunked, n, IO_EOF, "!eof");
    expect(chunked, sizeof chunked - 1, IO_EOF, "200 sold keep");
    /* A body past BODY_CAP is read to its end; only its start is kept. */
    {
        static char big[BODY_CAP + 512];
        const char *head = "HTTP/1.1 200 OK\r\nContent-Length: 8300\r\n\r\n";
        const char *next = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
        size_t h = strlen(head), len;
        memset(big, ' ', sizeof big);
        memcpy(big, head, h);
        memcpy(big + h, "{\"result\":\"sold\"", 16);
        len = h + 8300;
        memcpy(big + len, next, strlen(next));
        expect(big, len + strlen(next), IO_EOF, "200 sold keep | 200 - keep");
        expect(big, len - 1, IO_EOF, "!eof");
        /* "result" past the kept bytes is not seen. */
        memset(big + h, ' ', 16);
        memcpy(big + h, "{\"x\":0", 6);
        memcpy(big + h + BODY_CAP, ",\"result\":\"sold\"}", 17);
        expect(big, len, IO_EOF, "200 - keep");
    }
}

/* ---------------------------------------------------------------- counts */

static uint64_t result_n(const struct tally *t, const char *name)
{
    unsigned i;
    for (i = 0; i < t->nresults; i++)
        if (strcmp(t->result[i].name, name) == 0)
            return t->result[i].n;
    return 0;
}

static void test_tally(void)
{
    static const char stream[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}"
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n{\"resu\r\nb\r\nlt\":\"sold\"}\r\n0\r\n\r\n"
        "HTTP/1.1 409 Conflict\r\nContent-Length: 21\r\n\r\n{\"result\":\"sold_out\"}"
        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 3\r\n\r\nbad"
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 25\r\n\r\n{\"result\":\"lock_timeout\"}"
        "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"result\":\"sold\"}"
        "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"res";
    static struct tally t, u, sum;
    char got[512];
    struct script s = { stream, sizeof stream - 1, 0, 1, 1, IO_EOF, 0 };
    char name[16];
    int i;

    tally_init(&t);
    read_all(&s, got, sizeof got, &t);
    CHECK(strcmp(got, "200 sold keep | 200 sold keep | 409 sold_out keep | 502 - keep | "
                      "503 lock_timeout keep | 200 sold keep | !eof") == 0);
    CHECK(t.status[200] == 3 && t.status[409] == 1 && t.status[502] == 1 && t.status[503] == 1);
    CHECK(result_n(&t, "sold") == 3 && result_n(&t, "sold_out") == 1);
    CHECK(result_n(&t, "lock_timeout") == 1 && t.nresults == 3);
    CHECK(t.missing == 1);
    CHECK(t.errors[ERR_IO] == 1 && tally_errors(&t) == 1);
    CHECK(hist_count(&t.latency) == 6 && hist_max(&t.latency) == 1000);

    /* Each failure below HTTP counts as its kind. */
    tally_init(&u);
    tally_failure(&u, IO_EOF);
    tally_failure(&u, IO_ERR);
    tally_failure(&u, IO_TIMEOUT);
    tally_failure(&u, IO_PROTO);
    tally_failure(&u, IO_PROTO);
    tally_failure(&u, IO_CONNECT);
    CHECK(u.errors[ERR_IO] == 2 && u.errors[ERR_TIMEOUT] == 1);
    CHECK(u.errors[ERR_PROTOCOL] == 2 && u.errors[ERR_CONNECT] == 1 && tally_errors(&u) == 6);
    CHECK(!strcmp(err_names[ERR_PROTOCOL], "protocol") && !strcmp(err_names[ERR_IO], "io"));

    /* A flood of distinct results fills RESULT_MAX - 1 slots; the rest
     * add up under OVERFLOW_RESULT, so nothing goes uncounted. */
    for (i = 0; i < RESULT_MAX + 8; i++) {
        snprintf(name, sizeof name, "r%d", i);
        tally_result(&u, name, 2);
    }
    CHECK(u.nresults == RESULT_MAX && result_n(&u, "r0") == 2);
    CHECK(result_n(&u, "r30") == 2 && result_n(&u, "r31") == 0);
    CHECK(result_n(&u, OVERFLOW_RESULT) == 2 * 9);

    /* The main thread's merge adds everything up. */
    tally_init(&sum);
    tally_merge(&sum, &t);
    tally_merge(&sum, &u);
    tally_merge(&sum, &t);
    CHECK(sum.status[200] == 6 && sum.missing == 2 && tally_errors(&sum) == 8);
    CHECK(result_n(&sum, "sold") == 6 && result_n(&sum, "sold_out") == 2);
    CHECK(result_n(&sum, OVERFLOW_RESULT) == 2 * 9 + 2 * 3);   /* r28..r30 */
    CHECK(hist_count(&sum.latency) == 12);
}

/* The seconds of a run (struct timeline): counted where they end, grown
 * past the first allocation, merged by adding second by second; and the
 * latency histogram's percentiles never fall as the quantile rises. */
static void test_timeline(void)
{
    static const double q[] = { 0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1 };
    struct timeline a, b;
    struct hist h;
    uint64_t sum = 0, prev = 0, s;
    unsigned i, monotone = 1;

    timeline_init(&a);
    timeline_init(&b);
    CHECK(timeline_seconds(&a) == 0 && timeline_get(&a, 0, TL_ANSWERS) == 0);
    timeline_add(&a, 0, TL_ANSWERS);
    timeline_add(&a, 0, TL_SOLD);
    timeline_add(&a, 2, TL_ERRORS);
    CHECK(timeline_seconds(&a) == 3);
    CHECK(timeline_get(&a, 0, TL_ANSWERS) == 1 && timeline_get(&a, 0, TL_SOLD) == 1);
    CHECK(timeline_get(&a, 1, TL_ANSWERS) == 0 && timeline_get(&a, 2, TL_ERRORS) == 1);
    CHECK(timeline_get(&a, 3, TL_ANSWERS) == 0);         /* past the end: 0 */
    for (s = 0; s < 1000; s++)                            /* grows, new seconds zero */
        timeline_add(&b, s, TL_ANSWERS);
    timeline_add(&b, 999, TL_ANSWERS);
    CHECK(timeline_seconds(&b) == 1000 && timeline_get(&b, 999, TL_ANSWERS) == 2);
    CHECK(timeline_get(&b, 500, TL_SOLD) == 0 && timeline_get(&b, 500, TL_ERRORS) == 0);
    timeline_merge(&a, &b);
    CHECK(timeline_seconds(&a) == 1000);
    for (s = 0; s < timeline_seconds(&a); s++)
        sum += timeline_get(&a, s, TL_ANSWERS);
    CHECK(sum == 1 + 1001);
    CHECK(timeline_get(&a, 0, TL_ANSWERS) == 2 && timeline_get(&a, 2, TL_ERRORS) == 1);
    timeline_merge(&b, &a);                               /* the shorter one grows */
    CHECK(timeline_get(&b, 999, TL_ANSWERS) == 4 && timeline_get(&b, 0, TL_SOLD) == 1);
    timeline_free(&a);
    timeline_free(&b);
    CHECK(timeline_seconds(&a) == 0);

    hist_init(&h);
    for (i = 0; i < 10000; i++)
        hist_add(&h, (uint64_t)(i * 7919u % 100000u) + (i % 97 == 0 ? 5000000u : 0u));
    for (i = 0; i < sizeof q / sizeof q[0]; i++) {
        uint64_t v = hist_percentile(&h, q[i]);
        monotone &= v >= prev;
        prev = v;
    }
    CHECK(monotone && prev == hist_max(&h) && hist_percentile(&h, 0) == hist_min(&h));
}

/* ---------------------------------------------------------------- histogram */

/* The bucket scheme: every value up to 2047 µs its own bucket, then 1024
 * buckets to each power of two, each as wide as a 1024th of its lowest
 * value; the buckets tile the range with no gap and no overlap, and a
 * value past the top lands in the last bucket. */
static void test_hist_buckets(void)
{
    unsigned ok = 1, i;

    for (uint64_t v = 0; v < 2048; v++)
        ok &= hist_index(v) == v && hist_bucket_low((unsigned)v) == v &&
              hist_bucket_width((unsigned)v) == 1;
    CHECK(ok);
    CHECK(hist_index(2048) == 2048 && hist_index(2049) == 2048 && hist_index(2050) == 2049);
    CHECK(hist_bucket_low(2048) == 2048 && hist_bucket_width(2048) == 2);
    CHECK(hist_index(4095) == 3071 && hist_index(4096) == 3072 && hist_bucket_width(3072) == 4);
    CHECK(hist_index(60000000) < HIST_BUCKETS - 1);          /* 60 s is inside */
    CHECK(hist_index(HIST_MAX_US) == HIST_BUCKETS - 1);
    CHECK(hist_index(HIST_MAX_US + 1) == HIST_BUCKETS - 1 && hist_index(UINT64_MAX) == HIST_BUCKETS - 1);
    CHECK(hist_bucket_low(HIST_BUCKETS - 1) + hist_bucket_width(HIST_BUCKETS - 1) == HIST_MAX_US + 1);
    ok = 1;
    for (i = 1; i < HIST_BUCKETS; i++) {
        uint64_t low = hist_bucket_low(i), width = hist_bucket_width(i);
        ok &= low == hist_bucket_low(i - 1) + hist_bucket_width(i - 1);   /* tiled   */
        ok &= hist_index(low) == i && hist_index(low + width - 1) == i;
        ok &= hist_index(low - 1) == i - 1;
        ok &= width * 1024 <= (low > 1024 ? low : 1024);                  /* 3 digits */
    }
    CHECK(ok);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Every percentile against the sorted samples: at or above the sample of
 * rank ceil(q × n), and within its bucket (less than 0.1 % above it, or 1
 * µs below 2048 µs, where it is exact); min, max and mean exact. The
 * samples spread over eight decades, with a tail of stalls. */
static void test_hist_percentiles(void)
{
    static const double q[] = { 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999,
                                0.9995, 0.9999 };
    enum { N = 200000 };
    static uint64_t v[N];
    static struct hist h, a, b;
    uint64_t x = 88172645463325252u, sum = 0;
    unsigned ok = 1, i;

    hist_init(&h);
    hist_init(&a);
    hist_init(&b);
    for (i = 0; i < N; i++) {
        uint64_t r = rng_next(&x);
        v[i] = (r >> 40) % (UINT64_C(1) << (r % 27));          /* 0 .. 67 s      */
        if (i % 1000 == 0)
            v[i] = 800000 + r % 200000;                       /* stalls: ~1 s   */
        hist_add(&h, v[i]);
        hist_add(i % 2 ? &a : &b, v[i]);
        sum += v[i];
    }
    qsort(v, N, sizeof v[0], cmp_u64);
    for (i = 0; i < sizeof q / sizeof q[0]; i++) {
        uint64_t rank = (uint64_t)(q[i] * N + 0.999999), exact = v[rank - 1];
        uint64_t got = hist_percentile(&h, q[i]);
        ok &= got >= exact && got - exact < (exact < 2048 ? 1 : exact / 1024 + 1);
        if (!(got >= exact && got - exact < (exact < 2048 ? 1 : exact / 1024 + 1)))
            printf("  p%g: %llu against %llu\n", q[i] * 100, (unsigned long long)got,
                   (unsigned long long)exact);
    }
    CHECK(ok);
    CHECK(hist_percentile(&h, 0) == v[0] && hist_percentile(&h, 1) == v[N - 1]);
    CHECK(hist_min(&h) == v[0] && hist_max(&h) == v[N - 1] && hist_count(&h) == N);
    CHECK(hist_mean(&h) == (double)sum / N);
    hist_merge(&a, &b);                 /* two threads' halves, merged      */
    ok = hist_count(&a) == N && hist_min(&a) == hist_min(&h) && hist_max(&a) == hist_max(&h);
    for (i = 0; i < sizeof q / sizeof q[0]; i++)
        ok &= hist_percentile(&a, q[i]) == hist_percentile(&h, q[i]);
    CHECK(ok);

    /* A zero-filled histogram is empty, and the first sample sets the min. */
    memset(&b, 0, sizeof b);
    CHECK(hist_count(&b) == 0 && hist_min(&b) == 0 && hist_percentile(&b, 0.5) == 0);
    hist_add(&b, 70);
    CHECK(hist_min(&b) == 70 && hist_max(&b) == 70 && hist_percentile(&b, 0.99) == 70);
    hist_add(&b, 120000000);                                  /* past the top   */
    CHECK(hist_max(&b) == 120000000 && hist_percentile(&b, 1) == 120000000);
    CHECK(hist_percentile(&b, 0.9) == HIST_MAX_US);
}

/* ---------------------------------------------------------------- schedule */

/* Evenly spaced: a step of rate r over D seconds holds exactly the j < r D,
 * request j due j / r into it; -n caps the whole run; steps follow each
 * other at their own rates. Poisson: the same seed gives the same run, the
 * requests of a step stay inside it, and their number is near r D. */
static void test_sched(void)
{
    const int64_t S = 1000000000;
    struct sched s;
    int64_t at, prev = -1;
    int step;
    uint64_t n = 0, per[3] = { 0, 0, 0 }, ok = 1;

    sched_init(&s, 1000, 0, 1, 10 * S, 0, SCHED_UNIFORM, 1);
    while (sched_next(&s, &at, &step)) {
        ok &= at == (int64_t)n * 1000000 && step == 0;
        n++;
    }
    CHECK(ok && n == 10000 && sched_end_ns(&s) == 10 * S);

    sched_init(&s, 333, 0, 1, 3 * S, 0, SCHED_UNIFORM, 1);    /* 999 < 333 × 3 */
    for (n = 0; sched_next(&s, &at, &step); n++)
        ;
    CHECK(n == 999);

    sched_init(&s, 500, 0, 1, 0, 1234, SCHED_UNIFORM, 1);     /* -n only       */
    for (n = 0; sched_next(&s, &at, &step); n++)
        prev = at;
    CHECK(n == 1234 && prev == 1233 * INT64_C(2000000) && sched_end_ns(&s) == 1234 * (S / 500));

    sched_init(&s, 100, 150, 3, 2 * S, 0, SCHED_UNIFORM, 1);  /* 100, 250, 400 */
    ok = 1;
    prev = -1;
    while (sched_next(&s, &at, &step)) {
        per[step]++;
        ok &= at > prev && at >= step * 2 * S && at < (step + 1) * 2 * S;
        prev = at;
    }
    CHECK(ok && per[0] == 200 && per[1] == 500 && per[2] == 800);
    CHECK(sched_rate(&s, 2) == 400 && sched_end_ns(&s) == 6 * S);

    sched_init(&s, 100, 150, 3, 2 * S, 600, SCHED_UNIFORM, 1);  /* capped       */
    for (n = 0; sched_next(&s, &at, &step); n++)
        ;
    CHECK(n == 600);

    struct sched p, q;
    uint64_t same = 1, inside = 1;
    sched_init(&p, 2000, 0, 1, 10 * S, 0, SCHED_POISSON, 7);
    sched_init(&q, 2000, 0, 1, 10 * S, 0, SCHED_POISSON, 7);
    prev = -1;
    for (n = 0; sched_next(&p, &at, &step); n++) {
        int64_t at2;
        int step2;
        same &= sched_next(&q, &at2, &step2) && at2 == at;
        inside &= at >= prev && at < 10 * S;
        prev = at;
    }
    CHECK(same && inside && !sched_next(&q, &at, &step));
    /* 20,000 expected, a standard deviation of 141: 5 of them either way. */
    CHECK(n > 20000 - 710 && n < 20000 + 710);
}

int main(void)
{
    test_complete();
    test_keep_alive();
    test_chunked();
    test_pipelined();
    test_malformed();
    test_truncated();
    test_tally();
    test_timeline();
    test_hist_buckets();
    test_hist_percentiles();
    test_sched();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
