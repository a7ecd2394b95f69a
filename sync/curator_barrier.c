/* curator_barrier.c — Curator's DistributedBarrier (seed 000 §4.6.6, the
 * first half) on /locklab/sync/barrier/<name>: the barrier is up while
 * that node exists. set creates it (parents as containers), remove
 * deletes it, wait sets an exists() watch and sleeps until the node is
 * gone — every waiter is released at once when the main client removes
 * it. Curator's DistributedBarrier on the same path is the same barrier.
 */
#include "sync_private.h"

static int with_conn(struct lock_ctx *ctx, const struct sync_args *a, char *path,
                     struct zk_conn **c)
{
    curator_path(path, ZK_PATH_MAX, "barrier", a->name);
    return zk_lock_session(ctx, c);
}

static int op_set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX];
    struct zk_conn *c;
    int rc;

    if ((rc = with_conn(ctx, a, path, &c)) != LL_OK)
        return rc;
    if ((rc = zk_ensure_path(ctx, c, path, ZOO_CONTAINER)) == LL_OK)
        json_object_set_new(out, "barrier", json_string("set"));
    zk_put(c);
    return rc;
}

static int op_remove(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX];
    struct zk_conn *c;
    int rc, zrc;

    if ((rc = with_conn(ctx, a, path, &c)) != LL_OK)
        return rc;
    zrc = zk_delete(ctx, c, path, -1);
    if (zrc == ZOK || zrc == ZNONODE)
        json_object_set_new(out, "barrier", json_string("removed"));
    else
        rc = zk_fail(ctx, zrc, "delete", path);
    zk_put(c);
    return rc;
}

static int op_wait(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX];
    struct zk_conn *c;
    struct zk_watch *w;
    struct Stat st;
    int rc, zrc;

    if ((rc = with_conn(ctx, a, path, &c)) != LL_OK)
        return rc;
    w = zk_watch_begin(c, path);
    for (;;) {
        zrc = zk_exists(ctx, c, path, 1, &st);
        if (zrc == ZNONODE)
            break;
        if (zk_retryable(zrc))
            rc = zk_await(ctx, c, ctx->deadline_ms);
        else if (zrc != ZOK)
            rc = zk_fail(ctx, zrc, "exists", path);
        else
            rc = zk_watch_wait(ctx, w, ctx->deadline_ms);
        if (rc != LL_OK)
            break;
    }
    zk_watch_end(w);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "barrier %s still set after %d ms", path, ctx->wait_ms);
    if (rc == LL_OK) {
        json_object_set_new(out, "barrier", json_string("passed"));
        sync_granted(a, out);
    }
    zk_put(c);
    return rc;
}

static int barrier_reset(struct lock_ctx *ctx, const char *name)
{
    return curator_reset(ctx, "barrier", name);
}

static const struct sync_op barrier_ops[] = {
    { "set", "", "setBarrier()", op_set },
    { "remove", "", "removeBarrier(): every waiter goes on", op_remove },
    { "wait", "wait_ms hold_ms", "waitOnBarrier(wait): until the barrier is removed", op_wait },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_barrier = {
    .primitive = "barrier",
    .backend   = "curator",
    .library   = "Curator DistributedBarrier",
    .where     = "/locklab/sync/barrier/<name> (exists while the barrier is set)",
    .summary   = "Curator DistributedBarrier: a node that exists while the barrier stands; waiters watch it with exists() and all go on when it is deleted (seed 000 §4.6.6)",
    .flaw      = "a persistent node: a main client that dies leaves the barrier up for ever",
    .props     = LOCK_DISTRIBUTED | LOCK_EXACT,
    .invariant = "no waiter passes while the barrier is set (tests/sync.sh; the comparison loads an unset barrier)",
    .ceiling   = "sync_curator_barrier",
    .bench     = "wait",
    .bench_check = "",
    .ops       = barrier_ops,
    .reset     = barrier_reset,
};
