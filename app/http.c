/* http.c — routes, parameters and the one place codes become HTTP.
 *
 * Threading model: MHD_USE_THREAD_PER_CONNECTION. A purchase blocks — on a
 * lock, a row lock, a watch — for up to --lock-wait-ms, and libmicrohttpd
 * allows blocking in the access handler only in this mode; with it, a
 * request waiting for a lock holds its own connection's thread and never
 * delays another connection. The alternative (a thread pool with
 * MHD_suspend_connection and our own workers) costs two extra thread
 * hand-offs per request on the hot path for no gain here: nginx keeps a
 * bounded set of keep-alive connections per instance, so the thread count
 * stays bounded, and backend connections are bounded separately by the
 * --threads worker slots (pool.c).
 *
 * Every answer is JSON (jansson) and names the instance; purchase answers
 * also name the strategy. Status mapping, in answer_sale():
 *   sold 200 · sold_out 409 · lock_timeout 503 · unavailable 503 (+backend)
 *   error 500 · bad_request 400 (414 for an over-long query string)
 */
#include "http.h"
#include "config.h"
#include "pool.h"
#include "stats.h"
#include "stock.h"
#include "util.h"
#include "../locks/lock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define HTTP_MAX_QUERY 1024     /* bytes of keys and values, all together */

static struct MHD_Daemon *daemon_;     /* --listen:--port */
static struct MHD_Daemon *unix_daemon;  /* --unix, when given */
static const struct config *cfg;
static int64_t started_ms;

/* ---------------------------------------------------------------- answers */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, json_t *body)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;
    char *text;

    json_object_set_new(body, "instance", json_string(cfg->name));
    text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL)
        return MHD_NO;
    resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    ret = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result reply_bad(struct MHD_Connection *conn, unsigned code, const char *why)
{
    return reply(conn, code, json_pack("{s:s,s:s}", "result", "bad_request", "error", why));
}

static unsigned status_code(int status)
{
    switch (status) {
    case LL_OK:          return MHD_HTTP_OK;
    case LL_SOLD_OUT:    return MHD_HTTP_CONFLICT;
    case LL_TIMEOUT:     return MHD_HTTP_SERVICE_UNAVAILABLE;
    case LL_UNAVAILABLE: return MHD_HTTP_SERVICE_UNAVAILABLE;
    case LL_BADREQ:      return MHD_HTTP_BAD_REQUEST;
    default:             return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}

/* A failure answer from ctx's error: {"result":…,"error":…[,"backend":…]} */
static json_t *failure_json(int status, const struct lock_ctx *ctx)
{
    json_t *o = json_pack("{s:s,s:s}", "result", ll_status_name(status),
                          "error", ctx && ctx->errstr[0] ? ctx->errstr : ll_status_name(status));
    if (ctx && status == LL_UNAVAILABLE && ctx->backend)
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

/* ---------------------------------------------------------------- parameters */

struct params {
    const char *lock, *product, *count, *reentry, *hold_ms, *crash, *wait_ms;
    size_t      length;
    char        error[160];
};

static enum MHD_Result param_one(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value)
{
    static const struct { const char *name; size_t off; } known[] = {
        { "lock", offsetof(struct params, lock) },
        { "product", offsetof(struct params, product) },
        { "count", offsetof(struct params, count) },
        { "reentry", offsetof(struct params, reentry) },
        { "hold_ms", offsetof(struct params, hold_ms) },
        { "crash", offsetof(struct params, crash) },
        { "wait_ms", offsetof(struct params, wait_ms) },
    };
    struct params *p = cls;
    size_t i;

    (void)kind;
    p->length += strlen(key) + (value ? strlen(value) : 0) + 2;
    if (p->error[0])
        return MHD_YES;
    for (i = 0; i < sizeof known / sizeof known[0]; i++) {
        const char **slot = (const char **)((char *)p + known[i].off);
        if (strcmp(key, known[i].name) != 0)
            continue;
        if (*slot != NULL)
            snprintf(p->error, sizeof p->error, "parameter '%s' given twice", key);
        else if (value == NULL || *value == '\0')
            snprintf(p->error, sizeof p->error, "parameter '%s' needs a value", key);
        else
            *slot = value;
        return MHD_YES;
    }
    snprintf(p->error, sizeof p->error, "unknown parameter '%.40s'", key);
    return MHD_YES;
}

/* Collect the query; answers 400/414 itself and returns 0 when it is bad. */
static int params_read(struct MHD_Connection *conn, struct params *p, enum MHD_Result *ret)
{
    memset(p, 0, sizeof *p);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, param_one, p);
    if (p->length > HTTP_MAX_QUERY) {
        *ret = reply_bad(conn, MHD_HTTP_URI_TOO_LONG, "query string too long");
        return 0;
    }
    if (p->error[0]) {
        *ret = reply_bad(conn, MHD_HTTP_BAD_REQUEST, p->error);
        return 0;
    }
    if (p->product && !stock_code_valid(p->product)) {
        *ret = reply_bad(conn, MHD_HTTP_BAD_REQUEST,
                         "product must be 1 to 32 characters of [A-Za-z0-9_-]");
        return 0;
    }
    return 1;
}

/* An optional integer parameter in [min, max]; answers 400 when bad. */
static int param_int(struct MHD_Connection *conn, const char *name, const char *value,
                     long long min, long long max, long long def, long long *out,
                     enum MHD_Result *ret)
{
    char why[160];

    *out = def;
    if (value == NULL || parse_int(value, min, max, out) == 0)
        return 1;
    snprintf(why, sizeof why, "%s must be a whole number from %lld to %lld", name, min, max);
    *ret = reply_bad(conn, MHD_HTTP_BAD_REQUEST, why);
    return 0;
}

static json_t *lock_names(void)
{
    const struct lock_ops *const *all;
    json_t *a = json_array();
    int i, n;

    all = lock_all(&n);
    for (i = 0; i < n; i++)
        json_array_append_new(a, json_string(all[i]->name));
    return a;
}

/* ---------------------------------------------------------------- routes */

static struct lock_ctx *borrow(int wait_ms)
{
    int64_t deadline_ms = now_ms() + wait_ms;
    struct lock_ctx *ctx = pool_get(deadline_ms);

    if (ctx) {
        ctx->deadline_ms = deadline_ms;
        ctx->wait_ms = wait_ms;
        ctx->hold_ms = ctx->crash = 0;
        ctx->retries = ctx->backend_ops = ctx->wakeups = 0;
        ctx->held_us = -1;
        ctx->err = 0;
        ctx->backend = NULL;
        ctx->errstr[0] = '\0';
    }
    return ctx;
}

static enum MHD_Result no_slot(struct MHD_Connection *conn)
{
    char why[128];
    snprintf(why, sizeof why, "all %d worker slots busy", cfg->threads);
    return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                 json_pack("{s:s,s:s}", "result", "lock_timeout", "error", why));
}

static enum MHD_Result sale(struct MHD_Connection *conn)
{
    long long reentry, hold_ms, crash, wait_ms, remaining = -1;
    const struct lock_ops *ops;
    enum MHD_Result ret;
    struct lock_ctx *ctx;
    struct product prod;
    struct params p;
    int64_t t0 = now_us();
    int rc, release_failed;
    json_t *body;

    if (!params_read(conn, &p, &ret))
        return ret;
    ops = lock_find(p.lock ? p.lock : cfg->lock);
    if (ops == NULL) {
        char why[160];
        snprintf(why, sizeof why, "unknown strategy '%.40s'", p.lock);
        return reply(conn, MHD_HTTP_BAD_REQUEST, json_pack("{s:s,s:s,s:o}",
                     "result", "bad_request", "error", why, "valid", lock_names()));
    }
    if (!param_int(conn, "reentry", p.reentry, 1, LOCK_MAX_DEPTH, 1, &reentry, &ret) ||
        !param_int(conn, "hold_ms", p.hold_ms, 0, 600000, 0, &hold_ms, &ret) ||
        !param_int(conn, "crash", p.crash, 0, 1, 0, &crash, &ret) ||
        !param_int(conn, "wait_ms", p.wait_ms, 0, 600000, cfg->lock_wait_ms, &wait_ms, &ret))
        return ret;
    if ((hold_ms || crash) && !cfg->allow_faults)
        return reply_bad(conn, MHD_HTTP_BAD_REQUEST,
                         "hold_ms and crash need a server started with --allow-faults");

    ctx = borrow((int)wait_ms);
    if (ctx == NULL)
        return no_slot(conn);
    ctx->hold_ms = (int)hold_ms;
    ctx->crash = (int)crash;
    rc = stock_find(ctx, p.product ? p.product : "1001", &prod);
    if (rc == LL_OK || rc == LL_SOLD_OUT)
        rc = stock_sell(ctx, ops, &prod, (int)reentry, &remaining);
    release_failed = rc == LL_OK && ctx->err != 0;

    if (rc == LL_OK || rc == LL_SOLD_OUT) {
        body = json_pack("{s:s,s:s,s:I}", "result", ll_status_name(rc),
                         "product", prod.code, "retries", (json_int_t)ctx->retries);
        if (rc == LL_OK && remaining >= 0)
            json_object_set_new(body, "remaining", json_integer(remaining));
        if (release_failed)
            json_object_set_new(body, "warning", json_string(ctx->errstr));
    } else {
        body = failure_json(rc, ctx);
    }
    json_object_set_new(body, "lock", json_string(ops->name));
    if (status_code(rc) == MHD_HTTP_INTERNAL_SERVER_ERROR)
        log_failure(ops->name, ctx->errstr);
    stats_record(lock_index(ops), rc, now_us() - t0, ctx, release_failed);
    pool_put(ctx);
    return reply(conn, status_code(rc), body);
}

/* Every purchase is counted in flight from its first byte to its answer. */
static enum MHD_Result route_sale(struct MHD_Connection *conn)
{
    enum MHD_Result ret;

    stats_begin();
    ret = sale(conn);
    stats_end();
    return ret;
}

static enum MHD_Result route_stock(struct MHD_Connection *conn, int reset)
{
    const struct lock_ops *const *all;
    struct lock_ctx *ctx;
    struct product prod;
    enum MHD_Result ret;
    struct params p;
    long long count = 0;
    json_t *cleared;
    int rc, i, n;

    if (!params_read(conn, &p, &ret))
        return ret;
    if (reset) {
        if (p.count == NULL)
            return reply_bad(conn, MHD_HTTP_BAD_REQUEST, "count is required");
        if (!param_int(conn, "count", p.count, 0, 1000000000, 0, &count, &ret))
            return ret;
    }
    ctx = borrow(cfg->lock_wait_ms);
    if (ctx == NULL)
        return no_slot(conn);
    rc = stock_find(ctx, p.product ? p.product : "1001", &prod);
    if (rc == LL_OK)
        rc = reset ? stock_set(ctx, &prod, count) : stock_read(ctx, &prod, &count);
    if (rc != LL_OK) {
        json_t *body = failure_json(rc, ctx);
        pool_put(ctx);
        return reply(conn, status_code(rc), body);
    }
    if (!reset) {
        pool_put(ctx);
        return reply(conn, MHD_HTTP_OK, json_pack("{s:s,s:s,s:I}", "product", prod.code,
                     "warehouse", STOCK_WAREHOUSE, "count", (json_int_t)count));
    }
    /* Clear what every strategy may have left behind for this product. */
    cleared = json_object();
    all = lock_all(&n);
    for (i = 0; i < n; i++) {
        if (!lock_resets(all[i]))
            continue;
        ctx->ops = all[i];
        ctx->err = 0;
        rc = lock_reset(ctx, prod.key);
        json_object_set_new(cleared, all[i]->name,
                            json_string(rc == LL_OK ? "ok" : ctx->errstr));
    }
    pool_put(ctx);
    stats_reset();
    return reply(conn, MHD_HTTP_OK, json_pack("{s:s,s:s,s:I,s:o}", "result", "reset",
                 "product", prod.code, "count", (json_int_t)count, "cleared", cleared));
}

static enum MHD_Result route_locks(struct MHD_Connection *conn)
{
    const struct lock_ops *const *all;
    json_t *list = json_array();
    int i, n;

    all = lock_all(&n);
    for (i = 0; i < n; i++) {
        const struct lock_ops *o = all[i];
        json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:s?,s:s,s:b,s:b,s:b,s:b,s:b}",
            "name", o->name, "family", o->family, "summary", o->summary, "flaw", o->flaw,
            "ceiling", o->ceiling,
            "distributed", !!(o->props & LOCK_DISTRIBUTED),
            "reentrant", !!(o->props & LOCK_REENTRANT),
            "auto_release", !!(o->props & LOCK_AUTO_RELEASE),
            "fair", !!(o->props & LOCK_FAIR),
            "exact", !!(o->props & LOCK_EXACT)));
    }
    return reply(conn, MHD_HTTP_OK, json_pack("{s:s,s:o}", "default", cfg->lock,
                                              "strategies", list));
}

static enum MHD_Result route_stats(struct MHD_Connection *conn, int reset)
{
    json_t *body;

    if (reset) {
        stats_reset();
        return reply(conn, MHD_HTTP_OK, json_pack("{s:s}", "result", "reset"));
    }
    body = stats_json();
    json_object_set_new(body, "id", json_string(cfg->instance_id));
    json_object_set_new(body, "slots", json_integer(cfg->threads));
    json_object_set_new(body, "uptime_s", json_real((double)(now_ms() - started_ms) / 1000.0));
    return reply(conn, MHD_HTTP_OK, body);
}

static enum MHD_Result route_health(struct MHD_Connection *conn)
{
    return reply(conn, MHD_HTTP_OK, json_pack("{s:s,s:s,s:s}", "status", "ok",
                 "id", cfg->instance_id, "default_lock", cfg->lock));
}

struct route {
    const char *method, *path;
    int         arg;
    enum MHD_Result (*fn)(struct MHD_Connection *conn, int arg);
};

static enum MHD_Result r_sale(struct MHD_Connection *c, int a)   { (void)a; return route_sale(c); }
static enum MHD_Result r_locks(struct MHD_Connection *c, int a)  { (void)a; return route_locks(c); }
static enum MHD_Result r_health(struct MHD_Connection *c, int a) { (void)a; return route_health(c); }

static const struct route routes[] = {
    { "GET",  "/check/lock",  0, r_sale },
    { "GET",  "/stock",       0, route_stock },
    { "POST", "/stock/reset", 1, route_stock },
    { "GET",  "/locks",       0, r_locks },
    { "GET",  "/stats",       0, route_stats },
    { "POST", "/stats/reset", 1, route_stats },
    { "GET",  "/health",      0, r_health },
};

/* ---------------------------------------------------------------- dispatch */

static enum MHD_Result dispatch(struct MHD_Connection *conn, const char *url, const char *method)
{
    size_t i;
    int path_known = 0;

    for (i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path) != 0)
            continue;
        path_known = 1;
        if (strcmp(method, routes[i].method) == 0 ||
            (!strcmp(method, "HEAD") && !strcmp(routes[i].method, "GET")))
            return routes[i].fn(conn, routes[i].arg);
    }
    if (path_known)
        return reply_bad(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed here");
    return reply(conn, MHD_HTTP_NOT_FOUND, json_pack("{s:s,s:s,s:s}", "result", "not_found",
                 "error", "no such path", "paths",
                 "GET /check/lock, GET /stock, POST /stock/reset, GET /locks, GET /stats, "
                 "POST /stats/reset, GET /health"));
}

/* libmicrohttpd calls this first when the headers are in, then once per
 * piece of body, then once more with no data: answer on the last call.
 * Answering on the first call would make libmicrohttpd close the connection
 * after the answer (it cannot know the request is complete), which defeats
 * nginx's upstream keep-alive. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    static int seen_headers;

    (void)cls, (void)version, (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &seen_headers;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {       /* a body nobody asked for: drop it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    return dispatch(conn, url, method);
}

/* One thread-per-connection daemon, listening where `where` says. */
static struct MHD_Daemon *serve(const struct config *c, struct MHD_OptionItem where)
{
    struct MHD_OptionItem opts[] = { where, { MHD_OPTION_END, 0, NULL } };

    return MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
        MHD_USE_POLL | MHD_USE_ERROR_LOG,
        (uint16_t)c->port, NULL, NULL, on_request, NULL,
        MHD_OPTION_ARRAY, opts,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)c->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
        MHD_OPTION_END);
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
    if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof un) != 0 || listen(fd, 1024) != 0) {
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
    daemon_ = serve(c, (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &addr });
    if (daemon_ == NULL) {
        fprintf(stderr, "locklab: cannot listen on %s:%d (in use?)\n", c->listen, c->port);
        return -1;
    }
    if (c->unix_path == NULL)
        return 0;
    if ((fd = unix_listen(c->unix_path)) < 0) {
        http_stop();
        return -1;
    }
    unix_daemon = serve(c, (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, fd, NULL });
    if (unix_daemon == NULL) {
        fprintf(stderr, "locklab: cannot serve on %s\n", c->unix_path);
        unlink(c->unix_path);           /* the fd: MHD may have closed it */
        http_stop();
        return -1;
    }
    return 0;
}

void http_stop(void)
{
    if (unix_daemon) {
        MHD_stop_daemon(unix_daemon);       /* closes the socket */
        unlink(cfg->unix_path);
    }
    if (daemon_)
        MHD_stop_daemon(daemon_);
    daemon_ = unix_daemon = NULL;
}
