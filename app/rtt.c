/* rtt.c — the round trip to each backend, measured by the instance itself
 * on the connections it sells with.
 *
 * Why here. `bench/stack up --netns --rtt MS` puts a distance between the
 * instances and their backends (bench/lib/stack_delay.sh), and a figure
 * printed "at 0.5 ms" is only worth that if the sales crossed it. A probe
 * from outside cannot tell: a connect from the instance's namespace sees
 * a new connection on the path it takes, not the established ones a sale
 * uses, nor a connection that goes another way altogether (a Unix socket
 * where TCP was meant: bench/lib/stack_front.sh says how that came to
 * be). Only the instance knows the connections it sells with.
 *
 * How. A background task of the instance's loop, once a second, times one
 * round trip to each backend on the connection a sale would use:
 *
 *   mysql       SELECT 1, a prepared statement like every other, on a
 *               worker slot's own connection, the slot borrowed from the
 *               pool as a request borrows it (the probe waits its turn
 *               when all are busy, a second at most, and skips the round
 *               if the slot's connection has a pipelined answer pending);
 *   redis       PING on the loop's shared pipelined connection to each
 *               server, where the strategies' commands go;
 *   zookeeper   exists("/") on the instance's session.
 *
 * Each is sent once untimed, which connects, prepares or reconnects when
 * it must, then RTT_BURST (3) times back to back, each timed, so a sample
 * is always the round trip of an established connection, the one that
 * would carry the next sale. A call pays what a sale pays for one round
 * trip: the wire both ways, the server's work on the smallest command,
 * the wake-ups at both ends, and on a loaded instance the loop's turn;
 * the second's sample is the least of its three, the one the machine's
 * scheduling added least to. The last RTT_WINDOW
 * samples of each backend are kept (POST /stats/reset forgets them, as it
 * does every counter); /stats shows the last, the least and the median of
 * them, /metrics the last and the least. The least is what a
 * check sets against the round trip asked for (bench/compare --rtt,
 * tests/rtt.sh): every packet of an established flow waits the same delay,
 * so it shows a delay that is missing as well as one that is too long,
 * and a busy machine only ever adds to it. ZooKeeper's includes its
 * client's hand-offs between threads (its I/O and completion threads, then
 * the loop), a few tens of µs more than the wire.
 *
 * etcd is not probed: its client (clients/etcd.c) opens a libcurl handle a
 * call, so there is no established connection of a sale's to time.
 *
 * Cost. Four round trips per backend a second, a slot held for four of
 * them; nothing is counted in the sales' counters (/stats' strategies), and
 * the probe's own context holds its Redis and ZooKeeper errors. A backend
 * that fails is counted under "failures" with its error, and probed again
 * a second later: a dead backend costs one failed call a second.
 */
#include "rtt.h"
#include "metrics.h"
#include "pool.h"
#include "../clients/db.h"
#include "../clients/redis.h"
#include "../clients/zk.h"
#include "../core/config.h"
#include "../core/ctx.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../locks/lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RTT_INTERVAL_US  1000000        /* a round a second                  */
#define RTT_WINDOW       10             /* samples kept per backend          */
#define RTT_SLOT_WAIT_MS 1000           /* for a worker slot, at most        */
#define RTT_BURST        3              /* timed calls a sample: the least   */
#define RTT_SERIES       (2 + CONFIG_MAX_SERVERS)

/* One backend's samples. */
struct rtt_series {
    char     backend[16];               /* "mysql", "redis", "zookeeper"     */
    char     where[128];                /* how the instance reaches it       */
    int64_t  sample_us[RTT_WINDOW];     /* a ring, the last RTT_WINDOW       */
    unsigned n, next;
    uint64_t samples, failures;
    char     error[160];                /* the last failure's, "" since a sample */
};

static struct {
    const struct config *cfg;
    struct lock_ctx      ctx;           /* the probe's own: Redis, ZooKeeper */
    pthread_mutex_t      mu;            /* the series (read by /stats)       */
    struct rtt_series    series[RTT_SERIES];
    int                  nseries;
    atomic_int           stop;
    int                  running, ended;
    struct wait_cond     tick;          /* the pause between rounds, or stop */
    pthread_mutex_t      end_mu;        /* ... and `ended`                   */
    struct wait_cond     end;           /* the task ended                    */
} rtt = { .mu = PTHREAD_MUTEX_INITIALIZER, .tick = WAIT_COND_INIT,
          .end_mu = PTHREAD_MUTEX_INITIALIZER, .end = WAIT_COND_INIT };

/* ---------------------------------------------------------------- series */

static struct rtt_series *rtt_add(const char *backend, const char *where)
{
    struct rtt_series *s = &rtt.series[rtt.nseries++];
    snprintf(s->backend, sizeof s->backend, "%s", backend);
    snprintf(s->where, sizeof s->where, "%s", where);
    return s;
}

static void rtt_sample(struct rtt_series *s, int64_t us)
{
    pthread_mutex_lock(&rtt.mu);
    s->sample_us[s->next] = us;
    s->next = (s->next + 1) % RTT_WINDOW;
    if (s->n < RTT_WINDOW)
        s->n++;
    s->samples++;
    s->error[0] = '\0';
    pthread_mutex_unlock(&rtt.mu);
}

static void rtt_failed(struct rtt_series *s, const char *why)
{
    pthread_mutex_lock(&rtt.mu);
    s->failures++;
    snprintf(s->error, sizeof s->error, "%s", why);
    pthread_mutex_unlock(&rtt.mu);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The window's samples, sorted (under rtt.mu); their number. */
static unsigned rtt_sorted(const struct rtt_series *s, int64_t *out)
{
    memcpy(out, s->sample_us, sizeof s->sample_us);
    qsort(out, s->n, sizeof out[0], cmp_i64);
    return s->n;
}

static int64_t rtt_last(const struct rtt_series *s)
{
    return s->sample_us[(s->next + RTT_WINDOW - 1) % RTT_WINDOW];
}

/* ---------------------------------------------------------------- probes */

/* One call on a backend's connection: 0, or -1 with why on the probe's
 * context (or on the slot's). */
typedef int rtt_call(void *arg);

/* A sample: the call once untimed (it connects, prepares or reconnects
 * when it must), then RTT_BURST times back to back, each timed; the least
 * of those is the second's sample, the round trip with the least of the
 * machine's wake-ups in it. 0 and *us, or -1 when a call failed. */
static int rtt_time(rtt_call *call, void *arg, int64_t *us)
{
    int64_t t0, dt;
    int k;

    if (call(arg) != 0)
        return -1;
    *us = INT64_MAX;
    for (k = 0; k < RTT_BURST; k++) {
        t0 = now_us();
        if (call(arg) != 0)
            return -1;
        dt = now_us() - t0;
        if (dt < *us)
            *us = dt;
    }
    return 0;
}

static int rtt_select(void *arg)
{
    static const char sql[] = "SELECT 1";
    long long rows = 0, one = 0;

    return db_exec(arg, sql, &rows, ">l", &one) == LL_OK ? 0 : -1;
}

/* SELECT 1 on a borrowed slot's own MariaDB connection. */
static void rtt_mysql(struct rtt_series *s)
{
    struct lock_ctx *ctx = pool_get(now_ms() + RTT_SLOT_WAIT_MS);
    int64_t us;

    if (ctx == NULL) {
        rtt_failed(s, "no worker slot free within 1 s");
        return;
    }
    if (db_pending(ctx)) {              /* its next answer is a sale's       */
        pool_put(ctx);
        return;
    }
    ctx->deadline_ms = now_ms() + RTT_SLOT_WAIT_MS;
    ctx->lose_answer = ctx->crash = 0;
    ctx->err = 0;
    if (rtt_time(rtt_select, ctx, &us) == 0)
        rtt_sample(s, us);
    else
        rtt_failed(s, ctx->errstr);
    ctx->err = 0;
    ctx->errstr[0] = '\0';
    pool_put(ctx);
}

/* The probe's own context, ready for a call: a fresh deadline, no error. */
static struct lock_ctx *rtt_ctx(void)
{
    rtt.ctx.deadline_ms = now_ms() + RTT_SLOT_WAIT_MS;
    rtt.ctx.err = 0;
    rtt.ctx.errstr[0] = '\0';
    return &rtt.ctx;
}

static int rtt_ping(void *arg)
{
    redisReply *r = redis_cmd(rtt_ctx(), *(const int *)arg, "PING");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;

    if (r != NULL && !ok)
        snprintf(rtt.ctx.errstr, sizeof rtt.ctx.errstr, "PING: an unexpected reply");
    if (r != NULL)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* PING on the loop's shared connection to Redis server `server`. */
static void rtt_redis(struct rtt_series *s, int server)
{
    int64_t us;

    if (rtt_time(rtt_ping, &server, &us) == 0)
        rtt_sample(s, us);
    else
        rtt_failed(s, rtt.ctx.errstr);
    pthread_mutex_lock(&rtt.mu);
    snprintf(s->where, sizeof s->where, "%s", redis_name(&rtt.ctx, server));
    pthread_mutex_unlock(&rtt.mu);
}

static int rtt_exists(void *arg)
{
    struct Stat st;
    int zrc = zk_exists(rtt_ctx(), arg, "/", 0, &st);

    if (zrc != ZOK)
        snprintf(rtt.ctx.errstr, sizeof rtt.ctx.errstr, "exists: %s", zerror(zrc));
    return zrc == ZOK ? 0 : -1;
}

/* exists("/") on the instance's ZooKeeper session. */
static void rtt_zk(struct rtt_series *s)
{
    struct zk_conn *c = NULL;
    int64_t us;

    if (zk_connect(rtt_ctx(), &c) != LL_OK) {
        rtt_failed(s, rtt.ctx.errstr);
        return;
    }
    if (rtt_time(rtt_exists, c, &us) == 0)
        rtt_sample(s, us);
    else
        rtt_failed(s, rtt.ctx.errstr);
    zk_put(c);
}

/* One round: every backend once. */
static void rtt_round(void)
{
    int i = 0;

    rtt_mysql(&rtt.series[i++]);
    for (; i < rtt.nseries && strcmp(rtt.series[i].backend, "redis") == 0; i++)
        rtt_redis(&rtt.series[i], i - 1);
    if (i < rtt.nseries)
        rtt_zk(&rtt.series[i]);
}

static void rtt_main(void *arg)
{
    int64_t next = now_us();

    (void)arg;
    while (!atomic_load(&rtt.stop)) {
        rtt_round();
        next += RTT_INTERVAL_US;
        if (next < now_us())            /* a round that ran long: no catch-up */
            next = now_us() + RTT_INTERVAL_US;
        while (!atomic_load(&rtt.stop) && now_us() < next)
            wait_cond_wait(&rtt.tick, NULL, next);
    }
    pthread_mutex_lock(&rtt.end_mu);
    rtt.ended = 1;
    wait_cond_broadcast(&rtt.end);
    pthread_mutex_unlock(&rtt.end_mu);
}

/* ---------------------------------------------------------------- start, stop */

void rtt_start(const struct config *cfg)
{
    char where[128];
    int i, nredis = cfg->redis_cluster ? 1 : cfg->nredis;

    rtt.cfg = cfg;
    rtt.ctx.cfg = cfg;
    rtt.ctx.slot = -1;
    if (cfg->mysql_socket)
        snprintf(where, sizeof where, "mysql socket %s", cfg->mysql_socket);
    else
        snprintf(where, sizeof where, "mysql %s:%d", cfg->mysql_host, cfg->mysql_port);
    rtt_add("mysql", where);
    for (i = 0; i < nredis && rtt.nseries < RTT_SERIES - 1; i++)
        rtt_add("redis", "redis");
    if (cfg->zk && *cfg->zk) {
        snprintf(where, sizeof where, "zookeeper %s", cfg->zk);
        rtt_add("zookeeper", where);
    }
    rtt.running = 1;
    task_background("rtt-probe", rtt_main, NULL);
}

void rtt_stop(void)
{
    if (!rtt.running)
        return;
    atomic_store(&rtt.stop, 1);
    wait_cond_broadcast(&rtt.tick);
    pthread_mutex_lock(&rtt.end_mu);
    while (!rtt.ended)
        wait_cond_wait(&rtt.end, &rtt.end_mu, WAIT_FOREVER);
    pthread_mutex_unlock(&rtt.end_mu);
    rtt.running = 0;
    lock_ctx_free(&rtt.ctx);
}

/* ---------------------------------------------------------------- reading */

void rtt_reset(void)
{
    pthread_mutex_lock(&rtt.mu);
    for (int i = 0; i < rtt.nseries; i++) {
        struct rtt_series *s = &rtt.series[i];
        s->n = s->next = 0;
        s->samples = s->failures = 0;
        s->error[0] = '\0';
    }
    pthread_mutex_unlock(&rtt.mu);
}

json_t *rtt_json(void)
{
    json_t *list = json_array();
    int64_t sorted[RTT_WINDOW];

    pthread_mutex_lock(&rtt.mu);
    for (int i = 0; i < rtt.nseries; i++) {
        const struct rtt_series *s = &rtt.series[i];
        unsigned n = rtt_sorted(s, sorted);
        json_t *o = json_pack("{s:s,s:s,s:I,s:I}", "backend", s->backend, "where", s->where,
                              "samples", (json_int_t)s->samples,
                              "failures", (json_int_t)s->failures);
        if (n > 0) {
            json_object_set_new(o, "last_ms", json_real((double)rtt_last(s) / 1000.0));
            json_object_set_new(o, "min_ms", json_real((double)sorted[0] / 1000.0));
            json_object_set_new(o, "median_ms", json_real((double)sorted[n / 2] / 1000.0));
        }
        if (s->error[0])
            json_object_set_new(o, "error", json_string(s->error));
        json_array_append_new(list, o);
    }
    pthread_mutex_unlock(&rtt.mu);
    return json_pack("{s:i,s:i,s:o}", "interval_ms", RTT_INTERVAL_US / 1000, "window", RTT_WINDOW,
                     "backends", list);
}

void rtt_metrics(struct metrics *m)
{
    static const char *const names[2] = { "locklab_backend_rtt_seconds",
                                          "locklab_backend_rtt_min_seconds" };
    static const char *const helps[2] = {
        "The last round trip the instance timed to a backend on a connection it sells with "
        "(SELECT 1, PING, exists), each second.",
        "The least of the last 10 of those round trips.",
    };
    int64_t sorted[RTT_WINDOW];
    char labels[400], b[40], w[300];

    pthread_mutex_lock(&rtt.mu);
    for (int k = 0; k < 2; k++) {
        metrics_family(m, names[k], "gauge", helps[k]);
        for (int i = 0; i < rtt.nseries; i++) {
            const struct rtt_series *s = &rtt.series[i];
            if (rtt_sorted(s, sorted) == 0)
                continue;
            snprintf(labels, sizeof labels, "backend=\"%s\",where=\"%s\"",
                     metrics_label_value(b, sizeof b, s->backend),
                     metrics_label_value(w, sizeof w, s->where));
            metrics_seconds(m, names[k], labels, k == 0 ? rtt_last(s) : sorted[0]);
        }
    }
    pthread_mutex_unlock(&rtt.mu);
}
