/* redis_stock_private.h — what the strategies of the Redis stock share
 * beyond the store's steps (store/redis_stock.h): the Redis family's
 * helpers and redis-decr's sale, which redis-buckets runs per bucket.
 */
#ifndef LOCKLAB_REDIS_STOCK_PRIVATE_H
#define LOCKLAB_REDIS_STOCK_PRIVATE_H

#include "redis_private.h"
#include "../store/redis_stock.h"

/* redis-decr's sale of one purchase of p (redis_decr.c), for redis-buckets. */
int rs_decr_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining);

#endif /* LOCKLAB_REDIS_STOCK_PRIVATE_H */
