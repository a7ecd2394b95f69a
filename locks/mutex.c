/* mutex.c — one process-wide lock: the seeds' `synchronized` and
 * ReentrantLock (seed 000 §1.4).
 *
 * A mutex of the wait layer (core/wait.h), taken with a deadline and
 * re-entered by the slot that holds it. Within one instance
 * every sale is serialised and the count is exact; with three instances
 * behind nginx each has its own mutex, so sales on different instances
 * race exactly like `none` — the seeds' reason to need a distributed lock.
 * One mutex for every product, as `synchronized` on the service method.
 */
#include "lock.h"
#include "../core/config.h"
#include "../core/wait.h"

#include <stdatomic.h>

/* The mutex, and who holds it how deep: re-entry is by the same slot,
 * as a Java thread re-enters its own ReentrantLock. */
static struct wait_mutex mutex = WAIT_MUTEX_INIT;
static _Atomic(const struct lock_ctx *) owner;
static int depth;

static int mutex_acquire(struct lock_ctx *ctx, const char *key)
{
    (void)key;
    if (atomic_load(&owner) == ctx) {
        depth++;
        return LL_OK;
    }
    if (!wait_mutex_lock(&mutex, ctx->deadline_ms * 1000))
        return lock_timeout(ctx);
    atomic_store(&owner, ctx);
    depth = 1;
    return LL_OK;
}

static int mutex_release(struct lock_ctx *ctx, const char *key)
{
    (void)key;
    if (atomic_load(&owner) != ctx)
        return lock_error(ctx, LL_ERROR, NULL, "mutex released by a slot that does not hold it");
    if (--depth == 0) {
        atomic_store(&owner, NULL);
        wait_mutex_unlock(&mutex);
    }
    return LL_OK;
}

const struct lock_ops lock_mutex = {
    .name    = "mutex",
    .family  = "local",
    .summary = "one process-wide recursive mutex: synchronized / ReentrantLock (seed 000 §1.4)",
    .flaw    = "excludes only within one instance: three instances lose updates again",
    .props   = LOCK_REENTRANT | LOCK_AUTO_RELEASE,
    .ceiling = LOCK_CEIL_SERIAL_MYSQL,
    .acquire = mutex_acquire,
    .release = mutex_release,
    .nofence  = "a mutex lives in one process: there is no service to number its holders across instances",
};
