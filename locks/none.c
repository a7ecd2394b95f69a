/* none.c — no lock at all: seed 000 §1.3, the baseline.
 *
 * The sale reads the count and writes back the value read minus one with
 * nothing around it, so concurrent requests read the same count and
 * overwrite each other's decrement: updates are lost (the seeds' run left
 * 4870 of 5000 units after 5000 sales) and, once the stock runs low, more
 * units are sold than there were.
 */
#include "lock.h"
#include "../store/stock.h"

static int none_acquire(struct lock_ctx *ctx, const char *key)
{
    (void)ctx, (void)key;
    return LL_OK;
}

static int none_release(struct lock_ctx *ctx, const char *key)
{
    (void)ctx, (void)key;
    return LL_OK;
}

const struct lock_ops lock_none = {
    .name    = "none",
    .family  = "local",
    .summary = "no lock: read count, write count-1 (seed 000 §1.3)",
    .flaw    = "concurrent sales overwrite each other: lost updates, oversold stock",
    .props   = LOCK_REENTRANT,
    .ceiling = LOCK_CEIL_SERIAL_MYSQL,
    .protocol = (const char *const[]){ stock_sql_read, stock_sql_write, NULL },
    .acquire = none_acquire,
    .release = none_release,
    .nofence  = "there is no lock, so no service to number its holders",
};
