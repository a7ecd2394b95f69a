/* buckets.c — a hot product split in K buckets: the pass of the bucket
 * strategies (mysql-buckets, redis-buckets), and the reset and reading of
 * the buckets for the server (buckets.h).
 *
 * One hot row, or one Redis key, sells one unit at a time: every purchase
 * of the product waits for the one before it. Split the stock in K
 * buckets and K purchases can sell at once. A purchase starts at a bucket
 * that moves on with each purchase of its instance (round robin, from a
 * start of its own per process, so that instances do not march in step),
 * takes one unit there with the bucket's own atomic step (mysql-update's
 * conditional UPDATE, redis-decr's script), and moves to the next bucket
 * when that one is empty.
 *
 * Sold out, exactly. During a run the stock never increases: a bucket
 * found empty stays empty (only POST /stock/reset refills, and a reset
 * overwrites every count anyway). So when one pass has found each of the
 * K buckets empty, at the end of the pass all K are empty at once: the
 * product is sold out, and the answer is not a false sold-out, however
 * many purchases ran beside it. What remains is to be sure the pass saw
 * every bucket: an instance's K may be up to BUCKETS_FRESH_MS old (a
 * reset on another instance), so before answering sold out the pass reads
 * K again; a row's id never changes (store/buckets.c), so the same K is
 * the same buckets, and a different K means another pass over the new
 * ones.
 *
 * The reset spreads a count over the K buckets (count / K each, one more
 * for the first count % K), empties the buckets past K, and runs the
 * Redis stock's reset for each bucket as for any product: its epoch first,
 * then the row, then the Redis keys (locks/redis_stock.c). GET /stock adds
 * the buckets up, in MariaDB and in Redis, so that the harness's oversold
 * and lost updates are the product's.
 */
#include "buckets.h"
#include "lock.h"
#include "redis_stock.h"
#include "../core/util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BUCKETS_FRESH_MS 100    /* an instance's K on a sale's way, at most */
#define BUCKETS_PASSES   4      /* K changed under the pass: look again     */

/* ---------------------------------------------------------------- the sale */

static atomic_uint next_start;
static atomic_int  started;

int buckets_sell(struct lock_ctx *ctx, const struct product *p, bucket_sell_fn sell,
                 long long *remaining)
{
    struct stock_buckets sb;
    long long left;
    unsigned start;
    int i, j, k, pass, rc;

    *remaining = -1;
    if (ctx->order != NULL || ctx->qty != 1)
        return lock_error(ctx, LL_BADREQ, NULL, "%s sells one unit a purchase of GET "
                          "/check/lock: an order of several units could find every bucket "
                          "short of them while the product has enough", ctx->ops->name);
    if (!atomic_exchange(&started, 1))
        atomic_store(&next_start, (unsigned)getpid() * 2654435761u);
    if ((rc = stock_buckets_get(ctx, p, &sb, BUCKETS_FRESH_MS)) != LL_OK)
        return rc;
    start = atomic_fetch_add(&next_start, 1);
    for (pass = 0; pass < BUCKETS_PASSES; pass++) {
        for (j = 0; j < sb.k; j++) {
            i = (int)((start + (unsigned)j) % (unsigned)sb.k);
            if ((rc = sell(ctx, &sb.b[i], &left)) != LL_SOLD_OUT)
                return rc;                  /* sold, or a failure */
        }
        k = sb.k;                           /* all empty: still K buckets? */
        if ((rc = stock_buckets_get(ctx, p, &sb, 0)) != LL_OK)
            return rc;
        if (sb.k == k)
            return LL_SOLD_OUT;
    }
    return LL_SOLD_OUT;                     /* resets kept changing K */
}

/* ---------------------------------------------------------------- reset */

int buckets_reset_begin(struct lock_ctx *ctx, const struct product *p, int k,
                        struct buckets_reset *br)
{
    struct stock_buckets sb;
    int i, rc;

    memset(br, 0, sizeof *br);
    br->k = k;
    if ((rc = stock_buckets_get(ctx, p, &sb, 0)) != LL_OK)
        return rc;
    br->n = k > sb.k ? k : sb.k;
    if (br->n > 1 && strlen(p->code) > STOCK_BUCKET_CODE_MAX)
        return lock_error(ctx, LL_BADREQ, NULL, "a product in buckets has a code of at most "
                          "%d characters", STOCK_BUCKET_CODE_MAX);
    br->b[0] = *p;
    for (i = 1; i < br->n; i++) {
        if ((rc = stock_bucket_row(ctx, p, i, &br->b[i])) != LL_OK ||
            (rc = redis_stock_reset_begin(ctx, &br->b[i], &br->epoch[i])) != LL_OK)
            return rc;
    }
    return LL_OK;
}

int buckets_reset_end(struct lock_ctx *ctx, const struct buckets_reset *br, long long count,
                      json_t *body)
{
    json_t *split, *redis;
    long long share;
    int i, old_k, rc;

    if (br->n <= 1)
        return LL_OK;
    for (i = 1; i < br->n; i++) {
        share = i < br->k ? stock_bucket_share(count, br->k, i) : 0;
        if ((rc = stock_set(ctx, &br->b[i], share)) != LL_OK)
            return rc;
    }
    if ((rc = stock_buckets_set(ctx, &br->b[0], br->k, &old_k)) != LL_OK)
        return rc;
    split = json_array();
    redis = json_array();
    for (i = 0; i < br->n; i++) {
        char wh[16];
        share = i < br->k ? stock_bucket_share(count, br->k, i) : 0;
        snprintf(wh, sizeof wh, "%03d", i + 1);
        if (i < br->k)
            json_array_append_new(split, json_pack("{s:s,s:I}", "warehouse", wh,
                                                   "count", (json_int_t)share));
        if (i > 0)
            json_array_append_new(redis, redis_stock_load(ctx, &br->b[i], share,
                                                          br->epoch[i]));
    }
    json_object_set_new(body, "buckets", split);
    json_object_set_new(body, "redis_buckets", redis);
    return LL_OK;
}

/* ---------------------------------------------------------------- reading */

/* o[key] += one[key] for each integer key; with `unknown`, a -1 (not
 * known: no stream, too many entries to count) stays -1. */
static void sum_ints(json_t *o, const json_t *one, const char *const *keys, int unknown)
{
    for (; *keys; keys++) {
        json_int_t a = json_integer_value(json_object_get(o, *keys));
        json_int_t b = json_integer_value(json_object_get(one, *keys));
        json_object_set_new(o, *keys, json_integer(unknown && (a < 0 || b < 0) ? -1 : a + b));
    }
}

static void and_bools(json_t *o, const json_t *one, const char *const *keys)
{
    for (; *keys; keys++)
        json_object_set_new(o, *keys, json_boolean(json_is_true(json_object_get(o, *keys)) &&
                                                   json_is_true(json_object_get(one, *keys))));
}

/* The Redis stocks of the buckets, added up into the shape of one
 * (redis_stock.h): counts summed, "loaded", "reconciled", "drained" true
 * when every bucket's is, the epochs bucket 0's; each under "buckets". A
 * bucket that could not be read makes the whole its failure. */
static json_t *redis_sum(struct lock_ctx *ctx, const struct stock_buckets *sb)
{
    static const char *const top[] = { "count", "sold", "load", "in_flight", NULL };
    static const char *const stream[] = { "entries", "pending", "undelivered", "units", NULL };
    static const char *const mysql[] = { "count", "applied", NULL };
    static const char *const flags[] = { "loaded", "reconciled", "drained", NULL };
    json_t *sum = NULL, *each = json_array(), *one;
    int i;

    for (i = 0; i < sb->k; i++) {
        one = redis_stock_json(ctx, &sb->b[i]);
        json_array_append_new(each, one);
        if (json_object_get(one, "error")) {
            json_decref(sum);
            sum = json_deep_copy(one);
            break;
        }
        if (sum == NULL) {
            sum = json_deep_copy(one);
            continue;
        }
        sum_ints(sum, one, top, 0);
        sum_ints(json_object_get(sum, "stream"), json_object_get(one, "stream"), stream, 1);
        sum_ints(json_object_get(sum, "mysql"), json_object_get(one, "mysql"), mysql, 0);
        and_bools(sum, one, flags);
    }
    json_object_set_new(sum, "buckets", each);
    return sum;
}

int buckets_stock(struct lock_ctx *ctx, const struct product *p, long long *total,
                  json_t **split, json_t **redis)
{
    struct stock_buckets sb;
    long long count;
    char wh[16];
    int i, rc;

    *split = *redis = NULL;
    if ((rc = stock_buckets_get(ctx, p, &sb, 0)) != LL_OK || sb.k == 1)
        return rc;
    *total = 0;
    *split = json_array();
    for (i = 0; i < sb.k; i++) {
        if ((rc = stock_read(ctx, &sb.b[i], &count)) != LL_OK) {
            json_decref(*split);
            *split = NULL;
            return rc;
        }
        *total += count;
        snprintf(wh, sizeof wh, "%03d", i + 1);
        json_array_append_new(*split, json_pack("{s:s,s:I}", "warehouse", wh,
                                                "count", (json_int_t)count));
    }
    *redis = redis_sum(ctx, &sb);
    return LL_OK;
}
