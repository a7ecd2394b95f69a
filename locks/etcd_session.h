/* etcd_session.h — a worker slot's etcd state and its session
 * (locks/etcd_session.c), which the etcd strategy (locks/etcd.c) stands
 * on. The client they speak through, etcd's JSON gateway, is
 * clients/etcd.h.
 */
#ifndef LOCKLAB_ETCD_SESSION_H
#define LOCKLAB_ETCD_SESSION_H

#include "lock.h"
#include "../clients/etcd.h"

#include <stdint.h>

/* A worker slot's etcd state (ctx->etcd, etcd_session.c): its connection,
 * its session — a lease, as concurrency.NewSession grants one per client,
 * so each slot (the seeds' thread) has a key of its own under a prefix —
 * and the lock it holds. */
struct etcd_slot {
    struct etcd_conn conn;
    long long        lease;         /* the session's lease, 0: none yet   */
    int              ttl_s;
    /* the hold: key, its create revision, re-entries, the request */
    char             prefix[ETCD_KEY_MAX];
    char             key[ETCD_KEY_MAX + 24];
    long long        rev;
    int              depth;
    int64_t          stamp;
    unsigned         counted;       /* conn.calls already in backend_ops  */
};

/* The slot's state, made at its first use (no session yet). */
struct etcd_slot *etcd_slot_of(struct lock_ctx *ctx);
/* Add the round trips made since the last count to ctx->backend_ops. */
void etcd_count(struct lock_ctx *ctx);

/* The slot's state with a live session, made or renewed as needed; the
 * keeper keeps its lease alive from now until etcd_session_idle().
 * LL_UNAVAILABLE when no endpoint grants a lease. */
int  etcd_session(struct lock_ctx *ctx, struct etcd_slot **out);
/* The slot no longer holds or waits: the keeper renews the lease for one
 * more TTL (the next request of the slot will likely reuse it), then lets
 * it lapse. */
void etcd_session_idle(struct lock_ctx *ctx);
/* Our key could not be deleted: never renew this lease again, so the key
 * dies with it within a TTL; the next acquire grants a new session. */
void etcd_session_abandon(struct lock_ctx *ctx);
/* The end of the last lease etcd confirmed (a grant or a keep-alive,
 * measured from when it was sent, less lock_drift_us()), into
 * ctx->lease_until_us; LL_LOST when a keep-alive found the lease gone. */
int  etcd_session_check(struct lock_ctx *ctx);
/* Record an etcd failure of the slot's connection on ctx: LL_UNAVAILABLE
 * for ETCD_DOWN, naming the endpoints, else LL_ERROR. */
int  etcd_fail(struct lock_ctx *ctx, int rc, const char *what);
void etcd_ctx_free(struct lock_ctx *ctx);

#endif /* LOCKLAB_ETCD_SESSION_H */
