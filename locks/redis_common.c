/* redis_common.c — what the Redis lock strategies share above the client
 * (clients/redis.h): the slot's hold, the spin of the single-key locks,
 * their tokens and fenced tries, the answer at the deadline, and the DELs
 * of the reset hooks.
 *
 * A single-key lock is taken by one command (SETNX, SET NX EX|PX, or a
 * script that also takes a fencing token in the same step), tried again
 * at each of lock_poll()'s turns while someone else holds the key.
 *
 * Another strategy's lock on the same key is held, never an error. The
 * Redis strategies share the key lock:P in two layouts: a string (SET NX:
 * redis-setnx … redis-lua, redis-renew, redlock, redis-lock-stock) and a
 * hash (redis-reentrant, and Redisson's: redisson, redisson-wait, -fair,
 * hybrid's and fallback's first layer, RedissonMultiLock). A string lock's
 * SETNX or SET NX answers "taken" whatever the key's type, so it waits for
 * a hash as for any holder; a hash lock's script meets a string with
 * WRONGTYPE, which redis_foreign() turns into "held" in the loops every
 * strategy waits in (redis_spin() here, redisson_wait()): the try counts
 * as a failed one and the wait goes on, ctx->foreign counting the
 * meeting. At the deadline redis_timeout() asks the key's TYPE and, when
 * another kind of lock holds it, names that kind in the 503 lock_timeout
 * answer (a string lock learns of a foreign holder only there: asking at
 * every failed try would cost a round trip per wait).
 *
 * A try whose answer was lost may have taken the lock all the same: a SET
 * NX that reached Redis, its reply lost on the way back. When the value it
 * set names this slot (a token "<owner>:<seq>", or the owner itself), the
 * failed acquire gives it back at once, by compare-and-delete, as Redlock
 * releases the servers that did not answer; a value that names nobody
 * (redis-set-nx-ex's "locked") cannot be told from another holder's and
 * stays until its expiry. The fault ?lose_lock=1 loses the answer of a
 * request's first lock command on purpose (redis_lock_cmd(),
 * redis_lock_eval(): the strategies' tries send through them).
 */
#include "redis_private.h"
#include "protocol.h"
#include "../core/util.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char redis_compare_and_delete_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('del', KEYS[1]) else return 0 end";

struct redis_script redis_compare_and_delete = { redis_compare_and_delete_lua, "" };

/* ---------------------------------------------------------------- the hold */

struct redis_hold *redis_hold_of(struct lock_ctx *ctx)
{
    struct redis_set *rs = redis_set_of(ctx);

    if (rs->hold == NULL)
        rs->hold = xcalloc(1, sizeof *rs->hold);
    return rs->hold;
}

/* ---------------------------------------------------------------- a lock's command */

/* The fault ?lose_lock=1, once a request: argv goes out to server 0 on the
 * slot's own connection, its answer is read and thrown away, and the
 * connection dropped, as if the answer had broken on the way back: Redis
 * has run the command, and the caller gets NULL with LL_UNAVAILABLE on
 * ctx, as for any lost answer. (Dropped before the read, the command could
 * still wait in Redis's buffer while the give-back on a new connection
 * overtook it, and the lock taken after its give-back stayed.) */
static redisReply *lose_answer_of(struct lock_ctx *ctx, int argc, const char **argv)
{
    struct redis_pipe p;
    redisReply *r = NULL;

    ctx->lose_lock = 0;
    redis_pipe_init(&p, ctx, 0, REDIS_CMD_TIMEOUT_MS, REDIS_OWN, argv[0]);
    redis_pipe_argv(&p, argc, argv);
    if (redis_pipe_send(&p) != LL_OK) {
        redis_pipe_free(&p);
        return NULL;                        /* nothing was sent */
    }
    if (redis_pipe_recv(&p, &r) == LL_OK && r != NULL)
        freeReplyObject(r);
    redis_pipe_drop(&p);
    lock_error(ctx, LL_UNAVAILABLE, ctx->backend, "%s: sent, its answer lost (?lose_lock=1)",
               argv[0]);
    return NULL;
}

redisReply *redis_lock_cmd(struct lock_ctx *ctx, int argc, const char **argv)
{
    if (ctx->lose_lock)
        return lose_answer_of(ctx, argc, argv);
    return redis_cmd_argv(ctx, 0, argc, argv);
}

redisReply *redis_lock_eval(struct lock_ctx *ctx, struct redis_script *s, int nkeys,
                            int argc, const char **argv)
{
    const char *args[REDIS_EVAL_ARGS + 3];
    char nk[12];
    int i;

    if (!ctx->lose_lock)
        return redis_eval(ctx, 0, s, nkeys, argc, argv);
    assert(argc <= REDIS_EVAL_ARGS);
    snprintf(nk, sizeof nk, "%d", nkeys);
    args[0] = "EVAL", args[1] = s->text, args[2] = nk;     /* the source: runs anywhere */
    for (i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    return lose_answer_of(ctx, argc + 3, args);
}

/* ---------------------------------------------------------------- replies, deadlines */

int redis_ttl_reply(struct lock_ctx *ctx, redisReply *r, const char *key, long long *ttl)
{
    *ttl = -1;
    if (r == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_NIL)
        *ttl = -2;
    else if (r->type == REDIS_REPLY_INTEGER)
        *ttl = r->integer;
    else
        return redis_reply_error(ctx, 0, r, key);
    freeReplyObject(r);
    return LL_OK;
}

int redis_foreign(struct lock_ctx *ctx)
{
    struct redis_set *rs = redis_set_of(ctx);

    if (ctx->err != LL_ERROR || !rs->wrongtype)
        return 0;
    rs->wrongtype = 0;
    ctx->foreign++;
    ctx->err = 0;
    ctx->backend = NULL;
    ctx->errstr[0] = '\0';
    return 1;
}

/* Whose lock a key of this type is, in our naming (the answer's words). */
static const char *layout_of(const char *type)
{
    if (strcmp(type, "hash") == 0)
        return "Redisson's layout, or redis-reentrant's";
    if (strcmp(type, "string") == 0)
        return "a SET NX lock: redis-setnx … redis-lua, redlock";
    return "not a lock of ours";
}

int redis_timeout(struct lock_ctx *ctx, int server, const char *key, const char *type)
{
    char why[sizeof ctx->errstr];
    redisReply *r;

    snprintf(why, sizeof why, "%s", ctx->errstr);
    r = redis_cmd(ctx, server, "TYPE %s", key);
    if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "none") != 0 &&
        strcmp(r->str, type) != 0) {
        if (ctx->foreign == 0)      /* a string lock sees it here only */
            ctx->foreign++;
        lock_error(ctx, LL_TIMEOUT, NULL, "%s not obtained within %d ms: held by another "
                   "strategy's lock (a %s: %s)", key, ctx->wait_ms, r->str, layout_of(r->str));
        freeReplyObject(r);
        return LL_TIMEOUT;
    }
    if (r)
        freeReplyObject(r);
    return lock_error(ctx, LL_TIMEOUT, NULL, "%s", why);
}

int redis_del(struct lock_ctx *ctx, int server, int nkeys, const char **keys)
{
    const char *argv[8];
    redisReply *r;
    int i;

    assert(nkeys + 1 <= 8);
    argv[0] = "DEL";
    for (i = 0; i < nkeys; i++)
        argv[1 + i] = keys[i];
    if ((r = redis_cmd_argv(ctx, server, nkeys + 1, argv)) == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, server, r, keys[0]);
    freeReplyObject(r);
    return LL_OK;
}

int redis_del_key(struct lock_ctx *ctx, const char *key)
{
    const char *keys[1] = { key };
    return redis_del(ctx, 0, 1, keys);
}

void redis_new_token(struct lock_ctx *ctx, char *buf, int len)
{
    char owner[80];

    lock_owner(ctx, owner, sizeof owner);
    snprintf(buf, (size_t)len, "%s:%llu", owner,
             (unsigned long long)++redis_hold_of(ctx)->seq);
}

int64_t redis_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t redis_wall_ms_of(const struct lock_ctx *ctx)
{
    return redis_wall_ms() + ctx->clock_skew_ms;
}

/* SETNX answers 1 or 0; SET … NX answers OK or nil. */
/* The fenced try (?fence=1): the same SETNX or SET NX, and when it takes
 * the lock, INCR of the key's token counter in the same atomic step, so a
 * token belongs to one acquisition and later ones get larger tokens. */
static struct redis_script set_fenced = {
    "local ok; "
    "if ARGV[2] == '' then ok = redis.call('setnx', KEYS[1], ARGV[1]) == 1; "
    "else ok = redis.call('set', KEYS[1], ARGV[1], 'NX', ARGV[2], ARGV[3]); end; "
    "if ok then return redis.call('incr', KEYS[2]); end; return 0;",
    ""
};

/* One try: 1 taken (and on ctx the token when fenced), 0 held by someone
 * else, -1 a failure recorded on ctx. */
static int set_try(struct lock_ctx *ctx, const char *key, const char *value,
                   const char *unit, int ttl)
{
    char counter[LOCK_KEY_MAX + 24], ttls[16];
    const char *argv[6];
    redisReply *r;
    int got;

    if (ctx->fence) {
        snprintf(counter, sizeof counter, REDIS_FENCE_KEY, key);
        snprintf(ttls, sizeof ttls, "%d", ttl);
        argv[0] = key, argv[1] = counter, argv[2] = value;
        argv[3] = unit ? unit : "", argv[4] = ttls;
        if ((r = redis_lock_eval(ctx, &set_fenced, 2, 5, argv)) == NULL)
            return -1;
        if (r->type != REDIS_REPLY_INTEGER)
            return redis_reply_error(ctx, 0, r, key), -1;
        ctx->token = r->integer;
        ctx->token_src = REDIS_FENCE;
    } else {
        snprintf(ttls, sizeof ttls, "%d", ttl);
        argv[0] = unit ? "SET" : "SETNX", argv[1] = key, argv[2] = value;
        argv[3] = "NX", argv[4] = unit, argv[5] = ttls;
        if ((r = redis_lock_cmd(ctx, unit ? 6 : 3, argv)) == NULL)
            return -1;
        if (r->type == REDIS_REPLY_ERROR || (!unit && r->type != REDIS_REPLY_INTEGER))
            return redis_reply_error(ctx, 0, r, key), -1;
    }
    got = ctx->fence ? r->integer > 0 : unit ? r->type == REDIS_REPLY_STATUS : r->integer == 1;
    freeReplyObject(r);
    return got;
}

int redis_spin(struct lock_ctx *ctx, const char *key, const char *type, redis_try_fn try_once,
               const void *arg, int64_t lease_ms)
{
    int64_t sent;
    int got;

    if (lock_poll_first(ctx, key) != LL_OK)
        return redis_timeout(ctx, 0, key, type);
    for (;;) {
        sent = now_us();
        redis_set_of(ctx)->wrongtype = 0;
        if ((got = try_once(ctx, key, arg)) < 0) {
            if (!redis_foreign(ctx))
                return ctx->err;
            got = 0;            /* another strategy's lock: held */
        }
        if (got) {
            if (lease_ms > 0)   /* the lease runs from the try that took it */
                lock_lease(ctx, sent, lease_ms);
            return LL_OK;
        }
        if (lock_poll(ctx, key) != LL_OK)
            return redis_timeout(ctx, 0, key, type);
    }
}

struct set_args {
    const char *value, *unit;
    int         ttl;
};

static int set_try_args(struct lock_ctx *ctx, const char *key, const void *arg)
{
    const struct set_args *a = arg;
    return set_try(ctx, key, a->value, a->unit, a->ttl);
}

/* After a failed acquire whose last SET may have landed (its answer lost):
 * delete key if it holds value, which names this slot; the acquire's
 * failure stays the answer. */
static void set_give_back(struct lock_ctx *ctx, const char *key, const char *value)
{
    const char *argv[2] = { key, value };
    struct lock_saved_error e;
    char owner[80];
    redisReply *r;

    lock_owner(ctx, owner, sizeof owner);
    if (strncmp(value, owner, strlen(owner)) != 0)
        return;                 /* names nobody: cannot be told from another's */
    lock_error_save(ctx, &e);
    if ((r = redis_eval(ctx, 0, &redis_compare_and_delete, 1, 2, argv)) != NULL)
        freeReplyObject(r);
    lock_error_restore(ctx, &e);
}

int redis_set_spin(struct lock_ctx *ctx, const char *key, const char *value,
                   const char *unit, int ttl)
{
    const struct set_args a = { value, unit, ttl };
    int rc = redis_spin(ctx, key, "string", set_try_args, &a,
                        !unit ? 0 : unit[0] == 'E' ? ttl * 1000LL : ttl);

    if (rc == LL_UNAVAILABLE || rc == LL_UNKNOWN)   /* the last SET may have landed */
        set_give_back(ctx, key, value);
    return rc;
}

int redis_set_token_spin(struct lock_ctx *ctx, const char *key, const char *unit, int ttl)
{
    char token[REDIS_TOKEN_MAX];
    int rc;

    redis_new_token(ctx, token, sizeof token);
    if ((rc = redis_set_spin(ctx, key, token, unit, ttl)) == LL_OK)
        memcpy(redis_hold_of(ctx)->token, token, sizeof token);
    return rc;
}

/* The Redis family: a slot keeps its Redis connections (clients/redis.h). */
const struct lock_family lock_family_redis = {
    .name     = "redis",
    .ctx_free = redis_ctx_free,
};
