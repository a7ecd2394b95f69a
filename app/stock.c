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
 * Just before the write, the holder makes sure of what it holds: the
 * strategy's check hook (still ours?), then the lease (ctx->lease_until_us:
 * the last moment its lease is sure to run, from the acquire or the last
 * renewal confirmed; a lock whose lease may have ended is not written
 * under, LL_LOST). A check cannot close the window between itself and the
 * write — a holder paused right there writes late all the same — so with
 * ?fence=1 the write carries the hold's fencing token and the database
 * refuses a token older than one it has seen (LL_FENCED):
 *
 *     UPDATE db_stock SET count = ?, fence = ?, fence_by = ?
 *      WHERE id = ? AND (fence_by <> ? OR fence < ?) AND count = <read>
 *
 * Tokens of different lock services do not compare, so a write fenced by
 * another service than the last one's is let through (fence_by).
 *
 * The token alone does not protect a read-modify-write. A stale holder A
 * (token 5) whose write reaches the row before any newer token did is let
 * through — rightly, nothing newer has been written — but the new holder B
 * (token 6) may already have read the count A is about to change, and B's
 * write, with the newer token, would then overwrite A's sale: a lost update
 * no token catches (the storage never saw B's token on B's read). Hence the
 * last condition, the count B read: when it no longer holds and B's token is
 * still the newest, an older holder's write landed between B's read and
 * B's write, and B reads again and writes again under its token (at most
 * STOCK_FENCED_TRIES times), checks and all. It costs nothing when the lock
 * excludes, as it does outside faults: the count is then the one read.
 * With --ledger the write and its db_ledger row (bench/ledger.h) commit in
 * one transaction.
 *
 * Product codes are cached once found: rows are created by sql/seed.sql and
 * never deleted while the server runs.
 */
#include "stock.h"
#include "config.h"
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

int stock_products(struct product *out, int max)
{
    int i, n = atomic_load_explicit(&ncache, memory_order_acquire);

    for (i = 0; i < n && i < max; i++)
        out[i] = cache[i];
    return i;
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

#define STOCK_FENCED_TRIES 3
#define STOCK_MOVED (-1)        /* write_fenced(): the count is not the one read */

/* The fenced write (see the top): LL_OK, LL_FENCED, STOCK_MOVED (our token
 * is still the newest but the count moved since `read`), or a failure. */
static int write_fenced(struct lock_ctx *ctx, const struct product *p, long long read,
                        long long count)
{
    static const char sql[] =
        "UPDATE db_stock SET count = ?, fence = ?, fence_by = ? "
        "WHERE id = ? AND (fence_by <> ? OR fence < ?) AND count = ?";
    static const char sql_why[] =
        "SELECT fence_by <> ? OR fence < ? FROM db_stock WHERE id = ?";
    long long rows = 0, newest = 0;
    int rc;

    rc = db_exec(ctx, sql, &rows, "!llslsll", count, ctx->token, ctx->token_src, p->id,
                 ctx->token_src, ctx->token, read);
    if (rc != LL_OK || rows == 1)
        return rc;
    if ((rc = db_exec(ctx, sql_why, &rows, "sll>l", ctx->token_src, ctx->token, p->id,
                      &newest)) != LL_OK)
        return rc;
    if (newest)
        return STOCK_MOVED;
    return lock_error(ctx, LL_FENCED, NULL, "%s token %lld is older than one the stock row "
                      "has seen: a stale holder, nothing written", ctx->token_src, ctx->token);
}

int stock_ledger(struct lock_ctx *ctx, const struct product *p, long long read,
                 long long written, int64_t cs_start_us, int64_t cs_end_us)
{
    static const char sql[] =
        "INSERT INTO db_ledger (stock_id, instance, slot, strategy, token_src, token, "
        "count_read, count_written, cs_start_us, cs_end_us) VALUES (?,?,?,?,?,?,?,?,?,?)";

    return db_exec(ctx, sql, NULL, "lslsslllll", p->id, ctx->cfg->name, (long long)ctx->slot,
                   ctx->ops ? ctx->ops->name : "?", ctx->fence ? ctx->token_src : "",
                   ctx->fence ? ctx->token : 0LL, read, written, (long long)cs_start_us,
                   (long long)cs_end_us);
}

int stock_ledger_commit(struct lock_ctx *ctx, const struct product *p, long long read,
                        long long written, int64_t cs_start_us, int64_t cs_end_us)
{
    int rc = stock_ledger(ctx, p, read, written, cs_start_us, cs_end_us);

    if (rc != LL_OK) {
        db_rollback(ctx);
        return rc;
    }
    return db_commit_sale(ctx);
}

/* The guarded sale's write, fenced or not: alone (autocommit), or with
 * --ledger in one transaction with its ledger row. */
static int write_sale(struct lock_ctx *ctx, const struct product *p, long long read)
{
    const long long count = read - ctx->qty;
    int rc;

    if (!ctx->cfg->ledger)
        return ctx->fence ? write_fenced(ctx, p, read, count) : stock_write(ctx, p, count);
    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    rc = ctx->fence ? write_fenced(ctx, p, read, count) : stock_write(ctx, p, count);
    if (rc != LL_OK) {
        db_rollback(ctx);
        return rc;
    }
    /* The section ends when the write is in place (its answer back, the row
     * locked until the COMMIT): a holder paused while it was on its way
     * shows as the long section it was. */
    return stock_ledger_commit(ctx, p, read, read - ctx->qty, ctx->held_since_us, now_us());
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

/* The new count, the version and the fence start afresh; with --ledger the
 * product's ledger starts afresh too, with a "reset" row (bench/ledger.h),
 * in the same transaction. */
int stock_set(struct lock_ctx *ctx, const struct product *p, long long count)
{
    static const char sql[] =
        "UPDATE db_stock SET count = ?, version = 0, fence = 0, fence_by = '' WHERE id = ?";
    static const char sql_clear[] = "DELETE FROM db_ledger WHERE stock_id = ?";
    static const char sql_reset[] =
        "INSERT INTO db_ledger (stock_id, instance, slot, strategy, count_read, count_written) "
        "VALUES (?, ?, ?, 'reset', 0, ?)";
    int rc;

    if (!ctx->cfg->ledger)
        return db_exec(ctx, sql, NULL, "ll", count, p->id);
    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    if ((rc = db_exec(ctx, sql, NULL, "ll", count, p->id)) == LL_OK &&
        (rc = db_exec(ctx, sql_clear, NULL, "l", p->id)) == LL_OK)
        rc = db_exec(ctx, sql_reset, NULL, "lsll", p->id, ctx->cfg->name,
                     (long long)ctx->slot, count);
    if (rc != LL_OK) {
        db_rollback(ctx);
        return rc;
    }
    return db_commit(ctx);
}

void stock_hold(struct lock_ctx *ctx)
{
    if (ctx->hold_ms > 0)
        sleep_us((int64_t)ctx->hold_ms * 1000);
}

/* ---------------------------------------------------------------- the sale */

static int sell_guarded(struct lock_ctx *ctx, const struct product *p, const char *key,
                        long long *remaining)
{
    long long count;
    int rc, tries = 0;

again:
    rc = stock_read(ctx, p, &count);
    if (rc != LL_OK)
        return rc;
    if (count < ctx->qty)           /* qty units or none (seed 003) */
        return LL_SOLD_OUT;
    if (tries == 0)
        stock_hold(ctx);    /* the window between read and write, stretched */
    if ((rc = lock_check(ctx, key)) != LL_OK)
        return rc;
    if (ctx->lease_until_us && now_us() >= ctx->lease_until_us)
        return lock_error(ctx, LL_LOST, NULL, "the lease on %s may have run out %lld ms "
                          "ago: sale not written", key,
                          (long long)(now_us() - ctx->lease_until_us) / 1000);
    if (ctx->late_ms > 0 && tries == 0)     /* fault: a pause no check can see */
        sleep_us((int64_t)ctx->late_ms * 1000);
    rc = write_sale(ctx, p, count);
    if (rc == STOCK_MOVED) {        /* an older holder's write landed after our read */
        ctx->retries++;
        if (++tries < STOCK_FENCED_TRIES)
            goto again;
        return lock_error(ctx, LL_FENCED, NULL, "%s token %lld is the newest, but older "
                          "holders' writes changed the count %d times between its read and "
                          "its write: nothing written", ctx->token_src, ctx->token, tries);
    }
    if (rc == LL_OK)
        *remaining = count - ctx->qty;
    return rc;
}

int stock_sell(struct lock_ctx *ctx, const struct lock_ops *ops,
               const struct product *p, int reentry, long long *remaining)
{
    int held = 0, rc = LL_OK, rrc, why_saved = 0;
    struct { int err; const char *backend; char errstr[sizeof ctx->errstr]; } why;
    const char *key = lock_key_for(ops, p->key);
    int64_t got = 0;

    ctx->ops = ops;
    if (lock_sells(ops))
        return lock_sell(ctx, p, remaining);
    while (held < reentry && rc == LL_OK) {
        rc = lock_acquire(ctx, key);
        lock_poll_done(ctx);
        if (rc == LL_OK && held++ == 0)
            ctx->held_since_us = got = now_us();
    }
    if (rc == LL_OK) {
        if (ctx->crash) {       /* fault: the holder dies holding the lock */
            fprintf(stderr, "locklab: crash requested while holding %s (%s)\n",
                    key, ops->name);
            _exit(3);
        }
        rc = sell_guarded(ctx, p, key, remaining);
    }
    /* Release on every path, innermost first. A failed release after a
     * sale does not undo the sale: it stays on ctx->err, which the HTTP
     * layer reports as a warning on the 200 answer. After a failure, the
     * failure is the answer, whatever the release says. */
    if (rc == LL_OK || rc == LL_SOLD_OUT)
        ctx->err = 0;
    else
        why.err = ctx->err, why.backend = ctx->backend, why_saved = 1,
        memcpy(why.errstr, ctx->errstr, sizeof why.errstr);
    if (held > 0) {
        while (held > 0) {
            rrc = lock_release(ctx, key);
            held--;
            if (rrc != LL_OK && rc == LL_SOLD_OUT)
                rc = rrc;
        }
        ctx->held_us = now_us() - got;
        lock_poll_released(ctx, key);   /* wake this instance's poller */
    }
    if (why_saved)
        lock_error(ctx, why.err, why.backend, "%s", why.errstr);
    return rc;
}
