/* redis_set_nx_ex.c — one atomic SET with NX and EX (seed 000 §3.2).
 *
 *     acquire:  SET lock:P locked NX EX 3       OK: ours; nil: spin
 *     release:  DEL lock:P
 *
 * Lock and expiry in one command fix the window of redis-setnx-expire: a
 * holder that dies frees the lock within 3 s (the seed's constant). But the
 * value is a constant, so release cannot tell its own lock from another's:
 * a holder slower than the expiry loses the lock to a second sale while
 * still selling. Slow before the checks that precede its write
 * (?hold_ms=5000) it finds its 3 s lease spent and answers lock_lost
 * (app/sale.c's lease honesty); slow after them (?late_ms=5000, a
 * pause no check can see) both read the same count and an update is
 * lost, and its late DEL frees the second holder's lock, letting a third
 * in (seed §3.2's index1/index2/index3 story; tests/redis.sh). Not
 * reentrant.
 */
#include "redis_private.h"

#define SET_NX_EX_S 3

static int set_nx_ex_acquire(struct lock_ctx *ctx, const char *key)
{
    return redis_set_spin(ctx, key, "locked", "EX", SET_NX_EX_S);
}

const struct lock_ops lock_redis_set_nx_ex = {
    .name     = "redis-set-nx-ex",
    .family   = "redis",
    .summary  = "SET lock:P locked NX EX 3 in one command, DEL to unlock (seed 000 §3.2)",
    .flaw     = "no owner: a holder slower than the 3 s expiry is overtaken, and its DEL frees the next holder's lock",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = set_nx_ex_acquire,
    .release  = redis_del_key,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
};
