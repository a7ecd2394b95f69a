/* curator_atomic_long.c — Curator's DistributedAtomicLong (seed 000
 * §4.6.7) on /locklab/sync/atomic-long/<name>, promoted to the mutex
 * /locklab/sync/atomic-long-lock/<name>: in Java,
 *   new DistributedAtomicLong(client, "/locklab/sync/atomic-long/N",
 *       new RetryNTimes(3, 1), PromotedToLock.builder()
 *           .lockPath("/locklab/sync/atomic-long-lock/N").build())
 * increments the same counter without losing one of ours, or we of its.
 *
 * The value is the node's data, an 8-byte big-endian long; no node is 0.
 * One try (DistributedAtomicValue.tryOnce): getData with its version (or
 * NONODE: 0, create); the new value; create (parents as containers), or
 * setData at the version read. NODEEXISTS or BADVERSION: someone else was
 * first, the try failed. add(delta) first tries optimistically, up to 1 + 3
 * times (RetryNTimes(3, 1 ms)); then, promoted, takes the InterProcessMutex
 * on the lock path and tries until it succeeds or the deadline passes,
 * holding it. The callers of one instance take their turns at this in a
 * local queue (sync_local_lock()), so that they do not spend their tries
 * beating each other. The answer is Curator's AtomicValue: succeeded, preValue,
 * postValue, and the tries of each kind. Values are distinct because every
 * write is conditional on the version it read, mutex or not.
 *
 * A sum past a long's range is refused (400, nothing written): Java's
 * long arithmetic would wrap a value a Java client stored near the limit
 * round to the other end, and C's signed overflow is undefined.
 */
#include "sync_private.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <limits.h>
#include <string.h>

#define OPTIMISTIC_RETRIES 3
#define OPTIMISTIC_SLEEP_US 1000

static void encode(long long v, char out[8])
{
    uint64_t u = (uint64_t)v;
    int i;

    for (i = 7; i >= 0; i--, u >>= 8)
        out[i] = (char)(u & 0xff);
}

static long long decode(const char *b, int len)
{
    uint64_t u = 0;
    int i;

    if (len < 8)
        return 0;
    for (i = 0; i < 8; i++)
        u = u << 8 | (unsigned char)b[i];
    return (long long)u;
}

struct atomic {
    char path[ZK_PATH_MAX], lock[ZK_PATH_MAX];
    long long pre, post;
    int optimistic, promoted;
};

/* pre + delta into *sum: 0, or -1 when it would pass a long's range. */
static int add_checked(long long pre, long long delta, long long *sum)
{
    if ((delta > 0 && pre > LLONG_MAX - delta) || (delta < 0 && pre < LLONG_MIN - delta))
        return -1;
    *sum = pre + delta;
    return 0;
}

/* LL_OK with *done = 1 when written, 0 when another writer was first. */
static int try_once(struct lock_ctx *ctx, struct zk_conn *c, struct atomic *at,
                    long long delta, int set, int *done)
{
    char buf[16], parent[ZK_PATH_MAX];
    int len = sizeof buf, zrc, rc, create = 0;
    struct Stat st;

    *done = 0;
    zrc = zk_get(ctx, c, at->path, 0, buf, &len, &st);
    if (zrc == ZNONODE)
        create = 1, at->pre = 0;
    else if (zrc == ZOK)
        at->pre = decode(buf, len);
    else
        return zk_fail(ctx, zrc, "getData", at->path);
    if (set)
        at->post = delta;
    else if (add_checked(at->pre, delta, &at->post) != 0)
        return lock_error(ctx, LL_BADREQ, NULL, "%s holds %lld: adding %lld would pass a "
                          "long's range; nothing written", at->path, at->pre, delta);
    encode(at->post, buf);
    if (create) {
        zrc = zk_create_bin(ctx, c, at->path, buf, 8, 0, NULL, 0);
        if (zrc == ZNONODE) {
            strlcopy(parent, at->path, sizeof parent);
            *strrchr(parent, '/') = '\0';
            if ((rc = zk_ensure_path(ctx, c, parent, ZOO_CONTAINER)) != LL_OK)
                return rc;
            zrc = zk_create_bin(ctx, c, at->path, buf, 8, 0, NULL, 0);
        }
    } else {
        zrc = zk_set(ctx, c, at->path, buf, 8, st.version, &st);
    }
    if (zrc == ZOK)
        *done = 1;
    else if (zrc != ZNODEEXISTS && zrc != ZBADVERSION)
        return zk_fail(ctx, zrc, create ? "create" : "setData", at->path);
    return LL_OK;
}

/* add(delta), or forceSet-like trySet when set = 1. */
static int change(struct lock_ctx *ctx, const struct sync_args *a, json_t *out,
                  long long delta, int set)
{
    char node[ZK_PATH_MAX];
    struct lock_saved_error e;
    struct atomic at;
    struct zk_conn *c;
    void *local;
    int rc, done = 0;

    memset(&at, 0, sizeof at);
    curator_path(at.path, sizeof at.path, "atomic-long", a->name);
    curator_path(at.lock, sizeof at.lock, "atomic-long-lock", a->name);
    if ((rc = sync_local_lock(ctx, at.path, &local)) != LL_OK)
        return rc;
    if ((rc = zk_lock_session(ctx, &c)) != LL_OK) {
        sync_local_unlock(local);
        return rc;
    }
    while (rc == LL_OK && !done && at.optimistic <= OPTIMISTIC_RETRIES) {
        if (at.optimistic++ > 0)
            sleep_us(OPTIMISTIC_SLEEP_US);
        rc = try_once(ctx, c, &at, delta, set, &done);
    }
    if (rc == LL_OK && !done) {
        rc = zk_curator_lock(ctx, c, ZK_MUTEX, at.lock, NULL, node, sizeof node);
        while (rc == LL_OK && !done) {
            at.promoted++;
            if ((rc = try_once(ctx, c, &at, delta, set, &done)) == LL_OK && !done &&
                lock_time_left(ctx) <= 0)
                rc = lock_timeout(ctx);
        }
        lock_error_save(ctx, &e);
        zk_queue_unlock(ctx, c, node);
        lock_error_restore(ctx, &e);
    }
    zk_put(c);
    sync_local_unlock(local);
    json_object_set_new(out, "succeeded", json_boolean(done));
    json_object_set_new(out, "optimistic_tries", json_integer(at.optimistic));
    json_object_set_new(out, "promoted_tries", json_integer(at.promoted));
    if (done) {
        json_object_set_new(out, "preValue", json_integer(at.pre));
        json_object_set_new(out, "postValue", json_integer(at.post));
    }
    return rc;
}

static int op_increment(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return change(ctx, a, out, 1, 0);
}

static int op_add(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    if (a->delta == LLONG_MIN)
        return lock_error(ctx, LL_BADREQ, NULL, "add needs ?delta=");
    return change(ctx, a, out, a->delta, 0);
}

static int op_try_set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    if (a->value == LLONG_MIN)
        return lock_error(ctx, LL_BADREQ, NULL, "try-set needs ?value=");
    return change(ctx, a, out, a->value, 1);
}

static int op_get(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX], buf[16];
    int len = sizeof buf, rc, zrc;
    struct zk_conn *c;
    struct Stat st;

    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "atomic-long", a->name);
    zrc = zk_get(ctx, c, path, 0, buf, &len, &st);
    if (zrc == ZOK || zrc == ZNONODE) {
        json_object_set_new(out, "succeeded", json_true());
        json_object_set_new(out, "postValue", json_integer(zrc == ZOK ? decode(buf, len) : 0));
    } else {
        rc = zk_fail(ctx, zrc, "getData", path);
    }
    zk_put(c);
    return rc;
}

static int atomic_reset(struct lock_ctx *ctx, const char *name)
{
    int rc = curator_reset(ctx, "atomic-long", name);
    return rc != LL_OK ? rc : curator_reset(ctx, "atomic-long-lock", name);
}

static const struct sync_op atomic_ops[] = {
    { "increment", "wait_ms", "increment(): optimistic, then promoted to the mutex",
      op_increment },
    { "add", "wait_ms delta", "add(delta)", op_add },
    { "try-set", "wait_ms value", "trySet(value), through the same optimistic/mutex path",
      op_try_set },
    { "get", "", "get()", op_get },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_atomic_long = {
    .primitive = "atomic-long",
    .backend   = "curator",
    .library   = "Curator DistributedAtomicLong",
    .where     = "/locklab/sync/atomic-long/<name> (data: 8-byte big-endian long), mutex /locklab/sync/atomic-long-lock/<name>",
    .summary   = "Curator DistributedAtomicLong: setData at the version read, retried optimistically, then under an InterProcessMutex (PromotedToLock) (seed 000 §4.6.7)",
    .flaw      = "under contention most tries fail and the mutex serialises everything; a caller must check succeeded",
    .props     = LOCK_DISTRIBUTED | LOCK_EXACT,
    .invariant = "increments never lost: every postValue distinct, the final value their count",
    .ceiling   = "sync_curator_atomic_long",
    .bench     = "increment",
    .bench_check = "distinct:postValue",
    .ops       = atomic_ops,
    .reset     = atomic_reset,
};
