/* redisson_wait.c — redisson, then WAIT: the lock is held only once a
 * replica has it too (seed 000 §3.8, seed 001 进阶8, seed 002: a failover
 * to a replica that had not received the lock lets a second holder in).
 *
 *     acquire:  redisson's tryLock and wait (redisson.c), then on the same
 *               connection  WAIT <replicas> REDISSON_WAIT_MS
 *               fewer acknowledged than asked: unlock, 503 unavailable
 *     release, check, watchdog, fencing: redisson's
 *
 * This is what Redisson's own lock can do (its checkLockSyncedSlaves
 * setting, with slavesSyncTimeout 1 s): it sends WAIT in one batch with the
 * tryLock script and refuses the lock when fewer replicas than it knows
 * acknowledged it. Here the WAIT is a round trip of its own, after the
 * script. How many replicas: those the master lists in ROLE, asked on each
 * new connection and again once a second on it (Redisson counts the
 * replicas its Sentinel view holds). A master without replicas — the stack
 * without --redis-replica — leaves nothing to wait for, and this is
 * redisson.
 *
 * WAIT counts the writes of this connection only, so the acquire pins the
 * slot to its own connection (redis_pin(): on the loop the other requests'
 * commands share another), and had that connection been replaced between
 * the script and the WAIT, a WAIT on the new one would be acknowledged at
 * once for nothing, so that case refuses the lock too.
 *
 * Why a strategy and not a parameter of redisson: it is a different lock,
 * with a different price and a different failure, and as its own row of
 * GET /locks, the README table and bench/compare it is measured beside
 * redisson (docs/journal.md); the query's parameter mask is nearly
 * full as well.
 *
 * What it fixes: bench/fault failover --lag (the replica cut off, then the
 * failover) no longer gives two holders: while the replica lags, no lock is
 * granted at all (tests/failover.sh). What it costs: a round trip and the
 * replica's acknowledgement on every acquisition, and no lock while the
 * replica lags. What it still gets wrong: WAIT is not consensus. A lock a
 * replica acknowledged was received, not kept: a replica that restarts
 * without its data, or a failover to another replica than the one that
 * acknowledged (with several), loses it all the same; the watchdog's
 * renewals are not waited for.
 */
#include "redis_private.h"

#include <stdio.h>
#include <string.h>

#define REDISSON_WAIT_MS 1000   /* Redisson's slavesSyncTimeout */
#define ROLE_REFRESH_MS  1000

/* The replicas of the master on this slot's own connection to server 0,
 * by ROLE; -1 with the failure on ctx (a demoted master is dropped: the
 * next connection asks the Sentinel). */
static int master_replicas(struct lock_ctx *ctx)
{
    struct redis_hold *h = redis_hold_of(ctx);
    unsigned gen = redis_own_gen(ctx, 0);
    int64_t now = now_ms();
    redisReply *r;
    int n;

    if (gen && h->replicas_gen == gen && now < h->replicas_at_ms + ROLE_REFRESH_MS)
        return h->replicas;
    if ((r = redis_cmd(ctx, 0, "ROLE")) == NULL)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return redis_reply_error(ctx, 0, r, "ROLE"), -1;
    if (strcmp(r->element[0]->str, "master") != 0) {
        freeReplyObject(r);
        redis_drop(ctx, 0, "ROLE");     /* the next connection asks the Sentinel */
        lock_error(ctx, LL_UNAVAILABLE, redis_name(ctx, 0), "%s is a replica now, not the "
                   "master (a failover)", redis_name(ctx, 0));
        return -1;
    }
    n = r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY
        ? (int)r->element[2]->elements : 0;
    freeReplyObject(r);
    h->replicas = n;
    h->replicas_gen = redis_own_gen(ctx, 0);
    h->replicas_at_ms = now;
    return n;
}

/* WAIT for want replicas on the connection of generation gen: how many
 * acknowledged, or -1 with the failure on ctx. */
static long long replicas_wait(struct lock_ctx *ctx, unsigned gen, int want)
{
    struct redis_pipe p;
    redisReply *r;
    long long acked;

    redis_pipe_init(&p, ctx, 0, REDISSON_WAIT_MS + REDIS_CMD_TIMEOUT_MS, REDIS_OWN, "WAIT");
    redis_pipe_add(&p, "WAIT %d %d", want, REDISSON_WAIT_MS);
    if (redis_pipe_send(&p) != LL_OK) {
        redis_pipe_free(&p);
        return -1;
    }
    if (redis_own_gen(ctx, 0) != gen) {
        redis_pipe_free(&p);            /* unread: that connection goes too */
        lock_error(ctx, LL_UNAVAILABLE, redis_name(ctx, 0), "the connection to %s that "
                   "took the lock was lost before its WAIT", redis_name(ctx, 0));
        return -1;
    }
    if (redis_pipe_recv(&p, &r) != LL_OK)
        return -1;
    if (r->type != REDIS_REPLY_INTEGER)
        return redis_reply_error(ctx, 0, r, "WAIT"), -1;
    acked = r->integer;
    freeReplyObject(r);
    return acked;
}

/* redisson's acquire, then the WAIT, all on the slot's own connection:
 * WAIT counts the writes of the connection it is sent on. */
static int wait_acquire(struct lock_ctx *ctx, const char *key)
{
    char why[sizeof ctx->errstr];
    const char *backend;
    unsigned gen;
    long long acked;
    int rc, want;

    if ((rc = redisson_acquire(ctx, key)) != LL_OK)
        return rc;
    gen = redis_own_gen(ctx, 0);        /* the connection the lock was taken on */
    if ((want = master_replicas(ctx)) == 0)
        return LL_OK;
    acked = want < 0 ? -1 : replicas_wait(ctx, gen, want);
    if (acked >= want)
        return LL_OK;
    if (acked >= 0)
        lock_error(ctx, LL_UNAVAILABLE, redis_name(ctx, 0), "%lld of %d replica(s) of %s "
                   "acknowledged %s within %d ms: a failover could lose it, so it is not "
                   "held", acked, want, redis_name(ctx, 0), key, REDISSON_WAIT_MS);
    rc = ctx->err;
    backend = ctx->backend;
    snprintf(why, sizeof why, "%s", ctx->errstr);
    redisson_release(ctx, key);         /* best effort: the lease frees it otherwise */
    return lock_error(ctx, rc, backend, "%s", why);
}

static int redisson_wait_acquire(struct lock_ctx *ctx, const char *key)
{
    int rc;

    redis_pin(ctx, 1);
    rc = wait_acquire(ctx, key);
    redis_pin(ctx, 0);
    return rc;
}

const struct lock_ops lock_redisson_wait = {
    .name     = "redisson-wait",
    .family   = "redis",
    .summary  = "redisson, then WAIT for the master's replicas: the lock is held only once a replica has it",
    .flaw     = "WAIT is not consensus (a replica restarted empty, another promoted); no lock while the replica lags",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = redisson_wait_acquire,
    .release  = redisson_release,
    .check    = redis_watch_check,
    .reset    = redis_del_key,
    .fence    = REDISSON_FENCE,
};
