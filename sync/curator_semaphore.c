/* curator_semaphore.c — Curator's InterProcessSemaphoreV2 (seed 000
 * §4.6.5), so that `new InterProcessSemaphoreV2(client,
 * "/locklab/sync/semaphore/N", maxLeases)` in Java and GET
 * /sync/semaphore/acquire?backend=curator&name=N&permits=maxLeases share
 * the leases.
 *
 * Znodes under P = /locklab/sync/semaphore/N:
 *   P/locks/_c_<uuid>-lock-<seq>     an InterProcessMutex that serialises
 *                                    the acquirers (locks/zk_queue.c)
 *   P/leases/_c_<uuid>-lease-<seq>   one EPHEMERAL_SEQUENTIAL node a lease
 * Acquiring one lease (internalAcquire1Lease): take P/locks; create our
 * lease node; read P/leases' children with a child watch; while they are
 * more than maxLeases, wait for the watch (any lease returned) and read
 * again; then let P/locks go. A lease is given back by deleting its node.
 * acquire(qty) takes qty leases one after the other and returns them all
 * if one cannot be had in time. Every client must use the same maxLeases
 * (?permits=): nothing checks it, as in Curator.
 *
 * What it gets wrong is Curator's: maxLeases is each client's own belief,
 * and leases are ephemeral — a holder whose session expires loses its
 * lease while still working, and a lease whose delete was cut by a lost
 * connection stays until its session ends (here the delete is retried on
 * the same session, locks/zk_hold.c).
 */
#include "sync_private.h"

#include <stdio.h>
#include <string.h>

/* One lease: the path's mutex held around the count. */
static int take_one(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                    long long max, char *lease)
{
    char locks[ZK_PATH_MAX], leases[ZK_PATH_MAX], mutex[ZK_PATH_MAX], name[64];
    struct String_vector kids;
    struct lock_saved_error e;
    struct zk_watch *w;
    int rc, zrc, i, mine;

    zk_join(locks, sizeof locks, path, "locks");
    zk_join(leases, sizeof leases, path, "leases");
    if ((rc = zk_curator_lock(ctx, c, ZK_MUTEX, locks, NULL, mutex, sizeof mutex)) != LL_OK)
        return rc;
    zk_protected_name(name, sizeof name, "lease-");
    rc = zk_create_sequential(ctx, c, leases, name, NULL, ZOO_PERSISTENT, lease, ZK_PATH_MAX);
    w = rc == LL_OK ? zk_watch_begin(c, leases) : NULL;
    while (rc == LL_OK) {
        zrc = zk_children_watch(ctx, c, leases, 1, &kids);
        if (zk_retryable(zrc)) {
            rc = zk_await(ctx, c, ctx->deadline_ms);
            continue;
        }
        if (zrc != ZOK) {
            rc = zk_fail(ctx, zrc, "getChildren", leases);
            break;
        }
        for (mine = 0, i = 0; i < kids.count; i++)
            mine |= strcmp(kids.data[i], zk_basename(lease)) == 0;
        i = kids.count;
        deallocate_String_vector(&kids);
        if (!mine) {
            rc = lock_error(ctx, LL_UNAVAILABLE, zk_backend(), "sequential path not found: "
                            "%s (session lost?)", lease);
            break;
        }
        if (i <= max)
            break;
        rc = zk_watch_wait(ctx, w, ctx->deadline_ms);
    }
    zk_watch_end(w);
    lock_error_save(ctx, &e);
    if (rc != LL_OK && lease[0])
        zk_delete_ours(ctx, c, lease, NULL);
    zk_queue_unlock(ctx, c, mutex);
    lock_error_restore(ctx, &e);
    return rc;
}

int curator_leases_take(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                        long long max_leases, int qty, char leases[][ZK_PATH_MAX])
{
    int i, rc = LL_OK;

    for (i = 0; i < qty && rc == LL_OK; i++) {
        leases[i][0] = '\0';
        rc = take_one(ctx, c, path, max_leases, leases[i]);
    }
    if (rc != LL_OK) {
        struct lock_saved_error e;
        lock_error_save(ctx, &e);
        curator_leases_return(ctx, c, leases, i - 1);
        lock_error_restore(ctx, &e);
    }
    return rc;
}

int curator_leases_return(struct lock_ctx *ctx, struct zk_conn *c,
                          char leases[][ZK_PATH_MAX], int n)
{
    int i, rc = LL_OK;

    for (i = 0; i < n; i++) {
        int one = zk_delete_ours(ctx, c, leases[i], NULL);
        if (rc == LL_OK)
            rc = one;
    }
    return rc;
}

/* ---------------------------------------------------------------- operations */

static int op_acquire(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX], leases[CURATOR_MAX_QTY][ZK_PATH_MAX];
    int qty = a->qty > 0 ? (int)a->qty : 1, rc, i;
    struct zk_conn *c;
    json_t *list;

    if ((rc = sync_need(ctx, a->permits, "permits")) != LL_OK)
        return rc;
    if (qty > CURATOR_MAX_QTY)
        return lock_error(ctx, LL_BADREQ, NULL, "qty is at most %d", CURATOR_MAX_QTY);
    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "semaphore", a->name);
    rc = curator_leases_take(ctx, c, path, a->permits, qty, leases);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "%d lease(s) of %lld at %s not obtained within %d ms",
                   qty, a->permits, path, ctx->wait_ms);
    if (rc == LL_OK) {
        list = json_array();
        for (i = 0; i < qty; i++)
            json_array_append_new(list, json_string(zk_basename(leases[i])));
        json_object_set_new(out, "leases", list);
        json_object_set_new(out, "max_leases", json_integer(a->permits));
        sync_granted(a, out);
        sync_released(out);
        rc = curator_leases_return(ctx, c, leases, qty);
    }
    zk_put(c);
    return rc;
}

/* The leases taken now (children of leases/, waiting ones included). */
static int op_leases(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX];
    struct String_vector kids;
    struct zk_conn *c;
    int rc, zrc;

    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "semaphore", a->name);
    strncat(path, "/leases", sizeof path - strlen(path) - 1);
    zrc = zk_children(ctx, c, path, &kids);
    if (zrc == ZOK || zrc == ZNONODE) {
        json_object_set_new(out, "leases", json_integer(zrc == ZOK ? kids.count : 0));
        if (zrc == ZOK)
            deallocate_String_vector(&kids);
    } else {
        rc = zk_fail(ctx, zrc, "getChildren", path);
    }
    zk_put(c);
    return rc;
}

static int sem_reset(struct lock_ctx *ctx, const char *name)
{
    return curator_reset(ctx, "semaphore", name);
}

static const struct sync_op sem_ops[] = {
    { "acquire", "wait_ms hold_ms permits qty",
      "acquire(qty, wait) of permits=maxLeases; hold_ms; return the leases", op_acquire },
    { "leases", "", "the lease nodes there now (holders and waiters)", op_leases },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_semaphore = {
    .primitive = "semaphore",
    .backend   = "curator",
    .library   = "Curator InterProcessSemaphoreV2",
    .where     = "/locklab/sync/semaphore/<name>/locks/_c_<uuid>-lock-<seq>, …/leases/_c_<uuid>-lease-<seq>",
    .summary   = "Curator InterProcessSemaphoreV2: under the locks/ mutex, a lease node in leases/, kept once the leases are at most maxLeases; a child watch waits for returns (seed 000 §4.6.5)",
    .flaw      = "maxLeases is each client's own: a client with a larger one oversells; a lease lives as long as the session, not the work",
    .props     = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .invariant = "leases held never above maxLeases",
    .ceiling   = "sync_curator_semaphore",
    .bench     = "acquire?permits=3",
    .bench_check = "holders<=3",
    .ops       = sem_ops,
    .reset     = sem_reset,
};
