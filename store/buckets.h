/* buckets.h — a product's stock split in K buckets: K rows of db_stock.
 *
 * Bucket i (0-based) of product P is P's row in warehouse i + 1, written
 * "%03d": bucket 0 is the product's own row (warehouse 001, stock.h), so a
 * product of one bucket is exactly the seeds' product. db_bucket holds K
 * (no row: 1). POST /stock/reset?buckets=K creates the rows up to K; rows
 * past K are emptied, never deleted, so a row's id never changes and an
 * instance may keep the ids it found. In the Redis stock (redis_stock.h)
 * bucket 0 is P's own keys ({stock:P} …) and bucket i > 0 is named
 * "{P:b<i+1>}" (its keys {stock:P:b2} …): each bucket's keys share one
 * hash tag, so in a Redis Cluster a bucket's keys fall on one slot and
 * different buckets on different slots. struct product's code is that
 * name, its id the bucket's row.
 *
 * The reset of a product's buckets and the reading of its stock, in both
 * stores, are here too (buckets_reset_*, buckets_stock), for the server.
 */
#ifndef LOCKLAB_BUCKETS_H
#define LOCKLAB_BUCKETS_H

#include "stock.h"

#include <jansson.h>

#define STOCK_BUCKETS_MAX 64
/* A product split in buckets has a code of at most this many characters:
 * its buckets' names ("{P:b64}") must fit in struct product's code. */
#define STOCK_BUCKET_CODE_MAX (STOCK_CODE_MAX - 6)

struct stock_buckets {
    int            k;
    struct product b[STOCK_BUCKETS_MAX];   /* b[0] is the product's own row */
};

/* The units of `count` bucket i of k holds: count / k, one more for the
 * first count % k buckets. */
static inline long long stock_bucket_share(long long count, int k, int i)
{
    return count / k + (i < count % k ? 1 : 0);
}

/* p's buckets as this instance last read them, read again from MariaDB
 * when older than max_age_ms (0: always; one query, and one per bucket it
 * has not seen). */
int stock_buckets_get(struct lock_ctx *ctx, const struct product *p, struct stock_buckets *out,
                      int max_age_ms);

/* POST /stock/reset: bucket i's row, made when missing (count 0). */
int stock_bucket_row(struct lock_ctx *ctx, const struct product *p, int i, struct product *out);

/* POST /stock/reset: p is now in k buckets (db_bucket); *old_k what it was. */
int stock_buckets_set(struct lock_ctx *ctx, const struct product *p, int k, int *old_k);

/* Is name a bucket's name "{P:bN}", N > 1? Then its row (for the Redis
 * stock's consumer, which finds a stream's row by its name). */
int stock_bucket_named(const char *name);
int stock_bucket_find(struct lock_ctx *ctx, const char *name, struct product *out);

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

/* GET /stock of p, in its K buckets or one: *redis the Redis stock (p's
 * own, or the sum of the buckets', each under "buckets"; never NULL once
 * read, a failure in it is its own) read first, then *total MariaDB's
 * count (the sum of the buckets') and *split [{"warehouse","count"}] (NULL
 * when K = 1). MariaDB's count only falls, so read in this order a
 * "reconciled" (MariaDB had every sale Redis made) never stands beside a
 * count MariaDB had not yet reached when Redis was read. pause_ms is the
 * fault ?read_pause_ms, a pause between the two reads. On a failure
 * *redis and *split are NULL. */
int buckets_stock(struct lock_ctx *ctx, const struct product *p, int pause_ms,
                  long long *total, json_t **split, json_t **redis);

#endif /* LOCKLAB_BUCKETS_H */
