/* redis_setnx.c — SETNX to lock, DEL to unlock (seed 000 §3.1).
 *
 *     acquire:  SETNX lock:P <owner>      1: ours; 0: sleep a jittered
 *                                          --retry-ms and try again
 *     release:  DEL lock:P
 *
 * The first Redis lock of the course: one atomic command decides the
 * winner, so concurrent sales are excluded — as long as every holder lives
 * to send its DEL. The key has no expiry, so a holder that dies (?crash=1)
 * leaves lock:P behind for ever and every later sale times out until
 * POST /stock/reset deletes it (seed §3.2's "死锁"). Not reentrant: a
 * request that asks twice (?reentry=2) is refused with 400 (parameter
 * "reentry") before it could wait for itself until its deadline.
 */
#include "redis_private.h"

static int setnx_acquire(struct lock_ctx *ctx, const char *key)
{
    char owner[80];

    lock_owner(ctx, owner, sizeof owner);
    return redis_set_spin(ctx, key, owner, NULL, 0);
}

const struct lock_ops lock_redis_setnx = {
    .name     = "redis-setnx",
    .family   = "redis",
    .summary  = "SETNX lock:P to lock, DEL to unlock, spin while taken (seed 000 §3.1)",
    .flaw     = "no expiry: a holder that dies leaves the lock for ever (deadlock); not reentrant",
    .props    = LOCK_DISTRIBUTED | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = setnx_acquire,
    .release  = redis_del_key,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
};
