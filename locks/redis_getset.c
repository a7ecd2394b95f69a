/* redis_getset.c — the value is an expiry timestamp; an expired lock is
 * taken over with GETSET (seed 003, seed 004 scheme 2, the old SETNX page
 * of redis.io).
 *
 *     acquire:  exp = wall clock ms + lease + 1
 *               SETNX lock:P exp                    1: ours
 *               cur = GET lock:P; if cur < now:     expired holder
 *                   old = GETSET lock:P exp; if old == cur: ours
 *               else sleep a jittered --retry-ms and start again
 *     release:  if now < our exp: DEL lock:P        (else it may be taken)
 *
 * The key never expires in Redis: the clients judge expiry by comparing
 * their own wall clocks (CLOCK_REALTIME) with the stored one, so the lock
 * is only as good as the clocks of every instance are in step — a client
 * whose clock runs ahead takes over live locks. When several waiters see
 * the same expired value, one wins the GETSET comparison, but the losers'
 * GETSETs have already overwritten the winner's timestamp with theirs
 * ("锁覆盖"): the holder's expiry is no longer its own and nobody's value
 * says who holds the lock. Release checks the expiry before DEL, and that
 * check and the DEL are two steps: a holder that stalls between them
 * deletes the next holder's lock. Not reentrant. The fault switch
 * ?clock_skew_ms sets the request's clock ahead (bench/lesson clock-skew).
 */
#include "redis_private.h"

#include <stdlib.h>

/* One try: 1 taken (its lease recorded on ctx), 0 held by someone else, -1
 * a failure on ctx. */
static int getset_try(struct lock_ctx *ctx, const char *key, const void *arg)
{
    struct redis_hold *h = redis_hold_of(ctx);
    int64_t now = redis_wall_ms_of(ctx), exp = now + ctx->cfg->lease_ms + 1, sent = now_us();
    long long cur;
    redisReply *r;
    int taken, got = 0;

    (void)arg;
    if ((r = redis_cmd(ctx, 0, "SETNX %s %lld", key, (long long)exp)) == NULL)
        return -1;
    if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key), -1;
    taken = r->integer == 0;
    freeReplyObject(r);
    if (!taken) {
        h->expires_wall_ms = exp;
        lock_lease(ctx, sent, ctx->cfg->lease_ms);
        return 1;
    }
    if ((r = redis_cmd(ctx, 0, "GET %s", key)) == NULL)
        return -1;
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, 0, r, key), -1;
    if (r->type != REDIS_REPLY_STRING) {         /* released meanwhile */
        freeReplyObject(r);
        return 0;
    }
    cur = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    if (cur >= now)
        return 0;                                /* held and not expired */
    if ((r = redis_cmd(ctx, 0, "GETSET %s %lld", key, (long long)exp)) == NULL)
        return -1;
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, 0, r, key), -1;
    if (r->type == REDIS_REPLY_STRING && strtoll(r->str, NULL, 10) == cur) {
        h->expires_wall_ms = exp;
        lock_lease(ctx, sent, ctx->cfg->lease_ms);
        got = 1;
    }
    freeReplyObject(r);
    return got;
}

static int getset_acquire(struct lock_ctx *ctx, const char *key)
{
    return redis_spin(ctx, key, "string", getset_try, NULL, 0);
}

static int getset_release(struct lock_ctx *ctx, const char *key)
{
    struct redis_hold *h = redis_hold_of(ctx);
    const char *keys[1] = { key };

    if (redis_wall_ms_of(ctx) >= h->expires_wall_ms)
        return lock_error(ctx, LL_ERROR, "redis",
                          "%s expired before release (lease %d ms): not deleted, it may "
                          "be someone else's now", key, ctx->cfg->lease_ms);
    return redis_del(ctx, 0, 1, keys);
}

const struct lock_ops lock_redis_getset = {
    .name     = "redis-getset",
    .family   = "redis",
    .summary  = "value = expiry timestamp; SETNX, or GETSET over an expired one (seeds 003, 004 scheme 2)",
    .flaw     = "trusts every client's clock; losing GETSETs overwrite the holder's stamp; no owner: DEL can free another's lock",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_APP |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = getset_acquire,
    .release  = getset_release,
    .reset    = redis_del_key,
    .nofence  = "its key holds an expiry time, not its holder: the losers' GETSETs overwrite the winner's stamp, so nothing in Redis says whose turn a token would be",
};
