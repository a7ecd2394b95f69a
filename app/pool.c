/* pool.c — worker slots.
 *
 * libmicrohttpd serves every HTTP connection on the instance's loop (see
 * http.c), and nginx keeps many upstream connections open, so requests in
 * flight outnumber the backend connections we want to hold. A request
 * borrows one of --threads slots for its duration, and waits its turn on
 * a wait_cond (its deadline's) when none is free. A slot is the seeds'
 * "thread": it owns
 * a MariaDB connection, its Redis connections and its identity as a lock
 * holder ("<instance uuid>:<slot>"), so re-entry is recognised and no two
 * requests ever share a backend connection. Free slots form a LIFO stack,
 * so the busiest connections stay warm.
 */
#include "pool.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../locks/lock.h"

#include <stdlib.h>
#include <pthread.h>

static struct lock_ctx *slots;
static struct lock_ctx **free_stack;
static int nslots, nfree, nwaiting;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wait_cond pool_cond = WAIT_COND_INIT;

void pool_init(const struct config *cfg)
{
    int i;

    nslots = cfg->threads;
    slots = xcalloc((size_t)nslots, sizeof *slots);
    free_stack = xcalloc((size_t)nslots, sizeof *free_stack);
    for (i = 0; i < nslots; i++) {
        slots[i].slot = i;
        slots[i].cfg = cfg;
        slots[i].db = db_new(cfg);
        free_stack[nslots - 1 - i] = &slots[i];
    }
    nfree = nslots;
}

void pool_free(void)
{
    int i;

    for (i = 0; i < nslots; i++) {
        lock_ctx_free(&slots[i]);
        db_free(slots[i].db);
        db_free(slots[i].replica);
    }
    free(slots);
    free(free_stack);
    slots = NULL;
    nslots = nfree = 0;
}

struct lock_ctx *pool_get(int64_t deadline_ms)
{
    struct lock_ctx *ctx = NULL;

    pthread_mutex_lock(&pool_lock);
    while (nfree == 0) {
        int signalled;
        nwaiting++;
        signalled = wait_cond_wait(&pool_cond, &pool_lock, deadline_ms * 1000);
        nwaiting--;
        if (!signalled)
            break;
    }
    if (nfree > 0)
        ctx = free_stack[--nfree];
    pthread_mutex_unlock(&pool_lock);
    return ctx;
}

/* The signal leaves after the mutex is free, and only when someone waits:
 * a waiter woken under the mutex would only block on it again. */
void pool_put(struct lock_ctx *ctx)
{
    int waiting;

    pthread_mutex_lock(&pool_lock);
    free_stack[nfree++] = ctx;
    waiting = nwaiting;
    pthread_mutex_unlock(&pool_lock);
    if (waiting)
        wait_cond_signal(&pool_cond);
}
