/* redis_pubsub.c — one subscription per channel per process, shared by
 * every waiting slot, as Redisson's LockPubSub does.
 *
 * Why not a subscription per waiting slot: every waiter would wake at
 * every release and race to the lock — a herd of --threads × instances
 * script calls per sale. Redisson instead keeps one pub/sub connection per
 * client, subscribes to a lock's channel once and turns each unlock message
 * into one permit of a semaphore: one waiter per process wakes and tries,
 * the others sleep on until their PTTL or the next message. We do the same.
 *
 * A dispatcher thread (started lazily, pthread_once) owns the connection to
 * server 0 and is the only thread that touches it: waiters register a
 * channel in a table under a mutex and poke the dispatcher through a pipe;
 * the dispatcher sends SUBSCRIBE, marks the channel subscribed when Redis
 * confirms, and for every "message" on it adds one permit (at most one per
 * registered waiter) and signals that channel's condition variable.
 * Channels stay subscribed once used (a product's channel, or a fair-lock
 * waiter's): there are few, and an idle channel costs one small message per
 * release. When the connection breaks, every channel is marked unsubscribed
 * and waiters fail over to their own timed retries (the PTTL they got); the
 * dispatcher reconnects (throttled) and subscribes again.
 *
 * A waiter must be subscribed before it tries the lock the second time, or
 * a release between its failed try and its subscription would go unseen:
 * redis_sub_join() returns only once Redis confirmed the subscription.
 */
#include "redis_private.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SUB_MAX 512     /* channels per process; beyond, waiters poll by PTTL */

struct redis_waiter;

struct redis_sub {
    char           channel[160];
    int            waiters;      /* slots waiting on it now                */
    struct redis_waiter *head, *tail;   /* those waiters, first come first */
    int            subscribed;   /* Redis confirmed SUBSCRIBE              */
    int            requested;    /* SUBSCRIBE sent, confirmation pending   */
    int            permits;      /* messages not yet consumed by a waiter  */
    int            echoes;       /* messages to swallow: releases here     */
    int            streak;       /* local wake-ups in a row                */
    enum redis_wake wake;        /* how many waiters a message wakes       */
    pthread_cond_t cv;
};

static struct {
    pthread_mutex_t   mu;
    struct redis_sub *sub[SUB_MAX];
    int               nsub;
    unsigned          broken;    /* bumped at every lost connection        */
    int               up;        /* the connection is established          */
    int64_t           retry_at_ms;
    char              lasterr[128];
    char              name[80];
    int               poke[2];   /* pipe: waiters -> dispatcher            */
    const struct config *cfg;
} ps = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* A slot waiting on a channel, from redis_sub_join() to redis_sub_leave(),
 * in the channel's line. The permits go down the line: the first `permits`
 * waiters may take one, the others sleep on, each on a condition variable
 * of its own so that a message wakes only the one it is for. A waiter that
 * took a permit and lost the lock again (to another instance, or to a
 * request that tried on arrival) keeps its place at the head: within an
 * instance the lock goes to the one that has waited longest. Taken by
 * whoever woke first, as before, a permit went to a random waiter, and one
 * that lost its try went back among all the others: with 20 waiters an
 * instance, requests waited 20 times the mean in the tail, past a 10 s wait
 * when a sale took 20 ms (hybrid on cold ZooKeeper JVMs, #30). */
struct redis_waiter {
    struct redis_sub    *sub;
    struct redis_waiter *next, *prev;
    pthread_cond_t       cv;
};

static pthread_once_t ps_once = PTHREAD_ONCE_INIT;
static _Atomic(const struct config *) ps_cfg;

static void cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

static struct timespec deadline_ts(int64_t at_ms)
{
    struct timespec ts = { at_ms / 1000, (at_ms % 1000) * 1000000 };
    return ts;
}

static void poke(void)
{
    char b = 1;
    ssize_t n = write(ps.poke[1], &b, 1);
    (void)n;            /* a full pipe already holds a poke */
}

/* ---------------------------------------------------------------- dispatcher */

/* Under ps.mu: may w take a permit of its channel (is it among the first
 * `permits` waiters of the line)? */
static int allowed(const struct redis_waiter *w)
{
    const struct redis_waiter *x = w->sub->head;
    int i;

    for (i = 0; x != NULL && i < w->sub->permits; i++, x = x->next)
        if (x == w)
            return 1;
    return 0;
}

/* Under ps.mu: wake the waiters that may take a permit now. */
static void wake_allowed(struct redis_sub *s)
{
    struct redis_waiter *x = s->head;
    int i;

    for (i = 0; x != NULL && i < s->permits; i++, x = x->next)
        pthread_cond_signal(&x->cv);
}

/* Under ps.mu: wake every waiter of s (the connection broke). */
static void wake_all(struct redis_sub *s)
{
    struct redis_waiter *x;

    pthread_cond_broadcast(&s->cv);
    for (x = s->head; x != NULL; x = x->next)
        pthread_cond_signal(&x->cv);
}

/* Under ps.mu: every channel needs subscribing again. A failed connect
 * holds off the next one for REDIS_RECONNECT_MS; a lost connection (a
 * failover's CLIENT KILL, a restart) is followed by a connect at once, as
 * the slots' connections are (redis_conn.c). */
static void mark_broken(const char *why, int connect_failed)
{
    int i;

    snprintf(ps.lasterr, sizeof ps.lasterr, "%s", why);
    ps.up = 0;
    ps.broken++;
    ps.retry_at_ms = now_ms() + (connect_failed ? REDIS_RECONNECT_MS : 0);
    for (i = 0; i < ps.nsub; i++) {
        ps.sub[i]->subscribed = ps.sub[i]->requested = ps.sub[i]->echoes = 0;
        wake_all(ps.sub[i]);
    }
}

static struct redis_sub *find(const char *channel)
{
    int i;

    for (i = 0; i < ps.nsub; i++)
        if (strcmp(ps.sub[i]->channel, channel) == 0)
            return ps.sub[i];
    return NULL;
}

/* One permit for a waiter of s, as a message gives. Under ps.mu. */
static void grant(struct redis_sub *s)
{
    if (s->permits < s->waiters) {
        s->permits++;
        wake_allowed(s);
    }
}

/* How many waiters a message wakes, as the Redisson pub/sub class of the
 * channel's object decides (redis_private.h, enum redis_wake). */
static int wake_count(const struct redis_sub *s, const char *msg)
{
    long n;

    switch (s->wake) {
    case REDIS_WAKE_RWLOCK:             /* LockPubSub: 1 = a writer left    */
        return strcmp(msg, "1") == 0 ? s->waiters : 1;
    case REDIS_WAKE_LATCH:              /* CountDownLatchPubSub: 0 = open   */
        return strcmp(msg, "0") == 0 ? s->waiters : 0;
    case REDIS_WAKE_VALUE:              /* SemaphorePubSub: permits now free */
        n = strtol(msg, NULL, 10);
        return n < 0 ? 0 : n > s->waiters ? s->waiters : (int)n;
    case REDIS_WAKE_ONE:
    default:
        return 1;
    }
}

/* A message of another kind than the lock's: wake as many as it says. */
static void grant_many(struct redis_sub *s, int n)
{
    if (n <= 0)
        return;
    s->permits += n;
    if (s->permits > s->waiters)
        s->permits = s->waiters;
    wake_allowed(s);
}

/* A reply on the subscription: a confirmation or a message. Under ps.mu. */
static void on_reply(const redisReply *r)
{
    struct redis_sub *s;
    const char *kind;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0]->str;
    if ((s = find(r->element[1]->str)) == NULL)
        return;
    if (strcmp(kind, "subscribe") == 0) {
        s->subscribed = 1;
        pthread_cond_broadcast(&s->cv);
    } else if (strcmp(kind, "message") == 0 && s->wake != REDIS_WAKE_ONE && s->echoes > 0) {
        s->echoes--;                    /* a release here woke its waiters already */
    } else if (strcmp(kind, "message") == 0 && s->wake != REDIS_WAKE_ONE) {
        if (r->element[2]->type == REDIS_REPLY_STRING)
            grant_many(s, wake_count(s, r->element[2]->str));
    } else if (strcmp(kind, "message") == 0 && s->echoes > 0) {
        s->echoes--;                    /* a release here woke one already */
    } else if (strcmp(kind, "message") == 0) {
        grant(s);                       /* one waiter, like a semaphore */
    }
}

/* Send SUBSCRIBE for every channel not yet requested. Under ps.mu. */
static int subscribe_pending(redisContext *c)
{
    int i, done = 0;

    for (i = 0; i < ps.nsub; i++)
        if (!ps.sub[i]->requested) {
            if (redisAppendCommand(c, "SUBSCRIBE %s", ps.sub[i]->channel) != REDIS_OK)
                return -1;
            ps.sub[i]->requested = 1;
        }
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            return -1;
    return 0;
}

static redisContext *dispatcher_connect(void)
{
    struct timeval tv = { REDIS_CMD_TIMEOUT_MS / 1000, (REDIS_CMD_TIMEOUT_MS % 1000) * 1000 };
    struct hostport hp;
    redisContext *c;

    redis_server_addr(ps.cfg, 0, &hp);          /* the master now (Sentinel) */
    c = redisConnectWithTimeout(hp.host, hp.port, tv);

    pthread_mutex_lock(&ps.mu);
    if (c == NULL || c->err) {
        mark_broken(c ? c->errstr : "out of memory", 1);
        if (c)
            redisFree(c);
        c = NULL;
    } else {
        redisSetTimeout(c, tv);
        ps.up = 1;
    }
    pthread_mutex_unlock(&ps.mu);
    return c;
}

static void *dispatcher_main(void *arg)
{
    redisContext *c = NULL;
    struct pollfd pfd[2];
    char buf[64];
    void *reply;
    int n, rc;

    (void)arg;
    for (;;) {
        if (c == NULL) {
            int64_t wait = ps.retry_at_ms - now_ms();
            if (wait > 0) {
                pfd[0].fd = ps.poke[0];
                pfd[0].events = POLLIN;
                poll(pfd, 1, (int)wait);
                while (read(ps.poke[0], buf, sizeof buf) > 0)
                    ;
                continue;
            }
            if ((c = dispatcher_connect()) == NULL)
                continue;
        }
        pthread_mutex_lock(&ps.mu);
        rc = subscribe_pending(c);
        pthread_mutex_unlock(&ps.mu);
        if (rc == 0) {
            pfd[0].fd = ps.poke[0];
            pfd[0].events = POLLIN;
            pfd[1].fd = c->fd;
            pfd[1].events = POLLIN;
            pfd[0].revents = pfd[1].revents = 0;
            n = poll(pfd, 2, 1000);
            if (n < 0 && errno != EINTR)
                rc = -1;
            if (n > 0 && pfd[0].revents)
                while (read(ps.poke[0], buf, sizeof buf) > 0)
                    ;
            if (n > 0 && pfd[1].revents && redisBufferRead(c) != REDIS_OK)
                rc = -1;
        }
        pthread_mutex_lock(&ps.mu);
        while (rc == 0) {
            reply = NULL;
            if (redisGetReplyFromReader(c, &reply) != REDIS_OK)
                rc = -1;
            else if (reply == NULL)
                break;
            else {
                on_reply(reply);
                freeReplyObject(reply);
            }
        }
        if (rc != 0) {
            mark_broken(c->errstr[0] ? c->errstr : "connection lost", 0);
            redisFree(c);
            c = NULL;
        }
        pthread_mutex_unlock(&ps.mu);
    }
    return NULL;
}

static void pubsub_start(void)
{
    const struct config *cfg = atomic_load(&ps_cfg);
    pthread_t tid;

    ps.cfg = cfg;
    snprintf(ps.name, sizeof ps.name, "redis %s:%d", cfg->redis[0].host, cfg->redis[0].port);
    if (pipe(ps.poke) != 0 || fcntl(ps.poke[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(ps.poke[1], F_SETFL, O_NONBLOCK) != 0 ||
        pthread_create(&tid, NULL, dispatcher_main, NULL) != 0) {
        fprintf(stderr, "locklab: cannot start the Redis pub/sub dispatcher\n");
        abort();
    }
    pthread_detach(tid);
}

/* ---------------------------------------------------------------- waiters */

int redis_sub_join(struct lock_ctx *ctx, const char *channel, struct redis_waiter **out)
{
    return redis_sub_join_as(ctx, channel, REDIS_WAKE_ONE, out);
}

int redis_sub_join_as(struct lock_ctx *ctx, const char *channel, enum redis_wake wake,
                      struct redis_waiter **out)
{
    struct redis_waiter *w;
    struct redis_sub *s;
    struct timespec ts;
    unsigned broken;
    int rc = LL_OK;

    atomic_store(&ps_cfg, ctx->cfg);
    pthread_once(&ps_once, pubsub_start);
    *out = NULL;
    pthread_mutex_lock(&ps.mu);
    if ((s = find(channel)) == NULL) {
        if (ps.nsub == SUB_MAX) {
            pthread_mutex_unlock(&ps.mu);
            return LL_OK;       /* no channel: the caller waits by PTTL */
        }
        s = xcalloc(1, sizeof *s);
        snprintf(s->channel, sizeof s->channel, "%s", channel);
        s->wake = wake;
        cond_init_monotonic(&s->cv);
        ps.sub[ps.nsub++] = s;
    }
    s->waiters++;
    if (!s->subscribed && !ps.up && now_ms() < ps.retry_at_ms) {
        s->waiters--;
        rc = lock_error(ctx, LL_UNAVAILABLE, ps.name, "%s is down: %s", ps.name, ps.lasterr);
    } else if (!s->subscribed) {
        ctx->backend_ops++;
        poke();
        broken = ps.broken;
        ts = deadline_ts(ctx->deadline_ms);
        while (!s->subscribed && ps.broken == broken)
            if (pthread_cond_timedwait(&s->cv, &ps.mu, &ts) == ETIMEDOUT)
                break;
        if (!s->subscribed) {
            s->waiters--;
            rc = ps.broken != broken
                ? lock_error(ctx, LL_UNAVAILABLE, ps.name, "SUBSCRIBE on %s failed: %s",
                             ps.name, ps.lasterr)
                : lock_error(ctx, LL_TIMEOUT, NULL, "lock not obtained before the deadline "
                             "(no pub/sub confirmation from %s)", ps.name);
        }
    }
    if (rc == LL_OK) {          /* at the end of the line */
        w = xcalloc(1, sizeof *w);
        w->sub = s;
        cond_init_monotonic(&w->cv);
        w->prev = s->tail;
        if (s->tail)
            s->tail->next = w;
        else
            s->head = w;
        s->tail = w;
        *out = w;
    }
    pthread_mutex_unlock(&ps.mu);
    return rc;
}

int redis_sub_wait(struct lock_ctx *ctx, struct redis_waiter *w, int64_t ms)
{
    struct redis_sub *s;
    struct timespec ts;
    int64_t until = now_ms() + ms;

    if (w == NULL) {            /* no channel: sleep, bounded by the caller */
        sleep_us(ms * 1000);
        return LL_OK;
    }
    s = w->sub;
    ts = deadline_ts(until);
    pthread_mutex_lock(&ps.mu);
    while (!allowed(w) && s->subscribed)
        if (pthread_cond_timedwait(&w->cv, &ps.mu, &ts) == ETIMEDOUT)
            break;
    if (allowed(w)) {
        s->permits--;
        ctx->wakeups++;
    }
    pthread_mutex_unlock(&ps.mu);
    if (!s->subscribed) {       /* connection lost: wait out the PTTL */
        int64_t left = until - now_ms();
        if (left > 0)
            sleep_us((left < 50 ? left : 50) * 1000);
    }
    return LL_OK;
}

void redis_sub_leave(struct redis_waiter *w)
{
    struct redis_sub *s;

    if (w == NULL)
        return;
    s = w->sub;
    pthread_mutex_lock(&ps.mu);
    if (w->prev)
        w->prev->next = w->next;
    else
        s->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        s->tail = w->prev;
    s->waiters--;
    if (s->permits > s->waiters)
        s->permits = s->waiters;
    wake_allowed(s);            /* a permit it left goes to the next in line */
    pthread_mutex_unlock(&ps.mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

struct redis_sub *redis_sub_releasing(const char *channel)
{
    struct redis_sub *s;

    if (atomic_load(&ps_cfg) == NULL)
        return NULL;            /* nobody here ever waited */
    pthread_mutex_lock(&ps.mu);
    if ((s = find(channel)) != NULL && s->subscribed)
        s->echoes++;            /* before the message can possibly arrive */
    else
        s = NULL;
    pthread_mutex_unlock(&ps.mu);
    return s;
}

void redis_sub_released(struct redis_sub *s, int published)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&ps.mu);
    if (published && s->permits < s->waiters && lock_poll_announce(&s->streak)) {
        grant(s);               /* now; the echo will swallow our message */
    } else if (s->echoes > 0) {
        s->echoes--;            /* the message is to wake a waiter, as usual */
    } else {
        grant(s);               /* a message already spent on the echo: pass it on */
    }
    pthread_mutex_unlock(&ps.mu);
}

void redis_sub_released_msg(struct redis_sub *s, int published, const char *msg)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&ps.mu);
    if (published && s->echoes > 0) {
        grant_many(s, wake_count(s, msg));  /* now; the echo swallows the message */
    } else if (s->echoes > 0) {
        s->echoes--;                    /* nothing was published */
    } else if (published) {
        grant_many(s, wake_count(s, msg));  /* the message came first, spent on the echo */
    }
    pthread_mutex_unlock(&ps.mu);
}

int redis_sub_ready(const char *channel)
{
    struct redis_sub *s;
    int ready;

    if (atomic_load(&ps_cfg) == NULL)
        return 0;
    pthread_mutex_lock(&ps.mu);
    ready = (s = find(channel)) != NULL && s->subscribed;
    pthread_mutex_unlock(&ps.mu);
    return ready;
}
