/* mysql_update.c — the sale as one conditional statement (seed 001, 003):
 *
 *     UPDATE db_stock SET count = count - 1
 *      WHERE product_code = ? AND stock_code = ? AND count >= 1
 *
 * InnoDB's row lock makes the check and the decrement one atomic step, so
 * one changed row means one unit sold and no row changed means sold out.
 * It needs no lock across instances and costs one round trip. What it
 * cannot do is run logic between the read and the write (the seeds' other
 * objection: one statement can only express so much, and it says nothing
 * about the amount left). The row is named by its id, which stock.c
 * resolved from (product_code, stock_code) once: the same row, found
 * through the primary key instead of the unique secondary one.
 *
 * Within one instance the statements on one row go through the row's
 * queue (mysql_queue.c): waiting there is far cheaper than waiting for
 * InnoDB's row lock. The purchases waiting in it when the row is free are
 * sent together, up to 64, each its own UPDATE, in one write on one
 * connection (pipelined): MariaDB runs them back to back, each an
 * autocommitted sale, and one round trip serves them all. Each sale is
 * still the seeds' one statement, answered by its own affected rows.
 */
#include "mysql_private.h"
#include "protocol.h"

static const struct mysql_queue_conf update_queue = {
    .batch = MYSQL_QUEUE_MAX, .pipeline = 1, .sell = mysql_sell_one,
};

const struct lock_ops lock_mysql_update = {
    .name    = "mysql-update",
    .family  = "mysql",
    .summary = "one conditional UPDATE ... WHERE count >= 1: the row lock is the lock (seed 001); an instance's waiting purchases pipelined, a statement each",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .ceiling = LOCK_CEIL_UPDATE_PEAK,
    .protocol = (const char *const[]){ mysql_sql_sell_one, NULL },
    .hold_rtts = 0,     /* none a sale: a round trip carries up to 64 of them */
    MYSQL_QUEUE_METHODS(&update_queue),
};
