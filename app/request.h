/* request.h — everything the server reads from a request, apart from the
 * HTTP library: the route, the query's parameters, their values, the admin
 * token, and the text of the error answers built from them.
 *
 * app/http.c feeds it what libmicrohttpd parsed (method, path, each query
 * parameter with its length, the Authorization header) and acts on what it
 * decides; tests/fuzz_request.c feeds it arbitrary bytes. Nothing here
 * blocks, allocates beyond jansson's answer objects, or touches a backend.
 *
 * Rules, in the order they are checked:
 *   path      one of the routes below, byte for byte; anything else 404.
 *   method    the route's own (GET for reads and the purchase, POST for the
 *             admin routes); any other, HEAD included, is 405 with Allow.
 *   admin     with a token configured, an admin route needs
 *             "Authorization: Bearer <token>" (401 otherwise).
 *   query     all names and values together at most REQUEST_MAX_QUERY
 *             bytes (414); every name known and meant for the route, given
 *             once, with a non-empty value of valid UTF-8 without NUL (400
 *             naming the parameter); then each value's own syntax and range.
 * Text taken from the request into an answer goes through text_safe(), so
 * every answer can be written as JSON whatever bytes arrived.
 */
#ifndef LOCKLAB_REQUEST_H
#define LOCKLAB_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct lock_ops;

#define REQUEST_MAX_QUERY 1024  /* bytes of names and values, all together */
#define REQUEST_ERROR_MAX 200   /* an error sentence, UTF-8               */

/* ---------------------------------------------------------------- text */

/* Is s[0..len) valid UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF)? A NUL byte counts as invalid here. */
int text_utf8_valid(const char *s, size_t len);

/* Copy src[0..len) into dst (size bytes, always terminated) as printable
 * UTF-8: each invalid byte, control character or NUL becomes U+FFFD, and
 * text that does not fit ends in "…". Returns dst. */
char *text_safe(char *dst, size_t size, const char *src, size_t len);

/* Percent-decoding of a path, a name or a value, in place; returns the new
 * length (libmicrohttpd's unescape callback). "%00" is not decoded into a
 * NUL, which would cut the string short where the server reads it: it
 * becomes the bytes C0 80 (NUL's overlong form, never valid UTF-8), so a
 * path with it matches no route and a value with it is refused by name. */
size_t request_unescape(char *s);

/* ---------------------------------------------------------------- routes */

enum route_id {
    ROUTE_SALE, ROUTE_STOCK, ROUTE_STOCK_RESET, ROUTE_LOCKS, ROUTE_STATS,
    ROUTE_STATS_RESET, ROUTE_HEALTH,
    ROUTE_ORDER,
    /* the synchronizers (sync/): GET /sync, POST /sync/reset, GET /sync/<primitive>/
     * <operation>, and the seeds' demonstrations */
    ROUTE_SYNC_LIST, ROUTE_SYNC_RESET, ROUTE_SYNC, ROUTE_TEST_READ, ROUTE_TEST_WRITE,
    ROUTE_TEST_SEMAPHORE, ROUTE_TEST_LATCH, ROUTE_TEST_COUNTDOWN,
    ROUTE_METRICS       /* GET /metrics: Prometheus's text format, not JSON */
};

enum param_id {
    P_LOCK, P_PRODUCT, P_COUNT, P_REENTRY, P_WAIT_MS, P_FENCE,
    P_HOLD_MS, P_LATE_MS, P_CRASH, P_LOSE_ANSWER,   /* the fault switches */
    P_ORDER_NO, P_QTY, P_USER, P_ONE_PER_USER,      /* POST /order's */
    P_CONSUMER_CRASH,                               /* a fault switch too */
    /* the synchronizers' (on /sync routes hold_ms is work, not a fault) */
    P_NAME, P_NAMES, P_BACKEND, P_LEASE_MS, P_UNLOCK, P_PERMITS, P_MEMBERS,
    P_MEMBER, P_PERMIT, P_DELTA, P_VERSION, P_VALUE,
    P_RELEASE_PAUSE_MS, P_ALLOW_DEADLOCK, P_CLOCK_SKEW_MS,  /* fault switches */
    P_READ,                                         /* read=replica */
    P_BUCKETS,                                      /* POST /stock/reset's */
    P_CHECK_PAUSE_MS, P_LOSE_LOCK,                  /* fault switches */
    P_LOSE_CLAIM,                                   /* POST /order's fault switch */
    P_READ_PAUSE_MS,                                /* GET /stock's fault switch */
    P_MAX
};

struct route {
    enum route_id id;
    const char   *method, *path;
    int           admin;            /* needs the admin token            */
    uint64_t      params;           /* (1ull << P_*) it accepts          */
};
/* A route whose path ends in '/' is a prefix: it takes every path that
 * starts with it and no exact path matches, and the rest is the route's to
 * resolve (GET /sync/<primitive>/<operation>). */

/* ---------------------------------------------------------------- a request */

struct request {
    const struct route *route;
    const char *rest;               /* a prefix route's rest of the path   */
    const char *param[P_MAX];       /* as given, valid UTF-8; NULL if absent */
    size_t      query_bytes;
    int         status;             /* 0 while acceptable, else the HTTP code */
    const char *result;             /* the answer's "result" on failure      */
    const char *allow;              /* the methods a 405 lists               */
    char        parameter[48];      /* the parameter a 400 is about, or ""   */
    int         list_strategies;    /* a 400 for an unknown strategy: the
                                     * answer lists the valid ones        */
    char        error[REQUEST_ERROR_MAX];
};

/* Start a request: find its route (404 or 405 otherwise) and check the
 * admin token (401). `authorization` may be NULL; `token` NULL means no
 * token is configured. Returns r->status (0: go on). */
int request_begin(struct request *r, const char *method, const char *path,
                  const char *authorization, const char *token);

/* One query parameter as the HTTP library parsed it (value may be NULL for
 * "?name"). The first problem is kept; later parameters still count
 * towards the query's size. */
void request_param(struct request *r, const char *name, size_t name_len,
                   const char *value, size_t value_len);

/* After the last parameter: 414 when the query was too long, the first
 * parameter problem otherwise. Returns r->status (0: go on). */
int request_params_done(struct request *r);

/* Record a failure of this request (a bad value, …): returns status. */
int request_fail(struct request *r, int status, const char *result, enum param_id param,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* An optional integer parameter in [min, max] (def when absent): 0, or 400. */
int request_int(struct request *r, enum param_id id, long long min, long long max,
                long long def, long long *out);

/* The product code (default "1001"): 0, or 400 for a malformed one. */
int request_product(struct request *r, const char **code);

/* ---------------------------------------------------------------- a purchase */

struct sale_args {
    const struct lock_ops *ops;
    const char *product;
    int         reentry, wait_ms, hold_ms, late_ms, crash, lose_answer, fence;
    int         consumer_crash;     /* fault: the Redis stock's consumer of
                                     * this instance dies after its next
                                     * COMMIT, before its XACK */
    int         release_pause_ms;   /* fault: a pause inside the release
                                     * (lock_ops.release_pause says where) */
    int         allow_deadlock;     /* fault: reentry > 1 on a lock that is
                                     * not reentrant: it waits for itself */
    int         clock_skew_ms;      /* fault: this request's wall clock runs
                                     * N ms ahead (locks that read it)     */
    int         check_pause_ms;     /* fault: a pause after the check's answer,
                                     * before its lease is judged           */
    int         lose_lock;          /* fault: the acquire's first Redis
                                     * answer lost (locks/redis_common.c)   */
    int         read_replica;       /* read=replica: the guarded sale's read
                                     * on the read replica (--mysql-replica) */
};

/* GET /check/lock's parameters, checked against cfg: a known strategy, a
 * product code, reentry 1..LOCK_MAX_DEPTH and above 1 only on a reentrant
 * strategy (or with the fault switch allow_deadlock=1),
 * release_pause_ms only on a strategy whose release says where it pauses, fence=1 only on a strategy that can issue a fencing token,
 * wait_ms and hold_ms within --max-wait-ms, and the fault switches only on
 * a server started with --allow-faults. 0, or the status. */
int request_sale(struct request *r, const struct config *cfg, struct sale_args *out);

/* ---------------------------------------------------------------- an order */

#define REQUEST_QTY_MAX 10000

struct order_args {
    const char *order_no;           /* [A-Za-z0-9_-], 1..64 (order.h)    */
    const char *user;               /* the same, or NULL                  */
    int         qty, one_per_user;
    int         lose_claim;         /* fault: the claim's answer lost      */
};

/* POST /order's own parameters, after request_sale() has checked the
 * purchase's (the fault switches' --allow-faults among them): order_no
 * required, qty 1..REQUEST_QTY_MAX (default 1), user well formed,
 * one_per_user 0 or 1 and 1 only with a user, lose_claim 0 or 1. 0, or the
 * status. */
int request_order(struct request *r, struct order_args *out);

/* ---------------------------------------------------------------- the stock */

/* GET /stock's fault switch read_pause_ms (0 when absent): a pause between
 * its read of the Redis stock and its read of MariaDB's count, within
 * --max-wait-ms and only on a server started with --allow-faults. 0, or
 * the status. */
int request_stock(struct request *r, const struct config *cfg, int *read_pause_ms);
/* ---------------------------------------------------------------- a synchronizer */

struct sync_args;

/* A synchronizer's request (GET /sync/<primitive>/<operation> or one of the
 * seeds' /test/ routes), checked against cfg and the operation's table
 * (sync/sync.h): a known primitive, backend (redisson or curator; the
 * primitive's first when absent) and operation (404 naming the valid ones
 * otherwise), only the parameters that operation takes (every one takes
 * name, backend and wait_ms, which bounds its wait for a worker slot too),
 * a valid ?name=
 * (and ?names=, ?member=, ?permit=), waits and holds within --max-wait-ms
 * (waits default to --lock-wait-ms, the seeds' routes to --max-wait-ms:
 * Redisson waits there without a bound). 0, or the status. */
int request_sync(struct request *r, const struct config *cfg, struct sync_args *out);

/* POST /sync/reset's ?name= (required, a valid name): 0 or the status. */
int request_sync_name(struct request *r, const char **name);

/* ---------------------------------------------------------------- answers */

/* The JSON answer for a failed request: {"result":…,"error":…} with
 * "parameter" when one is at fault and "valid" (the strategies' names)
 * for an unknown strategy. Never NULL. */
json_t *request_error_json(const struct request *r);

/* Does `authorization` carry `token` ("Bearer <token>")? Compared in time
 * that depends on the token's length only, never on where they differ. */
int request_token_ok(const char *authorization, const char *token);

#endif /* LOCKLAB_REQUEST_H */
