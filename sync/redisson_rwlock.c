/* redisson_rwlock.c — Redisson's RReadWriteLock (seed 000 §3.9.5), script
 * for script, so that redisson.getReadWriteLock("rwLock") in a Java service
 * and GET /test/read, /test/write here share one lock.
 *
 * Keys, for ?name=N and holder field F = "<instance uuid>:<thread>":
 *   N                            hash {mode: read|write, F: count,
 *                                F:write: count}, PEXPIRE the longest lease
 *   {N}:F:rwlock_timeout:<i>     one string per read entry i of F, with that
 *                                entry's own lease (3.16's fix for a read
 *                                lock outliving the entries that took it)
 *   redisson_rwlock:{N}          the channel: "0" after a read unlock (wakes
 *                                one waiter), "1" after a write unlock (all)
 *
 * read:  free → mode=read, F=1, timeout key 1, PEXPIRE lease; mode read, or
 *        mode write held by F's own write field → one more entry; else the
 *        PTTL to wait.
 * write: free → mode=write, F:write=1; F:write already there → re-entry,
 *        the lease extended by one more; else the PTTL.
 * read unlock: one entry of F less, its timeout key deleted; if other
 *        fields remain, the hash lives as long as their longest timeout
 *        key (or as the writer's, in write mode); otherwise DEL and "0".
 * write unlock: F:write one less; at zero, DEL and "1" unless F still has
 *        read entries (the downgrade), which leaves mode=read (and answers
 *        2 here, so the caller knows nothing was published).
 *
 * The seeds' routes take a lock with a 10 s lease and never unlock, so
 * their browser experiment reproduces: two reads pass together, a second
 * write (or a write after a read, a read after a write) waits for the
 * first's lease, ~10 s. ?hold_ms=&unlock=1 hold and release explicitly.
 * An unlock also wakes the waiters of its own instance at once (one for a
 * read unlock, all for a write unlock, as the message would), and the
 * message then wakes nobody here (locks/redis_pubsub.c).
 * Each request is its own Redisson thread (sync.h), so a later request
 * never re-enters a lock an earlier one left. No watchdog: every lock here
 * has an explicit lease (?lease_ms=, 10 s by default), as the seeds' do.
 *
 * write-read takes the write lock, then the read lock (granted: the writer
 * may read), then gives the write lock back — Redisson's downgrade. read-
 * write takes the read lock and then waits for the write lock, which no
 * reader gets while it reads: 503 at the deadline, as the seeds say
 * ("读锁却不能进入写锁").
 */
#include "sync_private.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct redis_script read_lock = {
    "local mode = redis.call('hget', KEYS[1], 'mode') "
    "if mode == false then "
        "redis.call('hset', KEYS[1], 'mode', 'read') "
        "redis.call('hset', KEYS[1], ARGV[2], 1) "
        "redis.call('set', KEYS[2] .. ':1', 1) "
        "redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]) "
        "redis.call('pexpire', KEYS[1], ARGV[1]) "
        "return nil "
    "end "
    "if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then "
        "local n = redis.call('hincrby', KEYS[1], ARGV[2], 1) "
        "local entry = KEYS[2] .. ':' .. n "
        "redis.call('set', entry, 1) "
        "redis.call('pexpire', entry, ARGV[1]) "
        "local left = redis.call('pttl', KEYS[1]) "
        "redis.call('pexpire', KEYS[1], math.max(left, ARGV[1])) "
        "return nil "
    "end "
    "return redis.call('pttl', KEYS[1])",
    ""
};

static struct redis_script read_unlock = {
    "local mode = redis.call('hget', KEYS[1], 'mode') "
    "if mode == false then "
        "redis.call('publish', KEYS[2], ARGV[1]) "
        "return 1 "
    "end "
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end "
    "local n = redis.call('hincrby', KEYS[1], ARGV[2], -1) "
    "if n == 0 then redis.call('hdel', KEYS[1], ARGV[2]) end "
    "redis.call('del', KEYS[3] .. ':' .. (n + 1)) "
    "if redis.call('hlen', KEYS[1]) > 1 then "
        "local longest = -3 "
        "for _, field in ipairs(redis.call('hkeys', KEYS[1])) do "
            "local count = tonumber(redis.call('hget', KEYS[1], field)) "
            "if type(count) == 'number' then "
                "for i = count, 1, -1 do "
                    "longest = math.max(longest, redis.call('pttl', "
                        "KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)) "
                "end "
            "end "
        "end "
        "if longest > 0 then "
            "redis.call('pexpire', KEYS[1], longest) "
            "return 0 "
        "end "
        "if mode == 'write' then return 0 end "
    "end "
    "redis.call('del', KEYS[1]) "
    "redis.call('publish', KEYS[2], ARGV[1]) "
    "return 1",
    ""
};

static struct redis_script write_lock = {
    "local mode = redis.call('hget', KEYS[1], 'mode') "
    "if mode == false then "
        "redis.call('hset', KEYS[1], 'mode', 'write') "
        "redis.call('hset', KEYS[1], ARGV[2], 1) "
        "redis.call('pexpire', KEYS[1], ARGV[1]) "
        "return nil "
    "end "
    "if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1) "
        "redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + ARGV[1]) "
        "return nil "
    "end "
    "return redis.call('pttl', KEYS[1])",
    ""
};

static struct redis_script write_unlock = {
    "local mode = redis.call('hget', KEYS[1], 'mode') "
    "if mode == false then "
        "redis.call('publish', KEYS[2], ARGV[1]) "
        "return 1 "
    "end "
    "if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end "
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then "
        "redis.call('pexpire', KEYS[1], ARGV[2]) "
        "return 0 "
    "end "
    "redis.call('hdel', KEYS[1], ARGV[3]) "
    "if redis.call('hlen', KEYS[1]) == 1 then "
        "redis.call('del', KEYS[1]) "
        "redis.call('publish', KEYS[2], ARGV[1]) "
    "else "
        "redis.call('hset', KEYS[1], 'mode', 'read') "
        "return 2 "
    "end "
    "return 1",
    ""
};

/* One holder's view of the lock: its keys and arguments. */
struct rw {
    const char *name;
    char field[80], write_field[88], timeout_prefix[200], key_prefix[SYNC_NAME_MAX + 3];
    char channel[SYNC_NAME_MAX + 32], lease[16];
    int  write;                     /* which lock try_once takes */
};

static void rw_init(struct rw *rw, struct lock_ctx *ctx, const struct sync_args *a)
{
    memset(rw, 0, sizeof *rw);
    rw->name = a->name;
    redisson_field(ctx, sync_thread_id(), rw->field, sizeof rw->field);
    snprintf(rw->write_field, sizeof rw->write_field, "%s:write", rw->field);
    snprintf(rw->key_prefix, sizeof rw->key_prefix, "{%s}", a->name);
    snprintf(rw->timeout_prefix, sizeof rw->timeout_prefix, "{%s}:%s:rwlock_timeout",
             a->name, rw->field);
    snprintf(rw->channel, sizeof rw->channel, "redisson_rwlock:{%s}", a->name);
    snprintf(rw->lease, sizeof rw->lease, "%d", a->lease_ms > 0 ? a->lease_ms : 10000);
}

static int rw_try(struct lock_ctx *ctx, void *arg, long long *ttl)
{
    struct rw *rw = arg;
    const char *rargv[5] = { rw->name, rw->timeout_prefix, rw->lease, rw->field, rw->write_field };
    const char *wargv[3] = { rw->name, rw->lease, rw->write_field };
    redisReply *r = rw->write ? redis_eval(ctx, 0, &write_lock, 1, 3, wargv)
                              : redis_eval(ctx, 0, &read_lock, 2, 5, rargv);

    return redis_ttl_reply(ctx, r, rw->name, ttl);
}

static int rw_lock(struct lock_ctx *ctx, struct rw *rw, int write)
{
    int rc;

    rw->write = write;
    rc = redisson_wait(ctx, rw->channel, REDIS_WAKE_RWLOCK, rw_try, rw, 1);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "%s lock of %s not obtained within %d ms",
                   write ? "write" : "read", rw->name, ctx->wait_ms);
    return rc;
}

static int rw_unlock(struct lock_ctx *ctx, struct rw *rw, int write)
{
    const char *rargv[6] = { rw->name, rw->channel, rw->timeout_prefix, rw->key_prefix,
                             "0", rw->field };
    const char *wargv[5] = { rw->name, rw->channel, "1", rw->lease, rw->write_field };
    struct redis_sub *sub = redis_sub_releasing(rw->channel);
    redisReply *r = write ? redis_eval(ctx, 0, &write_unlock, 2, 5, wargv)
                          : redis_eval(ctx, 0, &read_unlock, 4, 6, rargv);
    long long v;
    int rc;

    /* Both scripts answer 1 exactly when they published; a write unlock
     * that leaves its own read entries (the downgrade) answers 2 and
     * publishes nothing. Redisson's answers 1 there too: the answer is
     * the caller's own business, the keys and messages are the same. */
    redis_sub_released_msg(sub, r && r->type == REDIS_REPLY_INTEGER && r->integer == 1,
                           write ? "1" : "0");
    rc = redisson_int(ctx, r, rw->name, -1, &v);

    if (rc == LL_OK && v < 0)
        rc = lock_error(ctx, LL_ERROR, "redis", "attempt to unlock the %s lock of %s, not "
                        "locked by %s (IllegalMonitorStateException: its lease ran out?)",
                        write ? "write" : "read", rw->name, rw->field);
    return rc;
}

/* ---------------------------------------------------------------- operations */

static void answer_hold(const struct sync_args *a, const struct rw *rw, json_t *out)
{
    json_object_set_new(out, "holder", json_string(rw->field));
    json_object_set_new(out, "lease_ms", json_integer(strtol(rw->lease, NULL, 10)));
    sync_granted(a, out);
}

/* Take one lock, hold it, give it back if asked. */
static int take(struct lock_ctx *ctx, const struct sync_args *a, json_t *out, int write)
{
    struct rw rw;
    int rc;

    rw_init(&rw, ctx, a);
    json_object_set_new(out, "lock", json_string(write ? "write" : "read"));
    if ((rc = rw_lock(ctx, &rw, write)) != LL_OK)
        return rc;
    answer_hold(a, &rw, out);
    if (!a->unlock) {
        json_object_set_new(out, "released", json_string("by its lease"));
        return LL_OK;
    }
    sync_released(out);
    rc = rw_unlock(ctx, &rw, write);
    return rc;
}

static int op_read(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, 0);
}

static int op_write(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, 1);
}

/* The comparison's load: a writer one time in four, else a reader. */
static int op_mixed(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    return take(ctx, a, out, rand64() % 4 == 0);
}

/* Downgrade: write, then read (granted to the writer), then write back. */
static int op_write_read(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct rw rw;
    int rc;

    rw_init(&rw, ctx, a);
    if ((rc = rw_lock(ctx, &rw, 1)) != LL_OK)
        return rc;
    if ((rc = rw_lock(ctx, &rw, 0)) != LL_OK) {
        rw_unlock(ctx, &rw, 1);
        return rc;
    }
    json_object_set_new(out, "read_granted_while_writing", json_true());
    rc = rw_unlock(ctx, &rw, 1);
    sync_mark(out, "write_released_at_ms");
    answer_hold(a, &rw, out);
    sync_released(out);
    if (rc == LL_OK)
        rc = rw_unlock(ctx, &rw, 0);
    return rc;
}

/* Upgrade: read, then wait for the write lock — which never comes. */
static int op_read_write(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    struct lock_saved_error e;
    struct rw rw;
    int rc;

    rw_init(&rw, ctx, a);
    if ((rc = rw_lock(ctx, &rw, 0)) != LL_OK)
        return rc;
    sync_mark(out, "read_granted_at_ms");
    rc = rw_lock(ctx, &rw, 1);
    json_object_set_new(out, "write_granted_while_reading", json_boolean(rc == LL_OK));
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "a read lock cannot be upgraded: the write lock "
                   "of %s waits for every reader, this one included (%d ms)", a->name,
                   ctx->wait_ms);
    lock_error_save(ctx, &e);
    if (rc == LL_OK)
        rw_unlock(ctx, &rw, 1);
    rw_unlock(ctx, &rw, 0);
    lock_error_restore(ctx, &e);
    return rc;
}

static int rw_reset(struct lock_ctx *ctx, const char *name)
{
    const char *keys[1] = { name };
    return redisson_del(ctx, 1, keys);
}

static const struct sync_op rw_ops[] = {
    { "read", "wait_ms hold_ms lease_ms unlock",
      "readLock().lock(lease): shared with other readers", op_read },
    { "write", "wait_ms hold_ms lease_ms unlock",
      "writeLock().lock(lease): alone", op_write },
    { "mixed", "wait_ms hold_ms lease_ms unlock",
      "write one time in four, else read (bench/compare's load)", op_mixed },
    { "write-read", "wait_ms hold_ms lease_ms",
      "write, then read (the writer may), then unlock the write: a downgrade", op_write_read },
    { "read-write", "wait_ms lease_ms",
      "read, then wait for write: no upgrade, 503 at the deadline", op_read_write },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_redisson_rwlock = {
    .primitive = "rwlock",
    .backend   = "redisson",
    .library   = "Redisson RReadWriteLock",
    .where     = "hash <name> {mode, <uuid>:<thread>, <uuid>:<thread>:write}, strings {<name>}:<uuid>:<thread>:rwlock_timeout:<i>, channel redisson_rwlock:{<name>}",
    .summary   = "Redisson RReadWriteLock: readers share the hash <name> in mode read, a writer has it alone; each read entry has its own lease key; unlock publishes 0 (one waiter) or 1 (all) (seed 000 §3.9.5)",
    .flaw      = "leases, not holders: a lease shorter than the work lets a writer in beside a reader; one Redis server",
    .props     = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .invariant = "no reader alongside a writer, no two writers",
    .ceiling   = "sync_redisson_rwlock",
    .bench     = "mixed?lease_ms=10000&unlock=1",
    .bench_check = "rw",
    .ops       = rw_ops,
    .reset     = rw_reset,
};
