/* redis_stock.h — the stock in Redis: the seckill path of seeds 001 and 004,
 * as the rest of the server sees it (POST /stock/reset, GET /stock,
 * /stats, the consumer main() starts).
 *
 * The strategies of the family "redis-stock" (redis-decr, redis-watch,
 * redis-lock-stock, redis-buckets) sell product P from Redis, not from
 * MariaDB: each sale takes its units from `{stock:P}` and, in the same
 * atomic step, appends an entry to the stream `{stock:P}:sales` (and
 * records the order, when there is one). A consumer in every instance
 * reads the stream as a member of the consumer group `locklab` and
 * applies each entry to MariaDB once
 * (redis_stock_consumer.c): MariaDB is written afterwards, as in a
 * real flash sale, and nothing is lost between the two stores.
 *
 * The keys, on the first --redis server or on the Redis Cluster (P a
 * product code, O an order number, U a user), all of a product under its
 * hash tag {stock:P} (seed 004's "stock:" + id), so that on a cluster
 * every script or MULTI of a sale touches one slot, and two products (or
 * two buckets of one, whose tag is stock:P:bN) fall on different slots:
 *   {stock:P}        the count, a string integer
 *   {stock:P}:epoch  the epoch the count was loaded in (POST /stock/reset)
 *   {stock:P}:sold   units sold from {stock:P} in this epoch
 *   {stock:P}:sales  the stream of sales: fields epoch, qty (units),
 *                    sales, lock, and for an order's sale order, user,
 *                    remaining; one entry per sale, or, for redis-decr, one
 *                    per batch of sales without an order; group "locklab",
 *                    one consumer per instance (its uuid)
 *   {stock:P}:buyers hash U → O of the orders that asked one per user
 *   {stock:P}:order:O  hash of an order's first answer: result,
 *                    remaining, qty, product (under P's tag, so that the
 *                    sale's step writes it on the stock's slot)
 *   locklab:order:O  the order number's claim: the product its first
 *                    attempt named, set before the sale
 *                    (redis_stock_claim()); a key of its own, on its own
 *                    slot on a cluster, so that O names one product
 *                    whichever products' slots its copies ask
 *   locklab:stocks   set of the products loaded into Redis (what the
 *                    consumers read; on a cluster a key of its own slot,
 *                    written apart from the product's keys): a reset adds
 *                    its product and its buckets, and removes the buckets
 *                    it gives up
 * The names are made in one place, rs_keys() (below).
 * In MariaDB: db_redis_stock (each product's epoch and the units applied
 * in it), db_redis_applied (one row per applied entry) and db_order.
 *
 * The three stores add up: with S the count loaded, at any moment
 *     Redis:   count + sold = S          (one script or MULTI changes both)
 *     MariaDB: count + applied = S       (one transaction changes both)
 * so in_flight = sold − applied is what the stream still has to apply, and
 * MariaDB's count = Redis's count + in_flight. GET /stock shows them and
 * what the stream itself holds unacknowledged.
 */
#ifndef LOCKLAB_REDIS_STOCK_H
#define LOCKLAB_REDIS_STOCK_H

#include "order.h"
#include "stock.h"

#include <jansson.h>

struct config;
struct lock_ctx;
struct order;
struct product;

#define REDIS_STOCK_GROUP "locklab"        /* the consumer group of every stream */
#define REDIS_STOCK_SET   "locklab:stocks" /* the products loaded into Redis    */

/* redis-decr's sale of n purchases of one product at once, one Lua script
 * (ll-limits runs the same text, one purchase a call, for its ceiling). Each
 * purchase in turn, as if alone: its order's first answer if the order
 * exists; else the user's other order if one per user was asked; else sold
 * out when fewer than its qty are left; else sold: the units come off the
 * count, an order's sale is recorded (its order:O, its buyer) with an entry
 * of its own in the stream. Then, once: DECRBY the units sold, INCRBY them
 * in {stock:P}:sold, and one entry for the sales without an order (qty =
 * their units, sales = their number).
 *   KEYS  {stock:P} {stock:P}:sold {stock:P}:sales {stock:P}:epoch
 *         {stock:P}:buyers, then one per purchase: {stock:P}:order:O
 *         ({stock:P} when it has none): one hash tag, one slot
 *   ARGV  lock product, then four per purchase: qty order_no user 0|1
 *         ('' when none; 1: one order per user)
 *   reply {"missing"} when {stock:P} is not loaded, else one array per
 *         purchase: {"sold", left} · {"sold_out", count} ·
 *         {"user_limit", order_no} · {"replayed", result, remaining, qty, product} */
#define REDIS_STOCK_DECR_LUA \
    "local count = tonumber(redis.call('GET', KEYS[1])) " \
    "if not count then return {'missing'} end " \
    "local epoch = redis.call('GET', KEYS[4]) or '0' " \
    "local out, taken, units, sales = {}, 0, 0, 0 " \
    "for i = 0, (#ARGV - 2) / 4 - 1 do " \
    "  local qty, order = tonumber(ARGV[3 + 4 * i]), ARGV[4 + 4 * i] " \
    "  local user, one, okey = ARGV[5 + 4 * i], ARGV[6 + 4 * i], KEYS[6 + i] " \
    "  local f = {false} " \
    "  if order ~= '' then " \
    "    f = redis.call('HMGET', okey, 'result', 'remaining', 'qty', 'product') " \
    "  end " \
    "  local other = one == '1' and not f[1] and redis.call('HGET', KEYS[5], user) " \
    "  if f[1] then " \
    "    out[i + 1] = {'replayed', f[1], f[2] or '-1', f[3] or '0', f[4] or ''} " \
    "  elseif other then " \
    "    out[i + 1] = {'user_limit', other} " \
    "  elseif count < qty then " \
    "    if order ~= '' then " \
    "      redis.call('HSET', okey, 'result', 'sold_out', 'remaining', count, 'qty', qty, " \
    "                 'product', ARGV[2]) " \
    "    end " \
    "    out[i + 1] = {'sold_out', count} " \
    "  else " \
    "    count = count - qty " \
    "    taken = taken + qty " \
    "    if order ~= '' then " \
    "      redis.call('XADD', KEYS[3], '*', 'epoch', epoch, 'qty', qty, 'sales', 1, " \
    "                 'order', order, 'user', user, 'lock', ARGV[1], 'remaining', count) " \
    "      redis.call('HSET', okey, 'result', 'sold', 'remaining', count, 'qty', qty, " \
    "                 'product', ARGV[2]) " \
    "      if one == '1' then redis.call('HSET', KEYS[5], user, order) end " \
    "    else " \
    "      units = units + qty " \
    "      sales = sales + 1 " \
    "    end " \
    "    out[i + 1] = {'sold', count} " \
    "  end " \
    "end " \
    "if taken > 0 then " \
    "  redis.call('DECRBY', KEYS[1], taken) " \
    "  redis.call('INCRBY', KEYS[2], taken) " \
    "end " \
    "if units > 0 then " \
    "  redis.call('XADD', KEYS[3], '*', 'epoch', epoch, 'qty', units, 'sales', sales, " \
    "             'lock', ARGV[1]) " \
    "end " \
    "return out"

/* POST /order on the Redis stock, before the sale: claim order o's number
 * for p, SET locklab:order:O P NX GET (NX with GET: Redis 7.0, the
 * stack's and docker-compose's), one round trip. LL_OK when the
 * number is p's (just claimed, or by an earlier attempt: the sale's step
 * then finds the order's record, or makes it); LL_OK with o->replayed and
 * o->first_product (o->first_qty -1: not known here) when it is another
 * product's: the caller answers order_conflict and sells nothing; a
 * failure (Redis unreachable) otherwise. The claim is kept as the order's
 * record is, with no expiry and through POST /stock/reset, even when the
 * first attempt then failed: the number stays its first product's. */
int redis_stock_claim(struct lock_ctx *ctx, const struct product *p, struct order *o);

/* POST /stock/reset, before MariaDB's count is written: a new epoch of P's
 * Redis stock in MariaDB (db_redis_stock), so that the consumers apply no
 * entry of the old one from now on. *epoch: the new epoch. */
int redis_stock_reset_begin(struct lock_ctx *ctx, const struct product *p, long long *epoch);

/* POST /stock/reset, after MariaDB's count is written: load `count` into
 * {stock:P} in `epoch`, with an empty stream and no buyers, and delete
 * MariaDB's record of the old epoch's entries. What happened, as JSON for
 * the answer: {"key":…,"count":…,"epoch":…} or {"result":…,"error":…}. */
json_t *redis_stock_load(struct lock_ctx *ctx, const struct product *p, long long count,
                         long long epoch);

/* A reset that gave up product p (a bucket past the new K): p leaves
 * locklab:stocks, so the consumers stop reading it, and its keys go. The
 * entries left in its stream were of the old epoch, which the consumers
 * drop anyway. A failure is logged: at worst a consumer reads an empty
 * stream. */
void redis_stock_unload(struct lock_ctx *ctx, const struct product *p);

/* GET /stock: both stores and what is in flight between them (see above),
 * as JSON; never NULL. */
json_t *redis_stock_json(struct lock_ctx *ctx, const struct product *p);

/* What GET /stock weighs of one product: Redis's side, MariaDB's, and the
 * units of the stream's entries not yet delivered to any consumer and of
 * those delivered and not yet acknowledged (-1: too many to count). */
struct rs_tally {
    int       loaded;
    long long r_count, sold, r_epoch;
    long long m_count, applied, m_epoch;
    long long undelivered_units, pending_units;
};
/* The stores add up: both loads of one epoch, each store's count plus
 * what it sold or applied the same, nothing applied twice, and what is in
 * flight (sold − applied) exactly what the stream still holds: at least
 * the units no consumer has had, at most those and the pending ones
 * (applied, not yet acknowledged). A Redis that lost sales MariaDB had
 * applied, then sold as many again, adds up in counts but not here. */
int rs_adds_up(const struct rs_tally *t);
/* ... and nothing is in flight: MariaDB has every sale Redis made. */
int rs_reconciled(const struct rs_tally *t);

/* The consumer of this instance: a background worker (task_background():
 * on the caller's loop, else a thread) with its own MariaDB and Redis
 * connections, started by main() and stopped at shutdown; stop waits for
 * it to end through the wait layer (on the loop: call it from a
 * coroutine, with the loop still turning). */
void redis_stock_consumer_start(const struct config *cfg);
void redis_stock_consumer_stop(void);

/* Fault (?consumer_crash=1, --allow-faults): the next batch this instance's
 * consumer applies ends the process after its COMMIT, before its XACK. */
void redis_stock_consumer_crash(void);

/* The consumer's counters for /stats, and their reset. */
json_t *redis_stock_stats_json(void);
void    redis_stock_stats_reset(void);

/* ---------------------------------------------------------------- a sale's steps
 * What the strategies of the family build their sales from. */

#define RS_KEY_MAX 128

/* A product's keys, and an order's, all under the product's hash tag (so
 * that on a Redis Cluster they share one slot: every script and MULTI of a
 * sale touches one): {stock:P}, {stock:P}:epoch, :sold, :sales, :buyers,
 * {stock:P}:order:O; a bucket "{P:bN}" has the tag stock:P:bN. Apart, the
 * order number's claim locklab:order:O (its own slot, whatever the
 * product: redis_stock_claim()). The one place that names them
 * (redis_stock.c). */
struct rs_keys {
    char stock[RS_KEY_MAX], epoch[RS_KEY_MAX], sold[RS_KEY_MAX], sales[RS_KEY_MAX];
    char buyers[RS_KEY_MAX], order[RS_KEY_MAX], claim[RS_KEY_MAX];
};

void rs_keys(struct rs_keys *k, const char *product, const char *order_no);

/* One purchase of the Redis stock: what it asks, then what the read step
 * found. */
struct rs_sale {
    const struct product *p;
    struct rs_keys k;
    long long  qty;
    const char *order_no, *user;        /* "" when none                    */
    int        one_per_user;
    const char *lock;                   /* the strategy, for the entry     */

    /* rs_read() */
    int        watch_node;              /* with its WATCH: the connection  */
    unsigned   watch_gen;               /* that holds it (redis_own_mark)  */
    int        loaded;                  /* {stock:P} exists                */
    long long  count, epoch;
    int        replayed;                /* its order:O exists: first_* below */
    char       first_result[16];
    long long  first_remaining, first_qty;
    char       first_product[STOCK_CODE_MAX + 1];
    char       other[ORDER_NO_MAX + 1]; /* the user's order (one per user) */
};

/* The purchase ctx is making (its order, if any, and ctx->qty) under the
 * strategy named lock (the stream entry says which). */
void rs_sale_init(struct rs_sale *s, struct lock_ctx *ctx, const struct product *p,
                  const char *lock);

/* The read step of redis-watch and redis-lock-stock, one round trip:
 * [WATCH {stock:P} {stock:P}:order:O {stock:P}:buyers] MGET {stock:P}
 * {stock:P}:epoch, HMGET {stock:P}:order:O …, HGET {stock:P}:buyers U.
 * LL_OK or a failure. */
int rs_read(struct lock_ctx *ctx, struct rs_sale *s, int watch);

/* The write step, one round trip: MULTI, the units taken (DECRBY
 * {stock:P}, or SET {stock:P} to the count read minus qty when `absolute`,
 * as the seeds write it under a lock), INCRBY {stock:P}:sold, XADD
 * {stock:P}:sales, the order's record and its buyer, EXEC; or, when fewer than qty are left,
 * only the order's record of a sale refused. *committed = 0 when EXEC
 * answered nil (a watched key changed), and when the read step WATCHed
 * and the connection that holds the WATCH is gone (closed by the server,
 * the slot moved): then nothing is sent, as a race lost. *remaining: the
 * count left. A transport failure after sending is LL_UNKNOWN: the EXEC
 * may have run. */
int rs_write(struct lock_ctx *ctx, struct rs_sale *s, int absolute, int *committed,
             long long *remaining);

/* UNWATCH after a read step that ends the purchase (best effort). */
void rs_unwatch(struct lock_ctx *ctx);

/* What the read step found, before any write: *done = 0 to go on and
 * sell; otherwise the purchase's answer, with ctx->order filled (replayed:
 * the first answer's status; user limit) or ctx's error ({stock:P} is not
 * loaded). */
int rs_precheck(struct lock_ctx *ctx, struct rs_sale *s, int *done);

#endif /* LOCKLAB_REDIS_STOCK_H */
