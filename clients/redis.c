/* redis.c — the Redis client (see redis.h): hiredis's protocol on
 * non-blocking sockets, every wait through the wait layer.
 *
 * Two kinds of connection carry commands.
 *
 * A slot's own connection (struct redis_link in ctx->redis) is driven by
 * its caller, straight-line: connect (non-blocking, wait_fd for writable,
 * SO_ERROR), append the commands to hiredis's output buffer, write it out
 * (waiting for writable whenever the socket is full), then read the
 * replies one by one (waiting for readable whenever hiredis's reader has
 * none whole). One deadline, the command's timeout from the send, bounds
 * the whole round trip. A thread blocks in poll() meanwhile, a coroutine
 * parks. A connection the server closed while idle is seen before use
 * (fd_peer_closed()) and replaced at once.
 *
 * The shared connection of a server (struct shared, one per server per
 * loop thread) is driven by the loop. A caller's commands become one
 * entry, queued; the loop's turn-end hook appends every queued entry's
 * commands to the output and writes it once (a write event finishes what
 * the socket did not take), and moves them to the FIFO of entries sent. A
 * persistent read event hands each reply to the entry at the head of that
 * FIFO, in order, and wakes its caller (task_wake) when all of its replies
 * are there: so the commands of every coroutine of a turn cost one write
 * and, at the server, one read, and no caller's reply can reach another.
 * The first caller that finds the connection down connects it, parked;
 * the others queue behind it meanwhile. A transport error (read, write,
 * EOF), or a caller whose deadline passes while the oldest entry sent has
 * waited REDIS_CMD_TIMEOUT_MS, fails every entry with LL_UNAVAILABLE and
 * closes the connection; a caller with a shorter timeout of its own
 * (Redlock's) gives up alone, leaving its entry to swallow its replies.
 *
 * Where server 0 is. With --redis-sentinel, server 0 is whatever master the
 * Sentinels name (SENTINEL get-master-addr-by-name locklab), asked at every
 * connect to it: by the slots' connections, the shared ones and the pub/sub
 * dispatcher's (redis_server_addr()). A failover is followed the way a
 * Sentinel client follows one: Sentinel kills the clients of the servers it
 * reconfigures, every connection finds its peer gone, and the next use
 * connects to the master it names then. A connection that still reaches
 * a demoted master is answered READONLY at its first write, which drops it
 * the same way. When no Sentinel answers, the master last named, or else
 * the address given, is used.
 *
 * Scripts run with EVALSHA; the SHA1 comes once per process from SCRIPT
 * LOAD, and a NOSCRIPT answer (a restarted server, another server of
 * Redlock) falls back to EVAL, which caches the script again.
 */
#include "redis.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <assert.h>
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define SENTINEL_TIMEOUT_MS 300         /* per Sentinel asked */

/* ---------------------------------------------------------------- sockets */

redisContext *redis_connect_to(const char *host, int port, int64_t deadline_us,
                               char *why, size_t len)
{
    redisContext *c = redisConnectNonBlock(host, port);
    socklen_t elen = sizeof(int);
    int err = 0;

    if (c == NULL) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    if (c->err) {                       /* refused at once, a bad address */
        snprintf(why, len, "%s", c->errstr);
        redisFree(c);
        return NULL;
    }
    if (wait_fd(c->fd, WAIT_WRITE, deadline_us) == 0)
        err = ETIMEDOUT;
    else if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
        err = errno;
    if (err) {
        snprintf(why, len, "%s", strerror(err));
        redisFree(c);
        return NULL;
    }
    redisEnableKeepAlive(c);
    return c;
}

/* Write out c's output buffer: 0, or -1 with the reason. */
static int write_out(redisContext *c, int64_t deadline_us, char *why, size_t len)
{
    int done = 0;

    for (;;) {
        if (redisBufferWrite(c, &done) != REDIS_OK) {
            snprintf(why, len, "%s", c->errstr);
            return -1;
        }
        if (done)
            return 0;
        if (wait_fd(c->fd, WAIT_WRITE, deadline_us) == 0) {
            snprintf(why, len, "the server took no command in time");
            return -1;
        }
    }
}

/* Read one reply: 0 and *out, or -1 with the reason. */
static int read_reply(redisContext *c, int64_t deadline_us, redisReply **out,
                      char *why, size_t len)
{
    void *r = NULL;

    for (;;) {
        if (redisGetReplyFromReader(c, &r) != REDIS_OK) {
            snprintf(why, len, "%s", c->errstr);
            return -1;
        }
        if (r) {
            *out = r;
            return 0;
        }
        if (wait_fd(c->fd, WAIT_READ, deadline_us) == 0) {
            snprintf(why, len, "no reply in time");
            return -1;
        }
        if (redisBufferRead(c) != REDIS_OK) {
            snprintf(why, len, "%s", c->errstr);
            return -1;
        }
    }
}

/* ---------------------------------------------------------------- where server 0 is */

static struct {
    pthread_mutex_t mu;
    struct hostport named;              /* the master the Sentinels last named */
    int             known;
} master = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Ask one Sentinel for the master's address: 0, or -1. */
static int sentinel_ask(const struct hostport *s, struct hostport *out)
{
    char why[128];
    redisContext *c = redis_connect_to(s->host, s->port, now_us() + SENTINEL_TIMEOUT_MS * 1000LL,
                                 why, sizeof why);
    redisReply *r = NULL;
    int64_t deadline = now_us() + SENTINEL_TIMEOUT_MS * 1000LL;
    int rc = -1;

    if (c == NULL)
        return -1;
    if (redisAppendCommand(c, "SENTINEL get-master-addr-by-name %s",
                           REDIS_SENTINEL_MASTER) == REDIS_OK &&
        write_out(c, deadline, why, sizeof why) == 0)
        read_reply(c, deadline, &r, why, sizeof why);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
        strlen(r->element[0]->str) < sizeof out->host &&
        parse_int(r->element[1]->str, 1, 65535, &(long long){ 0 }) == 0) {
        snprintf(out->host, sizeof out->host, "%s", r->element[0]->str);
        out->port = atoi(r->element[1]->str);
        rc = 0;
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

void redis_server_addr(const struct config *cfg, int server, struct hostport *out)
{
    int i;

    *out = cfg->redis[server];
    if (server != 0 || cfg->nsentinel == 0)
        return;
    for (i = 0; i < cfg->nsentinel; i++)
        if (sentinel_ask(&cfg->sentinel[i], out) == 0) {
            pthread_mutex_lock(&master.mu);
            master.named = *out;
            master.known = 1;
            pthread_mutex_unlock(&master.mu);
            return;
        }
    pthread_mutex_lock(&master.mu);
    if (master.known)
        *out = master.named;
    pthread_mutex_unlock(&master.mu);
}

/* ---------------------------------------------------------------- connections */

static void link_close(struct redis_link *l)
{
    if (l->c)
        redisFree(l->c);
    l->c = NULL;
}

/* Close a failed connection. The next use reconnects at once: a lost
 * connection (a command timed out, the server restarted) says little about
 * the server; only a failed connect throttles the next one. */
static void link_forget(struct redis_link *l, const char *why)
{
    snprintf(l->lasterr, sizeof l->lasterr, "%s",
             why ? why : l->c && l->c->errstr[0] ? l->c->errstr : "connection lost");
    link_close(l);
}

/* Connect l to server i (its name into `name`): 0, or -1 with
 * LL_UNAVAILABLE recorded on ctx under `name`. A failed connect holds off
 * the next for REDIS_RECONNECT_MS. Counts a round trip. */
static int link_connect(struct lock_ctx *ctx, struct redis_link *l, int server, int timeout_ms,
                        char *name, size_t nlen)
{
    struct hostport hp;
    int64_t now = now_ms();

    if (now < l->retry_at_ms) {
        lock_error(ctx, LL_UNAVAILABLE, name, "%s is down: %s (next try in %lld ms)",
                   name, l->lasterr, (long long)(l->retry_at_ms - now));
        return -1;
    }
    ctx->backend_ops++;
    redis_server_addr(ctx->cfg, server, &hp);
    snprintf(name, nlen, "redis %s:%d", hp.host, hp.port);
    l->gen++;
    l->c = redis_connect_to(hp.host, hp.port, now_us() + timeout_ms * 1000LL, l->lasterr,
                      sizeof l->lasterr);
    if (l->c == NULL) {
        l->retry_at_ms = now_ms() + REDIS_RECONNECT_MS;
        lock_error(ctx, LL_UNAVAILABLE, name, "cannot connect to %s: %s", name, l->lasterr);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the slot */

struct redis_set *redis_set_of(struct lock_ctx *ctx)
{
    struct redis_set *rs = ctx->redis;
    int i;

    if (rs == NULL) {
        rs = xcalloc(1, sizeof *rs);
        for (i = 0; i < ctx->cfg->nredis; i++)
            snprintf(rs->name[i], sizeof rs->name[i], "redis %s:%d",
                     ctx->cfg->redis[i].host, ctx->cfg->redis[i].port);
        ctx->redis = rs;
    }
    return rs;
}

void redis_ctx_free(struct lock_ctx *ctx)
{
    struct redis_set *rs = ctx->redis;
    int i;

    if (rs == NULL)
        return;
    for (i = 0; i < CONFIG_MAX_SERVERS; i++)
        link_close(&rs->link[i]);
    free(rs->hold);
    free(rs);
    ctx->redis = NULL;
}

void redis_pin(struct lock_ctx *ctx, int on)
{
    redis_set_of(ctx)->pinned = on;
}

unsigned redis_own_gen(struct lock_ctx *ctx, int server)
{
    struct redis_link *l = &redis_set_of(ctx)->link[server];

    return l->c ? l->gen : 0;
}

/* Does ctx's next command to a server go on the loop's shared connection? */
static int use_shared(struct lock_ctx *ctx)
{
    return task_on_loop() && !redis_set_of(ctx)->pinned;
}

/* ctx's own connection to server i, connected (or reconnected when the
 * server closed it while idle); NULL with the failure on ctx. */
static redisContext *own_link(struct lock_ctx *ctx, int server, int timeout_ms)
{
    struct redis_set *rs = redis_set_of(ctx);
    struct redis_link *l = &rs->link[server];

    if (l->c && fd_peer_closed(l->c->fd))
        link_forget(l, "closed by the server");
    if (l->c == NULL &&
        link_connect(ctx, l, server, timeout_ms, rs->name[server], sizeof rs->name[server]) != 0)
        return NULL;
    return l->c;
}

/* ---------------------------------------------------------------- the shared connections */

/* One caller's commands on a shared connection. Freed by the caller once
 * answered or failed, or, when the caller gave up first (task NULL), by
 * whoever finishes it. */
struct redis_wait_entry {
    struct redis_wait_entry *next;
    struct task  *task;             /* the caller, parked; NULL: it gave up   */
    char         *cmd;              /* its commands, until appended           */
    size_t        len;
    int           n, got;           /* replies wanted, and received           */
    redisReply  **reply;
    int64_t       issued_us;
    int           sent;             /* appended to the output and written     */
    int           failed;           /* the connection failed first: why       */
    char          why[128];
};

struct shared {
    struct redis_link        link;
    char                     name[80];
    int                      connecting;    /* a caller is connecting it    */
    struct event            *rd, *wr;       /* wr: while output remains     */
    struct redis_wait_entry *queued, *queued_tail;  /* not yet appended      */
    struct redis_wait_entry *head, *tail;           /* sent, in order        */
};

/* The shared connections of one configuration on this loop: an instance
 * has one configuration, a test may have two. */
struct shared_set {
    struct shared_set   *next;
    const struct config *cfg;
    struct shared        s[CONFIG_MAX_SERVERS];
};

static __thread struct shared_set *shared_sets;
static __thread struct loop       *shared_loop;    /* the loop they belong to */

static void entry_free(struct redis_wait_entry *e)
{
    int i;

    for (i = 0; i < e->got; i++)
        freeReplyObject(e->reply[i]);
    free(e->reply);
    free(e->cmd);
    free(e);
}

/* e is answered or failed: wake its caller, or free it if it gave up. */
static void entry_finish(struct redis_wait_entry *e)
{
    if (e->task)
        task_wake(e->task);
    else
        entry_free(e);
}

static void entry_fail(struct redis_wait_entry *e, const char *why)
{
    e->failed = 1;
    snprintf(e->why, sizeof e->why, "%s", why);
    entry_finish(e);
}

/* Fail every entry of s and close it. `why` may be the context's errstr:
 * copied before the context goes. */
static void shared_fail(struct shared *s, const char *reason)
{
    struct redis_wait_entry *e, *next;
    char why[128];

    snprintf(why, sizeof why, "%s", reason);

    if (s->rd)                  /* before the socket closes under them */
        event_free(s->rd);
    if (s->wr)
        event_free(s->wr);
    s->rd = s->wr = NULL;
    if (s->link.c)
        link_forget(&s->link, why);
    for (e = s->head; e; e = next) {
        next = e->next;
        entry_fail(e, why);
    }
    for (e = s->queued; e; e = next) {
        next = e->next;
        entry_fail(e, why);
    }
    s->head = s->tail = s->queued = s->queued_tail = NULL;
}

/* Write what the output holds; what the socket does not take waits for
 * the write event. */
static void shared_write(struct shared *s)
{
    int done = 0;

    if (redisBufferWrite(s->link.c, &done) != REDIS_OK) {
        shared_fail(s, s->link.c->errstr);
        return;
    }
    if (done)
        event_del(s->wr);
    else
        event_add(s->wr, NULL);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    shared_write(arg);
}

/* Replies: each to the entry at the head of the FIFO, in order. */
static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct shared *s = arg;
    struct redis_wait_entry *e;
    void *r;

    (void)fd, (void)what;
    if (redisBufferRead(s->link.c) != REDIS_OK) {
        shared_fail(s, s->link.c->errstr);
        return;
    }
    for (;;) {
        r = NULL;
        if (redisGetReplyFromReader(s->link.c, &r) != REDIS_OK) {
            shared_fail(s, s->link.c->errstr);
            return;
        }
        if (r == NULL)
            return;
        if ((e = s->head) == NULL) {
            freeReplyObject(r);
            shared_fail(s, "a reply to no command");
            return;
        }
        e->reply[e->got++] = r;
        if (e->got == e->n) {
            if ((s->head = e->next) == NULL)
                s->tail = NULL;
            entry_finish(e);
        }
    }
}

/* Append s's queued entries to its output and write it. */
static void shared_flush(struct shared *s)
{
    struct redis_wait_entry *e, *next;

    for (e = s->queued; e; e = next) {
        next = e->next;
        e->next = NULL;
        redisAppendFormattedCommand(s->link.c, e->cmd, e->len);
        free(e->cmd);
        e->cmd = NULL;
        e->sent = 1;
        if (s->tail)
            s->tail->next = e;
        else
            s->head = e;
        s->tail = e;
    }
    s->queued = s->queued_tail = NULL;
    shared_write(s);
}

/* The turn's end: every queued entry's commands out, one write a server. */
static void shared_turn_end(void *arg)
{
    struct shared_set *set;
    int i;

    (void)arg;
    if (shared_loop != loop_self())
        return;
    for (set = shared_sets; set; set = set->next)
        for (i = 0; i < CONFIG_MAX_SERVERS; i++)
            if (set->s[i].queued && set->s[i].link.c)
                shared_flush(&set->s[i]);
}

/* Server i's shared connection of this loop, made (unconnected) if new;
 * the first on a loop hooks the loop's turn end. */
static struct shared *shared_of(struct lock_ctx *ctx, int server)
{
    struct shared_set *set;
    int i;

    if (shared_loop != loop_self()) {
        shared_sets = NULL;
        shared_loop = loop_self();
        loop_at_turn_end(shared_turn_end, NULL);
    }
    for (set = shared_sets; set && set->cfg != ctx->cfg; set = set->next)
        ;
    if (set == NULL) {
        set = xcalloc(1, sizeof *set);
        set->cfg = ctx->cfg;
        for (i = 0; i < ctx->cfg->nredis; i++)
            snprintf(set->s[i].name, sizeof set->s[i].name, "redis %s:%d",
                     ctx->cfg->redis[i].host, ctx->cfg->redis[i].port);
        set->next = shared_sets;
        shared_sets = set;
    }
    return &set->s[server];
}

void redis_loop_close(void)
{
    struct shared_set *set, *next;
    int i;

    if (shared_loop != loop_self())
        return;
    for (set = shared_sets; set; set = next) {
        next = set->next;
        for (i = 0; i < CONFIG_MAX_SERVERS; i++)
            shared_fail(&set->s[i], "the loop closed");
        free(set);
    }
    shared_sets = NULL;
    shared_loop = NULL;
}

/* Unlink e from s's queue (it never left). */
static void queue_remove(struct shared *s, struct redis_wait_entry *e)
{
    struct redis_wait_entry **pp, *prev = NULL;

    for (pp = &s->queued; *pp; prev = *pp, pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            if (s->queued_tail == e)
                s->queued_tail = prev;
            return;
        }
}

/* Connect s for the caller, the others queueing meanwhile: 0, or -1 with
 * the failure on ctx and every other queued entry failed. */
static int shared_connect(struct lock_ctx *ctx, struct shared *s, int server, int timeout_ms,
                          struct redis_wait_entry *mine)
{
    struct redis_set *rs = redis_set_of(ctx);
    int rc;

    s->connecting = 1;
    rc = link_connect(ctx, &s->link, server, timeout_ms, s->name, sizeof s->name);
    s->connecting = 0;
    if (rc != 0) {
        snprintf(rs->name[server], sizeof rs->name[server], "%s", s->name);
        ctx->backend = rs->name[server];
        queue_remove(s, mine);
        shared_fail(s, ctx->errstr);
        return -1;
    }
    s->rd = event_new(loop_base(), s->link.c->fd, EV_READ | EV_PERSIST, on_read, s);
    s->wr = event_new(loop_base(), s->link.c->fd, EV_WRITE | EV_PERSIST, on_write, s);
    event_add(s->rd, NULL);
    return 0;
}

/* Queue p's commands on server i's shared connection (connecting it if
 * nobody is): LL_OK, or the failure on ctx (nothing was sent). */
static int shared_send(struct redis_pipe *p)
{
    struct shared *s = shared_of(p->ctx, p->server);
    struct redis_wait_entry *e = xcalloc(1, sizeof *e);
    int64_t now = now_us();

    /* The oldest command sent has had its time: the connection is dead. */
    if (s->head && now - s->head->issued_us >= REDIS_CMD_TIMEOUT_MS * 1000LL)
        shared_fail(s, "no reply within the command timeout");
    e->task = task_self();
    e->cmd = p->buf;
    e->len = p->len;
    e->n = p->n;
    e->reply = xcalloc((size_t)p->n, sizeof *e->reply);
    e->issued_us = now;
    p->buf = NULL;
    p->entry = e;
    if (s->queued_tail)
        s->queued_tail->next = e;
    else
        s->queued = e;
    s->queued_tail = e;
    if (s->link.c == NULL && !s->connecting &&
        shared_connect(p->ctx, s, p->server, p->timeout_ms, e) != 0) {
        entry_free(e);
        p->entry = NULL;
        return p->ctx->err;
    }
    p->ctx->backend_ops++;
    return LL_OK;
}

/* Wait for p's entry: LL_OK with its replies in r, or LL_UNAVAILABLE. */
static int shared_recv(struct redis_pipe *p, redisReply **r)
{
    struct lock_ctx *ctx = p->ctx;
    struct shared *s = shared_of(ctx, p->server);
    struct redis_wait_entry *e = p->entry;
    struct redis_set *rs = redis_set_of(ctx);
    char why[128];

    while (e->got < e->n && !e->failed)
        if (!task_park(p->deadline_us) && e->got < e->n && !e->failed)
            break;
    p->entry = NULL;
    p->sent = e->sent;
    snprintf(rs->name[p->server], sizeof rs->name[p->server], "%s", s->name);
    if (e->got == e->n) {
        memcpy(r, e->reply, (size_t)e->n * sizeof *r);
        e->got = 0;                         /* the replies are the caller's now */
        entry_free(e);
        return LL_OK;
    }
    if (e->failed) {
        snprintf(why, sizeof why, "%s", e->why);
        entry_free(e);
    } else if (!e->sent) {                  /* still queued: it never leaves */
        snprintf(why, sizeof why, "no connection within %d ms", p->timeout_ms);
        queue_remove(s, e);
        entry_free(e);
    } else if (s->link.c && s->head &&
               now_us() - s->head->issued_us >= REDIS_CMD_TIMEOUT_MS * 1000LL) {
        snprintf(why, sizeof why, "no reply within %d ms", REDIS_CMD_TIMEOUT_MS);
        e->task = NULL;
        shared_fail(s, why);                /* frees e among the others */
    } else {                                /* our own shorter timeout */
        snprintf(why, sizeof why, "no reply within %d ms", p->timeout_ms);
        e->task = NULL;                     /* its replies will be thrown away */
    }
    return lock_error(ctx, LL_UNAVAILABLE, rs->name[p->server], "%s on %s failed: %s",
                      p->what, rs->name[p->server], why);
}

int redis_connect(struct lock_ctx *ctx, int server, int timeout_ms)
{
    struct shared *s;

    if (!use_shared(ctx))
        return own_link(ctx, server, timeout_ms) ? LL_OK : ctx->err;
    s = shared_of(ctx, server);
    if (s->link.c || s->connecting)
        return LL_OK;
    return shared_connect(ctx, s, server, timeout_ms, NULL) == 0 ? LL_OK : ctx->err;
}

/* ---------------------------------------------------------------- pipelines */

void redis_pipe_init(struct redis_pipe *p, struct lock_ctx *ctx, int server, int timeout_ms,
                     enum redis_via via, const char *what)
{
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->server = server;
    p->timeout_ms = timeout_ms;
    p->own = via == REDIS_OWN || !use_shared(ctx);
    p->what = what;
}

static void pipe_append(struct redis_pipe *p, const char *cmd, int len)
{
    assert(len > 0);            /* a format hiredis cannot read is a bug here */
    if (p->len + (size_t)len > p->cap) {
        size_t cap = p->cap ? p->cap : 256;
        char *buf;

        while (cap < p->len + (size_t)len)
            cap *= 2;
        buf = xmalloc(cap);
        if (p->len)
            memcpy(buf, p->buf, p->len);
        free(p->buf);
        p->buf = buf;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, cmd, (size_t)len);
    p->len += (size_t)len;
    p->n++;
}

static void pipe_addv(struct redis_pipe *p, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);

    pipe_append(p, cmd, len);
    redisFreeCommand(cmd);
}

void redis_pipe_add(struct redis_pipe *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    pipe_addv(p, fmt, ap);
    va_end(ap);
}

void redis_pipe_argv(struct redis_pipe *p, int argc, const char **argv)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);

    pipe_append(p, cmd, len);
    redisFreeCommand(cmd);
}

/* A failure of p's own connection: dropped, recorded on ctx. */
static int own_failed(struct redis_pipe *p, const char *why)
{
    struct redis_set *rs = redis_set_of(p->ctx);
    struct redis_link *l = &rs->link[p->server];

    link_forget(l, why);
    return lock_error(p->ctx, LL_UNAVAILABLE, rs->name[p->server], "%s on %s failed: %s",
                      p->what, rs->name[p->server], l->lasterr);
}

int redis_pipe_send(struct redis_pipe *p)
{
    redisContext *c;
    char why[128];

    assert(p->n > 0);
    p->deadline_us = now_us() + p->timeout_ms * 1000LL;
    if (!p->own)
        return shared_send(p);
    if ((c = own_link(p->ctx, p->server, p->timeout_ms)) == NULL)
        return p->ctx->err;
    p->ctx->backend_ops++;
    redisAppendFormattedCommand(c, p->buf, p->len);
    free(p->buf);
    p->buf = NULL;
    p->sent = 1;
    if (write_out(c, p->deadline_us, why, sizeof why) != 0)
        return own_failed(p, why);
    return LL_OK;
}

int redis_pipe_recv(struct redis_pipe *p, redisReply **r)
{
    redisContext *c = redis_set_of(p->ctx)->link[p->server].c;
    char why[128];
    int i, k;

    if (!p->own)
        return shared_recv(p, r);
    if (c == NULL)
        return own_failed(p, "connection lost");
    for (i = 0; i < p->n; i++)
        if (read_reply(c, p->deadline_us, &r[i], why, sizeof why) != 0) {
            for (k = 0; k < i; k++)
                freeReplyObject(r[k]);
            return own_failed(p, why);
        }
    return LL_OK;
}

int redis_pipe_run(struct redis_pipe *p, redisReply **r)
{
    int rc = redis_pipe_send(p);

    if (rc != LL_OK) {
        redis_pipe_free(p);
        return rc;
    }
    return redis_pipe_recv(p, r);
}

void redis_pipe_free(struct redis_pipe *p)
{
    free(p->buf);
    p->buf = NULL;
    if (p->entry) {             /* sent and not read: its replies are nobody's */
        struct redis_wait_entry *e = p->entry;

        if (e->got == e->n || e->failed)
            entry_free(e);      /* finished, and off the connection's lists */
        else if (e->sent)
            e->task = NULL;     /* the reader frees it */
        else {
            queue_remove(shared_of(p->ctx, p->server), e);
            entry_free(e);
        }
        p->entry = NULL;
    } else if (p->own && p->sent && redis_set_of(p->ctx)->link[p->server].c) {
        link_forget(&redis_set_of(p->ctx)->link[p->server], "replies left unread");
    }
}

int redis_pipe_drop(struct redis_pipe *p)
{
    struct redis_set *rs = redis_set_of(p->ctx);
    int rc;

    if (p->own) {
        rc = own_failed(p, "dropped (?lose_answer)");
    } else {
        shared_fail(shared_of(p->ctx, p->server), "dropped (?lose_answer)");
        rc = lock_error(p->ctx, LL_UNAVAILABLE, rs->name[p->server], "%s on %s failed: %s",
                        p->what, rs->name[p->server], "dropped");
    }
    redis_pipe_free(p);
    return rc;
}

void redis_replies_free(redisReply **r, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (r[i])
            freeReplyObject(r[i]);
}

/* ---------------------------------------------------------------- commands */

static redisReply *run_one(struct redis_pipe *p, int *sent)
{
    redisReply *r = NULL;
    int rc = redis_pipe_run(p, &r);

    if (sent)
        *sent = p->sent;
    return rc == LL_OK ? r : NULL;
}

redisReply *redis_cmd(struct lock_ctx *ctx, int server, const char *fmt, ...)
{
    struct redis_pipe p;
    va_list ap;

    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY,
                    strchr(fmt, ' ') ? "command" : fmt);
    va_start(ap, fmt);
    pipe_addv(&p, fmt, ap);
    va_end(ap);
    return run_one(&p, NULL);
}

redisReply *redis_cmd_argv(struct lock_ctx *ctx, int server, int argc, const char **argv)
{
    struct redis_pipe p;

    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, argv[0]);
    redis_pipe_argv(&p, argc, argv);
    return run_one(&p, NULL);
}

int redis_is_error(const redisReply *r, const char *prefix)
{
    return r->type == REDIS_REPLY_ERROR && r->str &&
           strncmp(r->str, prefix, strlen(prefix)) == 0;
}

static pthread_mutex_t script_lock = PTHREAD_MUTEX_INITIALIZER;

/* s's SHA1 into sha: SCRIPT LOAD once per process; empty if the server
 * refused. 0, or -1 when the server could not be asked. */
static int script_sha(struct lock_ctx *ctx, int server, struct redis_script *s, char sha[41])
{
    struct redis_pipe p;
    redisReply *r;

    pthread_mutex_lock(&script_lock);
    memcpy(sha, s->sha, 41);
    pthread_mutex_unlock(&script_lock);
    if (sha[0])
        return 0;
    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, "EVALSHA");
    redis_pipe_add(&p, "SCRIPT LOAD %s", s->text);
    if ((r = run_one(&p, NULL)) == NULL)
        return -1;
    if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        pthread_mutex_lock(&script_lock);
        memcpy(s->sha, r->str, 40);
        s->sha[40] = '\0';
        memcpy(sha, s->sha, 41);
        pthread_mutex_unlock(&script_lock);
    }
    freeReplyObject(r);
    return 0;
}

redisReply *redis_eval_sent(struct lock_ctx *ctx, int server, struct redis_script *s,
                            int nkeys, int argc, const char **argv, int *sent)
{
    const char *args[REDIS_EVAL_ARGS + 3];
    struct redis_pipe p;
    char sha[41], nk[12];
    redisReply *r;
    int i, was = 0;

    assert(argc + 3 <= (int)(sizeof args / sizeof args[0]));
    if (sent)
        *sent = 0;
    if (script_sha(ctx, server, s, sha) < 0)
        return NULL;
    snprintf(nk, sizeof nk, "%d", nkeys);
    args[1] = sha;
    args[2] = nk;
    for (i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    if (sha[0]) {
        args[0] = "EVALSHA";
        redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, "EVALSHA");
        redis_pipe_argv(&p, argc + 3, args);
        r = run_one(&p, &was);
        if (sent)
            *sent = was;
        if (r == NULL || !redis_is_error(r, "NOSCRIPT"))
            return r;
        freeReplyObject(r);     /* a restarted server: send the source */
    }
    args[0] = "EVAL";
    args[1] = s->text;
    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, "EVALSHA");
    redis_pipe_argv(&p, argc + 3, args);
    r = run_one(&p, &was);
    if (sent)
        *sent = was;
    return r;
}

redisReply *redis_eval(struct lock_ctx *ctx, int server, struct redis_script *s,
                       int nkeys, int argc, const char **argv)
{
    return redis_eval_sent(ctx, server, s, nkeys, argc, argv, NULL);
}

const char *redis_name(struct lock_ctx *ctx, int server)
{
    struct redis_set *rs = redis_set_of(ctx);

    if (use_shared(ctx))
        snprintf(rs->name[server], sizeof rs->name[server], "%s",
                 shared_of(ctx, server)->name);
    return rs->name[server];
}

int redis_drop(struct lock_ctx *ctx, int server, const char *what)
{
    struct redis_set *rs = redis_set_of(ctx);
    struct redis_link *l;
    const char *name = redis_name(ctx, server);

    if (use_shared(ctx)) {
        l = &shared_of(ctx, server)->link;
        shared_fail(shared_of(ctx, server), "dropped");
    } else {
        l = &rs->link[server];
        link_forget(l, NULL);
    }
    return lock_error(ctx, LL_UNAVAILABLE, name, "%s on %s failed: %s", what, name, l->lasterr);
}

int redis_reply_error(struct lock_ctx *ctx, int server, redisReply *r, const char *key)
{
    const char *name = redis_name(ctx, server);
    int rc;

    if (redis_is_error(r, "WRONGTYPE"))
        rc = lock_error(ctx, LL_ERROR, name, "%s on %s holds another strategy's key type (%s); "
                        "POST /stock/reset clears it", key, name, r->str);
    else if (redis_is_error(r, "LOADING") || redis_is_error(r, "BUSY") ||
             redis_is_error(r, "MASTERDOWN"))
        rc = lock_error(ctx, LL_UNAVAILABLE, name, "%s: %s", name, r->str);
    else if (redis_is_error(r, "READONLY")) {      /* a demoted master: ask again */
        rc = lock_error(ctx, LL_UNAVAILABLE, name, "%s is a replica now (a failover): %s",
                        name, r->str);
        if (use_shared(ctx))
            shared_fail(shared_of(ctx, server), "a replica now (READONLY)");
        else
            link_forget(&redis_set_of(ctx)->link[server], r->str);
    } else
        rc = lock_error(ctx, LL_ERROR, name, "%s on %s: %s", key, name,
                        r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply type");
    freeReplyObject(r);
    return rc;
}
