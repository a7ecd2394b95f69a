/* curator_shared_count.c — Curator's SharedCount (seed 000 §4.6.7) on
 * /locklab/sync/shared-count/<name>: the count is the node's data, a
 * 4-byte big-endian int, and its version is the node's data version.
 *   get:     SharedCount.start() creates the node with the seed (?count=,
 *            0 by default; parents as containers) unless it exists; then
 *            the count and its version (getVersionedValue()).
 *   set:     setCount(count): setData at any version.
 *   try-set: trySetCount(previous, count): setData at ?version=; a newer
 *            version answers succeeded:false with the count now there.
 * `new SharedCount(client, path, seed)` in Java reads and sets the same.
 */
#include "sync_private.h"

#include <string.h>
#include "../core/util.h"

static void encode(long long v, char out[4])
{
    uint32_t u = (uint32_t)(int32_t)v;
    out[0] = (char)(u >> 24);
    out[1] = (char)(u >> 16);
    out[2] = (char)(u >> 8);
    out[3] = (char)u;
}

static long long decode(const char *b, int len)
{
    const unsigned char *u = (const unsigned char *)b;
    if (len < 4)
        return 0;
    return (int32_t)((uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3]);
}

/* Start: create with the seed unless there; then read count and version. */
static int read_count(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                      long long seed, long long *count, int *version)
{
    char buf[16], parent[ZK_PATH_MAX];
    int len = sizeof buf, zrc, rc;
    struct Stat st;

    encode(seed, buf);
    zrc = zk_create_bin(ctx, c, path, buf, 4, 0, NULL, 0);
    if (zrc == ZNONODE) {
        strlcopy(parent, path, sizeof parent);
        *strrchr(parent, '/') = '\0';
        if ((rc = zk_ensure_path(ctx, c, parent, ZOO_CONTAINER)) != LL_OK)
            return rc;
        zrc = zk_create_bin(ctx, c, path, buf, 4, 0, NULL, 0);
    }
    if (zrc != ZOK && zrc != ZNODEEXISTS)
        return zk_fail(ctx, zrc, "create", path);
    zrc = zk_get(ctx, c, path, 0, buf, &len, &st);
    if (zrc != ZOK)
        return zk_fail(ctx, zrc, "getData", path);
    *count = decode(buf, len);
    *version = st.version;
    return LL_OK;
}

static void answer(json_t *out, long long count, int version)
{
    json_object_set_new(out, "count", json_integer(count));
    json_object_set_new(out, "version", json_integer(version));
}

static int op_get(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX];
    struct zk_conn *c;
    long long count;
    int rc, version;

    if ((rc = zk_connect(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "shared-count", a->name);
    if ((rc = read_count(ctx, c, path, a->count > 0 ? a->count : 0, &count, &version)) == LL_OK)
        answer(out, count, version);
    zk_put(c);
    return rc;
}

/* set (version -1) or try-set (?version=). */
static int set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out, int versioned)
{
    char path[ZK_PATH_MAX], buf[4];
    struct zk_conn *c;
    struct Stat st;
    long long before;
    int rc, zrc, version;

    if ((rc = sync_need(ctx, a->count, "count")) != LL_OK ||
        (versioned && (rc = sync_need(ctx, a->version, "version")) != LL_OK))
        return rc;
    if ((rc = zk_connect(ctx, &c)) != LL_OK)
        return rc;
    curator_path(path, sizeof path, "shared-count", a->name);
    if ((rc = read_count(ctx, c, path, 0, &before, &version)) == LL_OK) {
        json_object_set_new(out, "count_before", json_integer(before));
        json_object_set_new(out, "version_before", json_integer(version));
        encode(a->count, buf);
        zrc = zk_set(ctx, c, path, buf, 4, versioned ? (int)a->version : -1, &st);
        if (zrc == ZOK) {
            json_object_set_new(out, "succeeded", json_true());
            answer(out, a->count, st.version);
        } else if (zrc == ZBADVERSION) {
            json_object_set_new(out, "succeeded", json_false());
            answer(out, before, version);
        } else {
            rc = zk_fail(ctx, zrc, "setData", path);
        }
    }
    zk_put(c);
    return rc;
}

static int op_set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return set(ctx, a, out, 0);
}

static int op_try_set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return set(ctx, a, out, 1);
}

/* The comparison's load, and the way to count with a SharedCount: read
 * the count and its version, trySetCount(count + 1) at that version, again
 * until it succeeds (or the deadline); one caller of this instance at a
 * time (sync_local_lock()). */
static int op_increment(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char path[ZK_PATH_MAX], buf[4];
    struct zk_conn *c;
    struct Stat st;
    long long before = 0;
    int rc, zrc = ZBADVERSION, version, tries = 0;
    void *local;

    curator_path(path, sizeof path, "shared-count", a->name);
    if ((rc = sync_local_lock(ctx, path, &local)) != LL_OK)
        return rc;
    if ((rc = zk_connect(ctx, &c)) != LL_OK) {
        sync_local_unlock(local);
        return rc;
    }
    while (rc == LL_OK && zrc == ZBADVERSION) {
        if (tries++ > 0 && lock_time_left(ctx) <= 0) {
            rc = lock_timeout(ctx);
            break;
        }
        if ((rc = read_count(ctx, c, path, 0, &before, &version)) != LL_OK)
            break;
        encode(before + 1, buf);
        zrc = zk_set(ctx, c, path, buf, 4, version, &st);
        if (zrc != ZOK && zrc != ZBADVERSION)
            rc = zk_fail(ctx, zrc, "setData", path);
    }
    json_object_set_new(out, "tries", json_integer(tries));
    if (rc == LL_OK) {
        json_object_set_new(out, "count_before", json_integer(before));
        answer(out, before + 1, st.version);
    }
    zk_put(c);
    sync_local_unlock(local);
    return rc;
}

static int count_reset(struct lock_ctx *ctx, const char *name)
{
    return curator_reset(ctx, "shared-count", name);
}

static const struct sync_op count_ops[] = {
    { "get", "count", "start() with seed count (0), then getVersionedValue()", op_get },
    { "set", "count", "setCount(count)", op_set },
    { "try-set", "count version", "trySetCount(version, count): only at that version",
      op_try_set },
    { "increment", "wait_ms", "trySetCount(count + 1) at the version read, until it succeeds",
      op_increment },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_curator_shared_count = {
    .primitive = "shared-count",
    .backend   = "curator",
    .library   = "Curator SharedCount",
    .where     = "/locklab/sync/shared-count/<name> (data: 4-byte big-endian int)",
    .summary   = "Curator SharedCount: an int in a node's data; trySetCount is setData at the version read, so a lost race is seen (seed 000 §4.6.7)",
    .flaw      = "setCount() overwrites whatever is there: two read-modify-writes without trySetCount lose updates",
    .props     = LOCK_DISTRIBUTED | LOCK_EXACT,
    .invariant = "a versioned set never overwrites a newer count",
    .ceiling   = "sync_curator_shared_count",
    .bench     = "increment",
    .bench_check = "distinct:count",
    .ops       = count_ops,
    .reset     = count_reset,
};
