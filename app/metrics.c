/* metrics.c — Prometheus's text format, and the stock reader behind
 * locklab_stock_units (see metrics.h).
 *
 * The text is written into one growing buffer, a family at a time; stats.c
 * writes the strategies' families through the calls below and http.c sends
 * the result. The stock reader is one background task (task_background: a
 * coroutine on the instance's loop) waiting on a wait_cond: a scrape bumps
 * `asked` and waits for `done` to reach it; the task reads every product
 * known so far, one prepared SELECT each on its own connection, publishes
 * the counts and bumps `done`. Scrapes that come
 * while it reads share its next round.
 */
#include "metrics.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../locks/lock.h"
#include "../store/stock.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- buckets */

const int64_t metrics_le_us[METRICS_LE_N] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000,
};

/* The same bounds in seconds, as the le labels say them. */
static const char *const le_text[METRICS_LE_N] = {
    "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30",
};

int metrics_bucket(int64_t us)
{
    int lo = 0, hi = METRICS_LE_N;     /* the first bound >= us is in [lo, hi] */

    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (metrics_le_us[mid] >= us)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ---------------------------------------------------------------- the text */

struct metrics {
    char  *text;
    size_t len, cap;
};

struct metrics *metrics_new(void)
{
    struct metrics *m = xmalloc(sizeof *m);

    m->cap = 64 * 1024;
    m->text = xmalloc(m->cap);
    m->len = 0;
    m->text[0] = '\0';
    return m;
}

/* Make room for `more` bytes and the NUL after the text. */
static void grow(struct metrics *m, size_t more)
{
    char *bigger;

    while (m->len + more >= m->cap)
        m->cap *= 2;
    bigger = xmalloc(m->cap);
    memcpy(bigger, m->text, m->len + 1);
    free(m->text);
    m->text = bigger;
}

static void put(struct metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct metrics *m, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(m->text + m->len, m->cap - m->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort();                /* a format of ours that cannot print */
        if ((size_t)n < m->cap - m->len)
            break;
        grow(m, (size_t)n);
    }
    m->len += (size_t)n;
}

void metrics_family(struct metrics *m, const char *name, const char *type, const char *help)
{
    put(m, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_int(struct metrics *m, const char *name, const char *labels, uint64_t v)
{
    if (labels)
        put(m, "%s{%s} %" PRIu64 "\n", name, labels, v);
    else
        put(m, "%s %" PRIu64 "\n", name, v);
}

void metrics_gauge(struct metrics *m, const char *name, const char *labels, long long v)
{
    if (labels)
        put(m, "%s{%s} %lld\n", name, labels, v);
    else
        put(m, "%s %lld\n", name, v);
}

void metrics_seconds(struct metrics *m, const char *name, const char *labels, int64_t us)
{
    const char *sign = us < 0 ? "-" : "";
    int64_t a = us < 0 ? -us : us;

    put(m, "%s%s%s%s %s%lld.%06lld\n", name, labels ? "{" : "", labels ? labels : "",
        labels ? "}" : "", sign, (long long)(a / 1000000), (long long)(a % 1000000));
}

void metrics_histogram(struct metrics *m, const char *name, const char *labels,
                       const uint64_t *bucket, uint64_t sum_us)
{
    uint64_t s = sum_us / 1000000, us = sum_us % 1000000;
    const char *sep = labels ? "," : "";
    uint64_t seen = 0;
    int b;

    labels = labels ? labels : "";
    for (b = 0; b < METRICS_LE_N; b++) {
        seen += bucket[b];
        put(m, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", name, labels, sep, le_text[b], seen);
    }
    seen += bucket[METRICS_LE_N];
    put(m, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, seen);
    if (labels[0]) {
        put(m, "%s_sum{%s} %" PRIu64 ".%06" PRIu64 "\n", name, labels, s, us);
        put(m, "%s_count{%s} %" PRIu64 "\n", name, labels, seen);
    } else {
        put(m, "%s_sum %" PRIu64 ".%06" PRIu64 "\n", name, s, us);
        put(m, "%s_count %" PRIu64 "\n", name, seen);
    }
}

char *metrics_label_value(char *dst, size_t size, const char *v)
{
    size_t out = 0;

    for (; *v; v++) {
        const char *piece = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
        size_t take = piece ? 2 : 1;

        if (out + take >= size)
            break;
        if (piece)
            memcpy(dst + out, piece, 2);
        else
            dst[out] = *v;
        out += take;
    }
    dst[out] = '\0';
    return dst;
}

char *metrics_text(struct metrics *m, size_t *len)
{
    char *text = m->text;

    *len = m->len;
    free(m);
    return text;
}

/* ---------------------------------------------------------------- the instance */

void metrics_instance(struct metrics *m, const struct config *cfg)
{
    char name[128], lock[64], labels[320];

    snprintf(labels, sizeof labels, "name=\"%s\",id=\"%s\",default_lock=\"%s\"",
             metrics_label_value(name, sizeof name, cfg->name), cfg->instance_id,
             metrics_label_value(lock, sizeof lock, cfg->lock));
    metrics_family(m, "locklab_instance_info", "gauge",
                   "Always 1: the instance's name, its id (new at every start) and its "
                   "default strategy, as GET /health says them.");
    metrics_int(m, "locklab_instance_info", labels, 1);
}

/* ---------------------------------------------------------------- the stock reader */

struct stock_count {
    char      code[STOCK_CODE_MAX + 1];
    long long count;
};

static struct {
    pthread_mutex_t    mu;
    struct wait_cond   cv;          /* both sides wait on it */
    int                running, stop, exited;
    unsigned long      asked, done; /* rounds asked for, the last one finished */
    int                n;           /* the last round's counts */
    struct stock_count last[METRICS_STOCK_MAX];
    struct lock_ctx    ctx;         /* its own connection, no worker slot's */
} reader = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = WAIT_COND_INIT };

/* One round: the seeds' product (request.c's default), then every product
 * found so far; a product whose read fails is left out. */
static int read_round(struct stock_count *out)
{
    struct product known[METRICS_STOCK_MAX];
    int i, n, got = 0;

    reader.ctx.err = 0;
    stock_find(&reader.ctx, STOCK_DEFAULT, &known[0]);  /* now in the cache, if it exists */
    n = stock_products(known, METRICS_STOCK_MAX);
    for (i = 0; i < n; i++) {
        reader.ctx.err = 0;
        if (stock_read(&reader.ctx, &known[i], &out[got].count) != LL_OK)
            continue;
        strlcopy(out[got].code, known[i].code, sizeof out[got].code);
        got++;
    }
    return got;
}

/* The reader: a background task (core/wait.h), one round per ask. */
static void reader_main(void *arg)
{
    struct stock_count fresh[METRICS_STOCK_MAX];
    unsigned long round;
    int n;

    (void)arg;
    pthread_mutex_lock(&reader.mu);
    while (!reader.stop) {
        if (reader.done == reader.asked) {
            wait_cond_wait(&reader.cv, &reader.mu, WAIT_FOREVER);
            continue;
        }
        round = reader.asked;
        pthread_mutex_unlock(&reader.mu);
        n = read_round(fresh);
        pthread_mutex_lock(&reader.mu);
        memcpy(reader.last, fresh, (size_t)n * sizeof fresh[0]);
        reader.n = n;
        reader.done = round;
        wait_cond_broadcast(&reader.cv);
    }
    reader.exited = 1;
    wait_cond_broadcast(&reader.cv);
    pthread_mutex_unlock(&reader.mu);
}

void metrics_start(const struct config *cfg)
{
    reader.ctx.slot = -1;
    reader.ctx.cfg = cfg;
    reader.ctx.db = db_new(cfg);
    reader.ctx.held_us = -1;
    reader.running = 1;
    task_background("ll-metrics", reader_main, NULL);
}

void metrics_stop(void)
{
    if (!reader.running)
        return;
    pthread_mutex_lock(&reader.mu);
    reader.stop = 1;
    wait_cond_broadcast(&reader.cv);
    while (!reader.exited)
        wait_cond_wait(&reader.cv, &reader.mu, WAIT_FOREVER);
    pthread_mutex_unlock(&reader.mu);
    reader.running = 0;
    db_free(reader.ctx.db);
}

void metrics_stock(struct metrics *m)
{
    struct stock_count counts[METRICS_STOCK_MAX];
    int64_t deadline_us = now_us() + METRICS_STOCK_WAIT_MS * 1000;
    unsigned long round;
    char labels[64];
    int i, n = 0;

    if (reader.running) {
        pthread_mutex_lock(&reader.mu);
        round = ++reader.asked;
        wait_cond_broadcast(&reader.cv);
        while (reader.done < round)
            if (!wait_cond_wait(&reader.cv, &reader.mu, deadline_us))
                break;
        if (reader.done >= round) {
            n = reader.n;
            memcpy(counts, reader.last, (size_t)n * sizeof counts[0]);
        }
        pthread_mutex_unlock(&reader.mu);
    }
    metrics_family(m, "locklab_stock_units", "gauge",
                   "The product's count in MariaDB's db_stock, read for this scrape "
                   "(absent when MariaDB did not answer within 250 ms).");
    for (i = 0; i < n; i++) {
        snprintf(labels, sizeof labels, "product=\"%.*s\"", STOCK_CODE_MAX, counts[i].code);
        metrics_gauge(m, "locklab_stock_units", labels, counts[i].count);
    }
}
