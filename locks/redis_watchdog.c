/* redis_watchdog.c — the worker that keeps held hash locks alive (seed 000
 * §3.7, Redisson's lock watchdog), a lease keeper (keeper.h).
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
 * One keeper serves every slot's lock (keeper.c says why and how it
 * sleeps). A slot holds at most one key at a time; re-entry is counted
 * here, and only the first entry hands the key to the keeper, the last
 * exit takes it back. The renewals are commands of a context of the
 * keeper's own (clients/redis.h): on the loop they share the pipelined
 * connection with the requests' commands, elsewhere they have their own
 * connection. A renewal that finds the lock gone marks it lost, and the
 * strategy's check hook then refuses to write the stock.
 *
 * Lease honesty: a renewal that fails or goes unanswered (Redis down, the
 * instance cut off, the whole process paused) is not a renewal. The keeper
 * keeps the end of the last lease Redis confirmed — from the acquire, then
 * from each renewal answered 1, measured from the moment it was sent — and
 * the check hook hands it to the write (ctx->lease_until_us), which
 * refuses once it may have passed (app/sale.c).
 */
#include "redis_private.h"
#include "keeper.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the keeper renews for a slot. */
struct watched {
    enum redis_watch_unit unit;
    char key[80];
    char field[REDIS_TOKEN_MAX];
};

static const struct config *wd_cfg;     /* the first holder's (keeper start) */
static struct lock_ctx wd_ctx;          /* the keeper's: its Redis commands  */
static int *wd_depth;                   /* per slot: entries of its one key  */

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

/* ---------------------------------------------------------------- renewal */

/* The keeper's hook: 1 renewed, 0 the lock is gone, no answer: again in
 * REDIS_RECONNECT_MS. */
static enum keep_answer watchdog_renew(const void *what, int64_t sent_us, int64_t *until_us,
                                       int *retry_ms)
{
    const struct watched *w = what;
    char lease[24];
    const char *argv[3];
    redisReply *r;
    int rc;

    if (w->unit == WATCH_SECONDS)
        snprintf(lease, sizeof lease, "%d", (wd_cfg->lease_ms + 999) / 1000);
    else
        snprintf(lease, sizeof lease, "%d", wd_cfg->lease_ms);
    argv[0] = w->key;
    argv[1] = w->field;
    argv[2] = lease;
    r = redis_eval(&wd_ctx, 0, w->unit == WATCH_SECONDS ? &renew_seconds :
                   w->unit == WATCH_MILLIS ? &renew_millis : &renew_string, 1, 3, argv);
    rc = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    if (r)
        freeReplyObject(r);
    if (rc == 1) {              /* confirmed: the lease runs on from sent */
        *until_us = sent_us + wd_cfg->lease_ms * 1000LL - lock_drift_us(wd_cfg->lease_ms);
        return KEEP_CONFIRMED;
    }
    if (rc == 0)                /* expired or taken: stop renewing */
        return KEEP_GONE;
    *retry_ms = REDIS_RECONNECT_MS;     /* Redis down: try again soon */
    return KEEP_RETRY;
}

static void watchdog_start(const struct config *cfg)
{
    wd_cfg = cfg;
    wd_depth = xcalloc((size_t)cfg->threads, sizeof *wd_depth);
    wd_ctx.slot = -1;
    wd_ctx.cfg = cfg;
}

static struct keeper watchdog = KEEPER_INIT("redis-watchdog", sizeof(struct watched),
                                            watchdog_renew, watchdog_start);

/* ---------------------------------------------------------------- holders */

static struct keeper *watchdog_of(const struct lock_ctx *ctx)
{
    keeper_init(&watchdog, ctx->cfg);
    return &watchdog;
}

void redis_watch(struct lock_ctx *ctx, const char *key, const char *field,
                 enum redis_watch_unit unit)
{
    struct keeper *k = watchdog_of(ctx);
    struct watched w = { .unit = unit };
    int period = wd_cfg->lease_ms / 3;

    if (wd_depth[ctx->slot]++ > 0)
        return;
    snprintf(w.key, sizeof w.key, "%s", key);
    snprintf(w.field, sizeof w.field, "%s", field);
    keeper_hold(k, ctx->slot, &w, ctx->lease_until_us, period > 0 ? period : 1);
}

void redis_unwatch(struct lock_ctx *ctx)
{
    struct keeper *k = watchdog_of(ctx);

    if (wd_depth[ctx->slot] > 0 && --wd_depth[ctx->slot] == 0)
        keeper_release(k, ctx->slot);
}

int redis_watch_check(struct lock_ctx *ctx, const char *key)
{
    int64_t until;
    enum keep_state s = keeper_state(watchdog_of(ctx), ctx->slot, &until);

    if (s == KEEP_LOST)
        return lock_error(ctx, LL_LOST, "redis",
                          "%s was lost while held (the watchdog could not renew it): "
                          "sale not written", key);
    if (s == KEEP_HELD && until > ctx->lease_until_us)
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
