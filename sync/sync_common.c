/* sync_common.c — running an operation, the seeds' demonstrations, and
 * the small pieces every synchronizer uses.
 *
 * sync_run() frames every answer the same way: which primitive of which
 * library on which name, the wall-clock time the request asked, and — set
 * by the operation through sync_granted() — when it was granted and how
 * long it waited. Wall clock rather than monotonic, because tests and the
 * seeds' console table compare these times across instances (the seeds
 * print System.currentTimeMillis()).
 */
#include "sync_private.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

static _Atomic unsigned long long thread_ids;

unsigned long long sync_thread_id(void)
{
    return atomic_fetch_add(&thread_ids, 1) + 1;
}

int64_t sync_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sync_mark(json_t *out, const char *key)
{
    json_object_set_new(out, key, json_integer((json_int_t)sync_wall_ms()));
}

static int64_t wall_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void sync_released(json_t *out)
{
    int64_t us = wall_us();

    json_object_set_new(out, "released_at_ms", json_integer((json_int_t)(us / 1000)));
    json_object_set_new(out, "released_at_us", json_integer((json_int_t)us));
}

void sync_granted(const struct sync_args *a, json_t *out)
{
    int64_t us = wall_us(), now = us / 1000;
    json_int_t asked = json_integer_value(json_object_get(out, "asked_at_ms"));

    json_object_set_new(out, "granted_at_ms", json_integer((json_int_t)now));
    json_object_set_new(out, "granted_at_us", json_integer((json_int_t)us));
    json_object_set_new(out, "waited_ms", json_integer(asked ? (json_int_t)now - asked : 0));
    if (a->hold_ms > 0) {
        sleep_us((int64_t)a->hold_ms * 1000);
        json_object_set_new(out, "held_ms", json_integer(a->hold_ms));
    }
}

int sync_need(struct lock_ctx *ctx, long long value, const char *param)
{
    if (value >= 0)
        return LL_OK;
    return lock_error(ctx, LL_BADREQ, NULL, "this operation needs ?%s=", param);
}

/* ---------------------------------------------------------------- local queue */

/* Held across the callers' ZooKeeper round trips, so a mutex of the wait
 * layer: a coroutine that waits for it parks, a thread blocks. */
#define STRIPES 64
static struct wait_mutex stripes[STRIPES] = {
#define M4 WAIT_MUTEX_INIT, WAIT_MUTEX_INIT, WAIT_MUTEX_INIT, WAIT_MUTEX_INIT
#define M16 M4, M4, M4, M4
    M16, M16, M16, M16
#undef M16
#undef M4
};

int sync_local_lock(struct lock_ctx *ctx, const char *key, void **held)
{
    struct wait_mutex *m = &stripes[str_hash(key) % STRIPES];

    *held = NULL;
    if (!wait_mutex_lock(m, now_us() + lock_time_left(ctx) * 1000))
        return lock_timeout(ctx);
    *held = m;
    return LL_OK;
}

void sync_local_unlock(void *held)
{
    if (held)
        wait_mutex_unlock(held);
}

/* ---------------------------------------------------------------- demos */

void sync_demo_args(enum sync_demo demo, struct sync_args *a)
{
    static const struct {
        enum sync_demo demo;
        const char *primitive, *op, *name;
        int count, permits, hold_ms, lease_ms;
    } demos[] = {
        /* seed 000 §3.9.5: rwLock.readLock().lock(10, TimeUnit.SECONDS) */
        { SYNC_DEMO_READ,      "rwlock",    "read",       "rwLock",    -1, -1, 0,    10000 },
        { SYNC_DEMO_WRITE,     "rwlock",    "write",      "rwLock",    -1, -1, 0,    10000 },
        /* §3.9.6: trySetPermits(3); acquire(); sleep(5 s); release() */
        { SYNC_DEMO_SEMAPHORE, "semaphore", "acquire",    "semaphore", -1, 3,  5000, -1 },
        /* §3.9.7: trySetCount(6); await() — and trySetCount(6); countDown() */
        { SYNC_DEMO_LATCH,     "latch",     "await",      "latch",     6,  -1, 0,    -1 },
        { SYNC_DEMO_COUNTDOWN, "latch",     "count-down", "latch",     6,  -1, 0,    -1 },
    };
    size_t i;

    for (i = 0; i < sizeof demos / sizeof demos[0]; i++) {
        if (demos[i].demo != demo)
            continue;
        a->demo = demo;
        a->ops = sync_find(demos[i].primitive, "redisson");
        a->op = a->ops ? sync_op_find(a->ops, demos[i].op) : NULL;
        a->name = demos[i].name;
        a->count = demos[i].count;
        a->permits = demos[i].permits;
        a->qty = 1;
        if (a->hold_ms < 0)
            a->hold_ms = demos[i].hold_ms;
        if (a->lease_ms < 0)
            a->lease_ms = demos[i].lease_ms;
    }
}

/* ---------------------------------------------------------------- running */

int sync_run(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    json_t *names;
    int i, rc;

    json_object_set_new(out, "primitive", json_string(a->ops->primitive));
    json_object_set_new(out, "backend", json_string(a->ops->backend));
    json_object_set_new(out, "library", json_string(a->ops->library));
    json_object_set_new(out, "operation", json_string(a->op->name));
    if (a->name)
        json_object_set_new(out, "name", json_string(a->name));
    if (a->nnames > 0) {
        names = json_array();
        for (i = 0; i < a->nnames; i++)
            json_array_append_new(names, json_string(a->names[i]));
        json_object_set_new(out, "names", names);
    }
    sync_mark(out, "asked_at_ms");
    rc = a->op->run(ctx, a, out);
    sync_mark(out, "answered_at_ms");
    return rc;
}
