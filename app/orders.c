/* orders.c — POST /order: seed 002's idempotent order around any strategy
 * (see order.h for where each store records it).
 *
 * For MariaDB's stock the order number is claimed before the sale:
 *
 *     INSERT INTO db_order (order_no, …, state) VALUES (?, …, 'pending')
 *       duplicate → the order exists: SELECT its state; pending → its
 *                   first attempt is still selling: wait (lock_backoff)
 *                   until it is done or the request's wait is over
 *       else      → sale_run() with ctx->qty units, then the outcome:
 *                   UPDATE db_order SET state = 'sold' | 'sold_out' |
 *                   'unknown', or DELETE the claim when nothing was sold
 *                   for certain (lock_timeout, unavailable, error)
 *
 * The unique key orders the copies whichever instance serves them: one
 * INSERT wins, every other copy meets its row. A copy meets the claim or
 * the outcome, never a half-made sale. What it cannot do is outlive its
 * instance: one that dies between the claim and the outcome leaves the
 * order pending (db_order.instance names it), and its copies wait, then
 * answer lock_timeout. A claim whose answer was lost on its way back may
 * stand all the same, and nobody would ever finish it: the attempt gives
 * it back at once (DELETE of the pending row it made, known by the name
 * of the attempt in db_order.instance, "<instance uuid>:<n>") and
 * answers 503, nothing sold, so a copy claims it again. The fault
 * ?lose_claim=1 loses that answer on purpose.
 *
 * For Redis's stock the order number is claimed for its product first
 * (locklab:order:O, redis_stock_claim()): a number another product holds
 * is order_conflict at once; otherwise the strategy's own atomic step
 * finds or records the order (ctx->order), and this file only turns what
 * it found into the answer.
 */
#include "orders.h"
#include "sale.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../locks/lock.h"
#include "../store/redis_stock.h"
#include "../store/stock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

enum { STATE_PENDING = 1, STATE_SOLD, STATE_SOLD_OUT, STATE_UNKNOWN };

#define ATTEMPT_MAX 64          /* db_order.instance: VARCHAR(64) */

static _Atomic unsigned long long n_attempts;
static _Atomic long long n_sold, n_sold_out, n_unknown, n_failed, n_replayed, n_user_limit,
                         n_conflicts;

int order_name_valid(const char *s)
{
    return word_valid(s, ORDER_NO_MAX);
}

/* ---------------------------------------------------------------- MariaDB */

static const char sql_claim[] =
    "INSERT INTO db_order (order_no, stock_id, qty, user, user_key, strategy, state, instance) "
    "VALUES (?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, 'pending', ?)";
static const char sql_find[] =
    "SELECT FIELD(state, 'pending', 'sold', 'sold_out', 'unknown'), IFNULL(remaining, -1), "
    "qty, stock_id FROM db_order WHERE order_no = ?";
static const char sql_user[] = "SELECT id FROM db_order WHERE stock_id = ? AND user_key = ?";

/* The order exists (a row found by sql_find): its first answer into o. */
static void first_answer(struct order *o, const struct product *p, long long state,
                         long long remaining, long long qty, long long stock_id)
{
    o->replayed = 1;
    o->first_status = state == STATE_SOLD ? LL_OK : state == STATE_SOLD_OUT ? LL_SOLD_OUT
                                                                             : LL_UNKNOWN;
    o->first_remaining = remaining;
    o->first_qty = qty;
    if (stock_id == p->id)
        snprintf(o->first_product, sizeof o->first_product, "%s", p->code);
    else
        snprintf(o->first_product, sizeof o->first_product, "#%lld", stock_id);
}

/* The claim's INSERT was sent and its answer lost (LL_UNKNOWN): it may
 * stand, pending, with no attempt to finish it. Delete it if it is this
 * attempt's; the answer is 503, nothing sold. */
static int give_back(struct lock_ctx *ctx, const struct order *o, const char *attempt)
{
    static const char sql[] =
        "DELETE FROM db_order WHERE order_no = ? AND instance = ? AND state = 'pending'";
    int rc = db_exec(ctx, sql, NULL, "ss", o->no, attempt);

    return lock_error(ctx, LL_UNAVAILABLE, "mysql", "order %s: the claim's answer was lost; "
                      "%s, nothing sold", o->no, rc == LL_OK ? "given back"
                                                          : "it may stand, pending");
}

/* One INSERT of the claim, named `attempt`; its answer lost on purpose
 * with ?lose_claim=1 (a statement marked as one whose outcome matters,
 * clients/db.h: a lost answer is LL_UNKNOWN). */
static int claim_once(struct lock_ctx *ctx, const struct lock_ops *ops, const struct product *p,
                      struct order *o, const char *attempt)
{
    const char *user = o->user ? o->user : "";
    int sale_fault = ctx->lose_answer, rc;

    ctx->lose_answer = o->lose_claim;
    o->lose_claim = 0;
    rc = db_exec(ctx, sql_claim, NULL, "!sllssss", o->no, p->id, (long long)ctx->qty, user,
                 o->one_per_user ? user : "", ops->name, attempt);
    ctx->lose_answer = sale_fault;
    return rc == LL_UNKNOWN ? give_back(ctx, o, attempt) : rc;
}

/* Claim o's number: LL_OK with *claimed when this request is the first
 * attempt; LL_OK without it when the order exists (o->replayed) or the
 * user has another (o->user_limit); a failure otherwise. */
static int claim(struct lock_ctx *ctx, const struct lock_ops *ops, const struct product *p,
                 struct order *o, int *claimed)
{
    const char *user = o->user ? o->user : "";
    long long rows, state, remaining, qty, stock_id, other;
    char attempt[ATTEMPT_MAX + 1];
    int rc;

    *claimed = 0;
    snprintf(attempt, sizeof attempt, "%s:%llu", ctx->cfg->instance_id,
             atomic_fetch_add(&n_attempts, 1) + 1);
    for (;;) {
        rc = claim_once(ctx, ops, p, o, attempt);
        if (rc == LL_OK) {
            *claimed = 1;
            return LL_OK;
        }
        if (db_errno(ctx) != DB_ER_DUP_ENTRY)
            return rc;
        ctx->err = 0;
        rc = db_exec(ctx, sql_find, &rows, "s>llll", o->no, &state, &remaining, &qty,
                     &stock_id);
        if (rc != LL_OK)
            return rc;
        if (rows == 1 && state != STATE_PENDING) {
            first_answer(o, p, state, remaining, qty, stock_id);
            return LL_OK;
        }
        if (rows == 0 && o->one_per_user) {     /* the user's key, not the order's */
            rc = db_exec(ctx, sql_user, &rows, "ls>l", p->id, user, &other);
            if (rc != LL_OK)
                return rc;
            if (rows == 1) {
                o->user_limit = 1;
                return LL_OK;
            }
        }
        /* Pending: its first attempt is selling. Gone: the claim was given
         * back (nothing sold), so claim it again. */
        if (rows == 1 ? lock_backoff(ctx) != LL_OK : lock_time_left(ctx) <= 0)
            return lock_error(ctx, LL_TIMEOUT, NULL, "order %s is still being placed by "
                              "its first attempt (%d ms waited)", o->no, ctx->wait_ms);
    }
}

/* The sale's outcome into the claimed row, or the claim given back. A
 * failure to write it does not undo the sale: it becomes o->warning, and
 * ctx's error stays the sale's. */
static void record(struct lock_ctx *ctx, struct order *o, int status, long long remaining)
{
    static const char sql_done[] =
        "UPDATE db_order SET state = ?, remaining = NULLIF(?, -1) "
        "WHERE order_no = ? AND state = 'pending'";
    static const char sql_drop[] =
        "DELETE FROM db_order WHERE order_no = ? AND state = 'pending'";
    const char *state = status == LL_OK ? "sold" : status == LL_SOLD_OUT ? "sold_out"
                      : status == LL_UNKNOWN ? "unknown" : NULL;
    int err = ctx->err, rc;
    const char *backend = ctx->backend;
    char saved[sizeof ctx->errstr];

    memcpy(saved, ctx->errstr, sizeof saved);
    rc = state ? db_exec(ctx, sql_done, NULL, "sls", state,
                         status == LL_OK ? remaining : -1LL, o->no)
               : db_exec(ctx, sql_drop, NULL, "s", o->no);
    if (rc != LL_OK)
        snprintf(o->warning, sizeof o->warning, "the order's record was not written, "
                 "its copies will wait for it: %s", ctx->errstr);
    ctx->err = err;
    ctx->backend = backend;
    memcpy(ctx->errstr, saved, sizeof saved);
}

/* ---------------------------------------------------------------- the order */

int order_place(struct lock_ctx *ctx, const struct lock_ops *ops, const struct product *p,
                struct order *o, long long *remaining)
{
    int rc, claimed = 0;

    *remaining = -1;
    ctx->order = o;
    if (ops->stock == NULL) {               /* MariaDB's stock: db_order */
        rc = claim(ctx, ops, p, o, &claimed);
        if (rc == LL_OK && claimed) {
            o->ran = 1;
            rc = sale_run(ctx, ops, p, 1, remaining);
            record(ctx, o, rc, *remaining);
        }
    } else {                                /* the strategy's store records it */
        rc = redis_stock_claim(ctx, p, o);
        if (rc == LL_OK && o->replayed)     /* the number is another product's */
            return lock_error(ctx, LL_BADREQ, NULL, "order %s was placed for product %s: "
                              "an order number names one purchase", o->no,
                              o->first_product);
        if (rc == LL_OK)
            rc = sale_run(ctx, ops, p, 1, remaining);
        o->ran = !o->replayed && !o->user_limit;
    }
    if (o->user_limit)
        return LL_SOLD_OUT;
    if (!o->replayed)
        return rc;
    if (strcmp(o->first_product, p->code) != 0 || o->first_qty != ctx->qty)
        return lock_error(ctx, LL_BADREQ, NULL, "order %s was placed for %lld of product %s: "
                          "an order number names one purchase", o->no, o->first_qty,
                          o->first_product);
    *remaining = o->first_remaining;
    return o->first_status;
}

int order_reset(struct lock_ctx *ctx, const struct product *p)
{
    static const char sql[] =
        "UPDATE db_order SET user_key = NULL WHERE stock_id = ? AND user_key IS NOT NULL";
    return db_exec(ctx, sql, NULL, "l", p->id);
}

/* ---------------------------------------------------------------- counters */

void order_count(const struct order *o, int status)
{
    _Atomic long long *c = o->user_limit ? &n_user_limit
                         : o->replayed ? (status == LL_BADREQ ? &n_conflicts : &n_replayed)
                         : status == LL_OK ? &n_sold : status == LL_SOLD_OUT ? &n_sold_out
                         : status == LL_UNKNOWN ? &n_unknown : &n_failed;
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

json_t *order_stats_json(void)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "sold", (json_int_t)atomic_load(&n_sold),
                     "sold_out", (json_int_t)atomic_load(&n_sold_out),
                     "unknown", (json_int_t)atomic_load(&n_unknown),
                     "failed", (json_int_t)atomic_load(&n_failed),
                     "replayed", (json_int_t)atomic_load(&n_replayed),
                     "user_limit", (json_int_t)atomic_load(&n_user_limit),
                     "conflicts", (json_int_t)atomic_load(&n_conflicts));
}

void order_stats_reset(void)
{
    atomic_store(&n_sold, 0);
    atomic_store(&n_sold_out, 0);
    atomic_store(&n_unknown, 0);
    atomic_store(&n_failed, 0);
    atomic_store(&n_replayed, 0);
    atomic_store(&n_user_limit, 0);
    atomic_store(&n_conflicts, 0);
}
