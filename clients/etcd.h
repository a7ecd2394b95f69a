/* etcd.h — etcd's v3 API, as the etcd strategy, its session keeper and
 * ll-limits speak it: a client that never blocks outside core/wait.h.
 *
 * The wire. etcd speaks gRPC; every etcd server also serves the same API
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
 * A struct etcd_conn is one caller's client (a worker slot's, the
 * keeper's, a tool's): a libcurl multi handle driven through its
 * multi-socket API, one easy handle whose kept-alive connection the multi
 * keeps between calls, and the list of endpoints. Whoever calls waits for
 * the sockets curl names and for curl's timer through wait_fd() and its
 * deadline: a coroutine on a loop parks, a plain thread blocks, and the
 * code is the same (clients/etcd.c). One conn serves one caller at a time.
 *
 * Failures. A call goes to the current endpoint, and on a transport
 * failure (refused, reset, nothing within ETCD_CALL_MS) or an answer that
 * the cluster cannot serve now (no leader, leader changed, request timed
 * out) to the next one, round the list, until its time limit: ETCD_DOWN,
 * with the last reason in c->err. Any other error answer is etcd's
 * verdict: ETCD_FAIL. Every call the etcd strategy makes is safe to
 * repeat — that is what concurrency.Mutex's transaction is designed for —
 * so a retry after an answer that was lost is correct. etcd_error() puts a
 * failure on a request's context: LL_UNAVAILABLE naming the endpoints, or
 * LL_ERROR.
 */
#ifndef LOCKLAB_CLIENTS_ETCD_H
#define LOCKLAB_CLIENTS_ETCD_H

#include "../core/config.h"

#include <jansson.h>
#include <stdint.h>

struct lock_ctx;

#define ETCD_CALL_MS      2000      /* one call to one endpoint, at most       */
#define ETCD_CONNECT_MS   500       /* a connect to one endpoint, at most      */
#define ETCD_KEY_MAX      128       /* "/locklab/etcd/<product>/<lease hex>"   */

/* ---------------------------------------------------------------- calls */

enum etcd_rc {
    ETCD_OK = 0,
    ETCD_DOWN,          /* no endpoint served it in time: c->err says why  */
    ETCD_FAIL           /* etcd answered with an error it means            */
};

struct etcd_conn {
    void            *multi;                     /* CURLM *, made at first use */
    void            *easy;                      /* CURL *                  */
    int              epfd;                      /* the sockets curl watches */
    int64_t          timer_us;                  /* curl's timeout: monotonic µs */
    unsigned         timer_calls;               /* times curl set it       */
    struct hostport  ep[CONFIG_MAX_SERVERS];
    int              nep, cur;
    unsigned         calls;                     /* round trips made        */
    unsigned         connects;                  /* connections opened      */
    char             name[300];                 /* "etcd host:port,…"      */
    char             err[160];
};

/* libcurl's global start (curl_global_init), once per process: it reads
 * files (OpenSSL's configuration), so call it at start-up, before the loop
 * runs; the first call made does it otherwise. */
void etcd_client_init(void);

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

/* Record c's failure (rc: ETCD_DOWN or ETCD_FAIL) on ctx and return its
 * status: LL_UNAVAILABLE naming c's endpoints, or LL_ERROR. */
int etcd_error(struct lock_ctx *ctx, const struct etcd_conn *c, int rc, const char *what);

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

/* concurrency.Mutex.Lock's one transaction on `key` under `prefix` (the
 * protocol around it is locks/etcd.c's):
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

#endif /* LOCKLAB_CLIENTS_ETCD_H */
