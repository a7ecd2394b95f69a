/* redis_stock_family.c — the family of the strategies that sell from the
 * Redis stock (store/redis_stock.h): redis-decr, redis-watch,
 * redis-lock-stock, redis-buckets. Its slots' connections are the Redis
 * family's; the instance runs the store's consumer, which applies the
 * sales to MariaDB, and /stats has its section.
 */
#include "lock.h"
#include "../clients/redis.h"
#include "../store/redis_stock.h"

static void redis_stock_stats(json_t *body)
{
    json_object_set_new(body, "redis_stock", redis_stock_stats_json());
}

const struct lock_family lock_family_redis_stock = {
    .name        = "redis-stock",
    .start       = redis_stock_consumer_start,
    .stop        = redis_stock_consumer_stop,
    .ctx_free    = redis_ctx_free,
    .stats_add   = redis_stock_stats,
    .stats_clear = redis_stock_stats_reset,
};
