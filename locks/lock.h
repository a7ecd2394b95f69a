/* lock.h — the contract every lock strategy implements.
 *
 * A strategy is a table of functions (struct lock_ops), one per file under
 * locks/. Adding one is its file plus one LOCK(file, symbol) line in
 * locks/locks.def, the list that both locks/registry.c and the build read;
 * the table itself says everything else, down to the ceiling bench/compare
 * measures it against. The HTTP layer never knows which strategy it runs:
 * it finds the table with lock_find(name) and hands it to stock_sell()
 * (app/stock.c), which runs the seeds' checkAndLock() around it:
 *
 *     acquire(key) × reentry; SELECT count; UPDATE count = read − 1;
 *     release(key) × reentry        (release runs on every path)
 *
 * Strategies that change the sale itself rather than guard it
 * (mysql-update, mysql-optimistic, mysql-for-update) set the `sell` hook
 * instead of acquire/release; stock_sell() calls it in their place.
 * Callers go through the inline wrappers below (lock_acquire(),
 * lock_check(), lock_reset() …), never through the table, so an optional
 * hook left NULL is handled in one place. Strategies of one family that
 * differ only in parameters share their methods by name and keep the
 * parameters in the table's `conf` (the ZooKeeper queues, the MySQL row
 * queue's users).
 *
 * Every call gets a struct lock_ctx: one per worker slot (the "thread" of
 * the seeds' Java), owning that slot's backend connections, one typed slot
 * of state per family, and carrying the request's deadline, fault switches
 * and the error detail of the last failure (hiredis style: ctx->err +
 * ctx->errstr, set with lock_error()).
 *
 * Return codes are few and shared by every layer (SQLite/nginx style): busy
 * is not an error. app/http.c maps them to HTTP in one place.
 */
#ifndef LOCKLAB_LOCK_H
#define LOCKLAB_LOCK_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- codes */

enum ll_status {
    LL_OK = 0,          /* done: lock held / unit sold                       */
    LL_SOLD_OUT,        /* the sale ran, there was nothing left to sell      */
    LL_TIMEOUT,         /* lock not obtained before the deadline (busy)      */
    LL_UNAVAILABLE,     /* a backend is down or unreachable: ctx->backend    */
    LL_ERROR,           /* anything else; ctx->errstr says what              */
    LL_BADREQ,          /* the request itself is wrong (unknown product …)   */
    LL_UNKNOWN,         /* the statement that sells was sent and its answer
                         * lost: the unit may or may not be sold             */
    LL_FENCED,          /* the write carried a fencing token older than one
                         * the row has seen: a stale holder, nothing sold    */
    LL_LOST,            /* the lock was lost, or its lease may have run out,
                         * before the write: nothing written                 */
    LL_STATUS_MAX
};

const char *ll_status_name(int status);

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
 * ceilings ll-limits measures, by the key it writes it under (bench/
 * harness.h CEIL_*). GET /locks exports a strategy's; ll-report reads it
 * there. A strategy that lets InnoDB order the sales is bounded by its
 * statement's concurrent rate on the hot row; one that serialises every
 * sale behind a lock by one client doing the critical section back to back. */
#define LOCK_CEIL_UPDATE_PEAK  "mysql_update_peak" /* conditional UPDATE, best client count */
#define LOCK_CEIL_FOR_UPDATE   "mysql_for_update"  /* SELECT … FOR UPDATE transactions     */
#define LOCK_CEIL_SERIAL_MYSQL "serial_mysql"      /* SELECT + UPDATE, one client          */
#define LOCK_CEIL_SERIAL_REDIS "serial_redis"      /* SET NX PX, SELECT + UPDATE, Lua del  */
#define LOCK_CEIL_SERIAL_ZK    "serial_zk"         /* create, SELECT + UPDATE, delete      */
#define LOCK_CEIL_SERIAL_ETCD  "serial_etcd"       /* Mutex txn, SELECT + UPDATE, delete   */
/* The stock in Redis (locks/redis_stock.h): what Redis itself takes of a
 * strategy's sale, with no MariaDB on the path (the consumer writes it
 * afterwards). */
#define LOCK_CEIL_REDIS_DECR   "redis_decr"        /* the decrement script, concurrent     */
#define LOCK_CEIL_REDIS_WATCH  "redis_watch"       /* WATCH … MULTI/EXEC, concurrent       */
#define LOCK_CEIL_SERIAL_REDIS_STOCK "serial_redis_stock" /* SET NX PX, GET, MULTI/EXEC, Lua del */

/* ---------------------------------------------------------------- context */

struct config;
struct db;
struct product;
struct lock_room;
struct mysql_slot;      /* locks/mysql_queue.c */
struct redis_set;       /* locks/redis_private.h */
struct zk_slot;         /* locks/zk_client.c */
struct etcd_slot;       /* locks/etcd_private.h */
struct hybrid_slot;     /* locks/hybrid_private.h */
struct order;           /* app/order.h: POST /order's purchase */

#define LOCK_MAX_DEPTH 8    /* deepest re-entry a request may ask for */

struct lock_ctx {
    int                  slot;      /* worker slot number: the seeds' thread  */
    const struct config *cfg;
    struct db           *db;        /* this slot's MariaDB connection         */

    /* Each family's state of this slot, one typed slot per family: made by
     * the family's shared code at its first use, freed by its ctx_free
     * hook, and looked into by nobody else. */
    struct mysql_slot   *mysql;     /* its place in the row queues            */
    struct redis_set    *redis;     /* Redis connections, the token it set    */
    struct zk_slot      *zk;        /* the ZooKeeper locks it holds           */
    struct etcd_slot    *etcd;      /* its etcd session and the lock it holds */
    struct hybrid_slot  *hybrid;    /* which layer a composite lock took      */

    /* The request being served. */
    int64_t     deadline_ms;        /* monotonic; acquire gives up after it   */
    int         wait_ms;            /* the wait that deadline came from       */
    int         hold_ms;            /* fault: stretch the critical section    */
    int         late_ms;            /* fault: a pause after the checks, just
                                     * before the write (app/stock.c)         */
    int         crash;              /* fault: _exit() while holding the lock  */
    int         lose_answer;        /* fault: the sale's answer from MariaDB
                                     * never arrives (app/db.c)               */
    int         qty;                /* units this purchase takes: 1, or what
                                     * POST /order's qty asks (all or none)   */
    struct order *order;            /* POST /order's order, or NULL           */
    unsigned    retries;            /* spins / optimistic retries this request*/
    unsigned    backend_ops;        /* ZooKeeper/Redis round trips (stats)    */
    unsigned    wakeups;            /* watch / pub-sub wake-ups (stats)       */
    unsigned    deadlocks;          /* MariaDB's deadlock errors (1213) met
                                     * by this request (app/db.c; stats)     */
    int64_t     held_us;            /* the lock held, acquired to released;
                                     * -1 when it never was (stats)           */
    const struct lock_ops *ops;     /* the strategy it runs                   */
    struct lock_room *room;         /* the waiting room it is in (lock_poll)  */

    /* What the holder knows of the lock it holds, for the write (stock.c):
     * the last moment its lease is sure to run (the acquire or the last
     * renewal confirmed, plus the lease, less lock_drift_us()), its fencing
     * token when the request asked for one, and when it got the lock. */
    int         fence;              /* ?fence=1: write only with a token      */
    int64_t     lease_until_us;     /* monotonic; 0: no lease that can end    */
    long long   token;              /* the fencing token of this hold         */
    const char *token_src;          /* the service that issued it, or NULL    */
    int64_t     held_since_us;      /* monotonic: the lock held from (ledger) */

    /* The last failure, hiredis style. */
    int         err;                /* an ll_status, 0 when none              */
    const char *backend;            /* "mysql", "redis 127.0.0.1:16379", …    */
    char        errstr[160];
};

/* Record a failure on ctx and return `status`, so callers can write
 * `return lock_error(ctx, LL_UNAVAILABLE, "redis", "…%s", c->errstr);` */
int lock_error(struct lock_ctx *ctx, int status, const char *backend,
               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The deadline passed before the lock was obtained: records "lock not
 * obtained within <wait> ms" on ctx and returns LL_TIMEOUT. */
int lock_timeout(struct lock_ctx *ctx);

/* Lease honesty. A lease of lease_ms granted by a request sent at sent_us
 * (monotonic) is sure to run until sent_us + lease − drift, the drift
 * allowing for the two clocks' rates (Redlock's rule: 1 % of the lease and
 * 2 ms). lock_lease() records that end on ctx for the write to check; a
 * renewal records it again, a failed one does not. */
int64_t lock_drift_us(int64_t lease_ms);
void    lock_lease(struct lock_ctx *ctx, int64_t sent_us, int64_t lease_ms);

/* Milliseconds left before the request's deadline (<= 0: none left). */
int64_t lock_time_left(const struct lock_ctx *ctx);

/* Sleep a jittered retry interval, never past the deadline: --retry-ms
 * ±50%, doubling with each retry of the request up to 32 times that
 * (exponential backoff, so polling waiters leave the holder room to work).
 * Counts a retry. Returns LL_TIMEOUT when the deadline passed. */
int lock_backoff(struct lock_ctx *ctx);

/* Polling locks' waiting room (lock_poll.c): instead of lock_backoff(),
 * wait for this request's next try of `key`. Only one waiter per strategy
 * and key per process tries, every --retry-ms ±50 % or at once after a
 * release here. Counts a retry; LL_TIMEOUT when the deadline passed.
 * stock_sell() calls lock_poll_done() after every acquire (leave the
 * room) and lock_poll_released() after the last release of a key. */
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
void lock_poll_done(struct lock_ctx *ctx);
void lock_poll_released(const struct lock_ctx *ctx, const char *key);
/* How many requests wait in the room of ops and key (for tests). */
int  lock_poll_waiting(const struct lock_ops *ops, const char *key);

/* A string naming this holder across the whole system: "<instance uuid>:<slot>".
 * Written into buf (at least 64 bytes). */
void lock_owner(const struct lock_ctx *ctx, char *buf, int len);

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
                             * (locks/redis_stock.h); GET /locks says which */
    const char *lock_key;   /* the lock's granularity (seed 004 §2.5): NULL,
                             * one lock per product ("lock:<code>"), or the
                             * name of the one lock every product's sale
                             * takes (LOCK_KEY_ALL); GET /locks says which */
    int         hold_rtts;  /* round trips between hosts one sale keeps
                             * the hot item from the next (LOCK_HOLD_*) */

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

    /* Optional: free what this strategy keeps in ctx (worker shutdown). */
    void (*ctx_free)(struct lock_ctx *ctx);

    /* Fencing (?fence=1): the service whose tokens the strategy's acquire
     * leaves in ctx->token when ctx->fence asks for one ("redis",
     * "redisson", "zookeeper", "mysql": tokens of one service compare, of
     * two do not); NULL when it cannot issue one, and then `nofence` says
     * why, for the 400 answer. */
    const char *fence;
    const char *nofence;
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
 * caller chose for ctx: stock_sell() sets it, as does POST /stock/reset
 * for each strategy it clears. */
static inline int lock_acquire(struct lock_ctx *ctx, const char *key)
{
    return ctx->ops->acquire(ctx, key);
}

static inline int lock_release(struct lock_ctx *ctx, const char *key)
{
    return ctx->ops->release(ctx, key);
}

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

/* Free what any strategy keeps in ctx: every ctx_free hook (worker
 * shutdown). */
void lock_ctx_free(struct lock_ctx *ctx);

#endif /* LOCKLAB_LOCK_H */
