/* mysql_optimistic.c — optimistic concurrency with a version column
 * (seed 000 §1.6.2):
 *
 *     SELECT count, version FROM db_stock WHERE id = ?;
 *     UPDATE db_stock SET count = ?, version = version + 1
 *      WHERE id = ? AND version = ?;       -- 0 rows: someone was faster
 *
 * The seeds retry by recursion after a fixed 20 ms sleep, which grows the
 * stack under contention and wastes time. Here the retry is a loop with
 * jittered exponential backoff (full jitter, OPT_BASE_US doubling to
 * OPT_CAP_US), bounded by OPT_MAX_ATTEMPTS and by the request's deadline;
 * running out answers lock_timeout. Exact, but under a hot row many
 * attempts lose. Within one instance the attempts on one row go one at a
 * time through the row's queue (mysql_queue.c), so a race is lost only to
 * another instance, and far fewer are lost. The seeds' version,
 * mysql-optimistic-recursive, keeps every race.
 *
 * Each write carries the next read: the UPDATE and a SELECT of count and
 * version leave in one write and come back in one round trip
 * (db_exec_query(), clients/db_pipe.h). A lost race then has the row as it is
 * now in hand, and the next attempt costs one round trip instead of two.
 * A race here is lost only to another instance that sold (the queue lets
 * one attempt per instance at the row), so the first OPT_EAGER losses of
 * a purchase retry at once with that row: one of the contenders wins
 * every time. Later losses back off as before and read afresh.
 *
 * The same read serves the next sale: a winner leaves the row it read
 * behind its write to the next purchase in its instance's line
 * (mysql_queue_leave_row()), which writes from it instead of reading, if
 * it is at most 2 ms old. A stale row only loses a race, as any read
 * may. On the loop, where a purchase's wake-up is a turn of the loop,
 * that spares most sales a statement: the read the winner already has.
 * (The runs behind these choices: docs/journal.md, "Moved from file
 * headers".)
 */
#include "lock.h"
#include "protocol.h"
#include "mysql_private.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../store/stock.h"

#define OPT_BASE_US      200
#define OPT_CAP_US       20000
#define OPT_MAX_ATTEMPTS 1000
#define OPT_EAGER        3          /* lost races answered at once, with the
                                     * row read behind the lost write, before
                                     * the backoff begins */

const char mysql_sql_optimistic_read[] = "SELECT count, version FROM db_stock WHERE id = ?";
const char mysql_sql_optimistic_write[] =
    "UPDATE db_stock SET count = ?, version = version + 1 WHERE id = ? AND version = ?";

/* One optimistic attempt: read count and version, write count − 1 if the
 * version is still the one read. LL_OK with *won = 1 sold; LL_OK with
 * *won = 0 lost the race; LL_SOLD_OUT or a failure otherwise. Shared with
 * mysql-optimistic-recursive, which differs only in how it retries. */
int mysql_optimistic_attempt(struct lock_ctx *ctx, const struct product *p,
                             long long *remaining, int *won)
{
    long long count = 0, version = 0, rows = 0;
    int rc;

    *won = 0;
    if (ctx->cfg->ledger && (rc = db_begin(ctx)) != LL_OK)
        return rc;
    rc = db_exec(ctx, mysql_sql_optimistic_read, &rows, "l>ll", p->id, &count, &version);
    if (rc == LL_OK && rows == 0)
        rc = lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", p->id);
    if (rc == LL_OK && count < ctx->qty)
        rc = LL_SOLD_OUT;
    if (rc == LL_OK) {
        stock_hold(ctx);
        rc = db_exec(ctx, mysql_sql_optimistic_write, &rows, "!lll", count - ctx->qty, p->id,
                     version);
    }
    if (!ctx->cfg->ledger) {
        /* nothing more */
    } else if (rc != LL_OK && rc != LL_SOLD_OUT) {
        db_rollback(ctx);
    } else if (rc == LL_OK && rows == 1) {  /* --ledger: the row, and the COMMIT */
        rc = stock_ledger_commit(ctx, p, count, count - ctx->qty, 0, 0);
    } else {
        int crc = db_commit(ctx);           /* sold out, or lost the race */
        rc = rc == LL_OK ? crc : rc;
    }
    if (rc == LL_OK && rows == 1) {
        *remaining = count - ctx->qty;
        *won = 1;
    }
    return rc;
}

static int optimistic_backoff(struct lock_ctx *ctx, int lost)
{
    int64_t cap, left = lock_time_left(ctx) * 1000;

    if (left <= 0)
        return LL_TIMEOUT;
    cap = lost < 7 ? (int64_t)OPT_BASE_US << lost : OPT_CAP_US;
    if (cap > OPT_CAP_US)
        cap = OPT_CAP_US;
    cap = rand_range(0, cap);
    sleep_us(cap < left ? cap : left);
    return LL_OK;
}

/* --ledger: attempts in transactions with their ledger rows, backing off
 * after each lost race (no pipelined read behind the write). */
static int optimistic_ledger(struct lock_ctx *ctx, const struct product *p,
                             long long *remaining)
{
    int attempt, won = 0, rc = LL_OK;

    for (attempt = 0; attempt < OPT_MAX_ATTEMPTS; attempt++) {
        if ((rc = mysql_optimistic_attempt(ctx, p, remaining, &won)) != LL_OK || won)
            return rc;
        ctx->retries++;
        if ((rc = optimistic_backoff(ctx, attempt)) != LL_OK)
            break;
    }
    return lock_error(ctx, LL_TIMEOUT, "mysql", "optimistic update lost %u races in %d ms",
                      ctx->retries, ctx->wait_ms);
}

static int optimistic_retry(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    const long long id = p->id;
    long long row[2] = { 0, 0 }, found = 0, won = 0;    /* count, version */
    int attempt, rc = LL_OK;

    if (ctx->cfg->ledger)
        return optimistic_ledger(ctx, p, remaining);
    if (mysql_queue_take_row(p, row))
        found = 1;                      /* the row behind the last sale here */
    else
        rc = db_exec(ctx, mysql_sql_optimistic_read, &found, "l>ll", id, &row[0], &row[1]);
    for (attempt = 0; rc == LL_OK && attempt < OPT_MAX_ATTEMPTS; attempt++) {
        const long long write[3] = { row[0] - ctx->qty, id, row[1] };

        if (found == 0)
            return lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", id);
        if (row[0] < ctx->qty)
            return LL_SOLD_OUT;
        stock_hold(ctx);
        rc = db_exec_query(ctx, mysql_sql_optimistic_write, &won, write, 3,
                           mysql_sql_optimistic_read, &id, 1, row, &found);
        if (rc == LL_OK && won == 1) {
            *remaining = write[0];
            if (found)
                mysql_queue_leave_row(p, row);
            return LL_OK;
        }
        if (rc != LL_OK)
            return rc;
        /* Lost to another instance: the row read behind the write is the
         * next attempt's read; after OPT_EAGER such losses, back off and
         * read afresh. */
        ctx->retries++;
        if (attempt + 1 < OPT_EAGER)
            rc = lock_time_left(ctx) > 0 ? LL_OK : LL_TIMEOUT;
        else if ((rc = optimistic_backoff(ctx, attempt + 1 - OPT_EAGER)) == LL_OK)
            rc = db_exec(ctx, mysql_sql_optimistic_read, &found, "l>ll", id, &row[0], &row[1]);
    }
    if (rc != LL_OK && rc != LL_TIMEOUT)
        return rc;
    return lock_error(ctx, LL_TIMEOUT, "mysql",
                      "optimistic update lost %u races in %d ms", ctx->retries,
                      ctx->wait_ms);
}

static const struct mysql_queue_conf optimistic_queue = { .batch = 1, .sell = optimistic_retry };

const struct lock_ops lock_mysql_optimistic = {
    .name    = "mysql-optimistic",
    .family  = "mysql",
    .summary = "version column: UPDATE ... WHERE version = ?, retried with jittered backoff (seed 000 §1.6.2); one attempt per row per instance at a time",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .ceiling = LOCK_CEIL_OPTIMISTIC,
    .protocol = (const char *const[]){ mysql_sql_optimistic_read, mysql_sql_optimistic_write,
                                       NULL },
    .hold_rtts = 1, /* the read out, the conditional UPDATE in */
    MYSQL_QUEUE_METHODS(&optimistic_queue),
};
