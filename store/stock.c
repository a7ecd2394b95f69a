/* stock.c — the stock table: products, and the statements that read and
 * write db_stock, the ledger and the fenced write.
 *
 * The guarded sale (app/sale.c) writes the absolute value it read, not
 * count - 1: that is what MyBatis's updateById does, and what makes a
 * missing or broken lock lose updates and oversell — the lesson of the
 * seeds.
 *
 * With ?fence=1 the write carries the hold's fencing token and the
 * database refuses a token older than one it has seen (LL_FENCED):
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
 * B's write: stock_write_guarded() answers STOCK_MOVED and the sale reads
 * again. It costs nothing when the lock excludes, as it does outside
 * faults: the count is then the one read. With --ledger the write and its
 * db_ledger row (bench/ledger/ledger.h) commit in one transaction.
 *
 * Product codes are cached once found: rows are created by sql/seed.sql and
 * never deleted while the server runs.
 */
#include "stock.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/ctx.h"
#include "../core/util.h"
#include "../core/wait.h"

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

/* The count as the replica has it (?read=replica, read/write splitting):
 * the slot's replica connection stands in for its primary one for this
 * one statement. Only the guarded sale asks (app/request.c refuses it
 * to the strategies whose read is their lock or their check). */
static int read_on_replica(struct lock_ctx *ctx, const char *sql, const struct product *p,
                           long long *rows, long long *count)
{
    struct db *primary = ctx->db;
    int rc;

    if (ctx->replica == NULL)
        ctx->replica = db_new_replica(ctx->cfg);
    ctx->db = ctx->replica;
    rc = db_exec(ctx, sql, rows, "l>l", p->id, count);
    ctx->db = primary;
    if (rc != LL_OK) {
        char why[sizeof ctx->errstr];
        strlcopy(why, ctx->errstr, sizeof why);
        lock_error(ctx, rc, "mysql-replica", "the read replica: %s", why);
    }
    return rc;
}

const char stock_sql_read[] = "SELECT count FROM db_stock WHERE id = ?";
const char stock_sql_write[] = "UPDATE db_stock SET count = ? WHERE id = ?";

int stock_read(struct lock_ctx *ctx, const struct product *p, long long *count)
{
    long long rows = 0;
    int rc = ctx->read_replica ? read_on_replica(ctx, stock_sql_read, p, &rows, count)
                               : db_exec(ctx, stock_sql_read, &rows, "l>l", p->id, count);

    if (rc == LL_OK && rows == 0)
        return lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", p->id);
    return rc;
}

int stock_write(struct lock_ctx *ctx, const struct product *p, long long count)
{
    return db_exec(ctx, stock_sql_write, NULL, "!ll", count, p->id);
}

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
                   ctx->strategy ? ctx->strategy : "?", ctx->fence ? ctx->token_src : "",
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

int stock_write_guarded(struct lock_ctx *ctx, const struct product *p, long long read)
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
    return db_exec_commit(ctx, stock_sql_write, NULL, "ll", count, p->id);
}

int stock_write_commit_next(struct lock_ctx *ctx, const struct product *p, long long count,
                            const char *next_sql, int *next_sent)
{
    const long long params[2] = { count, p->id }, next_params[1] = { p->id };

    return db_exec_commit_next(ctx, stock_sql_write, NULL, params, 2, next_sql, next_params, 1,
                               next_sent);
}

/* The new count, the version and the fence start afresh; with --ledger the
 * product's ledger starts afresh too, with a "reset" row (bench/ledger/ledger.h),
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

