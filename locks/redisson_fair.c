/* redisson_fair.c — Redisson's RFairLock: first come, first served.
 *
 * Keys (Redisson's names, so Java clients join the same queue):
 *   lock:P                                  hash {"<uuid>:<thread>": count}, PEXPIRE lease
 *   redisson_lock_queue:{lock:P}            list of waiting fields, in arrival order
 *   redisson_lock_timeout:{lock:P}          zset field -> time (wall ms) after which
 *                                           a waiter that stopped asking is stale
 *   redisson_lock__channel:{lock:P}:<field> one channel per waiter
 *
 * tryLock (KEYS lock:P, queue, timeout; ARGV lease, field, wait, now):
 *   1. pop stale waiters off the head of the queue (timeout <= now);
 *   2. if lock:P is free and the queue is empty or we are its head: leave
 *      the queue, move every other waiter's timeout so that the next one's
 *      is now + lease + its wait (below), HSET field 1, PEXPIRE lease,
 *      return nil;
 *   3. re-entry: HEXISTS field -> HINCRBY, PEXPIRE, return nil;
 *   4. already queued: return our timeout − wait − now (≈ when our turn
 *      comes); otherwise queue at the tail with timeout = the previous
 *      waiter's (or the lock's PTTL) + wait + now, and return that ttl.
 * unlock (KEYS lock:P, queue, timeout, channel; ARGV "0", lease, field, now):
 *   pop stale waiters; decrement our count (nil if not ours: an error); at
 *   zero DEL lock:P and PUBLISH "0" to the head waiter's channel only.
 * A waiter that gives up runs Redisson's acquireFailed script: it leaves
 * the queue and hands its wait back to those behind it. So does an acquire
 * that failed on its way, whatever try it failed at: its first tryLock may
 * have queued us (RPUSH, ZADD) before its answer was lost, which would
 * leave a ghost at the head of the queue for every client, Java's too,
 * until its timeout. A failure after a try may have taken the lock (an
 * answer lost, the fencing token not issued) also gives back the entry
 * that try took (the unlock script, once), as Redisson's tryLock does
 * after a response timeout: the product is not left locked for a lease.
 * (A re-entry whose increment never landed gives back the request's outer
 * entry instead; the purchase fails, and releases, all the same.)
 *
 * One change to Redisson 3.16's tryLock: on acquiring, Redisson takes the
 * acquirer's wait off every other timeout. A waiter's timeout is stacked
 * on its predecessor's (pttl + wait + now for the first, the previous one's
 * + wait after), so under a queue that never empties they all stay
 * anchored to the first waiter's arrival: lease + wait later (40 s here),
 * every waiter is "stale" at the head of the queue, popped unpublished
 * while it waits for its message, and waits out its whole wait (the 10 s
 * lock_timeouts of a long run on a Redis Cluster, issue 33; Redisson's
 * own 5-minute threadWaitTime only delays it). We move them by
 * now + lease − (our timeout) instead: the same stacking, anchored to the
 * last acquisition (the next waiter is stale lease + its wait after it).
 * Java clients on the same queue still interoperate: both only compare
 * the timeouts with their now.
 *
 * Waiting: the first tryLock queues us; then subscribe to our own channel,
 * and loop { tryLock; wait for the message or the returned ttl, never past
 * the deadline } (redisson_wait(), the loop of every Redisson object). The
 * hand-off is FIFO across all instances and only the next waiter wakes. `wait` is the
 * request's remaining wait, as Redisson's tryLock(waitTime) passes it.
 * Held locks are renewed by the watchdog like redisson's.
 *
 * What it still gets wrong: the stale-waiter timeouts compare the wall
 * clocks of every client (ARGV now; the fault ?clock_skew_ms sets the
 * request's ahead: `bench/lesson fair-clock-skew` shows such a client drop
 * every waiter and go first); a waiter that dies without leaving blocks
 * the queue until its timeout (up to its whole wait); every acquisition
 * rewrites every waiter's timeout (O(waiters)); one Redis.
 */
#include "redis_private.h"

#include <stdio.h>

/* Both scripts first drop the waiters at the head of the queue whose wait
 * ran out (Redisson's own first loop; ARGV[4] is the current time). */
#define FAIR_DROP_STALE_WAITERS \
    "while true do " \
        "local first = redis.call('lindex', KEYS[2], 0); " \
        "if first == false then break; end; " \
        "local timeout = tonumber(redis.call('zscore', KEYS[3], first)); " \
        "if timeout <= tonumber(ARGV[4]) then " \
            "redis.call('zrem', KEYS[3], first); " \
            "redis.call('lpop', KEYS[2]); " \
        "else break; end; " \
    "end; "

static struct redis_script fair_lock = {
    FAIR_DROP_STALE_WAITERS
    "if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) "
        "or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then "
        "redis.call('lpop', KEYS[2]); "
        "local mine = redis.call('zscore', KEYS[3], ARGV[2]); "
        "redis.call('zrem', KEYS[3], ARGV[2]); "
        "local shift = -tonumber(ARGV[3]); "
        "if mine ~= false then "
            "shift = tonumber(ARGV[1]) + tonumber(ARGV[4]) - tonumber(mine); "
        "end; "
        "local keys = redis.call('zrange', KEYS[3], 0, -1); "
        "for i = 1, #keys, 1 do "
            "redis.call('zincrby', KEYS[3], shift, keys[i]); "
        "end; "
        "redis.call('hset', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return nil; "
    "end; "
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return nil; "
    "end; "
    "local timeout = redis.call('zscore', KEYS[3], ARGV[2]); "
    "if timeout ~= false then "
        "return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]); "
    "end; "
    "local last = redis.call('lindex', KEYS[2], -1); "
    "local ttl; "
    "if last ~= false and last ~= ARGV[2] then "
        "ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4]); "
    "else "
        "ttl = redis.call('pttl', KEYS[1]); "
    "end; "
    "local newtimeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]); "
    "if redis.call('zadd', KEYS[3], newtimeout, ARGV[2]) == 1 then "
        "redis.call('rpush', KEYS[2], ARGV[2]); "
    "end; "
    "return ttl;",
    ""
};

static struct redis_script fair_unlock = {
    FAIR_DROP_STALE_WAITERS
    "if (redis.call('exists', KEYS[1]) == 0) then "
        "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
        "if nextThreadId ~= false then "
            "redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
        "end; "
        "return 1; "
    "end; "
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
        "redis.call('pexpire', KEYS[1], ARGV[2]); "
        "return 0; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
    "if nextThreadId ~= false then "
        "redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
    "end; "
    "return 1;",
    ""
};

static struct redis_script fair_give_up = {
    "local queue = redis.call('lrange', KEYS[1], 0, -1); "
    "local i = 1; "
    "while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1; end; "
    "i = i + 1; "
    "while i <= #queue do "
        "redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]); "
        "i = i + 1; "
    "end; "
    "redis.call('zrem', KEYS[2], ARGV[1]); "
    "redis.call('lrem', KEYS[1], 0, ARGV[1]);",
    ""
};

struct fair_names {
    char field[80];
    char queue[128];
    char timeout[128];
    char channel[128];       /* the lock's channel; ours is channel:field */
};

static void names_of(const struct lock_ctx *ctx, const char *key, struct fair_names *n)
{
    lock_owner(ctx, n->field, sizeof n->field);
    snprintf(n->queue, sizeof n->queue, "redisson_lock_queue:{%s}", key);
    snprintf(n->timeout, sizeof n->timeout, "redisson_lock_timeout:{%s}", key);
    snprintf(n->channel, sizeof n->channel, "redisson_lock__channel:{%s}", key);
}

/* One tryLock: LL_OK with *ttl = -2 when acquired (its lease recorded on
 * ctx), else the time to wait. */
static int fair_try(struct lock_ctx *ctx, const char *key, const struct fair_names *n,
                    long long wait, long long *ttl)
{
    char lease[16], waits[24], now[24];
    const char *argv[7] = { key, n->queue, n->timeout, lease, n->field, waits, now };

    int64_t sent = now_us();
    redisReply *r;
    int rc;

    snprintf(lease, sizeof lease, "%d", ctx->cfg->lease_ms);
    snprintf(waits, sizeof waits, "%lld", wait);
    snprintf(now, sizeof now, "%lld", (long long)redis_wall_ms_of(ctx));
    /* A queued waiter is told when its turn is due by the queue's clocks,
     * which is in the past once the holder outlives that estimate (the
     * watchdog renewing it): any negative number, -2 among them, which
     * would read as nil, "acquired". Redisson's Java tells null from a
     * Long; we say "due now" (0) for every past turn. */
    r = redis_lock_eval(ctx, &fair_lock, 3, 7, argv);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer < 0)
        r->integer = 0;
    rc = redis_ttl_reply(ctx, r, key, ttl);
    if (rc == LL_OK && *ttl == -2)
        lock_lease(ctx, sent, ctx->cfg->lease_ms);
    return rc;
}

/* The unlock script, once: our entry given back (the hash deleted and
 * the next waiter told at its last). NULL when Redis did not answer. */
static redisReply *fair_unlock_once(struct lock_ctx *ctx, const char *key,
                                    const struct fair_names *n)
{
    char lease[16], now[24];
    const char *argv[8] = { key, n->queue, n->timeout, n->channel, "0", lease, n->field, now };

    snprintf(lease, sizeof lease, "%d", ctx->cfg->lease_ms);
    snprintf(now, sizeof now, "%lld", (long long)redis_wall_ms_of(ctx));
    return redis_eval(ctx, 0, &fair_unlock, 4, 8, argv);
}

/* After a failed acquire: leave the queue, and with `took` (a try may
 * have taken the lock) give back the entry it took. The acquire's failure
 * stays on ctx. */
static void fair_leave(struct lock_ctx *ctx, const char *key, const struct fair_names *n,
                       long long wait, int took)
{
    char waits[24];
    const char *argv[4] = { n->queue, n->timeout, n->field, waits };
    struct lock_saved_error e;
    redisReply *r;

    lock_error_save(ctx, &e);
    snprintf(waits, sizeof waits, "%lld", wait);
    if ((r = redis_eval(ctx, 0, &fair_give_up, 2, 4, argv)) != NULL)
        freeReplyObject(r);
    if (took && (r = fair_unlock_once(ctx, key, n)) != NULL)
        freeReplyObject(r);
    lock_error_restore(ctx, &e);
}

struct fair_args {
    const char              *key;
    const struct fair_names *n;
    long long                wait;
};

/* A try of the waiting loop: a ttl of 0 (our turn is due now, by the
 * queue's clocks) waits for the message, up to the deadline. */
static int fair_try_again(struct lock_ctx *ctx, void *arg, long long *ttl)
{
    const struct fair_args *a = arg;
    int rc = fair_try(ctx, a->key, a->n, a->wait, ttl);

    if (rc == LL_OK && *ttl == 0)
        *ttl = -1;
    return rc;
}

static int fair_acquire(struct lock_ctx *ctx, const char *key)
{
    struct fair_names n;
    char mine[sizeof n.channel + sizeof n.field + 2];
    long long ttl, wait = lock_time_left(ctx);
    struct fair_args a = { key, &n, 0 };
    int rc;

    names_of(ctx, key, &n);
    if (wait < 1)
        wait = 1;
    a.wait = wait;
    redis_set_of(ctx)->wrongtype = 0;
    if ((rc = fair_try(ctx, key, &n, wait, &ttl)) != LL_OK) {
        if (!redis_foreign(ctx)) {  /* it may have queued us, or taken the lock */
            fair_leave(ctx, key, &n, wait, 1);
            return rc;
        }
        ttl = -1;                   /* another strategy's lock: not queued yet */
    }
    if (ttl != -2) {            /* queued: wait on our own channel */
        snprintf(mine, sizeof mine, "%s:%s", n.channel, n.field);
        rc = redisson_wait(ctx, mine, REDIS_WAKE_ONE, fair_try_again, &a, 0);
        if (rc == LL_TIMEOUT)
            rc = redis_timeout(ctx, 0, key, "hash");
        if (rc != LL_OK) {      /* a timeout's last try took nothing */
            fair_leave(ctx, key, &n, wait, rc != LL_TIMEOUT);
            return rc;
        }
    }
    if (ctx->fence) {   /* Redisson has no fenced fair lock: its counter, taken here */
        char tokens[LOCK_KEY_MAX + 32];
        snprintf(tokens, sizeof tokens, REDISSON_TOKEN_KEY, key);
        if ((rc = redis_watch_token(ctx, key, n.field, tokens, REDISSON_FENCE)) != LL_OK) {
            fair_leave(ctx, key, &n, wait, rc != LL_LOST);  /* lost: nothing to give */
            return rc;
        }
    }
    redis_watch(ctx, key, n.field, WATCH_MILLIS);
    return LL_OK;
}

static int fair_release(struct lock_ctx *ctx, const char *key)
{
    struct fair_names n;
    redisReply *r;
    int rc = LL_OK;

    names_of(ctx, key, &n);
    redis_unwatch(ctx);
    if ((r = fair_unlock_once(ctx, key, &n)) == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_NIL)
        rc = lock_error(ctx, LL_ERROR, "redis",
                        "attempt to unlock %s, not locked by current thread %s "
                        "(IllegalMonitorStateException)", key, n.field);
    else if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key);
    freeReplyObject(r);
    return rc;
}

static int fair_reset(struct lock_ctx *ctx, const char *key)
{
    struct fair_names n;
    const char *keys[3];

    names_of(ctx, key, &n);
    keys[0] = key;
    keys[1] = n.queue;
    keys[2] = n.timeout;
    return redis_del(ctx, 0, 3, keys);
}

const struct lock_ops lock_redisson_fair = {
    .name     = "redisson-fair",
    .family   = "redis",
    .summary  = "Redisson RFairLock: FIFO queue list + timeout zset, hand-off published to the next waiter only, watchdog",
    .flaw     = "stale-waiter timeouts trust client clocks; a dead waiter stalls the queue until its timeout; one Redis",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_FAIR | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = fair_acquire,
    .release  = fair_release,
    .check    = redis_watch_check,
    .reset    = fair_reset,
    .fence    = REDISSON_FENCE,
};
