/* limits_protocol.h — what ll-limits sends to the servers
 * (bench/limits/limits_protocol.c), from the strategies whose protocol the
 * ceilings bound, in one of two ways:
 *   texts  the SQL statements and Lua scripts it sends on its own
 *          connections, each taken from its one definition in the
 *          strategy: change a strategy's statement and its ceiling sends
 *          the new one. tests/test_unit.c holds every entry against the
 *          strategy's own list in the registry (struct lock_ops's
 *          protocol), so a text typed again here, or a strategy that no
 *          longer sends it, fails.
 *   runs   the ceilings whose commands are the product's own calls on
 *          its own clients: ll-limits runs the strategy's table (its
 *          acquire and release, or its sale) or the Redis stock's steps
 *          (store/redis_stock.h: rs_read, rs_write), so there is no
 *          command of ll-limits' own to drift. Each entry names the
 *          strategy limits.c finds by that name and runs; tests/test_unit.c
 *          holds that the strategy is registered, has what the entry runs,
 *          and is measured against the entry's ceiling.
 */
#ifndef LOCKLAB_LIMITS_PROTOCOL_H
#define LOCKLAB_LIMITS_PROTOCOL_H

enum limits_text {
    LIMITS_READ,                /* SELECT count: the plain read            */
    LIMITS_WRITE,               /* UPDATE count = ?: the plain write       */
    LIMITS_FOR_UPDATE,          /* SELECT … FOR UPDATE                     */
    LIMITS_SHARE_MODE,          /* SELECT … LOCK IN SHARE MODE             */
    LIMITS_OPT_READ,            /* SELECT count, version                   */
    LIMITS_OPT_WRITE,           /* UPDATE … WHERE version = ?              */
    LIMITS_SELL_ONE,            /* UPDATE count = count − 1 WHERE … >= 1   */
    LIMITS_NOINDEX,             /* UPDATE … WHERE sku = ? (no index)       */
    LIMITS_DECR,                /* Redis stock: the check-and-decrement    */
    LIMITS_NTEXTS
};

struct limits_text_def {
    const char *ceiling;        /* the first ceiling that sends it         */
    const char *strategy;       /* whose definition it is (GET /locks name) */
    const char *text;
};

extern const struct limits_text_def limits_texts[LIMITS_NTEXTS];

enum limits_run {
    LIMITS_RUN_LOCK_REDIS,      /* serial_redis: redis-lua's acquire, release */
    LIMITS_RUN_LOCK_ZK,         /* serial_zk: zk-sequential's                 */
    LIMITS_RUN_WATCH,           /* redis_watch: rs_read with WATCH, rs_write  */
    LIMITS_RUN_LOCK_STOCK,      /* serial_redis_stock: redis-lock-stock's sale */
    LIMITS_NRUNS
};

/* What a run calls of its strategy. */
enum limits_call {
    LIMITS_CALL_LOCK,           /* acquire and release (lock_acquire_by …)    */
    LIMITS_CALL_SELL,           /* the sell hook, whole                       */
    LIMITS_CALL_STEPS           /* its family's steps, as its sell hook calls
                                 * them (store/redis_stock.h)                 */
};

struct limits_run_def {
    const char     *ceiling;    /* the ceiling it is measured for            */
    const char     *strategy;   /* whose code it runs (GET /locks name)      */
    enum limits_call call;
};

extern const struct limits_run_def limits_runs[LIMITS_NRUNS];

#endif /* LOCKLAB_LIMITS_PROTOCOL_H */
