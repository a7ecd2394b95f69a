/* mysql_update.c — the sale as one conditional statement (seed 001, 003):
 *
 *     UPDATE db_stock SET count = count - 1
 *      WHERE product_code = ? AND stock_code = ? AND count >= 1
 *
 * InnoDB's row lock makes the check and the decrement one atomic step, so
 * one changed row means one unit sold and no row changed means sold out.
 * It needs no lock of ours and costs one round trip: the ceiling the other
 * strategies are measured against. What it cannot do is run logic between
 * the read and the write (the seeds' other objection: one statement can
 * only express so much, and it says nothing about the amount left).
 */
#include "lock.h"
#include "../app/db.h"
#include "../app/stock.h"

static int update_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    static const char sql[] =
        "UPDATE db_stock SET count = count - 1"
        " WHERE product_code = ? AND stock_code = ? AND count >= 1";
    long long rows = 0;
    int rc = db_exec(ctx, sql, &rows, "ss", p->code, STOCK_WAREHOUSE);

    if (rc != LL_OK)
        return rc;
    *remaining = -1;
    return rows == 1 ? LL_OK : LL_SOLD_OUT;
}

const struct lock_ops lock_mysql_update = {
    .name    = "mysql-update",
    .family  = "mysql",
    .summary = "one conditional UPDATE ... WHERE count >= 1: the row lock is the lock (seed 001)",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .sell    = update_sell,
};
