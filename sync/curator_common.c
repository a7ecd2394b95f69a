/* curator_common.c — what the Curator synchronizers share: their paths,
 * protected sequential nodes, and Curator's LockInternals.
 *
 * Version followed: Apache Curator 5.4.0, Debian bookworm's
 * libcurator-recipes-java, which tests/CuratorSync.java is built against.
 *
 * Paths. Every synchronizer of ?name=N lives under /locklab/sync/<primitive>/N
 * (the shared count at /locklab/sync/shared-count/N and so on): give the
 * same path to the Java recipe's constructor to join it.
 *
 * Protected nodes (CreateBuilderImpl.withProtection()): a sequential node
 * is named _c_<uuid>-<base><10-digit sequence>, with a fresh uuid per
 * attempt, and missing parents are created as CONTAINER nodes (PERSISTENT
 * for a semaphore's leases, as Curator's creatingParentsIfNeeded()). After
 * a connection loss the create may or may not have happened; the node is
 * looked for by its _c_<uuid> prefix before creating again, so nothing is
 * orphaned and nothing is taken twice.
 *
 * LockInternals. A lock is a directory of protected EPHEMERAL_SEQUENTIAL
 * nodes sorted by their sequence (the text after the lock name: "lock-",
 * or "__READ__"/"__WRIT__" in a read-write lock, so readers and writers
 * queue in one line). The driver decides from the sorted list whether our
 * node holds the lock and, if not, which node to watch:
 *   mutex, write: ours is first; else watch the node just before ours;
 *   read: no "__WRIT__" node before ours (or our own write lock held:
 *         the writer may read); else watch the first write node.
 * The watch is a getData() watch; a NONODE answer means that node is gone
 * already and the list is read again at once. Giving up (the deadline, a
 * lost session) deletes our node, so a waiter that leaves blocks nobody.
 */
#include "sync_private.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void curator_path(char *buf, int len, const char *dir, const char *name)
{
    snprintf(buf, (size_t)len, "%s/%s/%s", CURATOR_ROOT, dir, name);
}

/* After a lost create: is a child of parent named prefix*? */
static int find_prefixed(struct lock_ctx *ctx, struct zk_conn *c, const char *parent,
                         const char *prefix, char *node, int len)
{
    struct String_vector kids;
    int zrc, i, found = 0;

    zrc = zk_children(ctx, c, parent, &kids);
    if (zrc != ZOK)
        return 0;
    for (i = 0; i < kids.count && !found; i++)
        if (strncmp(kids.data[i], prefix, strlen(prefix)) == 0) {
            zk_join(node, len, parent, kids.data[i]);
            found = 1;
        }
    deallocate_String_vector(&kids);
    return found;
}

int curator_create_protected(struct lock_ctx *ctx, struct zk_conn *c, const char *parent,
                             const char *base, int parent_mode, char *node, int len)
{
    char uuid[37], prefix[48], path[ZK_PATH_MAX];
    int zrc = ZOK, tries, rc;

    uuid4(uuid);
    snprintf(prefix, sizeof prefix, "_c_%s-", uuid);
    snprintf(path, sizeof path, "%s/%s%s", parent, prefix, base);
    for (tries = 0; tries < 10; tries++) {
        zrc = zk_create(ctx, c, path, NULL, ZOO_EPHEMERAL_SEQUENTIAL, node, len);
        if (zrc == ZOK)
            return LL_OK;
        node[0] = '\0';
        if (zrc == ZNONODE) {
            if ((rc = zk_ensure_path(ctx, c, parent, parent_mode)) != LL_OK)
                return rc;
            continue;
        }
        if (!zk_retryable(zrc))
            break;
        if (zk_await(ctx, c, ctx->deadline_ms) != LL_OK) {
            zk_forget_create(c, parent, prefix);
            return ctx->err;
        }
        if (find_prefixed(ctx, c, parent, prefix, node, len))
            return LL_OK;
    }
    return zk_fail(ctx, zrc, "create", path);
}

/* ---------------------------------------------------------------- LockInternals */

/* The text a child is sorted by: after the last occurrence of its lock name
 * (StandardLockInternalsDriver.fixForSorting; the read-write lock's driver
 * applies it for both of its names). */
static const char *after_last(const char *s, const char *marker)
{
    const char *p = s, *last = NULL;

    while ((p = strstr(p, marker)) != NULL)
        last = p++;
    return last ? last + strlen(marker) : s;
}

static const char *sort_key(const char *name)
{
    const char *k = after_last(name, "lock-");

    if (k != name)
        return k;
    return after_last(after_last(name, "__READ__"), "__WRIT__");
}

static int by_sequence(const void *x, const void *y)
{
    return strcmp(sort_key(*(char *const *)x), sort_key(*(char *const *)y));
}

/* Does our node (me) hold the lock in the sorted list? If not, the node to
 * watch into pred. -1 when our node is not there at all. */
static int holds(const struct String_vector *kids, const char *me, enum curator_driver d,
                 const char *own_write, char *pred, int len)
{
    int i, first_write = -1;

    for (i = 0; i < kids->count; i++) {
        const char *k = kids->data[i];
        if (strcmp(k, me) == 0)
            break;
        if (d == CURATOR_READ && first_write < 0 && strstr(k, "__WRIT__"))
            first_write = i;
    }
    if (i == kids->count)
        return -1;
    if (d != CURATOR_READ) {
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

int curator_lock(struct lock_ctx *ctx, struct zk_conn *c, const char *base,
                 enum curator_driver d, const char *own_write, char *node, int len)
{
    static const char *const names[] = { "lock-", "__WRIT__", "__READ__" };
    struct String_vector kids;
    char pred[ZK_PATH_MAX / 2], path[ZK_PATH_MAX];
    struct sync_saved_error e;
    int zrc, rc, got;

    if ((rc = curator_create_protected(ctx, c, base, names[d], ZOO_CONTAINER, node, len)) != LL_OK)
        return rc;
    for (;;) {
        if (lock_time_left(ctx) <= 0) {
            rc = lock_timeout(ctx);
            break;
        }
        zrc = zk_children(ctx, c, base, &kids);
        if (zk_retryable(zrc)) {
            if ((rc = zk_await(ctx, c, ctx->deadline_ms)) != LL_OK)
                break;
            continue;
        }
        if (zrc != ZOK) {
            rc = zk_fail(ctx, zrc, "getChildren", base);
            break;
        }
        qsort(kids.data, (size_t)kids.count, sizeof kids.data[0], by_sequence);
        got = holds(&kids, zk_basename(node), d, own_write, pred, sizeof pred);
        deallocate_String_vector(&kids);
        if (got < 0) {
            rc = lock_error(ctx, LL_UNAVAILABLE, zk_backend(), "our lock node %s is gone "
                            "(session expired, or a reset)", node);
            break;
        }
        if (got)
            return LL_OK;
        zk_join(path, sizeof path, base, pred);
        if ((rc = zk_wait_gone(ctx, c, path, 1)) != LL_OK)
            break;
    }
    sync_save_error(ctx, &e);
    zk_delete_ours(ctx, c, node, NULL);
    sync_restore_error(ctx, &e);
    node[0] = '\0';
    return rc;
}

int curator_unlock(struct lock_ctx *ctx, struct zk_conn *c, const char *node)
{
    return node[0] ? zk_delete_ours(ctx, c, node, NULL) : LL_OK;
}

int curator_reset(struct lock_ctx *ctx, const char *dir, const char *name)
{
    char path[ZK_PATH_MAX];

    curator_path(path, sizeof path, dir, name);
    return zk_reset_tree(ctx, path, 1);
}
