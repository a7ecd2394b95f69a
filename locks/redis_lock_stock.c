/* redis_lock_stock.c — the seeds' lock around the stock in Redis (seed 001
 * 进阶4, seed 004's Redisson example): a lock of the Redis family around
 * GET {stock:P} and SET {stock:P} <count − qty>.
 *
 *     SET lock:P <token> PX <lease> NX     (redis-lua's lock, by its table)
 *     MGET {stock:P} {stock:P}:epoch …
 *     MULTI; SET {stock:P} <read − qty>; INCRBY {stock:P}:sold qty;
 *            XADD {stock:P}:sales * …; [HSET {stock:P}:order:O …]; EXEC
 *     EVALSHA <compare-and-delete> lock:P <token>
 *
 * The SET writes the absolute count read, as the seeds do, so the lock is
 * all that keeps two sales from reading the same count; the entry and the
 * order's record still commit with the units (MULTI/EXEC). Kept to show
 * what redis-decr's script makes unnecessary: two more round trips a sale,
 * and every sale of a product serialised behind the lock. And the lock's
 * own flaw comes with it: a holder slower than the lease (?hold_ms past
 * --lease-ms) is overtaken, two sales read one count, one unit is sold
 * twice in Redis; the consumer applies both entries, and GET /stock's
 * reconciliation shows MariaDB one unit below Redis.
 */
#include "redis_stock_private.h"
#include "protocol.h"
#include "../core/util.h"

/* The lock is redis-lua's, reached through its table (as SQLite builds a
 * locking style from another's methods): acquire and release only, run by
 * lock_acquire_by() and lock_release_by() (the waiting room's calls). */
extern const struct lock_ops lock_redis_lua;

static int lock_sale_run(struct lock_ctx *ctx, const struct product *p,
                           long long *remaining)
{
    struct rs_sale s;
    int rc, rrc, done = 0, committed;
    int64_t got;

    rs_sale_init(&s, ctx, p, ctx->ops->name);
    *remaining = -1;
    rc = lock_acquire_by(ctx, &lock_redis_lua, p->key);
    if (rc != LL_OK)
        return rc;
    got = now_us();
    rc = rs_read(ctx, &s, 0);
    if (rc == LL_OK)
        rc = rs_precheck(ctx, &s, &done);
    if (rc == LL_OK && !done) {
        stock_hold(ctx);        /* fault: the window between GET and SET */
        rc = rs_write(ctx, &s, 1, &committed, remaining);
    }
    /* As sale_run(): a failed release after a sale stays a warning. */
    if (rc == LL_OK || rc == LL_SOLD_OUT)
        ctx->err = 0;
    rrc = lock_release_by(ctx, &lock_redis_lua, p->key);
    if (rrc != LL_OK && rc == LL_SOLD_OUT)
        rc = rrc;
    ctx->held_us = now_us() - got;
    return rc;
}

const struct lock_ops lock_redis_lock_stock = {
    .name     = "redis-lock-stock",
    .family   = "redis-stock",
    .summary  = "redis-lua's lock:P around GET and SET of {stock:P} (seeds 001, 004)",
    .flaw     = "two more round trips a sale; a holder slower than the lease is overtaken (lost updates in Redis)",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_PARTITION |
                FAULT_CLOCK_REDIS | FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS_STOCK,
    .protocol = (const char *const[]){ redis_compare_and_delete_lua, NULL },
    .stock    = "redis",
    .nofence  = "its write is a plain SET of {stock:P} in Redis, which checks no token: a stale holder's SET lands",
    .sell     = lock_sale_run,
    .reset    = redis_del_key,
};
