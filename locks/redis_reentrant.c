/* redis_reentrant.c — the hash lock of seed 000 §3.6, renewed by a
 * watchdog (§3.7).
 *
 * lock:P is a hash: field = the holder (lock_owner(): "<instance uuid>:<slot>"),
 * value = how many times it entered. Both scripts run atomically:
 *
 *     acquire:  if EXISTS(lock:P) == 0 or HEXISTS(lock:P, owner) == 1 then
 *                   HINCRBY lock:P owner 1; EXPIRE lock:P <lease s>; return 1
 *               else return 0                          0: spin and retry
 *     release:  if HEXISTS(lock:P, owner) == 0 then return nil   (not ours)
 *               elseif HINCRBY(lock:P, owner, -1) > 0 then return 0
 *               else DEL lock:P; return 1 end
 *
 * While held, the process-wide watchdog (redis_watchdog.c) runs
 * "if HEXISTS then EXPIRE" every lease/3, so a slow holder keeps its lock
 * and a dead one loses it within a lease. The check hook refuses the write
 * if a renewal found the lock gone. What it still gets wrong: waiters poll
 * on a timer instead of being told (compare redisson): one poller per
 * instance (lock_poll.c), which a release on its own instance wakes at
 * once, but a release elsewhere is seen only at its next poll, and the
 * order is luck; and the seconds-granular EXPIRE rounds the lease up.
 *
 * An acquire that fails after a try may have taken the lock — the try's
 * answer lost (?lose_lock=1 makes it certain), or the fencing token not
 * issued — gives back the entry that try took (the release script, once),
 * so the product is not left locked for a whole lease.
 */
#include "redis_private.h"

#include <stdio.h>

static struct redis_script reentrant_lock = {
    "if (redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[1]) == 1) "
    "then redis.call('hincrby', KEYS[1], ARGV[1], 1); "
    "redis.call('expire', KEYS[1], ARGV[2]); return 1; "
    "else return 0; end",
    ""
};

static struct redis_script reentrant_unlock = {
    "if (redis.call('hexists', KEYS[1], ARGV[1]) == 0) then return nil; "
    "elseif (redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0) then return 0; "
    "else redis.call('del', KEYS[1]); return 1; end",
    ""
};

struct reentrant_args {
    const char *owner, *lease;
};

/* One try: 1 taken, 0 held by someone else, -1 a failure on ctx. */
static int reentrant_try(struct lock_ctx *ctx, const char *key, const void *arg)
{
    const struct reentrant_args *a = arg;
    const char *argv[3] = { key, a->owner, a->lease };
    redisReply *r;
    int got;

    if ((r = redis_lock_eval(ctx, &reentrant_lock, 1, 3, argv)) == NULL)
        return -1;
    if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key), -1;
    got = r->integer == 1;
    freeReplyObject(r);
    return got;
}

/* The release script, once: NULL when Redis did not answer. */
static redisReply *unlock_once(struct lock_ctx *ctx, const char *key, const char *owner)
{
    const char *argv[2] = { key, owner };

    return redis_eval(ctx, 0, &reentrant_unlock, 1, 2, argv);
}

/* A failed acquire's try may have taken the lock: give its entry back,
 * keeping the acquire's failure on ctx. */
static int give_back(struct lock_ctx *ctx, const char *key, const char *owner, int rc)
{
    struct lock_saved_error e;
    redisReply *r;

    lock_error_save(ctx, &e);
    if ((r = unlock_once(ctx, key, owner)) != NULL)
        freeReplyObject(r);
    lock_error_restore(ctx, &e);
    return rc;
}

static int reentrant_acquire(struct lock_ctx *ctx, const char *key)
{
    char owner[80], lease[16], counter[LOCK_KEY_MAX + 24];
    const struct reentrant_args a = { owner, lease };
    int rc;

    lock_owner(ctx, owner, sizeof owner);
    snprintf(lease, sizeof lease, "%d", (ctx->cfg->lease_ms + 999) / 1000);
    /* EXPIRE rounds up: the lease is at least lease_ms */
    rc = redis_spin(ctx, key, "hash", reentrant_try, &a, ctx->cfg->lease_ms);
    if (rc == LL_UNAVAILABLE || rc == LL_UNKNOWN)   /* the last try's answer lost */
        return give_back(ctx, key, owner, rc);
    if (rc != LL_OK)
        return rc;
    snprintf(counter, sizeof counter, REDIS_FENCE_KEY, key);
    if (ctx->fence && (rc = redis_watch_token(ctx, key, owner, counter, REDIS_FENCE)) != LL_OK)
        return rc == LL_LOST ? rc : give_back(ctx, key, owner, rc);
    redis_watch(ctx, key, owner, WATCH_SECONDS);
    return LL_OK;
}

static int reentrant_release(struct lock_ctx *ctx, const char *key)
{
    char owner[80];
    redisReply *r;
    int rc = LL_OK;

    lock_owner(ctx, owner, sizeof owner);
    redis_unwatch(ctx);
    if ((r = unlock_once(ctx, key, owner)) == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_NIL)
        rc = lock_error(ctx, LL_ERROR, "redis", "%s is not held by %s: nothing to unlock",
                        key, owner);
    else if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key);
    freeReplyObject(r);
    return rc;
}

const struct lock_ops lock_redis_reentrant = {
    .name     = "redis-reentrant",
    .family   = "redis",
    .summary  = "hash lock:P {owner: count} by HINCRBY Lua scripts, renewed at lease/3 by a watchdog (seed 000 §3.6–3.7)",
    .flaw     = "waiters poll on a timer (a release elsewhere is seen late; no order); one Redis: a failover can lose the lock",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = reentrant_acquire,
    .release  = reentrant_release,
    .check    = redis_watch_check,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
};
