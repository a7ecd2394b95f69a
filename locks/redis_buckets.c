/* redis_buckets.c — a hot item split across K Redis keys: redis-decr's
 * script, one bucket at a time (issue 33, part 4).
 *
 *     EVALSHA <decr> … {stock:P:bN} {stock:P:bN}:sold {stock:P:bN}:sales …
 *
 * The product's stock is in K buckets (POST /stock/reset?count=N&buckets=K
 * spreads N over them; store/buckets.h): bucket 1 is the product's own
 * keys ({stock:P} …), bucket N > 1 the keys of "{P:bN}" ({stock:P:bN} …),
 * each bucket's keys under one hash tag, so that in a Redis Cluster a
 * bucket's script touches one slot and the buckets fall on different slots
 * (and mostly on different masters: tests/redis_cluster.sh checks K = 4
 * spans at least two). Each bucket is a
 * Redis stock of its own, sold exactly as redis-decr sells a product (its
 * script, its batches, its stream, which the consumers apply to the
 * bucket's own row of db_stock: locks/redis_decr.c, redis_stock_consumer.c;
 * the accounting adds the buckets up).
 *
 * A purchase starts at a bucket that moves on with each purchase of its
 * instance, takes one unit there, and moves to the next bucket when the
 * script finds it empty. It answers sold out only when one pass found
 * every bucket empty: the stock never increases during a run, so a bucket
 * found empty stays empty, and at the end of such a pass all K are empty
 * at once (locks/buckets.c, which also reads K again before it answers).
 * So no purchase is refused while a unit is left anywhere: 0 false
 * sold-outs. With K = 1 it is redis-decr.
 *
 * On one Redis server the buckets share its one thread, so they spread
 * nothing there; across a cluster's masters they spread the scripts, but
 * each bucket splits redis-decr's batches (K buckets, K lines) and adds a
 * stream for the consumers: more CPU a sale, which on a machine whose CPU
 * is the bound is fewer sales (docs/journal.md measured it). One unit a
 * purchase (an order of several could find every bucket short while the
 * product has enough: refused with 400).
 */
#include "buckets.h"
#include "redis_stock_private.h"

static int sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    return buckets_sell(ctx, p, rs_decr_sell, remaining);
}

const struct lock_ops lock_redis_buckets = {
    .name     = "redis-buckets",
    .family   = "redis-stock",
    .summary  = "the stock split in K Redis keys, {stock:P:bN} hash tags (POST /stock/reset?buckets=K): redis-decr's script on one bucket, the next when it is empty; sold out only when a pass found all empty",
    .flaw     = "MariaDB trails by what the streams hold; one Redis server runs every bucket on its one thread; each bucket splits the batches (more script calls and consumer transactions a sale); one unit a purchase",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .fails    = FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_REDIS_DECR,
    .stock    = "redis",
    .nofence  = "no lock to fence: one Lua script on a bucket's keys is the whole sale, atomic in Redis",
    .sell     = sell,
};
