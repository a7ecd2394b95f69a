/* curator_semaphore_mutex.c — Curator's InterProcessSemaphoreMutex (seed
 * 000 §4.6.2): an InterProcessSemaphoreV2 of one lease on
 * /locklab/sync/semaphore-mutex/<name> (its locks/ and leases/), so it is
 * not reentrant: a holder that acquires again waits for itself, as
 * Curator's does. `reenter` shows it: it takes the mutex, then tries it a
 * second time until the deadline (503, "not reentrant"), then releases.
 */
#include "sync_private.h"

static int take(struct lock_ctx *ctx, const struct sync_args *a, json_t *out, int twice)
{
    char path[ZK_PATH_MAX], lease[2][ZK_PATH_MAX];
    struct lock_saved_error e;
    struct zk_conn *c;
    int rc, again;

    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "semaphore-mutex", a->name);
    if ((rc = curator_leases_take(ctx, c, path, 1, 1, lease)) != LL_OK) {
        zk_put(c);
        return rc;
    }
    json_object_set_new(out, "lease", json_string(zk_basename(lease[0])));
    sync_granted(a, out);
    if (twice) {
        again = curator_leases_take(ctx, c, path, 1, 1, lease + 1);
        json_object_set_new(out, "reentered", json_boolean(again == LL_OK));
        if (again == LL_OK)
            curator_leases_return(ctx, c, lease + 1, 1);
        else if (again == LL_TIMEOUT)
            lock_error(ctx, LL_TIMEOUT, NULL, "not reentrant: the second acquire of %s by "
                       "its holder waited %d ms for itself", path, ctx->wait_ms);
        rc = again;
    }
    sync_released(out);
    lock_error_save(ctx, &e);
    curator_leases_return(ctx, c, lease, 1);
    lock_error_restore(ctx, &e);
    zk_put(c);
    return rc;
}

static int op_acquire(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, 0);
}

static int op_reenter(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, 1);
}

static int smx_reset(struct lock_ctx *ctx, const char *name)
{
    return curator_reset(ctx, "semaphore-mutex", name);
}

static const struct sync_op smx_ops[] = {
    { "acquire", "wait_ms hold_ms", "acquire(wait); hold_ms; release()", op_acquire },
    { "reenter", "wait_ms", "acquire, then acquire again: waits for itself (503)", op_reenter },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_semaphore_mutex = {
    .primitive = "semaphore-mutex",
    .backend   = "curator",
    .library   = "Curator InterProcessSemaphoreMutex",
    .where     = "/locklab/sync/semaphore-mutex/<name>/locks/…, …/leases/_c_<uuid>-lease-<seq>",
    .summary   = "Curator InterProcessSemaphoreMutex: a SemaphoreV2 of one lease; not reentrant, a second acquire by its holder waits (seed 000 §4.6.2)",
    .flaw      = "not reentrant: code that re-acquires deadlocks on itself; held as long as the session",
    .props     = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .invariant = "one holder at a time",
    .ceiling   = "sync_curator_semaphore_mutex",
    .bench     = "acquire",
    .bench_check = "holders<=1",
    .ops       = smx_ops,
    .reset     = smx_reset,
};
