/* hybrid.c — "Redis 做快速筛选，ZooKeeper 做最终仲裁" (seed 004 §4.5.1): a
 * fast Redis lock in front of a reliable ZooKeeper lock.
 *
 *     acquire: redisson's lock on lock:P (seed: redissonClient.getLock),
 *              then curator's on /locklab/locks/P (InterProcessMutex)
 *     release: curator's, then redisson's — on every path
 *
 * The layers are the registered strategies themselves (hybrid_layer()),
 * with their keys and znodes, so a Java service holding either name
 * excludes with this lock too. Only the Redis winner of each instance
 * reaches ZooKeeper, so ZooKeeper sees almost no queue: that is the
 * "fast screening". Re-entry counts in both layers.
 *
 * Exclusion holds while either layer holds: a second holder needs both.
 * So the lease the write may count on is the later of the two layers'
 * confirmed ends (the Redis watchdog's, the ZooKeeper session's), and the
 * check asks both. With ?fence=1 the token is ZooKeeper's (the czxid of our
 * node, zk_check), the arbiter's; the Redis layer takes none.
 *
 * What it gets wrong: every sale pays both services' round trips — alone
 * (one buyer at a time) it is slower than curator and far slower than
 * redisson; under contention the screening pays, since ZooKeeper then sees
 * one contender instead of a queue of them, and it keeps up with curator
 * or passes it, never with redisson (measured in docs/journal.md). And it
 * needs both: either backend down, and no sale (unavailable), where each
 * lock alone would need one.
 */
#include "hybrid_layer.h"
#include "zk_private.h"

static int hybrid_acquire(struct lock_ctx *ctx, const char *key)
{
    int fence = ctx->fence, rc;

    ctx->fence = 0;             /* the token is the arbiter's */
    rc = hybrid_layer(ctx, &lock_redisson, LAYER_ACQUIRE, key);
    ctx->fence = fence;
    if (rc != LL_OK)
        return rc;
    rc = hybrid_layer(ctx, &lock_curator, LAYER_ACQUIRE, key);
    if (rc != LL_OK)
        hybrid_release_keeping(ctx, &lock_redisson, key);
    return rc;
}

static int hybrid_release(struct lock_ctx *ctx, const char *key)
{
    int rc = hybrid_layer(ctx, &lock_curator, LAYER_RELEASE, key);

    if (rc != LL_OK) {
        hybrid_release_keeping(ctx, &lock_redisson, key);
        return rc;
    }
    return hybrid_layer(ctx, &lock_redisson, LAYER_RELEASE, key);
}

static int hybrid_check(struct lock_ctx *ctx, const char *key)
{
    int64_t redis_until;
    int rc;

    if ((rc = hybrid_layer(ctx, &lock_redisson, LAYER_CHECK, key)) != LL_OK)
        return rc;
    redis_until = ctx->lease_until_us;
    if ((rc = hybrid_layer(ctx, &lock_curator, LAYER_CHECK, key)) != LL_OK)
        return rc;
    if (redis_until > ctx->lease_until_us)
        ctx->lease_until_us = redis_until;
    return LL_OK;
}

static int hybrid_reset(struct lock_ctx *ctx, const char *key)
{
    int redis = hybrid_layer(ctx, &lock_redisson, LAYER_RESET, key);
    int zk = hybrid_layer(ctx, &lock_curator, LAYER_RESET, key);
    return redis != LL_OK ? redis : zk;
}

const struct lock_ops lock_hybrid = {
    .name     = "hybrid",
    .family   = "hybrid",
    .summary  = "redisson's lock:P in front of curator's /locklab/locks/P: Redis screens, ZooKeeper arbitrates (seed 004 §4.5.1)",
    .flaw     = "both services' round trips on every sale: slower than redisson, and than curator uncontended; needs both up",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU,
    .ceiling  = LOCK_CEIL_SERIAL_ZK,
    .acquire  = hybrid_acquire,
    .release  = hybrid_release,
    .check    = hybrid_check,
    .reset    = hybrid_reset,
    .fence    = ZK_FENCE,
};
