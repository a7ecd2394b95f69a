/* mysql_lock_table.c — a lock row in db_lock (seed 000 §2).
 *
 * Acquire inserts the row `lock_name = "lock:<product>"`; the unique index
 * lets one insert win and fails the others with a duplicate key, who sleep
 * a jittered --retry-ms and try again (the seeds recurse after 50 ms).
 * Release deletes the row. On top of that, the fixes seed 000 §2.3 itself
 * proposes:
 *   - owner columns: server_name (the instance) and thread_name (its
 *     uuid and worker slot), so the holder may re-enter; hold_count counts
 *     the entries and release deletes the row when it reaches zero;
 *   - an expiry: expire_time = now + --lease-ms, and a waiter that finds
 *     the row expired takes it over in one UPDATE, so a crashed holder does
 *     not block the product forever.
 * Waiters do not hammer the table with failing INSERTs (each takes an
 * InnoDB lock on the duplicate key and convoys the holder's DELETE): after
 * one failed attempt they poll with a plain SELECT, which takes no locks,
 * and write again only when the row is gone or takeable
 * (test-and-test-and-set). The waiters of one instance poll in its waiting
 * room (lock_poll.c): one SELECT per instance every --retry-ms, not one per
 * waiter on a timer of its own, and after a release on this instance an
 * INSERT at once, with no SELECT first (the row was deleted just now).
 * Re-entry and take-over are one conditional UPDATE:
 *
 *     UPDATE db_lock SET hold_count = IF(<ours>, hold_count + 1, 1), ...
 *      WHERE lock_name = ? AND (<ours> OR expire_time < NOW(3))
 *
 * Every acquisition draws the next value of the sequence db_lock_fence into
 * its row's `fence`: with ?fence=1 the holder reads it back from the row
 * while the row is still its own (one more round trip), and that is its
 * fencing token. The lease the holder may count on runs from the moment
 * its INSERT or UPDATE was sent.
 *
 * What it still gets wrong: there is no renewal, so a holder slower than
 * the lease is overtaken and two sales overlap; and every attempt is a write
 * to the database it is protecting, which is why it is among the slowest
 * of the seeds' locks (seed 000 §2.2).
 */
#include "lock.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"

#include <stdio.h>

struct owner {
    char server[64];
    char thread[64];
};

static void owner_of(const struct lock_ctx *ctx, struct owner *o)
{
    snprintf(o->server, sizeof o->server, "%s", ctx->cfg->name);
    lock_owner(ctx, o->thread, sizeof o->thread);
}

/* Not holding yet: is the lock free, ours or expired (takeable), or held? */
enum table_state { TABLE_FREE, TABLE_TAKEABLE, TABLE_HELD };

static int table_insert(struct lock_ctx *ctx, const char *key, const struct owner *o, int *got)
{
    static const char sql[] =
        "INSERT INTO db_lock (lock_name, class_name, method_name, server_name, thread_name,"
        " hold_count, create_time, expire_time, fence)"
        " VALUES (?, 'StockService', 'checkAndLock', ?, ?, 1, NOW(3),"
        " TIMESTAMPADD(MICROSECOND, ?, NOW(3)), NEXTVAL(db_lock_fence))";
    int rc = db_exec(ctx, sql, NULL, "sssl", key, o->server, o->thread,
                     (long long)ctx->cfg->lease_ms * 1000);

    *got = rc == LL_OK;
    if (rc != LL_OK && (db_errno(ctx) == DB_ER_DUP_ENTRY || db_errno(ctx) == DB_ER_LOCK_DEADLOCK))
        rc = LL_OK;     /* taken, or InnoDB chose us as a deadlock victim */
    return rc;
}

static int table_take(struct lock_ctx *ctx, const char *key, const struct owner *o, int *got)
{
    static const char sql[] =
        "UPDATE db_lock SET"
        " hold_count = IF(server_name = ? AND thread_name = ?, hold_count + 1, 1),"
        " server_name = ?, thread_name = ?, create_time = NOW(3),"
        " expire_time = TIMESTAMPADD(MICROSECOND, ?, NOW(3)), fence = NEXTVAL(db_lock_fence)"
        " WHERE lock_name = ? AND ((server_name = ? AND thread_name = ?) OR expire_time < NOW(3))";
    long long rows = 0;
    int rc = db_exec(ctx, sql, &rows, "sssslsss", o->server, o->thread, o->server, o->thread,
                     (long long)ctx->cfg->lease_ms * 1000, key, o->server, o->thread);

    *got = rc == LL_OK && rows == 1;
    if (rc == LL_TIMEOUT && db_errno(ctx) == DB_ER_LOCK_DEADLOCK)
        rc = LL_OK;
    return rc;
}

/* A plain consistent read: waiting costs the database no locks and no writes. */
static int table_peek(struct lock_ctx *ctx, const char *key, const struct owner *o,
                      enum table_state *state)
{
    static const char sql[] =
        "SELECT (server_name = ? AND thread_name = ?) OR expire_time < NOW(3)"
        " FROM db_lock WHERE lock_name = ?";
    long long rows = 0, takeable = 0;
    int rc = db_exec(ctx, sql, &rows, "sss>l", o->server, o->thread, key, &takeable);

    *state = rows == 0 ? TABLE_FREE : takeable ? TABLE_TAKEABLE : TABLE_HELD;
    return rc;
}

/* ?fence=1: the token our acquisition drew, read while the row is ours. A
 * row gone or taken over since leaves the lock to its lease (LL_LOST). */
static int table_token(struct lock_ctx *ctx, const char *key, const struct owner *o)
{
    static const char sql[] =
        "SELECT fence FROM db_lock WHERE lock_name = ? AND server_name = ? AND thread_name = ?";
    long long rows = 0, fence = 0;
    int rc = db_exec(ctx, sql, &rows, "sss>l", key, o->server, o->thread, &fence);

    if (rc != LL_OK)
        return rc;
    if (rows == 0)
        return lock_error(ctx, LL_LOST, "mysql", "db_lock row %s was no longer ours when "
                          "its fencing token was read", key);
    ctx->token = fence;
    ctx->token_src = "mysql";
    return LL_OK;
}

/* Insert; when the row exists, re-enter or take it over if we may; else
 * wait with reads until it is gone or expired, and start again. */
static int table_acquire(struct lock_ctx *ctx, const char *key)
{
    enum table_state state = TABLE_FREE;
    struct owner o;
    unsigned woken;
    int64_t sent;
    int got, rc;

    owner_of(ctx, &o);
    if ((rc = lock_poll_first(ctx, key)) != LL_OK)
        return rc;
    for (;;) {
        sent = now_us();
        rc = state == TABLE_FREE ? table_insert(ctx, key, &o, &got)
                                 : table_take(ctx, key, &o, &got);
        if (rc == LL_OK && got) {
            lock_lease(ctx, sent, ctx->cfg->lease_ms);
            return ctx->fence ? table_token(ctx, key, &o) : LL_OK;
        }
        if (rc != LL_OK)
            return rc;
        state = state == TABLE_FREE ? TABLE_TAKEABLE : TABLE_HELD;
        while (state == TABLE_HELD) {
            woken = ctx->wakeups;
            if ((rc = lock_poll(ctx, key)) != LL_OK)
                return rc;
            if (ctx->wakeups != woken)
                state = TABLE_FREE;     /* released here just now: insert */
            else if ((rc = table_peek(ctx, key, &o, &state)) != LL_OK)
                return rc;
        }
    }
}

static int table_release(struct lock_ctx *ctx, const char *key)
{
    static const char delete_sql[] =
        "DELETE FROM db_lock WHERE lock_name = ? AND server_name = ? AND thread_name = ?"
        " AND hold_count = 1";
    static const char leave_sql[] =
        "UPDATE db_lock SET hold_count = hold_count - 1"
        " WHERE lock_name = ? AND server_name = ? AND thread_name = ? AND hold_count > 1";
    long long rows = 0;
    struct owner o;
    int rc, tries;

    owner_of(ctx, &o);
    for (tries = 0; tries < 5; tries++) {     /* deadlock victims try again */
        rc = db_exec(ctx, delete_sql, &rows, "sss", key, o.server, o.thread);
        if (rc == LL_OK && rows == 0)
            rc = db_exec(ctx, leave_sql, &rows, "sss", key, o.server, o.thread);
        if (rc != LL_TIMEOUT || db_errno(ctx) != DB_ER_LOCK_DEADLOCK)
            break;
    }
    if (rc == LL_OK && rows == 0)
        return lock_error(ctx, LL_ERROR, "mysql",
                          "db_lock row %s was no longer ours (lease of %d ms ran out)",
                          key, ctx->cfg->lease_ms);
    return rc;
}

static int table_reset(struct lock_ctx *ctx, const char *key)
{
    static const char sql[] = "DELETE FROM db_lock WHERE lock_name = ?";
    return db_exec(ctx, sql, NULL, "s", key);
}

const struct lock_ops lock_mysql_lock_table = {
    .name    = "mysql-lock-table",
    .family  = "mysql",
    .summary = "db_lock row with a unique lock_name: INSERT to lock, DELETE to unlock, owner + expiry (seed 000 §2)",
    .flaw    = "spins on the database it protects; no renewal, so a holder slower than the lease is overtaken",
    .props   = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails   = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU,
    .ceiling = LOCK_CEIL_SERIAL_MYSQL,
    .acquire = table_acquire,
    .release = table_release,
    .reset   = table_reset,
    .fence   = "mysql",
};
