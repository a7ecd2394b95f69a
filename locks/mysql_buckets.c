/* mysql_buckets.c — a hot item split across K rows: mysql-update's
 * conditional UPDATE, one bucket at a time (issue 33, part 4).
 *
 *     UPDATE db_stock SET count = count - 1 WHERE id = <bucket> AND count >= 1
 *
 * The product's stock is in K rows of db_stock, its warehouses 001 to K
 * (POST /stock/reset?count=N&buckets=K spreads N over them; store/
 * buckets.h). A purchase starts at a bucket that moves on with each
 * purchase of its instance, runs the seeds' conditional UPDATE there
 * (seed 001, through the row's queue in this instance as mysql-update
 * does, pipelined: mysql_queue.c), and moves to the next bucket when no
 * row changed.
 * It answers sold out only when one pass found every bucket empty: the
 * stock never increases during a run, so a bucket found empty stays
 * empty, and at the end of such a pass all K are empty at once
 * (locks/buckets.c, which also reads K again before it answers). So no
 * purchase is refused while a unit is left anywhere: 0 false sold-outs.
 * With K = 1 it is mysql-update on the seeds' row.
 *
 * What it buys: K row locks instead of one, so up to K UPDATEs of the
 * product at once in InnoDB (and K queues per instance). What it costs:
 * near the end, purchases try empty buckets first (one UPDATE each), and a
 * sold-out answer costs K UPDATEs and a read of K; one unit a purchase only
 * (an order of several could find every bucket short while the product
 * has enough: refused with 400).
 */
#include "buckets.h"
#include "mysql_private.h"

static const struct mysql_queue_conf bucket_queue = {   /* mysql-update's */
    .batch = MYSQL_QUEUE_MAX, .pipeline = 1, .sell = mysql_sell_one,
};

static int sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    return buckets_sell(ctx, p, mysql_queue_sell, remaining);
}

const struct lock_ops lock_mysql_buckets = {
    .name    = "mysql-buckets",
    .family  = "mysql",
    .summary = "the hot row split in K rows (POST /stock/reset?buckets=K): mysql-update's conditional UPDATE on one bucket, the next when it is empty; sold out only when a pass found all empty",
    .flaw    = "near the end purchases try empty buckets first; one unit a purchase",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    /* No one row bounds K rows: the front end is the bound that holds. */
    .ceiling = LOCK_CEIL_HTTP,
    .conf    = &bucket_queue,
    .sell    = sell,
    .nofence = MYSQL_NOFENCE,
};
