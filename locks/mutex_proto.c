/* mutex_proto.c — the JVM lock in a prototype-scoped bean: a new lock
 * object for every request (seed 001, "三种情况造成JVM锁失效 … 多例模式":
 * the first of the three ways a JVM lock fails).
 *
 * Spring makes a @Service a singleton unless told otherwise; marked
 * @Scope("prototype") (多例), every injection gets a bean of its own, and
 * with it its own ReentrantLock or its own monitor for `synchronized`.
 * Each request then locks an object nobody else ever sees:
 *
 *     lock = new ReentrantLock()        the request's own bean's lock
 *     lock.lock()                       always free at once
 *     SELECT count …; UPDATE … = read − 1
 *     lock.unlock()
 *
 * Here the request's bean is its worker slot's (a slot serves one request
 * at a time): acquire makes a new mutex of the wait layer and takes it,
 * release gives it back and drops it. It never waits and excludes nobody,
 * so concurrent sales of one instance race exactly as under `none`: lost
 * updates on a single instance, where `mutex` (one object, a singleton's)
 * is exact. The fix is the singleton: one lock object per process.
 */
#include "lock.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <assert.h>
#include <stdlib.h>

#define PROTO_SLOTS 1024    /* --threads is at most this (core/config.c) */

/* Each slot's current bean's lock, or NULL between requests. */
static struct wait_mutex *beans[PROTO_SLOTS];

static int proto_acquire(struct lock_ctx *ctx, const char *key)
{
    static const struct wait_mutex fresh = WAIT_MUTEX_INIT;
    struct wait_mutex *m;

    (void)key;
    assert(ctx->slot >= 0 && ctx->slot < PROTO_SLOTS && beans[ctx->slot] == NULL);
    m = xmalloc(sizeof *m);
    *m = fresh;                     /* new StockService(): a lock of its own */
    if (!wait_mutex_lock(m, ctx->deadline_ms * 1000)) {
        free(m);
        return lock_timeout(ctx);   /* cannot happen: nobody else has it */
    }
    beans[ctx->slot] = m;
    return LL_OK;
}

static int proto_release(struct lock_ctx *ctx, const char *key)
{
    struct wait_mutex *m = beans[ctx->slot];

    (void)key;
    if (m == NULL)
        return lock_error(ctx, LL_ERROR, NULL, "mutex-proto released by a slot that holds none");
    beans[ctx->slot] = NULL;
    wait_mutex_unlock(m);
    free(m);
    return LL_OK;
}

const struct lock_ops lock_mutex_proto = {
    .name    = "mutex-proto",
    .family  = "local",
    .summary = "the process lock in a prototype-scoped bean: a new lock object per request "
               "(seed 001, 多例模式)",
    .flaw    = "every request locks an object of its own: it excludes nobody, lost updates "
               "even on one instance",
    .props   = LOCK_AUTO_RELEASE,
    .ceiling = LOCK_CEIL_SERIAL_MYSQL,
    .acquire = proto_acquire,
    .release = proto_release,
    .nofence = "a lock object of one request: there is no service to number its holders",
};
