/* redisson_semaphore.c — Redisson's RSemaphore (seed 000 §3.9.6), so that
 * redisson.getSemaphore("semaphore") in Java and GET /test/semaphore here
 * count the same permits.
 *
 * Keys, for ?name=N: the string N, the number of free permits, and the
 * channel redisson_sc:{N}, on which every release publishes the count it
 * left (SemaphorePubSub wakes as many waiters as that count says).
 *
 *   trySetPermits(p): if N does not exist, SET N p and publish p; 1, else 0
 *   tryAcquire(q):    if N >= q, DECRBY N q; else nothing
 *   release(q):       INCRBY N q, publish the new count
 *
 * The seeds' demo is trySetPermits(3), acquire(), five seconds of work,
 * release(): ten concurrent callers come out in waves of 3, 3, 3, 1 five
 * seconds apart. Permits have no owner: release() by anyone adds permits,
 * and a holder that dies never gives its permit back (the flaw; see
 * permit-semaphore for Redisson's answer). The scripts answer the count
 * they leave (Redisson's answer 1 or nothing: the keys see the same).
 */
#include "sync_private.h"

#include <stdio.h>
#include <stdlib.h>

static struct redis_script try_set_permits = {
    "if redis.call('get', KEYS[1]) ~= false then return 0 end "
    "redis.call('set', KEYS[1], ARGV[1]) "
    "redis.call('publish', KEYS[2], ARGV[1]) "
    "return 1",
    ""
};

static struct redis_script try_acquire = {
    "local free = redis.call('get', KEYS[1]) "
    "if free == false or tonumber(free) < tonumber(ARGV[1]) then return -1 end "
    "return redis.call('decrby', KEYS[1], ARGV[1])",
    ""
};

static struct redis_script release = {
    "local free = redis.call('incrby', KEYS[1], ARGV[1]) "
    "redis.call('publish', KEYS[2], free) "
    "return free",
    ""
};

struct sem {
    const char *name;
    char channel[SYNC_NAME_MAX + 16], qty[24];
    long long left;                 /* permits left by our acquisition */
};

static void sem_init(struct sem *s, const struct sync_args *a)
{
    s->name = a->name;
    snprintf(s->channel, sizeof s->channel, "redisson_sc:{%s}", a->name);
    snprintf(s->qty, sizeof s->qty, "%lld", a->qty > 0 ? a->qty : 1);
    s->left = -1;
}

static int sem_try(struct lock_ctx *ctx, void *arg, long long *ttl)
{
    struct sem *s = arg;
    const char *argv[2] = { s->name, s->qty };
    int rc = redisson_int(ctx, redis_eval(ctx, 0, &try_acquire, 1, 2, argv), s->name, -1,
                          &s->left);

    *ttl = s->left >= 0 ? -2 : -1;  /* -1: until a release is announced */
    return rc;
}

static int sem_set(struct lock_ctx *ctx, const struct sem *s, long long permits, json_t *out)
{
    char p[24];
    const char *argv[3] = { s->name, s->channel, p };
    long long set;
    int rc;

    snprintf(p, sizeof p, "%lld", permits);
    rc = redisson_int(ctx, redis_eval(ctx, 0, &try_set_permits, 2, 3, argv), s->name, 0, &set);
    if (rc == LL_OK)
        json_object_set_new(out, "permits_set", json_boolean(set == 1));
    return rc;
}

static int sem_release(struct lock_ctx *ctx, const struct sem *s, long long *free)
{
    const char *argv[3] = { s->name, s->channel, s->qty };
    return redisson_int(ctx, redis_eval(ctx, 0, &release, 2, 3, argv), s->name, 0, free);
}

/* ---------------------------------------------------------------- operations */

/* [trySetPermits(permits);] acquire(qty); work hold_ms; release(qty). */
static int op_acquire(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct sem s;
    long long free;
    int rc;

    sem_init(&s, a);
    if (a->permits >= 0 && (rc = sem_set(ctx, &s, a->permits, out)) != LL_OK)
        return rc;
    rc = redisson_wait(ctx, s.channel, REDIS_WAKE_VALUE, sem_try, &s, 1);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "%s permit(s) of %s not obtained within %d ms",
                   s.qty, s.name, ctx->wait_ms);
    if (rc != LL_OK)
        return rc;
    json_object_set_new(out, "acquired", json_integer(strtoll(s.qty, NULL, 10)));
    json_object_set_new(out, "permits_after_acquire", json_integer(s.left));
    sync_granted(a, out);
    sync_released(out);
    rc = sem_release(ctx, &s, &free);
    if (rc == LL_OK)
        json_object_set_new(out, "permits_after_release", json_integer(free));
    return rc;
}

static int op_try_set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct sem s;
    int rc;

    sem_init(&s, a);
    if ((rc = sync_need(ctx, a->permits, "permits")) != LL_OK)
        return rc;
    return sem_set(ctx, &s, a->permits, out);
}

/* release(qty) without an acquire: permits have no owner. */
static int op_release(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct sem s;
    long long free;
    int rc;

    sem_init(&s, a);
    if ((rc = sem_release(ctx, &s, &free)) == LL_OK)
        json_object_set_new(out, "permits_after_release", json_integer(free));
    return rc;
}

static int op_available(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    long long free;
    int rc = redisson_int(ctx, redis_cmd(ctx, 0, "GET %s", a->name), a->name, 0, &free);

    if (rc == LL_OK)
        json_object_set_new(out, "available", json_integer(free));
    return rc;
}

static int sem_reset(struct lock_ctx *ctx, const char *name)
{
    const char *keys[1] = { name };
    return redisson_del(ctx, 1, keys);
}

static const struct sync_op sem_ops[] = {
    { "acquire", "wait_ms hold_ms permits qty",
      "[trySetPermits(permits)]; acquire(qty); hold_ms of work; release(qty)", op_acquire },
    { "try-set-permits", "permits", "trySetPermits(permits): only if unset", op_try_set },
    { "release", "qty", "release(qty): adds permits, whoever took them", op_release },
    { "available", "", "availablePermits()", op_available },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_redisson_semaphore = {
    .primitive = "semaphore",
    .backend   = "redisson",
    .library   = "Redisson RSemaphore",
    .where     = "string <name> (free permits), channel redisson_sc:{<name>}",
    .summary   = "Redisson RSemaphore: a counter <name>, DECRBY when enough are free, INCRBY and publish the count on release (seed 000 §3.9.6)",
    .flaw      = "permits have no owner: a holder that dies keeps its permit for ever, and anyone may release one it never took",
    .props     = LOCK_DISTRIBUTED | LOCK_EXACT,
    .invariant = "permits in use never above the permits set",
    .ceiling   = "sync_redisson_semaphore",
    .bench     = "acquire?permits=3",
    .bench_check = "holders<=3",
    .ops       = sem_ops,
    .reset     = sem_reset,
};
