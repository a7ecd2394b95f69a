/* etcd.c — etcd's own lock, concurrency.Mutex, spoken from C (seed 004
 * §4.1; seed 002's reader asked "用etcd实现锁，是不是更好呢").
 *
 * The seed's jetcd Lock client calls etcd's lock service, which runs this
 * same Mutex inside the server; we run it here, step by step, so that every
 * wait is ours and under the request's deadline, and so that `etcdctl lock
 * /locklab/etcd/<product>` (the Mutex too) and we exclude each other.
 *
 *   session  a lease of --lease-ms (in seconds) per worker slot, kept
 *            alive by etcd_session.c's keeper;
 *   key      <prefix>/<lease id in hex>, prefix /locklab/etcd/<product>;
 *   lock     one transaction: if our key's create revision is 0 (no key),
 *            put it under the lease and range the prefix's first key by
 *            create revision, else range our key and that first key.
 *            Holding = our key is that first key. Repeating the
 *            transaction after a lost answer finds our key: safe;
 *   wait     for the key with the next-lower create revision: range the
 *            prefix's last key created before ours, watch it from the
 *            range's revision until it is deleted, and look again (a
 *            waiter before us may give up) — so one release wakes one
 *            waiter, in create-revision order: fair;
 *   unlock   delete our key. Giving up (deadline, etcd down) deletes it too.
 *
 * Fencing (?fence=1): our key's create revision. etcd's revisions grow with
 * every write of the cluster, and the holders hold in the order their keys
 * were created, so a later holder's token is always larger (Kleppmann's
 * token, from the lock service itself, no extra round trip).
 * Re-entry by the same slot within one request only counts; the key goes
 * when the count reaches zero (the transaction would find our own key as
 * the owner anyway).
 *
 * What it still gets wrong: the lock lasts as long as the lease. A holder
 * paused past its TTL loses it unknowingly; the `check` hook (our key still
 * there with our revision, and the lease's confirmed end) narrows that
 * window before the write but cannot close it: only the token can. A
 * failed delete leaves the key until the lease lapses (the session is then
 * abandoned, never renewed again), up to a TTL of nobody selling.
 */
#include "etcd_session.h"
#include "../core/util.h"

#include <stdio.h>
#include <string.h>

#define ETCD_FENCE "etcd"               /* the service of create-revision tokens */
#define ETCD_ROOT  "/locklab/etcd"

/* The backend name of the slot's endpoints ("etcd 127.0.0.1:12379,…"). */
static const char *backend(struct lock_ctx *ctx)
{
    return etcd_slot_of(ctx)->conn.name;
}

/* The slot's hold of `key` by this request, or NULL. A hold left by an
 * earlier request that never released is dropped first. */
static struct etcd_slot *hold_of(struct lock_ctx *ctx, const char *prefix)
{
    struct etcd_slot *s = etcd_slot_of(ctx);

    if (s->depth == 0)
        return NULL;
    if (s->stamp == ctx->deadline_ms && strcmp(s->prefix, prefix) == 0)
        return s;
    fprintf(stderr, "locklab: dropping a stale etcd hold of %s\n", s->key);
    if (etcd_delete(&s->conn, s->key, 0, now_ms() + ETCD_CALL_MS) != ETCD_OK)
        etcd_session_abandon(ctx);
    s->depth = 0;
    etcd_session_idle(ctx);
    return NULL;
}

/* "/locklab/etcd/<product>/" for "lock:<product>". */
static void prefix_of(const char *key, char *buf, size_t len)
{
    const char *colon = strchr(key, ':');
    snprintf(buf, len, "%s/%s/", ETCD_ROOT, colon ? colon + 1 : key);
}

/* Delete our key after a failure, keeping the failure's reason. */
static void give_up(struct lock_ctx *ctx, struct etcd_slot *s)
{
    int err = ctx->err;
    const char *backend = ctx->backend;
    char why[sizeof ctx->errstr];
    int64_t until = now_ms() + ETCD_CALL_MS;

    memcpy(why, ctx->errstr, sizeof why);
    if (etcd_delete(&s->conn, s->key, 0, until) != ETCD_OK)
        etcd_session_abandon(ctx);      /* the key dies with the lease */
    etcd_session_idle(ctx);
    etcd_count(ctx);
    lock_error(ctx, err, backend, "%s", why);
}

/* waitDeletes: until no key of the prefix was created before ours. */
static int wait_turn(struct lock_ctx *ctx, struct etcd_slot *s)
{
    char last[ETCD_KEY_MAX + 24];
    long long rev;
    int rc, timed_out;

    for (;;) {
        rc = etcd_last_before(&s->conn, s->prefix, s->rev - 1, last, sizeof last, &rev,
                              ctx->deadline_ms);
        if (rc != ETCD_OK)
            return now_ms() >= ctx->deadline_ms ? lock_timeout(ctx)
                                                : etcd_fail(ctx, rc, "range");
        if (last[0] == '\0')
            return LL_OK;
        rc = etcd_watch_delete(&s->conn, last, rev, ctx->deadline_ms, &timed_out);
        if (timed_out)
            return lock_timeout(ctx);
        if (rc == ETCD_OK)
            ctx->wakeups++;
        ctx->retries++;
    }
}

static int etcd_acquire(struct lock_ctx *ctx, const char *key)
{
    char prefix[ETCD_KEY_MAX];
    struct etcd_slot *s;
    long long owner;
    int rc;

    prefix_of(key, prefix, sizeof prefix);
    if ((s = hold_of(ctx, prefix)) != NULL) {
        s->depth++;
        return LL_OK;
    }
    if ((rc = etcd_session(ctx, &s)) != LL_OK)
        return rc;
    strlcopy(s->prefix, prefix, sizeof s->prefix);
    snprintf(s->key, sizeof s->key, "%s%llx", prefix, (unsigned long long)s->lease);
    rc = etcd_mutex_txn(&s->conn, s->prefix, s->key, s->lease, &s->rev, &owner,
                        ctx->deadline_ms);
    if (rc != ETCD_OK) {
        if (now_ms() >= ctx->deadline_ms)   /* a cluster too slow, not down */
            lock_timeout(ctx);
        else
            etcd_fail(ctx, rc, "txn");
        give_up(ctx, s);
        return ctx->err;
    }
    rc = owner == s->rev ? LL_OK : wait_turn(ctx, s);
    if (rc == LL_OK)
        rc = etcd_session_check(ctx);   /* the lease's confirmed end */
    if (rc != LL_OK) {
        give_up(ctx, s);
        return rc;
    }
    etcd_count(ctx);
    s->depth = 1;
    s->stamp = ctx->deadline_ms;
    if (ctx->fence) {
        ctx->token = s->rev;
        ctx->token_src = ETCD_FENCE;
    }
    return LL_OK;
}

/* Still ours: the lease confirmed alive, and our key there with our
 * create revision (a reset, or the lease's expiry, deletes it). */
static int etcd_check(struct lock_ctx *ctx, const char *key)
{
    char prefix[ETCD_KEY_MAX];
    struct etcd_slot *s;
    long long rev = 0;
    int rc;

    prefix_of(key, prefix, sizeof prefix);
    if ((s = hold_of(ctx, prefix)) == NULL)
        return lock_error(ctx, LL_ERROR, backend(ctx), "etcd: %s not held", key);
    if ((rc = etcd_session_check(ctx)) != LL_OK)
        return rc;
    rc = etcd_create_rev(&s->conn, s->key, &rev, ctx->lease_until_us / 1000);
    etcd_count(ctx);
    if (rc == ETCD_OK && rev == s->rev)
        return LL_OK;
    if (rc == ETCD_OK)
        return lock_error(ctx, LL_LOST, backend(ctx), "lock %s lost before the write: "
                          "the key is gone", s->key);
    return lock_error(ctx, LL_LOST, backend(ctx), "lock %s lost before the write: "
                      "etcd did not confirm it within its lease (%s)", s->key, s->conn.err);
}

static int etcd_release(struct lock_ctx *ctx, const char *key)
{
    char prefix[ETCD_KEY_MAX];
    struct etcd_slot *s;
    int rc;

    prefix_of(key, prefix, sizeof prefix);
    if ((s = hold_of(ctx, prefix)) == NULL)
        return lock_error(ctx, LL_ERROR, backend(ctx), "etcd: release of %s not held", key);
    if (--s->depth > 0)
        return LL_OK;
    rc = etcd_delete(&s->conn, s->key, 0, now_ms() + ETCD_CALL_MS);
    etcd_count(ctx);
    etcd_session_idle(ctx);
    if (rc == ETCD_OK)
        return LL_OK;
    etcd_session_abandon(ctx);  /* the key dies with the lease, a TTL on */
    if (ctx->err)               /* the sale failed already: keep its reason */
        return ctx->err;
    return etcd_fail(ctx, rc, "delete");
}

/* Every key under the product's prefix: holders and waiters of any client. */
static int etcd_reset(struct lock_ctx *ctx, const char *key)
{
    char prefix[ETCD_KEY_MAX];
    struct etcd_slot *s = etcd_slot_of(ctx);
    int rc;

    prefix_of(key, prefix, sizeof prefix);
    rc = etcd_delete(&s->conn, prefix, 1, now_ms() + 5000);
    etcd_count(ctx);
    return rc == ETCD_OK ? LL_OK : etcd_fail(ctx, rc, "delete prefix");
}

const struct lock_ops lock_etcd = {
    .name     = "etcd",
    .family   = "etcd",
    .summary  = "etcd's concurrency.Mutex: key <prefix>/<lease> under a kept-alive session lease, each waiter watches the key created just before its own (seed 004 §4.1)",
    .flaw     = "held only as long as its lease: a holder paused past the TTL loses it unknowingly (the token catches its write)",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_FAIR | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_ETCD_REVOKE,
    .ceiling  = LOCK_CEIL_SERIAL_ETCD,
    .acquire  = etcd_acquire,
    .release  = etcd_release,
    .check    = etcd_check,
    .reset    = etcd_reset,
    .fence    = ETCD_FENCE,
};
