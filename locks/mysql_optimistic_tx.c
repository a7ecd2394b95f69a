/* mysql_optimistic_tx.c — the optimistic lock retried inside one
 * transaction: @Transactional on the seeds' checkAndLock() (seed 001, 乐观锁:
 * "使用时,不能加事务" — do not put it in a transaction; seed 000 §1.6.2).
 *
 *     BEGIN (autocommit off, db_begin)            the proxy opens it
 *     loop:
 *       SELECT count, version … WHERE id = ?      a consistent read
 *       UPDATE … SET count = ?, version = version + 1
 *        WHERE id = ? AND version = ?             a current read
 *       1 row → COMMIT: sold
 *       0 rows → sleep RETRY_MS, loop             the seeds' retry
 *     deadline → ROLLBACK, lock_timeout
 *
 * Under REPEATABLE READ, MariaDB's default, the first SELECT fixes the
 * transaction's snapshot, and every later SELECT of the same transaction
 * reads that snapshot again. The UPDATE does not: it reads the row as
 * committed now. So once another sale committed after our first read, our
 * UPDATE finds a newer version than the one we read and matches nothing,
 * and the retry reads the old version again, for ever: the purchase
 * retries until its deadline (ctx->retries counts each lost race) and
 * answers lock_timeout. Worse, the UPDATE that matched nothing still took
 * the row's exclusive lock, which REPEATABLE READ keeps until the
 * transaction ends: every other purchase's UPDATE waits behind the
 * hopeless one. Nothing is oversold or lost (the version check still
 * holds); sales are refused and time is spent blocked. The fix is
 * mysql-optimistic: each attempt outside a transaction, or in one of its
 * own, so each read sees the newest committed version.
 *
 * Every path after db_begin ends the transaction: COMMIT on a sale,
 * ROLLBACK on everything else (sold out included: nothing was written).
 */
#include "lock.h"
#include "mysql_private.h"
#include "../clients/db.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../store/stock.h"

#define RETRY_MS 20     /* the seeds' Thread.sleep(20) before the retry */

static const char read_sql[] = "SELECT count, version FROM db_stock WHERE id = ?";
static const char write_sql[] =
    "UPDATE db_stock SET count = ?, version = version + 1 WHERE id = ? AND version = ?";

/* One attempt of the transaction: *won = 1 when the UPDATE matched. */
static int tx_attempt(struct lock_ctx *ctx, const struct product *p, long long *count,
                      int *won)
{
    long long version = 0, rows = 0;
    int rc;

    *won = 0;
    rc = db_exec(ctx, read_sql, &rows, "l>ll", p->id, count, &version);
    if (rc == LL_OK && rows == 0)
        return lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", p->id);
    if (rc != LL_OK)
        return rc;
    if (*count < ctx->qty)
        return LL_SOLD_OUT;
    if (ctx->retries == 0)
        stock_hold(ctx);
    rc = db_exec(ctx, write_sql, &rows, "lll", *count - ctx->qty, p->id, version);
    *won = rc == LL_OK && rows == 1;
    return rc;
}

static int tx_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    long long count = 0;
    int64_t left;
    int rc, won;

    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    for (;;) {
        if ((rc = tx_attempt(ctx, p, &count, &won)) != LL_OK)
            break;
        if (won) {
            if ((rc = db_commit_sale(ctx)) == LL_OK)
                *remaining = count - ctx->qty;
            return rc;
        }
        ctx->retries++;
        if ((left = lock_time_left(ctx)) <= 0) {
            rc = lock_error(ctx, LL_TIMEOUT, "mysql", "the version read in the transaction's "
                            "snapshot lost %u races in %d ms: a retry in the same "
                            "transaction never reads the newer one", ctx->retries, ctx->wait_ms);
            break;
        }
        sleep_us((left < RETRY_MS ? left : RETRY_MS) * 1000);
    }
    db_rollback(ctx);
    return rc;
}

const struct lock_ops lock_mysql_optimistic_tx = {
    .name    = "mysql-optimistic-tx",
    .family  = "mysql",
    .summary = "the optimistic version lock retried inside one transaction: @Transactional "
               "on checkAndLock() (seed 001, 乐观锁)",
    .flaw    = "a retry rereads the transaction's snapshot, never the newer version: "
               "retries until its deadline (lock_timeout), holding the row's lock",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE,
    .ceiling = LOCK_CEIL_OPTIMISTIC_RECURSIVE,
    .sell    = tx_sell,
    .nofence = MYSQL_NOFENCE,
    .compare_skip = "most purchases wait out their whole deadline: the seeds' 5000 would "
                    "take minutes (bench/lesson optimistic-in-tx shows it)",
};
