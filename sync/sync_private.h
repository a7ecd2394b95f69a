/* sync_private.h — what the synchronizers share (every sync/ file): the answer's
 * times and Curator's paths and semaphore leases, on top of the lock
 * families' code, which they reuse rather than copy: for Redis the client
 * and Redisson's waiting loop (locks/redis_private.h), for ZooKeeper the
 * client clients/zk.c and the queue locks/zk_queue.c (Curator's
 * LockInternals).
 */
#ifndef LOCKLAB_SYNC_PRIVATE_H
#define LOCKLAB_SYNC_PRIVATE_H

#include "sync.h"
#include "../locks/redis_private.h"
#include "../locks/zk_private.h"

/* ---------------------------------------------------------------- answers */

/* out[key] = the wall clock now, in ms. */
void sync_mark(json_t *out, const char *key);
/* The holder is about to give back what it holds: released_at_ms, and
 * released_at_us beside granted_at_us for checkers that order holds finer
 * than a millisecond (ll-report sync). */
void sync_released(json_t *out);
/* The holder got what it asked for: granted_at_ms and waited_ms into out,
 * then a->hold_ms of "work" (the seeds' TimeUnit.SECONDS.sleep(5)). */
void sync_granted(const struct sync_args *a, json_t *out);
/* The operation needs a->name's count, permits … set: 400 otherwise. */
int sync_need(struct lock_ctx *ctx, long long value, const char *param);

/* One caller per process at a time for `key` (a striped wait_mutex, held
 * across the caller's round trips: a coroutine waiting for it parks), waiting
 * until the request's deadline: LL_OK with *held set, or LL_TIMEOUT. The
 * optimistic counters take it around their protocol, so that the callers
 * of one instance queue here instead of racing each other's versions in
 * ZooKeeper; the wire protocol is unchanged, and the instances still race
 * one another (and any Java client) exactly as Curator's clients do. */
int  sync_local_lock(struct lock_ctx *ctx, const char *key, void **held);
void sync_local_unlock(void *held);

/* ---------------------------------------------------------------- Curator */

#define CURATOR_ROOT "/locklab/sync"

/* "/locklab/sync/<dir>/<name>". */
void curator_path(char *buf, int len, const char *dir, const char *name);

/* InterProcessSemaphoreV2 on `path` (locks/ and leases/ under it): take
 * qty leases of max_leases, each under the path's locks/ mutex, waiting
 * until the deadline; their nodes into leases[] (ZK_PATH_MAX each).
 * All or nothing: on failure the leases taken are returned. */
#define CURATOR_MAX_QTY 16
int curator_leases_take(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                        long long max_leases, int qty, char leases[][ZK_PATH_MAX]);
/* Return leases [0, n): delete their nodes (Lease.close()). */
int curator_leases_return(struct lock_ctx *ctx, struct zk_conn *c,
                          char leases[][ZK_PATH_MAX], int n);

/* Delete <CURATOR_ROOT>/<dir>/<name> and everything under it. */
int curator_reset(struct lock_ctx *ctx, const char *dir, const char *name);

#endif /* LOCKLAB_SYNC_PRIVATE_H */
