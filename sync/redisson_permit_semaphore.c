/* redisson_permit_semaphore.c — Redisson's RPermitExpirableSemaphore: a
 * semaphore whose permits have an id and, optionally, a lease, so a permit
 * is released only by its id and a holder that dies gives its permit back
 * when the lease runs out (RSemaphore's flaw, answered).
 *
 * Keys, for ?name=N:
 *   N              string: free permits
 *   {N}:timeout    sorted set: permit id -> expiry (wall-clock ms; a permit
 *                  without lease gets Redisson's 922337203685477)
 *   redisson_sc:{N} channel: the free count after a release or an expiry
 *
 *   tryAcquire(q, expiry, id): first move up to q expired ids back to N
 *       (publishing the count); then if N >= q: DECRBY, ZADD id, answer id;
 *       else answer ":<nearest expiry>" (when a permit will return by
 *       itself, which bounds the wait) or nil
 *   release(id): ZREM id; only if it was there, INCRBY N 1 and publish
 *   availablePermits(): the same sweep of every expired id, then GET N
 * Ids are 16 random bytes in hex, as Redisson's generateId(). Expiry uses
 * the client's wall clock, as Redisson does (the flaw).
 */
#include "sync_private.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_EXPIRY "922337203685477"     /* Redisson's nonExpirableTimeout */

static struct redis_script set_permits = {
    "local free = redis.call('get', KEYS[1]) "
    "if free ~= false and free ~= 0 then return 0 end "
    "redis.call('set', KEYS[1], ARGV[1]) "
    "redis.call('publish', KEYS[2], ARGV[1]) "
    "return 1",
    ""
};

static struct redis_script acquire = {
    "local gone = redis.call('zrangebyscore', KEYS[2], 0, ARGV[4], 'limit', 0, ARGV[1]) "
    "if #gone > 0 then "
        "redis.call('zrem', KEYS[2], unpack(gone)) "
        "local back = redis.call('incrby', KEYS[1], #gone) "
        "if tonumber(back) > 0 then redis.call('publish', KEYS[3], back) end "
    "end "
    "local free = redis.call('get', KEYS[1]) "
    "if free ~= false and tonumber(free) >= tonumber(ARGV[1]) then "
        "redis.call('decrby', KEYS[1], ARGV[1]) "
        "redis.call('zadd', KEYS[2], ARGV[2], ARGV[3]) "
        "return ARGV[3] "
    "end "
    "local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES') "
    "if first[1] ~= nil and first[2] ~= ARGV[5] then return ':' .. tostring(first[2]) end "
    "return nil",
    ""
};

static struct redis_script release = {
    "if tonumber(redis.call('zrem', KEYS[3], ARGV[1])) ~= 1 then return 0 end "
    "local free = redis.call('incrby', KEYS[1], ARGV[2]) "
    "redis.call('publish', KEYS[2], free) "
    "return 1",
    ""
};

static struct redis_script available = {
    "local gone = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1) "
    "if #gone > 0 then "
        "redis.call('zrem', KEYS[2], unpack(gone)) "
        "local back = redis.call('incrby', KEYS[1], #gone) "
        "if tonumber(back) > 0 then redis.call('publish', KEYS[3], back) end "
        "return back "
    "end "
    "local free = redis.call('get', KEYS[1]) "
    "return free == false and 0 or free",
    ""
};

struct pse {
    const char *name;
    char timeouts[SYNC_NAME_MAX + 16], channel[SYNC_NAME_MAX + 16];
    char id[33], expiry[24], now[24];
    int  lease_ms;                  /* <= 0: no lease */
};

static void pse_init(struct pse *p, const struct sync_args *a)
{
    memset(p, 0, sizeof *p);
    p->name = a->name;
    snprintf(p->timeouts, sizeof p->timeouts, "{%s}:timeout", a->name);
    snprintf(p->channel, sizeof p->channel, "redisson_sc:{%s}", a->name);
    p->lease_ms = a->lease_ms;
}

static int pse_try(struct lock_ctx *ctx, void *arg, long long *ttl)
{
    struct pse *p = arg;
    int64_t now = sync_wall_ms();
    const char *argv[8] = { p->name, p->timeouts, p->channel, "1", p->expiry, p->id,
                            p->now, NO_EXPIRY };
    redisReply *r;

    snprintf(p->id, sizeof p->id, "%016llx%016llx", (unsigned long long)rand64(),
             (unsigned long long)rand64());
    snprintf(p->now, sizeof p->now, "%lld", (long long)now);
    if (p->lease_ms > 0)
        snprintf(p->expiry, sizeof p->expiry, "%lld", (long long)(now + p->lease_ms));
    else
        snprintf(p->expiry, sizeof p->expiry, "%s", NO_EXPIRY);
    if ((r = redis_eval(ctx, 0, &acquire, 3, 8, argv)) == NULL)
        return ctx->err;
    *ttl = -1;
    if (r->type == REDIS_REPLY_STRING && r->str[0] == ':')
        *ttl = strtoll(r->str + 1, NULL, 10) - now;
    else if (r->type == REDIS_REPLY_STRING)
        *ttl = -2;
    else if (r->type != REDIS_REPLY_NIL)
        return redis_reply_error(ctx, 0, r, p->name);
    if (*ttl != -1 && *ttl != -2 && *ttl <= 0)
        *ttl = 1;               /* due already: the next try sweeps it */
    freeReplyObject(r);
    return LL_OK;
}

static int pse_release(struct lock_ctx *ctx, const struct pse *p, const char *id)
{
    const char *argv[5] = { p->name, p->channel, p->timeouts, id, "1" };
    long long done;
    int rc = redisson_int(ctx, redis_eval(ctx, 0, &release, 3, 5, argv), p->name, 0, &done);

    if (rc == LL_OK && done != 1)
        rc = lock_error(ctx, LL_BADREQ, NULL, "permit with id %s has already been released "
                        "or doesn't exist (its lease ran out?)", id);
    return rc;
}

/* ---------------------------------------------------------------- operations */

static int op_try_set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct pse p;
    char n[24];
    const char *argv[3] = { a->name, p.channel, n };
    long long set;
    int rc;

    pse_init(&p, a);
    if (a->permits < 0)
        return sync_need(ctx, a->permits, "permits");
    snprintf(n, sizeof n, "%lld", a->permits);
    rc = redisson_int(ctx, redis_eval(ctx, 0, &set_permits, 2, 3, argv), a->name, 0, &set);
    if (rc == LL_OK)
        json_object_set_new(out, "permits_set", json_boolean(set == 1));
    return rc;
}

/* [trySetPermits]; tryAcquire(wait, lease) -> id; hold; [release(id)]. */
static int op_acquire(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct pse p;
    int rc;

    if (a->permits >= 0 && (rc = op_try_set(ctx, a, out)) != LL_OK)
        return rc;
    pse_init(&p, a);
    rc = redisson_wait(ctx, p.channel, REDIS_WAKE_VALUE, pse_try, &p);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "no permit of %s within %d ms", a->name, ctx->wait_ms);
    if (rc != LL_OK)
        return rc;
    json_object_set_new(out, "permit", json_string(p.id));
    if (p.lease_ms > 0) {
        json_object_set_new(out, "lease_ms", json_integer(p.lease_ms));
        json_object_set_new(out, "expires_at_ms", json_integer(strtoll(p.expiry, NULL, 10)));
    }
    sync_granted(a, out);
    if (!a->unlock)
        return LL_OK;
    sync_released(out);
    rc = pse_release(ctx, &p, p.id);
    return rc;
}

static int op_release(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct pse p;
    int rc;

    if (a->permit == NULL)
        return lock_error(ctx, LL_BADREQ, NULL, "release needs ?permit=<id>");
    pse_init(&p, a);
    if ((rc = pse_release(ctx, &p, a->permit)) == LL_OK)
        json_object_set_new(out, "released", json_string(a->permit));
    return rc;
}

static int op_available(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct pse p;
    char now[24];
    const char *argv[4] = { a->name, p.timeouts, p.channel, now };
    long long free;
    int rc;

    pse_init(&p, a);
    snprintf(now, sizeof now, "%lld", (long long)sync_wall_ms());
    rc = redisson_int(ctx, redis_eval(ctx, 0, &available, 3, 4, argv), a->name, 0, &free);
    if (rc == LL_OK)
        json_object_set_new(out, "available", json_integer(free));
    return rc;
}

static int pse_reset(struct lock_ctx *ctx, const char *name)
{
    char timeouts[SYNC_NAME_MAX + 16];
    const char *keys[2] = { name, timeouts };

    snprintf(timeouts, sizeof timeouts, "{%s}:timeout", name);
    return redisson_del(ctx, 2, keys);
}

static const struct sync_op pse_ops[] = {
    { "acquire", "wait_ms hold_ms lease_ms permits unlock",
      "[trySetPermits(permits)]; tryAcquire(wait, lease) answers a permit id; "
      "unlock=1 releases it after hold_ms", op_acquire },
    { "release", "permit", "release(id): only that id gives the permit back", op_release },
    { "try-set-permits", "permits", "trySetPermits(permits): only if unset or 0", op_try_set },
    { "available", "", "availablePermits(), after returning expired permits", op_available },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_redisson_permit_semaphore = {
    .primitive = "permit-semaphore",
    .backend   = "redisson",
    .library   = "Redisson RPermitExpirableSemaphore",
    .where     = "string <name> (free permits), sorted set {<name>}:timeout (id -> expiry), channel redisson_sc:{<name>}",
    .summary   = "Redisson RPermitExpirableSemaphore: each permit an id with its own lease in {<name>}:timeout; only that id releases it; an expired permit returns at the next acquire",
    .flaw      = "expiry by the clients' wall clocks; a holder slower than its lease loses the permit to another unknowingly",
    .props     = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .invariant = "permits in use never above the permits set",
    .ceiling   = "sync_redisson_permit_semaphore",
    .bench     = "acquire?permits=3&lease_ms=10000&unlock=1",
    .bench_check = "holders<=3",
    .ops       = pse_ops,
    .reset     = pse_reset,
};
