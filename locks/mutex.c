/* mutex.c — one process-wide lock: the seeds' `synchronized` and
 * ReentrantLock (seed 000 §1.4).
 *
 * A recursive pthread mutex, taken with a deadline. Within one instance
 * every sale is serialised and the count is exact; with three instances
 * behind nginx each has its own mutex, so sales on different instances
 * race exactly like `none` — the seeds' reason to need a distributed lock.
 * One mutex for every product, as `synchronized` on the service method.
 */
#include "lock.h"
#include "../core/config.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static pthread_mutex_t mutex;
static pthread_once_t mutex_once = PTHREAD_ONCE_INIT;

static void mutex_init_once(void)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&mutex, &attr);
    pthread_mutexattr_destroy(&attr);
}

static int mutex_acquire(struct lock_ctx *ctx, const char *key)
{
    int64_t left = lock_time_left(ctx);
    struct timespec ts;
    int rc;

    (void)key;
    pthread_once(&mutex_once, mutex_init_once);
    clock_gettime(CLOCK_REALTIME, &ts);
    if (left < 0)
        left = 0;
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    rc = pthread_mutex_timedlock(&mutex, &ts);
    if (rc == ETIMEDOUT)
        return lock_timeout(ctx);
    if (rc != 0)
        return lock_error(ctx, LL_ERROR, NULL, "pthread_mutex_timedlock: error %d", rc);
    return LL_OK;
}

static int mutex_release(struct lock_ctx *ctx, const char *key)
{
    (void)ctx, (void)key;
    pthread_mutex_unlock(&mutex);
    return LL_OK;
}

const struct lock_ops lock_mutex = {
    .name    = "mutex",
    .family  = "local",
    .summary = "one process-wide recursive mutex: synchronized / ReentrantLock (seed 000 §1.4)",
    .flaw    = "excludes only within one instance: three instances lose updates again",
    .props   = LOCK_REENTRANT | LOCK_AUTO_RELEASE,
    .ceiling = LOCK_CEIL_SERIAL_MYSQL,
    .acquire = mutex_acquire,
    .release = mutex_release,
    .nofence  = "a mutex lives in one process: there is no service to number its holders across instances",
};
