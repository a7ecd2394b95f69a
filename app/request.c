/* request.c — routes, parameters, the admin token and the text of error
 * answers, with no HTTP library in sight (see request.h for the rules).
 *
 * Everything a request carries is untrusted bytes. Three habits keep that
 * harmless. A string never holds a NUL it did not end with: request_
 * unescape() turns "%00" into C0 80, which no check lets through. Every
 * name and value is valid UTF-8 before anything compares or parses it, and
 * anything of the request that is echoed goes through text_safe() first,
 * so an answer can always be written as JSON. And the first problem found
 * is the answer: one status, one sentence, the parameter it is about.
 */
#include "request.h"
#include "orders.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../locks/lock.h"
#include "../store/stock.h"
#include "../sync/sync.h"

#include <limits.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- text */

/* The length of the valid UTF-8 character at s (n bytes there), or 0. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp;
    size_t len, i;

    if (c < 0x80)
        return c != 0;
    if (c < 0xc2)                   /* a continuation byte, or C0/C1 overlong */
        return 0;
    if (c < 0xe0)
        len = 2, cp = c & 0x1f;
    else if (c < 0xf0)
        len = 3, cp = c & 0x0f;
    else if (c < 0xf5)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

int text_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0, n;

    while (at < len) {
        if ((n = utf8_char(p + at, len - at)) == 0)
            return 0;
        at += n;
    }
    return 1;
}

char *text_safe(char *dst, size_t size, const char *src, size_t len)
{
    static const char bad[] = "\xef\xbf\xbd", more[] = "\xe2\x80\xa6";  /* U+FFFD, … */
    const unsigned char *p = (const unsigned char *)src;
    size_t at = 0, out = 0;

    if (size == 0)
        return dst;
    while (at < len) {
        size_t n = utf8_char(p + at, len - at);
        const char *piece = (const char *)p + at;
        size_t take = n;

        if (n == 0 || (n == 1 && (p[at] < 0x20 || p[at] == 0x7f))) {
            piece = bad;
            take = 3;
            n = 1;
        }
        /* Room for this piece, and for "…" and the NUL should more follow. */
        if (out + take + (at + n < len ? sizeof more : 1) > size) {
            if (out + sizeof more <= size) {
                memcpy(dst + out, more, sizeof more - 1);
                out += sizeof more - 1;
            }
            break;
        }
        memcpy(dst + out, piece, take);
        out += take;
        at += n;
    }
    dst[out] = '\0';
    return dst;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t request_unescape(char *s)
{
    char *r = s, *w = s;

    while (*r) {
        int hi = r[0] == '%' ? hex_digit(r[1]) : -1;
        int lo = hi >= 0 ? hex_digit(r[2]) : -1;

        if (lo < 0) {               /* not an escape: the byte as it is */
            *w++ = *r++;
        } else if (hi == 0 && lo == 0) {
            *w++ = (char)0xc0;      /* NUL's overlong form, see request.h */
            *w++ = (char)0x80;
            r += 3;
        } else {
            *w++ = (char)(hi << 4 | lo);
            r += 3;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* ---------------------------------------------------------------- tables */

static const char *const param_names[P_MAX] = {
    [P_LOCK] = "lock", [P_PRODUCT] = "product", [P_COUNT] = "count",
    [P_REENTRY] = "reentry", [P_WAIT_MS] = "wait_ms", [P_FENCE] = "fence",
    [P_HOLD_MS] = "hold_ms", [P_LATE_MS] = "late_ms",
    [P_CRASH] = "crash", [P_LOSE_ANSWER] = "lose_answer",
    [P_ORDER_NO] = "order_no", [P_QTY] = "qty", [P_USER] = "user",
    [P_ONE_PER_USER] = "one_per_user", [P_CONSUMER_CRASH] = "consumer_crash",
    [P_NAME] = "name", [P_NAMES] = "names", [P_BACKEND] = "backend",
    [P_LEASE_MS] = "lease_ms", [P_UNLOCK] = "unlock", [P_PERMITS] = "permits",
    [P_MEMBERS] = "members", [P_MEMBER] = "member",
    [P_PERMIT] = "permit", [P_DELTA] = "delta", [P_VERSION] = "version",
    [P_VALUE] = "value", [P_RELEASE_PAUSE_MS] = "release_pause_ms",
    [P_ALLOW_DEADLOCK] = "allow_deadlock", [P_CLOCK_SKEW_MS] = "clock_skew_ms",
    [P_READ] = "read",
    [P_BUCKETS] = "buckets", [P_CHECK_PAUSE_MS] = "check_pause_ms",
    [P_LOSE_LOCK] = "lose_lock", [P_LOSE_CLAIM] = "lose_claim",
    [P_READ_PAUSE_MS] = "read_pause_ms",
};

_Static_assert(P_MAX <= 64, "struct route's params is a 64-bit mask");

#define BIT(p)  (1ull << (p))
#define FAULTS  (BIT(P_HOLD_MS) | BIT(P_LATE_MS) | BIT(P_CRASH) | BIT(P_LOSE_ANSWER) | \
                 BIT(P_CONSUMER_CRASH) | BIT(P_RELEASE_PAUSE_MS) | BIT(P_ALLOW_DEADLOCK) | \
                 BIT(P_CLOCK_SKEW_MS) | BIT(P_CHECK_PAUSE_MS) | \
                 BIT(P_LOSE_LOCK))
#define SWITCHES (FAULTS | BIT(P_LOSE_CLAIM) | BIT(P_READ_PAUSE_MS))    /* --allow-faults */

static const struct route routes[] = {
    { ROUTE_SALE,        "GET",  "/check/lock",  0,
      BIT(P_LOCK) | BIT(P_PRODUCT) | BIT(P_REENTRY) | BIT(P_WAIT_MS) | BIT(P_FENCE) | FAULTS |
      BIT(P_READ) },
    { ROUTE_STOCK,       "GET",  "/stock",       0, BIT(P_PRODUCT) | BIT(P_READ_PAUSE_MS) },
    { ROUTE_STOCK_RESET, "POST", "/stock/reset", 1,
      BIT(P_COUNT) | BIT(P_PRODUCT) | BIT(P_BUCKETS) },
    { ROUTE_LOCKS,       "GET",  "/locks",       0, 0 },
    { ROUTE_STATS,       "GET",  "/stats",       0, 0 },
    { ROUTE_STATS_RESET, "POST", "/stats/reset", 1, 0 },
    { ROUTE_HEALTH,      "GET",  "/health",      0, 0 },
    { ROUTE_ORDER,       "POST", "/order",       0,
      BIT(P_ORDER_NO) | BIT(P_LOCK) | BIT(P_PRODUCT) | BIT(P_QTY) | BIT(P_USER) |
      BIT(P_ONE_PER_USER) | BIT(P_WAIT_MS) | FAULTS | BIT(P_LOSE_CLAIM) },
    { ROUTE_SYNC_LIST,   "GET",  "/sync",        0, 0 },
    { ROUTE_SYNC_RESET,  "POST", "/sync/reset",  1, BIT(P_NAME) },
    { ROUTE_TEST_READ,   "GET",  "/test/read",   0,
      BIT(P_WAIT_MS) | BIT(P_HOLD_MS) | BIT(P_LEASE_MS) | BIT(P_UNLOCK) },
    { ROUTE_TEST_WRITE,  "GET",  "/test/write",  0,
      BIT(P_WAIT_MS) | BIT(P_HOLD_MS) | BIT(P_LEASE_MS) | BIT(P_UNLOCK) },
    { ROUTE_TEST_SEMAPHORE, "GET", "/test/semaphore", 0, BIT(P_WAIT_MS) | BIT(P_HOLD_MS) },
    { ROUTE_TEST_LATCH,  "GET",  "/test/latch",  0, BIT(P_WAIT_MS) },
    { ROUTE_TEST_COUNTDOWN, "GET", "/test/countdown", 0, 0 },
    { ROUTE_METRICS,     "GET",  "/metrics",     0, 0 },
    /* Prefix routes come last: an exact path above wins over them. */
    { ROUTE_SYNC,        "GET",  "/sync/",       0,
      BIT(P_NAME) | BIT(P_NAMES) | BIT(P_BACKEND) | BIT(P_WAIT_MS) | BIT(P_HOLD_MS) |
      BIT(P_LEASE_MS) | BIT(P_UNLOCK) | BIT(P_PERMITS) | BIT(P_QTY) | BIT(P_COUNT) |
      BIT(P_MEMBERS) | BIT(P_MEMBER) | BIT(P_PERMIT) | BIT(P_DELTA) | BIT(P_VERSION) |
      BIT(P_VALUE) },
};

#define NROUTES (sizeof routes / sizeof routes[0])

static int route_prefix(const struct route *rt)
{
    return rt->path[strlen(rt->path) - 1] == '/';
}

/* ---------------------------------------------------------------- failures */

static int vfail(struct request *r, int status, const char *result, enum param_id param,
                 const char *fmt, va_list ap)
{
    if (r->status)
        return r->status;           /* the first problem is the answer */
    r->status = status;
    r->result = result;
    if (param < P_MAX)
        snprintf(r->parameter, sizeof r->parameter, "%s", param_names[param]);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    return status;
}

int request_fail(struct request *r, int status, const char *result, enum param_id param,
                 const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vfail(r, status, result, param, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---------------------------------------------------------------- routes */

int request_token_ok(const char *authorization, const char *token)
{
    static const char scheme[] = "Bearer ";
    const char *given;
    size_t n, m, i;
    unsigned char diff;

    if (token == NULL)
        return 1;
    if (authorization == NULL || strncasecmp(authorization, scheme, sizeof scheme - 1) != 0)
        return 0;
    given = authorization + sizeof scheme - 1;
    n = strlen(token);
    m = strlen(given);
    diff = n != m;
    for (i = 0; i < n; i++)
        diff |= (unsigned char)(token[i] ^ (i < m ? given[i] : 0));
    return diff == 0;
}

int request_begin(struct request *r, const char *method, const char *path,
                  const char *authorization, const char *token)
{
    char shown[24];
    size_t i;

    memset(r, 0, sizeof *r);
    for (i = 0; i < NROUTES; i++)       /* an exact path first */
        if (!route_prefix(&routes[i]) && strcmp(path, routes[i].path) == 0)
            break;
    if (i == NROUTES)
        for (i = 0; i < NROUTES; i++)
            if (route_prefix(&routes[i]) &&
                strncmp(path, routes[i].path, strlen(routes[i].path)) == 0)
                break;
    if (i == NROUTES)
        return request_fail(r, 404, "not_found", P_MAX, "no such path; the paths are "
                            "GET /check/lock, GET /stock, POST /stock/reset, GET /locks, "
                            "GET /stats, POST /stats/reset, GET /health, POST /order, "
                            "GET /sync, GET /sync/<primitive>/<operation>, POST /sync/reset, "
                            "GET /test/read, /test/write, /test/semaphore, /test/latch, "
                            "/test/countdown");
    r->route = &routes[i];
    if (route_prefix(r->route))
        r->rest = path + strlen(r->route->path);
    if (strcmp(method, r->route->method) != 0) {
        r->allow = r->route->method;
        return request_fail(r, 405, "method_not_allowed", P_MAX, "%s %s: only %s",
                            text_safe(shown, sizeof shown, method, strlen(method)),
                            r->route->path, r->route->method);
    }
    if (r->route->admin && !request_token_ok(authorization, token))
        return request_fail(r, 401, "unauthorized", P_MAX, "%s %s needs the header "
                            "'Authorization: Bearer <admin token>' (--admin-token)",
                            r->route->method, r->route->path);
    return 0;
}

/* ---------------------------------------------------------------- parameters */

/* The index of the parameter called name[0..len), or P_MAX. */
static enum param_id param_find(const char *name, size_t len)
{
    int i;

    for (i = 0; i < P_MAX; i++)
        if (strlen(param_names[i]) == len && memcmp(param_names[i], name, len) == 0)
            return (enum param_id)i;
    return P_MAX;
}

/* Does s[0..len) hold request_unescape()'s stand-in for a NUL byte? */
static int holds_nul(const char *s, size_t len)
{
    return memmem(s, len, "\xc0\x80", 2) != NULL || memchr(s, '\0', len) != NULL;
}

void request_param(struct request *r, const char *name, size_t name_len,
                   const char *value, size_t value_len)
{
    char shown[40];
    enum param_id id;

    r->query_bytes += name_len + (value ? value_len : 0) + 2;
    if (r->status)
        return;
    text_safe(shown, sizeof shown, name, name_len);
    if (!text_utf8_valid(name, name_len))
        request_fail(r, 400, "bad_request", P_MAX, "a parameter name is not valid UTF-8%s: '%s'",
                     holds_nul(name, name_len) ? " (it holds a NUL byte)" : "", shown);
    else if ((id = param_find(name, name_len)) == P_MAX)
        request_fail(r, 400, "bad_request", P_MAX, "unknown parameter '%s'", shown);
    else if (!(r->route->params & BIT(id)))
        request_fail(r, 400, "bad_request", id, "parameter '%s' does not apply to %s %s",
                     shown, r->route->method, r->route->path);
    else if (r->param[id] != NULL)
        request_fail(r, 400, "bad_request", id, "parameter '%s' given twice", shown);
    else if (value == NULL || value_len == 0)
        request_fail(r, 400, "bad_request", id, "parameter '%s' needs a value", shown);
    else if (holds_nul(value, value_len))
        request_fail(r, 400, "bad_request", id, "parameter '%s' holds a NUL byte (%%00)", shown);
    else if (!text_utf8_valid(value, value_len))
        request_fail(r, 400, "bad_request", id, "parameter '%s' is not valid UTF-8", shown);
    else
        r->param[id] = value;
}

int request_params_done(struct request *r)
{
    if (r->query_bytes > REQUEST_MAX_QUERY) {
        r->status = 0;              /* the size is the answer, whatever else */
        r->parameter[0] = '\0';
        return request_fail(r, 414, "bad_request", P_MAX,
                            "query string too long (at most %d bytes of names and values)",
                            REQUEST_MAX_QUERY);
    }
    return r->status;
}

int request_int(struct request *r, enum param_id id, long long min, long long max,
                long long def, long long *out)
{
    const char *v = r->param[id];

    *out = def;
    if (v == NULL || parse_int(v, min, max, out) == 0)
        return 0;
    return request_fail(r, 400, "bad_request", id, "%s must be a whole number from %lld to "
                        "%lld%s", param_names[id], min, max,
                        id == P_WAIT_MS || id == P_HOLD_MS || id == P_LATE_MS ?
                        " (--max-wait-ms)" : "");
}

int request_product(struct request *r, const char **code)
{
    *code = r->param[P_PRODUCT] ? r->param[P_PRODUCT] : STOCK_DEFAULT;
    if (stock_code_valid(*code))
        return 0;
    return request_fail(r, 400, "bad_request", P_PRODUCT,
                        "product must be 1 to %d characters of [A-Za-z0-9_-]", STOCK_CODE_MAX);
}

/* ---------------------------------------------------------------- a purchase */

/* read=primary|replica: where the guarded sale (app/sale.c) reads the
 * count. A replica read is read/write splitting (seed 000 §1.6.3, mycat):
 * the count may be behind the primary's, and the write built on it loses
 * updates under any lock. Only the guarded sale reads apart from its
 * write; a strategy with its own sale (mysql-update, for-update, the
 * optimistic lock, the Redis stock...) reads as its lock or its check, on
 * the primary, so it is refused rather than silently left on the primary. */
static int request_read(struct request *r, const struct config *cfg, struct sale_args *out)
{
    const char *v = r->param[P_READ];

    if (v == NULL || strcmp(v, "primary") == 0)
        return 0;
    if (strcmp(v, "replica") != 0)
        return request_fail(r, 400, "bad_request", P_READ, "read must be primary or replica");
    if (lock_sells(out->ops))
        return request_fail(r, 400, "bad_request", P_READ, "%s has a sale of its own, whose "
                            "read is its lock or its check (on the primary), or not "
                            "MariaDB's: it never reads a replica", out->ops->name);
    if (cfg->mysql_replica == NULL)
        return request_fail(r, 400, "bad_request", P_READ, "this server has no read replica "
                            "(--mysql-replica; bench/stack up --read-replica)");
    out->read_replica = 1;
    return 0;
}

/* A fault switch given to a server started without --allow-faults: 400. */
static int switches_allowed(struct request *r, const struct config *cfg)
{
    int i;

    for (i = 0; i < P_MAX; i++)
        if ((SWITCHES & BIT(i)) && r->param[i] && !cfg->allow_faults)
            return request_fail(r, 400, "bad_request", (enum param_id)i,
                                "%s is a fault switch, and this server was started "
                                "without --allow-faults", param_names[i]);
    return 0;
}

int request_sale(struct request *r, const struct config *cfg, struct sale_args *out)
{
    const char *name = r->param[P_LOCK] ? r->param[P_LOCK] : cfg->lock;
    long long reentry, wait_ms, hold_ms, late_ms, crash, lose, fence, consumer_crash;
    long long release_pause_ms, allow_deadlock, clock_skew_ms, check_pause_ms, lose_lock;
    char shown[48];

    memset(out, 0, sizeof *out);
    if (switches_allowed(r, cfg) != 0)
        return r->status;
    if ((out->ops = lock_find(name)) == NULL) {
        r->list_strategies = 1;
        return request_fail(r, 400, "bad_request", P_LOCK, "unknown strategy '%s'",
                            text_safe(shown, sizeof shown, name, strlen(name)));
    }
    if (request_product(r, &out->product) ||
        request_int(r, P_REENTRY, 1, LOCK_MAX_DEPTH, 1, &reentry) ||
        request_int(r, P_WAIT_MS, 0, cfg->max_wait_ms, cfg->lock_wait_ms, &wait_ms) ||
        request_int(r, P_HOLD_MS, 0, cfg->max_wait_ms, 0, &hold_ms) ||
        request_int(r, P_LATE_MS, 0, cfg->max_wait_ms, 0, &late_ms) ||
        request_int(r, P_CRASH, 0, 1, 0, &crash) ||
        request_int(r, P_LOSE_ANSWER, 0, 2, 0, &lose) ||
        request_int(r, P_FENCE, 0, 1, 0, &fence) ||
        request_int(r, P_CONSUMER_CRASH, 0, 1, 0, &consumer_crash) ||
        request_int(r, P_RELEASE_PAUSE_MS, 0, cfg->max_wait_ms, 0, &release_pause_ms) ||
        request_int(r, P_ALLOW_DEADLOCK, 0, 1, 0, &allow_deadlock) ||
        request_int(r, P_CLOCK_SKEW_MS, 0, cfg->max_wait_ms, 0, &clock_skew_ms) ||
        request_int(r, P_CHECK_PAUSE_MS, 0, cfg->max_wait_ms, 0, &check_pause_ms) ||
        request_int(r, P_LOSE_LOCK, 0, 1, 0, &lose_lock))
        return r->status;
    if (fence && out->ops->fence == NULL)
        return request_fail(r, 400, "bad_request", P_FENCE, "%s cannot issue a fencing "
                            "token: %s", out->ops->name,
                            out->ops->nofence ? out->ops->nofence : "it has no lock service");
    if (release_pause_ms && out->ops->release_pause == NULL)
        return request_fail(r, 400, "bad_request", P_RELEASE_PAUSE_MS, "%s has no "
                            "check-then-delete release to pause inside", out->ops->name);
    if (reentry > 1 && !(out->ops->props & LOCK_REENTRANT) && !allow_deadlock)
        return request_fail(r, 400, "bad_request", P_REENTRY, "%s is not reentrant: with "
                            "reentry=%lld a purchase would wait for the lock it holds",
                            out->ops->name, reentry);
    if (request_read(r, cfg, out) != 0)
        return r->status;
    out->reentry = (int)reentry;
    out->wait_ms = (int)wait_ms;
    out->hold_ms = (int)hold_ms;
    out->late_ms = (int)late_ms;
    out->crash = (int)crash;
    out->lose_answer = (int)lose;
    out->fence = (int)fence;
    out->consumer_crash = (int)consumer_crash;
    out->release_pause_ms = (int)release_pause_ms;
    out->allow_deadlock = (int)allow_deadlock;
    out->clock_skew_ms = (int)clock_skew_ms;
    out->check_pause_ms = (int)check_pause_ms;
    out->lose_lock = (int)lose_lock;
    return 0;
}

/* ---------------------------------------------------------------- an order */

/* An order number or a user (order_name_valid()), when given. */
static int name_param(struct request *r, enum param_id id, const char **out)
{
    *out = r->param[id];
    if (*out == NULL || order_name_valid(*out))
        return 0;
    return request_fail(r, 400, "bad_request", id, "%s must be 1 to %d characters of "
                        "[A-Za-z0-9_-]", param_names[id], ORDER_NO_MAX);
}

int request_order(struct request *r, struct order_args *out)
{
    long long qty, one, lose_claim;

    memset(out, 0, sizeof *out);
    if (r->param[P_ORDER_NO] == NULL)
        return request_fail(r, 400, "bad_request", P_ORDER_NO, "order_no is required: an "
                            "order number names one purchase, whatever its attempts");
    if (name_param(r, P_ORDER_NO, &out->order_no) || name_param(r, P_USER, &out->user) ||
        request_int(r, P_QTY, 1, REQUEST_QTY_MAX, 1, &qty) ||
        request_int(r, P_ONE_PER_USER, 0, 1, 0, &one) ||
        request_int(r, P_LOSE_CLAIM, 0, 1, 0, &lose_claim))
        return r->status;
    if (one && out->user == NULL)
        return request_fail(r, 400, "bad_request", P_ONE_PER_USER,
                            "one_per_user=1 needs the user (user=)");
    out->qty = (int)qty;
    out->one_per_user = (int)one;
    out->lose_claim = (int)lose_claim;
    return 0;
}

/* ---------------------------------------------------------------- the stock */

int request_stock(struct request *r, const struct config *cfg, int *read_pause_ms)
{
    long long ms;

    *read_pause_ms = 0;
    if (switches_allowed(r, cfg) != 0 ||
        request_int(r, P_READ_PAUSE_MS, 0, cfg->max_wait_ms, 0, &ms) != 0)
        return r->status;
    *read_pause_ms = (int)ms;
    return 0;
}

/* ---------------------------------------------------------------- a synchronizer */

/* The names of the primitives, or of one primitive's operations, into buf
 * for a 404's sentence. */
static void sync_list(char *buf, size_t len, const struct sync_ops *ops)
{
    const struct sync_ops *const *all;
    const struct sync_op *o;
    size_t at = 0;
    int i, n;

    buf[0] = '\0';
    if (ops) {
        for (o = ops->ops; o->name && at < len; o++)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", o->name);
        return;
    }
    all = sync_all(&n);
    for (i = 0; i < n && at < len; i++)
        if (sync_find(all[i]->primitive, NULL) == all[i])
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
                                   all[i]->primitive);
}

/* /sync/<primitive>/<operation> and ?backend= into a->ops and a->op. */
static int sync_resolve(struct request *r, struct sync_args *a)
{
    char primitive[32], shown[48], valid[120];
    const char *slash = strchr(r->rest, '/'), *backend = r->param[P_BACKEND];
    size_t n = slash ? (size_t)(slash - r->rest) : 0;

    if (slash == NULL || n == 0 || n >= sizeof primitive)
        n = 0;
    else
        memcpy(primitive, r->rest, n);
    primitive[n] = '\0';
    if (n == 0 || sync_find(primitive, NULL) == NULL) {
        sync_list(valid, sizeof valid, NULL);
        return request_fail(r, 404, "not_found", P_MAX, "no synchronizer '%s': the paths are "
                            "/sync/<primitive>/<operation>, primitive one of %s",
                            text_safe(shown, sizeof shown, r->rest, strlen(r->rest)), valid);
    }
    if (backend && strcmp(backend, "redisson") != 0 && strcmp(backend, "curator") != 0)
        return request_fail(r, 400, "bad_request", P_BACKEND,
                            "backend must be redisson or curator");
    if ((a->ops = sync_find(primitive, backend)) == NULL)
        return request_fail(r, 400, "bad_request", P_BACKEND, "%s has no %s backend here",
                            primitive, backend);
    if ((a->op = sync_op_find(a->ops, slash + 1)) == NULL) {
        sync_list(valid, sizeof valid, a->ops);
        return request_fail(r, 404, "not_found", P_MAX, "%s (%s) has no operation '%s': "
                            "it has %s", primitive, a->ops->backend,
                            text_safe(shown, sizeof shown, slash + 1, strlen(slash + 1)), valid);
    }
    return 0;
}

/* ?names=a,b,c into a->names. */
static int sync_names(struct request *r, struct sync_args *a)
{
    const char *p = r->param[P_NAMES];
    size_t n;

    while (p && *p) {
        const char *comma = strchr(p, ',');
        n = comma ? (size_t)(comma - p) : strlen(p);
        if (a->nnames == SYNC_MAX_NAMES || n == 0 || n > SYNC_NAME_MAX)
            return request_fail(r, 400, "bad_request", P_NAMES, "names must be 1 to %d names "
                                "separated by commas", SYNC_MAX_NAMES);
        memcpy(a->names[a->nnames], p, n);
        a->names[a->nnames][n] = '\0';
        if (!sync_name_valid(a->names[a->nnames++]))
            return request_fail(r, 400, "bad_request", P_NAMES, "each name must be 1 to %d "
                                "characters of [A-Za-z0-9_.:-]", SYNC_NAME_MAX);
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int hex32(const char *s)
{
    size_t i;

    for (i = 0; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return i == 32;
}

int request_sync(struct request *r, const struct config *cfg, struct sync_args *out)
{
    static const enum sync_demo demo_of[] = {
        [ROUTE_TEST_READ] = SYNC_DEMO_READ, [ROUTE_TEST_WRITE] = SYNC_DEMO_WRITE,
        [ROUTE_TEST_SEMAPHORE] = SYNC_DEMO_SEMAPHORE, [ROUTE_TEST_LATCH] = SYNC_DEMO_LATCH,
        [ROUTE_TEST_COUNTDOWN] = SYNC_DEMO_COUNTDOWN,
    };
    long long wait_ms, hold_ms, lease_ms, unlock;
    int demo = r->route->id != ROUTE_SYNC, i;

    memset(out, 0, sizeof *out);
    if (request_int(r, P_WAIT_MS, 0, cfg->max_wait_ms,
                    demo ? cfg->max_wait_ms : cfg->lock_wait_ms, &wait_ms) ||
        request_int(r, P_HOLD_MS, 0, cfg->max_wait_ms, -1, &hold_ms) ||
        request_int(r, P_LEASE_MS, 1, 3600000, -1, &lease_ms) ||
        request_int(r, P_UNLOCK, 0, 1, 0, &unlock) ||
        request_int(r, P_PERMITS, 0, 1000000, -1, &out->permits) ||
        request_int(r, P_QTY, 1, 16, -1, &out->qty) ||
        request_int(r, P_COUNT, 0, 1000000000, -1, &out->count) ||
        request_int(r, P_MEMBERS, 1, 10000, -1, &out->members) ||
        request_int(r, P_DELTA, -1000000000000000LL, 1000000000000000LL, LLONG_MIN,
                    &out->delta) ||
        request_int(r, P_VALUE, -1000000000000000LL, 1000000000000000LL, LLONG_MIN,
                    &out->value) ||
        request_int(r, P_VERSION, 0, INT32_MAX, -1, &out->version))
        return r->status;
    out->wait_ms = (int)wait_ms;
    out->hold_ms = (int)hold_ms;
    out->lease_ms = (int)lease_ms;
    out->unlock = (int)unlock;
    if (demo) {
        sync_demo_args(demo_of[r->route->id], out);
        return out->op ? 0 : request_fail(r, 404, "not_found", P_MAX, "this build has no "
                                          "Redisson synchronizer for %s", r->route->path);
    }
    if (sync_resolve(r, out))
        return r->status;
    for (i = 0; i < P_MAX; i++)
        if (r->param[i] && i != P_NAME && i != P_BACKEND && i != P_WAIT_MS &&
            !sync_op_takes(out->op, param_names[i]))
            return request_fail(r, 400, "bad_request", (enum param_id)i, "parameter '%s' does "
                                "not apply to %s/%s (%s); it takes: name, backend, wait_ms%s%s",
                                param_names[i], out->ops->primitive, out->op->name,
                                out->ops->backend, out->op->params[0] ? ", " : "",
                                out->op->params);
    if (sync_names(r, out))
        return r->status;
    if (out->nnames == 0 && r->param[P_NAME] == NULL)
        return request_fail(r, 400, "bad_request", P_NAME, "name is required");
    if (r->param[P_NAME] && !sync_name_valid(out->name = r->param[P_NAME]))
        return request_fail(r, 400, "bad_request", P_NAME, "name must be 1 to %d characters "
                            "of [A-Za-z0-9_.:-], not . or ..", SYNC_NAME_MAX);
    if ((out->member = r->param[P_MEMBER]) != NULL &&
        (!sync_name_valid(out->member) || strcmp(out->member, "ready") == 0))
        return request_fail(r, 400, "bad_request", P_MEMBER, "member must be a name of "
                            "[A-Za-z0-9_.:-], at most 36 characters, and not 'ready'");
    if (out->member && strlen(out->member) > 36)
        return request_fail(r, 400, "bad_request", P_MEMBER, "member is at most 36 characters");
    if ((out->permit = r->param[P_PERMIT]) != NULL && !hex32(out->permit))
        return request_fail(r, 400, "bad_request", P_PERMIT, "permit must be the 32 hex digits "
                            "acquire answered");
    return 0;
}

int request_sync_name(struct request *r, const char **name)
{
    *name = r->param[P_NAME];
    if (*name == NULL)
        return request_fail(r, 400, "bad_request", P_NAME, "name is required");
    if (!sync_name_valid(*name))
        return request_fail(r, 400, "bad_request", P_NAME, "name must be 1 to %d characters "
                            "of [A-Za-z0-9_.:-], not . or ..", SYNC_NAME_MAX);
    return 0;
}

/* ---------------------------------------------------------------- answers */

json_t *request_error_json(const struct request *r)
{
    json_t *o = json_pack("{s:s,s:s}", "result", r->result ? r->result : "bad_request",
                          "error", r->error);

    if (o == NULL)                  /* only if out of memory */
        return json_pack("{s:s}", "result", "error");
    if (r->parameter[0])
        json_object_set_new(o, "parameter", json_string(r->parameter));
    if (r->list_strategies) {
        const struct lock_ops *const *all;
        json_t *names = json_array();
        int i, n;

        all = lock_all(&n);
        for (i = 0; i < n; i++)
            json_array_append_new(names, json_string(all[i]->name));
        json_object_set_new(o, "valid", names);
    }
    return o;
}
