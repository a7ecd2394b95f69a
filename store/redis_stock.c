/* redis_stock.c — what the strategies of the Redis stock share: their keys,
 * the read and write steps of redis-watch and redis-lock-stock, and the
 * reset, load and reading of the stock in both stores (redis_stock.h).
 *
 * The read step and the write step are one round trip each: their
 * commands go out together and their replies are read after (a pipeline
 * of the client, clients/redis.h). The write step's MULTI … EXEC, and the
 * read step when it WATCHes, go on the slot's own connection, whose state
 * they are; redis-lock-stock's plain read may share the loop's. redis-decr
 * does both in one Lua script instead (redis_decr.c). A WATCH lives and
 * dies with its connection: the write step after one goes out only on
 * that connection (redis_pipe_on()), and when it is gone — the server
 * closed it (a failover's CLIENT KILL, `timeout`, an RST), which the
 * client would silently replace — the write is not sent and counts as a
 * race lost: MULTI … EXEC on a fresh connection, without the WATCH, would
 * always commit, on a count another sale may have taken meanwhile.
 *
 * A reset runs in three steps, each atomic in its store: (1) MariaDB's
 * epoch of the product goes up by one (db_redis_stock), which a consumer
 * applying an entry reads under a row lock, so from then on no entry of
 * the old epoch is applied; (2) the caller writes MariaDB's count; (3) one
 * Lua script loads {stock:P} with the new epoch, its sold counter at 0, an
 * empty stream with its consumer group and no buyers. Entries sold from
 * the old load between (1) and (3) are dropped by the consumers: the reset
 * overwrote the counts they were sold from, as it does for MariaDB's.
 */
#include "redis_stock.h"
#include "../clients/redis.h"
#include "../clients/db.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- keys */

/* The hash tag of a product's Redis stock: "stock:P" for a product,
 * "stock:P:bN" for its bucket N (whose name is "{P:bN}", store/buckets.h). */
static void rs_tag(char *out, size_t size, const char *product)
{
    size_t n = strlen(product);

    if (product[0] == '{' && n > 2 && product[n - 1] == '}')
        snprintf(out, size, "stock:%.*s", (int)(n - 2), product + 1);
    else
        snprintf(out, size, "stock:%s", product);
}

void rs_keys(struct rs_keys *k, const char *product, const char *order_no)
{
    char tag[48];

    rs_tag(tag, sizeof tag, product);
    snprintf(k->stock, sizeof k->stock, "{%s}", tag);
    snprintf(k->epoch, sizeof k->epoch, "{%s}:epoch", tag);
    snprintf(k->sold, sizeof k->sold, "{%s}:sold", tag);
    snprintf(k->sales, sizeof k->sales, "{%s}:sales", tag);
    snprintf(k->buyers, sizeof k->buyers, "{%s}:buyers", tag);
    snprintf(k->order, sizeof k->order, "{%s}:order:%s", tag, order_no ? order_no : "");
    snprintf(k->claim, sizeof k->claim, "locklab:order:%s", order_no ? order_no : "");
}

void rs_sale_init(struct rs_sale *s, struct lock_ctx *ctx, const struct product *p,
                  const char *lock)
{
    const struct order *o = ctx->order;

    memset(s, 0, sizeof *s);
    s->p = p;
    s->qty = ctx->qty > 0 ? ctx->qty : 1;
    s->order_no = o ? o->no : "";
    s->user = o && o->user ? o->user : "";
    s->one_per_user = o && o->one_per_user && o->user;
    s->lock = lock;
    s->first_remaining = -1;
    rs_keys(&s->k, p->code, s->order_no);
}

/* ---------------------------------------------------------------- a round trip */

/* Run pipeline p (server 0) into r[0..p->n). On a transport failure
 * every reply is lost: LL_UNKNOWN when the commands may have changed
 * something (`writes`) and had left, else LL_UNAVAILABLE. LL_LOST: the
 * step certainly did not run (its connection was gone before it left, or
 * on a cluster it was redirected whole: clients/redis.h). One round trip. */
static int rs_run(struct lock_ctx *ctx, struct redis_pipe *p, redisReply **r, int writes)
{
    int rc = redis_pipe_run(p, r);

    if (rc == LL_OK || rc == LL_LOST || !writes || !p->sent)
        return rc;
    return lock_error(ctx, LL_UNKNOWN, ctx->backend, "%s: the sale was sent and its "
                      "answer lost: it may or may not have been made", ctx->errstr);
}

static long long reply_ll(const redisReply *r, long long def)
{
    if (r == NULL)
        return def;
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return strtoll(r->str, NULL, 10);
    return def;
}

static void reply_str(const redisReply *r, char *out, size_t size)
{
    snprintf(out, size, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
}

/* The first error reply among r[0..n), as ctx's error; LL_OK if none. */
static int first_error(struct lock_ctx *ctx, redisReply **r, int n, const char *key)
{
    int i;

    for (i = 0; i < n; i++)
        if (r[i]->type == REDIS_REPLY_ERROR) {
            int rc = redis_reply_error(ctx, 0, r[i], key);  /* frees r[i] */
            r[i] = NULL;
            return rc;
        }
    return LL_OK;
}

/* ---------------------------------------------------------------- read, write */

#define RS_MOVING_US 10000      /* a pause before a step its slot's move
                                 * turned back runs again                */

/* A step a cluster turned back whole (LL_LOST on ctx: its slot is moving,
 * ASK or TRYAGAIN until the move ends, then MOVED has set the new node):
 * LL_OK after a pause, to run it again, while the request has time left;
 * else LL_UNAVAILABLE with why. */
static int rs_moving(struct lock_ctx *ctx)
{
    char why[sizeof ctx->errstr];

    if (lock_time_left(ctx) > 0) {
        ctx->err = 0;
        sleep_us(RS_MOVING_US);
        return LL_OK;
    }
    snprintf(why, sizeof why, "%s", ctx->errstr);
    return lock_error(ctx, LL_UNAVAILABLE, "redis cluster", "%s", why);
}

static int read_once(struct lock_ctx *ctx, struct rs_sale *s, int watch)
{
    struct redis_pipe p;
    redisReply *r[4] = { NULL };
    int n, rc, at;

    redis_pipe_init(&p, ctx, 0, REDIS_CMD_TIMEOUT_MS, watch ? REDIS_OWN : REDIS_ANY, "read");
    if (watch)
        redis_pipe_add(&p, "WATCH %s %s %s", s->k.stock, s->k.order, s->k.buyers);
    redis_pipe_add(&p, "MGET %s %s", s->k.stock, s->k.epoch);
    redis_pipe_add(&p, "HMGET %s result remaining qty product", s->k.order);
    redis_pipe_add(&p, "HGET %s %s", s->k.buyers, s->user);
    n = p.n;
    if ((rc = rs_run(ctx, &p, r, 0)) != LL_OK)
        return rc;
    if (watch) {
        struct redis_mark m = redis_own_mark(ctx, 0);

        s->watch_node = m.node;
        s->watch_gen = m.gen;
    }
    if ((rc = first_error(ctx, r, n, s->k.stock)) != LL_OK) {
        redis_replies_free(r, n);
        return rc;
    }
    at = watch;
    if (r[at]->type != REDIS_REPLY_ARRAY || r[at]->elements != 2 ||
        r[at + 1]->type != REDIS_REPLY_ARRAY || r[at + 1]->elements != 4) {
        redis_replies_free(r, n);
        return lock_error(ctx, LL_ERROR, "redis", "%s: unexpected reply to the read step",
                          s->k.stock);
    }
    s->loaded = r[at]->element[0]->type == REDIS_REPLY_STRING;
    s->count = reply_ll(r[at]->element[0], 0);
    s->epoch = reply_ll(r[at]->element[1], 0);
    if (s->order_no[0] && r[at + 1]->element[0]->type == REDIS_REPLY_STRING) {
        s->replayed = 1;
        reply_str(r[at + 1]->element[0], s->first_result, sizeof s->first_result);
        s->first_remaining = reply_ll(r[at + 1]->element[1], -1);
        s->first_qty = reply_ll(r[at + 1]->element[2], 0);
        reply_str(r[at + 1]->element[3], s->first_product, sizeof s->first_product);
    }
    if (s->one_per_user)
        reply_str(r[at + 2], s->other, sizeof s->other);
    redis_replies_free(r, n);
    return LL_OK;
}

int rs_read(struct lock_ctx *ctx, struct rs_sale *s, int watch)
{
    int rc;

    /* Only a read with its WATCH is one step a cluster turns back whole;
     * it runs again on the slot's node once the move is over. */
    while ((rc = read_once(ctx, s, watch)) == LL_LOST)
        if ((rc = rs_moving(ctx)) != LL_OK)
            return rc;
    return rc;
}

void rs_unwatch(struct lock_ctx *ctx)
{
    struct redis_pipe p;
    redisReply *r;

    redis_pipe_init(&p, ctx, 0, REDIS_CMD_TIMEOUT_MS, REDIS_OWN, "UNWATCH");
    redis_pipe_add(&p, "UNWATCH");
    if (redis_pipe_run(&p, &r) == LL_OK)
        freeReplyObject(r);
}

/* Add the order's record: its answer, as a replay will give it. */
static void add_order(struct redis_pipe *p, const struct rs_sale *s, const char *result,
                      long long remaining)
{
    redis_pipe_add(p, "HSET %s result %s remaining %lld qty %lld product %s",
                   s->k.order, result, remaining, s->qty, s->p->code);
}

static int write_once(struct lock_ctx *ctx, struct rs_sale *s, int absolute, int *committed,
                      long long *remaining)
{
    struct redis_pipe p;
    redisReply *r[8] = { NULL }, *exec;
    int n, rc, sold_out = s->count < s->qty;
    long long left = s->count - s->qty;

    redis_pipe_init(&p, ctx, 0, REDIS_CMD_TIMEOUT_MS, REDIS_OWN, "MULTI/EXEC");
    if (s->watch_gen)
        redis_pipe_on(&p, (struct redis_mark){ s->watch_node, s->watch_gen });
    redis_pipe_add(&p, "MULTI");
    if (sold_out) {
        add_order(&p, s, "sold_out", s->count);
    } else {
        if (absolute)
            redis_pipe_add(&p, "SET %s %lld", s->k.stock, left);
        else
            redis_pipe_add(&p, "DECRBY %s %lld", s->k.stock, s->qty);
        redis_pipe_add(&p, "INCRBY %s %lld", s->k.sold, s->qty);
        redis_pipe_add(&p, "XADD %s * epoch %lld qty %lld sales 1 order %s user %s "
                       "lock %s remaining %lld", s->k.sales, s->epoch, s->qty,
                       s->order_no, s->user, s->lock, left);
        if (s->order_no[0])
            add_order(&p, s, "sold", left);
        if (s->one_per_user)
            redis_pipe_add(&p, "HSET %s %s %s", s->k.buyers, s->user, s->order_no);
    }
    redis_pipe_add(&p, "EXEC");
    n = p.n;
    if ((rc = rs_run(ctx, &p, r, 1)) != LL_OK)
        return rc;
    exec = r[n - 1];
    if (exec->type == REDIS_REPLY_ERROR) {  /* EXECABORT: a command was refused */
        rc = first_error(ctx, r, n - 1, s->k.stock);
        if (rc == LL_OK)
            rc = redis_reply_error(ctx, 0, exec, s->k.stock);
        else
            freeReplyObject(exec);
        r[n - 1] = NULL;
        redis_replies_free(r, n);
        return rc;
    }
    if (exec->type == REDIS_REPLY_ARRAY) {
        *committed = 1;
        if (!sold_out && !absolute && exec->elements > 0)
            *remaining = reply_ll(exec->element[0], left);
    }
    redis_replies_free(r, n);
    return sold_out ? LL_SOLD_OUT : LL_OK;
}

int rs_write(struct lock_ctx *ctx, struct rs_sale *s, int absolute, int *committed,
             long long *remaining)
{
    int rc, sold_out = s->count < s->qty;

    *committed = 0;
    *remaining = sold_out ? s->count : s->count - s->qty;
    if (sold_out && !s->order_no[0])
        return LL_SOLD_OUT;                 /* nothing to record */
    while ((rc = write_once(ctx, s, absolute, committed, remaining)) == LL_LOST) {
        /* Nothing of it ran. After a WATCH, what it watched is gone (the
         * connection, or the slot's node): a race lost, read again. Under
         * a lock (redis-lock-stock) the count read still stands: the same
         * step again, once the slot's move lets it. */
        if (s->watch_gen) {
            ctx->err = 0;
            return sold_out ? LL_SOLD_OUT : LL_OK;
        }
        if ((rc = rs_moving(ctx)) != LL_OK)
            return rc;
    }
    return rc;
}

/* ---------------------------------------------------------------- answers */

int rs_precheck(struct lock_ctx *ctx, struct rs_sale *s, int *done)
{
    struct order *o = ctx->order;

    *done = 1;
    if (s->replayed) {
        o->replayed = 1;
        o->first_status = !strcmp(s->first_result, "sold") ? LL_OK
                        : !strcmp(s->first_result, "sold_out") ? LL_SOLD_OUT : LL_UNKNOWN;
        o->first_remaining = s->first_remaining;
        o->first_qty = s->first_qty;
        snprintf(o->first_product, sizeof o->first_product, "%s", s->first_product);
        return o->first_status;
    }
    if (!s->loaded)
        return lock_error(ctx, LL_UNAVAILABLE, redis_name(ctx, 0),
                          "%s is not in Redis: POST /stock/reset loads it (a Redis server "
                          "restarted without its append-only file has lost it)", s->k.stock);
    if (s->one_per_user && s->other[0]) {
        o->user_limit = 1;
        snprintf(o->other, sizeof o->other, "%s", s->other);
        return LL_SOLD_OUT;
    }
    *done = 0;
    return LL_OK;
}

/* ---------------------------------------------------------------- the claim */

int redis_stock_claim(struct lock_ctx *ctx, const struct product *p, struct order *o)
{
    struct rs_keys k;
    redisReply *r;

    rs_keys(&k, p->code, o->no);
    if ((r = redis_cmd(ctx, 0, "SET %s %s NX GET", k.claim, p->code)) == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, 0, r, k.claim);
    if (r->type == REDIS_REPLY_STRING && strcmp(r->str, p->code) != 0) {
        o->replayed = 1;
        o->first_qty = -1;
        snprintf(o->first_product, sizeof o->first_product, "%s", r->str);
    }
    freeReplyObject(r);
    return LL_OK;
}

/* ---------------------------------------------------------------- reset */

int redis_stock_reset_begin(struct lock_ctx *ctx, const struct product *p, long long *epoch)
{
    static const char sql_bump[] =
        "INSERT INTO db_redis_stock (stock_id, epoch, applied) VALUES (?, 1, 0) "
        "ON DUPLICATE KEY UPDATE epoch = epoch + 1, applied = 0";
    static const char sql_epoch[] = "SELECT epoch FROM db_redis_stock WHERE stock_id = ?";
    long long rows = 0;
    int rc;

    *epoch = 0;
    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    rc = db_exec(ctx, sql_bump, NULL, "l", p->id);
    if (rc == LL_OK)
        rc = db_exec(ctx, sql_epoch, &rows, "l>l", p->id, epoch);
    if (rc == LL_OK)
        return db_commit(ctx);
    db_rollback(ctx);
    return rc;
}

/* KEYS: stock, epoch, sold, sales, buyers (one hash tag); ARGV: count,
 * epoch, group. */
static struct redis_script load_script = {
    "redis.call('SET', KEYS[1], ARGV[1]) "
    "redis.call('SET', KEYS[2], ARGV[2]) "
    "redis.call('SET', KEYS[3], 0) "
    "redis.call('DEL', KEYS[4], KEYS[5]) "
    "redis.call('XGROUP', 'CREATE', KEYS[4], ARGV[3], '0', 'MKSTREAM') "
    "return 1",
    ""
};

/* The product in locklab:stocks, the consumers' list, before its load: a
 * command of its own, since on a cluster the set is on a slot of its own
 * (a product listed whose load then fails costs a consumer an empty
 * stream, nothing else). */
static int rs_list(struct lock_ctx *ctx, const struct product *p)
{
    redisReply *r = redis_cmd(ctx, 0, "SADD %s %s", REDIS_STOCK_SET, p->code);

    if (r == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, 0, r, REDIS_STOCK_SET);
    freeReplyObject(r);
    return LL_OK;
}

/* Load k with count in epoch: one script. */
static int rs_load_keys(struct lock_ctx *ctx, const struct rs_keys *k, long long count,
                        long long epoch)
{
    char n[24], e[24];
    const char *argv[8];
    redisReply *r;

    snprintf(n, sizeof n, "%lld", count);
    snprintf(e, sizeof e, "%lld", epoch);
    argv[0] = k->stock, argv[1] = k->epoch, argv[2] = k->sold, argv[3] = k->sales;
    argv[4] = k->buyers, argv[5] = n, argv[6] = e, argv[7] = REDIS_STOCK_GROUP;
    if ((r = redis_eval(ctx, 0, &load_script, 5, 8, argv)) == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, 0, r, k->stock);
    freeReplyObject(r);
    return LL_OK;
}

json_t *redis_stock_load(struct lock_ctx *ctx, const struct product *p, long long count,
                         long long epoch)
{
    static const char sql_forget[] =
        "DELETE FROM db_redis_batch WHERE stock_id = ? AND epoch < ?";
    struct rs_keys k;
    int rc;

    rs_keys(&k, p->code, NULL);
    ctx->err = 0;
    if ((rc = rs_list(ctx, p)) == LL_OK)
        rc = rs_load_keys(ctx, &k, count, epoch);
    if (rc != LL_OK)
        return json_pack("{s:s,s:s,s:s?}", "result", ll_status_name(rc), "error", ctx->errstr,
                         "backend", ctx->backend);
    /* The old epochs' entries can never be applied again: forget them. */
    if (db_exec(ctx, sql_forget, NULL, "ll", p->id, epoch) != LL_OK)
        fprintf(stderr, "locklab: %s: %s\n", sql_forget, ctx->errstr);
    return json_pack("{s:s,s:I,s:I}", "key", k.stock, "count", (json_int_t)count,
                     "epoch", (json_int_t)epoch);
}

void redis_stock_unload(struct lock_ctx *ctx, const struct product *p)
{
    struct rs_keys k;
    redisReply *r;

    rs_keys(&k, p->code, NULL);
    ctx->err = 0;
    if ((r = redis_cmd(ctx, 0, "SREM %s %s", REDIS_STOCK_SET, p->code)) != NULL)
        freeReplyObject(r);
    if (r != NULL && (r = redis_cmd(ctx, 0, "DEL %s %s %s %s %s", k.stock, k.epoch, k.sold,
                                    k.sales, k.buyers)) != NULL)
        freeReplyObject(r);
    if (ctx->err)
        fprintf(stderr, "locklab: unloading %s from Redis: %s\n", p->code, ctx->errstr);
}

/* ---------------------------------------------------------------- reading */

/* What Redis holds of a product, read atomically: the count, sold and
 * epoch (strings, '' when missing), then the stream's length (-1: no
 * stream), its entries pending in the group (-1: no group), those not yet
 * delivered, the units of both, then of each (-1: more entries than
 * ARGV[2]). KEYS: stock, sold, epoch, sales; ARGV: group, cap. */
static struct redis_script read_script = {
    "local v = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3]) "
    "local out = {v[1] or '', v[2] or '', v[3] or '', -1, -1, 0, 0, 0, 0} "
    "if redis.call('EXISTS', KEYS[4]) == 0 then return out end "
    "out[4] = redis.call('XLEN', KEYS[4]) "
    "local last "
    "for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[4])) do "
    "  local h = {} "
    "  for i = 1, #g, 2 do h[g[i]] = g[i + 1] end "
    "  if h['name'] == ARGV[1] then last = h['last-delivered-id']; out[5] = h['pending'] end "
    "end "
    "if not last then return out end "
    "local cap, fresh_units, pend_units = tonumber(ARGV[2]), 0, 0 "
    "local function qty(f) "
    "  for i = 1, #f, 2 do if f[i] == 'qty' then return tonumber(f[i + 1]) end end "
    "  return 0 "
    "end "
    "local fresh = redis.call('XRANGE', KEYS[4], '(' .. last, '+', 'COUNT', cap + 1) "
    "out[6] = #fresh "
    "for _, e in ipairs(fresh) do fresh_units = fresh_units + qty(e[2]) end "
    "local pend = {} "
    "if out[5] > 0 then pend = redis.call('XPENDING', KEYS[4], ARGV[1], '-', '+', cap + 1) end "
    "for _, p in ipairs(pend) do "
    "  local e = redis.call('XRANGE', KEYS[4], p[1], p[1]) "
    "  if e[1] then pend_units = pend_units + qty(e[1][2]) end "
    "end "
    "if #fresh > cap then fresh_units = -1 end "
    "if #pend > cap then pend_units = -1 end "
    "out[7] = (fresh_units < 0 or pend_units < 0) and -1 or fresh_units + pend_units "
    "out[8] = fresh_units "
    "out[9] = pend_units "
    "return out",
    ""
};

#define RS_READ_CAP 100000      /* entries the reading counts the units of */

/* MariaDB's side, read in one statement: the count, the epoch and the
 * units applied in it (-1, -1 when the product was never loaded). */
static int mysql_side(struct lock_ctx *ctx, const struct product *p, long long *count,
                      long long *epoch, long long *applied)
{
    static const char sql[] =
        "SELECT s.count, IFNULL(r.epoch, -1), IFNULL(r.applied, -1) FROM db_stock s "
        "LEFT JOIN db_redis_stock r ON r.stock_id = s.id WHERE s.id = ?";
    long long rows = 0;
    int rc = db_exec(ctx, sql, &rows, "l>lll", p->id, count, epoch, applied);

    if (rc == LL_OK && rows == 0)
        return lock_error(ctx, LL_ERROR, "mysql", "db_stock row %lld vanished", p->id);
    return rc;
}

int rs_adds_up(const struct rs_tally *t)
{
    long long in_flight = t->sold - t->applied;

    if (!t->loaded || t->r_epoch != t->m_epoch || t->m_count != t->r_count + in_flight ||
        in_flight < 0)
        return 0;
    if (t->undelivered_units >= 0 && in_flight < t->undelivered_units)
        return 0;               /* entries in the stream that nothing counts in flight */
    return t->undelivered_units < 0 || t->pending_units < 0 ||
           in_flight <= t->undelivered_units + t->pending_units;
}

int rs_reconciled(const struct rs_tally *t)
{
    return rs_adds_up(t) && t->sold == t->applied;
}

static json_t *failure(struct lock_ctx *ctx, int rc)
{
    return json_pack("{s:s,s:s,s:s?}", "result", ll_status_name(rc), "error", ctx->errstr,
                     "backend", ctx->backend);
}

json_t *redis_stock_json(struct lock_ctx *ctx, const struct product *p)
{
    long long len, pending, undelivered, units, in_flight;
    struct rs_tally t;
    struct rs_keys k;
    char cap[16];
    const char *argv[6];
    redisReply *r;
    json_t *out;
    int rc;

    rs_keys(&k, p->code, NULL);
    ctx->err = 0;
    if ((rc = mysql_side(ctx, p, &t.m_count, &t.m_epoch, &t.applied)) != LL_OK)
        return failure(ctx, rc);
    snprintf(cap, sizeof cap, "%d", RS_READ_CAP);
    argv[0] = k.stock, argv[1] = k.sold, argv[2] = k.epoch, argv[3] = k.sales;
    argv[4] = REDIS_STOCK_GROUP, argv[5] = cap;
    if ((r = redis_eval(ctx, 0, &read_script, 4, 6, argv)) == NULL)
        return failure(ctx, ctx->err);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 9)
        return failure(ctx, redis_reply_error(ctx, 0, r, k.stock));
    t.loaded = r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len > 0;
    t.r_count = reply_ll(r->element[0], 0);
    t.sold = reply_ll(r->element[1], 0);
    t.r_epoch = reply_ll(r->element[2], 0);
    len = reply_ll(r->element[3], -1);
    pending = reply_ll(r->element[4], -1);
    undelivered = reply_ll(r->element[5], 0);
    units = reply_ll(r->element[6], -1);
    t.undelivered_units = reply_ll(r->element[7], -1);
    t.pending_units = reply_ll(r->element[8], -1);
    freeReplyObject(r);

    in_flight = t.sold - t.applied;
    out = json_pack("{s:s,s:b,s:I,s:I,s:I,s:I,s:{s:s,s:I,s:I,s:I,s:I,s:I,s:I},"
                    "s:{s:I,s:I,s:I},s:I,s:b,s:b,s:b}",
        "key", k.stock, "loaded", t.loaded, "count", (json_int_t)t.r_count,
        "sold", (json_int_t)t.sold, "epoch", (json_int_t)t.r_epoch,
        "load", (json_int_t)(t.r_count + t.sold),
        "stream", "key", k.sales, "entries", (json_int_t)len, "pending", (json_int_t)pending,
        "undelivered", (json_int_t)undelivered, "units", (json_int_t)units,
        "undelivered_units", (json_int_t)t.undelivered_units,
        "pending_units", (json_int_t)t.pending_units,
        "mysql", "count", (json_int_t)t.m_count, "applied", (json_int_t)t.applied,
        "epoch", (json_int_t)t.m_epoch,
        "in_flight", (json_int_t)in_flight, "adds_up", rs_adds_up(&t),
        "reconciled", rs_reconciled(&t),
        "drained", t.loaded && in_flight == 0 && units == 0);
    return out;
}
