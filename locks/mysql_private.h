/* mysql_private.h — what the MySQL strategies share. */
#ifndef LOCKLAB_MYSQL_PRIVATE_H
#define LOCKLAB_MYSQL_PRIVATE_H

#include "lock.h"

struct product;

/* One read-version-then-conditional-write attempt (mysql_optimistic.c). */
int mysql_optimistic_attempt(struct lock_ctx *ctx, const struct product *p,
                             long long *remaining, int *won);

/* A sale of one unit of prod by one purchase alone. */
typedef int (*mysql_sell_fn)(struct lock_ctx *ctx, const struct product *prod,
                             long long *remaining);

/* The sell hook of the strategies that sell through the row's queue in
 * this instance (mysql_queue.c), by name in their table, with a struct
 * mysql_queue_conf as the table's conf: the first in line runs `sell` for
 * its purchase alone, or, when batch > 1, for up to `batch` purchases of
 * the same row and sell: one conditional UPDATE for all of them, or with
 * `pipeline` one UPDATE each, all in one write (db_exec_repeat()). LL_OK,
 * LL_SOLD_OUT, LL_TIMEOUT (the deadline passed in line) or the sale's
 * failure. */
#define MYSQL_QUEUE_MAX 64
struct mysql_queue_conf {
    int           batch;        /* purchases one round trip may sell, 1..MAX */
    int           pipeline;     /* a statement each, pipelined, not one for all */
    mysql_sell_fn sell;         /* one purchase alone                        */
};
int mysql_queue_sell(struct lock_ctx *ctx, const struct product *prod, long long *remaining);
void mysql_queue_ctx_free(struct lock_ctx *ctx);    /* frees ctx->mysql */

/* The hooks of such a strategy's lock_ops, whose queue conf is *c. */
#define MYSQL_QUEUE_METHODS(c) \
    .conf = (c), .sell = mysql_queue_sell, \
    .nofence = MYSQL_NOFENCE

/* Why the strategies that sell in the database itself need no token. */
#define MYSQL_NOFENCE "its write is ordered by MariaDB itself (a row lock or a conditional " \
                      "write), so there is no holder outside the database to fence"

/* For a leader's sale, in the middle of it: claim the next purchase in
 * line for the same row and sale, so that its transaction can begin in the
 * same round trip as this one's COMMIT (db_exec_commit_next()); NULL when
 * none waits. Then mysql_queue_pass() says whether it began: if so, the
 * claimed purchase gets this slot's connection, with its first statement's
 * answer pending, and leads next; if not, it goes back to the head of the
 * line. */
struct purchase;
struct purchase *mysql_queue_claim(struct lock_ctx *ctx);
void mysql_queue_pass(struct lock_ctx *ctx, struct purchase *next, int began);

/* A row as a sale left it, read behind its write (count and version),
 * handed to the next sale of the row in this instance's line: leave_row
 * keeps it only when a purchase waits in line, take_row gives it once and
 * only within 2 ms of its read (1), else 0: read the row yourself. */
void mysql_queue_leave_row(const struct product *prod, const long long row[2]);
int mysql_queue_take_row(const struct product *prod, long long row[2]);

/* A sale in one transaction of its own, in two halves (mysql_row.c).
 * mysql_row_read begins it and runs `sql`, a locking read of p's count by
 * its id (one 'l' parameter, one column): LL_OK with *count, the row held;
 * LL_SOLD_OUT (fewer than ctx->qty left, committed); or a failure, rolled
 * back. mysql_row_write then writes *count − ctx->qty to p's row and
 * commits, the UPDATE and the COMMIT in one round trip when one_trip (not
 * with --ledger): LL_OK, or a failure, rolled back. */
int mysql_row_read(struct lock_ctx *ctx, const char *sql, const struct product *p,
                   long long *count);
int mysql_row_write(struct lock_ctx *ctx, const struct product *p, long long count, int one_trip);
/* Both: the sale of one purchase, *remaining what it left. */
int mysql_row_sell(struct lock_ctx *ctx, const char *sql, const struct product *p,
                   int one_trip, long long *remaining);

/* UPDATE … count = count - 1 WHERE id = ? AND count >= 1 (seed 001). */
int mysql_sell_one(struct lock_ctx *ctx, const struct product *prod, long long *remaining);

#endif /* LOCKLAB_MYSQL_PRIVATE_H */
