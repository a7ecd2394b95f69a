/* redis_decr.c — the seckill answer: the stock in Redis, taken by one Lua
 * script (seeds 001 and 004 end here; the script is REDIS_STOCK_DECR_LUA in
 * redis_stock.h).
 *
 *     EVALSHA <decr> 5+n {stock:P} {stock:P}:sold {stock:P}:sales
 *                        {stock:P}:epoch {stock:P}:buyers
 *                        {stock:P}:order:O₁ … {stock:P}:order:Oₙ  lock P
 *                        qty₁ order₁ user₁ 0|1 … qtyₙ orderₙ userₙ 0|1
 *
 * The script checks count >= qty for each purchase, takes the units, and
 * in the same atomic step records the sales in the stream {stock:P}:sales
 * and an order's first answer in {stock:P}:order:O. Every key is under
 * the hash tag {stock:P}: on a Redis Cluster the script runs on the
 * master of one slot. Redis runs one script at a time, so no lock is
 * needed, and two copies of an order, whichever instances send them, meet
 * there one after the other. The consumer of every
 * instance applies the stream to MariaDB afterwards
 * (redis_stock_consumer.c): no MariaDB round trip on the sale's path.
 *
 * The purchases of one product waiting in an instance go to Redis
 * together, as mysql-batch's go to MariaDB: the first in line takes up to
 * RS_BATCH of them, sends one script for all, and hands each its answer;
 * the next in line leads the next batch (flat combining). Each purchase is
 * still sold or refused on its own, all of its qty or none, in the order
 * of the line. Alone, a purchase leads a batch of one. A batch costs Redis
 * one command and its sales without an order one stream entry, so under
 * load Redis and the consumers spend little per sale, and /stats shows
 * backend operations per sale below 1. A purchase whose wait ends while it
 * is still in line leaves with lock_timeout; one already taken into a
 * batch waits for the batch's answer (at most the Redis command timeout).
 * A line's mutex guards its list for a few instructions, never across the
 * batch's round trip: purchases wait on their slot's wait_cond, which
 * releases it (a coroutine parks on the loop, a thread blocks).
 *
 * A script whose answer is lost (the connection dropped after it was sent;
 * ?lose_answer=1 makes it happen, to a batch of its own, by dropping the
 * connection once the script is sent) may have sold:
 * every purchase of the batch is LL_UNKNOWN, never sent again; an order's
 * copy then learns from {stock:P}:order:O what happened.
 * What it still leaves: MariaDB's count trails the sales by what the
 * stream holds, and a sale is as durable as Redis's append-only file (the
 * stack's: appendfsync everysec, docs/stack.md).
 */
#include "redis_stock_private.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RS_BATCH  48            /* purchases one script sells at most      */
#define RS_QUEUES 16            /* lines, striped by product id            */

static struct redis_script decr_script = { REDIS_STOCK_DECR_LUA, "" };

enum {
    PENDING = -1,               /* not answered yet                       */
    CHECK = -2                  /* answered: what the script found is in
                                 * the purchase's state (rs_precheck())    */
};

/* A worker slot's wake-up, made at its first purchase and kept: a leader
 * may signal it after the line's mutex is free, even when the purchase it
 * woke has already gone (as mysql_queue.c's struct mysql_slot). A
 * wait_cond: a purchase waits in line as a coroutine parks on the loop, or
 * as a thread blocks. */
struct rs_slot {
    struct wait_cond wake;
    int              made;
};

struct purchase {
    struct purchase *next;
    struct lock_ctx *ctx;
    struct rs_slot  *slot;
    struct rs_sale   sale;
    long long        remaining;
    int              status;    /* PENDING until its batch is answered   */
    int              taken;     /* in a leader's batch: wait for it      */
    int              alone;     /* leads a batch of its own (lose_answer) */
};

struct line {
    pthread_mutex_t  lock;
    struct purchase *head, *tail;
    int              busy;      /* a batch is at Redis                   */
};

static struct line lines[RS_QUEUES];
static _Atomic(struct rs_slot *) slots;     /* --threads of them, made once */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t lines_once = PTHREAD_ONCE_INIT;

static void lines_init(void)
{
    int i;

    for (i = 0; i < RS_QUEUES; i++)
        pthread_mutex_init(&lines[i].lock, NULL);
}

/* ctx's slot: only ctx's request makes or uses it before it is in line. */
static struct rs_slot *slot_of(struct lock_ctx *ctx)
{
    struct rs_slot *all = atomic_load(&slots), *s;

    if (all == NULL) {
        pthread_mutex_lock(&slots_lock);
        if ((all = atomic_load(&slots)) == NULL) {
            all = xcalloc((size_t)ctx->cfg->threads, sizeof *all);
            atomic_store(&slots, all);
        }
        pthread_mutex_unlock(&slots_lock);
    }
    assert(ctx->slot >= 0 && ctx->slot < ctx->cfg->threads);
    s = &all[ctx->slot];
    if (!s->made) {
        wait_cond_init(&s->wake);
        s->made = 1;
    }
    return s;
}

static void unlink_purchase(struct line *l, struct purchase *p)
{
    struct purchase **pp, *prev = NULL;

    for (pp = &l->head; *pp; prev = *pp, pp = &(*pp)->next) {
        if (*pp != p)
            continue;
        *pp = p->next;
        if (l->tail == p)
            l->tail = prev;
        return;
    }
}

/* ---------------------------------------------------------------- one batch */

/* One purchase's answer of the script, into its state. */
static int answer_one(struct purchase *p, const redisReply *a)
{
    struct rs_sale *s = &p->sale;
    const char *what;

    if (a->type != REDIS_REPLY_ARRAY || a->elements < 2 ||
        a->element[0]->type != REDIS_REPLY_STRING)
        return lock_error(p->ctx, LL_ERROR, "redis", "%s: the sale script answered badly",
                          s->k.stock);
    what = a->element[0]->str;
    s->loaded = 1;
    if (!strcmp(what, "sold") || !strcmp(what, "sold_out")) {
        p->remaining = a->element[1]->integer;
        return !strcmp(what, "sold") ? LL_OK : LL_SOLD_OUT;
    }
    if (!strcmp(what, "replayed") && a->elements == 5) {
        s->replayed = 1;
        snprintf(s->first_result, sizeof s->first_result, "%s", a->element[1]->str);
        s->first_remaining = strtoll(a->element[2]->str, NULL, 10);
        s->first_qty = strtoll(a->element[3]->str, NULL, 10);
        snprintf(s->first_product, sizeof s->first_product, "%s", a->element[4]->str);
    } else if (!strcmp(what, "user_limit")) {
        snprintf(s->other, sizeof s->other, "%s", a->element[1]->str);
    }
    return CHECK;
}

/* The fault ?lose_answer=1: the script goes out whole (EVAL with its
 * source, which even a restarted server runs) on the slot's own
 * connection, and that connection is dropped before its answer is read, as
 * if it had broken on the way back: Redis runs what it received, and the
 * purchase is unknown. */
static int send_and_lose(struct lock_ctx *ctx, int nkeys, int argc, const char **argv)
{
    const char *args[REDIS_EVAL_ARGS + 3];
    struct redis_pipe p;
    char nk[12];
    int i;

    assert(argc <= REDIS_EVAL_ARGS);
    snprintf(nk, sizeof nk, "%d", nkeys);
    args[0] = "EVAL", args[1] = decr_script.text, args[2] = nk;
    for (i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    redis_pipe_init(&p, ctx, 0, REDIS_CMD_TIMEOUT_MS, REDIS_OWN, "EVAL");
    redis_pipe_argv(&p, argc + 3, args);
    if (redis_pipe_send(&p) != LL_OK) {
        redis_pipe_free(&p);
        return ctx->err;                    /* nothing was sent */
    }
    redis_pipe_drop(&p);
    return lock_error(ctx, LL_UNKNOWN, ctx->backend, "%s: the sale was sent and its answer "
                      "lost (?lose_answer=1): it may or may not have been made", ctx->errstr);
}

/* Send batch[0..n) as one script call; an answer for each. */
static void run_batch(struct purchase **batch, int n, int *status)
{
    struct lock_ctx *ctx = batch[0]->ctx;
    const char *argv[5 + RS_BATCH + 2 + 4 * RS_BATCH];
    char qty[RS_BATCH][24];
    redisReply *r;
    int i, argc = 0, rc, sent;

    argv[argc++] = batch[0]->sale.k.stock, argv[argc++] = batch[0]->sale.k.sold;
    argv[argc++] = batch[0]->sale.k.sales, argv[argc++] = batch[0]->sale.k.epoch;
    argv[argc++] = batch[0]->sale.k.buyers;
    for (i = 0; i < n; i++)
        argv[argc++] = batch[i]->sale.order_no[0] ? batch[i]->sale.k.order
                                                  : batch[i]->sale.k.stock;
    argv[argc++] = batch[0]->sale.lock, argv[argc++] = batch[0]->sale.p->code;
    for (i = 0; i < n; i++) {
        const struct rs_sale *s = &batch[i]->sale;
        snprintf(qty[i], sizeof qty[i], "%lld", s->qty);
        argv[argc++] = qty[i], argv[argc++] = s->order_no, argv[argc++] = s->user;
        argv[argc++] = s->one_per_user ? "1" : "0";
    }
    rc = LL_OK;
    if (ctx->lose_answer) {                 /* fault: the script runs, its answer is lost */
        rc = send_and_lose(ctx, 5 + n, argc, argv);
    } else if ((r = redis_eval_sent(ctx, 0, &decr_script, 5 + n, argc, argv, &sent)) == NULL) {
        rc = !sent ? ctx->err               /* nothing was sent */
           : lock_error(ctx, LL_UNKNOWN, ctx->backend, "%s: the sale was sent and its "
                        "answer lost: it may or may not have been made", ctx->errstr);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               !strcmp(r->element[0]->str, "missing")) {
        for (i = 0; i < n; i++)             /* {stock:P} is not loaded */
            status[i] = CHECK;
        freeReplyObject(r);
        return;
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)n) {
        rc = redis_reply_error(ctx, 0, r, batch[0]->sale.k.stock);
    } else {
        for (i = 0; i < n; i++)
            status[i] = answer_one(batch[i], r->element[i]);
        freeReplyObject(r);
        return;
    }
    for (i = 0; i < n; i++) {
        status[i] = rc;
        if (i > 0)
            lock_error(batch[i]->ctx, rc, ctx->backend, "%s", ctx->errstr);
    }
}

/* Take me and up to RS_BATCH − 1 of the purchases of my product behind me,
 * lead their batch to Redis and answer them; entered with l->lock held,
 * left without it. The wake-ups go out once the line's mutex is free. */
static void lead(struct line *l, struct purchase *me)
{
    struct purchase *batch[RS_BATCH], *p, *next;
    struct wait_cond *wake[RS_BATCH + 1];
    int status[RS_BATCH];
    int i, n = 0, nwake = 0;

    l->busy = 1;
    unlink_purchase(l, me);
    batch[n++] = me;
    for (p = l->head; p && n < RS_BATCH && !me->alone; p = next) {
        next = p->next;
        if (p->sale.p->id != me->sale.p->id || p->alone)
            continue;
        unlink_purchase(l, p);
        p->taken = 1;
        batch[n++] = p;
    }
    pthread_mutex_unlock(&l->lock);
    run_batch(batch, n, status);
    pthread_mutex_lock(&l->lock);
    for (i = 0; i < n; i++) {
        batch[i]->status = status[i];
        if (batch[i] != me)
            wake[nwake++] = &batch[i]->slot->wake;
    }
    l->busy = 0;
    if (l->head)
        wake[nwake++] = &l->head->slot->wake;   /* the next in line leads */
    pthread_mutex_unlock(&l->lock);
    for (i = 0; i < nwake; i++)
        wait_cond_signal(wake[i]);
}

/* ---------------------------------------------------------------- the sale */

/* Wait in line until my batch is answered, leading it if I am first. */
static int wait_in_line(struct purchase *me)
{
    struct lock_ctx *ctx = me->ctx;
    struct line *l = &lines[(unsigned long long)me->sale.p->id % RS_QUEUES];

    pthread_mutex_lock(&l->lock);
    if (l->tail)
        l->tail->next = me;
    else
        l->head = me;
    l->tail = me;
    while (me->status == PENDING) {
        if (!me->taken && !l->busy && l->head == me) {
            lead(l, me);                        /* answers me, frees l->lock */
            return me->status;
        } else if (me->taken) {                 /* answered soon, deadline or not */
            wait_cond_wait(&me->slot->wake, &l->lock, WAIT_FOREVER);
        } else if (!wait_cond_wait(&me->slot->wake, &l->lock, ctx->deadline_ms * 1000) &&
                   me->status == PENDING && !me->taken) {
            unlink_purchase(l, me);             /* still in line: give up */
            me->status = lock_error(ctx, LL_TIMEOUT, NULL, "not at Redis within %d ms (in "
                                    "line behind other purchases of %s)", ctx->wait_ms,
                                    me->sale.p->code);
            if (!l->busy && l->head)
                wait_cond_signal(&l->head->slot->wake);
        }
    }
    pthread_mutex_unlock(&l->lock);
    return me->status;
}

static int decr_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    struct purchase me = { .ctx = ctx, .remaining = -1, .status = PENDING };
    int rc, done;

    pthread_once(&lines_once, lines_init);
    me.slot = slot_of(ctx);
    me.alone = ctx->lose_answer;
    rs_sale_init(&me.sale, ctx, p, ctx->ops->name);
    rc = wait_in_line(&me);
    *remaining = me.remaining;
    if (rc != CHECK)
        return rc;
    rc = rs_precheck(ctx, &me.sale, &done);     /* replayed, user limit, not loaded */
    if (!done)
        return lock_error(ctx, LL_ERROR, "redis", "%s: the sale script gave no answer",
                          me.sale.k.stock);
    return rc;
}

const struct lock_ops lock_redis_decr = {
    .name     = "redis-decr",
    .family   = "redis-stock",
    .summary  = "{stock:P} in Redis: one Lua script checks count >= qty, DECRBY, XADD of the sale to {stock:P}:sales; consumers apply the stream to MariaDB (seeds 001, 004)",
    .flaw     = "MariaDB trails by what the stream holds; a sale is as durable as Redis's AOF (everysec)",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT,
    .fails    = FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_REDIS_DECR,
    .protocol = (const char *const[]){ REDIS_STOCK_DECR_LUA, NULL },
    .stock    = "redis",
    .nofence  = "no lock to fence: one Lua script on {stock:P} is the whole sale, atomic in Redis",
    .sell     = decr_sell,
};

/* redis-buckets sells each bucket as redis-decr sells a product. */
int rs_decr_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    return decr_sell(ctx, p, remaining);
}
