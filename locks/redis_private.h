/* redis_private.h — what the Redis strategies share (locks/redis_*.c).
 *
 * Connections. Every worker slot owns, lazily, one hiredis connection per
 * configured Redis server plus one pub/sub connection to the first server
 * (struct redis_set, in ctx->redis). Connections are blocking, with a
 * connect and command timeout (redisSetTimeout), so a hung server costs a
 * request at most that timeout, never a stuck thread. Any transport error
 * frees the connection — a hiredis context is unusable after one — and the
 * next use reconnects; a connect that fails holds off the next one for
 * REDIS_RECONNECT_MS, so a dead server is not hammered with connects. Failures are recorded on ctx as
 * LL_UNAVAILABLE with backend "redis HOST:PORT".
 *
 * Scripts run with EVALSHA; the SHA1 comes once per process from SCRIPT
 * LOAD, and a NOSCRIPT answer (a restarted server, another server of
 * Redlock) falls back to EVAL, which caches the script again.
 *
 * Pub/sub (redis_pubsub.c): one dispatcher thread per process holds the
 * subscriptions and wakes one waiter per message.
 *
 * Watchdog (redis_watchdog.c): one process-wide thread, started lazily,
 * renews every hash lock currently held by any slot at lease/3 on its own
 * connection, and stops renewing at the holder's last release.
 *
 * Single-server strategies use server 0 (the first of --redis).
 */
#ifndef LOCKLAB_REDIS_PRIVATE_H
#define LOCKLAB_REDIS_PRIVATE_H

#include "lock.h"
#include "../core/config.h"
#include "../core/util.h"

#include <hiredis/hiredis.h>
#include <stdint.h>

#define REDIS_CMD_TIMEOUT_MS 1000   /* connect/command timeout, one server   */
#define REDIS_RECONNECT_MS   200    /* least time between connects to a server */
#define REDIS_TOKEN_MAX      96     /* "<instance uuid>:<slot>:<seq>" and more */
#define REDIS_EVAL_ARGS      256    /* keys and arguments of one script call   */

/* Fencing tokens of the plain Redis locks (?fence=1): INCR of the counter
 * "<key>:fence" in the step that takes the lock; they compare among the
 * locks that share the counter, whose service lock_ops.fence calls "redis". */
#define REDIS_FENCE          "redis"
#define REDIS_FENCE_SUFFIX   ":fence"

struct redis_link {
    redisContext *c;
    unsigned      gen;               /* connections made: a new one, a new gen */
    int           timeout_ms;        /* what redisSetTimeout was last given   */
    int64_t       retry_at_ms;       /* no connect before this (throttle)     */
    char          lasterr[128];      /* why the last connection failed (errstr) */
};

struct redis_set {
    struct redis_link link[CONFIG_MAX_SERVERS];
    char     name[CONFIG_MAX_SERVERS][80];   /* "redis 127.0.0.1:6379"        */

    /* State of the one acquisition this slot is making or holding. */
    char     token[REDIS_TOKEN_MAX]; /* the value we set (uuid, lua, redlock) */
    int64_t  expires_wall_ms;        /* redis-getset: our expiry timestamp    */
    int64_t  valid_until_ms;         /* redlock: end of validity (monotonic)  */
    uint64_t seq;                    /* acquisitions made by this slot        */

    /* redisson-wait: the replicas server 0's master had (ROLE), asked on
     * the connection of generation replicas_gen at replicas_at_ms. */
    int      replicas;
    unsigned replicas_gen;
    int64_t  replicas_at_ms;
};

/* A Lua script run by SHA1; sha is filled once per process (SCRIPT LOAD). */
struct redis_script {
    const char *text;
    char        sha[41];
};

/* ---------------------------------------------------------------- redis_conn.c */

/* The master --redis-sentinel's Sentinels are asked for. */
#define REDIS_SENTINEL_MASTER "locklab"

/* Where server i is now: --redis's address, but for server 0 with
 * --redis-sentinel the master the Sentinels name (or last named, when none
 * answers). Every connect to server 0 asks: a failover is followed. */
void redis_server_addr(const struct config *cfg, int server, struct hostport *out);

struct redis_set *redis_set_of(struct lock_ctx *ctx);
void              redis_ctx_free(struct lock_ctx *ctx);

/* The connection to server i with command timeout timeout_ms, connecting
 * if needed (throttled). NULL after recording LL_UNAVAILABLE on ctx. */
redisContext *redis_link(struct lock_ctx *ctx, int server, int timeout_ms);

/* Forget a failed connection of server i; returns LL_UNAVAILABLE recorded
 * on ctx with `what` and hiredis's errstr. */
int redis_drop(struct lock_ctx *ctx, int server, const char *what);

/* One command to server i (REDIS_CMD_TIMEOUT_MS). NULL when the server is
 * unreachable (ctx->err = LL_UNAVAILABLE); otherwise the reply, which may
 * be an error reply: see redis_reply_error(). Counts a round trip. */
redisReply *redis_cmd(struct lock_ctx *ctx, int server, const char *fmt, ...);

/* Run script s on server i: argv holds argc strings, the nkeys keys first
 * and then the other arguments. Same
 * contract as redis_cmd(). */
redisReply *redis_eval(struct lock_ctx *ctx, int server, struct redis_script *s,
                       int nkeys, int argc, const char **argv);

/* The same with another command timeout (Redlock's per-server one). */
redisReply *redis_eval_within(struct lock_ctx *ctx, int server, int timeout_ms,
                              struct redis_script *s, int nkeys, int argc, const char **argv);

/* The same on a bare connection (the watchdog's). NULL on a transport error. */
redisReply *redis_eval_on(redisContext *c, struct redis_script *s,
                          int nkeys, int argc, const char **argv, unsigned *ops);

/* An error reply from server i on `key` as a status on ctx (LL_ERROR, or
 * LL_UNAVAILABLE for LOADING/BUSY/MASTERDOWN); frees the reply. A
 * WRONGTYPE names the likely cause: another strategy's key, not reset. */
int redis_reply_error(struct lock_ctx *ctx, int server, redisReply *r, const char *key);

/* A Redisson tryLock script's reply (server 0), freed: nil = acquired
 * (*ttl = -2), an integer = the holder's remaining lease in ms. */
int redis_ttl_reply(struct lock_ctx *ctx, redisReply *r, const char *key, long long *ttl);

/* The deadline passed while `key` stayed taken: LL_TIMEOUT, unless the
 * key has another type than `type` ("string", "hash") — then LL_ERROR
 * saying which strategy's leftovers block it. */
int redis_timeout(struct lock_ctx *ctx, int server, const char *key, const char *type);

/* DEL the given keys on server i (reset hooks). */
int redis_del(struct lock_ctx *ctx, int server, int nkeys, const char **keys);
/* DEL key on server 0: the release of the seeds' plain locks, and the
 * reset of every single-key lock. */
int redis_del_key(struct lock_ctx *ctx, const char *key);

/* A value no other acquisition anywhere will use: "<owner>:<seq>". */
void redis_new_token(struct lock_ctx *ctx, char *buf, int len);

/* Take `key` on server 0 with one command, tried again at each of
 * lock_poll()'s turns while someone else holds it: SETNX key value when
 * unit is NULL (the seeds' first locks), else SET key value NX `unit`
 * ("EX" or "PX") `ttl`, which also records the lease on ctx (lock_lease).
 * With ctx->fence the try is a script that takes a fencing token in the
 * same step (REDIS_FENCE). At the deadline redis_timeout()'s answer. */
int redis_set_spin(struct lock_ctx *ctx, const char *key, const char *value,
                   const char *unit, int ttl);

/* One try at `key`: 1 taken (its fencing token on ctx when ctx->fence), 0
 * held by someone else, -1 a failure recorded on ctx. */
typedef int (*redis_try_fn)(struct lock_ctx *ctx, const char *key, const void *arg);

/* The spin of every single-key lock: try_once(arg), again at each of
 * lock_poll()'s turns while someone else holds the key; a lease_ms > 0 is
 * recorded on ctx (lock_lease) from the try that took it. At the deadline
 * redis_timeout()'s answer. redis_set_spin() is this with SET or SETNX. */
int redis_spin(struct lock_ctx *ctx, const char *key, redis_try_fn try_once, const void *arg,
               int64_t lease_ms);

/* The token lock of redis-uuid and redis-lua: redis_set_spin() with a new
 * token as the value. On LL_OK the token is in the slot's redis_set. */
int redis_set_token_spin(struct lock_ctx *ctx, const char *key, const char *unit, int ttl);

/* Release a token lock: compare-and-delete of key if it still holds the
 * slot's token (redis_compare_and_delete); LL_ERROR when it no longer did
 * (its expiry ran out). redis-lua's release, shared by name. */
int redis_token_release(struct lock_ctx *ctx, const char *key);

/* Wall clock in milliseconds (CLOCK_REALTIME): for values other clients
 * compare, as redis-getset and Redisson's fair lock do. */
int64_t redis_wall_ms(void);

/* Script sources shared by several strategies. */
extern struct redis_script redis_compare_and_delete;
/* Redisson RLock's tryLock and unlock (redisson.c), also run by the
 * synchronizers' RedissonMultiLock (sync/redisson_multilock.c). */
extern struct redis_script redisson_lock, redisson_unlock;
/* redisson's acquire and release (redisson.c), by name in the tables of
 * the strategies that share them: redisson-wait, redisson-global. */
int redisson_acquire(struct lock_ctx *ctx, const char *key);
int redisson_release(struct lock_ctx *ctx, const char *key);

/* ---------------------------------------------------------------- redis_pubsub.c */

/* Pub/sub, one subscription per channel per process (Redisson's LockPubSub):
 * a message wakes one waiter of this process, the one that has waited
 * longest (a channel's waiters stand in line). */
struct redis_sub;
struct redis_waiter;

/* Register as a waiter on `channel`, subscribed before this returns
 * (LL_OK), or LL_UNAVAILABLE / LL_TIMEOUT. *w may be NULL on LL_OK when
 * the process has too many channels: waits then just sleep. */
int  redis_sub_join(struct lock_ctx *ctx, const char *channel, struct redis_waiter **w);
/* How many of a process's waiters on a channel one message wakes: the
 * rule of the Redisson pub/sub class behind the channel (the synchronizers
 * of sync/). REDIS_WAKE_ONE is redis_sub_join()'s, the lock's. A channel
 * keeps the rule it was first joined with. */
enum redis_wake {
    REDIS_WAKE_ONE,     /* LockPubSub's unlock message: one waiter          */
    REDIS_WAKE_RWLOCK,  /* LockPubSub: "1" (a write unlock) wakes them all   */
    REDIS_WAKE_LATCH,   /* CountDownLatchPubSub: "0" (count reached) all     */
    REDIS_WAKE_VALUE    /* SemaphorePubSub: as many as the permits announced */
};
int  redis_sub_join_as(struct lock_ctx *ctx, const char *channel, enum redis_wake wake,
                       struct redis_waiter **w);
/* Sleep until a message for w (counted in ctx->wakeups) or ms have passed. */
int  redis_sub_wait(struct lock_ctx *ctx, struct redis_waiter *w, int64_t ms);
void redis_sub_leave(struct redis_waiter *w);
/* Is this process subscribed to `channel` now (joining costs no round trip)? */
int  redis_sub_ready(const char *channel);
/* A holder here is about to release the lock that publishes on `channel`,
 * and has released it (`published`: the unlock published a message).
 * Between the two, the release wakes one waiter of this process at once,
 * not after the unlock message's trip through Redis, and that message,
 * when it arrives, wakes nobody. The message is expected from before the
 * unlock is sent, since it may reach the dispatcher before the unlock's own
 * reply reaches the holder. After LOCK_POLL_STREAK such wake-ups in a row
 * one release is left to the message, so waiters on other instances get
 * their turn. redis_sub_releasing() returns NULL when not subscribed. */
struct redis_sub *redis_sub_releasing(const char *channel);
void redis_sub_released(struct redis_sub *sub, int published);
/* The same for a channel joined with another rule than REDIS_WAKE_ONE:
 * `published` says whether the release published `msg`, and as many
 * waiters of this process as msg wakes (the channel's rule) are woken at
 * once, the message then waking nobody here. */
void redis_sub_released_msg(struct redis_sub *sub, int published, const char *msg);

/* ---------------------------------------------------------------- redis_watchdog.c */

/* How a held lock is renewed: a hash lock by EXPIRE or PEXPIRE while it
 * has our field (HEXISTS), a string lock by PEXPIRE while it holds our
 * token (GET compared: redis-renew). */
enum redis_watch_unit { WATCH_SECONDS, WATCH_MILLIS, WATCH_STRING };

/* Count one more entry of this slot into `key` as hash field `field` (or,
 * WATCH_STRING, as the string key holding the token `field`); the first one
 * starts renewing it every lease/3 (EXPIRE lease in seconds or PEXPIRE
 * lease in ms, guarded by HEXISTS or by GET). */
void redis_watch(struct lock_ctx *ctx, const char *key, const char *field,
                 enum redis_watch_unit unit);
/* One entry less; the last one stops the renewal. */
void redis_unwatch(struct lock_ctx *ctx);
/* LL_OK, with ctx->lease_until_us raised to the end of the last lease the
 * acquire or a renewal confirmed; LL_LOST if a renewal found the lock no
 * longer ours. redis_watch() takes the acquire's lease from ctx (the
 * acquire records it with lock_lease() first). */
int  redis_watch_check(struct lock_ctx *ctx, const char *key);
/* ?fence=1 on a hash lock: INCR `counter` while `key` still has our
 * `field`, as one script; the token and its service go to ctx. */
int  redis_watch_token(struct lock_ctx *ctx, const char *key, const char *field,
                       const char *counter, const char *service);

/* Redisson's fencing token counter (RedissonFencedLock, 3.2x): the key
 * "redisson_lock_token:{<lock name>}", INCR at every acquisition; the
 * service its tokens belong to. */
#define REDISSON_FENCE       "redisson"
#define REDISSON_TOKEN_KEY   "redisson_lock_token:{%s}"

#endif /* LOCKLAB_REDIS_PRIVATE_H */
