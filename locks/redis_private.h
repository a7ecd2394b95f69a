/* redis_private.h — what the Redis strategies share (locks/redis_*.c,
 * locks/redisson*.c, locks/redlock.c), and the Redisson synchronizers of
 * sync/ with them.
 *
 * Connections, commands, scripts and their errors are the Redis client's
 * (clients/redis.h): on the loop the stateless commands of every request
 * share one pipelined connection per server, what needs a connection's
 * state goes on the slot's own. This header adds the locks' side:
 *
 * The slot's hold (struct redis_hold, made at its first use): the token
 * it set, its expiry or validity, the replicas redisson-wait counts.
 *
 * Pub/sub (redis_pubsub.c): one dispatcher per process and node holds
 * the subscriptions (each channel on its slot's master on a cluster) and
 * wakes one waiter per message; Redisson's subscribe-
 * and-wait loop over it (redisson_common.c), one for the strategies and
 * the synchronizers.
 *
 * Watchdog (redis_watchdog.c): one process-wide worker, started lazily,
 * renews every hash lock currently held by any slot at lease/3, and stops
 * renewing at the holder's last release.
 *
 * Single-server strategies use server 0 (the first of --redis).
 */
#ifndef LOCKLAB_REDIS_PRIVATE_H
#define LOCKLAB_REDIS_PRIVATE_H

#include "lock.h"
#include "../clients/redis.h"
#include "../core/config.h"
#include "../core/util.h"

#include <stdint.h>

#define REDIS_TOKEN_MAX      96     /* "<instance uuid>:<slot>:<seq>" and more */

/* Fencing tokens of the plain Redis locks (?fence=1): INCR of the counter
 * "locklab_fence:{<key>}" in the step that takes the lock; they compare
 * among the locks that share the counter, whose service lock_ops.fence
 * calls "redis". The name is Redisson's cluster trick: the lock key keeps
 * its name and its companion carries it as a hash tag, so both live in
 * one slot of a Redis Cluster (one script may touch both). */
#define REDIS_FENCE          "redis"
#define REDIS_FENCE_KEY      "locklab_fence:{%s}"

/* A slot's state of the lock it is taking or holding (redis_set->hold). */
struct redis_hold {
    char     token[REDIS_TOKEN_MAX]; /* the value we set (uuid, lua, redlock) */
    int64_t  expires_wall_ms;        /* redis-getset: our expiry timestamp    */
    int64_t  valid_until_ms;         /* redlock: end of validity (monotonic)  */
    uint64_t seq;                    /* acquisitions made by this slot        */

    /* redisson-wait: the replicas server 0's master had (ROLE), asked on
     * its own connection of generation replicas_gen at replicas_at_ms. */
    int      replicas;
    unsigned replicas_gen;
    int64_t  replicas_at_ms;
};

/* ---------------------------------------------------------------- redis_common.c */

/* ctx's hold, made at its first use. */
struct redis_hold *redis_hold_of(struct lock_ctx *ctx);

/* A lock's own command or script on server 0, as redis_cmd_argv() and
 * redis_eval(): what a strategy's try sends. The fault ?lose_lock=1 loses
 * the answer of the first one a request sends (the command runs, the
 * caller gets NULL and LL_UNAVAILABLE). */
redisReply *redis_lock_cmd(struct lock_ctx *ctx, int argc, const char **argv);
redisReply *redis_lock_eval(struct lock_ctx *ctx, struct redis_script *s, int nkeys,
                            int argc, const char **argv);

/* A Redisson tryLock script's reply (server 0), freed: nil = acquired
 * (*ttl = -2), an integer = the holder's remaining lease in ms. */
int redis_ttl_reply(struct lock_ctx *ctx, redisReply *r, const char *key, long long *ttl);

/* After a try of a lock failed (ctx->err): did it fail because the key
 * holds another strategy's kind of lock (the client saw WRONGTYPE: a hash
 * lock's script on a string, or the reverse)? Then the lock is held by
 * someone else, not broken: the meeting is counted (ctx->foreign), the
 * failure cleared, and 1 returned, so the caller waits as for any holder.
 * 0: a real failure, left on ctx. The loops call it (redis_spin(),
 * redisson_wait()), clearing the set's wrongtype before each try. */
int redis_foreign(struct lock_ctx *ctx);

/* The deadline passed while `key` stayed taken: LL_TIMEOUT. When the key
 * has another type than `type` ("string", "hash") the answer names it:
 * another strategy's lock holds it (counted in ctx->foreign, once). */
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
 * same step (REDIS_FENCE). At the deadline redis_timeout()'s answer. When
 * the last try's answer was lost and value names this slot (a token, the
 * owner), the key is given back if it holds value (redis_common.c). */
int redis_set_spin(struct lock_ctx *ctx, const char *key, const char *value,
                   const char *unit, int ttl);

/* One try at `key`: 1 taken (its fencing token on ctx when ctx->fence), 0
 * held by someone else, -1 a failure recorded on ctx. */
typedef int (*redis_try_fn)(struct lock_ctx *ctx, const char *key, const void *arg);

/* The spin of every single-key lock: try_once(arg), again at each of
 * lock_poll()'s turns while someone else holds the key — or another
 * strategy's kind of lock does (redis_foreign()); a lease_ms > 0 is
 * recorded on ctx (lock_lease) from the try that took it. At the deadline
 * redis_timeout()'s answer for a key of `type` ("string", "hash").
 * redis_set_spin() is this with SET or SETNX. */
int redis_spin(struct lock_ctx *ctx, const char *key, const char *type, redis_try_fn try_once,
               const void *arg, int64_t lease_ms);

/* The token lock of redis-uuid and redis-lua: redis_set_spin() with a new
 * token as the value. On LL_OK the token is in the slot's hold. */
int redis_set_token_spin(struct lock_ctx *ctx, const char *key, const char *unit, int ttl);

/* Release a token lock: compare-and-delete of key if it still holds the
 * slot's token (redis_compare_and_delete); LL_ERROR when it no longer did
 * (its expiry ran out). redis-lua's release, shared by name. */
int redis_token_release(struct lock_ctx *ctx, const char *key);

/* Wall clock in milliseconds (CLOCK_REALTIME): for values other clients
 * compare, as redis-getset and Redisson's fair lock do. */
int64_t redis_wall_ms(void);
/* The same as the request sees it: ahead by the fault ?clock_skew_ms. */
int64_t redis_wall_ms_of(const struct lock_ctx *ctx);

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
 * a message wakes one waiter of this process. */
struct redis_sub;

/* Register as a waiter on `channel`, subscribed before this returns
 * (LL_OK), or LL_UNAVAILABLE / LL_TIMEOUT. *sub may be NULL on LL_OK when
 * the process has too many channels: waits then just sleep. */
int  redis_sub_join(struct lock_ctx *ctx, const char *channel, struct redis_sub **sub);
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
                       struct redis_sub **sub);
/* Sleep until a message (counted in ctx->wakeups) or ms have passed. */
int  redis_sub_wait(struct lock_ctx *ctx, struct redis_sub *sub, int64_t ms);
void redis_sub_leave(struct redis_sub *sub);
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

/* ---------------------------------------------------------------- redisson_common.c */

/* Redisson's lock field for holder tid: "<instance uuid>:<tid>" (the
 * synchronizers, whose every request is a Redisson thread of its own). */
void redisson_field(const struct lock_ctx *ctx, unsigned long long tid, char *buf, int len);

/* One attempt of an acquisition. LL_OK with *ttl = -2 when it succeeded,
 * else how long at most to wait before the next attempt (ms; -1: until a
 * message), or a failure. */
typedef int (*redisson_try_fn)(struct lock_ctx *ctx, void *arg, long long *ttl);

/* Redisson's acquire loop (RedissonLock.lock, RSemaphore.acquire …), the
 * one of every Redisson lock and synchronizer: try (unless try_first is 0:
 * the caller tried already, or the process is subscribed and the try in
 * the loop comes as early); if that failed, subscribe to `channel`, then
 * try again, waiting between tries for a message (woken as `wake` says)
 * or the ttl the last try gave, never past the deadline. A try that met
 * another strategy's kind of lock (redis_foreign()) failed like any other,
 * and the next comes after a jittered --retry-ms. LL_TIMEOUT at the
 * deadline (lock_timeout()'s answer on ctx). */
int redisson_wait(struct lock_ctx *ctx, const char *channel, enum redis_wake wake,
                  redisson_try_fn try_once, void *arg, int try_first);

/* An integer reply (nil counts as `nil`) from server 0 on key: LL_OK and
 * *v, or a failure recorded on ctx. Frees the reply. */
int redisson_int(struct lock_ctx *ctx, redisReply *r, const char *key, long long nil,
                 long long *v);

/* DEL the keys of a name (the synchronizers' reset hooks). */
int redisson_del(struct lock_ctx *ctx, int nkeys, const char **keys);

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
