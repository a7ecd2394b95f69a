/* redis_shared.h — the loop's shared pipelined connections of the Redis
 * client (clients/redis_shared.c), below redis.c, which hands them a
 * pipeline when the rule of redis.h says so. Loop thread only.
 */
#ifndef LOCKLAB_REDIS_SHARED_H
#define LOCKLAB_REDIS_SHARED_H

#include "redis_server.h"

struct redis_wait_entry;

/* Queue n commands (buf[0..len), their protocol text, taken over) on
 * server i's shared connection of ctx's configuration on this loop,
 * connecting it if nobody is: 0 and *entry, or -1 with the failure on
 * ctx (nothing was sent; ctx->backend is the connection's name until the
 * caller makes it its own). Counts a round trip. */
int  redis_shared_send(struct lock_ctx *ctx, int server, int timeout_ms, char *buf,
                       size_t len, int n, struct redis_wait_entry **entry);
/* Wait for e's replies until the deadline (timeout_ms: what it came
 * from): 0 with them in r, or -1 with the reason in why (*sent: whether
 * they had left, and may have been run). e is gone either way. */
int  redis_shared_recv(struct redis_wait_entry *e, int64_t deadline_us, int timeout_ms,
                       redisReply **r, int *sent, char *why, size_t len);
/* e was sent and will not be read: its replies are thrown away. */
void redis_shared_abandon(struct redis_wait_entry *e);

/* redis_connect() on the loop: server i's shared connection, connected now
 * unless it is (or is being): LL_OK, or the failure on ctx. */
int  redis_shared_connect(struct lock_ctx *ctx, int server, int timeout_ms);
/* Fail every caller on server i's shared connection and close it. */
void redis_shared_fail(struct lock_ctx *ctx, int server, const char *why);
/* "redis HOST:PORT" of server i's shared connection, as last connected. */
const char *redis_shared_name(struct lock_ctx *ctx, int server);
/* Close this loop's shared connections (redis_loop_close()). */
void redis_shared_close(void);

#endif /* LOCKLAB_REDIS_SHARED_H */
