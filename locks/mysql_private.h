/* mysql_private.h — what the MySQL strategies share. */
#ifndef LOCKLAB_MYSQL_PRIVATE_H
#define LOCKLAB_MYSQL_PRIVATE_H

#include "lock.h"

struct product;

/* One read-version-then-conditional-write attempt (mysql_optimistic.c). */
int mysql_optimistic_attempt(struct lock_ctx *ctx, const struct product *p,
                             long long *remaining, int *won);

/* Sell one unit of prod through the row's queue in this instance: one
 * conditional UPDATE for up to `batch` queued purchases (mysql_queue.c).
 * LL_OK, LL_SOLD_OUT, LL_TIMEOUT (the deadline passed in line) or the
 * statement's failure. */
#define MYSQL_QUEUE_MAX 64
int mysql_queue_sell(struct lock_ctx *ctx, const struct product *prod, int batch);

#endif /* LOCKLAB_MYSQL_PRIVATE_H */
