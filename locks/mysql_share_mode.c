/* mysql_share_mode.c — a shared lock for the read, then the UPDATE (seed
 * 001's pessimistic lock, "死锁问题 … 操作要统一": the read and the write
 * must take the same lock):
 *
 *     BEGIN
 *     SELECT count FROM db_stock WHERE id = ? LOCK IN SHARE MODE
 *     UPDATE db_stock SET count = <read − 1> WHERE id = ?
 *     COMMIT
 *
 * A shared (S) lock keeps the row from changing under the reader, but any
 * number of readers hold it at once; the UPDATE needs the exclusive (X)
 * lock, which waits for every other S lock. Two purchases that both read
 * then both wait for each other: a deadlock. InnoDB finds it at once and
 * rolls one back (MariaDB error 1213); the other's read is still the row's
 * value (nobody could write while it held its S lock), so it writes
 * correctly. The victim's purchase begins again after lock_backoff()'s
 * jittered pause, within its wait, as a service would retry it. Every 1213
 * is counted (ctx->deadlocks, clients/db.c): in the answer ("deadlocks"), in
 * /stats and in the comparison. The count stays exact; the price is work
 * thrown away, a rollback and a retry per lost race, which grows with the
 * number of purchases reading the row at once. SELECT … FOR UPDATE
 * (mysql-for-update) takes the X lock at the read and has no such cycle.
 */
#include "mysql_private.h"
#include "protocol.h"
#include "../clients/db.h"
#include "../store/stock.h"

const char mysql_sql_share_mode[] = "SELECT count FROM db_stock WHERE id = ? LOCK IN SHARE MODE";

/* One transaction (mysql_row.c): LL_OK, LL_SOLD_OUT or a failure; a
 * deadlock is LL_TIMEOUT with db_errno() 1213, rolled back. */
static int share_mode_once(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    return mysql_row_sell(ctx, mysql_sql_share_mode, p, 0, remaining);
}

static int share_mode_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    int rc;

    for (;;) {
        rc = share_mode_once(ctx, p, remaining);
        if (rc != LL_TIMEOUT || db_errno(ctx) != DB_ER_LOCK_DEADLOCK)
            return rc;
        if (lock_backoff(ctx) != LL_OK)
            return lock_error(ctx, LL_TIMEOUT, "mysql", "%u deadlocks (1213) and no sale "
                              "within %d ms", ctx->deadlocks, ctx->wait_ms);
    }
}

const struct lock_ops lock_mysql_share_mode = {
    .name    = "mysql-share-mode",
    .family  = "mysql",
    .summary = "SELECT ... LOCK IN SHARE MODE, then UPDATE; a deadlocked purchase is retried (seed 001)",
    .flaw    = "two shared locks cannot both become exclusive: deadlocks (1213, counted), rollbacks, retries",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .ceiling = LOCK_CEIL_SHARE_MODE,
    .protocol = (const char *const[]){ mysql_sql_share_mode, stock_sql_write, NULL },
    .sell    = share_mode_sell,
    .nofence = MYSQL_NOFENCE,
};
