/* sale.h — one purchase: the seeds' StockService.checkAndLock(), with the
 * lock strategy as a parameter. */
#ifndef LOCKLAB_SALE_H
#define LOCKLAB_SALE_H

struct lock_ctx;
struct lock_ops;
struct product;

/* One purchase of one unit. `reentry` (1..LOCK_MAX_DEPTH) is how many
 * times the lock is taken, nested, as the seeds' reentrancy demo does.
 * On LL_OK *remaining is the count written. */
int sale_run(struct lock_ctx *ctx, const struct lock_ops *ops,
               const struct product *p, int reentry, long long *remaining);

#endif /* LOCKLAB_SALE_H */
