/* pool.h — the worker slots: --threads lock contexts, each with its own
 * backend connections, lent to one request at a time. */
#ifndef LOCKLAB_POOL_H
#define LOCKLAB_POOL_H

#include <stdint.h>

struct lock_ctx;
struct config;

void pool_init(const struct config *cfg);
void pool_free(void);

/* Borrow a slot, waiting no later than deadline_ms; NULL on time-out. */
struct lock_ctx *pool_get(int64_t deadline_ms);
void             pool_put(struct lock_ctx *ctx);

#endif /* LOCKLAB_POOL_H */
