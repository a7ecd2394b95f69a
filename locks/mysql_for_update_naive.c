/* mysql_for_update_naive.c — the seeds' pessimistic row lock exactly as
 * their Java runs it (seed 000 §1.6.1), a teaching strategy:
 *
 *     (autocommit off)                                     -- db_begin()
 *     SELECT count FROM db_stock WHERE id = ? FOR UPDATE;  -- row lock
 *     UPDATE db_stock SET count = ? WHERE id = ?;          -- value read − 1
 *     COMMIT;
 *
 * Every purchase is its own transaction on its own worker slot's
 * connection, three round trips, as a Tomcat thread borrows a pooled
 * connection and runs @Transactional checkAndLock(): no queue in the
 * instance, so with --threads T every one of the T slots of every
 * instance may be waiting for the hot row inside InnoDB at once (200 per
 * instance is Tomcat's default). The counts stay exact: the row lock
 * orders the sales, and every error path rolls back (mysql_row.c, whose
 * two halves it is; mysql-share-mode is the same with a shared read).
 *
 * What it gets wrong is the wait. Each transaction that asks for the held
 * row joins InnoDB's queue of waiters on it, is suspended, and is woken
 * in turn; with innodb_deadlock_detect on (the default), InnoDB walks the
 * wait-for graph from every new waiter to make sure it closes no cycle,
 * and on one hot row that graph is every other waiter: the work of a
 * grant grows with the number of waiters, and so does the time the row
 * spends between holders. mysql-for-update runs the same statements
 * through the instance's row queue (mysql_queue.c), so InnoDB sees at most
 * one transaction per instance at the row. bench/lesson hot-row shows the
 * two side by side at 200 slots an instance, and bench/compare --sweep
 * threads= draws the rate against the slots, with detection on and off
 * (docs/comparison.md). A wait is InnoDB's, bounded by
 * innodb_lock_wait_timeout (set per session from --lock-wait-ms): one that
 * runs out answers lock_timeout.
 */
#include "mysql_private.h"

static const char sql_select[] = "SELECT count FROM db_stock WHERE id = ? FOR UPDATE";

static int naive_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    return mysql_row_sell(ctx, sql_select, p, 0, remaining);
}

const struct lock_ops lock_mysql_for_update_naive = {
    .name    = "mysql-for-update-naive",
    .family  = "mysql",
    .summary = "the seeds' SELECT ... FOR UPDATE, UPDATE, COMMIT as their Java runs it (seed 000 §1.6.1): every purchase its own transaction on its slot's connection, waiting for the row in InnoDB",
    .flaw    = "every slot of every instance waits for the hot row inside InnoDB, which walks the wait-for graph of all the waiters at each new one (deadlock detection): the more slots (--threads), the slower each grant",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    /* Its statements, with nothing pipelined: the queued pipeline's
     * plateau is a bound it cannot pass. */
    .ceiling = LOCK_CEIL_FOR_UPDATE,
    .hold_rtts = 2, /* the SELECT's answer out, the UPDATE's and the COMMIT's back */
    .sell    = naive_sell,
    .nofence = MYSQL_NOFENCE,
};
