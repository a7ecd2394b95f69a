/* ctx.h — the ground floor's conventions: status codes, and the context
 * every call below the server carries.
 *
 * Return codes are few and shared by every floor (SQLite/nginx style): busy
 * is not an error. app/http.c maps them to HTTP in one place.
 *
 * struct lock_ctx is one worker slot (the "thread" of the seeds' Java): it
 * owns that slot's backend connections, one typed slot of state per family
 * (each made by the family's code at its first use, freed by the family,
 * and looked into by nobody else), and carries the request's deadline,
 * fault switches and the error detail of the last failure (hiredis style:
 * ctx->err + ctx->errstr, set with lock_error()). The clients record their
 * failures on it, the strategies their holds, the server reads both.
 */
#ifndef LOCKLAB_CTX_H
#define LOCKLAB_CTX_H

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

/* ---------------------------------------------------------------- context */

struct config;
struct db;
struct product;
struct lock_room;
struct mysql_slot;      /* locks/mysql_queue.c */
struct redis_set;       /* locks/redis_private.h */
struct zk_slot;         /* locks/zk_client.c */
struct etcd_slot;       /* locks/etcd_session.h */
struct hybrid_slot;     /* locks/hybrid_layer.h */
struct order;           /* store/order.h: POST /order's purchase */

#define LOCK_MAX_DEPTH 8    /* deepest re-entry a request may ask for */

struct lock_ctx {
    int                  slot;      /* worker slot number: the seeds' thread  */
    const struct config *cfg;
    struct db           *db;        /* this slot's MariaDB connection         */
    struct db           *replica;   /* its read replica's (--mysql-replica),
                                     * made at the first ?read=replica        */

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
                                     * before the write (app/sale.c)       */
    int         crash;              /* fault: _exit() while holding the lock  */
    int         lose_answer;        /* fault: 1, the sale's answer from MariaDB
                                     * never arrives; 2, the server kills the
                                     * connection right after it (clients/db.c) */
    int         release_pause_ms;   /* fault: a pause inside the release, where
                                     * lock_ops.release_pause says (once)     */
    int         clock_skew_ms;      /* fault: the wall clock this request
                                     * reads runs N ms ahead (redis_wall_ms)  */
    int         check_pause_ms;     /* fault: a pause after the lock's check
                                     * answered, before its lease is judged
                                     * (app/sale.c)                           */
    int         lose_lock;          /* fault: the answer to the acquire's first
                                     * Redis command never arrives, once
                                     * (locks/redis_common.c)                 */
    int         read_replica;       /* ?read=replica: the guarded sale reads
                                     * the count on the replica (stock.c)     */
    int         qty;                /* units this purchase takes: 1, or what
                                     * POST /order's qty asks (all or none)   */
    struct order *order;            /* POST /order's order, or NULL           */
    unsigned    retries;            /* spins / optimistic retries this request*/
    unsigned    backend_ops;        /* ZooKeeper/Redis round trips (stats)    */
    unsigned    wakeups;            /* watch / pub-sub wake-ups (stats)       */
    unsigned    deadlocks;          /* MariaDB's deadlock errors (1213) met
                                     * by this request (clients/db.c; stats)     */
    unsigned    cert_failures;      /* ... of them on a Galera node: a
                                     * certification failure or a brute-force
                                     * abort, the transaction rolled back     */
    int         cert_failed;        /* the last attempt ended in one: the sale
                                     * may run again (app/sale.c)           */
    unsigned    foreign;            /* tries that found the lock's key held by
                                     * another strategy's kind of lock (a Redis
                                     * key of another type; stats)            */
    int64_t     held_us;            /* the lock held, acquired to released;
                                     * -1 when it never was (stats)           */
    const struct lock_ops *ops;     /* the strategy it runs                   */
    const char *strategy;           /* its name (the ledger's rows)           */
    struct lock_room *room;         /* the waiting room it is in (lock_poll)  */
    int         holds;              /* acquires not yet released (locks/lock.c):
                                     * the last release wakes the room        */

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

/* A failure kept aside while a clean-up runs (a release, a give-back)
 * whose own failure must not become the answer: save, clean up, restore. */
struct lock_saved_error {
    int         err;
    const char *backend;
    char        errstr[160];
};
void lock_error_save(const struct lock_ctx *ctx, struct lock_saved_error *e);
void lock_error_restore(struct lock_ctx *ctx, const struct lock_saved_error *e);

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

/* A string naming this holder across the whole system: "<instance uuid>:<slot>".
 * Written into buf (at least 64 bytes). */
void lock_owner(const struct lock_ctx *ctx, char *buf, int len);

#endif /* LOCKLAB_CTX_H */
