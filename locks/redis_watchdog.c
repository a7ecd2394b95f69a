/* redis_watchdog.c — one worker that keeps held hash locks alive (seed 000
 * §3.7, Redisson's lock watchdog).
 *
 * A holder that is slower than its lease must not lose the lock, yet a
 * holder that dies must lose it within a lease: so the lease stays short
 * (--lease-ms) and is renewed every lease/3 for as long as the lock is
 * held. The renewal is the guarded script
 *
 *     if HEXISTS key field then (P)EXPIRE key lease; return 1 else return 0
 *
 * so renewing a lock that was released (or taken over) meanwhile does
 * nothing. A string lock (redis-renew, seed 004's renewed lock) is renewed
 * the same way, its token compared instead: if GET key == token then
 * PEXPIRE.
 *
 * Why one process-wide worker rather than one per holder (the seed's Timer
 * per lock): one worker serves every slot's lock at a cost of one script
 * call per lock per lease/3, with nothing created per acquisition. Holders
 * register in a table indexed by slot (a slot holds at most one key at a
 * time; re-entry is counted), and the worker sleeps on a wait_cond until
 * the earliest renewal is due; a new holder wakes it only when its renewal
 * is due before that, so the worker wakes about once a lease/3, not at
 * every sale. It starts lazily (pthread_once) at the first registration,
 * as a task_background(): a coroutine on the loop of the request that
 * registered first, or a thread of its own where there is none. Its
 * renewals are commands of a context of its own (clients/redis.h): on the
 * loop they share the pipelined connection with the requests' commands,
 * elsewhere they have their own connection. The table's mutex is never
 * held across a renewal. A renewal that finds the lock gone marks the
 * entry lost, and the strategy's check hook then refuses to write the
 * stock.
 *
 * Lease honesty: a renewal that fails or goes unanswered (Redis down, the
 * instance cut off, the whole process paused) is not a renewal. Each entry
 * keeps the end of the last lease Redis confirmed — from the acquire, then
 * from each renewal answered 1, measured from the moment it was sent —
 * and the check hook hands it to the write (ctx->lease_until_us), which
 * refuses once it may have passed (app/sale.c).
 */
#include "redis_private.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct watch_entry {
    int      depth;              /* entries of this slot; 0: not held       */
    enum redis_watch_unit unit;
    unsigned gen;                /* bumped at every first entry             */
    int      lost;               /* a renewal found the lock gone           */
    int64_t  lease_until_us;     /* the last confirmed lease ends (lock_lease) */
    int64_t  next_ms;            /* next renewal due (monotonic)            */
    char     key[80];
    char     field[REDIS_TOKEN_MAX];
};

static struct {
    pthread_mutex_t     mu;
    struct wait_cond    cv;
    struct watch_entry *e;
    int                 n;
    const struct config *cfg;
    struct lock_ctx     ctx;            /* the worker's: its Redis commands */
    int64_t             asleep_until;   /* the worker's wake-up; MAX: none */
} wd = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = WAIT_COND_INIT, .asleep_until = INT64_MAX };

static pthread_once_t wd_once = PTHREAD_ONCE_INIT;
static _Atomic(const struct config *) wd_cfg;

static struct redis_script renew_seconds = {
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then "
    "redis.call('expire', KEYS[1], ARGV[2]); return 1; else return 0; end",
    ""
};
static struct redis_script renew_millis = {
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); return 1; end; return 0;",
    ""
};
static struct redis_script renew_string = {
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); return 1; end; return 0;",
    ""
};

static int period_ms(void)
{
    int p = wd.cfg->lease_ms / 3;
    return p > 0 ? p : 1;
}

/* ---------------------------------------------------------------- renewal */

/* 1 renewed, 0 the lock is gone, -1 Redis did not answer. Called without
 * wd.mu, by the worker alone. */
static int renew(const char *key, const char *field, enum redis_watch_unit unit)
{
    char lease[24];
    const char *argv[3];
    redisReply *r;
    int rc;

    if (unit == WATCH_SECONDS)
        snprintf(lease, sizeof lease, "%d", (wd.cfg->lease_ms + 999) / 1000);
    else
        snprintf(lease, sizeof lease, "%d", wd.cfg->lease_ms);
    argv[0] = key;
    argv[1] = field;
    argv[2] = lease;
    r = redis_eval(&wd.ctx, 0, unit == WATCH_SECONDS ? &renew_seconds :
                   unit == WATCH_MILLIS ? &renew_millis : &renew_string, 1, 3, argv);
    if (r == NULL)
        return -1;
    rc = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    freeReplyObject(r);
    return rc;
}

static void watchdog_main(void *arg)
{
    struct watch_entry copy;
    int i, due, rc;
    int64_t now, first, sent;

    (void)arg;
    pthread_mutex_lock(&wd.mu);
    for (;;) {
        now = now_ms();
        due = -1;
        first = INT64_MAX;
        for (i = 0; i < wd.n; i++) {
            if (wd.e[i].depth == 0)
                continue;
            if (wd.e[i].next_ms <= now) {
                due = i;
                break;
            }
            if (wd.e[i].next_ms < first)
                first = wd.e[i].next_ms;
        }
        if (due < 0) {
            wd.asleep_until = first;
            wait_cond_wait(&wd.cv, &wd.mu, first == INT64_MAX ? WAIT_FOREVER : first * 1000);
            continue;
        }
        wd.asleep_until = now;          /* awake: holders need not signal */
        copy = wd.e[due];
        wd.e[due].next_ms = now + period_ms();
        pthread_mutex_unlock(&wd.mu);

        sent = now_us();
        rc = renew(copy.key, copy.field, copy.unit);

        pthread_mutex_lock(&wd.mu);
        if (wd.e[due].depth > 0 && wd.e[due].gen == copy.gen) {
            if (rc == 1)                /* confirmed: the lease runs on from sent */
                wd.e[due].lease_until_us = sent + wd.cfg->lease_ms * 1000LL -
                                           lock_drift_us(wd.cfg->lease_ms);
            if (rc == 0) {              /* expired or taken: stop renewing */
                wd.e[due].lost = 1;
                wd.e[due].next_ms = INT64_MAX;
            } else if (rc < 0)            /* Redis down: try again soon */
                wd.e[due].next_ms = now_ms() + REDIS_RECONNECT_MS;
        }
    }
}

static void watchdog_start(void)
{
    wd.cfg = atomic_load(&wd_cfg);
    wd.n = wd.cfg->threads;
    wd.e = xcalloc((size_t)wd.n, sizeof *wd.e);
    wd.ctx.slot = -1;
    wd.ctx.cfg = wd.cfg;
    task_background("redis-watchdog", watchdog_main, NULL);
}

/* ---------------------------------------------------------------- holders */

static void watchdog_init(const struct lock_ctx *ctx)
{
    atomic_store(&wd_cfg, ctx->cfg);
    pthread_once(&wd_once, watchdog_start);
}

void redis_watch(struct lock_ctx *ctx, const char *key, const char *field,
                 enum redis_watch_unit unit)
{
    struct watch_entry *e;

    watchdog_init(ctx);
    pthread_mutex_lock(&wd.mu);
    e = &wd.e[ctx->slot];
    if (e->depth++ == 0) {
        snprintf(e->key, sizeof e->key, "%s", key);
        snprintf(e->field, sizeof e->field, "%s", field);
        e->unit = unit;
        e->gen++;
        e->lost = 0;
        e->lease_until_us = ctx->lease_until_us;    /* from the acquire */
        e->next_ms = now_ms() + period_ms();
        /* Wake the worker only if it would sleep past this renewal: it
         * does once in a lease/3, not at every sale (a context switch). */
        if (e->next_ms < wd.asleep_until) {
            wd.asleep_until = e->next_ms;
            wait_cond_signal(&wd.cv);
        }
    }
    pthread_mutex_unlock(&wd.mu);
}

void redis_unwatch(struct lock_ctx *ctx)
{
    watchdog_init(ctx);
    pthread_mutex_lock(&wd.mu);
    if (wd.e[ctx->slot].depth > 0)
        wd.e[ctx->slot].depth--;
    pthread_mutex_unlock(&wd.mu);
}

int redis_watch_check(struct lock_ctx *ctx, const char *key)
{
    struct watch_entry *e;
    int64_t until;
    int lost;

    watchdog_init(ctx);
    pthread_mutex_lock(&wd.mu);
    e = &wd.e[ctx->slot];
    lost = e->depth > 0 && e->lost;
    until = e->depth > 0 ? e->lease_until_us : 0;
    pthread_mutex_unlock(&wd.mu);
    if (lost)
        return lock_error(ctx, LL_LOST, "redis",
                          "%s was lost while held (the watchdog could not renew it): "
                          "sale not written", key);
    if (until > ctx->lease_until_us)
        ctx->lease_until_us = until;
    return LL_OK;
}

/* The fenced hash locks' token: INCR of the counter while the hash still
 * has our field, in one step, so the token is issued to the holder alone. */
static struct redis_script hash_token = {
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then "
    "return redis.call('incr', KEYS[2]); end; return 0;",
    ""
};

int redis_watch_token(struct lock_ctx *ctx, const char *key, const char *field,
                      const char *counter, const char *service)
{
    const char *argv[3] = { key, counter, field };
    redisReply *r = redis_eval(ctx, 0, &hash_token, 2, 3, argv);

    if (r == NULL)
        return ctx->err;
    if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key);
    ctx->token = r->integer;
    ctx->token_src = service;
    freeReplyObject(r);
    if (ctx->token <= 0)
        return lock_error(ctx, LL_LOST, "redis", "%s was no longer held when its fencing "
                          "token was taken", key);
    return LL_OK;
}
