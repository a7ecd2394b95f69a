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
 */
#include "buckets.h"
#include "../clients/db.h"
#include "../core/ctx.h"
#include "../core/util.h"

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
