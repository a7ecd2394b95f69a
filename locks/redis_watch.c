/* redis_watch.c — seed 001's Redis optimistic lock: WATCH, read, MULTI …
 * EXEC, on the stock in Redis.
 *
 *     WATCH stock:P order:O stock:P:buyers;  MGET stock:P stock:P:epoch …
 *     MULTI; DECRBY stock:P qty; INCRBY stock:P:sold qty;
 *            XADD stock:P:sales * …; [HSET order:O …]; EXEC
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
 */
#include "redis_stock_private.h"

#define WATCH_EAGER 3           /* lost races retried at once, then backoff */

static int watch_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    struct rs_sale s;
    int rc, done, committed, lost;

    if ((rc = rs_cluster_refused(ctx)) != LL_OK)
        return rc;
    rs_sale_init(&s, ctx, p);
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
    .summary  = "seed 001: WATCH stock:P, GET, MULTI DECRBY XADD EXEC; a lost race (nil EXEC) is retried",
    .flaw     = "each lost race costs two round trips; under contention most EXECs lose",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .ceiling  = LOCK_CEIL_REDIS_WATCH,
    .stock    = "redis",
    .nofence  = "no lock to fence: EXEC fails if stock:P changed since WATCH",
    .sell     = watch_sell,
};
