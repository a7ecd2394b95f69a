/* zk.c — the ZooKeeper client: the process's one session, shared by every
 * caller, and every call on it through the asynchronous API.
 *
 * Session. The seeds open one ZooKeeper client at start-up and share it
 * (000 §4.3 ZkClient, "获取链接是一个耗时过程"); so do we, lazily: the first
 * caller that needs ZooKeeper calls zookeeper_init() with --zk (every
 * server of the ensemble; the client picks one and fails over) and waits
 * for the CONNECTED event. The session timeout asked for is derived from
 * --lease-ms (a fifth of it, 4..30 s; 6 s by default) or is
 * --zk-session-ms: that is how long a crashed holder keeps its lock. The
 * server clamps it to its [minSessionTimeout, maxSessionTimeout] (2 and 20
 * tickTime unless configured), and what it grants, read at each CONNECTED
 * (zoo_recv_timeout()), is the session's timeout from then on: the lease a
 * holder may count on, how long to wait for a lost connection to come
 * back, the calls' deadlines (zk_timeout_ms()). Counting on the one asked
 * for, a holder of a session granted 40 s of the 60 s it asked would
 * believe itself the holder for 20 s after its session had died.
 *
 * Generations. Every zhandle is a struct zk_conn with a generation number.
 * When the session expires (the EXPIRED event), the next zk_connect()
 * retires it and opens a new handle — a new session, new generation.
 * Callers keep a reference on the conn they use, so a lock taken in a dead
 * session is never taken for one of the live session: its conn says
 * expired. A retired handle is closed once its last reference goes, on a
 * short-lived thread of its own: zookeeper_close() joins the library's
 * threads and waits for the server to end the session, which must block
 * neither a loop nor the watcher (it runs on the thread being joined).
 *
 * Calls. Every call goes out through the asynchronous API (zoo_acreate,
 * zoo_aexists, zoo_aget, zoo_aget_children, zoo_adelete, zoo_aset,
 * zoo_async) with a
 * completion record of its own: a heap object holding the answer, a
 * wait_cond and two references — the caller's and the library's. The
 * completion runs on ZooKeeper's completion thread: it copies the answer
 * into the record (the library frees its own copy when the completion
 * returns), marks it done, signals the waiting task and drops the
 * library's reference. The caller waits on the record's wait_cond until
 * the answer or its deadline, copies the answer into its own buffers and
 * drops its reference. Whoever drops the last one frees the record, so a
 * caller that gives up at its deadline leaves nothing the late completion
 * could write to on its stack: the completion fills a record nobody reads,
 * and frees it. A call the library refuses at once (ZINVALIDSTATE …) gets
 * no completion: both references are dropped on the spot. ZooKeeper
 * answers every call it took, with the result or with a connection loss,
 * within about two thirds of the session timeout; the lock code's calls
 * wait at most a session timeout, so their deadline only guards against a
 * library that never answers.
 *
 * Wake-ups. The watcher does nothing but record and signal. A task that
 * waits for a node registers a struct zk_waiter {path, wait_cond} before it
 * sets the watch; a node event wakes exactly the waiters of that path, a
 * session event wakes every waiter of that session so it can notice an
 * expiry, and every task waiting for the connection (zk_state). Waiting is
 * the wait layer's: a coroutine parks, a thread sleeps; nothing polls.
 *
 * Locking. zk_mu guards the session, the waiters and the closes, and each
 * record has a mutex of its own; both are held for a few instructions
 * only, never across a wait (wait_cond_wait() lets them go while the task
 * sleeps).
 *
 * Outages. A call that fails with a connection loss leaves the caller to
 * wait for the same session to come back (zk_await) and retry or
 * re-check; the library re-registers watches on reconnection. Once
 * ZooKeeper has been unreachable for a whole session timeout, callers stop
 * waiting for it and answer unavailable at once, while the library keeps
 * trying in the background.
 */
#include "zk.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct zk_conn {
    zhandle_t *zh;
    uint64_t   gen;
    int        refs;
    int        connected;   /* last session event was CONNECTED        */
    int        expired;     /* EXPIRED or AUTH_FAILED: never again      */
    int64_t    session;     /* session id, known once connected        */
    int        asked_ms;    /* the session timeout asked for           */
    int        granted_ms;  /* ... and granted, known once connected   */
    int64_t    down_since;  /* when it lost (or had not yet) a connection */
};

struct zk_waiter {
    const struct zk_conn *conn;
    const char           *path;
    int                   fired;
    struct wait_cond      cv;
    struct zk_waiter     *next;
};

static pthread_mutex_t zk_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t zk_once = PTHREAD_ONCE_INIT;
static struct wait_cond zk_state = WAIT_COND_INIT;     /* any session event   */
static struct wait_cond zk_closed = WAIT_COND_INIT;    /* a close has ended   */
static struct zk_conn *zk_cur;
static uint64_t zk_gens;
static struct zk_waiter *zk_waiters;
static int zk_closing;                                  /* closes under way    */
static char zk_backend_name[300] = "zookeeper";

/* ---------------------------------------------------------------- helpers */

static void zk_init_once(void)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* With zk_mu held: c's session timeout, granted (or, before the server
 * has answered, asked). */
static int conn_timeout(const struct zk_conn *c)
{
    return c->granted_ms > 0 ? c->granted_ms : c->asked_ms;
}

int zk_session_ms(const struct lock_ctx *ctx)
{
    int ms = ctx->cfg->lease_ms / 5;

    if (ctx->cfg->zk_session_ms > 0)        /* --zk-session-ms, as asked */
        return ctx->cfg->zk_session_ms;
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

/* Runs on the library's completion thread: record, signal, return. */
static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *data)
{
    struct zk_conn *c = data;
    struct zk_waiter *w;

    pthread_mutex_lock(&zk_mu);
    if (type == ZOO_SESSION_EVENT) {
        if (state == ZOO_CONNECTED_STATE) {
            c->connected = 1;
            c->session = zoo_client_id(zh)->client_id;
            c->granted_ms = zoo_recv_timeout(zh);   /* the server's, not ours */
        } else {
            if (c->connected)
                c->down_since = now_ms();
            c->connected = 0;
            if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
                c->expired = 1;
        }
        wait_cond_broadcast(&zk_state);
        for (w = zk_waiters; w; w = w->next)
            if (w->conn == c)
                wait_cond_signal(&w->cv);
    } else if (path != NULL) {
        for (w = zk_waiters; w; w = w->next)
            if (w->conn == c && strcmp(w->path, path) == 0) {
                w->fired = 1;
                wait_cond_signal(&w->cv);
            }
    }
    pthread_mutex_unlock(&zk_mu);
}

/* ---------------------------------------------------------------- closing */

static void *closer_main(void *arg)
{
    struct zk_conn *c = arg;

    zookeeper_close(c->zh);
    free(c);
    pthread_mutex_lock(&zk_mu);
    zk_closing--;
    wait_cond_broadcast(&zk_closed);
    pthread_mutex_unlock(&zk_mu);
    return NULL;
}

/* Close c's handle on a thread of its own (see the header comment). */
static void conn_close(struct zk_conn *c)
{
    pthread_attr_t attr;
    pthread_t th;
    int rc;

    pthread_mutex_lock(&zk_mu);
    zk_closing++;
    pthread_mutex_unlock(&zk_mu);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, closer_main, c);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        fprintf(stderr, "locklab: no thread to close a ZooKeeper session (%s): "
                "closing it here\n", strerror(rc));
        closer_main(c);
    } else {
        pthread_setname_np(th, "zk-close");
    }
}

/* ---------------------------------------------------------------- session */

/* With zk_mu held: open a new handle as zk_cur. zookeeper_init() only
 * resolves the (numeric) addresses and starts the library's threads: the
 * connection is made in the background and announced by the watcher. */
static int conn_open(struct lock_ctx *ctx)
{
    struct zk_conn *c = xcalloc(1, sizeof *c);

    if (zk_gens == 0)
        snprintf(zk_backend_name, sizeof zk_backend_name, "zookeeper %s", ctx->cfg->zk);
    c->gen = ++zk_gens;
    c->down_since = now_ms();
    c->asked_ms = zk_session_ms(ctx);
    c->zh = zookeeper_init(ctx->cfg->zk, zk_watcher, c->asked_ms, NULL, c, 0);
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

/* With zk_mu held: sleep until a session event or until_ms. */
static void state_wait(int64_t until_ms)
{
    wait_cond_wait(&zk_state, &zk_mu, until_ms * 1000);
}

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
        if (!c->expired && now_ms() - c->down_since > 2 * (int64_t)conn_timeout(c)) {
            /* No server for two session timeouts: the servers have expired
             * the session even if this client never hears of it (an
             * ensemble restarted with fresh data refuses a client that has
             * seen a newer zxid, for ever). Start over with a new handle. */
            c->expired = 1;
            continue;
        }
        if (!c->expired) {
            int64_t limit = min64(ctx->deadline_ms, c->down_since + conn_timeout(c));
            if (now_ms() >= limit) {
                rc = lock_error(ctx, LL_UNAVAILABLE, zk_backend_name,
                                "no ZooKeeper server has answered for %lld ms",
                                (long long)(now_ms() - c->down_since));
                break;
            }
            state_wait(min64(limit, now_ms() + 50));
        }
    }
    pthread_mutex_unlock(&zk_mu);
    if (stale)
        conn_close(stale);
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
    int up, expired;

    pthread_mutex_lock(&zk_mu);
    while (!(up = conn_up(c)) && !c->expired) {
        int64_t limit = min64(until_ms, c->down_since + conn_timeout(c));
        if (now_ms() >= limit)
            break;
        state_wait(min64(limit, now_ms() + 20));
    }
    expired = c->expired;
    pthread_mutex_unlock(&zk_mu);
    if (up)
        return LL_OK;
    return lock_error(ctx, LL_UNAVAILABLE, zk_backend_name, "%s",
                      expired ? "ZooKeeper session expired" : "ZooKeeper connection lost");
}

void zk_close(void)
{
    struct zk_conn *last = NULL;
    int64_t until = now_us() + 5 * 1000000;

    pthread_mutex_lock(&zk_mu);
    if (zk_cur) {
        if (zk_cur->refs == 0)
            last = zk_cur;
        zk_cur = NULL;          /* a user left: its zk_put() closes it */
    }
    pthread_mutex_unlock(&zk_mu);
    if (last)
        conn_close(last);
    /* Closing sends the server the end of the session and waits for its
     * answer (1.5 s at most) after sending it (3 s at most). */
    pthread_mutex_lock(&zk_mu);
    while (zk_closing > 0)
        if (!wait_cond_wait(&zk_closed, &zk_mu, until))
            break;
    pthread_mutex_unlock(&zk_mu);
}

int zk_expired(struct zk_conn *c)
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

int zk_timeout_ms(struct zk_conn *c)
{
    int ms;

    pthread_mutex_lock(&zk_mu);
    ms = conn_timeout(c);
    pthread_mutex_unlock(&zk_mu);
    return ms;
}

uint64_t zk_generation(struct zk_conn *c)
{
    return c->gen;              /* set once, before anyone could see c */
}

/* ---------------------------------------------------------------- completion records */

/* One call's answer, between ZooKeeper's completion thread and the task
 * that waits for it (see the header comment). */
struct zk_reply {
    pthread_mutex_t      mu;
    struct wait_cond     cv;
    int                  refs;      /* the caller's, the library's          */
    int                  done;
    int                  zrc;
    int                  has_stat;
    struct Stat          stat;
    char                *value;     /* create: the path; get: the data      */
    int                  value_len; /* get: -1 for a node without data      */
    struct String_vector kids;      /* getChildren: a copy of our own       */
};

static struct zk_reply *reply_new(void)
{
    struct zk_reply *r = xcalloc(1, sizeof *r);

    pthread_mutex_init(&r->mu, NULL);
    wait_cond_init(&r->cv);
    r->refs = 2;
    return r;
}

/* With r->mu held: let go of one reference (and of the mutex); the last
 * one frees r and whatever answer nobody took. */
static void reply_drop(struct zk_reply *r)
{
    int last = --r->refs == 0;

    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    free(r->value);
    deallocate_String_vector(&r->kids);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* The completions: on the library's thread, with its copy of the answer,
 * which it frees when they return. Copy, lock, record, signal, drop. */
static void reply_done(struct zk_reply *r, int zrc)
{
    r->zrc = zrc;
    r->done = 1;
    wait_cond_signal(&r->cv);
    reply_drop(r);
}

static struct zk_reply *reply_of(const void *data)
{
    return (struct zk_reply *)(uintptr_t)data;
}

static char *copy_bytes(const char *p, int len)
{
    char *out = xmalloc((size_t)(len > 0 ? len : 0) + 1);

    if (len > 0)
        memcpy(out, p, (size_t)len);
    out[len > 0 ? len : 0] = '\0';
    return out;
}

static void on_void(int zrc, const void *data)
{
    struct zk_reply *r = reply_of(data);

    pthread_mutex_lock(&r->mu);
    reply_done(r, zrc);
}

static void on_stat(int zrc, const struct Stat *st, const void *data)
{
    struct zk_reply *r = reply_of(data);

    pthread_mutex_lock(&r->mu);
    if (zrc == ZOK && st) {
        r->stat = *st;
        r->has_stat = 1;
    }
    reply_done(r, zrc);
}

static void on_string(int zrc, const char *value, const void *data)
{
    struct zk_reply *r = reply_of(data);
    char *copy = zrc == ZOK && value ? copy_bytes(value, (int)strlen(value)) : NULL;

    pthread_mutex_lock(&r->mu);
    r->value = copy;
    reply_done(r, zrc);
}

static void on_data(int zrc, const char *value, int len, const struct Stat *st, const void *data)
{
    struct zk_reply *r = reply_of(data);
    /* len -1: the node has no data; 0: empty data, value maybe NULL */
    char *copy = zrc == ZOK && len >= 0 ? copy_bytes(value, len) : NULL;

    pthread_mutex_lock(&r->mu);
    r->value = copy;
    r->value_len = zrc == ZOK ? len : -1;
    if (zrc == ZOK && st) {
        r->stat = *st;
        r->has_stat = 1;
    }
    reply_done(r, zrc);
}

static void on_strings(int zrc, const struct String_vector *v, const void *data)
{
    struct zk_reply *r = reply_of(data);
    struct String_vector copy = { 0, NULL };
    int i;

    if (zrc == ZOK && v && v->count > 0) {
        copy.count = v->count;
        copy.data = xcalloc((size_t)v->count, sizeof *copy.data);
        for (i = 0; i < v->count; i++)
            copy.data[i] = copy_bytes(v->data[i], (int)strlen(v->data[i]));
    }
    pthread_mutex_lock(&r->mu);
    r->kids = copy;
    reply_done(r, zrc);
}

/* ---------------------------------------------------------------- calls */

/* Hand the call to the library: ZOK when it took it (the completion will
 * come, with the answer or a failure), else why it refused. */
static int call_submit(zhandle_t *zh, const struct zk_call *k, struct zk_reply *r)
{
    switch (k->op) {
    case ZK_OP_CREATE:
        return zoo_acreate(zh, k->path, k->data, k->data ? k->len : -1, &ZOO_OPEN_ACL_UNSAFE,
                           k->mode, on_string, r);
    case ZK_OP_EXISTS:
        return zoo_aexists(zh, k->path, k->watch, on_stat, r);
    case ZK_OP_GET:
        return zoo_aget(zh, k->path, k->watch, on_data, r);
    case ZK_OP_CHILDREN:
        return zoo_aget_children(zh, k->path, k->watch, on_strings, r);
    case ZK_OP_DELETE:
        return zoo_adelete(zh, k->path, k->version, on_void, r);
    case ZK_OP_SET:
        return zoo_aset(zh, k->path, k->data, k->data ? k->len : -1, k->version, on_stat, r);
    case ZK_OP_SYNC:
        return zoo_async(zh, k->path, on_string, r);
    }
    return ZBADARGUMENTS;
}

/* With r->mu held, r done with ZOK: the answer into the caller's call. */
static void call_take(struct zk_call *k, struct zk_reply *r)
{
    if (r->has_stat)
        k->stat = r->stat;
    if (k->op == ZK_OP_CHILDREN) {
        k->kids = r->kids;
        r->kids.count = 0;
        r->kids.data = NULL;
    } else if (k->op == ZK_OP_CREATE && k->out && k->out_len > 0) {
        strlcopy(k->out, r->value ? r->value : "", (size_t)k->out_len);
    } else if (k->op == ZK_OP_GET && k->out) {
        int n = r->value_len < k->out_len ? r->value_len : k->out_len;
        if (n > 0)
            memcpy(k->out, r->value, (size_t)n);
        k->out_len = n;         /* -1: the node has no data */
    }
}

int zk_call(struct lock_ctx *ctx, struct zk_conn *c, struct zk_call *call, int64_t deadline_us)
{
    struct zk_reply *r = reply_new();
    int zrc;

    if (call->op == ZK_OP_CHILDREN)
        memset(&call->kids, 0, sizeof call->kids);
    ctx->backend_ops++;
    zrc = call_submit(c->zh, call, r);
    pthread_mutex_lock(&r->mu);
    if (zrc != ZOK) {           /* refused: no completion will come */
        r->refs--;
        reply_drop(r);
        return zrc;
    }
    while (!r->done)
        if (!wait_cond_wait(&r->cv, &r->mu, deadline_us) && !r->done)
            break;
    if (!r->done) {             /* the late answer will free r */
        reply_drop(r);
        return ZOPERATIONTIMEOUT;
    }
    zrc = r->zrc;
    if (zrc == ZOK)
        call_take(call, r);
    reply_drop(r);
    return zrc;
}

/* A call of the lock code: waits at most a session timeout, c's. */
static int call_now(struct lock_ctx *ctx, struct zk_conn *c, struct zk_call *call)
{
    return zk_call(ctx, c, call, now_us() + (int64_t)zk_timeout_ms(c) * 1000);
}

int zk_create_bin(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
                  int len, int mode, char *created, int created_len)
{
    struct zk_call k = { .op = ZK_OP_CREATE, .path = path, .data = data, .len = len,
                         .mode = mode, .out = created, .out_len = created_len };

    return call_now(ctx, c, &k);
}

int zk_create(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
              int mode, char *created, int created_len)
{
    return zk_create_bin(ctx, c, path, data, data ? (int)strlen(data) : -1, mode,
                         created, created_len);
}

int zk_exists(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
              struct Stat *st)
{
    struct zk_call k = { .op = ZK_OP_EXISTS, .path = path, .watch = watch };
    int zrc = call_now(ctx, c, &k);

    if (zrc == ZOK && st)
        *st = k.stat;
    return zrc;
}

int zk_get(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
           char *buf, int *len, struct Stat *st)
{
    struct zk_call k = { .op = ZK_OP_GET, .path = path, .watch = watch,
                         .out = buf, .out_len = *len };
    int zrc = call_now(ctx, c, &k);

    if (zrc == ZOK) {
        *len = k.out_len;
        if (st)
            *st = k.stat;
    }
    return zrc;
}

int zk_children_watch(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
                      struct String_vector *out)
{
    struct zk_call k = { .op = ZK_OP_CHILDREN, .path = path, .watch = watch };
    int zrc = call_now(ctx, c, &k);

    *out = k.kids;              /* empty unless ZOK */
    return zrc;
}

int zk_children(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                struct String_vector *out)
{
    return zk_children_watch(ctx, c, path, 0, out);
}

int zk_delete(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int version)
{
    struct zk_call k = { .op = ZK_OP_DELETE, .path = path, .version = version };

    return call_now(ctx, c, &k);
}

int zk_set(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
           int len, int version, struct Stat *st)
{
    struct zk_call k = { .op = ZK_OP_SET, .path = path, .data = data, .len = len,
                         .version = version };
    int zrc = call_now(ctx, c, &k);

    if (zrc == ZOK && st)
        *st = k.stat;
    return zrc;
}

int zk_sync(struct lock_ctx *ctx, struct zk_conn *c, const char *path)
{
    struct zk_call k = { .op = ZK_OP_SYNC, .path = path };

    return call_now(ctx, c, &k);
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

int zk_delete_tree(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int self)
{
    return delete_tree(ctx, c, path, self, 0);
}

/* ---------------------------------------------------------------- watches */

static void waiter_add(struct zk_waiter *w, const struct zk_conn *c, const char *path)
{
    w->conn = c;
    w->path = path;
    w->fired = 0;
    wait_cond_init(&w->cv);
    pthread_mutex_lock(&zk_mu);
    w->next = zk_waiters;
    zk_waiters = w;
    pthread_mutex_unlock(&zk_mu);
}

static void waiter_remove(struct zk_waiter *w)
{
    struct zk_waiter **pp;

    pthread_mutex_lock(&zk_mu);
    for (pp = &zk_waiters; *pp != w; pp = &(*pp)->next)
        ;
    *pp = w->next;
    pthread_mutex_unlock(&zk_mu);
}

/* Sleep until w fires, c expires or until_ms: 1 fired (and re-armed), 0
 * not; *expired says whether the session went. */
static int waiter_sleep(struct zk_waiter *w, struct zk_conn *c, int64_t until_ms, int *expired)
{
    int fired;

    pthread_mutex_lock(&zk_mu);
    while (!w->fired && !c->expired && now_ms() < until_ms)
        wait_cond_wait(&w->cv, &zk_mu, until_ms * 1000);
    fired = w->fired;
    *expired = c->expired;
    w->fired = 0;
    pthread_mutex_unlock(&zk_mu);
    return fired;
}

int zk_wait_gone(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int data_watch)
{
    struct zk_waiter w;
    char buf[128];
    int len = sizeof buf, zrc, rc = LL_OK, expired;
    struct Stat st;

    waiter_add(&w, c, path);        /* before the watch: its event finds us */
    zrc = data_watch ? zk_get(ctx, c, path, 1, buf, &len, &st)
                     : zk_exists(ctx, c, path, 1, &st);
    if (zrc == ZNONODE) {
        rc = LL_OK;             /* gone before the watch was set: look again now */
    } else if (zk_retryable(zrc)) {
        rc = zk_await(ctx, c, ctx->deadline_ms);    /* then look again */
    } else if (zrc != ZOK) {
        rc = zk_fail(ctx, zrc, data_watch ? "getData" : "exists", path);
    } else if (waiter_sleep(&w, c, ctx->deadline_ms, &expired)) {
        ctx->wakeups++;
    } else if (expired) {
        rc = lock_error(ctx, LL_UNAVAILABLE, zk_backend_name,
                        "ZooKeeper session expired while waiting for %s", path);
    } else {
        rc = lock_error(ctx, LL_TIMEOUT, NULL, "lock not obtained within %lld ms",
                        (long long)ctx->wait_ms);
    }
    waiter_remove(&w);
    return rc;
}

struct zk_watch {
    struct zk_waiter w;
    struct zk_conn  *conn;
    char             path[ZK_PATH_MAX];
};

struct zk_watch *zk_watch_begin(struct zk_conn *c, const char *path)
{
    struct zk_watch *zw = xcalloc(1, sizeof *zw);

    strlcopy(zw->path, path, sizeof zw->path);
    zw->conn = c;
    waiter_add(&zw->w, c, zw->path);
    return zw;
}

int zk_watch_wait(struct lock_ctx *ctx, struct zk_watch *zw, int64_t until_ms)
{
    int expired;

    if (waiter_sleep(&zw->w, zw->conn, until_ms, &expired)) {
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
    if (zw == NULL)
        return;
    waiter_remove(&zw->w);
    free(zw);
}

/* ---------------------------------------------------------------- paths */

void zk_join(char *buf, int len, const char *dir, const char *name)
{
    int n = snprintf(buf, (size_t)len, "%s/%s", dir, name);

    if (n < 0 || n >= len)
        buf[0] = '\0';         /* too long: an empty path, which ZooKeeper refuses */
}

const char *zk_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}
