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
 * Keeping alive. One process-wide worker renews the leases at TTL/3 (as
 * the Go client does) on a connection of its own, as redis_watchdog.c does
 * for Redis: a slot's own connection is busy with its request. It is a
 * task_background() worker: a coroutine on the loop of the caller that
 * first needs it, or a thread of its own when that caller has no loop (a
 * tool, the thread-per-connection server); it sleeps on a wait_cond until
 * the next lease is due or a new one comes, and its keep-alives wait
 * through the client's waits, so the same code parks or blocks. The
 * entries' mutex is held for a few instructions at a time, never across a
 * call: wait_cond_wait() lets go of it while the keeper sleeps.
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
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct keep_entry {
    long long lease;            /* 0: nothing to renew                    */
    int       ttl_s;
    int       busy;             /* the slot holds or waits                */
    int       lost;             /* a keep-alive found the lease gone      */
    int64_t   idle_since_ms;
    int64_t   until_us;         /* the last confirmed lease ends          */
    int64_t   next_ms;          /* next keep-alive due                    */
};

static struct {
    pthread_mutex_t    mu;              /* the entries, asleep_until      */
    struct wait_cond   cv;              /* the keeper sleeps on it        */
    struct keep_entry *e;
    int                n;
    struct etcd_conn   conn;            /* the keeper's own               */
    int64_t            asleep_until;    /* ms: the keeper sleeps until    */
} kp = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = WAIT_COND_INIT, .asleep_until = INT64_MAX };

static pthread_once_t kp_once = PTHREAD_ONCE_INIT;
static _Atomic(const struct config *) kp_cfg;

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

/* A lease worth renewing now: live, and its slot busy or idle for less
 * than a TTL. An idle one past that is dropped here (it lapses in etcd). */
static int keep_due(struct keep_entry *e, int64_t now)
{
    if (e->lease == 0 || e->lost)
        return 0;
    if (!e->busy && now - e->idle_since_ms > e->ttl_s * 1000LL) {
        e->lease = 0;
        return 0;
    }
    return e->next_ms <= now;
}

static void keeper_main(void *arg)
{
    int i, due, ttl, rc;
    int64_t now, first, sent;
    long long lease;

    (void)arg;
    pthread_mutex_lock(&kp.mu);
    for (;;) {
        now = now_ms();
        due = -1;
        first = INT64_MAX;
        for (i = 0; i < kp.n && due < 0; i++) {
            if (keep_due(&kp.e[i], now))
                due = i;
            else if (kp.e[i].lease && !kp.e[i].lost && kp.e[i].next_ms < first)
                first = kp.e[i].next_ms;
        }
        if (due < 0) {
            kp.asleep_until = first;
            wait_cond_wait(&kp.cv, &kp.mu, first == INT64_MAX ? WAIT_FOREVER : first * 1000);
            continue;
        }
        kp.asleep_until = now;
        lease = kp.e[due].lease;
        kp.e[due].next_ms = now + kp.e[due].ttl_s * 1000LL / 3;
        pthread_mutex_unlock(&kp.mu);

        sent = now_us();
        rc = etcd_lease_keepalive(&kp.conn, lease, &ttl, now_ms() + ETCD_CALL_MS);

        pthread_mutex_lock(&kp.mu);
        if (kp.e[due].lease == lease) {
            if (rc == ETCD_OK && ttl > 0)
                kp.e[due].until_us = lease_end_us(sent, ttl);
            else if (rc == ETCD_OK || rc == ETCD_FAIL)
                kp.e[due].lost = 1;     /* expired, revoked: never again */
            else                        /* no endpoint answered: soon again */
                kp.e[due].next_ms = now_ms() + 200;
        }
    }
}

static void keeper_start(void)
{
    const struct config *cfg = atomic_load(&kp_cfg);

    kp.n = cfg->threads;
    kp.e = xcalloc((size_t)kp.n, sizeof *kp.e);
    if (etcd_conn_init(&kp.conn, cfg->etcd) != 0) {
        fprintf(stderr, "locklab: --etcd '%s' is not host:port[,…]\n", cfg->etcd);
        abort();
    }
    task_background("etcd-keeper", keeper_main, NULL);
}

static void keeper_init(const struct lock_ctx *ctx)
{
    atomic_store(&kp_cfg, ctx->cfg);
    pthread_once(&kp_once, keeper_start);
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
    struct etcd_slot *s;
    struct keep_entry *e;
    long long lease;
    int ttl, rc, reuse;
    int64_t sent;

    keeper_init(ctx);
    s = *out = etcd_slot_of(ctx);
    pthread_mutex_lock(&kp.mu);
    e = &kp.e[ctx->slot];
    reuse = s->lease != 0 && e->lease == s->lease && !e->lost &&
            e->until_us - now_us() > e->ttl_s * 500000LL;
    if (reuse)
        e->busy = 1;
    pthread_mutex_unlock(&kp.mu);
    if (reuse)
        return LL_OK;

    sent = now_us();
    rc = etcd_lease_grant(&s->conn, (ctx->cfg->lease_ms + 999) / 1000, &lease, &ttl,
                          ctx->deadline_ms);
    etcd_count(ctx);
    if (rc != ETCD_OK)
        return etcd_fail(ctx, rc, "lease grant");
    s->lease = lease;
    s->ttl_s = ttl;
    pthread_mutex_lock(&kp.mu);
    e->lease = lease;
    e->ttl_s = ttl;
    e->busy = 1;
    e->lost = 0;
    e->until_us = lease_end_us(sent, ttl);
    e->next_ms = now_ms() + ttl * 1000LL / 3;
    if (e->next_ms < kp.asleep_until) {
        kp.asleep_until = e->next_ms;
        wait_cond_signal(&kp.cv);
    }
    pthread_mutex_unlock(&kp.mu);
    return LL_OK;
}

void etcd_session_idle(struct lock_ctx *ctx)
{
    keeper_init(ctx);
    pthread_mutex_lock(&kp.mu);
    kp.e[ctx->slot].busy = 0;
    kp.e[ctx->slot].idle_since_ms = now_ms();
    pthread_mutex_unlock(&kp.mu);
}

void etcd_session_abandon(struct lock_ctx *ctx)
{
    keeper_init(ctx);
    pthread_mutex_lock(&kp.mu);
    memset(&kp.e[ctx->slot], 0, sizeof kp.e[ctx->slot]);
    pthread_mutex_unlock(&kp.mu);
    if (ctx->etcd)
        ctx->etcd->lease = 0;
}

int etcd_session_check(struct lock_ctx *ctx)
{
    struct keep_entry *e;
    int64_t until;
    int lost;

    keeper_init(ctx);
    pthread_mutex_lock(&kp.mu);
    e = &kp.e[ctx->slot];
    lost = e->lost || e->lease == 0 || ctx->etcd == NULL || e->lease != ctx->etcd->lease;
    until = e->until_us;
    pthread_mutex_unlock(&kp.mu);
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
