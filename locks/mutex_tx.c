/* mutex_tx.c — the process-wide lock inside a transaction: Spring's
 * @Transactional around a synchronized method (seed 001, "三种情况造成JVM
 * 锁失效 … 事务": the second of the three ways a JVM lock fails).
 *
 *     BEGIN (autocommit off, db_begin)          the proxy opens the transaction
 *       lock mutex's mutex                      synchronized: the method starts
 *       SELECT count …                          the method's body
 *       UPDATE … SET count = <read − 1> …
 *       unlock                                  the method returns
 *     COMMIT                                    the proxy commits: after the unlock
 *
 * The mutex is `mutex`'s own (one per process, as the synchronized service
 * of the seeds), run through its table. Between the unlock and the COMMIT
 * the next purchase of this instance takes the mutex and reads the count:
 * InnoDB's consistent read shows it the value before the first purchase's
 * UPDATE, which is not committed yet; its own UPDATE then waits for the
 * first one's row lock and, once that commits, writes the very count the
 * first one wrote. A lost update on one instance, under a lock that
 * excludes: the lock guarded the statements, not the transaction. The fix
 * is to take the lock outside the transaction, or to let the database lock
 * (mysql-for-update).
 *
 * The fault switch late_ms (a pause after the checks, just before the
 * write) pauses here between the unlock and the COMMIT, the write that
 * counts: the window stretched, so that two purchases show the loss.
 * Under load the loss is likely without it, not certain: the holder's
 * COMMIT is sent before the next holder's SELECT, and MariaDB may finish
 * it first (a CI run of 200 sales once lost none); a pause of a few ms
 * (late_ms=2) puts every hand-over in a COMMIT's window. With --ledger the sale's row carries
 * the critical section, from the lock to the unlock: sections that never
 * overlap, and a unit lost all the same.
 */
#include "lock.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../store/stock.h"

extern const struct lock_ops lock_mutex;        /* mutex.c: its mutex and wait */

/* The method's body, under the mutex: *read the count it read. */
static int tx_body(struct lock_ctx *ctx, const struct product *p, long long *read)
{
    int rc = stock_read(ctx, p, read);

    if (rc == LL_OK && *read < ctx->qty)
        return LL_SOLD_OUT;
    if (rc == LL_OK) {
        stock_hold(ctx);
        rc = stock_write(ctx, p, *read - ctx->qty);
    }
    return rc;
}

static int mutex_tx_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    long long read = 0;
    int64_t since, until;
    int rc, crc;

    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    if ((rc = lock_mutex.acquire(ctx, p->key)) != LL_OK) {
        db_rollback(ctx);
        return rc;
    }
    ctx->held_since_us = since = now_us();
    rc = tx_body(ctx, p, &read);
    lock_mutex.release(ctx, p->key);
    until = now_us();
    ctx->held_us = until - since;
    if (rc == LL_SOLD_OUT) {
        crc = db_commit(ctx);
        return crc == LL_OK ? LL_SOLD_OUT : crc;
    }
    if (rc != LL_OK) {
        db_rollback(ctx);
        return rc;
    }
    if (ctx->late_ms > 0)   /* fault: the window between the unlock and the COMMIT */
        sleep_us((int64_t)ctx->late_ms * 1000);
    rc = ctx->cfg->ledger ? stock_ledger_commit(ctx, p, read, read - ctx->qty, since, until)
                          : db_commit_sale(ctx);
    if (rc == LL_OK)
        *remaining = read - ctx->qty;
    return rc;
}

const struct lock_ops lock_mutex_tx = {
    .name    = "mutex-tx",
    .family  = "local",
    .summary = "mutex inside a transaction: @Transactional around synchronized, unlocked before the COMMIT (seed 001)",
    .flaw    = "the next holder reads a count not yet committed: lost updates even on one instance",
    .props   = LOCK_AUTO_RELEASE,
    .ceiling = LOCK_CEIL_SERIAL_MYSQL,
    .sell    = mutex_tx_sell,
    .nofence = "a mutex lives in one process: there is no service to number its holders across instances",
};
