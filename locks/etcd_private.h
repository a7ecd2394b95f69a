/* etcd_private.h — etcd's v3 API as the etcd strategy and ll-limits use it
 * (locks/etcd_client.c, locks/etcd_session.c, locks/etcd.c).
 *
 * The client. etcd speaks gRPC; every etcd server also serves the same API
 * as JSON over HTTP/1.1 (its gRPC gateway, on the client port: POST
 * /v3/kv/range, /v3/kv/txn, /v3/kv/deleterange, /v3/lease/grant,
 * /v3/lease/keepalive, /v3/lease/revoke, and /v3/watch as a streamed
 * answer, one JSON message a line). Keys and values travel base64-encoded,
 * 64-bit integers as decimal strings. We speak that gateway with libcurl
 * and jansson, both Debian packages, rather than gRPC from C: Debian's
 * libgrpc-dev has no etcd stubs, and generating them would be a client of
 * our own invention. The gateway costs a JSON encoding and one hop inside
 * the server per call; ll-limits' serial_etcd measures it with the rest.
 *
 * A struct etcd_conn is one libcurl handle (keep-alive connection) and the
 * list of endpoints: a call goes to the current endpoint, and on a
 * transport failure (refused, reset, timed out) or an answer that the
 * cluster cannot serve now (no leader, leader changed, request timed out)
 * to the next one, round the list, until its time limit. Every call the
 * etcd strategy makes is safe to repeat — that is what concurrency.Mutex's
 * transaction is designed for — so a retry after an answer that was lost
 * is correct.
 */
#ifndef LOCKLAB_ETCD_PRIVATE_H
#define LOCKLAB_ETCD_PRIVATE_H

#include "lock.h"
#include "../core/config.h"

#include <jansson.h>
#include <stdint.h>

#define ETCD_FENCE        "etcd"    /* the service of create-revision tokens   */
#define ETCD_CALL_MS      2000      /* one call to one endpoint, at most       */
#define ETCD_CONNECT_MS   500       /* a connect to one endpoint, at most      */
#define ETCD_KEY_MAX      128       /* "/locklab/etcd/<product>/<lease hex>"   */
#define ETCD_ROOT         "/locklab/etcd"

/* ---------------------------------------------------------------- calls */

enum etcd_rc {
    ETCD_OK = 0,
    ETCD_DOWN,          /* no endpoint served it in time: c->err says why  */
    ETCD_FAIL           /* etcd answered with an error it means            */
};

struct etcd_conn {
    void            *curl;                      /* CURL *                  */
    struct hostport  ep[CONFIG_MAX_SERVERS];
    int              nep, cur;
    unsigned         calls;                     /* round trips made        */
    char             err[160];
};

/* Parse "host:port[,host:port...]" into c (no connection yet); -1 when the
 * list is not one. */
int  etcd_conn_init(struct etcd_conn *c, const char *endpoints);
void etcd_conn_free(struct etcd_conn *c);

/* POST `req` (borrowed) as JSON to `path` and parse the answer into *resp
 * (the caller's, json_decref it). Tries the endpoints in turn until
 * until_ms (monotonic), each for ETCD_CALL_MS at most. */
int etcd_call(struct etcd_conn *c, const char *path, json_t *req, json_t **resp,
              int64_t until_ms);

/* Watch `key` from revision `rev` until it is deleted (ETCD_OK), the watch
 * is cancelled by the server (compaction: ETCD_OK too, the caller looks
 * again), until_ms passes (ETCD_DOWN with "timed out" in c->err, *timed_out
 * set) or the endpoint fails (ETCD_DOWN). One streamed POST /v3/watch. */
int etcd_watch_delete(struct etcd_conn *c, const char *key, long long rev, int64_t until_ms,
                      int *timed_out);

/* ---------------------------------------------------------------- JSON */

/* base64 of n bytes of s into out (NUL-terminated, 4 * ceil(n/3) + 1 bytes). */
void etcd_b64(const char *s, size_t n, char *out, size_t outlen);
/* The decoded key of a KeyValue object into out; -1 if it is not base64. */
int  etcd_key_of(json_t *kv, char *out, size_t outlen);
/* An int64 field, sent as a decimal string (or a number): 0 when absent. */
long long etcd_i64(json_t *obj, const char *field);
/* The header's revision of an answer. */
long long etcd_revision(json_t *resp);
/* The key just past every key that starts with prefix (range_end). */
void etcd_prefix_end(const char *prefix, char *out, size_t outlen);

/* ---------------------------------------------------------------- requests */

/* Grant a lease of ttl_s seconds: its id and the TTL granted (etcd raises
 * a TTL below its minimum). */
int etcd_lease_grant(struct etcd_conn *c, int ttl_s, long long *id, int *granted,
                     int64_t until_ms);
/* One keep-alive of lease id: *ttl = the TTL it runs for again from now,
 * 0 when the lease is gone (expired or revoked). */
int etcd_lease_keepalive(struct etcd_conn *c, long long id, int *ttl, int64_t until_ms);
int etcd_lease_revoke(struct etcd_conn *c, long long id, int64_t until_ms);

/* concurrency.Mutex.Lock's one transaction on `key` under `prefix`:
 *     if create_revision(key) == 0 then put key "" lease=id; range the
 *     owner (the prefix's first key by create revision)
 *     else range key; range the owner
 * *my_rev is our key's create revision (the answer's revision when the put
 * ran), *owner_rev the owner's. */
int etcd_mutex_txn(struct etcd_conn *c, const char *prefix, const char *key, long long lease,
                   long long *my_rev, long long *owner_rev, int64_t until_ms);

/* The prefix's newest key created before max_rev (WithLastCreate,
 * WithMaxCreateRev): out[0] = '\0' when none; *rev the answer's revision. */
int etcd_last_before(struct etcd_conn *c, const char *prefix, long long max_rev,
                     char *out, size_t outlen, long long *rev, int64_t until_ms);

/* Our key's create revision now (0: gone). */
int etcd_create_rev(struct etcd_conn *c, const char *key, long long *create_rev,
                    int64_t until_ms);

/* Delete key, or with prefix=1 every key under it. */
int etcd_delete(struct etcd_conn *c, const char *key, int prefix, int64_t until_ms);

/* ---------------------------------------------------------------- sessions */

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
 * keeper thread keeps its lease alive from now until etcd_session_idle().
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
/* The backend name of the slot's endpoints ("etcd 127.0.0.1:12379,…"). */
const char *etcd_backend(void);
/* Record an etcd failure on ctx: LL_UNAVAILABLE for ETCD_DOWN, LL_ERROR. */
int  etcd_fail(struct lock_ctx *ctx, int rc, const char *what);
void etcd_ctx_free(struct lock_ctx *ctx);

#endif /* LOCKLAB_ETCD_PRIVATE_H */
