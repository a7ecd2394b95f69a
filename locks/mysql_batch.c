/* mysql_batch.c — many purchases, one conditional statement.
 *
 * mysql-update's queue (mysql_queue.c) with batches: the purchases of one
 * row waiting in an instance are sold together by whoever is first in
 * line,
 *
 *     UPDATE db_stock SET count = count - n WHERE id = ? AND count >= n
 *
 * which sells all n or none, so the counts stay exact across instances
 * (the row lock still orders them). Near the end, when fewer than n are
 * left, the leader sells one unit at a time until one is refused. This is
 * the flash sale's classic answer to a hot row: merge the deductions, so
 * the row sees one statement for a crowd instead of one per buyer. It is
 * not in the seeds; it shows how far past mysql-update the same row goes.
 */
#include "mysql_private.h"

static const struct mysql_queue_conf batch_queue = {
    .batch = MYSQL_QUEUE_MAX, .sell = mysql_sell_one,
};

const struct lock_ops lock_mysql_batch = {
    .name    = "mysql-batch",
    .family  = "mysql",
    .summary = "the purchases of one row queued in an instance, sold together by one UPDATE ... count - n WHERE count >= n",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .ceiling = LOCK_CEIL_HTTP,
    MYSQL_QUEUE_METHODS(&batch_queue),
};
