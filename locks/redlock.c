/* redlock.c — redis.io's Redlock over N independent Redis servers (seed
 * 000 §3.8, https://redis.io/docs/manual/patterns/distributed-locks/).
 *
 * Every server in --redis is one of N masters with no replication between
 * them; lock:P is an ordinary SET-NX-PX key on each.
 *
 *     1. t0 = now; value = a fresh token (<instance uuid>:<slot>:<seq>)
 *     2. SET lock:P value NX PX ttl on all N servers, each with a timeout
 *        far below ttl (REDLOCK_SERVER_TIMEOUT), so a dead or hung server
 *        costs little; the commands are multiplexed — written to every
 *        socket first, then the answers read — as the page allows;
 *     3. elapsed = now − t0; validity = ttl − elapsed − drift, where
 *        drift = ttl/100 + 2 ms for clock drift between the servers;
 *     4. held iff at least N/2+1 servers said OK and validity > 0;
 *     5. otherwise release on every server (even those that said no or
 *        did not answer: a SET may have landed after the timeout) and retry
 *        after a random delay (jittered --retry-ms), until the deadline.
 * Release is the compare-and-delete script on every server. ttl is
 * --lease-ms. The check hook refuses to write the stock once the validity
 * has run out (there is no renewal), so a holder slower than the validity
 * aborts its sale rather than overlap another.
 *
 * When fewer than a quorum of servers can even be reached, waiting cannot
 * help: the answer is 503 unavailable naming a down server.
 *
 * What it still gets wrong (Kleppmann's critique): safety rests on timing —
 * a pause between the validity check and the write, or a server that
 * restarts without persistence and forgets a key, admits a second holder;
 * there is no fencing token for the storage to reject a stale writer.
 */
#include "redis_private.h"
#include "../app/util.h"

#include <string.h>

static int server_timeout_ms(const struct lock_ctx *ctx)
{
    int t = ctx->cfg->lease_ms / 60;        /* 50 ms for a 3 s ttl */
    return t < 10 ? 10 : t > 50 ? 50 : t;
}

/* Write the queued commands of every context in c[] (NULL: skipped). */
static void flush_all(struct lock_ctx *ctx, redisContext **c, int n)
{
    int i, done;

    for (i = 0; i < n; i++) {
        if (c[i] == NULL)
            continue;
        done = 0;
        while (!done)
            if (redisBufferWrite(c[i], &done) != REDIS_OK) {
                redis_drop(ctx, i, "SET");
                c[i] = NULL;
                break;
            }
    }
}

/* Compare-and-delete `token` on every server; returns how many deleted. */
static int release_all(struct lock_ctx *ctx, const char *key, const char *token, int *down)
{
    const char *argv[2] = { key, token };
    redisReply *r;
    int i, n = ctx->cfg->nredis, deleted = 0;

    *down = 0;
    for (i = 0; i < n; i++) {
        r = redis_eval_within(ctx, i, server_timeout_ms(ctx), &redis_compare_and_delete,
                              1, 2, argv);
        if (r == NULL) {
            (*down)++;
            continue;
        }
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            deleted++;
        freeReplyObject(r);
    }
    return deleted;
}

/* One round: LL_OK with *got, or LL_UNAVAILABLE when no quorum is reachable. */
static int redlock_round(struct lock_ctx *ctx, const char *key, int *got)
{
    struct redis_set *rs = redis_set_of(ctx);
    redisContext *c[CONFIG_MAX_SERVERS];
    char token[REDIS_TOKEN_MAX];
    int i, n = ctx->cfg->nredis, quorum = n / 2 + 1, ok = 0, down = 0, first_down = -1;
    int ttl = ctx->cfg->lease_ms, drift = ttl / 100 + 2;
    int64_t t0, validity;
    void *reply;

    *got = 0;
    redis_new_token(ctx, token, sizeof token);
    t0 = now_ms();
    for (i = 0; i < n; i++) {
        c[i] = redis_link(ctx, i, server_timeout_ms(ctx));
        if (c[i] && redisAppendCommand(c[i], "SET %s %s NX PX %d", key, token, ttl) != REDIS_OK) {
            redis_drop(ctx, i, "SET");
            c[i] = NULL;
        }
    }
    flush_all(ctx, c, n);
    for (i = 0; i < n; i++) {
        if (c[i] == NULL) {
            down++;
            if (first_down < 0)
                first_down = i;
            continue;
        }
        ctx->backend_ops++;
        reply = NULL;
        if (redisGetReply(c[i], &reply) != REDIS_OK) {
            redis_drop(ctx, i, "SET");
            down++;
            if (first_down < 0)
                first_down = i;
            continue;
        }
        if (((redisReply *)reply)->type == REDIS_REPLY_STATUS)
            ok++;
        freeReplyObject(reply);
    }
    validity = ttl - (now_ms() - t0) - drift;
    if (ok >= quorum && validity > 0) {
        memcpy(rs->token, token, sizeof token);
        rs->valid_until_ms = t0 + validity;
        *got = 1;
        return LL_OK;
    }
    release_all(ctx, key, token, &i);
    if (n - down < quorum)
        return lock_error(ctx, LL_UNAVAILABLE, rs->name[first_down],
                          "Redlock needs %d of %d Redis servers, %d unreachable (%s …)",
                          quorum, n, down, rs->name[first_down]);
    return LL_OK;
}

static int redlock_acquire(struct lock_ctx *ctx, const char *key)
{
    int got, rc;

    for (;;) {
        if ((rc = redlock_round(ctx, key, &got)) != LL_OK || got)
            return rc;
        if (lock_backoff(ctx) != LL_OK)
            return LL_TIMEOUT;
    }
}

static int redlock_check(struct lock_ctx *ctx, const char *key)
{
    struct redis_set *rs = redis_set_of(ctx);
    int64_t over = now_ms() - rs->valid_until_ms;

    if (over >= 0)
        return lock_error(ctx, LL_ERROR, "redis",
                          "Redlock validity of %s ran out %lld ms before the write: "
                          "sale not written", key, (long long)over);
    return LL_OK;
}

static int redlock_release(struct lock_ctx *ctx, const char *key)
{
    struct redis_set *rs = redis_set_of(ctx);
    char errstr[sizeof ctx->errstr];
    const char *backend = ctx->backend;
    int down, deleted, err = ctx->err;

    memcpy(errstr, ctx->errstr, sizeof errstr);
    deleted = release_all(ctx, key, rs->token, &down);
    if (deleted == 0 && down == 0)
        return lock_error(ctx, LL_ERROR, "redis",
                          "%s had expired on every server before release", key);
    /* A down server is no failure of this release: keep what ctx said. */
    ctx->err = err;
    ctx->backend = backend;
    memcpy(ctx->errstr, errstr, sizeof errstr);
    return LL_OK;
}

static int redlock_reset(struct lock_ctx *ctx, const char *key)
{
    const char *keys[1] = { key };
    int i, rc, worst = LL_OK;

    for (i = 0; i < ctx->cfg->nredis; i++)
        if ((rc = redis_del(ctx, i, 1, keys)) != LL_OK)
            worst = rc;
    return worst;
}

const struct lock_ops lock_redlock = {
    .name     = "redlock",
    .family   = "redis",
    .summary  = "Redlock: SET NX PX on all N independent servers, quorum N/2+1, validity = ttl - elapsed - drift",
    .flaw     = "safety rests on timing (pauses, clock jumps, restarts without fsync); no fencing token; no renewal",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .acquire  = redlock_acquire,
    .release  = redlock_release,
    .check    = redlock_check,
    .reset    = redlock_reset,
    .ctx_free = redis_ctx_free,
};
