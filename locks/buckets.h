/* buckets.h — a hot product's stock split in K buckets (store/buckets.h),
 * as the strategies see it: the sale's pass over the buckets
 * (mysql-buckets, redis-buckets). locks/buckets.c tells how and why.
 */
#ifndef LOCKLAB_LOCKS_BUCKETS_H
#define LOCKLAB_LOCKS_BUCKETS_H

#include "../store/buckets.h"

struct lock_ctx;

#define BUCKETS_FRESH_MS 100    /* an instance's K on a sale's way, at most */
#define BUCKETS_PASSES   4      /* K changed under the pass: look again     */

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

#endif /* LOCKLAB_LOCKS_BUCKETS_H */
