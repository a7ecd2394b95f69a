/* redis_lua.c — owner token, atomic compare-and-delete in Lua (seed 000
 * §3.4–3.5).
 *
 *     acquire:  SET lock:P <token> PX <lease> NX   token = <instance>:<slot>:<seq>
 *     release:  EVALSHA "if GET(KEYS[1]) == ARGV[1] then return DEL(KEYS[1])
 *                        else return 0 end" 1 lock:P <token>
 *               (EVAL with the source when the server answers NOSCRIPT)
 *
 * The script runs atomically in Redis, closing redis-uuid's window: a
 * holder can only ever delete its own lock. A holder that dies frees the
 * lock when the lease (--lease-ms) runs out. What is left: nothing renews
 * the lease, so a holder slower than it is overtaken and two sales overlap
 * (its release then finds the lock gone and reports it); and it is not
 * reentrant. The fault switch ?release_pause_ms pauses before the script:
 * past the lease, the script finds another holder's token and deletes
 * nothing (bench/lesson uuid-window).
 */
#include "redis_private.h"
#include "protocol.h"

#include <string.h>

static int lua_acquire(struct lock_ctx *ctx, const char *key)
{
    return redis_set_token_spin(ctx, key, "PX", ctx->cfg->lease_ms);
}

int redis_token_release(struct lock_ctx *ctx, const char *key)
{
    struct redis_hold *h = redis_hold_of(ctx);
    const char *argv[2] = { key, h->token };
    redisReply *r;
    int deleted;

    lock_release_pause(ctx);    /* the fault: no step to pause between */
    if ((r = redis_eval(ctx, 0, &redis_compare_and_delete, 1, 2, argv)) == NULL)
        return ctx->err;
    if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, key);
    deleted = r->integer == 1;
    freeReplyObject(r);
    if (!deleted)
        return lock_error(ctx, LL_ERROR, "redis",
                          "%s was no longer ours at release (lease of %d ms ran out)",
                          key, ctx->cfg->lease_ms);
    return LL_OK;
}

const struct lock_ops lock_redis_lua = {
    .name     = "redis-lua",
    .family   = "redis",
    .summary  = "SET lock:P <token> PX <lease> NX; release by an atomic compare-and-delete Lua script (seed 000 §3.5)",
    .flaw     = "no renewal: a holder slower than the lease is overtaken and two sales overlap; not reentrant",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .protocol = (const char *const[]){ redis_compare_and_delete_lua, NULL },
    .hold_rtts = 4, /* grant out, SELECT, UPDATE, release in, next SET */
    .acquire  = lua_acquire,
    .release  = redis_token_release,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
    .release_pause = "before its compare-and-delete script (one step: nothing between)",
};
