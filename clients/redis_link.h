/* redis_link.h — one connection to one Redis server (clients/redis_link.c):
 * the ground of the Redis client, below the cluster's map, redis.c and
 * redis_shared.c. What callers of the client use of it comes through
 * redis.h: the timeouts, and redis_connect_to() for who drives a
 * connection of its own (the pub/sub dispatcher).
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

/* Close l after a failure (why, or hiredis's errstr when NULL). */
void redis_link_forget(struct redis_link *l, const char *why);
/* Close l. */
void redis_link_close(struct redis_link *l);

#endif /* LOCKLAB_REDIS_LINK_H */
