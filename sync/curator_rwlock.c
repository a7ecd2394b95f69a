/* curator_rwlock.c — Curator's InterProcessReadWriteLock (seed 000
 * §4.6.3) on /locklab/sync/rwlock/<name>, the path to give
 * `new InterProcessReadWriteLock(client, path)` in Java.
 *
 * Readers and writers queue in one directory: protected ephemeral
 * sequential nodes _c_<uuid>-__READ__<seq> and _c_<uuid>-__WRIT__<seq>,
 * sorted by sequence (Curator's LockInternals, locks/zk_queue.c). A writer holds the lock when its
 * node is first of all; a reader when no write node comes before its own.
 * So a writer waits for every reader before it, and a reader for every
 * writer before it — arrival order, no starvation either way.
 *
 * The write lock may take the read lock (the read driver grants a reader
 * whose thread owns the write lock): write-read takes write, then read,
 * then releases write — a downgrade. The reverse waits: read-write takes
 * read, then waits for write, whose node queues behind our own read node
 * for ever; at the deadline: 503, as the seeds say ("读锁却不能进入写锁").
 * Holds last ?hold_ms= and end with the release: there are no leases.
 */
#include "sync_private.h"
#include "../core/util.h"

#include <string.h>

static int take(struct lock_ctx *ctx, const struct sync_args *a, json_t *out, int write)
{
    char path[ZK_PATH_MAX], node[ZK_PATH_MAX];
    struct zk_conn *c;
    int rc;

    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "rwlock", a->name);
    json_object_set_new(out, "lock", json_string(write ? "write" : "read"));
    rc = zk_curator_lock(ctx, c, write ? ZK_WRITE : ZK_READ, path, NULL, node, sizeof node);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "%s lock of %s not obtained within %d ms",
                   write ? "write" : "read", path, ctx->wait_ms);
    if (rc == LL_OK) {
        json_object_set_new(out, "node", json_string(zk_basename(node)));
        sync_granted(a, out);
        sync_released(out);
        rc = zk_queue_unlock(ctx, c, node);
    }
    zk_put(c);
    return rc;
}

static int op_read(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, 0);
}

static int op_write(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, 1);
}

/* The comparison's load: a writer one time in four, else a reader. */
static int op_mixed(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, rand64() % 4 == 0);
}

/* first, then second; write_first says which is the write lock. */
static int both(struct lock_ctx *ctx, const struct sync_args *a, json_t *out, int write_first)
{
    char path[ZK_PATH_MAX], n1[ZK_PATH_MAX], n2[ZK_PATH_MAX];
    struct lock_saved_error e;
    struct zk_conn *c;
    int rc;

    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "rwlock", a->name);
    rc = zk_curator_lock(ctx, c, write_first ? ZK_WRITE : ZK_READ, path, NULL, n1, sizeof n1);
    if (rc != LL_OK) {
        zk_put(c);
        return rc;
    }
    sync_mark(out, write_first ? "write_granted_at_ms" : "read_granted_at_ms");
    rc = zk_curator_lock(ctx, c, write_first ? ZK_READ : ZK_WRITE, path,
                         write_first ? n1 : NULL, n2, sizeof n2);
    json_object_set_new(out, write_first ? "read_granted_while_writing"
                                         : "write_granted_while_reading",
                        json_boolean(rc == LL_OK));
    if (rc == LL_TIMEOUT && !write_first)
        lock_error(ctx, LL_TIMEOUT, NULL, "a read lock cannot be upgraded: the write node "
                   "queues behind this reader's own (%d ms)", ctx->wait_ms);
    if (rc == LL_OK && write_first) {
        zk_queue_unlock(ctx, c, n1);          /* downgraded: only the read lock now */
        n1[0] = '\0';
        sync_mark(out, "write_released_at_ms");
        sync_granted(a, out);
    }
    sync_released(out);
    lock_error_save(ctx, &e);
    if (rc == LL_OK)
        zk_queue_unlock(ctx, c, n2);
    zk_queue_unlock(ctx, c, n1);
    lock_error_restore(ctx, &e);
    zk_put(c);
    return rc;
}

static int op_write_read(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return both(ctx, a, out, 1);
}

static int op_read_write(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return both(ctx, a, out, 0);
}

static int rw_reset(struct lock_ctx *ctx, const char *name)
{
    return curator_reset(ctx, "rwlock", name);
}

static const struct sync_op rw_ops[] = {
    { "read", "wait_ms hold_ms", "readLock().acquire(wait); hold_ms; release()", op_read },
    { "write", "wait_ms hold_ms", "writeLock().acquire(wait); hold_ms; release()", op_write },
    { "mixed", "wait_ms hold_ms", "write one time in four, else read (bench/compare's load)",
      op_mixed },
    { "write-read", "wait_ms hold_ms",
      "write, then read (the writer may), then release the write: a downgrade", op_write_read },
    { "read-write", "wait_ms", "read, then wait for write: no upgrade, 503 at the deadline",
      op_read_write },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_rwlock = {
    .primitive = "rwlock",
    .backend   = "curator",
    .library   = "Curator InterProcessReadWriteLock",
    .where     = "/locklab/sync/rwlock/<name>/_c_<uuid>-__READ__<seq>, …/_c_<uuid>-__WRIT__<seq>",
    .summary   = "Curator InterProcessReadWriteLock: __READ__ and __WRIT__ nodes in one queue; a writer first of all, a reader behind no writer; the writer may also read (seed 000 §4.6.3)",
    .flaw      = "held as long as the session: a holder paused past the session timeout loses it unknowingly; no upgrade from read to write",
    .props     = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_FAIR | LOCK_EXACT,
    .invariant = "no reader alongside a writer, no two writers",
    .ceiling   = "sync_curator_rwlock",
    .bench     = "mixed",
    .bench_check = "rw",
    .ops       = rw_ops,
    .reset     = rw_reset,
};
