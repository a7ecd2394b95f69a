/* http.c — libmicrohttpd's side of the server: listeners, connections,
 * the routes' handlers and the one place codes become HTTP.
 *
 * On the loop. libmicrohttpd runs in epoll mode without threads of its
 * own: its epoll set is one descriptor of the instance's loop (core/
 * loop.h) and its connection time-outs one timer, and MHD_run() serves
 * whatever is ready. A request that answers from memory (/health, /locks,
 * /stats) is answered in the handler. One that talks to a backend runs in
 * a coroutine (task_start(): at once, until its first wait); if it has to
 * wait — a lock, a row lock, a watch, a round trip — its connection is
 * suspended (MHD_ALLOW_SUSPEND_RESUME) and the loop serves the others; at
 * its end it leaves the answer on its exchange and resumes the connection,
 * and at the turn's end libmicrohttpd sends every answer made in the turn.
 * A connection costs a descriptor and its 4 KiB of memory, never a
 * thread, and is closed once it has been idle HTTP_IDLE_S: a header that
 * does not come within that time, or a keep-alive connection that sends
 * no next request. Connections are bounded by
 * --max-connections (past it, a prompt 503 "overloaded" that closes the
 * connection), backend connections separately by the --threads worker
 * slots (pool.c), and every wait by --max-wait-ms.
 *
 * What a request may be — route, method, admin token, parameters — is
 * decided by request.c, which knows nothing of libmicrohttpd (and is
 * fuzzed on its own); this file hands it what libmicrohttpd parsed and
 * acts on the verdict. Every answer is JSON (jansson) and names the
 * instance; purchase answers also name the strategy. Status mapping, in
 * status_code():
 *   sold 200 · sold_out 409 · lock_timeout 503 · unavailable 503 (+backend)
 *   unknown 500 (the sale's answer was lost: it may have been made)
 *   error 500 · refused requests 400/401/404/405/414 (request.c)
 * GET /metrics is the one answer that is not JSON: Prometheus's text
 * format (metrics.h), which names the instance in locklab_instance_info.
 */
#include "http.h"
#include "metrics.h"
#include "orders.h"
#include "pool.h"
#include "request.h"
#include "sale.h"
#include "stats.h"
#include "../core/config.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../store/buckets.h"
#include "../locks/lock.h"
#include "../store/redis_stock.h"
#include "../store/stock.h"
#include "../sync/sync.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A connection idle this many seconds is closed: a new one whose header
 * has not come (a half-open connection costs a descriptor and a few
 * kilobytes, never a thread, and is gone after this), or a keep-alive one
 * between requests. The stack's nginx lets its idle upstream connections
 * go sooner (4 s), so it never sends a request on one this side is
 * closing.
 *
 * One time-out for both, the daemon's: libmicrohttpd keeps the
 * connections that have it in a list sorted by their last activity and
 * looks at the oldest only, but walks every connection given a time-out
 * of its own (MHD_CONNECTION_OPTION_TIMEOUT) at each MHD_run(). With a
 * longer keep-alive time-out set per connection once its header came, that
 * walk over nginx's upstream connections took 14.5 % of the machine's CPU
 * samples (half of the instances') under `wrk -c2000` on /health, and 2.2
 * % without it (docs/journal.md, 2026-11-28). */
#define HTTP_IDLE_S 5

/* The listen backlog, TCP and Unix socket alike. nginx may open up to 2048
 * connections to an instance at once (UPSTREAM_MAX_CONNS in
 * bench/lib/stack_front.sh), faster than the accepting thread takes them
 * under a crowd (or ASan). A full backlog on a Unix socket fails connect()
 * at once with EAGAIN, which nginx counts as a dead upstream and answers
 * 502; the kernel caps the value at net.core.somaxconn (4096 on bookworm). */
#define LISTEN_BACKLOG 4096

static const struct config *cfg;
static int64_t started_ms;

/* ---------------------------------------------------------------- exchanges */

/* One request and its answer. libmicrohttpd hands the request over in its
 * access handler, and takes the answer only there: a route that has to
 * wait runs in a coroutine of its own (core/wait.h) while the connection
 * is suspended, leaves its answer here, and resumes the connection, whose
 * next handler call queues it. A route that never waits answers at once. */
struct exchange {
    struct MHD_Connection *conn;
    struct request         req;
    enum MHD_Result      (*route)(struct exchange *, struct request *);
    int                    state;       /* X_NEW, X_RUNNING, X_DONE           */
    int                    suspended;   /* the connection waits for the answer */
    unsigned               code;
    struct MHD_Response   *resp;        /* NULL: close the connection (no memory) */
};

enum { X_NEW, X_RUNNING, X_DONE };

/* Exchanges running in coroutines: the shutdown waits for them. Whether
 * one ended this turn on a suspended connection (see on_turn_end). */
static int running, resumed;
static struct wait_cond running_cv = WAIT_COND_INIT;

static enum MHD_Result exchange_answer(struct exchange *x, unsigned code,
                                       struct MHD_Response *resp)
{
    x->code = code;
    x->resp = resp;
    return MHD_YES;
}

/* ---------------------------------------------------------------- answers */

/* What an answer can say when even its JSON could not be built. */
static const char fallback_500[] =
    "{\"result\":\"error\",\"error\":\"the answer could not be built\"}";

/* Send `body` (consumed) as JSON with `code`, plus up to two headers
 * (name, value pairs; NULL to end). Every answer names the instance. If the
 * body cannot be written, a fixed 500 goes out instead: never a connection
 * dropped without an answer. */
static enum MHD_Result reply_h(struct exchange *x, unsigned code, json_t *body,
                               const char *h1, const char *v1, const char *h2, const char *v2)
{
    struct MHD_Response *resp;
    char *text = NULL;

    if (body != NULL) {
        json_object_set_new(body, "instance", json_string(cfg->name));
        text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
    }
    if (text != NULL) {
        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    } else {
        code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        resp = MHD_create_response_from_buffer(sizeof fallback_500 - 1, (void *)fallback_500,
                                               MHD_RESPMEM_PERSISTENT);
    }
    if (resp == NULL) {
        free(text);
        return MHD_NO;              /* out of memory: nothing left to say */
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (h1)
        MHD_add_response_header(resp, h1, v1);
    if (h2)
        MHD_add_response_header(resp, h2, v2);
    return exchange_answer(x, code, resp);
}

static enum MHD_Result reply(struct exchange *x, unsigned code, json_t *body)
{
    return reply_h(x, code, body, NULL, NULL, NULL, NULL);
}

/* Send `text` (len bytes, malloc'ed, consumed) as 200 of content type `type`. */
static enum MHD_Result reply_text(struct exchange *x, char *text, size_t len,
                                  const char *type)
{
    struct MHD_Response *resp;

    resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return exchange_answer(x, MHD_HTTP_OK, resp);
}

/* The answer to a request request.c refused: 400, 401, 404, 405 or 414. */
static enum MHD_Result reply_refused(struct exchange *x, const struct request *r)
{
    json_t *body = request_error_json(r);

    if (r->status == MHD_HTTP_METHOD_NOT_ALLOWED)
        return reply_h(x, (unsigned)r->status, body, MHD_HTTP_HEADER_ALLOW, r->allow,
                       NULL, NULL);
    if (r->status == MHD_HTTP_UNAUTHORIZED)
        return reply_h(x, (unsigned)r->status, body, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                       "Bearer", NULL, NULL);
    return reply(x, (unsigned)r->status, body);
}

static unsigned status_code(int status)
{
    switch (status) {
    case LL_OK:          return MHD_HTTP_OK;
    case LL_SOLD_OUT:    return MHD_HTTP_CONFLICT;
    case LL_FENCED:      return MHD_HTTP_CONFLICT;
    case LL_LOST:        return MHD_HTTP_SERVICE_UNAVAILABLE;
    case LL_TIMEOUT:     return MHD_HTTP_SERVICE_UNAVAILABLE;
    case LL_UNAVAILABLE: return MHD_HTTP_SERVICE_UNAVAILABLE;
    case LL_BADREQ:      return MHD_HTTP_BAD_REQUEST;
    default:             return MHD_HTTP_INTERNAL_SERVER_ERROR;  /* error, unknown */
    }
}

/* A failure answer from ctx's error: {"result":…,"error":…[,"backend":…]}.
 * The error text may quote a server (MariaDB, Redis, ZooKeeper), so it is
 * made safe for JSON like anything else from outside. */
static json_t *failure_json(int status, const struct lock_ctx *ctx)
{
    char error[sizeof ctx->errstr * 2];
    const char *text = ctx && ctx->errstr[0] ? ctx->errstr : ll_status_name(status);
    json_t *o;

    text_safe(error, sizeof error, text, strlen(text));
    o = json_pack("{s:s,s:s}", "result", ll_status_name(status), "error", error);
    if (o && ctx && status == LL_UNAVAILABLE && ctx->backend)
        json_object_set_new(o, "backend", json_string(ctx->backend));
    return o;
}

/* A 500 is our fault or a backend's surprise: say what it was on stderr
 * (the instance log), at most LOG_PER_SECOND lines a second. */
#define LOG_PER_SECOND 10

static void log_failure(const char *lock, const char *error)
{
    static _Atomic int64_t second;
    static _Atomic int logged;
    int64_t now = now_ms() / 1000;
    int64_t seen = atomic_load(&second);

    if (seen != now && atomic_compare_exchange_strong(&second, &seen, now))
        atomic_store(&logged, 0);
    if (atomic_fetch_add(&logged, 1) < LOG_PER_SECOND)
        fprintf(stderr, "locklab: %s: lock=%s: 500: %s\n", cfg->name, lock, error);
}

/* ---------------------------------------------------------------- routes */

/* Connections open on both listeners, and opened since the start, counted
 * by libmicrohttpd's notices. Each one opened is a handshake and the
 * loop's state for one more connection: a proxy that keeps too few idle
 * connections shows here as a count that grows with the requests. */
static _Atomic int open_connections;
static _Atomic long long opened_connections;

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls, (void)conn, (void)socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&open_connections, 1);
        atomic_fetch_add(&opened_connections, 1);
    } else {
        atomic_fetch_sub(&open_connections, 1);
    }
}


static struct lock_ctx *borrow(int wait_ms)
{
    int64_t deadline_ms = now_ms() + wait_ms;
    struct lock_ctx *ctx = pool_get(deadline_ms);

    if (ctx) {
        ctx->deadline_ms = deadline_ms;
        ctx->wait_ms = wait_ms;
        ctx->hold_ms = ctx->late_ms = ctx->crash = ctx->lose_answer = ctx->fence = 0;
        ctx->release_pause_ms = ctx->clock_skew_ms = ctx->read_replica = 0;
        ctx->check_pause_ms = ctx->lose_lock = 0;
        ctx->lease_until_us = ctx->held_since_us = 0;
        ctx->token = 0;
        ctx->token_src = NULL;
        ctx->qty = 1;
        ctx->order = NULL;
        ctx->retries = ctx->backend_ops = ctx->wakeups = ctx->deadlocks = ctx->foreign = 0;
        ctx->cert_failures = 0;
        ctx->cert_failed = 0;
        ctx->held_us = -1;
        ctx->err = 0;
        ctx->backend = NULL;
        ctx->errstr[0] = '\0';
    }
    return ctx;
}

static enum MHD_Result no_slot(struct exchange *x)
{
    char why[128];
    snprintf(why, sizeof why, "all %d worker slots busy", cfg->threads);
    return reply(x, MHD_HTTP_SERVICE_UNAVAILABLE,
                 json_pack("{s:s,s:s}", "result", "lock_timeout", "error", why));
}

/* A slot for a purchase, with its fault switches set; NULL when none is
 * free within its wait. */
static struct lock_ctx *borrow_for(const struct sale_args *a)
{
    struct lock_ctx *ctx = borrow(a->wait_ms);

    if (ctx == NULL)
        return NULL;
    ctx->hold_ms = a->hold_ms;
    ctx->late_ms = a->late_ms;
    ctx->fence = a->fence;
    ctx->crash = a->crash;
    ctx->lose_answer = a->lose_answer;
    ctx->release_pause_ms = a->release_pause_ms;
    ctx->clock_skew_ms = a->clock_skew_ms;
    ctx->check_pause_ms = a->check_pause_ms;
    ctx->lose_lock = a->lose_lock;
    ctx->read_replica = a->read_replica;
    if (a->consumer_crash)
        redis_stock_consumer_crash();
    return ctx;
}

static enum MHD_Result sale(struct exchange *x, struct request *r)
{
    long long remaining = -1;
    struct sale_args a;
    struct lock_ctx *ctx;
    struct product prod;
    int64_t t0 = now_us();
    int rc, release_failed;
    json_t *body;

    if (request_sale(r, cfg, &a) != 0)
        return reply_refused(x, r);
    if ((ctx = borrow_for(&a)) == NULL)
        return no_slot(x);
    rc = stock_find(ctx, a.product, &prod);
    if (rc == LL_OK || rc == LL_SOLD_OUT)
        rc = sale_run(ctx, a.ops, &prod, a.reentry, &remaining);
    release_failed = rc == LL_OK && ctx->err != 0;

    if (rc == LL_OK || rc == LL_SOLD_OUT) {
        body = json_pack("{s:s,s:s,s:I}", "result", ll_status_name(rc),
                         "product", prod.code, "retries", (json_int_t)ctx->retries);
        if (rc == LL_OK && remaining >= 0)
            json_object_set_new(body, "remaining", json_integer(remaining));
        if (release_failed)
            json_object_set_new(body, "warning", failure_json(LL_ERROR, ctx));
    } else {
        body = failure_json(rc, ctx);
    }
    json_object_set_new(body, "lock", json_string(a.ops->name));
    if (ctx->deadlocks > 0)
        json_object_set_new(body, "deadlocks", json_integer(ctx->deadlocks));
    if (ctx->cert_failures > 0)
        json_object_set_new(body, "cert_failures", json_integer(ctx->cert_failures));
    if (status_code(rc) == MHD_HTTP_INTERNAL_SERVER_ERROR)
        log_failure(a.ops->name, ctx->errstr);
    stats_record(lock_index(a.ops), rc, now_us() - t0, ctx, release_failed);
    pool_put(ctx);
    return reply(x, status_code(rc), body);
}

/* Every purchase is counted in flight from its first byte to its answer. */
static enum MHD_Result in_flight(struct exchange *x, struct request *r,
                                 enum MHD_Result (*purchase)(struct exchange *,
                                                             struct request *))
{
    enum MHD_Result ret;

    stats_begin();
    ret = purchase(x, r);
    stats_end();
    return ret;
}

static enum MHD_Result route_sale(struct exchange *x, struct request *r)
{
    return in_flight(x, r, sale);
}

/* POST /order: a purchase with an order number (app/orders.h). Only a
 * first attempt's sale is counted under its strategy; a copy that got the
 * first answer again (replayed), a user's second order and a copy that
 * waited for a first attempt still selling are counted under "orders". */
static enum MHD_Result order(struct exchange *x, struct request *r)
{
    long long remaining = -1;
    struct order_args oa;
    struct sale_args a;
    struct lock_ctx *ctx;
    struct product prod;
    struct order o;
    int64_t t0 = now_us();
    int rc, release_failed, conflict;
    json_t *body;

    if (request_sale(r, cfg, &a) != 0 || request_order(r, &oa) != 0)
        return reply_refused(x, r);
    if ((ctx = borrow_for(&a)) == NULL)
        return no_slot(x);
    ctx->qty = oa.qty;
    memset(&o, 0, sizeof o);
    o.no = oa.order_no;
    o.user = oa.user;
    o.one_per_user = oa.one_per_user;
    o.lose_claim = oa.lose_claim;
    rc = stock_find(ctx, a.product, &prod);
    if (rc == LL_OK)
        rc = order_place(ctx, a.ops, &prod, &o, &remaining);
    release_failed = rc == LL_OK && ctx->err != 0 && o.ran;
    conflict = o.replayed && rc == LL_BADREQ;

    if (rc == LL_OK || rc == LL_SOLD_OUT) {
        body = json_pack("{s:s,s:s,s:s,s:i,s:b,s:I}",
                         "result", o.user_limit ? "one_per_user" : ll_status_name(rc),
                         "order_no", o.no, "product", prod.code, "qty", ctx->qty,
                         "replayed", o.replayed, "retries", (json_int_t)ctx->retries);
        if (rc == LL_OK && remaining >= 0)
            json_object_set_new(body, "remaining", json_integer(remaining));
        if (o.user_limit)
            json_object_set_new(body, "error", json_sprintf("user %s already has %s%s for "
                                "product %s (one_per_user)", o.user, o.other[0] ? "order " :
                                "an order", o.other, prod.code));
        if (release_failed)
            json_object_set_new(body, "warning", failure_json(LL_ERROR, ctx));
        if (o.warning[0])
            json_object_set_new(body, "order_warning", json_string(o.warning));
    } else {
        body = failure_json(rc, ctx);
        if (conflict)
            json_object_set_new(body, "result", json_string("order_conflict"));
        json_object_set_new(body, "order_no", json_string(o.no));
        json_object_set_new(body, "replayed", json_boolean(o.replayed));
    }
    json_object_set_new(body, "lock", json_string(a.ops->name));
    if (status_code(rc) == MHD_HTTP_INTERNAL_SERVER_ERROR)
        log_failure(a.ops->name, ctx->errstr);
    if (o.ran)
        stats_record(lock_index(a.ops), rc, now_us() - t0, ctx, release_failed);
    order_count(&o, rc);
    pool_put(ctx);
    return reply(x, o.user_limit || conflict ? MHD_HTTP_CONFLICT : status_code(rc), body);
}

static enum MHD_Result route_order(struct exchange *x, struct request *r)
{
    return in_flight(x, r, order);
}

/* Clear what every strategy may have left behind for this product. */
static json_t *reset_locks(struct lock_ctx *ctx, const struct product *prod)
{
    const struct lock_ops *const *all;
    json_t *cleared = json_object();
    int i, n, rc;

    all = lock_all(&n);
    for (i = 0; i < n; i++) {
        if (!lock_resets(all[i]))
            continue;
        ctx->ops = all[i];
        ctx->err = 0;
        rc = lock_reset(ctx, lock_key_for(all[i], prod->key));
        json_object_set_new(cleared, all[i]->name, rc == LL_OK ? json_string("ok")
                                                               : failure_json(rc, ctx));
    }
    return cleared;
}

static enum MHD_Result route_stock(struct exchange *x, struct request *r)
{
    int reset = r->route->id == ROUTE_STOCK_RESET;
    struct lock_ctx *ctx;
    struct product prod;
    struct buckets_reset br;
    const char *code;
    long long count = 0, epoch = 0, buckets = 1, own = 0;
    json_t *body, *split = NULL, *redis = NULL;
    int rc, pause_ms = 0;

    if (request_product(r, &code) != 0 || (!reset && request_stock(r, cfg, &pause_ms) != 0))
        return reply_refused(x, r);
    if (reset && r->param[P_COUNT] == NULL) {
        request_fail(r, 400, "bad_request", P_COUNT, "count is required");
        return reply_refused(x, r);
    }
    if (reset && (request_int(r, P_COUNT, 0, 1000000000, 0, &count) != 0 ||
                  request_int(r, P_BUCKETS, 1, STOCK_BUCKETS_MAX, 1, &buckets) != 0))
        return reply_refused(x, r);
    ctx = borrow(cfg->lock_wait_ms);
    if (ctx == NULL)
        return no_slot(x);
    own = stock_bucket_share(count, (int)buckets, 0);   /* the product's own row's */
    rc = stock_find(ctx, code, &prod);
    if (rc == LL_OK && reset)   /* the other buckets' rows and epochs (locks/buckets.h) */
        rc = buckets_reset_begin(ctx, &prod, (int)buckets, &br);
    if (rc == LL_OK && reset)   /* the Redis stock's new epoch first: redis_stock.h */
        rc = redis_stock_reset_begin(ctx, &prod, &epoch);
    if (rc == LL_OK)            /* the Redis stock first, then MariaDB's count */
        rc = reset ? stock_set(ctx, &prod, own)
                   : buckets_stock(ctx, &prod, pause_ms, &count, &split, &redis);
    if (rc == LL_OK && reset)   /* a new sale: one order per user again */
        rc = order_reset(ctx, &prod);
    if (rc != LL_OK)
        body = failure_json(rc, ctx);
    else if (!reset)
        body = json_pack("{s:s,s:s,s:I}", "product", prod.code, "warehouse", STOCK_WAREHOUSE,
                         "count", (json_int_t)count);
    else
        body = json_pack("{s:s,s:s,s:I,s:o}", "result", "reset", "product", prod.code,
                         "count", (json_int_t)count, "cleared", reset_locks(ctx, &prod));
    if (rc == LL_OK && split)
        json_object_set_new(body, "buckets", split);
    if (rc == LL_OK)            /* the stock in Redis: loaded, or read */
        json_object_set_new(body, "redis", reset ? redis_stock_load(ctx, &prod, own, epoch)
                                         : redis);
    if (rc == LL_OK && reset && (rc = buckets_reset_end(ctx, &br, count, body)) != LL_OK) {
        json_decref(body);
        body = failure_json(rc, ctx);
    }
    pool_put(ctx);
    if (rc == LL_OK && reset) {
        stats_reset();
        order_stats_reset();
        lock_families_stats_reset();
    }
    return reply(x, status_code(rc), body);
}

/* The names of the faults (locks/faults.h) whose bits are set in mask. */
static json_t *fault_names(unsigned mask)
{
    json_t *names = json_array();
    int i;

    for (i = 0; i < LOCK_FAULT_COUNT; i++)
        if (mask & (1u << i))
            json_array_append_new(names, json_string(lock_fault_name(i)));
    return names;
}

/* The faults the matrix judges strategies under, in its order. */
static json_t *fault_list(void)
{
    json_t *list = json_array();
    int i;

    for (i = 0; i < LOCK_FAULT_COUNT; i++)
        json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "name", lock_fault_name(i),
                                              "families", lock_fault_families(i),
                                              "what", lock_fault_what(i)));
    return list;
}

static enum MHD_Result route_locks(struct exchange *x, struct request *r)
{
    const struct lock_ops *const *all;
    json_t *list = json_array();
    int i, n;

    (void)r;
    all = lock_all(&n);
    for (i = 0; i < n; i++) {
        const struct lock_ops *o = all[i];
        json_t *one = json_pack("{s:s,s:s,s:s,s:s?,s:s,s:b,s:b,s:b,s:b,s:b,s:b,s:s?,s:s?}",
            "name", o->name, "family", o->family, "summary", o->summary, "flaw", o->flaw,
            "ceiling", o->ceiling,
            "distributed", !!(o->props & LOCK_DISTRIBUTED),
            "reentrant", !!(o->props & LOCK_REENTRANT),
            "auto_release", !!(o->props & LOCK_AUTO_RELEASE),
            "fair", !!(o->props & LOCK_FAIR),
            "exact", !!(o->props & LOCK_EXACT),
            "fenced", !!(o->props & LOCK_FENCED),
            "fence", o->fence, "nofence", o->fence ? NULL : o->nofence);
        /* What the ceiling is and how ll-limits measures it (locks/lock.h). */
        json_object_set_new(one, "ceiling_method", json_string(lock_ceiling_method(o->ceiling)));
        json_object_set_new(one, "ceiling_what", json_string(lock_ceiling_what(o->ceiling)));
        json_object_set_new(one, "stock", json_string(o->stock ? o->stock : "mysql"));
        json_object_set_new(one, "lock_key", json_string(o->lock_key ? o->lock_key
                                                                     : "lock:<product>"));
        if (o->compare_skip)
            json_object_set_new(one, "compare_skip", json_string(o->compare_skip));
        if (o->release_pause)
            json_object_set_new(one, "release_pause", json_string(o->release_pause));
        /* Its sale: the guarded one of app/sale.c, or its own (sell). */
        json_object_set_new(one, "guarded", json_boolean(!lock_sells(o)));
        /* Its claims under the faults (locks/faults.h): what it does not survive. */
        json_object_set_new(one, "fails", fault_names(o->fails));
        if (o->fence)
            json_object_set_new(one, "fence_fails", fault_names(o->fence_fails));
        json_array_append_new(list, one);
    }
    return reply(x, MHD_HTTP_OK, json_pack("{s:s,s:o,s:o}", "default", cfg->lock,
                                              "strategies", list, "faults", fault_list()));
}

static enum MHD_Result route_stats(struct exchange *x, struct request *r)
{
    json_t *body;

    if (r->route->id == ROUTE_STATS_RESET) {
        stats_reset();
        order_stats_reset();
        lock_families_stats_reset();
        return reply(x, MHD_HTTP_OK, json_pack("{s:s}", "result", "reset"));
    }
    body = stats_json();
    json_object_set_new(body, "id", json_string(cfg->instance_id));
    json_object_set_new(body, "slots", json_integer(cfg->threads));
    json_object_set_new(body, "connections", json_pack("{s:i,s:I,s:i}",
                        "open", atomic_load(&open_connections),
                        "opened", (json_int_t)atomic_load(&opened_connections),
                        "max", cfg->max_connections));
    json_object_set_new(body, "uptime_s", json_real((double)(now_ms() - started_ms) / 1000.0));
    json_object_set_new(body, "orders", order_stats_json());
    lock_families_stats(body);          /* "redis_stock", "fallback" */
    return reply(x, MHD_HTTP_OK, body);
}

/* GET /metrics: /stats's counters, the connections and the stock, for
 * Prometheus. Public, as /stats and /stock are: it shows nothing they do
 * not (README, Security). */
static enum MHD_Result route_metrics(struct exchange *x, struct request *r)
{
    struct metrics *m = metrics_new();
    char *text;
    size_t len;

    (void)r;
    metrics_instance(m, cfg);
    stats_metrics(m);
    metrics_family(m, "locklab_connections_open", "gauge",
                   "HTTP connections open on this instance's listeners.");
    metrics_gauge(m, "locklab_connections_open", NULL, atomic_load(&open_connections));
    metrics_family(m, "locklab_connections_opened_total", "counter",
                   "HTTP connections opened since the start.");
    metrics_int(m, "locklab_connections_opened_total", NULL,
                (uint64_t)atomic_load(&opened_connections));
    metrics_family(m, "locklab_worker_slots", "gauge",
                   "Worker slots (--threads): purchases served at once.");
    metrics_gauge(m, "locklab_worker_slots", NULL, cfg->threads);
    metrics_stock(m);
    text = metrics_text(m, &len);
    return reply_text(x, text, len, "text/plain; version=0.0.4; charset=utf-8");
}

static enum MHD_Result route_health(struct exchange *x, struct request *r)
{
    (void)r;
    return reply(x, MHD_HTTP_OK, json_pack("{s:s,s:s,s:s}", "status", "ok",
                 "id", cfg->instance_id, "default_lock", cfg->lock));
}

/* ---------------------------------------------------------------- synchronizers */

/* A synchronizer's operation may block for its whole wait and then hold
 * for hold_ms (the seeds' semaphore: 5 s of work), and it holds a worker
 * slot all that time, as a purchase does. So that a crowd of them cannot
 * starve the purchases, at most half the slots (at least one) serve
 * synchronizers at once; a further one waits for one of those, within its
 * own wait_ms, and past that is answered 503 "busy". The seeds' timelines
 * need a few slots per instance (ten semaphore callers over three
 * instances: four at most on one). */
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wait_cond sync_cv = WAIT_COND_INIT;
static int sync_in_flight;

static int sync_cap(void)
{
    return cfg->threads / 2 > 0 ? cfg->threads / 2 : 1;
}

/* One of the synchronizers' places, waiting no later than deadline_ms. */
static int sync_enter(int64_t deadline_ms)
{
    int ok;

    pthread_mutex_lock(&sync_mu);
    while (sync_in_flight >= sync_cap())
        if (!wait_cond_wait(&sync_cv, &sync_mu, deadline_ms * 1000))
            break;
    if ((ok = sync_in_flight < sync_cap()))
        sync_in_flight++;
    pthread_mutex_unlock(&sync_mu);
    return ok;
}

static void sync_leave(void)
{
    pthread_mutex_lock(&sync_mu);
    sync_in_flight--;
    pthread_mutex_unlock(&sync_mu);
    wait_cond_signal(&sync_cv);
}

static enum MHD_Result route_sync(struct exchange *x, struct request *r)
{
    struct sync_args a;
    struct lock_ctx *ctx;
    json_t *out, *body;
    int64_t t0, left;
    char why[200];
    int rc;

    if (request_sync(r, cfg, &a) != 0)
        return reply_refused(x, r);
    t0 = now_ms();
    if (!sync_enter(t0 + a.wait_ms)) {
        snprintf(why, sizeof why, "%d synchronizer operations in flight for %d ms, the most "
                 "this instance serves at once (half its %d worker slots: the rest are the "
                 "purchases')", sync_cap(), a.wait_ms, cfg->threads);
        return reply(x, MHD_HTTP_SERVICE_UNAVAILABLE,
                     json_pack("{s:s,s:s}", "result", "busy", "error", why));
    }
    left = t0 + a.wait_ms - now_ms();        /* one wait_ms for the place and the op */
    ctx = borrow(left > 0 ? (int)left : 0);
    if (ctx == NULL) {
        sync_leave();
        return no_slot(x);
    }
    ctx->wait_ms = a.wait_ms;
    out = json_object();
    rc = sync_run(ctx, &a, out);
    if (rc == LL_OK) {
        body = out;
        json_object_set_new(body, "result", json_string("ok"));
    } else {
        body = failure_json(rc, ctx);
        json_object_update_missing(body, out);
        json_decref(out);
    }
    if (status_code(rc) == MHD_HTTP_INTERNAL_SERVER_ERROR)
        log_failure(a.ops->primitive, ctx->errstr);
    pool_put(ctx);
    sync_leave();
    return reply(x, status_code(rc), body);
}

static enum MHD_Result route_sync_list(struct exchange *x, struct request *r)
{
    const struct sync_ops *const *all;
    const struct sync_op *op;
    json_t *list = json_array(), *ops;
    int i, n;

    (void)r;
    all = sync_all(&n);
    for (i = 0; i < n; i++) {
        const struct sync_ops *o = all[i];
        ops = json_array();
        for (op = o->ops; op->name; op++)
            json_array_append_new(ops, json_pack("{s:s,s:s,s:s}", "name", op->name,
                                                 "params", op->params, "summary", op->summary));
        json_array_append_new(list, json_pack(
            "{s:s,s:s,s:s,s:s,s:s,s:s?,s:s,s:s,s:s?,s:s,s:b,s:b,s:b,s:b,s:b,s:o}",
            "primitive", o->primitive, "backend", o->backend, "library", o->library,
            "where", o->where, "summary", o->summary, "flaw", o->flaw,
            "invariant", o->invariant, "ceiling", o->ceiling, "bench", o->bench,
            "bench_check", o->bench_check,
            "distributed", !!(o->props & LOCK_DISTRIBUTED),
            "reentrant", !!(o->props & LOCK_REENTRANT),
            "auto_release", !!(o->props & LOCK_AUTO_RELEASE),
            "fair", !!(o->props & LOCK_FAIR),
            "exact", !!(o->props & LOCK_EXACT), "operations", ops));
    }
    return reply(x, MHD_HTTP_OK, json_pack("{s:o,s:i}", "synchronizers", list,
                                              "max_in_flight", sync_cap()));
}

/* POST /sync/reset?name=N: every synchronizer's keys or znodes of N. Admin:
 * it deletes what other clients may hold or wait on (a Java service's lock,
 * a count), which no ordinary caller of a primitive may do. */
static enum MHD_Result route_sync_reset(struct exchange *x, struct request *r)
{
    const struct sync_ops *const *all;
    struct lock_ctx *ctx;
    json_t *cleared = json_object();
    const char *name;
    char key[64];
    int i, n, rc;

    if (request_sync_name(r, &name) != 0) {
        json_decref(cleared);
        return reply_refused(x, r);
    }
    if ((ctx = borrow(cfg->lock_wait_ms)) == NULL) {
        json_decref(cleared);
        return no_slot(x);
    }
    all = sync_all(&n);
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s/%s", all[i]->primitive, all[i]->backend);
        ctx->err = 0;
        ctx->errstr[0] = '\0';
        rc = all[i]->reset(ctx, name);
        json_object_set_new(cleared, key, rc == LL_OK ? json_string("ok")
                                                      : failure_json(rc, ctx));
    }
    pool_put(ctx);
    return reply(x, MHD_HTTP_OK, json_pack("{s:s,s:s,s:o}", "result", "reset",
                                              "name", name, "cleared", cleared));
}

static enum MHD_Result (*const handlers[])(struct exchange *, struct request *) = {
    [ROUTE_SALE] = route_sale,        [ROUTE_STOCK] = route_stock,
    [ROUTE_STOCK_RESET] = route_stock, [ROUTE_LOCKS] = route_locks,
    [ROUTE_STATS] = route_stats,      [ROUTE_STATS_RESET] = route_stats,
    [ROUTE_HEALTH] = route_health,    [ROUTE_ORDER] = route_order,
    [ROUTE_SYNC_LIST] = route_sync_list, [ROUTE_SYNC_RESET] = route_sync_reset,
    [ROUTE_SYNC] = route_sync,        [ROUTE_TEST_READ] = route_sync,
    [ROUTE_TEST_WRITE] = route_sync,  [ROUTE_TEST_SEMAPHORE] = route_sync,
    [ROUTE_TEST_LATCH] = route_sync,  [ROUTE_TEST_COUNTDOWN] = route_sync,
    [ROUTE_METRICS] = route_metrics,
};

/* ---------------------------------------------------------------- dispatch */

/* Past --max-connections, a prompt 503 that closes the connection: a
 * client (or a proxy) learns at once that this instance is full, instead
 * of waiting in a queue or meeting a refused connect, which a proxy takes
 * for a dead server. libmicrohttpd's own limit lies OVERLOAD_ROOM above
 * ours, so it is reached only by a flood no answer would slow down. */
#define OVERLOAD_ROOM 256

static enum MHD_Result overloaded(struct exchange *x, int open)
{
    char why[128];

    stats_overloaded();
    snprintf(why, sizeof why, "%d connections open, more than this instance serves "
             "(--max-connections %d)", open, cfg->max_connections);
    return reply_h(x, MHD_HTTP_SERVICE_UNAVAILABLE,
                   json_pack("{s:s,s:s}", "result", "overloaded", "error", why),
                   MHD_HTTP_HEADER_CONNECTION, "close", MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

static enum MHD_Result param_one(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    request_param(cls, key, key_size, value, value_size);
    return MHD_YES;
}

/* Routes that answer from memory: no backend, no wait, no coroutine. */
static int route_waits(int id)
{
    return id != ROUTE_HEALTH && id != ROUTE_LOCKS && id != ROUTE_STATS &&
           id != ROUTE_STATS_RESET && id != ROUTE_SYNC_LIST;
}

/* The coroutine of an exchange whose route waits. */
static void exchange_run(void *arg)
{
    struct exchange *x = arg;

    if (x->route(x, &x->req) != MHD_YES && x->resp) {
        MHD_destroy_response(x->resp);
        x->resp = NULL;
    }
    x->state = X_DONE;
    if (x->suspended) {
        MHD_resume_connection(x->conn);
        resumed = 1;            /* libmicrohttpd sends it at the turn's end */
    }
    if (--running == 0)
        wait_cond_broadcast(&running_cv);
}

/* Read the request into x and pick its route; an answer of its own (a
 * refusal, an overload) leaves x done. */
static void exchange_begin(struct exchange *x, const char *url, const char *method)
{
    int open = atomic_load(&open_connections);
    struct request *r = &x->req;

    x->state = X_DONE;
    if (open > cfg->max_connections) {
        overloaded(x, open);
        return;
    }
    if (request_begin(r, method, url,
                      MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_AUTHORIZATION),
                      cfg->admin_token) != 0) {
        reply_refused(x, r);
        return;
    }
    MHD_get_connection_values_n(x->conn, MHD_GET_ARGUMENT_KIND, param_one, r);
    if (request_params_done(r) != 0) {
        reply_refused(x, r);
        return;
    }
    x->route = handlers[r->route->id];
    if (!route_waits(r->route->id)) {
        if (x->route(x, r) != MHD_YES && x->resp) {
            MHD_destroy_response(x->resp);
            x->resp = NULL;
        }
        return;
    }
    x->state = X_RUNNING;
    running++;
    task_start(exchange_run, x);
}

/* The answer goes out: 500 in the few words left when it could not be made. */
static enum MHD_Result exchange_send(struct exchange *x)
{
    enum MHD_Result ret;

    if (x->resp == NULL)
        return MHD_NO;          /* out of memory: nothing left to say */
    ret = MHD_queue_response(x->conn, x->code, x->resp);
    MHD_destroy_response(x->resp);
    x->resp = NULL;
    return ret;
}

/* libmicrohttpd calls this first when the headers are in, then once per
 * piece of body, then once more with no data: answer on the last call.
 * Answering on the first call would make libmicrohttpd close the connection
 * after the answer (it cannot know the request is complete), which defeats
 * nginx's upstream keep-alive. A suspended exchange is called once more
 * after its coroutine resumed the connection: then its answer goes. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct exchange *x = *con_cls;

    (void)cls, (void)version, (void)upload_data;
    if (x == NULL) {
        x = *con_cls = xcalloc(1, sizeof *x);
        x->conn = conn;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {       /* a body nobody asked for: drop it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (x->state == X_NEW)
        exchange_begin(x, url, method);
    if (x->state == X_RUNNING) {        /* its coroutine waits: so does the connection */
        x->suspended = 1;
        MHD_suspend_connection(conn);
        return MHD_YES;
    }
    return exchange_send(x);
}

/* The request is over (answered, or the connection gone): free it. Its
 * coroutine, if it had one, has ended: a suspended connection is resumed
 * only by it, at its end. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct exchange *x = *con_cls;

    (void)cls, (void)conn, (void)toe;
    if (x == NULL)
        return;
    if (x->resp)
        MHD_destroy_response(x->resp);
    free(x);
    *con_cls = NULL;
}

/* libmicrohttpd's unescape callback: request.c's percent-decoding. */
static size_t on_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls, (void)conn;
    return request_unescape(s);
}

/* ---------------------------------------------------------------- on the loop */

/* A daemon on the instance's loop: libmicrohttpd's epoll set is one
 * descriptor in ours, and its connection timeouts one timer. */
struct listener {
    struct MHD_Daemon *d;
    struct event      *ready;   /* its epoll set has something */
    struct event      *timer;   /* its next connection time-out */
};

static struct listener tcp_l, unix_l;

static void listener_run(struct listener *l)
{
    MHD_UNSIGNED_LONG_LONG ms;
    int64_t t0 = now_us();

    MHD_run(l->d);
    loop_timed(t0);
    if (MHD_get_timeout(l->d, &ms) == MHD_YES) {
        struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
        evtimer_add(l->timer, &tv);
    }
}

static void on_listener(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    listener_run(arg);
}

/* A connection resumed this turn is taken up by libmicrohttpd's next run
 * only: run it now, once for all the answers of the turn, rather than
 * wake the loop through a descriptor for each (MHD_USE_ITC). */
static void on_turn_end(void *arg)
{
    (void)arg;
    if (!resumed)
        return;
    resumed = 0;
    if (tcp_l.d)
        listener_run(&tcp_l);
    if (unix_l.d)
        listener_run(&unix_l);
}

/* Each connection's memory: a request is a line of at most 1 KiB of query
 * (request.c) and a few headers (nginx forwards only the ones we read);
 * the answers are built elsewhere. libmicrohttpd zeroes what a request
 * used of it before the next on the connection: with 16 KiB that memset
 * took 8.7 % of an instance's CPU under `wrk -c2000` on /health, with
 * 4 KiB 2.7 %. A client's header that does not fit gets 431, or, in a
 * narrow band where the header fits but its answer no longer does
 * (about 3-4 KiB of headers), a closed connection. */
#define HTTP_CONN_MEMORY (4 * 1024)

static int serve(struct listener *l, const struct config *c, struct MHD_OptionItem where)
{
    struct MHD_OptionItem opts[] = { where, { MHD_OPTION_END, 0, NULL } };
    const union MHD_DaemonInfo *info;

    l->d = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO | MHD_USE_ERROR_LOG,
        (uint16_t)c->port, NULL, NULL, on_request, NULL,
        MHD_OPTION_ARRAY, opts,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(c->max_connections + OVERLOAD_ROOM),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, NULL,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)LISTEN_BACKLOG,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        MHD_OPTION_END);
    if (l->d == NULL)
        return -1;
    info = MHD_get_daemon_info(l->d, MHD_DAEMON_INFO_EPOLL_FD);
    l->ready = event_new(loop_base(), info->epoll_fd, EV_READ | EV_PERSIST, on_listener, l);
    l->timer = evtimer_new(loop_base(), on_listener, l);
    event_add(l->ready, NULL);
    listener_run(l);
    return 0;
}

static void listener_stop(struct listener *l)
{
    if (l->d == NULL)
        return;
    event_free(l->ready);
    event_free(l->timer);
    MHD_stop_daemon(l->d);
    l->d = NULL;
}

/* A listening Unix socket at path. A file left there by a dead process is
 * replaced; one a live process still answers on is not. */
static int unix_listen(const char *path)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int fd, err;

    if (strlen(path) >= sizeof un.sun_path) {
        fprintf(stderr, "locklab: --unix '%s' is longer than %zu bytes\n",
                path, sizeof un.sun_path - 1);
        return -1;
    }
    memcpy(un.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "locklab: --unix '%s': %s\n", path, strerror(errno));
        return -1;
    }
    err = connect(fd, (struct sockaddr *)&un, sizeof un) == 0 ? 0 : errno;
    close(fd);
    if (err == 0) {
        fprintf(stderr, "locklab: --unix '%s': another server answers there\n", path);
        return -1;
    }
    if (err == ECONNREFUSED)            /* a file, and nobody behind it */
        unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof un) != 0 ||
        listen(fd, LISTEN_BACKLOG) != 0) {
        fprintf(stderr, "locklab: --unix '%s': %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int http_start(const struct config *c)
{
    struct sockaddr_in addr;
    int fd;

    cfg = c;
    started_ms = now_ms();
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)c->port);
    if (inet_pton(AF_INET, c->listen, &addr.sin_addr) != 1) {
        fprintf(stderr, "locklab: --listen '%s' is not an IPv4 address\n", c->listen);
        return -1;
    }
    loop_at_turn_end(on_turn_end, NULL);
    if (serve(&tcp_l, c, (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &addr }) != 0) {
        fprintf(stderr, "locklab: cannot listen on %s:%d (in use?)\n", c->listen, c->port);
        return -1;
    }
    if (c->unix_path == NULL)
        return 0;
    if ((fd = unix_listen(c->unix_path)) < 0) {
        http_stop();
        return -1;
    }
    if (serve(&unix_l, c, (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, fd, NULL }) != 0) {
        fprintf(stderr, "locklab: cannot serve on %s\n", c->unix_path);
        unlink(c->unix_path);           /* the fd: MHD may have closed it */
        http_stop();
        return -1;
    }
    return 0;
}

/* A listener accepts no more: its socket closed, so that a client (or
 * nginx) is refused at once rather than left in the backlog until the
 * process ends, and a new instance bound to the same port (SO_REUSEPORT)
 * gets every new connection. libmicrohttpd hands the socket back rather
 * than close it. */
static void listener_quiesce(struct listener *l)
{
    MHD_socket fd;

    if (l->d && (fd = MHD_quiesce_daemon(l->d)) != MHD_INVALID_SOCKET)
        close(fd);
}

void http_quiesce(void)
{
    if (unix_l.d)
        unlink(cfg->unix_path);
    listener_quiesce(&unix_l);
    listener_quiesce(&tcp_l);
    while (running > 0)
        wait_cond_wait(&running_cv, NULL, WAIT_FOREVER);
}

void http_stop(void)
{
    if (unix_l.d && cfg->unix_path)
        unlink(cfg->unix_path);
    listener_stop(&unix_l);
    listener_stop(&tcp_l);
}
