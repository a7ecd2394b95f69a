/* zk_ephemeral.c — one EPHEMERAL znode per product (seed 000 §4.3).
 *
 * Node: /locklab/ephemeral/<product>, data = our holder token
 * "<instance uuid>:<slot>:<attempt>". Acquire creates it; ZooKeeper lets
 * exactly one create win and answers NODEEXISTS to the others, who sleep a
 * jittered --retry-ms (lock_backoff) and try again — the seeds slept 200 ms
 * and recursed. Release deletes it. Being ephemeral, the node goes away
 * with the session of a holder that dies: no expiry to tune, no lease to
 * outlive (§4.2 "防死锁").
 *
 * After a connection loss the create may have happened or not: we read the
 * node back and take it as ours only if it carries our token and its
 * ephemeralOwner is our live session. A release retried over a connection
 * loss checks the same before it deletes, since the name is everybody's.
 *
 * What it gets wrong, as the seeds' own figure shows (seed 000 §4.3):
 * every waiter spins,
 * so a sale costs as many creates as there are retries, and whoever
 * happens to retry first after a release wins — no order, no fairness.
 * Not reentrant: a request that asks twice (?reentry=2) is refused with
 * 400 (parameter "reentry"), where the seeds' version would wait for
 * itself until its deadline.
 *
 * zk-herd (zk_herd.c) is the same lock with a watch in place of the spin:
 * its methods are these, by name, with its struct zk_ephemeral as conf.
 */
#include "zk_private.h"

#include <string.h>

static const struct zk_ephemeral spin = { "/locklab/ephemeral", 0 };

/* After a connection loss: did our create happen? */
static int eph_is_ours(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                       const char *token, int *ours)
{
    char buf[ZK_TOKEN_MAX];
    int len = sizeof buf - 1, zrc;
    struct Stat st;

    *ours = 0;
    zrc = zk_get(ctx, c, path, 0, buf, &len, &st);
    if (zrc == ZNONODE)
        return LL_OK;
    if (zrc != ZOK)
        return zk_fail(ctx, zrc, "getData", path);
    buf[len < 0 ? 0 : len] = '\0';
    *ours = strcmp(buf, token) == 0 && st.ephemeralOwner == zk_session_id(c);
    return LL_OK;
}

/* The create's outcome was hidden by a connection loss: find out. */
static int eph_after_loss(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                          const char *token, int *ours)
{
    int rc = zk_await(ctx, c, ctx->deadline_ms);

    if (rc == LL_OK)
        rc = eph_is_ours(ctx, c, path, token, ours);
    if (rc != LL_OK)
        zk_forget_node(c, path, token);     /* delete it later if it is there */
    return rc;
}

int zk_ephemeral_acquire(struct lock_ctx *ctx, const char *key)
{
    const struct zk_ephemeral *e = ctx->ops->conf;
    char path[ZK_PATH_MAX], token[ZK_TOKEN_MAX];
    struct zk_conn *c;
    int zrc, rc, ours;

    zk_product_path(path, sizeof path, e->root, key);
    zk_token(ctx, token, sizeof token);
    for (;;) {
        if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
            return rc;
        zrc = zk_create(ctx, c, path, token, ZOO_EPHEMERAL, NULL, 0);
        if (zrc == ZOK)
            return zk_hold_add(ctx, ctx->ops, key, c, path, token);
        if (zrc == ZNONODE) {                   /* first use: make the parent */
            rc = zk_ensure_path(ctx, c, e->root, ZOO_PERSISTENT);
            zk_put(c);
            if (rc != LL_OK)
                return rc;
            continue;
        }
        if (zk_retryable(zrc)) {
            rc = eph_after_loss(ctx, c, path, token, &ours);
            if (rc == LL_OK && ours)
                return zk_hold_add(ctx, ctx->ops, key, c, path, token);
            zk_put(c);
            if (rc != LL_OK)
                return rc;
            continue;
        }
        if (zrc != ZNODEEXISTS) {
            zk_put(c);
            return zk_fail(ctx, zrc, "create", path);
        }
        if (e->watch) {         /* somebody holds it: sleep until it is gone */
            rc = zk_wait_gone(ctx, c, path, 0);
            zk_put(c);
        } else {                /* somebody holds it: spin */
            zk_put(c);
            rc = lock_backoff(ctx);
        }
        if (rc != LL_OK)
            return rc;
    }
}

int zk_ephemeral_release(struct lock_ctx *ctx, const char *key)
{
    return zk_release(ctx, key, 1);
}

int zk_ephemeral_reset(struct lock_ctx *ctx, const char *key)
{
    const struct zk_ephemeral *e = ctx->ops->conf;
    char path[ZK_PATH_MAX];

    zk_product_path(path, sizeof path, e->root, key);
    return zk_reset_tree(ctx, path, 1);
}

const struct lock_ops lock_zk_ephemeral = {
    .name     = "zk-ephemeral",
    .family   = "zookeeper",
    .summary  = "one EPHEMERAL znode per product: create to lock, NODEEXISTS → sleep and retry, delete to unlock (seed 000 §4.3)",
    .flaw     = "every waiter spins on create (a ZooKeeper write per retry); no order, not reentrant",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_ZK_EXPIRE,
    .ceiling  = LOCK_CEIL_SERIAL_ZK,
    ZK_EPHEMERAL_METHODS(&spin),
};
