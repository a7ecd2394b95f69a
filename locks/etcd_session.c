/* etcd_session.c — each worker slot's etcd session, and the one worker
 * that keeps the sessions' leases alive.
 *
 * etcd's concurrency.Session is a lease that a goroutine keeps alive for as
 * long as the client lives; a Mutex puts its key under that lease, so a
 * client that dies loses its locks when the lease runs out (seed 004 §4.1:
 * "Lease 机制 … 自动过期释放锁"). Two Mutexes of one session on one prefix
 * would share one key and both believe they hold it, so every contender
 * needs a session of its own: here each worker slot (the seeds' thread)
 * has one, granted at its first acquire with a TTL of --lease-ms rounded
 * up to seconds (etcd raises it to its minimum, 2 s here).
 *
 * Keeping alive. A lease keeper (keeper.h, as redis_watchdog.c is for
 * Redis) renews the leases at TTL/3, as the Go client does, on a
 * connection of its own: a slot's own connection is busy with its request.
 * Its keep-alives wait through the client's waits, so the same code parks
 * on a loop or blocks in a tool.
 *
 * A lease is renewed while its slot holds or waits, and for one TTL after,
 * so a slot that sells again soon reuses its session; then it is left to
 * lapse, so an idle instance costs etcd nothing. A slot whose session
 * lapsed, was found gone, or has less than half a TTL left that etcd
 * confirmed, gets a new one at its next acquire.
 *
 * Lease honesty: the keeper records, per slot, the end of the last lease
 * etcd confirmed — from the moment the grant or keep-alive was sent, plus
 * the TTL it answered, less lock_drift_us() — and etcd_session_check()
 * hands it to the write (ctx->lease_until_us). A keep-alive that found the
 * lease gone marks the session lost: the check then answers LL_LOST.
 */
#include "etcd_session.h"
#include "keeper.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct etcd_conn keeper_conn;    /* the keeper's own */

int etcd_fail(struct lock_ctx *ctx, int rc, const char *what)
{
    struct etcd_slot *s = ctx->etcd;

    if (s == NULL)
        return lock_error(ctx, LL_ERROR, "etcd", "%s: no connection", what);
    return etcd_error(ctx, &s->conn, rc, what);
}

static int64_t lease_end_us(int64_t sent_us, int ttl_s)
{
    return sent_us + ttl_s * 1000000LL - lock_drift_us(ttl_s * 1000LL);
}

/* ---------------------------------------------------------------- keeper */

/* The keeper's hook: a keep-alive of the lease; gone when etcd answers
 * that it is (no TTL left, or an error of its own), again in 200 ms when no
 * endpoint answers. */
static enum keep_answer session_renew(const void *what, int64_t sent_us, int64_t *until_us,
                                      int *retry_ms)
{
    long long lease;
    int ttl, rc;

    memcpy(&lease, what, sizeof lease);
    rc = etcd_lease_keepalive(&keeper_conn, lease, &ttl, now_ms() + ETCD_CALL_MS);
    if (rc == ETCD_OK && ttl > 0) {
        *until_us = lease_end_us(sent_us, ttl);
        return KEEP_CONFIRMED;
    }
    if (rc == ETCD_OK || rc == ETCD_FAIL)
        return KEEP_GONE;       /* expired, revoked: never again */
    *retry_ms = 200;
    return KEEP_RETRY;
}

static void session_keeper_start(const struct config *cfg)
{
    if (etcd_conn_init(&keeper_conn, cfg->etcd) != 0) {
        fprintf(stderr, "locklab: --etcd '%s' is not host:port[,…]\n", cfg->etcd);
        abort();
    }
}

static struct keeper session_keeper = KEEPER_INIT("etcd-keeper", sizeof(long long),
                                                  session_renew, session_keeper_start);

static struct keeper *keeper_of(const struct lock_ctx *ctx)
{
    keeper_init(&session_keeper, ctx->cfg);
    return &session_keeper;
}

/* ---------------------------------------------------------------- slots */

struct etcd_slot *etcd_slot_of(struct lock_ctx *ctx)
{
    struct etcd_slot *s = ctx->etcd;

    if (s == NULL) {
        s = ctx->etcd = xcalloc(1, sizeof *s);
        if (etcd_conn_init(&s->conn, ctx->cfg->etcd) != 0)
            abort();            /* config_parse() checked it */
    }
    return s;
}

void etcd_count(struct lock_ctx *ctx)
{
    struct etcd_slot *s = ctx->etcd;

    if (s) {
        ctx->backend_ops += s->conn.calls - s->counted;
        s->counted = s->conn.calls;
    }
}

int etcd_session(struct lock_ctx *ctx, struct etcd_slot **out)
{
    struct keeper *k = keeper_of(ctx);
    struct etcd_slot *s;
    long long lease;
    int ttl, rc;
    int64_t sent;

    s = *out = etcd_slot_of(ctx);
    if (s->lease != 0 && keeper_resume(k, ctx->slot, s->ttl_s * 500000LL))
        return LL_OK;

    sent = now_us();
    rc = etcd_lease_grant(&s->conn, (ctx->cfg->lease_ms + 999) / 1000, &lease, &ttl,
                          ctx->deadline_ms);
    etcd_count(ctx);
    if (rc != ETCD_OK)
        return etcd_fail(ctx, rc, "lease grant");
    s->lease = lease;
    s->ttl_s = ttl;
    keeper_hold(k, ctx->slot, &lease, lease_end_us(sent, ttl), ttl * 1000 / 3);
    return LL_OK;
}

void etcd_session_idle(struct lock_ctx *ctx)
{
    struct keeper *k = keeper_of(ctx);

    if (ctx->etcd)
        keeper_linger(k, ctx->slot, ctx->etcd->ttl_s * 1000);
}

void etcd_session_abandon(struct lock_ctx *ctx)
{
    keeper_release(keeper_of(ctx), ctx->slot);
    if (ctx->etcd)
        ctx->etcd->lease = 0;
}

int etcd_session_check(struct lock_ctx *ctx)
{
    int64_t until;
    int lost = keeper_state(keeper_of(ctx), ctx->slot, &until) != KEEP_HELD ||
               ctx->etcd == NULL;

    if (lost)
        return lock_error(ctx, LL_LOST, etcd_slot_of(ctx)->conn.name, "the etcd session's "
                          "lease is gone (a keep-alive found it expired): sale not written");
    ctx->lease_until_us = until;
    return LL_OK;
}

/* Worker shutdown: revoke the session (Session.Close), so its keys go now
 * rather than a TTL later. */
void etcd_ctx_free(struct lock_ctx *ctx)
{
    struct etcd_slot *s = ctx->etcd;

    if (s == NULL)
        return;
    if (s->lease) {
        etcd_lease_revoke(&s->conn, s->lease, now_ms() + 300);  /* one try */
        etcd_session_abandon(ctx);
    }
    etcd_conn_free(&s->conn);
    free(s);
    ctx->etcd = NULL;
}

/* The etcd family: a slot keeps its session's share (the lease keeper
 * starts with the first use). */
const struct lock_family lock_family_etcd = {
    .name     = "etcd",
    .ctx_free = etcd_ctx_free,
};
