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
 * Where a channel is subscribed: on the node whose master holds the
 * channel's slot, one pub/sub connection per node, as Redisson's cluster
 * mode does. Redisson's channels carry the object's name as a hash tag
 * (redisson_lock__channel:{lock:P}, a fair waiter's …:{lock:P}:<field>),
 * so that node is the one whose script PUBLISHes the message, and the
 * message reaches its subscriber without crossing the cluster bus (0.7 ms
 * at the median there, but a tail of 35-38 ms, which every hand-over of
 * the fair lock paid in turn: issue 33). On one server (or behind the
 * Sentinels) there is one node, server 0. A channel's node is found when a
 * waiter joins it (the slot map of clients/redis_cluster.c): a channel
 * whose slot moved (a reshard, a failover) follows it when a waiter joins
 * it again with nobody waiting on it, or when its connection breaks; until
 * then it stays where it was, which loses nothing, since Redis Cluster's
 * PUBLISH reaches every node (the message crosses the bus again). Plain
 * SUBSCRIBE, not Redis 7's SSUBSCRIBE, for that reason: a sharded channel
 * is dropped (sunsubscribe) when its slot moves, and Java clients of the
 * same locks PUBLISH.
 *
 * A dispatcher per connection (started lazily, as a task_background(): a
 * coroutine on the loop of the first waiter, or a thread of its own where
 * there is none) owns it: it connects, reads and closes it. Waiters
 * register a channel in a table under a mutex and, when the connection is
 * up, append its SUBSCRIBE to the connection's output and write it out
 * themselves, without waiting (what the socket does not take the
 * dispatcher writes, waiting for it to be writable); every use of a
 * connection is under that mutex, which is never held across a wait.
 * The dispatcher marks the channel subscribed when Redis confirms, and for
 * every "message" on it adds one permit (at most one per registered
 * waiter) and signals that channel's wait_cond; a confirmation or message
 * on a connection the channel has left since is ignored.
 * Channels stay subscribed once used (a product's channel, or a fair-lock
 * waiter's): there are few, and an idle channel costs one small message per
 * release. When a connection breaks, its channels are marked unsubscribed
 * and their waiters fail over to their own timed retries (the PTTL they
 * got); the dispatcher reconnects (throttled) and subscribes again those
 * still on it, and on a cluster the slot map is asked for again.
 *
 * A waiter must be subscribed before it tries the lock the second time, or
 * a release between its failed try and its subscription would go unseen:
 * redis_sub_join() returns only once Redis confirmed the subscription.
 */
#include "redis_private.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUB_MAX 512     /* channels per process; beyond, waiters poll by PTTL */

struct redis_sub {
    char           channel[160];
    int            conn;         /* its connection (node); -1: none yet    */
    int            waiters;      /* slots waiting on it now                */
    int            subscribed;   /* Redis confirmed SUBSCRIBE              */
    int            requested;    /* SUBSCRIBE sent, confirmation pending   */
    int            permits;      /* messages not yet consumed by a waiter  */
    int            echoes;       /* messages to swallow: releases here     */
    int            streak;       /* local wake-ups in a row                */
    enum redis_wake wake;        /* how many waiters a message wakes       */
    struct wait_cond cv;
};

/* The pub/sub connection to one node (on one server: node 0). */
struct ps_conn {
    int               node;
    int               started;   /* its dispatcher runs                    */
    unsigned          broken;    /* bumped at every lost connection        */
    int               up;        /* the connection is established          */
    int64_t           retry_at_ms;
    char              lasterr[128];
    char              name[80];
    redisContext     *c;         /* the connection, while up               */
};

static struct {
    pthread_mutex_t   mu;
    struct redis_sub *sub[SUB_MAX];
    int               nsub;
    struct ps_conn    conn[CONFIG_MAX_SERVERS];
    const struct config *cfg;
} ps = { .mu = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t ps_once = PTHREAD_ONCE_INIT;
static _Atomic(const struct config *) ps_cfg;

/* ---------------------------------------------------------------- dispatcher */

/* Where node k is now: on one server the master (the Sentinels'), on a
 * cluster node k of the map's table. */
static void conn_addr(const struct ps_conn *pc, struct hostport *hp)
{
    if (redis_cluster_on(ps.cfg))
        redis_cluster_addr(ps.cfg, pc->node, hp);
    else
        redis_server_addr(ps.cfg, 0, hp);
}

/* Under ps.mu: every channel of pc needs subscribing again. A failed
 * connect holds off the next one for REDIS_RECONNECT_MS; a lost
 * connection (a failover's CLIENT KILL, a restart) is followed by a
 * connect at once, as the slots' connections are (redis_conn.c). */
static void mark_broken(struct ps_conn *pc, const char *why, int connect_failed)
{
    int i;

    /* A connection lost on a cluster: a failover? the map may have moved
     * (once: not at every failed reconnect to a node that stays down). */
    if (pc->up && redis_cluster_on(ps.cfg))
        redis_cluster_stale(ps.cfg);
    snprintf(pc->lasterr, sizeof pc->lasterr, "%s", why);
    pc->up = 0;
    pc->broken++;
    pc->retry_at_ms = now_ms() + (connect_failed ? REDIS_RECONNECT_MS : 0);
    for (i = 0; i < ps.nsub; i++)
        if (ps.sub[i]->conn == pc->node) {
            ps.sub[i]->subscribed = ps.sub[i]->requested = ps.sub[i]->echoes = 0;
            wait_cond_broadcast(&ps.sub[i]->cv);
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
        wait_cond_signal(&s->cv);
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
    wait_cond_broadcast(&s->cv);
}

/* A reply on pc's subscriptions: a confirmation or a message. Under ps.mu. */
static void on_reply(const struct ps_conn *pc, const redisReply *r)
{
    struct redis_sub *s;
    const char *kind;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0]->str;
    if ((s = find(r->element[1]->str)) == NULL || s->conn != pc->node)
        return;                         /* not ours, or it moved to another node */
    if (strcmp(kind, "subscribe") == 0) {
        s->subscribed = 1;
        wait_cond_broadcast(&s->cv);
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

/* Append SUBSCRIBE for every channel of pc not yet requested, and write
 * what the socket takes now, without waiting. Under ps.mu, pc->c up. */
static int subscribe_pending(struct ps_conn *pc)
{
    int i, done = 0;

    for (i = 0; i < ps.nsub; i++)
        if (ps.sub[i]->conn == pc->node && !ps.sub[i]->requested) {
            if (redisAppendCommand(pc->c, "SUBSCRIBE %s", ps.sub[i]->channel) != REDIS_OK)
                return -1;
            ps.sub[i]->requested = 1;
        }
    return redisBufferWrite(pc->c, &done) == REDIS_OK ? 0 : -1;
}

static void dispatcher_connect(struct ps_conn *pc)
{
    struct hostport hp;
    char why[128];
    redisContext *c;

    conn_addr(pc, &hp);
    c = redis_connect_to(hp.host, hp.port, now_us() + REDIS_CMD_TIMEOUT_MS * 1000LL,
                         why, sizeof why);
    pthread_mutex_lock(&ps.mu);
    snprintf(pc->name, sizeof pc->name, "redis %s:%d", hp.host, hp.port);
    if (c == NULL) {
        mark_broken(pc, why, 1);
    } else {
        pc->c = c;
        pc->up = 1;
    }
    pthread_mutex_unlock(&ps.mu);
}

/* Read what came and hand it out: 0, or -1 (the connection failed). Under
 * ps.mu. */
static int dispatch(struct ps_conn *pc, int events)
{
    void *reply;
    int done;

    if ((events & WAIT_WRITE) && redisBufferWrite(pc->c, &done) != REDIS_OK)
        return -1;
    if ((events & WAIT_READ) && redisBufferRead(pc->c) != REDIS_OK)
        return -1;
    for (;;) {
        reply = NULL;
        if (redisGetReplyFromReader(pc->c, &reply) != REDIS_OK)
            return -1;
        if (reply == NULL)
            return 0;
        on_reply(pc, reply);
        freeReplyObject(reply);
    }
}

static void dispatcher_main(void *arg)
{
    struct ps_conn *pc = arg;
    int64_t wait;
    int fd, events, rc;

    for (;;) {
        pthread_mutex_lock(&ps.mu);
        wait = pc->c ? 0 : pc->retry_at_ms - now_ms();
        pthread_mutex_unlock(&ps.mu);
        if (wait > 0) {
            sleep_us(wait * 1000);
            continue;
        }
        if (pc->c == NULL) {
            dispatcher_connect(pc);
            continue;
        }
        pthread_mutex_lock(&ps.mu);
        rc = subscribe_pending(pc);
        fd = pc->c->fd;
        events = WAIT_READ | (rc == 0 && sdslen(pc->c->obuf) > 0 ? WAIT_WRITE : 0);
        pthread_mutex_unlock(&ps.mu);
        if (rc == 0)
            events = wait_fd(fd, events, now_us() + 1000000);
        pthread_mutex_lock(&ps.mu);
        if (rc == 0 && events)
            rc = dispatch(pc, events);
        if (rc != 0) {
            mark_broken(pc, pc->c->errstr[0] ? pc->c->errstr : "connection lost", 0);
            redisFree(pc->c);
            pc->c = NULL;
        }
        pthread_mutex_unlock(&ps.mu);
    }
}

static void pubsub_start(void)
{
    struct hostport hp;
    int i;

    ps.cfg = atomic_load(&ps_cfg);
    for (i = 0; i < CONFIG_MAX_SERVERS; i++) {
        ps.conn[i].node = i;
        if (redis_cluster_on(ps.cfg))
            redis_cluster_addr(ps.cfg, i, &hp);
        else
            hp = ps.cfg->redis[0];      /* the Sentinels are asked at the connect */
        snprintf(ps.conn[i].name, sizeof ps.conn[i].name, "redis %s:%d", hp.host, hp.port);
    }
}

/* The node a channel is subscribed on: its slot's master on a cluster
 * (asking for the map first if needed: may wait, so never under ps.mu),
 * else 0. -1 with the failure on ctx. */
static int home_of(struct lock_ctx *ctx, const char *channel)
{
    if (!redis_cluster_on(ctx->cfg))
        return 0;
    return redis_cluster_node(ctx, redis_key_slot(channel, strlen(channel)));
}

/* Under ps.mu: s goes to node `home` unless it is subscribed there, or
 * others wait on it where it is (a moved slot's channel still hears every
 * PUBLISH on its old node: it moves once nobody waits on it). */
static void rehome(struct redis_sub *s, int home)
{
    struct ps_conn *old;
    int done;

    if (s->conn == home || (s->subscribed && s->waiters > 0))
        return;
    old = s->conn >= 0 ? &ps.conn[s->conn] : NULL;
    if (old && old->c && (s->subscribed || s->requested) &&
        redisAppendCommand(old->c, "UNSUBSCRIBE %s", s->channel) == REDIS_OK)
        redisBufferWrite(old->c, &done);    /* a failure is that dispatcher's to see */
    s->conn = home;
    s->subscribed = s->requested = s->echoes = s->permits = 0;
}

/* ---------------------------------------------------------------- waiters */

int redis_sub_join(struct lock_ctx *ctx, const char *channel, struct redis_sub **out)
{
    return redis_sub_join_as(ctx, channel, REDIS_WAKE_ONE, out);
}

/* Under ps.mu: pc's dispatcher runs, started by this caller if not yet
 * (it connects in this turn's jobs, or in a thread of its own). */
static void conn_start(struct ps_conn *pc)
{
    if (pc->started)
        return;
    pc->started = 1;
    task_background("redis-pubsub", dispatcher_main, pc);
}

int redis_sub_join_as(struct lock_ctx *ctx, const char *channel, enum redis_wake wake,
                      struct redis_sub **out)
{
    struct redis_sub *s;
    struct ps_conn *pc;
    unsigned broken;
    int rc = LL_OK, home;

    *out = NULL;
    atomic_store(&ps_cfg, ctx->cfg);
    pthread_once(&ps_once, pubsub_start);
    if ((home = home_of(ctx, channel)) < 0)
        return ctx->err;
    pthread_mutex_lock(&ps.mu);
    if ((s = find(channel)) == NULL) {
        if (ps.nsub == SUB_MAX) {
            pthread_mutex_unlock(&ps.mu);
            return LL_OK;       /* no channel: the caller waits by PTTL */
        }
        s = xcalloc(1, sizeof *s);
        snprintf(s->channel, sizeof s->channel, "%s", channel);
        s->conn = -1;
        s->wake = wake;
        wait_cond_init(&s->cv);
        ps.sub[ps.nsub++] = s;
    }
    rehome(s, home);
    pc = &ps.conn[s->conn];
    conn_start(pc);
    s->waiters++;
    if (!s->subscribed && !pc->up && now_ms() < pc->retry_at_ms) {
        s->waiters--;
        if (redis_cluster_on(ctx->cfg))     /* its slot may have a new master */
            redis_cluster_stale(ctx->cfg);
        rc = lock_error(ctx, LL_UNAVAILABLE, pc->name, "%s is down: %s", pc->name, pc->lasterr);
    } else if (!s->subscribed) {
        ctx->backend_ops++;
        if (pc->c)
            subscribe_pending(pc);      /* a failure is the dispatcher's to see */
        broken = pc->broken;
        while (!s->subscribed && pc->broken == broken && s->conn == pc->node)
            if (!wait_cond_wait(&s->cv, &ps.mu, ctx->deadline_ms * 1000))
                break;
        if (!s->subscribed) {
            s->waiters--;
            rc = pc->broken != broken || s->conn != pc->node
                ? lock_error(ctx, LL_UNAVAILABLE, pc->name, "SUBSCRIBE on %s failed: %s",
                             pc->name, pc->lasterr)
                : lock_error(ctx, LL_TIMEOUT, NULL, "lock not obtained before the deadline "
                             "(no pub/sub confirmation from %s)", pc->name);
        }
    }
    pthread_mutex_unlock(&ps.mu);
    if (rc == LL_OK)
        *out = s;
    return rc;
}

int redis_sub_wait(struct lock_ctx *ctx, struct redis_sub *s, int64_t ms)
{
    int64_t until = now_ms() + ms;

    if (s == NULL) {            /* no channel: sleep, bounded by the caller */
        sleep_us(ms * 1000);
        return LL_OK;
    }
    pthread_mutex_lock(&ps.mu);
    while (s->permits == 0 && s->subscribed)
        if (!wait_cond_wait(&s->cv, &ps.mu, until * 1000))
            break;
    if (s->permits > 0) {
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

void redis_sub_leave(struct redis_sub *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&ps.mu);
    s->waiters--;
    if (s->permits > s->waiters)
        s->permits = s->waiters;
    pthread_mutex_unlock(&ps.mu);
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
