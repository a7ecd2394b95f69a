/* redis_shared.c — the loop's shared connections of the Redis client (see
 * redis.h for when a command takes one; redis.c hands it the pipeline,
 * redis_link.c connects it).
 *
 * One connection per server per loop (per configuration: an instance has
 * one), driven by the loop rather than by its callers. A caller's commands
 * (one pipeline) become an entry, queued. The loop's turn-end hook
 * appends every queued entry's commands to hiredis's output buffer and
 * writes it once (a write event finishes what the socket did not take),
 * moving the entries to the FIFO of those sent. A persistent read event
 * hands each reply to the entry at the head of that FIFO, in order, and
 * wakes its caller (task_wake) once all of its replies are there: so the
 * commands of every coroutine of a turn cost one write, and no caller's
 * reply can reach another. The caller parks meanwhile (task_park, with its
 * command's deadline).
 *
 * The first caller that finds the connection down connects it, parked
 * (the Sentinel's answer, the connect); those who come meanwhile queue
 * behind it, and a failed connect fails them all. A transport error (read,
 * write, EOF), or a caller whose deadline passes while the oldest entry
 * sent has waited REDIS_CMD_TIMEOUT_MS, fails every entry with
 * LL_UNAVAILABLE and closes the connection; the next command reconnects.
 * A caller with a shorter timeout of its own (Redlock's) gives up alone:
 * its entry stays in the FIFO to swallow its replies, and is freed by
 * whoever finishes it. Everything here runs on the loop's thread.
 */
#include "redis_shared.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One caller's commands on a shared connection. Freed by the caller once
 * answered or failed, or, when the caller gave up first (task NULL), by
 * whoever finishes it. */
struct redis_wait_entry {
    struct redis_wait_entry *next;
    struct shared *s;               /* the connection it is on                */
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

/* One server's shared connection on a loop. */
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

/* ---------------------------------------------------------------- entries */

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
        redis_link_forget(&s->link, why);
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

/* ---------------------------------------------------------------- the loop's side: writes, replies, the turn's end */

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

/* ---------------------------------------------------------------- the connections of a loop */

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

void redis_shared_close(void)
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

/* ---------------------------------------------------------------- the callers' side */

/* Connect s for the caller, the others queueing meanwhile: 0, or -1 with
 * the failure on ctx and every other queued entry failed. */
static int shared_connect(struct lock_ctx *ctx, struct shared *s, int server, int timeout_ms,
                          struct redis_wait_entry *mine)
{
    int rc;

    s->connecting = 1;
    rc = redis_link_connect(ctx, &s->link, server, timeout_ms, s->name, sizeof s->name);
    s->connecting = 0;
    if (rc != 0) {
        queue_remove(s, mine);
        shared_fail(s, ctx->errstr);
        return -1;
    }
    s->rd = event_new(loop_base(), s->link.c->fd, EV_READ | EV_PERSIST, on_read, s);
    s->wr = event_new(loop_base(), s->link.c->fd, EV_WRITE | EV_PERSIST, on_write, s);
    event_add(s->rd, NULL);
    return 0;
}

int redis_shared_send(struct lock_ctx *ctx, int server, int timeout_ms, char *buf,
                      size_t len, int n, struct redis_wait_entry **entry)
{
    struct shared *s = shared_of(ctx, server);
    struct redis_wait_entry *e = xcalloc(1, sizeof *e);
    int64_t now = now_us();

    /* The oldest command sent has had its time: the connection is dead. */
    if (s->head && now - s->head->issued_us >= REDIS_CMD_TIMEOUT_MS * 1000LL)
        shared_fail(s, "no reply within the command timeout");
    e->s = s;
    e->task = task_self();
    e->cmd = buf;
    e->len = len;
    e->n = n;
    e->reply = xcalloc((size_t)n, sizeof *e->reply);
    e->issued_us = now;
    if (s->queued_tail)
        s->queued_tail->next = e;
    else
        s->queued = e;
    s->queued_tail = e;
    *entry = NULL;
    if (s->link.c == NULL && !s->connecting &&
        shared_connect(ctx, s, server, timeout_ms, e) != 0) {
        entry_free(e);
        return -1;
    }
    ctx->backend_ops++;
    *entry = e;
    return 0;
}

int redis_shared_recv(struct redis_wait_entry *e, int64_t deadline_us, int timeout_ms,
                      redisReply **r, int *sent, char *why, size_t len)
{
    struct shared *s = e->s;

    while (e->got < e->n && !e->failed)
        if (!task_park(deadline_us) && e->got < e->n && !e->failed)
            break;
    *sent = e->sent;
    if (e->got == e->n) {
        memcpy(r, e->reply, (size_t)e->n * sizeof *r);
        e->got = 0;                         /* the replies are the caller's now */
        entry_free(e);
        return 0;
    }
    if (e->failed) {
        snprintf(why, len, "%s", e->why);
        entry_free(e);
    } else if (!e->sent) {                  /* still queued: it never leaves */
        snprintf(why, len, "no connection within %d ms", timeout_ms);
        queue_remove(s, e);
        entry_free(e);
    } else if (s->link.c && s->head &&
               now_us() - s->head->issued_us >= REDIS_CMD_TIMEOUT_MS * 1000LL) {
        snprintf(why, len, "no reply within %d ms", REDIS_CMD_TIMEOUT_MS);
        e->task = NULL;
        shared_fail(s, why);                /* frees e among the others */
    } else {                                /* our own shorter timeout */
        snprintf(why, len, "no reply within %d ms", timeout_ms);
        e->task = NULL;                     /* its replies will be thrown away */
    }
    return -1;
}

void redis_shared_abandon(struct redis_wait_entry *e)
{
    if (e->got == e->n || e->failed)
        entry_free(e);          /* finished, and off the connection's lists */
    else if (e->sent)
        e->task = NULL;         /* the reader frees it */
    else {
        queue_remove(e->s, e);
        entry_free(e);
    }
}

int redis_shared_connect(struct lock_ctx *ctx, int server, int timeout_ms)
{
    struct shared *s = shared_of(ctx, server);

    if (s->link.c || s->connecting)
        return LL_OK;
    return shared_connect(ctx, s, server, timeout_ms, NULL) == 0 ? LL_OK : ctx->err;
}

void redis_shared_fail(struct lock_ctx *ctx, int server, const char *why)
{
    shared_fail(shared_of(ctx, server), why);
}

const char *redis_shared_name(struct lock_ctx *ctx, int server)
{
    return shared_of(ctx, server)->name;
}
