/* lock.h — the contract every lock strategy implements.
 *
 * A strategy is a table of functions (struct lock_ops), one per file under
 * locks/. Adding one is its file plus one LOCK(file, symbol) line in
 * locks/locks.def, the list that both locks/registry.c and the build read;
 * the table itself says everything else, down to the ceiling bench/compare
 * measures it against. The HTTP layer never knows which strategy it runs:
 * it finds the table with lock_find(name) and hands it to sale_run()
 * (app/sale.c), which runs the seeds' checkAndLock() around it:
 *
 *     acquire(key) × reentry; SELECT count; UPDATE count = read − 1;
 *     release(key) × reentry        (release runs on every path)
 *
 * Strategies that change the sale itself rather than guard it
 * (mysql-update, mysql-optimistic, mysql-for-update) set the `sell` hook
 * instead of acquire/release; sale_run() calls it in their place.
 * Callers go through the inline wrappers below (lock_acquire(),
 * lock_check(), lock_reset() …), never through the table, so an optional
 * hook left NULL is handled in one place. Strategies of one family that
 * differ only in parameters share their methods by name and keep the
 * parameters in the table's `conf` (the ZooKeeper queues, the MySQL row
 * queue's users).
 *
 * Every call gets a struct lock_ctx (core/ctx.h): the worker slot, its
 * connections and the request's deadline, fault switches and last error.
 */
#ifndef LOCKLAB_LOCK_H
#define LOCKLAB_LOCK_H

#include "../core/ctx.h"
#include "faults.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Properties shown by GET /locks and the README table. */
#define LOCK_DISTRIBUTED  (1u << 0) /* excludes across instances          */
#define LOCK_REENTRANT    (1u << 1) /* the same holder may acquire again   */
#define LOCK_AUTO_RELEASE (1u << 2) /* freed when its holder dies          */
#define LOCK_FAIR         (1u << 3) /* granted in arrival order            */
#define LOCK_EXACT        (1u << 4) /* exact counts in an ordinary run     */
#define LOCK_FENCED       (1u << 5) /* still exact when a holder is paused or
                                     * cut off past its lease: by fencing
                                     * tokens (?fence=1), or because the
                                     * database itself orders the writes  */

/* The physical limit bench/compare measures a strategy against: one of the
 * ceilings below, by the key ll-limits writes it under (bench/common/harness.h
 * CEIL_*). GET /locks exports a strategy's; ll-report reads it there. Each
 * bounds the protocol its strategies speak, measured with that protocol on
 * the same servers with no HTTP in between, one of two ways (the method):
 *   plateau  the strategy's own statements, pipelining included, looped
 *            from 1, 2, 3, 4, 6 and 8 clients on the hot row, the best
 *            count then measured three times: its best trial. For sales
 *            that InnoDB orders itself (a statement, a row lock).
 *   hold     1 ÷ the median time the item stays held, from the lock's
 *            answer to the release's answer, one client running the
 *            family's shortest critical section. Two holds never overlap
 *            and no hand-off (polling, pub/sub, waiters queued in advance)
 *            takes less than no time, so no strategy of the family sells
 *            faster.
 * and two that are not a strategy's protocol on one item: `concurrent`,
 * from 32 clients (a reference), and `front`, the HTTP tier itself.
 * X(key, method, definition): every ceiling, once; lock_ceiling_what()
 * and lock_ceiling_method() read it. */
#define LOCK_CEIL_UPDATE_PEAK  "mysql_update_peak"
#define LOCK_CEIL_FOR_UPDATE   "mysql_for_update"
#define LOCK_CEIL_SHARE_MODE   "mysql_share_mode"
#define LOCK_CEIL_OPTIMISTIC   "mysql_optimistic"
#define LOCK_CEIL_OPTIMISTIC_RECURSIVE "mysql_optimistic_recursive"
#define LOCK_CEIL_UPDATE_NOINDEX "mysql_update_noindex"
#define LOCK_CEIL_SERIAL_MYSQL "serial_mysql"
#define LOCK_CEIL_SERIAL_REDIS "serial_redis"
#define LOCK_CEIL_SERIAL_ZK    "serial_zk"
#define LOCK_CEIL_SERIAL_ETCD  "serial_etcd"
/* The stock in Redis (store/redis_stock.h): what Redis itself takes of a
 * strategy's sale, with no MariaDB on the path (the consumer writes it
 * afterwards). */
#define LOCK_CEIL_REDIS_DECR   "redis_decr"
#define LOCK_CEIL_REDIS_WATCH  "redis_watch"
#define LOCK_CEIL_SERIAL_REDIS_STOCK "serial_redis_stock"
#define LOCK_CEIL_MYSQL_UPDATE "mysql_update"
#define LOCK_CEIL_HTTP         "http"

#define LOCK_CEILINGS(X) \
    X(LOCK_CEIL_UPDATE_PEAK, "plateau", "UPDATE … SET count = count − 1 WHERE id = ? AND " \
      "count >= 1 (autocommit), 64 in one write as mysql-update pipelines them, from the best " \
      "of 1, 2, 3, 4, 6, 8 clients: the most the row takes") \
    X(LOCK_CEIL_FOR_UPDATE, "plateau", "SELECT … FOR UPDATE, then UPDATE, COMMIT and the next " \
      "SELECT … FOR UPDATE in one write (mysql-for-update's pipeline), from the best of 1, 2, " \
      "3, 4, 6, 8 clients") \
    X(LOCK_CEIL_SHARE_MODE, "plateau", "SELECT … LOCK IN SHARE MODE, UPDATE, COMMIT, a " \
      "deadlocked transaction run again, from the best of 1, 2, 3, 4, 6, 8 clients") \
    X(LOCK_CEIL_OPTIMISTIC, "plateau", "SELECT count, version, then UPDATE … WHERE version = ? " \
      "with the next SELECT in the same write, a lost race retried with the row read behind " \
      "it, from the best of 1, 2, 3, 4, 6, 8 clients") \
    X(LOCK_CEIL_OPTIMISTIC_RECURSIVE, "plateau", "SELECT count, version, UPDATE … WHERE " \
      "version = ?, a lost race read and retried at once, from the best of 1, 2, 3, 4, 6, 8 " \
      "clients") \
    X(LOCK_CEIL_UPDATE_NOINDEX, "plateau", "UPDATE … WHERE sku = ? (no index: every row " \
      "locked) and COMMIT, from the best of 1, 2, 3, 4, 6, 8 clients") \
    X(LOCK_CEIL_SERIAL_MYSQL, "hold", "1 ÷ the median SELECT + UPDATE from one client: the " \
      "section inside any lock") \
    X(LOCK_CEIL_SERIAL_REDIS, "hold", "1 ÷ the median hold from SET NX PX's answer to the Lua " \
      "compare-and-delete's (SELECT + UPDATE + release), one client") \
    X(LOCK_CEIL_SERIAL_ZK, "hold", "1 ÷ the median hold from zk-sequential's acquire's answer " \
      "to its release's (SELECT + UPDATE + delete), one session") \
    X(LOCK_CEIL_SERIAL_ETCD, "hold", "1 ÷ the median hold from the Mutex transaction's answer " \
      "to delete's (SELECT + UPDATE + delete), one session over etcd's JSON gateway") \
    X(LOCK_CEIL_REDIS_DECR, "concurrent", "Redis stock: the check-and-decrement script " \
      "(DECRBY, INCRBY, XADD), one call a sale, from 32 clients") \
    X(LOCK_CEIL_REDIS_WATCH, "plateau", "Redis stock: redis-watch's steps, WATCH + MGET …, MULTI " \
      "DECRBY INCRBY XADD EXEC, from the best of 1, 2, 3, 4, 6, 8 clients; sales = EXECs that " \
      "committed") \
    X(LOCK_CEIL_SERIAL_REDIS_STOCK, "hold", "Redis stock: 1 ÷ the median hold of redis-lock-stock's " \
      "sale, from SET NX PX's answer to the release's (MGET …, MULTI SET INCRBY XADD EXEC, Lua " \
      "compare-and-delete), one client") \
    X(LOCK_CEIL_MYSQL_UPDATE, "concurrent", "the hot row's conditional UPDATE from 32 clients " \
      "(a reference: InnoDB's waits at a crowd)") \
    X(LOCK_CEIL_HTTP, "front", "the HTTP tier: GET /health (no backend) through the same " \
      "front end and connections, its steady rate; the bound of a strategy whose backend " \
      "is not (mysql-batch: n purchases a statement)")

/* The definition or the method of a ceiling key; "" when unknown. */
static inline const char *lock_ceiling_field(const char *key, int method)
{
#define LOCK_CEIL_ROW(k, m, what) if (key && !strcmp(key, k)) return method ? m : what;
    LOCK_CEILINGS(LOCK_CEIL_ROW)
#undef LOCK_CEIL_ROW
    return "";
}
static inline const char *lock_ceiling_what(const char *key) { return lock_ceiling_field(key, 0); }
static inline const char *lock_ceiling_method(const char *key) { return lock_ceiling_field(key, 1); }

/* Sleep a jittered retry interval, never past the deadline: --retry-ms
 * ±50%, doubling with each retry of the request up to 32 times that
 * (exponential backoff, so polling waiters leave the holder room to work).
 * Counts a retry. Returns LL_TIMEOUT when the deadline passed. */
int lock_backoff(struct lock_ctx *ctx);

/* Polling locks' waiting room (lock_poll.c): instead of lock_backoff(),
 * wait for this request's next try of `key`. Only one waiter per strategy
 * and key per process tries, every --retry-ms ±50 % or at once after a
 * release here. Counts a retry; LL_TIMEOUT when the deadline passed.
 * lock_acquire() leaves the room after every acquire (lock_poll_done())
 * and lock_release() announces the last release of a key
 * (lock_poll_released()): nothing else calls those two. */
#define LOCK_KEY_MAX     64
#define LOCK_POLL_STREAK 8   /* local wake-ups in a row, at most */
/* Should this release wake a waiter of its own instance at once? Yes for
 * LOCK_POLL_STREAK releases in a row, then one is left to the others'
 * timers or messages. *streak counts the run; call under the caller's lock. */
static inline int lock_poll_announce(int *streak)
{
    if (*streak < LOCK_POLL_STREAK) {
        ++*streak;
        return 1;
    }
    *streak = 0;
    return 0;
}
int  lock_poll(struct lock_ctx *ctx, const char *key);
/* Before a request's first try of key: when others of this instance wait
 * in its room, join them and wait for this request's turn there (as
 * lock_poll, without counting a retry); else return at once. */
int  lock_poll_first(struct lock_ctx *ctx, const char *key);
void lock_poll_done(struct lock_ctx *ctx);
void lock_poll_released(const struct lock_ctx *ctx, const char *key);
/* How many requests wait in the room of ops and key (for tests). */
int  lock_poll_waiting(const struct lock_ops *ops, const char *key);

/* ---------------------------------------------------------------- the table */

struct lock_ops {
    const char *name;       /* the ?lock= name, e.g. "redis-lua"            */
    const char *family;     /* "local", "mysql", "redis", "zookeeper"        */
    const char *summary;    /* one line for GET /locks and the README        */
    const char *flaw;       /* what it still gets wrong, or NULL             */
    unsigned    props;      /* LOCK_* bits                                   */
    const char *ceiling;    /* the limit it is measured against: LOCK_CEIL_* */
    const char *stock;      /* where the stock it sells lives: NULL for
                             * MariaDB's db_stock, "redis" for stock:P
                             * (store/redis_stock.h); GET /locks says which */
    const char *lock_key;   /* the lock's granularity (seed 004 §2.5): NULL,
                             * one lock per product ("lock:<code>"), or the
                             * name of the one lock every product's sale
                             * takes (LOCK_KEY_ALL); GET /locks says which */
    int         hold_rtts;  /* round trips between hosts one sale keeps
                             * the hot item from the next (LOCK_HOLD_*) */
    /* The SQL statements and Lua scripts it sends, each its one
     * definition (protocol.h), NULL-terminated; NULL: none listed (its
     * commands are built from arguments). ll-limits sends the same texts
     * to measure the ceiling, and tests/test_unit.c holds its texts
     * against these. */
    const char *const *protocol;

    /* The strategy's parameters for methods its family shares between
     * several strategies, which read them from ctx->ops (SQLite builds a
     * locking style from shared methods by name the same way): zk_queue.c's
     * struct zk_queue, mysql_queue.c's struct mysql_queue_conf; or NULL. */
    const void *conf;

    /* Guarding strategies: take and give back the lock named `key`
     * ("lock:1001"). acquire waits no later than ctx->deadline_ms. */
    int (*acquire)(struct lock_ctx *ctx, const char *key);
    int (*release)(struct lock_ctx *ctx, const char *key);

    /* Optional: still holding `key`? Called just before the stock is
     * written; a lost lock (expired session …) aborts the sale. */
    int (*check)(struct lock_ctx *ctx, const char *key);

    /* Optional: replaces the whole guarded sale (mysql-update …). Returns
     * LL_OK (sold; *remaining = count left, or -1 if not known),
     * LL_SOLD_OUT or a failure. */
    int (*sell)(struct lock_ctx *ctx, const struct product *p, long long *remaining);

    /* Optional: clear leftover state of `key` (POST /stock/reset). */
    int (*reset)(struct lock_ctx *ctx, const char *key);

    /* Fencing (?fence=1): the service whose tokens the strategy's acquire
     * leaves in ctx->token when ctx->fence asks for one ("redis",
     * "redisson", "zookeeper", "mysql": tokens of one service compare, of
     * two do not); NULL when it cannot issue one, and then `nofence` says
     * why, for the 400 answer. */
    const char *fence;
    const char *nofence;

    /* Where the fault switch ?release_pause_ms pauses this strategy's
     * release (lock_release_pause()), for GET /locks and the docs: "between
     * its GET and its DEL"; NULL: the switch is refused. */
    const char *release_pause;

    /* Why bench/compare leaves the strategy out of the strategies it runs
     * by default, or NULL: a teaching strategy whose failure makes the
     * seeds' 5000 purchases take it minutes (each waits out its deadline,
     * or wakes every other waiter), where bench/lesson shows it in seconds.
     * GET /locks says it as "compare_skip". */
    const char *compare_skip;

    /* The claims the fault matrix holds it to (faults.h): FAULT_* bits of
     * the faults it is known not to survive, under which it may lose an
     * update or oversell: `fails` without ?fence=1, `fence_fails` with it
     * (only for a strategy with a fencing service). An exact strategy that
     * loses under a fault it does not list fails the matrix; a fault listed
     * is shown, and one that never shows its loss is reported (the list is
     * then wrong, and changes here, with its evidence in
     * docs/strategies.md). GET /locks serves both by name. */
    unsigned    fails;
    unsigned    fence_fails;
};

/* hold_rtts: the round trips between hosts (an instance and a backend,
 * two members of an ensemble) that lie between one sale of the hot item and
 * the next: a row lock's span from the statement that takes it to the one
 * that frees it, or a lock's hold from its grant to its release as the
 * lock service sees them, with the hand-off to the next holder. At a round
 * trip of R the item then sells at most 1 / (hold_rtts × R) times a second,
 * the model bench/compare --rtt sets beside what it measures
 * (docs/datacenter.md); counted for a standalone lock service (an
 * ensemble's quorum writes add theirs). LOCK_HOLD_PER_INSTANCE(k): k round
 * trips, but sales wait for each other only within one instance (its row
 * queue), so N instances sell at most N / (k × R). 0: no model. */
#define LOCK_HOLD_PER_INSTANCE(k) (-(k))

/* The one lock of every product, for a coarse-grained strategy. */
#define LOCK_KEY_ALL "lock:all"

/* ---------------------------------------------------------------- calls */

/* The name of the lock a sale of the product whose own lock is
 * product_key ("lock:1001") takes under ops: its own, or ops's one lock. */
static inline const char *lock_key_for(const struct lock_ops *ops, const char *product_key)
{
    return ops->lock_key ? ops->lock_key : product_key;
}

/* Callers run a strategy through these, never through its table, so each
 * optional hook's absence is handled here only (as Redis's connection.h
 * wraps a connection type's methods). They run ctx->ops, the strategy the
 * caller chose for ctx: sale_run() sets it, as does POST /stock/reset
 * for each strategy it clears.
 *
 * The acquire and the release also keep the waiting room (lock_poll.c):
 * after an acquire, got or not, the request leaves the room it waited in;
 * the release that ends ctx's last hold (ctx->holds, counted here) wakes
 * the poller of its instance. A strategy that runs another's acquire and
 * release for its own sale (redis-lock-stock runs redis-lua's) goes through
 * lock_acquire_by() and lock_release_by(), its own ctx->ops unchanged.
 * These four live with the room, in lock_poll.c. */
int lock_acquire(struct lock_ctx *ctx, const char *key);
int lock_release(struct lock_ctx *ctx, const char *key);
int lock_acquire_by(struct lock_ctx *ctx, const struct lock_ops *ops, const char *key);
int lock_release_by(struct lock_ctx *ctx, const struct lock_ops *ops, const char *key);

/* The fault ?release_pause_ms: the release calls this where lock_ops.
 * release_pause says; it sleeps once per request. */
void lock_release_pause(struct lock_ctx *ctx);

/* LL_OK when the strategy has no way to lose a lock it holds. */
static inline int lock_check(struct lock_ctx *ctx, const char *key)
{
    return ctx->ops->check ? ctx->ops->check(ctx, key) : LL_OK;
}

/* Does the strategy replace the guarded sale (the sell hook)? */
static inline int lock_sells(const struct lock_ops *ops)
{
    return ops->sell != NULL;
}

static inline int lock_sell(struct lock_ctx *ctx, const struct product *p,
                            long long *remaining)
{
    return ctx->ops->sell(ctx, p, remaining);
}

/* Does the strategy leave state behind that POST /stock/reset clears? */
static inline int lock_resets(const struct lock_ops *ops)
{
    return ops->reset != NULL;
}

static inline int lock_reset(struct lock_ctx *ctx, const char *key)
{
    return ctx->ops->reset ? ctx->ops->reset(ctx, key) : LL_OK;
}

/* locks/registry.c: the strategies of locks/locks.def, in its order. */
const struct lock_ops *lock_find(const char *name);
const struct lock_ops *const *lock_all(int *count);
int lock_index(const struct lock_ops *ops);  /* position in lock_all() */

/* Is table[0..n) a valid registry: every strategy named, with its family,
 * summary and ceiling, either a sell hook or acquire and release, and no
 * name twice? 0, or -1 with the reason in err. main() refuses to start on -1. */
int lock_table_check(const struct lock_ops *const *table, int n, char *err, int len);

/* ---------------------------------------------------------------- families */

/* A family (local, mysql, redis, redis-stock, zookeeper, etcd, hybrid) is
 * what its strategies share beyond their tables: what a slot keeps for
 * them, the background tasks an instance runs for them, their sections of
 * GET /stats. One FAMILY(symbol) line in locks/locks.def registers its
 * table, defined in one of the family's shared files; a strategy names its
 * family in .family. The server calls the lock_families_*() below and never
 * a family by name, so a new family touches its own files and one line.
 * What differs between strategies of one family (the ceiling, the fencing
 * service: redis-setnx issues no token, redis-lua does) stays in
 * struct lock_ops. Every hook is optional. */
struct config;
struct json_t;

struct lock_family {
    const char *name;                           /* what .family says        */
    void (*start)(const struct config *cfg);    /* instance start, on its loop */
    void (*stop)(void);                         /* shutdown, on the loop, before
                                                 * the slots are freed       */
    void (*ctx_free)(struct lock_ctx *ctx);     /* free what a slot keeps    */
    void (*stats_add)(struct json_t *body);     /* add its GET /stats sections */
    void (*stats_clear)(void);                  /* POST /stats/reset          */
};

const struct lock_family *lock_family_find(const char *name);
void lock_families_start(const struct config *cfg);
void lock_families_stop(void);
void lock_families_stats(struct json_t *body);
void lock_families_stats_reset(void);

/* Free what any family keeps in ctx: every ctx_free hook (worker
 * shutdown). */
void lock_ctx_free(struct lock_ctx *ctx);

#endif /* LOCKLAB_LOCK_H */
