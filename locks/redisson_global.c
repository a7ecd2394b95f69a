/* redisson_global.c — redisson with one lock for every product: the
 * coarse-grained lock of seed 004 §2.5 ("粗粒度锁 … 所有订单处理都会竞争这
 * 一把锁"), against redisson's one lock per product (细粒度锁).
 *
 * The same protocol, methods and keys as redisson (redisson.c), the hash
 * named LOCK_KEY_ALL ("lock:all") whatever the product: the table's
 * lock_key, which sale_run() hands to the hooks in place of lock:<P>. It
 * is exact, and it excludes more than it must: sales of different products,
 * which touch different rows, wait for each other, so the whole shop sells
 * at the speed of one product's critical section. bench/compare --products
 * N spreads the load over N products and the report puts the two side by
 * side (docs/comparison.md). POST /stock/reset of any product clears the
 * one lock of all (it is that product's lock too).
 */
#include "redis_private.h"

const struct lock_ops lock_redisson_global = {
    .name     = "redisson-global",
    .family   = "redis",
    .summary  = "redisson on one lock for every product, lock:all (seed 004 §2.5)",
    .flaw     = "sales of different products wait for each other: the shop sells at one critical section's speed",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .lock_key = LOCK_KEY_ALL,
    .acquire  = redisson_acquire,
    .release  = redisson_release,
    .check    = redis_watch_check,
    .reset    = redis_del_key,
    .fence    = "redisson-all",   /* tokens of lock:all's own counter */
};
