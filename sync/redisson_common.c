/* redisson_common.c — what the Redisson synchronizers share: the lock
 * field, the acquire loop of every blocking Redisson object, integer
 * replies and resets.
 *
 * Version followed: Redisson 3.16 (2021), the scripts, key names, channel
 * names and pub/sub messages of its RedissonReadLock, RedissonWriteLock,
 * RedissonSemaphore, RedissonPermitExpirableSemaphore, RedissonCountDownLatch
 * and RedissonMultiLock (over RedissonLock's own scripts, locks/redisson.c).
 * Later versions (3.23 on) add an "unlock latch" key per unlock request, to
 * make a retried unlock idempotent; it changes nothing a second client sees
 * and is left out.
 *
 * The loop (RedissonLock.lock(), RedissonSemaphore.acquire() …): one try;
 * if it fails, subscribe to the object's channel, then try again, and
 * between tries sleep until a message or until the time the try returned
 * (the lock's PTTL, a permit's nearest expiry) — never past the request's
 * deadline. Subscribing before the second try means no release can slip by
 * between a failed try and the wait. The subscription is the process's
 * (locks/redis_pubsub.c), and each message wakes as many waiters of this
 * process as the object's pub/sub class would: one per read unlock, all
 * of them for a write unlock, as many as a semaphore's message announces
 * permits, all of them when a latch reaches zero.
 */
#include "sync_private.h"
#include "../core/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void redisson_field(const struct lock_ctx *ctx, unsigned long long tid, char *buf, int len)
{
    snprintf(buf, (size_t)len, "%s:%llu", ctx->cfg->instance_id, tid);
}

int redisson_wait(struct lock_ctx *ctx, const char *channel, enum redis_wake wake,
                  redisson_try_fn try_once, void *arg)
{
    struct redis_waiter *sub;
    long long ttl;
    int64_t left;
    int rc;

    if ((rc = try_once(ctx, arg, &ttl)) != LL_OK || ttl == -2)
        return rc;
    if ((rc = redis_sub_join_as(ctx, channel, wake, &sub)) != LL_OK)
        return rc;
    for (;;) {
        if ((rc = try_once(ctx, arg, &ttl)) != LL_OK || ttl == -2)
            break;
        if ((left = lock_time_left(ctx)) <= 0) {
            rc = lock_timeout(ctx);
            break;
        }
        ctx->retries++;
        redis_sub_wait(ctx, sub, ttl >= 0 && ttl < left ? ttl : left);
    }
    redis_sub_leave(sub);
    return rc;
}

int redisson_int(struct lock_ctx *ctx, redisReply *r, const char *key, long long nil,
                 long long *v)
{
    if (r == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_NIL)
        *v = nil;
    else if (r->type == REDIS_REPLY_INTEGER)
        *v = r->integer;
    else if (r->type == REDIS_REPLY_STRING)
        *v = strtoll(r->str, NULL, 10);
    else
        return redis_reply_error(ctx, 0, r, key);
    freeReplyObject(r);
    return LL_OK;
}

int redisson_del(struct lock_ctx *ctx, int nkeys, const char **keys)
{
    return redis_del(ctx, 0, nkeys, keys);
}
