/* stock.c — the sale: the seeds' checkAndLock() around any lock strategy.
 *
 *     acquire × reentry                 (strategy)
 *     SELECT count FROM db_stock …      (autocommit, as MyBatis selectById)
 *     if count > 0:
 *         UPDATE db_stock SET count = <count read − 1> …   (updateById)
 *     release × reentry                 (strategy, on every path)
 *
 * The UPDATE writes the absolute value read, not count - 1: that is what
 * MyBatis's updateById does, and what makes a missing or broken lock lose
 * updates and oversell — the lesson of the seeds. Strategies with a `sell`
 * hook replace this whole function (mysql-update's single statement …).
 *
 * Product codes are cached once found: rows are created by sql/seed.sql and
 * never deleted while the server runs.
 */
#include "stock.h"
#include "db.h"
#include "util.h"
#include "../locks/lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- products */

#define STOCK_CACHE 64

/* Append-only: readers take no lock (the hot path of every sale); writers
 * serialise on cache_lock and publish an entry by bumping ncache last. */
static struct product cache[STOCK_CACHE];
static _Atomic int ncache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

int stock_code_valid(const char *code)
{
    return word_valid(code, STOCK_CODE_MAX);
}

static int cache_lookup(const char *code, struct product *p)
{
    int i, n = atomic_load_explicit(&ncache, memory_order_acquire);

    for (i = 0; i < n; i++)
        if (strcmp(cache[i].code, code) == 0) {
            *p = cache[i];
            return 1;
        }
    return 0;
}

static void cache_store(const struct product *p)
{
    int i, n;

    pthread_mutex_lock(&cache_lock);
    n = atomic_load_explicit(&ncache, memory_order_relaxed);
    for (i = 0; i < n; i++)
        if (strcmp(cache[i].code, p->code) == 0)
            break;
    if (i == n && n < STOCK_CACHE) {
        cache[n] = *p;
        atomic_store_explicit(&ncache, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&cache_lock);
}

int stock_find(struct lock_ctx *ctx, const char *code, struct product *p)
{
    static const char sql[] =
        "SELECT id FROM db_stock WHERE product_code = ? AND stock_code = ?";
    long long rows = 0;
    int rc;

    if (!stock_code_valid(code))
        return lock_error(ctx, LL_BADREQ, NULL,
                          "product must be 1 to %d of [A-Za-z0-9_-]", STOCK_CODE_MAX);
    if (cache_lookup(code, p))
        return LL_OK;
    rc = db_exec(ctx, sql, &rows, "ss>l", code, STOCK_WAREHOUSE, &p->id);
    if (rc != LL_OK)
        return rc;
    if (rows == 0)
        return lock_error(ctx, LL_BADREQ, NULL, "unknown product '%s' in warehouse %s",
                          code, STOCK_WAREHOUSE);
    strlcopy(p->code, code, sizeof p->code);
    snprintf(p->key, sizeof p->key, "lock:%s", code);
    cache_store(p);
    return LL_OK;
}

/* ---------------------------------------------------------------- statements */

int stock_read(struct lock_ctx *ctx, const struct product *p, long long *count)
{
    static const char sql[] = "SELECT count FROM db_stock WHERE id = ?";
    long long rows = 0;
    int rc = db_exec(ctx, sql, &rows, "l>l", p->id, count);

    if (rc == LL_OK && rows == 0)
        return lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", p->id);
    return rc;
}

static const char sql_write[] = "UPDATE db_stock SET count = ? WHERE id = ?";

int stock_write(struct lock_ctx *ctx, const struct product *p, long long count)
{
    return db_exec(ctx, sql_write, NULL, "!ll", count, p->id);
}

int stock_write_commit(struct lock_ctx *ctx, const struct product *p, long long count)
{
    return db_exec_commit(ctx, sql_write, NULL, "ll", count, p->id);
}

int stock_write_commit_next(struct lock_ctx *ctx, const struct product *p, long long count,
                            const char *next_sql, int *next_sent)
{
    const long long params[2] = { count, p->id }, next_params[1] = { p->id };

    return db_exec_commit_next(ctx, sql_write, NULL, params, 2, next_sql, next_params, 1,
                               next_sent);
}

int stock_set(struct lock_ctx *ctx, const struct product *p, long long count)
{
    static const char sql[] = "UPDATE db_stock SET count = ?, version = 0 WHERE id = ?";
    return db_exec(ctx, sql, NULL, "ll", count, p->id);
}

void stock_hold(struct lock_ctx *ctx)
{
    if (ctx->hold_ms > 0)
        sleep_us((int64_t)ctx->hold_ms * 1000);
}

/* ---------------------------------------------------------------- the sale */

static int sell_guarded(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    long long count;
    int rc;

    rc = stock_read(ctx, p, &count);
    if (rc != LL_OK)
        return rc;
    if (count < ctx->qty)           /* qty units or none (seed 003) */
        return LL_SOLD_OUT;
    stock_hold(ctx);    /* the window between read and write, stretched */
    if ((rc = lock_check(ctx, p->key)) != LL_OK)
        return rc;
    rc = stock_write(ctx, p, count - ctx->qty);
    if (rc == LL_OK)
        *remaining = count - ctx->qty;
    return rc;
}

int stock_sell(struct lock_ctx *ctx, const struct lock_ops *ops,
               const struct product *p, int reentry, long long *remaining)
{
    int held = 0, rc = LL_OK, rrc;
    int64_t got = 0;

    ctx->ops = ops;
    if (lock_sells(ops))
        return lock_sell(ctx, p, remaining);
    while (held < reentry && rc == LL_OK) {
        rc = lock_acquire(ctx, p->key);
        lock_poll_done(ctx);
        if (rc == LL_OK && held++ == 0)
            got = now_us();
    }
    if (rc == LL_OK) {
        if (ctx->crash) {       /* fault: the holder dies holding the lock */
            fprintf(stderr, "locklab: crash requested while holding %s (%s)\n",
                    p->key, ops->name);
            _exit(3);
        }
        rc = sell_guarded(ctx, p, remaining);
    }
    /* Release on every path, innermost first. A failed release after a
     * sale does not undo the sale: it stays on ctx->err, which the HTTP
     * layer reports as a warning on the 200 answer. */
    if (rc == LL_OK || rc == LL_SOLD_OUT)
        ctx->err = 0;
    if (held > 0) {
        while (held > 0) {
            rrc = lock_release(ctx, p->key);
            held--;
            if (rrc != LL_OK && rc == LL_SOLD_OUT)
                rc = rrc;
        }
        ctx->held_us = now_us() - got;
        lock_poll_released(ctx, p->key); /* wake this instance's poller */
    }
    return rc;
}
