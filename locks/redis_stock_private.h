/* redis_stock_private.h — what the strategies of the Redis stock share
 * (locks/redis_stock.c): their keys, one purchase's state, the read and
 * write steps of redis-watch and redis-lock-stock, and the answer of any
 * of the three. See redis_stock.h for the keys and the stores.
 */
#ifndef LOCKLAB_REDIS_STOCK_PRIVATE_H
#define LOCKLAB_REDIS_STOCK_PRIVATE_H

#include "redis_private.h"
#include "redis_stock.h"
#include "../store/order.h"
#include "../store/stock.h"

#define RS_KEY_MAX 128

/* A product's keys, and an order's, all under the product's hash tag (so
 * that on a Redis Cluster they share one slot: every script and MULTI of a
 * sale touches one): {stock:P}, {stock:P}:epoch, :sold, :sales, :buyers,
 * {stock:P}:order:O; a bucket "{P:bN}" has the tag stock:P:bN. Apart, the
 * order number's claim locklab:order:O (its own slot, whatever the
 * product: redis_stock_claim()). The one place that names them
 * (redis_stock.c). */
struct rs_keys {
    char stock[RS_KEY_MAX], epoch[RS_KEY_MAX], sold[RS_KEY_MAX], sales[RS_KEY_MAX];
    char buyers[RS_KEY_MAX], order[RS_KEY_MAX], claim[RS_KEY_MAX];
};

void rs_keys(struct rs_keys *k, const char *product, const char *order_no);

/* One purchase of the Redis stock: what it asks, then what the read step
 * found. */
struct rs_sale {
    const struct product *p;
    struct rs_keys k;
    long long  qty;
    const char *order_no, *user;        /* "" when none                    */
    int        one_per_user;
    const char *lock;                   /* the strategy, for the entry     */

    /* rs_read() */
    int        loaded;                  /* {stock:P} exists                */
    long long  count, epoch;
    int        replayed;                /* its order:O exists: first_* below */
    char       first_result[16];
    long long  first_remaining, first_qty;
    char       first_product[STOCK_CODE_MAX + 1];
    char       other[ORDER_NO_MAX + 1]; /* the user's order (one per user) */
};

/* The purchase ctx is making (its order, if any, and ctx->qty). */
void rs_sale_init(struct rs_sale *s, struct lock_ctx *ctx, const struct product *p);

/* The read step of redis-watch and redis-lock-stock, one round trip:
 * [WATCH {stock:P} {stock:P}:order:O {stock:P}:buyers] MGET {stock:P}
 * {stock:P}:epoch, HMGET {stock:P}:order:O …, HGET {stock:P}:buyers U.
 * LL_OK or a failure. */
int rs_read(struct lock_ctx *ctx, struct rs_sale *s, int watch);

/* The write step, one round trip: MULTI, the units taken (DECRBY
 * {stock:P}, or SET {stock:P} to the count read minus qty when `absolute`,
 * as the seeds write it under a lock), INCRBY {stock:P}:sold, XADD
 * {stock:P}:sales, the order's record and its buyer, EXEC; or, when fewer than qty are left,
 * only the order's record of a sale refused. *committed = 0 when EXEC
 * answered nil (a watched key changed). *remaining: the count left. A
 * transport failure after sending is LL_UNKNOWN: the EXEC may have run. */
int rs_write(struct lock_ctx *ctx, struct rs_sale *s, int absolute, int *committed,
             long long *remaining);

/* UNWATCH after a read step that ends the purchase (best effort). */
void rs_unwatch(struct lock_ctx *ctx);

/* What the read step found, before any write: *done = 0 to go on and
 * sell; otherwise the purchase's answer, with ctx->order filled (replayed:
 * the first answer's status; user limit) or ctx's error ({stock:P} is not
 * loaded). */
int rs_precheck(struct lock_ctx *ctx, struct rs_sale *s, int *done);

/* redis-decr's sale of one purchase of p (redis_decr.c), for redis-buckets. */
int rs_decr_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining);

#endif /* LOCKLAB_REDIS_STOCK_PRIVATE_H */
