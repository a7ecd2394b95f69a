/* mysql_nowait.c — the row lock without the wait: SELECT … FOR UPDATE
 * NOWAIT (MariaDB 10.3), and the retry its users write around it.
 *
 *     (autocommit off)                                            -- db_begin()
 *     SELECT count FROM db_stock WHERE id = ? FOR UPDATE NOWAIT;  -- now or never
 *     UPDATE db_stock SET count = ? WHERE id = ?; COMMIT;         -- one round trip
 *
 * A purchase that finds the row locked is refused by MariaDB at once:
 * error 1205 (ER_LOCK_WAIT_TIMEOUT, which is what MariaDB 10.11 answers a
 * NOWAIT that meets a held lock, not MySQL 8's 3572). Nothing of the
 * transaction holds anything yet; it is rolled back, and the purchase
 * tries again after lock_backoff()'s jittered pause (--retry-ms ±50 %,
 * doubling with each retry), until its deadline, when it answers
 * lock_timeout. Every refused try counts as a retry (/stats "retries", as
 * mysql-optimistic counts its lost races). A granted one is mysql-for-
 * update's sale: the UPDATE and the COMMIT in one round trip
 * (mysql_row.c), every error path rolled back.
 *
 * What it buys: no transaction ever waits inside InnoDB, so its queue of
 * waiters on the hot row and the deadlock detector's walk over it never
 * grow, whatever the number of slots (--threads). What it costs: a
 * refused try is a round trip spent for nothing, the waiters poll where
 * InnoDB would have woken them (a release is seen only at the next try,
 * in no order), and under many buyers most tries are refused. There is no
 * row queue in the instance: each slot tries for itself, as a thread of
 * the seeds' Java would.
 */
#include "mysql_private.h"
#include "../clients/db.h"

static const char sql_select[] = "SELECT count FROM db_stock WHERE id = ? FOR UPDATE NOWAIT";

/* One try: LL_OK (sold), LL_SOLD_OUT, LL_TIMEOUT with db_errno() 1205
 * when the row was held, or a failure; rolled back but on a sale. */
static int nowait_try(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    return mysql_row_sell(ctx, sql_select, p, 1, remaining);
}

static int nowait_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    int rc;

    for (;;) {
        rc = nowait_try(ctx, p, remaining);
        if (rc != LL_TIMEOUT || db_errno(ctx) != DB_ER_LOCK_WAIT_TIMEOUT)
            return rc;
        if (lock_backoff(ctx) != LL_OK)     /* counts the retry */
            return lock_error(ctx, LL_TIMEOUT, "mysql", "the row was held at each of %u "
                              "tries (NOWAIT, 1205) within %d ms", ctx->retries + 1,
                              ctx->wait_ms);
    }
}

const struct lock_ops lock_mysql_nowait = {
    .name    = "mysql-nowait",
    .family  = "mysql",
    .summary = "SELECT ... FOR UPDATE NOWAIT in a transaction, then UPDATE and COMMIT in one round trip: a buyer that finds the row held is refused at once (1205) and tries again after a jittered pause",
    .flaw    = "refused buyers poll the row: a round trip per refused try, no order, and under many buyers most tries are refused",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .ceiling = LOCK_CEIL_FOR_UPDATE,
    .hold_rtts = 1, /* the SELECT's answer out, UPDATE + COMMIT in */
    .sell    = nowait_sell,
    .nofence = MYSQL_NOFENCE,
};
