/* redis_renew.c — seed 004's renewed string lock ("方案五：增强版 - 锁续期机
 * 制"): SET NX with an owner token and an expiry, renewed while held.
 *
 *     acquire:  SET lock:P <token> PX <lease> NX, spinning while taken
 *     renew:    every lease/3, by the watchdog (redis_watchdog.c):
 *               EVALSHA "if get(KEYS[1]) == ARGV[1] then
 *                           pexpire(KEYS[1], ARGV[2]); return 1
 *                        else return 0 end"  1 lock:P <token> <lease>
 *     release:  stop renewing, then the compare-and-delete script
 *
 * The seed's class starts a ScheduledExecutorService task at expire/3 that
 * checks the token and extends the expiry, and cancels it before the
 * release: redis-lua plus a watchdog, for a string lock. Here the renewal
 * is the one process-wide watchdog's (the hash locks' too), and lease
 * honesty holds: a renewal that failed does not extend what the holder
 * counts on, and one that found the token gone stops the write (the seed
 * only logs "锁续期失败" and carries on).
 *
 * What it still gets wrong: it is not reentrant; waiters poll (a release
 * elsewhere is seen at the next poll, in no order); and it lives on one
 * Redis server, so a failover to a replica that had not received the key
 * lets a second holder in (tests/failover.sh), as for redisson.
 */
#include "redis_private.h"

static int renew_acquire(struct lock_ctx *ctx, const char *key)
{
    int rc = redis_set_token_spin(ctx, key, "PX", ctx->cfg->lease_ms);

    if (rc == LL_OK)
        redis_watch(ctx, key, redis_hold_of(ctx)->token, WATCH_STRING);
    return rc;
}

static int renew_release(struct lock_ctx *ctx, const char *key)
{
    redis_unwatch(ctx);
    return redis_token_release(ctx, key);
}

const struct lock_ops lock_redis_renew = {
    .name     = "redis-renew",
    .family   = "redis",
    .summary  = "SET lock:P <token> PX <lease> NX, renewed at lease/3 by a token-checked PEXPIRE (seed 004 scheme 5)",
    .flaw     = "not reentrant; waiters poll; one Redis: a failover that missed the lock admits a second holder",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = renew_acquire,
    .release  = renew_release,
    .check    = redis_watch_check,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
};
