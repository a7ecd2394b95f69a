/* redis_server.h — where Redis server i is, and connecting a link to it
 * (clients/redis_server.c): above redis_link.h and redis_cluster.h, below
 * redis.c and redis_shared.c.
 */
#ifndef LOCKLAB_REDIS_SERVER_H
#define LOCKLAB_REDIS_SERVER_H

#include "redis_link.h"

/* The master --redis-sentinel's Sentinels are asked for. */
#define REDIS_SENTINEL_MASTER "locklab"

/* Where server i is now: --redis's address, but for server 0 with
 * --redis-sentinel the master the Sentinels name (or last named, when none
 * answers); with --redis-cluster, node i of the cluster's table
 * (redis_cluster.h). May wait for the Sentinels' answer. */
void redis_server_addr(const struct config *cfg, int server, struct hostport *out);

/* Connect l to server i (its name, "redis HOST:PORT", into `name`): 0, or
 * -1 with LL_UNAVAILABLE recorded on ctx under `name`. A failed connect
 * holds off the next for REDIS_RECONNECT_MS. Counts a round trip. */
int  redis_link_connect(struct lock_ctx *ctx, struct redis_link *l, int server, int timeout_ms,
                        char *name, size_t nlen);

#endif /* LOCKLAB_REDIS_SERVER_H */
