/* etcd_session.c — each worker slot's etcd session, and the one thread
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
 * Keeping alive. One process-wide thread renews the leases at TTL/3 (as
 * the Go client does) on a connection of its own, as redis_watchdog.c does
 * for Redis: a slot's own connection is busy with its request. A lease is
 * renewed while its slot holds or waits, and for one TTL after, so a slot
 * that sells again soon reuses its session; then it is left to lapse, so
 * an idle instance costs etcd nothing. A slot whose session lapsed, was
 * found gone, or has less than half a TTL left that etcd confirmed, gets
 * a new one at its next acquire.
 *
 * Lease honesty: the keeper records, per slot, the end of the last lease
 * etcd confirmed — from the moment the grant or keep-alive was sent, plus
 * the TTL it answered, less lock_drift_us() — and etcd_session_check()
 * hands it to the write (ctx->lease_until_us). A keep-alive that found the
 * lease gone marks the session lost: the check then answers LL_LOST.
 */
#include "etcd_private.h"
#include "../core/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    pthread_mutex_t    mu;
    pthread_cond_t     cv;
    struct keep_entry *e;
    int                n;
    struct etcd_conn   conn;
    int64_t            asleep_until;
} kp = { .mu = PTHREAD_MUTEX_INITIALIZER, .asleep_until = INT64_MAX };

static pthread_once_t kp_once = PTHREAD_ONCE_INIT;
static _Atomic(const struct config *) kp_cfg;
static char backend_name[300] = "etcd";

const char *etcd_backend(void)
{
    return backend_name;
}

int etcd_fail(struct lock_ctx *ctx, int rc, const char *what)
{
    struct etcd_slot *s = ctx->etcd;

    return lock_error(ctx, rc == ETCD_DOWN ? LL_UNAVAILABLE : LL_ERROR, backend_name,
                      "%s: %s", what, s ? s->conn.err : "no connection");
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

static void *keeper_main(void *arg)
{
    struct timespec ts;
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
            if (first == INT64_MAX) {
                pthread_cond_wait(&kp.cv, &kp.mu);
            } else {
                ts.tv_sec = first / 1000;
                ts.tv_nsec = (first % 1000) * 1000000;
                pthread_cond_timedwait(&kp.cv, &kp.mu, &ts);
            }
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
    return NULL;
}

static void keeper_start(void)
{
    const struct config *cfg = atomic_load(&kp_cfg);
    pthread_condattr_t attr;
    pthread_t tid;

    kp.n = cfg->threads;
    kp.e = xcalloc((size_t)kp.n, sizeof *kp.e);
    if (etcd_conn_init(&kp.conn, cfg->etcd) != 0) {
        fprintf(stderr, "locklab: --etcd '%s' is not host:port[,…]\n", cfg->etcd);
        abort();
    }
    snprintf(backend_name, sizeof backend_name, "etcd %s", cfg->etcd);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&kp.cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&tid, NULL, keeper_main, NULL) != 0) {
        fprintf(stderr, "locklab: cannot start the etcd keep-alive thread\n");
        abort();
    }
    pthread_detach(tid);
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
        pthread_cond_signal(&kp.cv);
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
        return lock_error(ctx, LL_LOST, backend_name, "the etcd session's lease is gone "
                          "(a keep-alive found it expired): sale not written");
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
