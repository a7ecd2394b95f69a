/* mysql_private.h — what the MySQL strategies share. */
#ifndef LOCKLAB_MYSQL_PRIVATE_H
#define LOCKLAB_MYSQL_PRIVATE_H

#include "lock.h"

struct product;

/* One read-version-then-conditional-write attempt (mysql_optimistic.c). */
int mysql_optimistic_attempt(struct lock_ctx *ctx, const struct product *p,
                             long long *remaining, int *won);

#endif /* LOCKLAB_MYSQL_PRIVATE_H */
