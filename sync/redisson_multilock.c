/* redisson_multilock.c — Redisson's RedissonMultiLock (seed 000 §3.9.3):
 * several RLocks taken as one, all or nothing.
 *
 * ?names=a,b,c are RLock names: hashes a, b, c {"<uuid>:<thread>": count}
 * and channels redisson_lock__channel:{a} …, with RedissonLock's own
 * scripts (locks/redisson.c), so each is the lock redisson.getLock("a")
 * takes in Java, and the `redisson` strategy's lock when the name is
 * lock:<product>. RedissonMultiLock.tryLock(wait, lease) takes them in the
 * order given, each with the time left and a provisional lease of twice
 * the wait; a lock not obtained in that time releases those it took and
 * fails (with no time left there is no second round); once all are held,
 * each gets the lease asked for (?lease_ms=, 10 s by default). ?hold_ms=
 * then ?unlock=1 give them all back, each unlock publishing "0", the last
 * taken first (Redisson unlocks them all at once, asynchronously): a waiter
 * woken by the first name finds the others free already, rather than
 * taking the first and waiting again for the next.
 */
#include "sync_private.h"

#include <stdio.h>
#include <string.h>

struct ml {
    const struct sync_args *a;
    char field[80], lease[16];
    int  at;                        /* the lock being taken */
};

static void channel_of(const char *key, char *buf, size_t len)
{
    snprintf(buf, len, "redisson_lock__channel:{%s}", key);
}

static int ml_try(struct lock_ctx *ctx, void *arg, long long *ttl)
{
    struct ml *m = arg;
    const char *argv[3] = { m->a->names[m->at], m->lease, m->field };

    return redis_ttl_reply(ctx, redis_eval(ctx, 0, &redisson_lock, 1, 3, argv),
                           m->a->names[m->at], ttl);
}

static int ml_unlock(struct lock_ctx *ctx, struct ml *m, int i)
{
    char channel[SYNC_NAME_MAX + 32];
    const char *argv[5] = { m->a->names[i], channel, "0", m->lease, m->field };
    struct redis_sub *sub;
    redisReply *r;
    long long v;
    int rc;

    channel_of(m->a->names[i], channel, sizeof channel);
    /* As the `redisson` strategy does: a waiter of this instance is woken
     * at once, and the unlock message then wakes nobody here. */
    sub = redis_sub_releasing(channel);
    r = redis_eval(ctx, 0, &redisson_unlock, 2, 5, argv);
    redis_sub_released(sub, r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    rc = redisson_int(ctx, r, m->a->names[i], -1, &v);
    if (rc == LL_OK && v < 0)
        rc = lock_error(ctx, LL_ERROR, "redis", "attempt to unlock %s, not locked by %s "
                        "(its lease ran out?)", m->a->names[i], m->field);
    return rc;
}

/* Give back locks [0, n) — on failure, keeping the first error. */
static void ml_unlock_all(struct lock_ctx *ctx, struct ml *m, int n)
{
    struct lock_saved_error e;
    int i;

    lock_error_save(ctx, &e);
    for (i = 0; i < n; i++)
        ml_unlock(ctx, m, i);
    lock_error_restore(ctx, &e);
}

static int op_lock(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char channel[SYNC_NAME_MAX + 32];
    int lease = a->lease_ms > 0 ? a->lease_ms : 10000;
    struct ml m = { .a = a };
    int rc = LL_OK, i;

    if (a->nnames == 0)
        return lock_error(ctx, LL_BADREQ, NULL, "lock needs ?names=a,b,…");
    redisson_field(ctx, sync_thread_id(), m.field, sizeof m.field);
    snprintf(m.lease, sizeof m.lease, "%d", 2 * (ctx->wait_ms > 0 ? ctx->wait_ms : lease));
    for (m.at = 0; m.at < a->nnames; m.at++) {
        channel_of(a->names[m.at], channel, sizeof channel);
        if ((rc = redisson_wait(ctx, channel, REDIS_WAKE_ONE, ml_try, &m, 1)) != LL_OK)
            break;
    }
    if (rc != LL_OK) {
        if (rc == LL_TIMEOUT)
            lock_error(ctx, LL_TIMEOUT, NULL, "%s not obtained within %d ms: the %d lock(s) "
                       "taken before it were released", a->names[m.at], ctx->wait_ms, m.at);
        ml_unlock_all(ctx, &m, m.at);
        return rc;
    }
    for (i = 0; i < a->nnames; i++) {   /* the lease asked for, now that all are held */
        redisReply *r = redis_cmd(ctx, 0, "PEXPIRE %s %d", a->names[i], lease);
        if (r == NULL) {
            ml_unlock_all(ctx, &m, a->nnames);
            return ctx->err;
        }
        freeReplyObject(r);
    }
    snprintf(m.lease, sizeof m.lease, "%d", lease);
    json_object_set_new(out, "holder", json_string(m.field));
    json_object_set_new(out, "lease_ms", json_integer(lease));
    json_object_set_new(out, "locked", json_integer(a->nnames));
    sync_granted(a, out);
    if (!a->unlock) {
        json_object_set_new(out, "released", json_string("by its lease"));
        return LL_OK;
    }
    sync_released(out);
    for (i = a->nnames - 1, rc = LL_OK; i >= 0; i--) {    /* the last taken first */
        int one = ml_unlock(ctx, &m, i);
        if (rc == LL_OK)
            rc = one;
    }
    return rc;
}

static int ml_reset(struct lock_ctx *ctx, const char *name)
{
    const char *keys[1] = { name };
    return redisson_del(ctx, 1, keys);
}

static const struct sync_op ml_ops[] = {
    { "lock", "names wait_ms hold_ms lease_ms unlock",
      "tryLock(wait, lease) on every name in order, all or nothing", op_lock },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_redisson_multilock = {
    .primitive = "multilock",
    .backend   = "redisson",
    .library   = "Redisson RedissonMultiLock",
    .where     = "hashes <each name> {<uuid>:<thread>: count}, channels redisson_lock__channel:{<each name>} (RLock's)",
    .summary   = "RedissonMultiLock: RLock's script on each name in order; one not obtained in the time left releases the others (seed 000 §3.9.3)",
    .flaw      = "no order between clients that list the names differently: they wait for each other until one's time runs out; one Redis server",
    .props     = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .invariant = "no two holders of one name at once",
    .ceiling   = "sync_redisson_multilock",
    .bench     = "lock?names=bench-ml-a,bench-ml-b&lease_ms=10000&unlock=1",
    .bench_check = "holders<=1",
    .ops       = ml_ops,
    .reset     = ml_reset,
};
