/* mysql_lock_naive.c — the seeds' db_lock table as first written
 * (seed 000 §2.2), without the fixes of §2.3.
 *
 *     INSERT INTO db_lock (lock_name, class_name, method_name, create_time)
 *       VALUES ('lock:<product>', 'StockService', 'checkAndLock', NOW(3))
 *     duplicate key → sleep 50 ms, try again        Thread.sleep(50); recurse
 *     … the sale …
 *     DELETE FROM db_lock WHERE lock_name = ?       deleteById(lock.getId())
 *
 * The unique lock_name lets one INSERT win. The row has no owner and no
 * expiry: §2.3's second defect ("这把锁没有失效时间,一旦解锁操作失败,就会导致锁
 * 记录一直在数据库中,其他线程无法再获得到锁"). A holder that dies before its
 * DELETE (?crash=1) leaves the row for ever, and every later sale of the
 * product sleeps and retries until its deadline (lock_timeout), until
 * someone deletes the row by hand: POST /stock/reset does (the reset hook).
 * Not reentrant (§2.3's third defect): a second acquire by the holder
 * would wait for itself, so ?reentry=2 is refused (400). The fix is
 * mysql-lock-table: an owner to re-enter, an expiry a waiter may take
 * over, and no spinning INSERTs.
 *
 * The rows are mysql-lock-table's (the same table and lock names): the two
 * exclude each other, and a row of this one, which has no expiry, is
 * never taken over by the other.
 */
#include "lock.h"
#include "../clients/db.h"
#include "../core/util.h"
#include "../core/wait.h"

#define RETRY_MS 50     /* the seeds' Thread.sleep(50) */

static int naive_acquire(struct lock_ctx *ctx, const char *key)
{
    static const char sql[] =
        "INSERT INTO db_lock (lock_name, class_name, method_name, create_time)"
        " VALUES (?, 'StockService', 'checkAndLock', NOW(3))";
    int64_t left;
    int rc;

    for (;;) {
        rc = db_exec(ctx, sql, NULL, "s", key);
        if (rc == LL_OK)
            return LL_OK;
        if (db_errno(ctx) != DB_ER_DUP_ENTRY && db_errno(ctx) != DB_ER_LOCK_DEADLOCK)
            return rc;
        ctx->retries++;
        if ((left = lock_time_left(ctx)) <= 0)
            return lock_timeout(ctx);
        sleep_us((left < RETRY_MS ? left : RETRY_MS) * 1000);
    }
}

/* Release and POST /stock/reset alike: the row goes, whoever made it. */
static int naive_delete(struct lock_ctx *ctx, const char *key)
{
    static const char sql[] = "DELETE FROM db_lock WHERE lock_name = ?";
    return db_exec(ctx, sql, NULL, "s", key);
}

const struct lock_ops lock_mysql_lock_naive = {
    .name    = "mysql-lock-naive",
    .family  = "mysql",
    .summary = "the seeds' first db_lock: INSERT a unique lock_name, sleep 50 ms on a duplicate, "
               "DELETE to unlock (seed 000 §2.2)",
    .flaw    = "no expiry and no owner: a holder that dies before its DELETE blocks the product "
               "for ever (until POST /stock/reset); not reentrant; spins on the database",
    .props   = LOCK_DISTRIBUTED,
    .ceiling = LOCK_CEIL_SERIAL_MYSQL,
    .acquire = naive_acquire,
    .release = naive_delete,
    .reset   = naive_delete,
    .nofence = "its row carries no token: the seeds' table had no fencing column",
};
