/* buckets.c — a product's stock split in K buckets (buckets.h): the rows,
 * K in db_bucket, and each instance's copy of them.
 *
 * A sale must know K, and reading it at every sale would cost a round
 * trip. So an instance keeps each product's K and its buckets' row ids,
 * and reads K again when its copy is older than the caller allows: the
 * strategies allow BUCKETS_FRESH_MS on their way (a reset on another
 * instance is seen that soon) and 0 before they answer sold out, which is
 * what makes that answer exact (locks/buckets.c). The ids never change
 * (rows are never deleted), so only the K and the ids of buckets not seen
 * before are read.
 *
 * The reset spreads a count over the K buckets (count / K each, one more
 * for the first count % K), empties the buckets past K, and runs the
 * Redis stock's reset for each bucket as for any product: its epoch first,
 * then the row, then the Redis keys (redis_stock.c); a bucket past K
 * leaves Redis (redis_stock_unload()), so the consumers' list is the
 * buckets in use. GET /stock adds the
 * buckets up, in MariaDB and in Redis, so that the harness's oversold and
 * lost updates are the product's.
 */
#include "buckets.h"
#include "redis_stock.h"
#include "../clients/db.h"
#include "../core/ctx.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_CACHE 16

struct cached {
    char      code[STOCK_CODE_MAX + 1];
    int       k, known;                     /* K, and the ids found       */
    long long id[STOCK_BUCKETS_MAX];
    int64_t   read_ms;                      /* when K was read            */
};

static struct cached cache[BUCKET_CACHE];
static int ncache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Its name; a code longer than STOCK_BUCKET_CODE_MAX is refused before. */
static void bucket_name(char *out, size_t size, const char *code, int i)
{
    char name[STOCK_CODE_MAX + 24];

    if (i == 0)
        snprintf(name, sizeof name, "%s", code);
    else
        snprintf(name, sizeof name, "{%s:b%d}", code, i + 1);
    strlcopy(out, name, size);
}

static void warehouse(char *out, size_t size, int i)
{
    snprintf(out, size, "%03d", i + 1);
}

static void bucket_product(struct product *out, const struct product *p, int i, long long id)
{
    out->id = id;
    bucket_name(out->code, sizeof out->code, p->code, i);
    snprintf(out->key, sizeof out->key, "lock:%s", out->code);
}

/* The cache's entry of code (made empty when missing); under cache_lock. */
static struct cached *entry(const char *code)
{
    int i;

    for (i = 0; i < ncache; i++)
        if (!strcmp(cache[i].code, code))
            return &cache[i];
    if (ncache == BUCKET_CACHE)
        return NULL;
    memset(&cache[ncache], 0, sizeof cache[ncache]);
    strlcopy(cache[ncache].code, code, sizeof cache[ncache].code);
    return &cache[ncache++];
}

static int read_k(struct lock_ctx *ctx, const char *code, int *k)
{
    static const char sql[] = "SELECT buckets FROM db_bucket WHERE product_code = ?";
    long long rows = 0, v = 1;
    int rc = db_exec(ctx, sql, &rows, "s>l", code, &v);

    *k = rows == 1 && v >= 1 && v <= STOCK_BUCKETS_MAX ? (int)v : 1;
    return rc;
}

static int read_id(struct lock_ctx *ctx, const char *code, int i, long long *id)
{
    static const char sql[] =
        "SELECT id FROM db_stock WHERE product_code = ? AND stock_code = ?";
    char wh[16];
    long long rows = 0;
    int rc;

    warehouse(wh, sizeof wh, i);
    if ((rc = db_exec(ctx, sql, &rows, "ss>l", code, wh, id)) != LL_OK)
        return rc;
    if (rows == 0)
        return lock_error(ctx, LL_ERROR, "mysql", "bucket %d of product %s (warehouse %s) "
                          "has no row: POST /stock/reset?buckets= makes it", i + 1, code, wh);
    return LL_OK;
}

int stock_buckets_get(struct lock_ctx *ctx, const struct product *p, struct stock_buckets *out,
                      int max_age_ms)
{
    long long id[STOCK_BUCKETS_MAX];
    struct cached *c;
    int i, k, known, rc;

    pthread_mutex_lock(&cache_lock);
    c = entry(p->code);
    known = c ? c->known : 0;
    if (c && c->k > 0 && now_ms() - c->read_ms < max_age_ms) {
        out->k = c->k;
        memcpy(id, c->id, sizeof id);
        pthread_mutex_unlock(&cache_lock);
    } else {
        if (c)
            memcpy(id, c->id, sizeof id);
        pthread_mutex_unlock(&cache_lock);
        if ((rc = read_k(ctx, p->code, &k)) != LL_OK)
            return rc;
        id[0] = p->id;
        for (i = known > 1 ? known : 1; i < k; i++)
            if ((rc = read_id(ctx, p->code, i, &id[i])) != LL_OK)
                return rc;
        out->k = k;
        pthread_mutex_lock(&cache_lock);
        if (c) {
            memcpy(c->id, id, sizeof id);
            c->k = k;
            c->known = k > c->known ? k : c->known;
            c->read_ms = now_ms();
        }
        pthread_mutex_unlock(&cache_lock);
    }
    for (i = 0; i < out->k; i++)
        bucket_product(&out->b[i], p, i, i == 0 ? p->id : id[i]);
    return LL_OK;
}

int stock_bucket_row(struct lock_ctx *ctx, const struct product *p, int i, struct product *out)
{
    static const char sql[] =
        "INSERT INTO db_stock (product_code, stock_code, count, version) VALUES (?, ?, 0, 0) "
        "ON DUPLICATE KEY UPDATE product_code = product_code";
    char wh[16];
    long long id;
    int rc;

    if (i == 0) {
        *out = *p;
        return LL_OK;
    }
    warehouse(wh, sizeof wh, i);
    if ((rc = db_exec(ctx, sql, NULL, "ss", p->code, wh)) != LL_OK ||
        (rc = read_id(ctx, p->code, i, &id)) != LL_OK)
        return rc;
    bucket_product(out, p, i, id);
    return LL_OK;
}

int stock_buckets_set(struct lock_ctx *ctx, const struct product *p, int k, int *old_k)
{
    static const char sql[] =
        "INSERT INTO db_bucket (product_code, buckets) VALUES (?, ?) "
        "ON DUPLICATE KEY UPDATE buckets = VALUES(buckets)";
    int rc;

    if ((rc = read_k(ctx, p->code, old_k)) != LL_OK)
        return rc;
    return db_exec(ctx, sql, NULL, "sl", p->code, (long long)k);
}

int stock_bucket_named(const char *name)
{
    return name[0] == '{';
}

int stock_bucket_find(struct lock_ctx *ctx, const char *name, struct product *out)
{
    struct product p;
    char code[STOCK_CODE_MAX + 1];
    const char *colon = strrchr(name, ':');
    char *end;
    size_t len;
    long n;

    if (!stock_bucket_named(name) || colon == NULL || colon[1] != 'b')
        return lock_error(ctx, LL_BADREQ, NULL, "'%s' is not a bucket's name", name);
    len = (size_t)(colon - name - 1);
    n = strtol(colon + 2, &end, 10);
    if (len == 0 || len >= sizeof code || strcmp(end, "}") || n < 2 || n > STOCK_BUCKETS_MAX)
        return lock_error(ctx, LL_BADREQ, NULL, "'%s' is not a bucket's name", name);
    memcpy(code, name + 1, len);
    code[len] = '\0';
    if (!stock_code_valid(code))
        return lock_error(ctx, LL_BADREQ, NULL, "'%s' is not a bucket's name", name);
    strlcopy(p.code, code, sizeof p.code);
    p.id = 0;
    if (read_id(ctx, code, (int)n - 1, &out->id) != LL_OK)
        return ctx->err;
    bucket_product(out, &p, (int)n - 1, out->id);
    return LL_OK;
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
        if (i > 0 && i < br->k)
            json_array_append_new(redis, redis_stock_load(ctx, &br->b[i], share,
                                                          br->epoch[i]));
        else if (i > 0)         /* given up: out of the consumers' list */
            redis_stock_unload(ctx, &br->b[i]);
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
    static const char *const stream[] = { "entries", "pending", "undelivered", "units",
                                          "undelivered_units", "pending_units", NULL };
    static const char *const mysql[] = { "count", "applied", NULL };
    static const char *const flags[] = { "loaded", "adds_up", "reconciled", "drained", NULL };
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

int buckets_stock(struct lock_ctx *ctx, const struct product *p, int pause_ms,
                  long long *total, json_t **split, json_t **redis)
{
    struct stock_buckets sb;
    long long count;
    char wh[16];
    int i, rc;

    *split = *redis = NULL;
    if ((rc = stock_buckets_get(ctx, p, &sb, 0)) != LL_OK)
        return rc;
    *redis = sb.k == 1 ? redis_stock_json(ctx, p) : redis_sum(ctx, &sb);
    if (pause_ms > 0)
        sleep_us((int64_t)pause_ms * 1000);
    ctx->err = 0;               /* a Redis failure is the answer's "redis" */
    if (sb.k == 1) {
        rc = stock_read(ctx, p, total);
    } else {
        *total = 0;
        *split = json_array();
        for (i = 0; i < sb.k && rc == LL_OK; i++) {
            if ((rc = stock_read(ctx, &sb.b[i], &count)) != LL_OK)
                break;
            *total += count;
            snprintf(wh, sizeof wh, "%03d", i + 1);
            json_array_append_new(*split, json_pack("{s:s,s:I}", "warehouse", wh,
                                                    "count", (json_int_t)count));
        }
    }
    if (rc != LL_OK) {
        json_decref(*split);
        json_decref(*redis);
        *split = *redis = NULL;
    }
    return rc;
}
