/* curator_double_barrier.c — Curator's DistributedDoubleBarrier (seed 000
 * §4.6.6, the second half) on /locklab/sync/double-barrier/<name> = B:
 * members enter together once memberQty of them are there, and leave
 * together once all have left.
 *
 * A member is an EPHEMERAL node B/<member id> (Curator: a random UUID; here
 * ?member=, or a fresh UUID the answer names, so that the same member can
 * leave later through any instance — a node of one session may be deleted
 * by any client).
 *   enter: set an exists() watch on B/ready; create B/<member> (parents as
 *          containers); if ready existed, entered; else if B has at least
 *          memberQty children, create B/ready (PERSISTENT, an existing one
 *          is fine) and enter; else wait for the watch on B/ready, until
 *          the deadline (503; the member stays, as Curator's does).
 *   leave: loop over B's children other than ready, sorted: none left →
 *          done; ours missing → an error; only ours → delete it, done;
 *          else set an exists() watch on the highest child, delete ours
 *          (once), and wait for that watch (until the deadline); at the
 *          end delete B/ready.
 * memberQty is a threshold, not a limit (the seeds' 注意): more members may
 * enter at once.
 */
#include "sync_private.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int op_enter(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char base[ZK_PATH_MAX], ready[ZK_PATH_MAX], ours[ZK_PATH_MAX], id[37];
    struct String_vector kids;
    struct zk_conn *c;
    struct zk_watch *w;
    struct Stat st;
    int rc, zrc, ready_exists;

    if ((rc = sync_need(ctx, a->members, "members")) != LL_OK)
        return rc;
    if (a->member)
        strlcopy(id, a->member, sizeof id);
    else
        uuid4(id);
    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(base, sizeof base, "double-barrier", a->name);
    zk_join(ready, sizeof ready, base, "ready");
    zk_join(ours, sizeof ours, base, id);
    json_object_set_new(out, "member", json_string(id));
    json_object_set_new(out, "members", json_integer(a->members));
    w = zk_watch_begin(c, ready);
    zrc = zk_exists(ctx, c, ready, 1, &st);
    ready_exists = zrc == ZOK;
    zrc = zk_create(ctx, c, ours, NULL, ZOO_EPHEMERAL, NULL, 0);
    if (zrc == ZNONODE) {
        if ((rc = zk_ensure_path(ctx, c, base, ZOO_CONTAINER)) == LL_OK)
            zrc = zk_create(ctx, c, ours, NULL, ZOO_EPHEMERAL, NULL, 0);
    }
    if (rc == LL_OK && zrc == ZNODEEXISTS)
        rc = lock_error(ctx, LL_BADREQ, NULL, "member %s has entered %s already", id, base);
    else if (rc == LL_OK && zrc != ZOK)
        rc = zk_fail(ctx, zrc, "create", ours);
    if (rc == LL_OK && !ready_exists) {
        zrc = zk_children(ctx, c, base, &kids);
        if (zrc != ZOK) {
            rc = zk_fail(ctx, zrc, "getChildren", base);
        } else {
            json_object_set_new(out, "present", json_integer(kids.count));
            if (kids.count >= a->members) {
                zrc = zk_create(ctx, c, ready, NULL, 0, NULL, 0);
                if (zrc != ZOK && zrc != ZNODEEXISTS)
                    rc = zk_fail(ctx, zrc, "create", ready);
            } else {
                rc = zk_watch_wait(ctx, w, ctx->deadline_ms);
            }
            deallocate_String_vector(&kids);
        }
    }
    zk_watch_end(w);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "fewer than %lld members entered %s within %d ms "
                   "(member %s stays entered)", a->members, base, ctx->wait_ms, id);
    if (rc == LL_OK) {
        json_object_set_new(out, "entered", json_true());
        sync_granted(a, out);
    }
    zk_put(c);
    return rc;
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* B's children but ready, sorted; *kids owns them. */
static int members_of(struct lock_ctx *ctx, struct zk_conn *c, const char *base,
                      struct String_vector *kids)
{
    int zrc = zk_children(ctx, c, base, kids), i, n = 0;

    if (zrc == ZNONODE) {
        kids->count = 0;
        return LL_OK;
    }
    if (zrc != ZOK)
        return zk_fail(ctx, zrc, "getChildren", base);
    for (i = 0; i < kids->count; i++) {
        if (strcmp(kids->data[i], "ready") == 0) {
            free(kids->data[i]);
            continue;
        }
        kids->data[n++] = kids->data[i];
    }
    kids->count = n;
    if (n > 1)                  /* none: data may be NULL, which qsort may not take */
        qsort(kids->data, (size_t)n, sizeof kids->data[0], by_name);
    return LL_OK;
}

static int op_leave(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char base[ZK_PATH_MAX], ours[ZK_PATH_MAX], high[ZK_PATH_MAX];
    struct String_vector kids;
    struct zk_conn *c;
    struct zk_watch *w;
    struct Stat st;
    int rc, zrc, i, idx, should_exist = 1, stat_ok;

    if (a->member == NULL)
        return lock_error(ctx, LL_BADREQ, NULL, "leave needs ?member=, the id enter answered");
    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(base, sizeof base, "double-barrier", a->name);
    zk_join(ours, sizeof ours, base, a->member);
    for (;;) {
        if ((rc = members_of(ctx, c, base, &kids)) != LL_OK)
            break;
        if (kids.count == 0) {
            deallocate_String_vector(&kids);
            break;
        }
        for (idx = -1, i = 0; i < kids.count; i++)
            if (strcmp(kids.data[i], a->member) == 0)
                idx = i;
        zk_join(high, sizeof high, base, kids.data[kids.count - 1]);
        i = kids.count;
        deallocate_String_vector(&kids);
        if (idx < 0 && should_exist) {
            rc = lock_error(ctx, LL_BADREQ, NULL, "our path (%s) is missing: member %s never "
                            "entered, or left already", ours, a->member);
            break;
        }
        if (i == 1) {
            if (should_exist)
                zk_delete(ctx, c, ours, -1);
            break;
        }
        w = zk_watch_begin(c, high);
        zrc = zk_exists(ctx, c, high, 1, &st);
        stat_ok = zrc == ZOK;
        if (should_exist)
            zk_delete(ctx, c, ours, -1);
        should_exist = 0;
        if (stat_ok)
            rc = zk_watch_wait(ctx, w, ctx->deadline_ms);
        zk_watch_end(w);
        if (rc != LL_OK)
            break;
    }
    {
        char ready[ZK_PATH_MAX];
        zk_join(ready, sizeof ready, base, "ready");
        zk_delete(ctx, c, ready, -1);
    }
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "members still in %s after %d ms", base, ctx->wait_ms);
    if (rc == LL_OK) {
        json_object_set_new(out, "member", json_string(a->member));
        json_object_set_new(out, "left", json_true());
        sync_granted(a, out);
    }
    zk_put(c);
    return rc;
}

static int dbl_reset(struct lock_ctx *ctx, const char *name)
{
    return curator_reset(ctx, "double-barrier", name);
}

static const struct sync_op dbl_ops[] = {
    { "enter", "wait_ms hold_ms members member",
      "enter(wait): until memberQty=members have entered", op_enter },
    { "leave", "wait_ms members member", "leave(wait): until every member has left", op_leave },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_double_barrier = {
    .primitive = "double-barrier",
    .backend   = "curator",
    .library   = "Curator DistributedDoubleBarrier",
    .where     = "/locklab/sync/double-barrier/<name>/<member> (ephemeral), …/ready",
    .summary   = "Curator DistributedDoubleBarrier: members' ephemeral nodes; the memberQty-th creates ready and all enter; leaving, each deletes its node and waits for the highest to go (seed 000 §4.6.6)",
    .flaw      = "memberQty is a threshold: extra members enter too; a member that never leaves holds every other in leave() until its session ends",
    .props     = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .invariant = "nobody enters before memberQty have, nobody leaves before all have",
    .ceiling   = "sync_curator_double_barrier",
    .bench     = NULL,
    .bench_check = "",
    .ops       = dbl_ops,
    .reset     = dbl_reset,
};
