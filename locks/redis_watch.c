/* redis_watch.c — seed 001's Redis optimistic lock: WATCH, read, MULTI …
 * EXEC, on the stock in Redis.
 *
 *     WATCH {stock:P} {stock:P}:order:O {stock:P}:buyers;  MGET {stock:P} {stock:P}:epoch …
 *     MULTI; DECRBY {stock:P} qty; INCRBY {stock:P}:sold qty;
 *            XADD {stock:P}:sales * …; [HSET {stock:P}:order:O …]; EXEC
 *
 * Two round trips an attempt (the reads go out with the WATCH, the writes
 * with MULTI and EXEC). EXEC answers nil when a watched key changed since
 * the WATCH: another sale won the race, and this one tries again, at once
 * for its first WATCH_EAGER losses and then after a jittered, growing
 * pause (lock_backoff), within the request's wait; every lost race counts
 * as a retry. The seeds sleep 20 ms and recurse. The entry and the order's
 * record commit with the units, as redis-decr's script does.
 * What it gets wrong: nothing in the counts, but every lost race is a
 * wasted pair of round trips, and under contention most EXECs lose.
 *
 * Within an instance at most GATE_WIDTH attempts on one product run at
 * once (a gate). On the loop an attempt's window from WATCH to EXEC spans
 * the turns of every other coroutine, so with every purchase of an
 * instance attempting at once most of them lose; one at a time leaves the
 * machine idle while each instance waits for its one attempt's two round
 * trips. GATE_WIDTH lies between the two: the width that sold most, its
 * tail far shorter than ungated (docs/journal.md, "Moved from file
 * headers").
 */
#include "redis_stock_private.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>

#define WATCH_EAGER 3           /* lost races retried at once, then backoff */
#define GATES       64          /* striped by the stock key's hash */
#define GATE_WIDTH  6           /* attempts on one product at once, an instance */

/* An instance's attempts on one product go at most GATE_WIDTH at a time. */
static struct gate {
    pthread_mutex_t  mu;
    int              in;
    struct wait_cond free;
} gates[GATES];
static pthread_once_t gates_once = PTHREAD_ONCE_INIT;

static void gates_init(void)
{
    int i;

    for (i = 0; i < GATES; i++) {
        pthread_mutex_init(&gates[i].mu, NULL);
        wait_cond_init(&gates[i].free);
    }
}

static struct gate *gate_of(const char *key)
{
    pthread_once(&gates_once, gates_init);
    return &gates[str_hash(key) % GATES];
}

static int gate_enter(struct gate *g, int64_t deadline_us)
{
    int in;

    pthread_mutex_lock(&g->mu);
    while (g->in >= GATE_WIDTH)
        if (!wait_cond_wait(&g->free, &g->mu, deadline_us))
            break;
    if ((in = g->in < GATE_WIDTH))
        g->in++;
    pthread_mutex_unlock(&g->mu);
    return in;
}

static void gate_leave(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->in--;
    wait_cond_signal(&g->free);
    pthread_mutex_unlock(&g->mu);
}

static int watch_attempts(struct lock_ctx *ctx, const struct product *p, long long *remaining);

static int watch_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    struct gate *g;
    int rc;

    g = gate_of(p->code);
    if (!gate_enter(g, ctx->deadline_ms * 1000))
        return lock_error(ctx, LL_TIMEOUT, NULL, "not at the stock within %d ms", ctx->wait_ms);
    rc = watch_attempts(ctx, p, remaining);
    gate_leave(g);
    return rc;
}

static int watch_attempts(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    struct rs_sale s;
    int rc, done, committed, lost;

    rs_sale_init(&s, ctx, p, ctx->ops->name);
    *remaining = -1;
    for (lost = 0;; lost++) {
        if ((rc = rs_read(ctx, &s, 1)) != LL_OK) {
            if (rc != LL_UNAVAILABLE)
                rs_unwatch(ctx);
            return rc;
        }
        rc = rs_precheck(ctx, &s, &done);
        if (done) {
            rs_unwatch(ctx);
            return rc;
        }
        stock_hold(ctx);        /* fault: the window between read and EXEC */
        rc = rs_write(ctx, &s, 0, &committed, remaining);
        if (rc == LL_SOLD_OUT && !committed && !s.order_no[0]) {
            rs_unwatch(ctx);    /* nothing to write: no EXEC ended the WATCH */
            return rc;
        }
        if (committed || (rc != LL_OK && rc != LL_SOLD_OUT))
            return rc;
        /* EXEC answered nil: lost the race. */
        if (lost + 1 < WATCH_EAGER) {
            ctx->retries++;
            if (lock_time_left(ctx) > 0)
                continue;
        } else if (lock_backoff(ctx) == LL_OK) {
            continue;
        }
        return lock_error(ctx, LL_TIMEOUT, "redis", "WATCH %s lost %u races in %d ms",
                          s.k.stock, ctx->retries, ctx->wait_ms);
    }
}

const struct lock_ops lock_redis_watch = {
    .name     = "redis-watch",
    .family   = "redis-stock",
    .summary  = "seed 001: WATCH {stock:P}, GET, MULTI DECRBY XADD EXEC; a lost race (nil EXEC) is retried",
    .flaw     = "each lost race costs two round trips; under contention most EXECs lose",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .fails    = FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_REDIS_WATCH,
    .stock    = "redis",
    .nofence  = "no lock to fence: EXEC fails if {stock:P} changed since WATCH",
    .sell     = watch_sell,
};
