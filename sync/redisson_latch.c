/* redisson_latch.c — Redisson's RCountDownLatch (seed 000 §3.9.7), so that
 * redisson.getCountDownLatch("latch") in Java and GET /test/latch, /test/
 * countdown here wait and count on one latch.
 *
 * Keys, for ?name=N: the string N, the count, which exists only while the
 * latch is closed, and the channel redisson_countdownlatch__channel__{N}:
 *
 *   trySetCount(c): if N does not exist, SET N c and publish "1" (new
 *                   count); 1, else 0
 *   countDown():    DECR N; at or below zero DEL N; at zero publish "0"
 *   await():        while GET N > 0, wait for the "0" message, which
 *                   wakes every waiter (CountDownLatchPubSub)
 *
 * The seeds' demo: GET /test/latch is trySetCount(6) then await(); each
 * GET /test/countdown is trySetCount(6) then countDown(): the waiter is
 * answered at the sixth countdown, on whatever instance it lands. Its
 * flaw is the seeds' own: countdown's trySetCount re-arms a latch that
 * opened already, so a seventh countdown starts a new round of six.
 */
#include "sync_private.h"

#include <stdio.h>

static struct redis_script try_set_count = {
    "if redis.call('exists', KEYS[1]) == 1 then return 0 end "
    "redis.call('set', KEYS[1], ARGV[2]) "
    "redis.call('publish', KEYS[2], ARGV[1]) "
    "return 1",
    ""
};

static struct redis_script count_down = {
    "local left = redis.call('decr', KEYS[1]) "
    "if left <= 0 then redis.call('del', KEYS[1]) end "
    "if left == 0 then redis.call('publish', KEYS[2], ARGV[1]) end "
    "return left",
    ""
};

static void channel_of(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "redisson_countdownlatch__channel__{%s}", name);
}

static int get_count(struct lock_ctx *ctx, const char *name, long long *count)
{
    return redisson_int(ctx, redis_cmd(ctx, 0, "GET %s", name), name, 0, count);
}

static int set_count(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char channel[SYNC_NAME_MAX + 48], count[24];
    const char *argv[4] = { a->name, channel, "1", count };
    long long set;
    int rc;

    channel_of(a->name, channel, sizeof channel);
    snprintf(count, sizeof count, "%lld", a->count);
    rc = redisson_int(ctx, redis_eval(ctx, 0, &try_set_count, 2, 4, argv), a->name, 0, &set);
    if (rc == LL_OK)
        json_object_set_new(out, "count_set", json_boolean(set == 1));
    return rc;
}

/* The "try" of await: open when the count is gone. */
static int latch_try(struct lock_ctx *ctx, void *arg, long long *ttl)
{
    long long count;
    int rc = get_count(ctx, arg, &count);

    *ttl = count > 0 ? -1 : -2;
    return rc;
}

/* ---------------------------------------------------------------- operations */

static int op_await(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char channel[SYNC_NAME_MAX + 48];
    long long count;
    int rc;

    if (a->count >= 0 && (rc = set_count(ctx, a, out)) != LL_OK)
        return rc;
    if ((rc = get_count(ctx, a->name, &count)) != LL_OK)
        return rc;
    json_object_set_new(out, "count_before", json_integer(count));
    channel_of(a->name, channel, sizeof channel);
    rc = redisson_wait(ctx, channel, REDIS_WAKE_LATCH, latch_try, (void *)a->name, 1);
    if (rc == LL_TIMEOUT)
        lock_error(ctx, LL_TIMEOUT, NULL, "latch %s still closed after %d ms", a->name,
                   ctx->wait_ms);
    if (rc == LL_OK) {
        json_object_set_new(out, "opened", json_true());
        sync_granted(a, out);
    }
    return rc;
}

static int op_count_down(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    char channel[SYNC_NAME_MAX + 48];
    const char *argv[3] = { a->name, channel, "0" };
    long long left;
    int rc;

    if (a->count >= 0 && (rc = set_count(ctx, a, out)) != LL_OK)
        return rc;
    channel_of(a->name, channel, sizeof channel);
    sync_mark(out, "counted_at_ms");
    rc = redisson_int(ctx, redis_eval(ctx, 0, &count_down, 2, 3, argv), a->name, 0, &left);
    if (rc == LL_OK) {
        json_object_set_new(out, "count_before", json_integer(left + 1));
        json_object_set_new(out, "count_after", json_integer(left < 0 ? 0 : left));
        json_object_set_new(out, "opened", json_boolean(left == 0));
    }
    return rc;
}

static int op_try_set(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    int rc;

    if ((rc = sync_need(ctx, a->count, "count")) != LL_OK)
        return rc;
    return set_count(ctx, a, out);
}

static int op_count(struct lock_ctx *ctx, const struct sync_args *a, json_t *out)
{
    long long count;
    int rc = get_count(ctx, a->name, &count);

    if (rc == LL_OK)
        json_object_set_new(out, "count", json_integer(count));
    return rc;
}

static int latch_reset(struct lock_ctx *ctx, const char *name)
{
    const char *keys[1] = { name };
    return redisson_del(ctx, 1, keys);
}

static const struct sync_op latch_ops[] = {
    { "await", "wait_ms count", "[trySetCount(count)]; await(): until the count is zero",
      op_await },
    { "count-down", "count", "[trySetCount(count)]; countDown()", op_count_down },
    { "try-set-count", "count", "trySetCount(count): only while open", op_try_set },
    { "count", "", "getCount()", op_count },
    { NULL, NULL, NULL, NULL },
};

const struct sync_ops sync_redisson_latch = {
    .primitive = "latch",
    .backend   = "redisson",
    .library   = "Redisson RCountDownLatch",
    .where     = "string <name> (the count, while closed), channel redisson_countdownlatch__channel__{<name>}",
    .summary   = "Redisson RCountDownLatch: a count <name> set once, DECR by each countDown, deleted at zero with a message that wakes every await (seed 000 §3.9.7)",
    .flaw      = "the seeds' countDown() calls trySetCount(6) first, re-arming an opened latch; a count set by nobody reads as open",
    .props     = LOCK_DISTRIBUTED | LOCK_EXACT,
    .invariant = "each countDown counts once (no count answered twice), so the latch opens at exactly the count-th",
    .ceiling   = "sync_redisson_latch",
    .bench     = "count-down?count=1000000000",
    .bench_check = "distinct:count_before",
    .ops       = latch_ops,
    .reset     = latch_reset,
};
