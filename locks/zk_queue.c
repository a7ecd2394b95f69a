/* zk_queue.c — the fair queue of EPHEMERAL_SEQUENTIAL nodes: Curator's
 * LockInternals, written once. It is the lock of zk-sequential-poll,
 * zk-sequential and curator (each a table of the methods at the end, by
 * name, with its own struct zk_queue as the table's conf), and the
 * InterProcessMutex and read-write lock that the Curator synchronizers of
 * sync/ are built from (zk_curator_lock(): the multilock, the semaphore's
 * locks/ mutex and so the semaphore-mutex, DistributedAtomicLong's
 * promoted lock).
 *
 * Every contender creates an ephemeral sequential child of the lock's
 * directory; ZooKeeper appends a ten-digit sequence number, so the
 * children sort into arrival order (seed 000 §4.4). A driver decides from
 * the sorted list whether our node holds the lock and, if not, which node
 * to wait for (Curator's StandardLockInternalsDriver and the read-write
 * lock's two):
 *   mutex, write: ours is first; else the node just before ours;
 *   read:         no "__WRIT__" node before ours (or our own write lock
 *                 held: the writer may read); else the first write node.
 * A contender that does not hold either re-lists after --retry-ms (ZK_POLL,
 * §4.4.1) or watches only that node (§4.4.2: when a holder leaves, exactly
 * one waiter wakes — no herd), with exists() (zk-sequential) or getData()
 * (Curator, which leaves no watch behind on a node already gone). When the
 * watched node is already gone at the time the watch is set, ZooKeeper
 * answers NONODE and we re-list at once: seed 003's bug was to keep
 * waiting for an event that could never come. Re-listing, not "I am next",
 * is right because the predecessor may have left the queue (its request
 * timed out) while an earlier node still holds the lock.
 *
 * Names. A create that fails with a connection loss may still have
 * happened, and a sequential node's name is known only from the answer.
 * ZooKeeper's C recipe (zoo_lock.c) and Curator's protected mode both put
 * something of the creator into the name and look for it after the loss:
 *   - ours:    x-<session id, 16 hex>-<slot>.<attempt>-<sequence>, sorted
 *     by the text after the last '-';
 *   - Curator: _c_<uuid>-<lock name><sequence>, a fresh uuid per attempt
 *     (lock name "lock-", or "__READ__"/"__WRIT__" in a read-write lock),
 *     sorted by the text after the lock name
 *     (StandardLockInternalsDriver.fixForSorting), parents made as
 *     CONTAINER nodes, which the server reaps when empty — so Curator's
 *     Java clients and we queue in one line on the same path.
 * A found node is ours; not found means the create never happened, so we
 * create again (Curator's CreateBuilderImpl does the same). Either way the
 * session is the one that was asked, so nodes of a dead session — gone
 * with it — are never taken for ours. If the session does not come back in
 * time, the create is forgotten (zk_hold.c): the next user of the session
 * deletes it.
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

/* Curator's, for the synchronizers: their directories are their own. */
static const struct zk_queue curator_internals = {
    .root = NULL, .wait = ZK_WATCH_DATA, .curator = 1, .reentrant = 0,
};

/* ---------------------------------------------------------------- order */

/* The text after the last `marker` in name; the whole name when none. */
static const char *after_last(const char *name, const char *marker)
{
    const char *p = name, *last = NULL;
    size_t n = strlen(marker);

    while ((p = strstr(p, marker)) != NULL) {
        last = p;
        p += n;
    }
    return last ? last + n : name;
}

/* Curator's sort key: after "lock-", or after the read-write lock's names
 * (its driver applies fixForSorting for both). */
static const char *curator_seq(const char *name)
{
    const char *k = after_last(name, "lock-");

    if (k != name)
        return k;
    return after_last(after_last(name, "__READ__"), "__WRIT__");
}

static int by_curator_seq(const void *a, const void *b)
{
    return strcmp(curator_seq(*(char *const *)a), curator_seq(*(char *const *)b));
}

static int by_seq(const void *a, const void *b)
{
    return strcmp(after_last(*(char *const *)a, "-"), after_last(*(char *const *)b, "-"));
}

/* ---------------------------------------------------------------- creating */

void zk_protected_name(char *buf, int len, const char *name)
{
    char uuid[37];

    uuid4(uuid);
    snprintf(buf, (size_t)len, "_c_%s-%s", uuid, name);
}

/* After a connection loss: is one of dir's children named prefix*? The
 * session may have moved to another server of the ensemble, a follower
 * that has not yet applied our create: sync first, or we would create a
 * second node behind our first, which would stay at the head of the
 * queue, an orphan, as long as the session lives. */
static int find_ours(struct lock_ctx *ctx, struct zk_conn *c, const char *dir,
                     const char *prefix, char *node, int len, int *found)
{
    struct String_vector kids;
    size_t n = strlen(prefix);
    int zrc, i;

    *found = 0;
    zrc = zk_sync(ctx, c, dir);
    if (zrc != ZOK && zrc != ZNONODE)
        return zk_fail(ctx, zrc, "sync", dir);
    zrc = zk_children(ctx, c, dir, &kids);
    if (zrc == ZNONODE)
        return LL_OK;
    if (zrc != ZOK)
        return zk_fail(ctx, zrc, "getChildren", dir);
    for (i = 0; i < kids.count && !*found; i++)
        if (strncmp(kids.data[i], prefix, n) == 0) {
            zk_join(node, len, dir, kids.data[i]);
            *found = 1;
        }
    deallocate_String_vector(&kids);
    return LL_OK;
}

int zk_create_sequential(struct lock_ctx *ctx, struct zk_conn *c, const char *dir,
                         const char *prefix, const char *data, int parent_mode,
                         char *node, int len)
{
    char path[ZK_PATH_MAX];
    int zrc = ZOK, rc, tries, found;

    zk_join(path, sizeof path, dir, prefix);
    for (tries = 0; tries < 10; tries++) {
        zrc = zk_create(ctx, c, path, data, ZOO_EPHEMERAL_SEQUENTIAL, node, len);
        if (zrc == ZOK)
            return LL_OK;
        node[0] = '\0';
        if (zrc == ZNONODE) {       /* first use, or a container reaped */
            if ((rc = zk_ensure_path(ctx, c, dir, parent_mode)) != LL_OK)
                return rc;
            continue;
        }
        if (!zk_retryable(zrc))
            break;
        if (zk_await(ctx, c, ctx->deadline_ms) != LL_OK ||
            find_ours(ctx, c, dir, prefix, node, len, &found) != LL_OK) {
            zk_forget_create(c, dir, prefix);
            return ctx->err;
        }
        if (found)
            return LL_OK;
    }
    return zk_fail(ctx, zrc, "create", path);
}

/* ---------------------------------------------------------------- waiting */

/* Does our node (me) hold the lock in the sorted list? If not, the node to
 * wait for into pred. -1 when our node is not there at all. */
static int holds(const struct String_vector *kids, const char *me, enum zk_driver d,
                 const char *own_write, char *pred, int len)
{
    int i, first_write = -1;

    for (i = 0; i < kids->count; i++) {
        const char *k = kids->data[i];
        if (strcmp(k, me) == 0)
            break;
        if (d == ZK_READ && first_write < 0 && strstr(k, "__WRIT__"))
            first_write = i;
    }
    if (i == kids->count)
        return -1;
    if (d != ZK_READ) {
        if (i == 0)
            return 1;
        snprintf(pred, (size_t)len, "%s", kids->data[i - 1]);
        return 0;
    }
    if (own_write || first_write < 0)
        return 1;
    snprintf(pred, (size_t)len, "%s", kids->data[first_write]);
    return 0;
}

static int wait_turn(struct lock_ctx *ctx, struct zk_conn *c, const struct zk_queue *q,
                     enum zk_driver d, const char *dir, const char *own_write,
                     const char *node)
{
    struct String_vector kids;
    char pred[ZK_PATH_MAX / 2], path[ZK_PATH_MAX];
    int zrc, rc, got;

    for (;;) {
        if (lock_time_left(ctx) <= 0)
            return lock_timeout(ctx);
        zrc = zk_children(ctx, c, dir, &kids);
        if (zk_retryable(zrc)) {
            if ((rc = zk_await(ctx, c, ctx->deadline_ms)) != LL_OK)
                return rc;
            continue;
        }
        if (zrc != ZOK)
            return zk_fail(ctx, zrc, "getChildren", dir);
        if (kids.count > 1)     /* none (our node gone): data may be NULL */
            qsort(kids.data, (size_t)kids.count, sizeof kids.data[0],
                  q->curator ? by_curator_seq : by_seq);
        got = holds(&kids, zk_basename(node), d, own_write, pred, sizeof pred);
        deallocate_String_vector(&kids);
        if (got < 0)
            return lock_error(ctx, LL_UNAVAILABLE, zk_backend(),
                              "our lock node %s is gone (session expired, or a reset)", node);
        if (got)
            return LL_OK;
        if (q->wait == ZK_POLL) {
            rc = lock_backoff(ctx);
        } else {
            zk_join(path, sizeof path, dir, pred);
            rc = zk_wait_gone(ctx, c, path, q->wait == ZK_WATCH_DATA);
        }
        if (rc != LL_OK)
            return rc;
    }
}

/* ---------------------------------------------------------------- locking */

int zk_queue_lock(struct lock_ctx *ctx, struct zk_conn *c, const struct zk_queue *q,
                  enum zk_driver d, const char *dir, const char *own_write,
                  const char *data, unsigned attempt, char *node, int len)
{
    static const char *const names[] = { "lock-", "__WRIT__", "__READ__" };
    char prefix[96];
    int rc;

    node[0] = '\0';
    if (q->curator)
        zk_protected_name(prefix, sizeof prefix, names[d]);
    else
        snprintf(prefix, sizeof prefix, "x-%016llx-%d.%u-",
                 (unsigned long long)zk_session_id(c), ctx->slot, attempt);
    rc = zk_create_sequential(ctx, c, dir, prefix, data,
                              q->curator ? ZOO_CONTAINER : ZOO_PERSISTENT, node, len);
    if (rc == LL_OK)
        rc = wait_turn(ctx, c, q, d, dir, own_write, node);
    if (rc != LL_OK && node[0]) {   /* leave the queue; keep the first error */
        zk_delete_keeping(ctx, c, node, NULL);
        node[0] = '\0';
    }
    return rc;
}

int zk_queue_unlock(struct lock_ctx *ctx, struct zk_conn *c, const char *node)
{
    return node[0] ? zk_delete_ours(ctx, c, node, NULL) : LL_OK;
}

int zk_curator_lock(struct lock_ctx *ctx, struct zk_conn *c, enum zk_driver d,
                    const char *dir, const char *own_write, char *node, int len)
{
    return zk_queue_lock(ctx, c, &curator_internals, d, dir, own_write, NULL, 0, node, len);
}

/* ---------------------------------------------------------------- strategies */

int zk_queue_acquire(struct lock_ctx *ctx, const char *key)
{
    const struct zk_queue *q = ctx->ops->conf;
    struct zk_hold *h = zk_hold_find(ctx, ctx->ops, key);
    char dir[ZK_PATH_MAX], node[ZK_PATH_MAX], token[ZK_TOKEN_MAX];
    struct zk_conn *c;
    unsigned attempt;
    int rc;

    if (h && q->reentrant) {        /* the seeds' ThreadLocal count (§4.5) */
        h->depth++;
        return LL_OK;
    }
    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    zk_product_path(dir, sizeof dir, q->root, key);
    attempt = zk_token(ctx, token, sizeof token);
    rc = zk_queue_lock(ctx, c, q, ZK_MUTEX, dir, NULL, token, attempt, node, sizeof node);
    if (rc == LL_OK)
        return zk_hold_add(ctx, ctx->ops, key, c, node, token);
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
