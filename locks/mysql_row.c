/* mysql_row.c — a sale in one transaction that locks its row with a
 * locking read, in two halves (mysql_private.h), for the strategies that
 * send the seeds' §1.6.1 themselves, one purchase a transaction:
 * mysql-share-mode, mysql-for-update-naive, mysql-nowait (both halves) and
 * mysql-skip-locked (the write; its read picks a bucket).
 *
 *     mysql_row_read:   (autocommit off) <a locking read of count>
 *                       — too few left: COMMIT, sold out
 *     mysql_row_write:  UPDATE db_stock SET count = <read − qty>; COMMIT
 *     mysql_row_sell:   the one, then the other
 *
 * The write sends the UPDATE and the COMMIT in one round trip when asked
 * (db_exec_commit()), or as the seeds' Java does, one after the other;
 * with --ledger its db_ledger row goes between them, in the transaction.
 * Each half ends the transaction on every path but its success (the
 * read's: the row is held for the write), rolling back what it began: a
 * failure's answer stays the failure's (db_errno() too), whatever the
 * rollback says.
 */
#include "mysql_private.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../store/stock.h"

int mysql_row_read(struct lock_ctx *ctx, const char *sql, const struct product *p,
                   long long *count)
{
    long long rows = 0;
    int rc;

    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    ctx->backend_ops++;
    rc = db_exec(ctx, sql, &rows, "l>l", p->id, count);
    if (rc == LL_OK && rows == 0)
        rc = lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", p->id);
    if (rc == LL_OK && *count < ctx->qty) {
        rc = db_commit(ctx);
        return rc == LL_OK ? LL_SOLD_OUT : rc;
    }
    if (rc != LL_OK)
        db_rollback(ctx);
    return rc;
}

int mysql_row_write(struct lock_ctx *ctx, const struct product *p, long long count, int one_trip)
{
    const long long left = count - ctx->qty;
    const int64_t since = now_us();     /* the row is ours from the read */
    int rc;

    stock_hold(ctx);
    if (one_trip && !ctx->cfg->ledger)
        return stock_write_commit(ctx, p, left);    /* ends the transaction, come what may */
    if ((rc = stock_write(ctx, p, left)) != LL_OK) {
        db_rollback(ctx);
        return rc;
    }
    return ctx->cfg->ledger ? stock_ledger_commit(ctx, p, count, left, since, now_us())
                            : db_commit_sale(ctx);
}

int mysql_row_sell(struct lock_ctx *ctx, const char *sql, const struct product *p,
                   int one_trip, long long *remaining)
{
    long long count = 0;
    int rc = mysql_row_read(ctx, sql, p, &count);

    if (rc == LL_OK && (rc = mysql_row_write(ctx, p, count, one_trip)) == LL_OK)
        *remaining = count - ctx->qty;
    return rc;
}
