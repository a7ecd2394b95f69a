/* zk_client.c — the process's one ZooKeeper session, shared by every
 * worker slot, and what the ZooKeeper strategies share around it.
 *
 * Session. The seeds open one ZooKeeper client at start-up and share it
 * (000 §4.3 ZkClient, "获取链接是一个耗时过程"); so do we, lazily: the first
 * request that needs ZooKeeper calls zookeeper_init() with --zk (every
 * server of the ensemble; the client picks one and fails over) under a
 * mutex, and waits for the CONNECTED event. The libzookeeper_mt handle is
 * thread-safe, so worker threads call the synchronous API (zoo_create …)
 * on it directly. The session timeout is derived from --lease-ms (a fifth
 * of it, 4..30 s; 6 s by default): that is how long a crashed holder keeps
 * its lock. The server clamps it to [2, 20] tickTime.
 *
 * Generations. Every zhandle is a struct zk_conn with a generation number.
 * When the session expires (the EXPIRED event), the next zk_connect()
 * retires it and opens a new handle — a new session, new generation. A
 * hold remembers the conn that created its node, so a lock taken in a dead
 * session is never taken for ours: its conn is marked expired, and
 * zk_check() also compares the node's ephemeralOwner with the live
 * session id. Retired handles are closed by whoever drops the last
 * reference (never in the watcher: zookeeper_close() joins the thread the
 * watcher runs on).
 *
 * Wake-ups. The watcher does nothing but signal. A thread that waits for
 * a node registers a struct zk_waiter {path, condition variable} before
 * it sets the watch; a node event wakes exactly the waiters of that path,
 * a session event wakes every waiter of that session so it can notice an
 * expiry. No waiting thread ever polls.
 *
 * Outages. A call that fails with a connection loss waits for the same
 * session to come back (zk_await) and then retries or re-checks; the
 * client library re-registers watches on reconnection. Once ZooKeeper has
 * been unreachable for a whole session timeout, requests stop waiting for
 * it and answer 503 unavailable at once, while the library keeps trying in
 * the background.
 */
#include "zk_private.h"
#include "../core/config.h"
#include "../core/util.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct zk_conn {
    zhandle_t *zh;
    uint64_t   gen;
    int        refs;
    int        connected;   /* last session event was CONNECTED        */
    int        expired;     /* EXPIRED or AUTH_FAILED: never again      */
    int64_t    session;     /* session id, known once connected        */
    int64_t    down_since;  /* when it lost (or had not yet) a connection */
};

struct zk_waiter {
    const struct zk_conn *conn;
    const char           *path;
    int                   fired;
    pthread_cond_t        cond;
    struct zk_waiter     *next;
};

/* A delete that failed over a connection loss, retried by the next
 * zk_connect() while the session is still the one that created the node. */
struct zk_pending {
    uint64_t           gen;
    char               path[ZK_PATH_MAX];
    char               token[ZK_TOKEN_MAX];    /* "" when the name is ours alone */
    int                prefix;  /* path is a parent: delete its children named token* */
    struct zk_pending *next;
};

struct zk_slot {
    struct zk_hold holds[4];
    unsigned       counter;
};

static pthread_mutex_t zk_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t zk_once = PTHREAD_ONCE_INIT;
static pthread_condattr_t zk_condattr;
static pthread_cond_t zk_state;         /* any session event */
static struct zk_conn *zk_cur;
static uint64_t zk_gens;
static struct zk_waiter *zk_waiters;
static struct zk_pending *zk_pending;
static int zk_slots_live;
static char zk_backend_name[300] = "zookeeper";

/* ---------------------------------------------------------------- helpers */

static void zk_init_once(void)
{
    pthread_condattr_init(&zk_condattr);
    pthread_condattr_setclock(&zk_condattr, CLOCK_MONOTONIC);
    pthread_cond_init(&zk_state, &zk_condattr);
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
}

/* pthread_cond_timedwait on zk_mu until a monotonic millisecond time. */
static int wait_until(pthread_cond_t *cv, int64_t until_ms)
{
    struct timespec ts;

    if (until_ms < 0)
        until_ms = 0;
    ts.tv_sec = until_ms / 1000;
    ts.tv_nsec = (long)(until_ms % 1000) * 1000000;
    return pthread_cond_timedwait(cv, &zk_mu, &ts);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

int zk_session_ms(const struct lock_ctx *ctx)
{
    int ms = ctx->cfg->lease_ms / 5;
    return ms < 4000 ? 4000 : ms > 30000 ? 30000 : ms;
}

const char *zk_backend(void)
{
    return zk_backend_name;
}

int zk_retryable(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT;
}

int zk_fail(struct lock_ctx *ctx, int zrc, const char *what, const char *path)
{
    int lost = zk_retryable(zrc) || zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE ||
               zrc == ZCLOSING || zrc == ZSESSIONMOVED;

    return lock_error(ctx, lost ? LL_UNAVAILABLE : LL_ERROR, zk_backend_name,
                      "%s %s: %s", what, path, zerror(zrc));
}

/* ---------------------------------------------------------------- watcher */

/* Runs on the client library's completion thread: record, signal, return. */
static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *data)
{
    struct zk_conn *c = data;
    struct zk_waiter *w;

    pthread_mutex_lock(&zk_mu);
    if (type == ZOO_SESSION_EVENT) {
        if (state == ZOO_CONNECTED_STATE) {
            c->connected = 1;
            c->session = zoo_client_id(zh)->client_id;
        } else {
            if (c->connected)
                c->down_since = now_ms();
            c->connected = 0;
            if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
                c->expired = 1;
        }
        pthread_cond_broadcast(&zk_state);
        for (w = zk_waiters; w; w = w->next)
            if (w->conn == c)
                pthread_cond_signal(&w->cond);
    } else if (path != NULL) {
        for (w = zk_waiters; w; w = w->next)
            if (w->conn == c && strcmp(w->path, path) == 0) {
                w->fired = 1;
                pthread_cond_signal(&w->cond);
            }
    }
    pthread_mutex_unlock(&zk_mu);
}

/* ---------------------------------------------------------------- session */

static void conn_close(struct zk_conn *c)
{
    zookeeper_close(c->zh);
    free(c);
}

/* With zk_mu held: open a new handle as zk_cur. */
static int conn_open(struct lock_ctx *ctx)
{
    struct zk_conn *c = xcalloc(1, sizeof *c);

    if (zk_gens == 0)
        snprintf(zk_backend_name, sizeof zk_backend_name, "zookeeper %s", ctx->cfg->zk);
    c->gen = ++zk_gens;
    c->down_since = now_ms();
    c->zh = zookeeper_init(ctx->cfg->zk, zk_watcher, zk_session_ms(ctx), NULL, c, 0);
    if (c->zh == NULL) {
        int e = errno;
        free(c);
        return lock_error(ctx, LL_UNAVAILABLE, zk_backend_name, "zookeeper_init: %s",
                          strerror(e));
    }
    /* The client otherwise resolves --zk again (getaddrinfo, a netlink
     * dump of the interfaces) every time it polls its socket, which cost
     * more CPU per sale than the locking itself. The list is fixed: only a
     * connection loss resolves it again. */
    zoo_set_servers_resolution_delay(c->zh, -1);
    zk_cur = c;
    return LL_OK;
}

/* With zk_mu held: is c usable right now? The flag follows the events; the
 * handle's own state catches a loss whose event is still on its way. */
static int conn_up(struct zk_conn *c)
{
    return c->connected && !c->expired && zoo_state(c->zh) == ZOO_CONNECTED_STATE;
}

static void drain_pending(struct lock_ctx *ctx, struct zk_conn *c);

int zk_connect(struct lock_ctx *ctx, struct zk_conn **out)
{
    struct zk_conn *stale = NULL, *c;
    int rc = LL_OK;

    pthread_once(&zk_once, zk_init_once);
    pthread_mutex_lock(&zk_mu);
    for (;;) {
        if (zk_cur && zk_cur->expired) {        /* retire the dead session */
            if (zk_cur->refs == 0 && stale == NULL)
                stale = zk_cur;
            zk_cur = NULL;
        }
        if (zk_cur == NULL && (rc = conn_open(ctx)) != LL_OK)
            break;
        c = zk_cur;
        if (conn_up(c)) {
            c->refs++;
            *out = c;
            break;
        }
        if (!c->expired && now_ms() - c->down_since > 2 * (int64_t)zk_session_ms(ctx)) {
            /* No server for two session timeouts: the servers have expired
             * the session even if this client never hears of it (an
             * ensemble restarted with fresh data refuses a client that has
             * seen a newer zxid, for ever). Start over with a new handle. */
            c->expired = 1;
            continue;
        }
        if (!c->expired) {
            int64_t limit = min64(ctx->deadline_ms, c->down_since + zk_session_ms(ctx));
            if (now_ms() >= limit) {
                rc = lock_error(ctx, LL_UNAVAILABLE, zk_backend_name,
                                "no ZooKeeper server has answered for %lld ms",
                                (long long)(now_ms() - c->down_since));
                break;
            }
            wait_until(&zk_state, min64(limit, now_ms() + 50));
        }
    }
    pthread_mutex_unlock(&zk_mu);
    if (stale)
        conn_close(stale);
    if (rc == LL_OK)
        drain_pending(ctx, *out);
    return rc;
}

void zk_put(struct zk_conn *c)
{
    int close_it;

    pthread_mutex_lock(&zk_mu);
    assert(c->refs > 0);
    c->refs--;
    close_it = c->refs == 0 && c != zk_cur;
    pthread_mutex_unlock(&zk_mu);
    if (close_it)
        conn_close(c);
}

int zk_await(struct lock_ctx *ctx, struct zk_conn *c, int64_t until_ms)
{
    int up;

    pthread_mutex_lock(&zk_mu);
    while (!(up = conn_up(c)) && !c->expired) {
        int64_t limit = min64(until_ms, c->down_since + zk_session_ms(ctx));
        if (now_ms() >= limit)
            break;
        wait_until(&zk_state, min64(limit, now_ms() + 20));
    }
    pthread_mutex_unlock(&zk_mu);
    if (up)
        return LL_OK;
    return lock_error(ctx, LL_UNAVAILABLE, zk_backend_name, "%s",
                      c->expired ? "ZooKeeper session expired" : "ZooKeeper connection lost");
}

static int conn_expired(struct zk_conn *c)
{
    int expired;

    pthread_mutex_lock(&zk_mu);
    expired = c->expired;
    pthread_mutex_unlock(&zk_mu);
    return expired;
}

int64_t zk_session_id(struct zk_conn *c)
{
    int64_t id;

    pthread_mutex_lock(&zk_mu);
    id = c->session;
    pthread_mutex_unlock(&zk_mu);
    return id;
}

/* ---------------------------------------------------------------- operations */

int zk_create(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
              int mode, char *created, int created_len)
{
    ctx->backend_ops++;
    return zoo_create(c->zh, path, data, data ? (int)strlen(data) : -1,
                      &ZOO_OPEN_ACL_UNSAFE, mode, created, created_len);
}

int zk_exists(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
              struct Stat *st)
{
    ctx->backend_ops++;
    return zoo_exists(c->zh, path, watch, st);
}

int zk_get(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
           char *buf, int *len, struct Stat *st)
{
    ctx->backend_ops++;
    return zoo_get(c->zh, path, watch, buf, len, st);
}

int zk_children(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                struct String_vector *out)
{
    memset(out, 0, sizeof *out);
    ctx->backend_ops++;
    return zoo_get_children(c->zh, path, 0, out);
}

int zk_delete(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int version)
{
    ctx->backend_ops++;
    return zoo_delete(c->zh, path, version);
}

int zk_ensure_path(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int mode)
{
    char parent[ZK_PATH_MAX];
    const char *slash = strrchr(path, '/');
    int zrc, tries;

    for (tries = 0; tries < 5; tries++) {
        zrc = zk_create(ctx, c, path, NULL, mode, NULL, 0);
        if (zrc == ZOK || zrc == ZNODEEXISTS)
            return LL_OK;
        if (zrc == ZNONODE && slash && slash != path) {
            snprintf(parent, sizeof parent, "%.*s", (int)(slash - path), path);
            if (zk_ensure_path(ctx, c, parent, mode) != LL_OK)
                return ctx->err;
            continue;
        }
        if (!zk_retryable(zrc) || zk_await(ctx, c, ctx->deadline_ms) != LL_OK)
            break;
    }
    return zk_fail(ctx, zrc, "create", path);
}

/* ---------------------------------------------------------------- waiting */

int zk_wait_gone(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int data_watch)
{
    struct zk_waiter w = { c, path, 0, PTHREAD_COND_INITIALIZER, NULL }, **pp;
    char buf[128];
    int len = sizeof buf, zrc, rc = LL_OK, expired = 0;
    struct Stat st;

    pthread_cond_init(&w.cond, &zk_condattr);
    pthread_mutex_lock(&zk_mu);
    w.next = zk_waiters;        /* before the watch: its event finds us */
    zk_waiters = &w;
    pthread_mutex_unlock(&zk_mu);

    zrc = data_watch ? zk_get(ctx, c, path, 1, buf, &len, &st)
                     : zk_exists(ctx, c, path, 1, &st);
    if (zrc == ZNONODE) {
        rc = LL_OK;             /* gone before the watch was set: re-list now */
    } else if (zk_retryable(zrc)) {
        rc = zk_await(ctx, c, ctx->deadline_ms);    /* then re-list */
    } else if (zrc != ZOK) {
        rc = zk_fail(ctx, zrc, data_watch ? "getData" : "exists", path);
    } else {
        pthread_mutex_lock(&zk_mu);
        while (!w.fired && !c->expired && now_ms() < ctx->deadline_ms)
            wait_until(&w.cond, ctx->deadline_ms);
        expired = c->expired;
        pthread_mutex_unlock(&zk_mu);
        if (w.fired)
            ctx->wakeups++;
        else if (expired)
            rc = lock_error(ctx, LL_UNAVAILABLE, zk_backend_name,
                            "ZooKeeper session expired while waiting for %s", path);
        else
            rc = lock_error(ctx, LL_TIMEOUT, NULL, "lock not obtained within %lld ms",
                            (long long)ctx->wait_ms);
    }

    pthread_mutex_lock(&zk_mu);
    for (pp = &zk_waiters; *pp != &w; pp = &(*pp)->next)
        ;
    *pp = w.next;
    pthread_mutex_unlock(&zk_mu);
    pthread_cond_destroy(&w.cond);
    return rc;
}

/* ---------------------------------------------------------------- watches */

struct zk_watch {
    struct zk_waiter w;
    char             path[ZK_PATH_MAX];
};

struct zk_watch *zk_watch_begin(struct zk_conn *c, const char *path)
{
    struct zk_watch *zw = xcalloc(1, sizeof *zw);

    strlcopy(zw->path, path, sizeof zw->path);
    zw->w.conn = c;
    zw->w.path = zw->path;
    pthread_cond_init(&zw->w.cond, &zk_condattr);
    pthread_mutex_lock(&zk_mu);
    zw->w.next = zk_waiters;
    zk_waiters = &zw->w;
    pthread_mutex_unlock(&zk_mu);
    return zw;
}

int zk_watch_wait(struct lock_ctx *ctx, struct zk_watch *zw, int64_t until_ms)
{
    struct zk_conn *c = (struct zk_conn *)zw->w.conn;
    int fired, expired;

    pthread_mutex_lock(&zk_mu);
    while (!zw->w.fired && !c->expired && now_ms() < until_ms)
        wait_until(&zw->w.cond, until_ms);
    fired = zw->w.fired;
    expired = c->expired;
    zw->w.fired = 0;
    pthread_mutex_unlock(&zk_mu);
    if (fired) {
        ctx->wakeups++;
        return LL_OK;
    }
    if (expired)
        return lock_error(ctx, LL_UNAVAILABLE, zk_backend_name,
                          "ZooKeeper session expired while waiting for %s", zw->path);
    return lock_error(ctx, LL_TIMEOUT, NULL, "not obtained within %lld ms",
                      (long long)ctx->wait_ms);
}

void zk_watch_end(struct zk_watch *zw)
{
    struct zk_waiter **pp;

    if (zw == NULL)
        return;
    pthread_mutex_lock(&zk_mu);
    for (pp = &zk_waiters; *pp != &zw->w; pp = &(*pp)->next)
        ;
    *pp = zw->w.next;
    pthread_mutex_unlock(&zk_mu);
    pthread_cond_destroy(&zw->w.cond);
    free(zw);
}

int zk_children_watch(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
                      struct String_vector *out)
{
    memset(out, 0, sizeof *out);
    ctx->backend_ops++;
    return zoo_get_children(c->zh, path, watch, out);
}

int zk_create_bin(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
                  int len, int mode, char *created, int created_len)
{
    ctx->backend_ops++;
    return zoo_create(c->zh, path, data, len, &ZOO_OPEN_ACL_UNSAFE, mode, created, created_len);
}

int zk_set(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
           int len, int version, struct Stat *st)
{
    ctx->backend_ops++;
    return zoo_set2(c->zh, path, data, len, version, st);
}

/* ---------------------------------------------------------------- paths */

void zk_join(char *buf, int len, const char *dir, const char *name)
{
    int n = snprintf(buf, (size_t)len, "%s/%s", dir, name);

    if (n < 0 || n >= len)
        buf[0] = '\0';         /* too long: an empty path, which ZooKeeper refuses */
}

void zk_product_path(char *buf, int len, const char *root, const char *key)
{
    const char *colon = strchr(key, ':');
    zk_join(buf, len, root, colon ? colon + 1 : key);
}

const char *zk_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int delete_tree(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                       int self, int depth)
{
    struct String_vector kids;
    char child[ZK_PATH_MAX];
    int zrc, i, rc = LL_OK;

    zrc = zk_children(ctx, c, path, &kids);
    if (zrc == ZNONODE)
        return LL_OK;
    if (zrc != ZOK)
        return zk_fail(ctx, zrc, "getChildren", path);
    for (i = 0; i < kids.count && rc == LL_OK; i++) {
        zk_join(child, sizeof child, path, kids.data[i]);
        rc = depth < 4 ? delete_tree(ctx, c, child, 1, depth + 1) : LL_OK;
    }
    deallocate_String_vector(&kids);
    if (rc != LL_OK || !self)
        return rc;
    zrc = zk_delete(ctx, c, path, -1);
    return zrc == ZOK || zrc == ZNONODE ? LL_OK : zk_fail(ctx, zrc, "delete", path);
}

int zk_reset_tree(struct lock_ctx *ctx, const char *path, int self)
{
    struct zk_conn *c;
    int rc;

    if ((rc = zk_connect(ctx, &c)) != LL_OK)
        return rc;
    rc = delete_tree(ctx, c, path, self, 0);
    zk_put(c);
    return rc;
}

/* ---------------------------------------------------------------- deletes */

/* One attempt at deleting our node. With a token, the name is not ours
 * alone: read the node first and delete that version only if it carries
 * our token in our session. */
static int delete_once(struct lock_ctx *ctx, struct zk_conn *c, const char *node,
                       const char *token)
{
    char buf[ZK_TOKEN_MAX];
    int len = sizeof buf - 1, zrc;
    struct Stat st;

    if (token == NULL || token[0] == '\0')
        return zk_delete(ctx, c, node, -1);
    zrc = zk_get(ctx, c, node, 0, buf, &len, &st);
    if (zrc != ZOK)
        return zrc;
    buf[len < 0 ? 0 : len] = '\0';
    if (strcmp(buf, token) != 0 || st.ephemeralOwner != zk_session_id(c))
        return ZNONODE;         /* not ours: ours is gone already */
    return zk_delete(ctx, c, node, st.version);
}

static void pending_add(struct zk_conn *c, const char *node, const char *token, int prefix)
{
    struct zk_pending *p = xcalloc(1, sizeof *p);

    p->gen = c->gen;
    p->prefix = prefix;
    strlcopy(p->path, node, sizeof p->path);
    strlcopy(p->token, token ? token : "", sizeof p->token);
    pthread_mutex_lock(&zk_mu);
    p->next = zk_pending;
    zk_pending = p;
    pthread_mutex_unlock(&zk_mu);
}

/* Delete the children of parent whose names start with prefix: a node
 * whose create was lost in a connection loss, found by its name. */
static int delete_prefixed(struct lock_ctx *ctx, struct zk_conn *c, const char *parent,
                           const char *prefix)
{
    struct String_vector kids;
    char child[ZK_PATH_MAX];
    int zrc, i;

    zrc = zk_children(ctx, c, parent, &kids);
    if (zrc != ZOK)
        return zrc;
    for (i = 0; i < kids.count && (zrc == ZOK || zrc == ZNONODE); i++)
        if (strncmp(kids.data[i], prefix, strlen(prefix)) == 0) {
            zk_join(child, sizeof child, parent, kids.data[i]);
            zrc = zk_delete(ctx, c, child, -1);
        }
    deallocate_String_vector(&kids);
    return zrc;
}

void zk_forget_create(struct zk_conn *c, const char *parent, const char *prefix)
{
    if (!conn_expired(c))
        pending_add(c, parent, prefix, 1);
}

void zk_forget_node(struct zk_conn *c, const char *node, const char *token)
{
    if (!conn_expired(c))
        pending_add(c, node, token, 0);
}

/* Retry the deletes that connection losses left behind, once each. */
static void drain_pending(struct lock_ctx *ctx, struct zk_conn *c)
{
    struct zk_pending *list, *p;
    int zrc;

    pthread_mutex_lock(&zk_mu);
    list = zk_pending;
    zk_pending = NULL;
    pthread_mutex_unlock(&zk_mu);
    while ((p = list) != NULL) {
        list = p->next;
        if (p->gen == c->gen) {     /* other sessions' nodes died with them */
            zrc = p->prefix ? delete_prefixed(ctx, c, p->path, p->token)
                            : delete_once(ctx, c, p->path, p->token);
            if (zk_retryable(zrc)) {
                pending_add(c, p->path, p->token, p->prefix);
            } else if (zrc != ZOK && zrc != ZNONODE) {
                fprintf(stderr, "locklab: could not delete %s: %s\n", p->path, zerror(zrc));
            }
        }
        free(p);
    }
}

int zk_delete_ours(struct lock_ctx *ctx, struct zk_conn *c, const char *node,
                   const char *token)
{
    int64_t until = now_ms() + zk_session_ms(ctx);
    int zrc, tries;

    /* First attempt: while our session lives nobody else can have removed
     * or replaced our node, so a plain delete is right. After a connection
     * loss the first delete may have happened: check before deleting. */
    zrc = zk_delete(ctx, c, node, -1);
    for (tries = 0; zk_retryable(zrc) && tries < 10; tries++) {
        if (zk_await(ctx, c, until) != LL_OK)
            break;
        zrc = delete_once(ctx, c, node, token);
    }
    if (zrc == ZOK || zrc == ZNONODE)
        return LL_OK;
    if (zk_retryable(zrc) && !conn_expired(c))
        pending_add(c, node, token, 0);
    if (zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE || conn_expired(c))
        return lock_error(ctx, LL_UNAVAILABLE, zk_backend_name,
                          "ZooKeeper session expired: %s had already gone with it", node);
    return zk_fail(ctx, zrc, "delete", node);
}

/* ---------------------------------------------------------------- holds */

static struct zk_slot *slot_of(struct lock_ctx *ctx)
{
    struct zk_slot *s = ctx->zk;

    if (s == NULL) {
        s = ctx->zk = xcalloc(1, sizeof *s);
        pthread_mutex_lock(&zk_mu);
        zk_slots_live++;
        pthread_mutex_unlock(&zk_mu);
    }
    return s;
}

unsigned zk_token(struct lock_ctx *ctx, char *buf, int len)
{
    struct zk_slot *s = slot_of(ctx);
    snprintf(buf, (size_t)len, "%s:%d:%u", ctx->cfg->instance_id, ctx->slot, ++s->counter);
    return s->counter;
}

struct zk_hold *zk_hold_find(struct lock_ctx *ctx, const struct lock_ops *ops,
                             const char *key)
{
    struct zk_slot *s = slot_of(ctx);
    int i;

    for (i = 0; i < (int)(sizeof s->holds / sizeof s->holds[0]); i++) {
        struct zk_hold *h = &s->holds[i];
        if (h->ops != ops || strcmp(h->key, key) != 0)
            continue;
        if (h->stamp == ctx->deadline_ms)
            return h;
        /* Left by an earlier request that never released: not a re-entry. */
        fprintf(stderr, "locklab: dropping a stale %s hold of %s\n", ops->name, key);
        zk_delete_ours(ctx, h->conn, h->node, h->token);
        zk_put(h->conn);
        memset(h, 0, sizeof *h);
    }
    return NULL;
}

int zk_hold_add(struct lock_ctx *ctx, const struct lock_ops *ops, const char *key,
                struct zk_conn *c, const char *node, const char *token)
{
    struct zk_slot *s = slot_of(ctx);
    int i;

    for (i = 0; i < (int)(sizeof s->holds / sizeof s->holds[0]); i++) {
        struct zk_hold *h = &s->holds[i];
        if (h->ops != NULL)
            continue;
        h->ops = ops;
        strlcopy(h->key, key, sizeof h->key);
        strlcopy(h->node, node, sizeof h->node);
        strlcopy(h->token, token, sizeof h->token);
        h->depth = 1;
        h->stamp = ctx->deadline_ms;
        h->conn = c;
        return LL_OK;
    }
    zk_delete_ours(ctx, c, node, token);
    zk_put(c);
    return lock_error(ctx, LL_ERROR, zk_backend_name, "too many ZooKeeper locks held by slot %d",
                      ctx->slot);
}

int zk_release(struct lock_ctx *ctx, const char *key, int fixed_path)
{
    struct zk_hold *h = zk_hold_find(ctx, ctx->ops, key);
    int rc;

    if (h == NULL)
        return lock_error(ctx, LL_ERROR, zk_backend_name, "%s: release of %s not held",
                          ctx->ops->name, key);
    if (--h->depth > 0)
        return LL_OK;
    if (ctx->err) {             /* the sale failed already: keep its reason */
        int err = ctx->err;
        const char *backend = ctx->backend;
        char why[sizeof ctx->errstr];

        memcpy(why, ctx->errstr, sizeof why);
        rc = zk_delete_ours(ctx, h->conn, h->node, fixed_path ? h->token : NULL);
        ctx->err = err;
        ctx->backend = backend;
        memcpy(ctx->errstr, why, sizeof why);
    } else {
        rc = zk_delete_ours(ctx, h->conn, h->node, fixed_path ? h->token : NULL);
    }
    zk_put(h->conn);
    memset(h, 0, sizeof *h);
    return rc;
}

/* The node is still ours: an exists() answered on our session. That answer
 * also proves the session alive when it was sent, so the lease the write
 * may count on is the session timeout from then (lock_lease). With
 * ?fence=1 the token is the node's czxid: ZooKeeper's transaction ids grow
 * with every write of the ensemble, and a holder's node is created before
 * any later holder's (its sequence number, or its turn on the one node of
 * zk-ephemeral), so the holders' tokens grow in the order they hold. */
int zk_check(struct lock_ctx *ctx, const char *key)
{
    struct zk_hold *h = zk_hold_find(ctx, ctx->ops, key);
    int64_t until = now_ms() + zk_session_ms(ctx), sent;
    const char *why = NULL;
    struct Stat st;
    int zrc, tries;

    if (h == NULL)
        return lock_error(ctx, LL_ERROR, zk_backend_name, "%s: %s not held", ctx->ops->name, key);
    for (tries = 0; tries < 10 && why == NULL; tries++) {
        sent = now_us();
        zrc = zk_exists(ctx, h->conn, h->node, 0, &st);
        if (zrc == ZOK && st.ephemeralOwner == zk_session_id(h->conn)) {
            lock_lease(ctx, sent, zk_session_ms(ctx));
            if (ctx->fence) {
                ctx->token = st.czxid;
                ctx->token_src = ZK_FENCE;
            }
            return LL_OK;
        }
        if (zrc == ZOK)
            why = "it belongs to another session now";
        else if (zrc == ZNONODE)
            why = "the node is gone";
        else if (!zk_retryable(zrc))
            why = zerror(zrc);
        else if (zk_await(ctx, h->conn, until) != LL_OK)
            why = conn_expired(h->conn) ? "session expired" : "connection lost";
    }
    return lock_error(ctx, LL_LOST, zk_backend_name,
                      "lock %s lost before the write: %s", h->node, why ? why : "connection lost");
}

void zk_ctx_free(struct lock_ctx *ctx)
{
    struct zk_slot *s = ctx->zk;
    struct zk_conn *last = NULL;
    struct zk_pending *p;
    int i;

    if (s == NULL)
        return;
    for (i = 0; i < (int)(sizeof s->holds / sizeof s->holds[0]); i++)
        if (s->holds[i].conn)
            zk_put(s->holds[i].conn);
    free(s);
    ctx->zk = NULL;

    /* The last slot to go closes the session: our ephemeral nodes vanish now
     * rather than a session timeout later. */
    pthread_mutex_lock(&zk_mu);
    if (--zk_slots_live == 0 && zk_cur) {
        if (zk_cur->refs == 0)
            last = zk_cur;
        zk_cur = NULL;
        while ((p = zk_pending) != NULL) {
            zk_pending = p->next;
            free(p);
        }
    }
    pthread_mutex_unlock(&zk_mu);
    if (last)
        conn_close(last);
}
