/* mysql_skip_locked.c — a hot item in K rows, each buyer taking the first
 * one nobody holds: SELECT … FOR UPDATE SKIP LOCKED (MariaDB 10.6).
 *
 *     (autocommit off)                                          -- db_begin()
 *     SELECT id, count FROM db_stock
 *      WHERE product_code = ? AND stock_code BETWEEN '001' AND <K>
 *        AND count >= 1 ORDER BY stock_code LIMIT 1
 *        FOR UPDATE SKIP LOCKED;                               -- a bucket of its own
 *     UPDATE db_stock SET count = ? WHERE id = ?; COMMIT;       -- one round trip
 *
 * The product's stock is in K rows of db_stock, its warehouses 001 to K
 * (POST /stock/reset?count=N&buckets=K, as mysql-buckets; store/buckets.h).
 * The locking read passes over every bucket another transaction holds,
 * instead of waiting for it, and locks the first one left with stock: K
 * buyers at once each hold a row of their own, and the next ones find the
 * next rows, so buyers spread over the buckets in one statement rather
 * than queueing on one row (InnoDB's queue of waiters, and the deadlock
 * detector's walk over it, stay empty). The sale is then mysql-for-
 * update's on that bucket: its UPDATE and COMMIT in one round trip
 * (mysql_row.c), every error path rolled back.
 *
 * No row is not sold out. SKIP LOCKED skips a bucket held by another
 * buyer, which may still hold stock after it: that buyer may roll back,
 * or take one unit of many. So when the read finds nothing, a plain
 * consistent read in the same transaction (no lock, the counts committed
 * by then) counts the buckets with stock, and the transaction ends. Some: they are held, and the
 * purchase tries again after lock_backoff()'s jittered pause (counted as
 * a retry), until its deadline (lock_timeout). None: during a run the
 * stock never increases (only POST /stock/reset refills), so buckets whose
 * committed counts are all 0 are empty for good, an uncommitted sale
 * shows its bucket's count before it, and the product is sold out,
 * exactly, once K is read again and found unchanged (the argument of
 * locks/buckets.c). tests/hotrow.sh sells exactly N units from uneven
 * buckets with no false sold-out.
 *
 * What it costs: with more buyers at once than buckets, the rest poll (a
 * locking read, a consistent read and the COMMIT per try); the read scans
 * the buckets in order, so near the end it passes over, and under
 * REPEATABLE READ locks, the empty ones first; one unit a purchase (an
 * order of several could find every bucket short while the product has
 * enough: refused with 400). With K = 1 it is mysql-nowait with a
 * consistent read before each retry.
 */
#include "buckets.h"
#include "mysql_private.h"
#include "../clients/db.h"
#include "../store/stock.h"

#include <stdio.h>

static const char sql_take[] =
    "SELECT id, count FROM db_stock WHERE product_code = ? AND stock_code BETWEEN '001' AND ? "
    "AND count >= 1 ORDER BY stock_code LIMIT 1 FOR UPDATE SKIP LOCKED";
static const char sql_left[] =
    "SELECT COUNT(*) FROM db_stock WHERE product_code = ? AND stock_code BETWEEN '001' AND ? "
    "AND count >= 1";

/* One transaction: the first bucket of p's with stock that nobody holds
 * (warehouses 001 to `last`), and its unit sold (LL_OK, *left = -1); or
 * none such, and then, in the same transaction, a consistent read of how
 * many buckets have stock (LL_OK, *left >= 0: its read view is made at
 * that read, after the locking one, so it sees what is committed now); or
 * a failure, rolled back. */
static int take(struct lock_ctx *ctx, const struct product *p, const char *last,
                long long *left)
{
    struct product bucket = *p;
    long long id = 0, count = 0, rows = 0;
    int rc;

    *left = -1;
    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    ctx->backend_ops++;
    rc = db_exec(ctx, sql_take, &rows, "ss>ll", p->code, last, &id, &count);
    if (rc == LL_OK && rows == 0) {
        if ((rc = db_exec(ctx, sql_left, &rows, "ss>l", p->code, last, left)) == LL_OK)
            return db_commit(ctx);  /* it locked only empty buckets it passed */
    } else if (rc == LL_OK) {
        bucket.id = id;
        return mysql_row_write(ctx, &bucket, count, 1);
    }
    if (rc != LL_OK)
        db_rollback(ctx);
    return rc;
}

static int skip_locked_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    struct stock_buckets sb;
    char last[16];
    long long left;
    int k, pass = 0, rc;

    *remaining = -1;                /* a bucket's count is not the product's */
    if (ctx->order != NULL || ctx->qty != 1)
        return lock_error(ctx, LL_BADREQ, NULL, "%s sells one unit a purchase of GET "
                          "/check/lock: an order of several units could find every bucket "
                          "short of them while the product has enough", ctx->ops->name);
    if ((rc = stock_buckets_get(ctx, p, &sb, BUCKETS_FRESH_MS)) != LL_OK)
        return rc;
    for (;;) {
        snprintf(last, sizeof last, "%03d", sb.k);
        if ((rc = take(ctx, p, last, &left)) != LL_OK || left < 0)
            return rc;                  /* sold, or a failure */
        if (left > 0) {                 /* held, not empty: try again */
            if (lock_backoff(ctx) != LL_OK)
                return lock_error(ctx, LL_TIMEOUT, "mysql", "every bucket with stock was "
                                  "held (SKIP LOCKED) at each of %u tries within %d ms",
                                  ctx->retries + 1, ctx->wait_ms);
            if ((rc = stock_buckets_get(ctx, p, &sb, BUCKETS_FRESH_MS)) != LL_OK)
                return rc;              /* K as fresh as on any sale's way */
            continue;
        }
        k = sb.k;                   /* all empty: still K buckets? */
        if ((rc = stock_buckets_get(ctx, p, &sb, 0)) != LL_OK)
            return rc;
        if (sb.k == k || ++pass == BUCKETS_PASSES)
            return LL_SOLD_OUT;
    }
}

const struct lock_ops lock_mysql_skip_locked = {
    .name    = "mysql-skip-locked",
    .family  = "mysql",
    .summary = "the hot row split in K rows (POST /stock/reset?buckets=K): SELECT ... FOR UPDATE SKIP LOCKED takes the first bucket with stock nobody holds, then UPDATE and COMMIT; sold out only when the committed counts are all 0",
    .flaw    = "with more buyers at once than buckets the rest poll; near the end the read passes over the empty buckets first; one unit a purchase",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    /* No one row bounds K rows: the front end is the bound that holds. */
    .ceiling = LOCK_CEIL_HTTP,
    .sell    = skip_locked_sell,
    .nofence = MYSQL_NOFENCE,
};
