/* orders.h — POST /order: a purchase with an order number (seed 002).
 *
 * An order is a purchase of qty units (all or none, seed 003) of one
 * product, under any strategy, named by its order number. One order number
 * is one order whatever the number of attempts: a retried or double-clicked
 * purchase, even when the copies race each other on different instances,
 * gets the first attempt's answer again with "replayed": true and never
 * takes stock a second time. With one_per_user, a user gets one order per
 * product.
 *
 * Where the order is recorded depends on where the stock is:
 *   MariaDB's stock   db_order's unique order_no (seed 002): the first
 *                     attempt claims the row (state pending) before the
 *                     sale and writes its outcome after; a copy that meets
 *                     the claim waits for that outcome. A purchase that
 *                     certainly did not sell (lock_timeout, unavailable)
 *                     gives the claim back, so a retry is a new attempt.
 *   Redis's stock     the number is first claimed for its product,
 *                     SET locklab:order:O P NX (a key and slot of its
 *                     own): a copy naming another product finds the
 *                     claim and is order_conflict, as with MariaDB's
 *                     stock. Then {stock:P}:order:O, written by the step
 *                     that takes the units (store/redis_stock.h; under
 *                     the product's hash tag, one slot with its stock on
 *                     a cluster): the copies meet in Redis, which runs
 *                     one step at a time, and the consumer writes
 *                     db_order afterwards. The claim is not given back
 *                     when the sale fails: the number stays its first
 *                     product's.
 * An order number belongs to the store its first attempt sold from: its
 * copies are expected to name a strategy of the same stock.
 */
#ifndef LOCKLAB_ORDERS_H
#define LOCKLAB_ORDERS_H

#include "../store/order.h"

#include <jansson.h>

struct lock_ctx;
struct lock_ops;

/* Is s an order number or user name ([A-Za-z0-9_-], 1..ORDER_NO_MAX)? */
int order_name_valid(const char *s);

/* The answer of an order: the sale's status (LL_OK …) or, with
 * o->replayed, the first attempt's; o->user_limit refuses it; a copy with
 * another product or qty than the first is LL_BADREQ (an order number
 * names one purchase). ctx->qty is the order's qty. */
int order_place(struct lock_ctx *ctx, const struct lock_ops *ops, const struct product *p,
                struct order *o, long long *remaining);

/* POST /stock/reset starts a new sale of p: each user may order it once
 * more (one_per_user). Earlier orders stay, and still answer their copies. */
int order_reset(struct lock_ctx *ctx, const struct product *p);

/* This instance's order counters for /stats, and their reset. */
json_t *order_stats_json(void);
void    order_stats_reset(void);
void    order_count(const struct order *o, int status);

#endif /* LOCKLAB_ORDERS_H */
