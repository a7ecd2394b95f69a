/* lock_poll.c — one poller per lock per instance, woken early by a release
 * on its own instance.
 *
 * A polling lock (SET NX, a Lua or hash script, a db_lock row) has no way
 * to tell waiters that it is free: a waiter learns it only by trying again.
 * With every waiter polling on its own timer, sixty waiters send sixty
 * tries per interval, most of them while the lock is plainly held, and the
 * lock still sits idle after a release until somebody's timer fires.
 *
 * So the waiters of one lock in one process queue in a waiting room and only
 * the first of them, the poller, tries the lock: every --retry-ms (±50 %
 * jitter, no exponential growth — one poller per instance cannot flood
 * the server), or at once when a holder in this process has just released
 * the lock (lock_poll_released()). When the poller gets the lock, or gives
 * up, the next in the room becomes the poller. The lock itself is
 * untouched: it is still taken only by its own try on its own server, and
 * the pollers of the other instances race for it as before. A request on
 * the same instance can still overtake a slow holder whose lease ran out,
 * which is what the teaching strategies show.
 *
 * The wake-up on release favours this instance, whose poller tries about
 * one round trip after the release while the others wait for their
 * timers. That is where the throughput comes from, and it must not starve
 * the others: after LOCK_POLL_STREAK releases announced in a row, one is
 * not, and the pollers of every instance meet at their timers.
 *
 * A newcomer tries at once, unless a release here has just woken the
 * poller and the poller's try is not over (r->handing): then it joins the
 * room before its first try (lock_poll_first()). On the loop a newcomer
 * and a woken poller do not race on two CPUs: a newcomer's coroutine
 * starts in the turn its request arrives and sends its try at once, the
 * poller woken in that turn runs after it, and its try lands behind the
 * newcomer's in the same pipelined write and loses, every time. Joining
 * whenever anyone waited would end that race, but would keep every
 * newcomer in the queue while the lock sat idle between timer tries;
 * joining only during a hand-over gives the woken poller its turn and
 * leaves an idle lock to whoever comes (docs/journal.md, "Moved from file
 * headers", has the runs that chose it). A request re-entering a lock it
 * holds never waits.
 *
 * Rooms are per strategy and key, found in a small table under one mutex;
 * a room whose last user left is free for another key. A full table sends
 * a waiter back to lock_backoff()'s private timer.
 *
 * The strategies' calls keep the room (lock.h): lock_acquire() leaves it
 * after every acquire, and lock_release() announces the release that ends
 * a request's last hold, so that no caller of a strategy does either.
 */
#include "lock.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define ROOMS            64

struct lock_room {
    const struct lock_ops *ops; /* rooms are per strategy and key           */
    char             key[LOCK_KEY_MAX];
    int              users;     /* requests in the room, the poller included */
    struct lock_ctx *poller;    /* the one that tries, or NULL              */
    int              poked;     /* released here since the poller last tried */
    int              handing;   /* poked, and the poller's try not over yet */
    int              streak;    /* releases announced in a row              */
    struct wait_cond poll_cv;   /* the poller sleeps here                   */
    struct wait_cond queue_cv;  /* the others wait for their turn here      */
};

static struct lock_room rooms[ROOMS];
static pthread_mutex_t rooms_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t rooms_once = PTHREAD_ONCE_INIT;
static atomic_int waiting;      /* users of every room: 0 spares a release the mutex */

static void rooms_init(void)
{
    int i;

    for (i = 0; i < ROOMS; i++) {
        wait_cond_init(&rooms[i].poll_cv);
        wait_cond_init(&rooms[i].queue_cv);
    }
}

/* The room of key; with `make`, a free one is taken for it. Under rooms_mu. */
static struct lock_room *room_find(const struct lock_ops *ops, const char *key, int make)
{
    unsigned i, h = str_hash(key);
    struct lock_room *r, *free_room = NULL;

    for (i = 0; i < ROOMS; i++) {
        r = &rooms[(h + i) % ROOMS];
        if (r->users > 0 && r->ops == ops && strcmp(r->key, key) == 0)
            return r;
        if (r->users == 0 && free_room == NULL)
            free_room = r;
    }
    if (!make || free_room == NULL)
        return NULL;                    /* full: the caller polls alone */
    strlcopy(free_room->key, key, sizeof free_room->key);
    free_room->ops = ops;
    free_room->poller = NULL;
    free_room->poked = free_room->streak = free_room->handing = 0;
    return free_room;
}

/* Wait in the room of key for this request's next try (lock_poll), or
 * with `first` only when somebody already waits there (lock_poll_first). */
static int room_wait(struct lock_ctx *ctx, const char *key, int first)
{
    int64_t deadline_us = ctx->deadline_ms * 1000, base_us, wake_us;
    struct lock_room *r;
    int rc = LL_OK;

    pthread_once(&rooms_once, rooms_init);
    pthread_mutex_lock(&rooms_mu);
    if (first && (ctx->room != NULL || (r = room_find(ctx->ops, key, 0)) == NULL ||
                  r->users == 0 || !r->handing)) {
        pthread_mutex_unlock(&rooms_mu);
        return LL_OK;                   /* nobody waits here: try at once */
    }
    if ((r = ctx->room) == NULL) {
        if ((r = room_find(ctx->ops, key, 1)) == NULL) {
            pthread_mutex_unlock(&rooms_mu);
            return lock_backoff(ctx);
        }
        r->users++;
        atomic_fetch_add(&waiting, 1);
        ctx->room = r;
    }
    if (r->poller == ctx)
        r->handing = 0;                 /* my try after the wake-up is over */
    while (r->poller != NULL && r->poller != ctx)       /* wait for my turn */
        if (!wait_cond_wait(&r->queue_cv, &rooms_mu, deadline_us))
            break;
    if (r->poller != NULL && r->poller != ctx) {
        rc = lock_timeout(ctx);
    } else {
        r->poller = ctx;
        base_us = (int64_t)ctx->cfg->retry_ms * 1000;
        wake_us = now_us() + rand_range(base_us / 2, base_us + base_us / 2);
        while (!r->poked)
            if (!wait_cond_wait(&r->poll_cv, &rooms_mu,
                                wake_us < deadline_us ? wake_us : deadline_us))
                break;
        if (r->poked)
            ctx->wakeups++;
        else if (now_us() >= deadline_us)
            rc = lock_timeout(ctx);
        r->poked = 0;
    }
    pthread_mutex_unlock(&rooms_mu);
    if (rc == LL_OK && !first)
        ctx->retries++;
    return rc;
}

int lock_poll(struct lock_ctx *ctx, const char *key)
{
    return room_wait(ctx, key, 0);
}

int lock_poll_first(struct lock_ctx *ctx, const char *key)
{
    if (ctx->held_since_us != 0)        /* re-entering what it holds */
        return LL_OK;
    return room_wait(ctx, key, 1);
}

void lock_poll_done(struct lock_ctx *ctx)
{
    struct lock_room *r = ctx->room;

    if (r == NULL)
        return;
    pthread_mutex_lock(&rooms_mu);
    if (r->poller == ctx) {
        r->poller = NULL;
        r->handing = 0;
        wait_cond_signal(&r->queue_cv);      /* the next becomes the poller */
    }
    r->users--;
    atomic_fetch_sub(&waiting, 1);
    ctx->room = NULL;
    pthread_mutex_unlock(&rooms_mu);
}

void lock_poll_released(const struct lock_ctx *ctx, const char *key)
{
    struct lock_room *r;

    /* Nobody waits anywhere (every sale of a lock without a room, and a
     * lock free of contention): nothing to wake. A waiter entering just now
     * is no worse off than one that entered just after the release: its
     * own timer serves it. */
    if (atomic_load_explicit(&waiting, memory_order_relaxed) == 0)
        return;
    pthread_once(&rooms_once, rooms_init);
    pthread_mutex_lock(&rooms_mu);
    if ((r = room_find(ctx->ops, key, 0)) != NULL && lock_poll_announce(&r->streak)) {
        r->poked = r->handing = 1;
        wait_cond_signal(&r->poll_cv);
    }
    pthread_mutex_unlock(&rooms_mu);
}

int lock_poll_waiting(const struct lock_ops *ops, const char *key)
{
    struct lock_room *r;
    int n;

    pthread_mutex_lock(&rooms_mu);
    n = (r = room_find(ops, key, 0)) != NULL ? r->users : 0;
    pthread_mutex_unlock(&rooms_mu);
    return n;
}

/* ---------------------------------------------------------------- the calls */

int lock_acquire_by(struct lock_ctx *ctx, const struct lock_ops *ops, const char *key)
{
    int rc = ops->acquire(ctx, key);

    lock_poll_done(ctx);                /* out of the room, the lock got or not */
    if (rc == LL_OK)
        ctx->holds++;
    return rc;
}

int lock_release_by(struct lock_ctx *ctx, const struct lock_ops *ops, const char *key)
{
    int rc = ops->release(ctx, key);

    /* Released or not, the hold is over (the caller releases on every
     * path); the last one wakes this instance's poller of the key. */
    if (ctx->holds > 0 && --ctx->holds == 0)
        lock_poll_released(ctx, key);
    return rc;
}

int lock_acquire(struct lock_ctx *ctx, const char *key)
{
    return lock_acquire_by(ctx, ctx->ops, key);
}

int lock_release(struct lock_ctx *ctx, const char *key)
{
    return lock_release_by(ctx, ctx->ops, key);
}
