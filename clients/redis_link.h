/* redis_link.h — one connection to one Redis server (clients/redis_link.c):
 * the ground of the Redis client, below redis.c and redis_shared.c. What
 * callers of the client use of it comes through redis.h: the timeouts,
 * redis_server_addr(), and redis_connect_to() for who drives a connection
 * of its own (the pub/sub dispatcher).
 */
#ifndef LOCKLAB_REDIS_LINK_H
#define LOCKLAB_REDIS_LINK_H

#include "../core/config.h"
#include "../core/ctx.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#define REDIS_CMD_TIMEOUT_MS 1000   /* connect/command timeout, one server     */
#define REDIS_RECONNECT_MS   200    /* least time between connects to a server */

/* The master --redis-sentinel's Sentinels are asked for. */
#define REDIS_SENTINEL_MASTER "locklab"

/* One connection to one server, made when first needed. */
struct redis_link {
    redisContext *c;
    unsigned      gen;              /* connections made: a new one, a new gen  */
    int64_t       retry_at_ms;      /* no connect before this (throttle)       */
    char          lasterr[128];     /* why the last connection failed          */
};

/* A bare connection to host:port (a non-blocking hiredis context), waited
 * for through the wait layer until the deadline: the context, or NULL with
 * the reason in why. */
redisContext *redis_connect_to(const char *host, int port, int64_t deadline_us,
                               char *why, size_t len);

/* Write out c's output buffer (0), or -1 with the reason; read one reply
 * (0 and *out), or -1 with the reason. Both wait until the deadline. */
int redis_link_write(redisContext *c, int64_t deadline_us, char *why, size_t len);
int redis_link_read(redisContext *c, int64_t deadline_us, redisReply **out,
                    char *why, size_t len);

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
/* Close l after a failure (why, or hiredis's errstr when NULL). */
void redis_link_forget(struct redis_link *l, const char *why);
/* Close l. */
void redis_link_close(struct redis_link *l);

#endif /* LOCKLAB_REDIS_LINK_H */
