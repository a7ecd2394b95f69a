/* zk_queue.c — the fair queue of EPHEMERAL_SEQUENTIAL nodes behind
 * zk-sequential-poll, zk-sequential and curator. Each of them is a table of
 * the methods here, by name, with its own struct zk_queue as the table's
 * conf: the root, how to wait and how to name the nodes.
 *
 * Every contender creates an ephemeral sequential child of
 * <root>/<product>; ZooKeeper appends a ten-digit sequence number, so the
 * children sort into arrival order and the smallest one holds the lock
 * (seed 000 §4.4). A contender that is not first either re-lists after
 * --retry-ms (ZK_POLL, §4.4.1) or watches only its immediate predecessor
 * (§4.4.2: when a holder leaves, exactly one waiter wakes — no herd). When
 * the watched node is already gone at the time the watch is set, ZooKeeper
 * answers NONODE and we re-list at once: seed 003's bug was to keep
 * waiting for an event that could never come. Re-listing, not "I am next",
 * is right because the predecessor may have left the queue (its request
 * timed out) while an earlier node still holds the lock.
 *
 * Names. A create that fails with a connection loss may still have
 * happened, and a sequential node's name is known only from the answer.
 * ZooKeeper's C recipe (zoo_lock.c) and Curator's protected mode both put
 * something of the creator into the name and look for it after the loss:
 *   - ours:    x-<session id, 16 hex>-<slot>.<attempt>-<sequence>
 *   - curator: _c_<uuid>-lock-<sequence>, a fresh uuid per attempt,
 *     ordered by the text after the last "lock-" (Curator's
 *     StandardLockInternalsDriver.fixForSorting) — so Curator clients and
 *     we queue in one line on the same path.
 * A found node is ours; not found means the create never happened, so we
 * create again (Curator's CreateBuilderImpl does the same). Either way the
 * session is the one that was asked, so nodes of a dead session — gone
 * with it — are never taken for ours.
 *
 * Any failure after the create (deadline, session lost) deletes our node
 * before returning, so a waiter that gives up never blocks the queue.
 */
#include "zk_private.h"
#include "../core/config.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct queue_pos {
    char parent[ZK_PATH_MAX];     /* <root>/<product>                  */
    char name[96];                /* our name before the sequence      */
    char node[ZK_PATH_MAX];       /* our node, once created            */
    char token[ZK_TOKEN_MAX];     /* the data written into it          */
};

/* ---------------------------------------------------------------- order */

/* The text the queue is sorted by: after the last "lock-" for Curator,
 * after the last '-' for ours; the whole name when there is none. */
static const char *seq_key(const char *name, const char *marker)
{
    const char *p = name, *last = NULL;
    size_t n = strlen(marker);

    while ((p = strstr(p, marker)) != NULL) {
        last = p;
        p += n;
    }
    return last ? last + n : name;
}

static int by_curator_seq(const void *a, const void *b)
{
    return strcmp(seq_key(*(char *const *)a, "lock-"), seq_key(*(char *const *)b, "lock-"));
}

static int by_seq(const void *a, const void *b)
{
    return strcmp(seq_key(*(char *const *)a, "-"), seq_key(*(char *const *)b, "-"));
}

/* ---------------------------------------------------------------- enqueue */

/* After a connection loss: is one of the children named pos->name*? */
static int find_ours(struct lock_ctx *ctx, struct zk_conn *c, struct queue_pos *pos, int *found)
{
    struct String_vector kids;
    size_t n = strlen(pos->name);
    int zrc, i;

    *found = 0;
    zrc = zk_children(ctx, c, pos->parent, &kids);
    if (zrc == ZNONODE)
        return LL_OK;
    if (zrc != ZOK)
        return zk_fail(ctx, zrc, "getChildren", pos->parent);
    for (i = 0; i < kids.count && !*found; i++)
        if (strncmp(kids.data[i], pos->name, n) == 0) {
            zk_join(pos->node, sizeof pos->node, pos->parent, kids.data[i]);
            *found = 1;
        }
    deallocate_String_vector(&kids);
    return LL_OK;
}

static int enqueue(struct lock_ctx *ctx, struct zk_conn *c, const struct zk_queue *q,
                   struct queue_pos *pos, unsigned attempt)
{
    char path[ZK_PATH_MAX];
    int zrc, rc, tries, found;

    if (q->curator) {
        char uuid[37];
        uuid4(uuid);
        snprintf(pos->name, sizeof pos->name, "_c_%s-lock-", uuid);
    } else {
        snprintf(pos->name, sizeof pos->name, "x-%016llx-%d.%u-",
                 (unsigned long long)zk_session_id(c), ctx->slot, attempt);
    }
    zk_join(path, sizeof path, pos->parent, pos->name);
    for (tries = 0; tries < 10; tries++) {
        zrc = zk_create(ctx, c, path, pos->token, ZOO_EPHEMERAL_SEQUENTIAL,
                        pos->node, sizeof pos->node);
        if (zrc == ZOK)
            return LL_OK;
        pos->node[0] = '\0';
        if (zrc == ZNONODE) {       /* first use, or Curator's container reaped */
            rc = zk_ensure_path(ctx, c, pos->parent, q->curator ? ZOO_CONTAINER : ZOO_PERSISTENT);
            if (rc != LL_OK)
                return rc;
            continue;
        }
        if (!zk_retryable(zrc))
            break;
        if (zk_await(ctx, c, ctx->deadline_ms) != LL_OK ||
            find_ours(ctx, c, pos, &found) != LL_OK) {
            zk_forget_create(c, pos->parent, pos->name);
            return ctx->err;
        }
        if (found)
            return LL_OK;
    }
    return zk_fail(ctx, zrc, "create", path);
}

/* ---------------------------------------------------------------- waiting */

static int wait_turn(struct lock_ctx *ctx, struct zk_conn *c, const struct zk_queue *q,
                     const struct queue_pos *pos)
{
    const char *me = zk_basename(pos->node);
    struct String_vector kids;
    char pred[ZK_PATH_MAX];
    int zrc, rc, i, idx;

    for (;;) {
        if (lock_time_left(ctx) <= 0)
            return lock_timeout(ctx);
        zrc = zk_children(ctx, c, pos->parent, &kids);
        if (zk_retryable(zrc)) {
            if ((rc = zk_await(ctx, c, ctx->deadline_ms)) != LL_OK)
                return rc;
            continue;
        }
        if (zrc != ZOK)
            return zk_fail(ctx, zrc, "getChildren", pos->parent);
        qsort(kids.data, (size_t)kids.count, sizeof kids.data[0],
              q->curator ? by_curator_seq : by_seq);
        for (idx = -1, i = 0; i < kids.count && idx < 0; i++)
            if (strcmp(kids.data[i], me) == 0)
                idx = i;
        if (idx > 0)
            zk_join(pred, sizeof pred, pos->parent, kids.data[idx - 1]);
        deallocate_String_vector(&kids);
        if (idx < 0)
            return lock_error(ctx, LL_UNAVAILABLE, zk_backend(),
                              "our lock node %s is gone (session expired, or a reset)",
                              pos->node);
        if (idx == 0)
            return LL_OK;
        if (q->wait == ZK_POLL)
            rc = lock_backoff(ctx);
        else
            rc = zk_wait_gone(ctx, c, pred, q->wait == ZK_WATCH_DATA);
        if (rc != LL_OK)
            return rc;
    }
}

/* ---------------------------------------------------------------- acquire */

int zk_queue_acquire(struct lock_ctx *ctx, const char *key)
{
    const struct zk_queue *q = ctx->ops->conf;
    struct zk_hold *h = zk_hold_find(ctx, ctx->ops, key);
    struct queue_pos pos;
    struct zk_conn *c;
    unsigned attempt;
    int rc;

    if (h && q->reentrant) {        /* the seeds' ThreadLocal count (§4.5) */
        h->depth++;
        return LL_OK;
    }
    if ((rc = zk_connect(ctx, &c)) != LL_OK)
        return rc;
    memset(&pos, 0, sizeof pos);
    zk_product_path(pos.parent, sizeof pos.parent, q->root, key);
    attempt = zk_token(ctx, pos.token, sizeof pos.token);
    rc = enqueue(ctx, c, q, &pos, attempt);
    if (rc == LL_OK)
        rc = wait_turn(ctx, c, q, &pos);
    if (rc == LL_OK)
        return zk_hold_add(ctx, ctx->ops, key, c, pos.node, pos.token);
    if (pos.node[0]) {              /* leave the queue; keep the first error */
        struct lock_ctx saved = *ctx;
        zk_delete_ours(ctx, c, pos.node, NULL);
        ctx->err = saved.err;
        ctx->backend = saved.backend;
        memcpy(ctx->errstr, saved.errstr, sizeof ctx->errstr);
    }
    zk_put(c);
    return rc;
}

int zk_queue_release(struct lock_ctx *ctx, const char *key)
{
    return zk_release(ctx, key, 0);
}

int zk_queue_reset(struct lock_ctx *ctx, const char *key)
{
    const struct zk_queue *q = ctx->ops->conf;
    char path[ZK_PATH_MAX];

    zk_product_path(path, sizeof path, q->root, key);
    return zk_reset_tree(ctx, path, 0);
}
