/* mysql_for_update.c — pessimistic row lock (seed 000 §1.6.1):
 *
 *     (autocommit off)                                     -- db_begin()
 *     SELECT count FROM db_stock WHERE id = ? FOR UPDATE;  -- row lock
 *     UPDATE db_stock SET count = ? WHERE id = ?;          -- value read − 1
 *     COMMIT;
 *
 * The row stays locked from the SELECT to the COMMIT, so the read-then-write
 * of the seeds is safe across any number of instances. The wait for the row
 * is InnoDB's (innodb_lock_wait_timeout, set per session from
 * --lock-wait-ms; a timeout or deadlock answers lock_timeout). Every error
 * path rolls back. db_begin() opens the transaction the way Spring's
 * @Transactional does, by turning autocommit off (once per connection: see
 * clients/db.c), so the transaction costs no round trip of its own.
 *
 * The UPDATE and the COMMIT leave together, in one round trip
 * (db_exec_commit(), clients/db_pipe.h): MariaDB runs the COMMIT the moment the
 * UPDATE is done, so a sale costs two round trips and holds the row for
 * one, where the seeds' Java holds it for two. If MariaDB restarts inside
 * the transaction, the row lock is gone with it: the statement after that
 * fails (503) instead of reconnecting.
 *
 * Within one instance the transactions on one row go one at a time through
 * the row's queue (mysql_queue.c): InnoDB then has at most one waiter per
 * instance to put to sleep and wake. Two at a time per instance did no
 * better.
 *
 * When a purchase waits in that queue behind the one at the row, its
 * transaction begins in the same round trip as the current one's COMMIT:
 *
 *     UPDATE …; COMMIT; SELECT count … FOR UPDATE   -- one write
 *
 * (db_exec_commit_next()). The next SELECT then joins InnoDB's line for
 * the row the moment the row is free, on a MariaDB thread already awake,
 * and the purchase it belongs to gets this slot's connection with the
 * SELECT's answer coming (mysql_queue_pass()) and carries on from there.
 * Each sale is still its own transaction, the row locked from its SELECT
 * to its COMMIT. It leaves the rate as it was (the row's turn still passes
 * through the same three wake-ups) but shortens the tail and spares
 * MariaDB context switches. (The runs behind these choices:
 * docs/journal.md, "Moved from file headers".)
 */
#include "mysql_private.h"
#include "protocol.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../store/stock.h"

const char mysql_sql_for_update[] = "SELECT count FROM db_stock WHERE id = ? FOR UPDATE";

static int for_update_once(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    struct purchase *next;
    long long count = 0, rows = 0;
    int rc, began = 0;

    if (db_pending(ctx))            /* sent behind the last sale's COMMIT */
        rc = db_exec_pending(ctx, &rows, &count);
    else if ((rc = db_begin(ctx)) == LL_OK)
        rc = db_exec(ctx, mysql_sql_for_update, &rows, "l>l", p->id, &count);
    if (rc == LL_OK && rows == 0)
        rc = lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", p->id);
    if (rc == LL_OK && count < ctx->qty) {
        rc = db_commit(ctx);
        return rc == LL_OK ? LL_SOLD_OUT : rc;
    }
    if (rc == LL_OK && ctx->cfg->ledger) {  /* the row is ours from here */
        int64_t since = now_us();
        stock_hold(ctx);
        if ((rc = stock_write(ctx, p, count - ctx->qty)) == LL_OK)  /* ends when in place */
            rc = stock_ledger_commit(ctx, p, count, count - ctx->qty, since, now_us());
    } else if (rc == LL_OK) {
        stock_hold(ctx);
        if ((next = mysql_queue_claim(ctx)) != NULL) {
            rc = stock_write_commit_next(ctx, p, count - ctx->qty, mysql_sql_for_update,
                                         &began);
            mysql_queue_pass(ctx, next, began);
        } else {
            rc = stock_write_commit(ctx, p, count - ctx->qty);
        }
    }
    if (rc != LL_OK) {
        db_rollback(ctx);           /* nothing left to do if the commit ran */
        return rc;
    }
    *remaining = count - ctx->qty;
    return LL_OK;
}

static const struct mysql_queue_conf for_update_queue = { .batch = 1, .sell = for_update_once };

const struct lock_ops lock_mysql_for_update = {
    .name    = "mysql-for-update",
    .family  = "mysql",
    .summary = "SELECT ... FOR UPDATE in a transaction, then UPDATE and COMMIT in one round trip (seed 000 §1.6.1); one transaction per row per instance at a time",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .ceiling = LOCK_CEIL_FOR_UPDATE,
    .protocol = (const char *const[]){ mysql_sql_for_update, stock_sql_write, NULL },
    .hold_rtts = 1, /* the SELECT's answer out, UPDATE + COMMIT in */
    MYSQL_QUEUE_METHODS(&for_update_queue),
};
