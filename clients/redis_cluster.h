/* redis_cluster.h — where a key lives on a Redis Cluster (clients/redis_cluster.c):
 * the key's slot (CRC16 with the hash-tag rule), the slot map from CLUSTER
 * SLOTS, and the nodes' table, below redis.c, which routes every pipeline
 * to its slot's master and follows MOVED and ASK.
 *
 * With --redis-cluster the client's "server 0" is the cluster: callers name
 * server 0 as before, and redis.c turns it into a node, an index into this
 * table (and into the slots' and the loop's connection arrays). A node is
 * added when CLUSTER SLOTS or a redirection first names it; the seeds come
 * first. The map is shared by every thread and loop of a process.
 */
#ifndef LOCKLAB_REDIS_CLUSTER_H
#define LOCKLAB_REDIS_CLUSTER_H

#include "redis_link.h"

#include <stddef.h>

#define REDIS_CLUSTER_SLOTS 16384

/* The slot of a key: CRC16 (XMODEM) of the key, or of the part between
 * the first '{' and the next '}' when that part is not empty, mod 16384. */
int redis_key_slot(const char *key, size_t len);

/* The slot of one command in the protocol's form (what hiredis formats):
 * its key's slot, or -1 for a command without a key (MULTI, EXEC, WAIT,
 * SCRIPT …, an EVAL of no key). */
int redis_cmd_slot(const char *cmd, size_t len);

/* cfg runs on a cluster (--redis-cluster). */
int redis_cluster_on(const struct config *cfg);

/* The node whose master serves slot now, loading the map first (or again,
 * after redis_cluster_stale()): a node, or -1 with LL_UNAVAILABLE on ctx. */
int redis_cluster_node(struct lock_ctx *ctx, int slot);

/* A redirection: MOVED (the slot is the node's from now on, and the map is
 * asked again at the next use) or ASK (once); "SLOT HOST:PORT" as the error
 * says it. The node to send to, or -1 when the text cannot be read. */
int redis_cluster_redirect(const struct config *cfg, const char *err, int moved);

/* Something failed on a node (a connection, CLUSTERDOWN): ask for the map
 * again at the next use (at most every REDIS_CLUSTER_REFRESH_MS). */
void redis_cluster_stale(const struct config *cfg);

/* Where node i is ("server" i of redis_server_addr() on a cluster). */
void redis_cluster_addr(const struct config *cfg, int node, struct hostport *out);

#endif /* LOCKLAB_REDIS_CLUSTER_H */
