/* buckets.h — a hot product's stock split in K buckets (store/buckets.h),
 * as the strategies and the server see it: the sale's pass over the
 * buckets (mysql-buckets, redis-buckets), POST /stock/reset?buckets=K
 * and GET /stock's totals. locks/buckets.c tells how and why.
 */
#ifndef LOCKLAB_LOCKS_BUCKETS_H
#define LOCKLAB_LOCKS_BUCKETS_H

#include "../store/buckets.h"

#include <jansson.h>

struct lock_ctx;

/* One bucket's sale of one unit: LL_OK, LL_SOLD_OUT (the bucket was
 * empty when it looked) or a failure. */
typedef int (*bucket_sell_fn)(struct lock_ctx *ctx, const struct product *bucket,
                              long long *remaining);

/* A purchase of one unit of p: from a starting bucket that moves on with
 * each purchase of this instance, then each next bucket while they refuse;
 * LL_SOLD_OUT only when one pass found every bucket empty and K had not
 * changed. *remaining is -1 (a bucket's count is not the product's). */
int buckets_sell(struct lock_ctx *ctx, const struct product *p, bucket_sell_fn sell,
                 long long *remaining);

/* POST /stock/reset?buckets=K, around the server's reset of the product's
 * own row (bucket 0, which gets stock_bucket_share(count, k, 0)): begin
 * makes the other buckets' rows and the Redis stock's new epoch of every
 * bucket that is or was (buckets past K are emptied); end writes their
 * counts and K, loads their Redis stock, and adds to body "buckets" (each
 * bucket's warehouse and count) and "redis_buckets" (buckets 2..). Nothing is done
 * for a product that was and stays in one bucket. */
struct buckets_reset {
    int            k, n;                        /* K, and the buckets touched */
    struct product b[STOCK_BUCKETS_MAX];
    long long      epoch[STOCK_BUCKETS_MAX];
};
int buckets_reset_begin(struct lock_ctx *ctx, const struct product *p, int k,
                        struct buckets_reset *br);
int buckets_reset_end(struct lock_ctx *ctx, const struct buckets_reset *br, long long count,
                      json_t *body);

/* GET /stock of p in K > 1 buckets: *total their counts' sum, *split
 * [{"warehouse","count"}] and *redis the sum of their Redis stocks (each
 * bucket's under "buckets"); *split = NULL when K = 1 (the server's own
 * answer stands). */
int buckets_stock(struct lock_ctx *ctx, const struct product *p, long long *total,
                  json_t **split, json_t **redis);

#endif /* LOCKLAB_LOCKS_BUCKETS_H */
