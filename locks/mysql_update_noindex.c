/* mysql_update_noindex.c — the conditional UPDATE on a column without an
 * index (seed 001: "该sql语句没有走索引,所以是表级锁", the row lock becomes
 * a table lock):
 *
 *     BEGIN
 *     UPDATE db_stock SET count = count - ?
 *      WHERE sku = ? AND stock_code = ? AND count >= ?
 *     … the rest of the transaction (hold_ms stands for it)
 *     COMMIT
 *
 * mysql-update's statement, with the product named by `sku`, a copy of
 * product_code that has no index (sql/schema.sql). No index serves the
 * WHERE, so InnoDB scans the whole table and, under REPEATABLE READ, keeps
 * an exclusive lock on every row it scanned, matched or not, until the
 * transaction ends: selling one product locks the stock of every other.
 * The sale stays exact (every sale of every product now waits for the one
 * before); it is the others that pay, one product's rush stalling the whole
 * shop. The transaction is where a real service's statement lives (the
 * order, the log …), and what makes the table lock last: hold_ms keeps it
 * open after the UPDATE, and a sale of product B then waits for the one of
 * product A (tests/pitfalls.sh reads the wait in InnoDB's lock tables).
 *
 * Like the seed's single statement it says nothing of the count left
 * (remaining is not reported), unless --ledger needs it for its row.
 *
 * With nothing to do between the UPDATE and the COMMIT (no hold_ms, no
 * ledger row), the two go in one round trip (db_exec_commit()): the table
 * stays locked from the UPDATE to the COMMIT on the server only, not for a
 * trip back to the instance and a turn of its loop in between.
 */
#include "mysql_private.h"
#include "protocol.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../store/stock.h"

const char mysql_sql_noindex[] =
    "UPDATE db_stock SET count = count - ? WHERE sku = ? AND stock_code = ? AND count >= ?";

static int noindex_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    long long rows = 0, left = 0;
    int rc;

    *remaining = -1;
    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    ctx->backend_ops++;
    if (ctx->hold_ms <= 0 && !ctx->cfg->ledger) {
        rc = db_exec_commit(ctx, mysql_sql_noindex, &rows, "lssl", (long long)ctx->qty, p->code,
                            STOCK_WAREHOUSE, (long long)ctx->qty);
        return rc == LL_OK && rows == 0 ? LL_SOLD_OUT : rc;
    }
    rc = db_exec(ctx, mysql_sql_noindex, &rows, "lssl", (long long)ctx->qty, p->code, STOCK_WAREHOUSE,
                 (long long)ctx->qty);
    if (rc == LL_OK && rows == 0) {
        rc = db_commit(ctx);
        return rc == LL_OK ? LL_SOLD_OUT : rc;
    }
    if (rc == LL_OK)
        stock_hold(ctx);        /* every row of db_stock stays locked meanwhile */
    if (rc == LL_OK && ctx->cfg->ledger && (rc = stock_read(ctx, p, &left)) == LL_OK) {
        if ((rc = stock_ledger_commit(ctx, p, left + ctx->qty, left, 0, 0)) == LL_OK)
            *remaining = left;
        return rc;
    }
    if (rc == LL_OK)
        return db_commit_sale(ctx);
    db_rollback(ctx);
    return rc;
}

const struct lock_ops lock_mysql_update_noindex = {
    .name    = "mysql-update-noindex",
    .family  = "mysql",
    .summary = "mysql-update's UPDATE in a transaction, on sku, a column without an index (seed 001)",
    .flaw    = "the UPDATE locks every row it scans until the COMMIT: one product's sale blocks all others",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .ceiling = LOCK_CEIL_UPDATE_NOINDEX,
    .protocol = (const char *const[]){ mysql_sql_noindex, NULL },
    .sell    = noindex_sell,
    .nofence = MYSQL_NOFENCE,
};
