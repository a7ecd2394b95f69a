/* redisson.c — Redisson's RLock, protocol for protocol, so a Java service
 * using redisson.getLock("lock:P") excludes with us.
 *
 * Keys: the hash lock:P {"<instance uuid>:<thread>": re-entry count} with a
 * PEXPIRE lease, and the channel redisson_lock__channel:{lock:P}. Our
 * "thread" is the worker slot, so the field is lock_owner().
 *
 *     tryLock (KEYS lock:P; ARGV lease, field):
 *         if EXISTS == 0:         HINCRBY field 1; PEXPIRE lease; return nil
 *         if HEXISTS field == 1:  HINCRBY field 1; PEXPIRE lease; return nil
 *         return PTTL lock:P                        (the holder's time left)
 *     unlock (KEYS lock:P, channel; ARGV "0", lease, field):
 *         if HEXISTS field == 0: return nil         (not ours: an error)
 *         if HINCRBY field -1 > 0: PEXPIRE lease; return 0
 *         DEL lock:P; PUBLISH channel 0; return 1
 *
 * Waiting, as RedissonLock.lock() (redisson_wait(), the loop every
 * Redisson object shares): try once; if taken, SUBSCRIBE to the
 * channel, then loop { try; wait for a message or the returned PTTL,
 * whichever comes first, never past the deadline } and UNSUBSCRIBE. When
 * the process is already subscribed to the channel (a lock in use), the
 * first try is skipped: joining costs no round trip then, and the try in
 * the loop is as early, one failed script call per purchase fewer. No
 * fixed-interval spinning: a waiter wakes when a holder publishes or the
 * holder's lease would have run out (a crashed holder). Subscribing before
 * the second try means a release can never slip by unseen.
 *
 * The subscription is shared by the whole process (redis_pubsub.c, as
 * Redisson's LockPubSub): each unlock message wakes one waiter per
 * instance, not every waiter. A release also wakes one waiter of its own
 * instance at once (redis_sub_released()), a round trip through Redis and
 * the dispatcher before the message would; the other instances still
 * learn of it by the message. That message must then wake nobody here, and
 * it can reach the dispatcher before the unlock's reply reaches us: so the
 * release says it is coming before it sends the unlock
 * (redis_sub_releasing()). Said after, a message that came first woke a
 * waiter and the next one, another instance's, was swallowed in its place:
 * the seeds' run lost most of its rate, waiters asleep for a whole lease.
 * Watchdog: the lease is --lease-ms (Redisson: 30 s) renewed every lease/3
 * (10 s) by redis_watchdog.c while held.
 * Unlocking a lock we do not hold is an error, as Redisson's
 * IllegalMonitorStateException.
 * What it still gets wrong: one Redis server — a failover to a replica
 * that had not received the lock lets a second holder in (hence redlock).
 */
#include "redis_private.h"

#include <stdio.h>

struct redis_script redisson_lock = {
    "if (redis.call('exists', KEYS[1]) == 0) then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return nil; "
    "end; "
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);",
    ""
};

struct redis_script redisson_unlock = {
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
        "return nil; "
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
        "redis.call('pexpire', KEYS[1], ARGV[2]); "
        "return 0; "
    "else "
        "redis.call('del', KEYS[1]); "
        "redis.call('publish', KEYS[2], ARGV[1]); "
        "return 1; "
    "end; "
    "return nil;",
    ""
};

/* ?fence=1: RedissonFencedLock's tryLock (Redisson 3.2x), the same hash and
 * lease, and INCR of its token counter (REDISSON_TOKEN_KEY) at every
 * acquisition, re-entries too: {-1, token} acquired, {pttl, -1} not. A Java
 * RFencedLock on the same name takes its tokens from the same counter. */
static struct redis_script redisson_fenced_lock = {
    "if (redis.call('exists', KEYS[1]) == 0 "
        "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
        "local token = redis.call('incr', KEYS[2]); "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return {-1, token}; "
    "end; "
    "return {redis.call('pttl', KEYS[1]), -1};",
    ""
};

/* The fenced tryLock's reply, freed: as redis_ttl_reply(), and the token. */
static int fenced_reply(struct lock_ctx *ctx, redisReply *r, const char *key, long long *ttl)
{
    if (r == NULL)
        return ctx->err;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key);
    if (r->element[0]->integer == -1) {
        *ttl = -2;
        ctx->token = r->element[1]->integer;
        /* The counter is the lock's: redisson-global's, of lock:all, is a
         * service of its own (its table's fence). */
        ctx->token_src = ctx->ops && ctx->ops->fence ? ctx->ops->fence : REDISSON_FENCE;
    } else {
        *ttl = r->element[0]->integer > 0 ? r->element[0]->integer : 0;
    }
    freeReplyObject(r);
    return LL_OK;
}

static void channel_of(const char *key, char *buf, size_t len)
{
    snprintf(buf, len, "redisson_lock__channel:{%s}", key);
}

/* One tryLock: LL_OK with *ttl = -2 when acquired (its lease recorded on
 * ctx), else the holder's PTTL. */
static int redisson_try(struct lock_ctx *ctx, const char *key, const char *field,
                        long long *ttl)
{
    char lease[16], tokens[LOCK_KEY_MAX + 32];
    const char *argv[4] = { key, lease, field, NULL };
    int64_t sent = now_us();
    int rc;

    snprintf(lease, sizeof lease, "%d", ctx->cfg->lease_ms);
    if (!ctx->fence) {
        rc = redis_ttl_reply(ctx, redis_eval(ctx, 0, &redisson_lock, 1, 3, argv), key, ttl);
    } else {
        snprintf(tokens, sizeof tokens, REDISSON_TOKEN_KEY, key);
        argv[1] = tokens, argv[2] = lease, argv[3] = field;
        rc = fenced_reply(ctx, redis_eval(ctx, 0, &redisson_fenced_lock, 2, 4, argv), key, ttl);
    }
    if (rc == LL_OK && *ttl == -2)
        lock_lease(ctx, sent, ctx->cfg->lease_ms);
    return rc;
}

struct try_args {
    const char *key, *field;
};

static int try_once(struct lock_ctx *ctx, void *arg, long long *ttl)
{
    const struct try_args *t = arg;

    return redisson_try(ctx, t->key, t->field, ttl);
}

int redisson_acquire(struct lock_ctx *ctx, const char *key)
{
    char field[80], channel[160];
    struct try_args t = { key, field };
    int rc;

    lock_owner(ctx, field, sizeof field);
    channel_of(key, channel, sizeof channel);
    rc = redisson_wait(ctx, channel, REDIS_WAKE_ONE, try_once, &t, !redis_sub_ready(channel));
    if (rc == LL_TIMEOUT)
        rc = redis_timeout(ctx, 0, key, "hash");
    if (rc != LL_OK)
        return rc;
    redis_watch(ctx, key, field, WATCH_MILLIS);
    return LL_OK;
}

int redisson_release(struct lock_ctx *ctx, const char *key)
{
    char field[80], channel[160], lease[16];
    const char *argv[5] = { key, channel, "0", lease, field };
    struct redis_sub *sub;
    redisReply *r;
    int rc = LL_OK;

    lock_owner(ctx, field, sizeof field);
    channel_of(key, channel, sizeof channel);
    snprintf(lease, sizeof lease, "%d", ctx->cfg->lease_ms);
    redis_unwatch(ctx);
    sub = redis_sub_releasing(channel);
    r = redis_eval(ctx, 0, &redisson_unlock, 2, 5, argv);
    redis_sub_released(sub, r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (r == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_NIL)
        rc = lock_error(ctx, LL_ERROR, "redis",
                        "attempt to unlock %s, not locked by current thread %s "
                        "(IllegalMonitorStateException)", key, field);
    else if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key);
    freeReplyObject(r);
    return rc;
}

const struct lock_ops lock_redisson = {
    .name     = "redisson",
    .family   = "redis",
    .summary  = "Redisson RLock: hash lock:P {uuid:thread: count}, PTTL to waiters, pub/sub wake-up on unlock, watchdog at lease/3",
    .flaw     = "one Redis server: a failover to a replica that missed the lock admits a second holder; not fair",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .hold_rtts = 4, /* grant out, SELECT, UPDATE, unlock in, message, try */
    .acquire  = redisson_acquire,
    .release  = redisson_release,
    .check    = redis_watch_check,
    .reset    = redis_del_key,
    .fence    = REDISSON_FENCE,
};
