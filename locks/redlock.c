/* redlock.c — redis.io's Redlock over N independent Redis servers (seed
 * 000 §3.8, https://redis.io/docs/manual/patterns/distributed-locks/).
 *
 * Every server in --redis is one of N masters with no replication between
 * them; lock:P is an ordinary SET-NX-PX key on each.
 *
 *     1. t0 = now; value = a fresh token (<instance uuid>:<slot>:<seq>)
 *     2. SET lock:P value NX PX ttl on the N servers in turn, in the same
 *        order for every client, each with a timeout far below ttl
 *        (server_timeout_ms(): ttl/30, at most 100 ms), so a dead or hung
 *        server costs little. As Redisson's MultiLock, the round stops as
 *        soon as a quorum is out of reach; servers we cannot connect to
 *        are counted first, so with two of five down a client stops at
 *        its first "taken" instead of splitting the remaining votes. (Multiplexing the SETs to all
 *        servers at once, which the page allows, was faster alone but
 *        split the votes under contention: with clients reaching the
 *        servers in different orders, nobody got a quorum, everyone
 *        released and retried — with two of five servers down, requests
 *        starved. A common order makes the winner of the first server
 *        the likely winner of the rest.)
 *     3. elapsed = now − t0; validity = ttl − elapsed − drift, where
 *        drift = ttl/100 + 2 ms for clock drift between the servers;
 *     4. held iff at least N/2+1 servers said OK and validity > 0;
 *     5. otherwise release, and retry after a random delay (jittered
 *        --retry-ms) until the deadline. The page says "all instances";
 *        we skip those that answered nil — they hold nothing of ours —
 *        but include those that did not answer, since a SET may have
 *        landed after our timeout.
 * Release is the compare-and-delete script on every server, multiplexed —
 * written to every socket, then the answers read — with EVAL and the
 * source (no NOSCRIPT round). ttl is
 * --lease-ms. The check hook refuses to write the stock once the validity
 * has run out (there is no renewal), so a holder slower than the validity
 * aborts its sale rather than overlap another.
 *
 * When fewer than a quorum of servers can even be connected to, waiting
 * cannot help: the answer is 503 unavailable naming a down server. A
 * server that merely timed out counts as a "no" for the round: on a slot's
 * own connection the next round reconnects to it; on the loop's shared
 * connection (clients/redis.h) the late reply is thrown away when it comes,
 * and the connection stays for the other requests unless the server has
 * been silent for the whole command timeout.
 *
 * What it still gets wrong (Kleppmann's critique): safety rests on timing —
 * a pause between the validity check and the write, or a server that
 * restarts without persistence and forgets a key, admits a second holder
 * (`bench/lesson redlock-restart` shows the restart, and a server that kept
 * its append-only file beside it); there is no fencing token for the
 * storage to reject a stale writer.
 */
#include "redis_private.h"
#include "../core/util.h"

#include <string.h>

static int server_timeout_ms(const struct lock_ctx *ctx)
{
    int t = ctx->cfg->lease_ms / 30;        /* 100 ms for a 3 s ttl */
    return t < 10 ? 10 : t > 100 ? 100 : t;
}

/* Send `argv` to every server i with want[i] (all when want is NULL) at
 * once, then read the answers into reply[i] (NULL: no answer). Returns
 * how many servers did not answer; *down = how many could not even be
 * connected to. */
static int multiplex(struct lock_ctx *ctx, const int *want, int argc, const char **argv,
                     redisReply **reply, int *down)
{
    struct redis_pipe p[CONFIG_MAX_SERVERS];
    int live[CONFIG_MAX_SERVERS] = { 0 };
    int i, n = ctx->cfg->nredis, silent = 0;

    *down = 0;
    for (i = 0; i < n; i++) {
        reply[i] = NULL;
        if (want && !want[i])
            continue;
        redis_pipe_init(&p[i], ctx, i, server_timeout_ms(ctx), REDIS_ANY, argv[0]);
        redis_pipe_argv(&p[i], argc, argv);
        if (redis_pipe_send(&p[i]) != LL_OK) {
            redis_pipe_free(&p[i]);
            silent++;
            (*down)++;
            continue;
        }
        live[i] = 1;
    }
    for (i = 0; i < n; i++)
        if (live[i] && redis_pipe_recv(&p[i], &reply[i]) != LL_OK) {
            reply[i] = NULL;
            silent++;
        }
    return silent;
}

/* Compare-and-delete `token` on the servers in want[] (NULL: all), with
 * EVAL and the script's source: pipelined, no NOSCRIPT round to handle.
 * Returns how many deleted; *silent = how many did not answer. */
static int release_some(struct lock_ctx *ctx, const char *key, const char *token,
                        const int *want, int *silent)
{
    const char *argv[5] = { "EVAL", redis_compare_and_delete.text, "1", key, token };
    redisReply *reply[CONFIG_MAX_SERVERS];
    int i, deleted = 0, down;

    *silent = multiplex(ctx, want, 5, argv, reply, &down);
    for (i = 0; i < ctx->cfg->nredis; i++) {
        if (reply[i] == NULL)
            continue;
        if (reply[i]->type == REDIS_REPLY_INTEGER && reply[i]->integer == 1)
            deleted++;
        freeReplyObject(reply[i]);
    }
    return deleted;
}

/* One round: LL_OK with *got, or LL_UNAVAILABLE when no quorum answers. */
static int redlock_round(struct lock_ctx *ctx, const char *key, int *got)
{
    struct redis_hold *h = redis_hold_of(ctx);
    int maybe[CONFIG_MAX_SERVERS] = { 0 }, up[CONFIG_MAX_SERVERS];
    char token[REDIS_TOKEN_MAX], ttls[16];
    const char *argv[6] = { "SET", key, token, "NX", "PX", ttls };
    int i, n = ctx->cfg->nredis, quorum = n / 2 + 1, ok = 0, no = 0, down = 0;
    int ttl = ctx->cfg->lease_ms, drift = ttl / 100 + 2, release = 0, first_down = -1;
    int64_t t0, validity;
    struct redis_pipe p;
    redisReply *r;

    *got = 0;
    redis_new_token(ctx, token, sizeof token);
    snprintf(ttls, sizeof ttls, "%d", ttl);
    t0 = now_ms();
    /* Servers we cannot connect to count against the quorum first, so a
     * client that meets a taken key stops before it takes others. */
    for (i = 0; i < n; i++)
        if (!(up[i] = redis_connect(ctx, i, server_timeout_ms(ctx)) == LL_OK)) {
            no++;
            down++;
            if (first_down < 0)
                first_down = i;
        }
    for (i = 0; i < n && no <= n - quorum; i++) {
        if (!up[i])
            continue;
        redis_pipe_init(&p, ctx, i, server_timeout_ms(ctx), REDIS_ANY, "SET");
        redis_pipe_argv(&p, 6, argv);
        if (redis_pipe_run(&p, &r) != LL_OK) {
            maybe[i] = 1;       /* the SET may have landed after our timeout */
            no++;
            continue;
        }
        if (r->type == REDIS_REPLY_STATUS) {
            maybe[i] = 1;
            ok++;
        } else {
            no++;               /* nil: taken; nothing of ours there */
        }
        freeReplyObject(r);
    }
    validity = ttl - (now_ms() - t0) - drift;
    if (ok >= quorum && validity > 0) {
        memcpy(h->token, token, sizeof token);
        h->valid_until_ms = t0 + validity;
        ctx->lease_until_us = h->valid_until_ms * 1000;     /* drift already off */
        *got = 1;
        return LL_OK;
    }
    for (i = 0; i < n; i++)
        release += maybe[i];
    if (release)
        release_some(ctx, key, token, maybe, &i);
    /* Servers that timed out may answer next round; servers we cannot
     * even connect to will not: without a quorum of those, give up. */
    if (n - down < quorum)
        return lock_error(ctx, LL_UNAVAILABLE, redis_name(ctx, first_down),
                          "Redlock needs %d of %d Redis servers, %d unreachable (%s …)",
                          quorum, n, down, redis_name(ctx, first_down));
    return LL_OK;
}

static int redlock_acquire(struct lock_ctx *ctx, const char *key)
{
    int got, rc;

    if (redis_cluster_on(ctx->cfg))
        return lock_error(ctx, LL_BADREQ, NULL, "redlock needs independent Redis masters; "
                          "this instance runs on a Redis Cluster (--redis-cluster), where %s "
                          "lives on one master", key);

    for (;;) {
        if ((rc = redlock_round(ctx, key, &got)) != LL_OK || got)
            return rc;
        if (lock_poll(ctx, key) != LL_OK)
            return redis_timeout(ctx, 0, key, "string");
    }
}

static int redlock_check(struct lock_ctx *ctx, const char *key)
{
    int64_t over = now_ms() - redis_hold_of(ctx)->valid_until_ms;

    if (over >= 0)
        return lock_error(ctx, LL_LOST, "redis",
                          "Redlock validity of %s ran out %lld ms before the write: "
                          "sale not written", key, (long long)over);
    return LL_OK;
}

static int redlock_release(struct lock_ctx *ctx, const char *key)
{
    struct redis_hold *h = redis_hold_of(ctx);
    char errstr[sizeof ctx->errstr];
    const char *backend = ctx->backend;
    int down, deleted, err = ctx->err;

    memcpy(errstr, ctx->errstr, sizeof errstr);
    deleted = release_some(ctx, key, h->token, NULL, &down);
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
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = redlock_acquire,
    .release  = redlock_release,
    .check    = redlock_check,
    .reset    = redlock_reset,
    .nofence  = "N independent servers keep N independent counters, and no quorum of them orders the holders (Kleppmann, \"How to do distributed locking\", 2016)",
};
