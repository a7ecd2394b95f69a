/* redis_setnx_expire.c — SETNX, then EXPIRE as a second command (seed 004
 * scheme 1, seed 000 §3.2 "方式1").
 *
 *     acquire:  SETNX lock:P <owner>; if 1: EXPIRE lock:P 3
 *     release:  DEL lock:P
 *
 * The expiry frees the lock of a holder that dies while holding it — but
 * only once EXPIRE has run. The two commands are not atomic: a death
 * between them leaves a lock with no expiry, for ever. ?crash=1 lands
 * exactly there for this strategy (between SETNX and EXPIRE), so the flaw
 * is shown on demand. The 3 s expiry is the seed's constant; a holder
 * slower than that is overtaken and its DEL then frees someone else's lock.
 */
#include "redis_private.h"

#include <stdio.h>
#include <unistd.h>

#define SETNX_EXPIRE_S 3

static int setnx_expire_acquire(struct lock_ctx *ctx, const char *key)
{
    char owner[80];
    redisReply *r;
    int64_t sent;
    int rc;

    lock_owner(ctx, owner, sizeof owner);
    if ((rc = redis_set_spin(ctx, key, owner, NULL, 0)) != LL_OK)
        return rc;
    if (ctx->crash) {   /* fault: die in the window the seed warns about */
        fprintf(stderr, "locklab: crash requested between SETNX and EXPIRE of %s\n", key);
        _exit(3);
    }
    sent = now_us();        /* the lease runs from the EXPIRE, the second step */
    if ((r = redis_cmd(ctx, 0, "EXPIRE %s %d", key, SETNX_EXPIRE_S)) == NULL)
        return ctx->err;    /* the lock stays, without expiry: the flaw */
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, 0, r, key);
    freeReplyObject(r);
    lock_lease(ctx, sent, SETNX_EXPIRE_S * 1000);
    return LL_OK;
}

const struct lock_ops lock_redis_setnx_expire = {
    .name     = "redis-setnx-expire",
    .family   = "redis",
    .summary  = "SETNX lock:P then EXPIRE lock:P 3 as two commands, DEL to unlock (seed 004 scheme 1)",
    .flaw     = "not atomic: a death between SETNX and EXPIRE leaves the lock for ever; a holder slower than 3 s is overtaken",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = setnx_expire_acquire,
    .release  = redis_del_key,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
};
