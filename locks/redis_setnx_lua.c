/* redis_setnx_lua.c — SETNX and EXPIRE in one Lua script (seed 004 scheme
 * 3, "使用 Lua 脚本(包含 SETNX + EXPIRE 两条指令)").
 *
 *     acquire:  EVALSHA "if setnx(KEYS[1], ARGV[1]) == 1 then
 *                           expire(KEYS[1], ARGV[2]); return 1
 *                        else return 0 end"  1 lock:P <token> <seconds>
 *     release:  the compare-and-delete script (redis-lua's)
 *
 * Redis runs a script as one command, so the window of redis-setnx-expire
 * (scheme 1: a death between SETNX and EXPIRE leaves the lock for ever) is
 * closed. The expiry is the seed's EXPIRE, in whole seconds: --lease-ms
 * rounded up. The value is an owner token (the seed passes one as ARGV[1])
 * and the release deletes only the slot's own lock, as the seed's unlock
 * script does. With ?fence=1 the script also takes a fencing token, INCR of
 * locklab_fence:{lock:P} when it sets the key (REDIS_FENCE), in the same step.
 *
 * What it still gets wrong, as redis-lua: nothing renews the expiry, so a
 * holder slower than it is overtaken and two sales overlap (its release
 * then finds the lock gone); it is not reentrant; one Redis server.
 */
#include "redis_private.h"

#include <stdio.h>
#include <string.h>

static struct redis_script setnx_expire = {
    "if redis.call('setnx', KEYS[1], ARGV[1]) == 1 then "
    "redis.call('expire', KEYS[1], ARGV[2]); "
    "if ARGV[3] == '1' then return redis.call('incr', KEYS[2]); end; "
    "return 1; "
    "end; return 0;",
    ""
};

struct setnx_lua_try {
    const char *token;
    char        seconds[16];
};

static int setnx_lua_try(struct lock_ctx *ctx, const char *key, const void *arg)
{
    const struct setnx_lua_try *t = arg;
    char counter[LOCK_KEY_MAX + 24];
    const char *argv[5] = { key, counter, t->token, t->seconds, ctx->fence ? "1" : "0" };
    redisReply *r;
    int got;

    snprintf(counter, sizeof counter, REDIS_FENCE_KEY, key);
    if ((r = redis_eval(ctx, 0, &setnx_expire, 2, 5, argv)) == NULL)
        return -1;
    if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key), -1;
    got = r->integer > 0;
    if (got && ctx->fence) {
        ctx->token = r->integer;
        ctx->token_src = REDIS_FENCE;
    }
    freeReplyObject(r);
    return got;
}

static int setnx_lua_acquire(struct lock_ctx *ctx, const char *key)
{
    int seconds = (ctx->cfg->lease_ms + 999) / 1000;
    struct setnx_lua_try t;
    char token[REDIS_TOKEN_MAX];
    int rc;

    redis_new_token(ctx, token, sizeof token);
    t.token = token;
    snprintf(t.seconds, sizeof t.seconds, "%d", seconds);
    if ((rc = redis_spin(ctx, key, "string", setnx_lua_try, &t, seconds * 1000LL)) == LL_OK)
        memcpy(redis_hold_of(ctx)->token, token, sizeof token);
    return rc;
}

const struct lock_ops lock_redis_setnx_lua = {
    .name     = "redis-setnx-lua",
    .family   = "redis",
    .summary  = "SETNX and EXPIRE in one Lua script; compare-and-delete release (seed 004 scheme 3)",
    .flaw     = "no renewal: a holder slower than the expiry (whole seconds) is overtaken; not reentrant",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = setnx_lua_acquire,
    .release  = redis_token_release,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
};
