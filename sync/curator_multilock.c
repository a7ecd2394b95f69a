/* curator_multilock.c — Curator's InterProcessMultiLock (seed 000 §4.6.4):
 * one InterProcessMutex per ?names= entry, on /locklab/sync/lock/<name>
 * (`new InterProcessMultiLock(client, List.of("/locklab/sync/lock/a", …))`
 * or a plain InterProcessMutex on one of those paths excludes with it).
 * acquire takes them in the order given, each with the time left; one not
 * obtained in time releases those taken, in reverse order, and fails.
 * release gives them all back (a failure there is reported, the others
 * are released anyway).
 */
#include "sync_private.h"

#include <string.h>

static int op_lock(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX], node[SYNC_MAX_NAMES][ZK_PATH_MAX];
    struct lock_saved_error e;
    struct zk_conn *c;
    json_t *list;
    int rc = LL_OK, i, n;

    if (a->nnames == 0)
        return lock_error(ctx, LL_BADREQ, NULL, "lock needs ?names=a,b,…");
    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    for (n = 0; n < a->nnames; n++) {
        curator_path(path, sizeof path, "lock", a->names[n]);
        if ((rc = zk_curator_lock(ctx, c, ZK_MUTEX, path, NULL, node[n], sizeof node[n])) != LL_OK)
            break;
    }
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "%s not obtained within %d ms: the %d lock(s) taken "
                   "before it were released", a->names[n], ctx->wait_ms, n);
    if (rc == LL_OK) {
        list = json_array();
        for (i = 0; i < n; i++)
            json_array_append_new(list, json_string(zk_basename(node[i])));
        json_object_set_new(out, "nodes", list);
        sync_granted(a, out);
    }
    sync_released(out);
    lock_error_save(ctx, &e);
    for (i = n - 1; i >= 0; i--) {
        int one = zk_queue_unlock(ctx, c, node[i]);
        if (rc == LL_OK && one != LL_OK) {
            rc = one;
            lock_error_save(ctx, &e);
        }
    }
    lock_error_restore(ctx, &e);
    zk_put(c);
    return rc;
}

static int ml_reset(struct lock_ctx *ctx, const char *name)
{
    return curator_reset(ctx, "lock", name);
}

static const struct sync_op ml_ops[] = {
    { "lock", "names wait_ms hold_ms",
      "acquire(wait) every InterProcessMutex in order, all or nothing; hold_ms; release()",
      op_lock },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_multilock = {
    .primitive = "multilock",
    .backend   = "curator",
    .library   = "Curator InterProcessMultiLock",
    .where     = "/locklab/sync/lock/<each name>/_c_<uuid>-lock-<seq> (InterProcessMutex's)",
    .summary   = "Curator InterProcessMultiLock: an InterProcessMutex per name, taken in order, released in reverse when one is not obtained (seed 000 §4.6.4)",
    .flaw      = "clients that list the names in different orders can each hold one and wait for the other until their time runs out",
    .props     = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_FAIR | LOCK_EXACT,
    .invariant = "no two holders of one name at once",
    .ceiling   = "sync_curator_multilock",
    .bench     = "lock?names=bench-ml-a,bench-ml-b",
    .bench_check = "holders<=1",
    .ops       = ml_ops,
    .reset     = ml_reset,
};
