/* mysql_queue.c — purchases of one row queue in their instance, and the
 * first in line takes the queue's head to MariaDB (see mysql_private.h).
 *
 * Why queue at all. Concurrent UPDATEs of one row wait in InnoDB for each
 * other's row lock, and every such wait costs MariaDB a suspend and a
 * wake-up, so the hot row takes far more UPDATEs a second from two or three
 * connections than from dozens (ll-limits' mysql_update_peak against its
 * mysql_update, measured on the stack at hand). A
 * queue here is far cheaper than one in InnoDB, and the row lock still
 * orders the instances (three instances: at most three sales on the row at
 * a time). The queue is not the lock: without it the counts stay exact,
 * only slower. mysql-update, mysql-for-update and mysql-optimistic use it
 * one purchase at a time; mysql-batch in batches.
 *
 * The queue is flat combining. A purchase appends itself; the head of the
 * line, when no leader is at the database, becomes it, takes itself and up
 * to batch − 1 of the purchases behind it for the same row and sale, runs
 * the sale for all of them without the queue's mutex, hands each its
 * answer and wakes the next in line to lead. Alone, the leader runs its
 * strategy's own sale; with n > 1 purchases, one round trip serves them:
 *
 *     UPDATE db_stock SET count = count - n WHERE id = ? AND count >= n
 *
 * sells all n or none. None means fewer than n are left: the leader then
 * sells them one unit at a time until one is refused, and the rest of the
 * batch is sold out too (stock only falls during a sale). A pipelined
 * queue (mysql-update) sends instead each purchase's own statement, n of
 * them in one write: MariaDB runs them one after the other, each its own
 * autocommitted sale, with no trip back to the instance in between, and
 * the instance wakes once for the n answers. A purchase with a fault
 * switch on is sold alone, so that its fault is its own.
 * A leader may also pass the row on: mysql_queue_claim() takes the next
 * purchase in line for its row and sale, and mysql_queue_pass() either
 * hands it the leader's connection, its transaction already begun, and
 * makes it the leader (q->busy stays set), or puts it back at the head of
 * the line (mysql-for-update, which begins the next transaction behind its
 * COMMIT).
 * A purchase whose deadline passes while it waits in line leaves the queue
 * with a timeout; one already taken or claimed by a leader waits for its
 * answer or its turn, which MariaDB's own timeouts bound. Each UPDATE of
 * the queue's counts as one backend operation of its leader, so /stats
 * shows batching as operations per sale below 1.
 */
#include "mysql_private.h"
#include "protocol.h"
#include "../clients/db.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../store/stock.h"

#include <pthread.h>
#include <stdlib.h>

#define QUEUES 64                   /* striped by row id */

enum { PENDING = -1 };

/* A worker slot's part in the queues (ctx->mysql), made at its first
 * purchase and kept until the worker shuts down (mysql_queue_ctx_free()). */
struct mysql_slot {
    struct wait_cond wake;          /* its purchase waits here in line.
                                     * It lives as long as
                                     * the slot, so a waker may signal it
                                     * after the queue's mutex is free, even
                                     * when the purchase it woke has gone */
    struct purchase *queued;        /* that purchase, while it is in line */
};

struct purchase {
    struct purchase   *next;
    struct lock_ctx   *ctx;
    struct mysql_slot *slot;          /* ctx's: where it waits            */
    const struct product *prod;       /* the row */
    mysql_sell_fn      sell;          /* one purchase alone */
    long long          remaining;     /* what sell said is left */
    int                status;        /* PENDING until a leader answers */
    int                taken;         /* in a leader's batch, or claimed by
                                       * it (mysql_queue_claim): wait      */
    int                lead;          /* passed the row and a begun
                                       * transaction: lead now             */
    int                passed;        /* I passed the row to the next      */
};

struct queue {
    pthread_mutex_t  lock;
    struct purchase *head, *tail;   /* waiting, not yet taken */
    int              busy;          /* a leader is at the database */
    long long        row_id;        /* the row as a sale here left it, */
    long long        row[2];        /* for the next in line: id, count, */
    int64_t          row_us;        /* version, and when it was read   */
};

#define ROW_FRESH_US 2000           /* how old a left row may be taken */

static struct queue queues[QUEUES];
static pthread_once_t queues_once = PTHREAD_ONCE_INIT;

static struct queue *queue_of(const struct product *prod)
{
    return &queues[(unsigned long long)prod->id % QUEUES];
}

static void queues_init(void)
{
    int i;

    for (i = 0; i < QUEUES; i++)
        pthread_mutex_init(&queues[i].lock, NULL);
}

static struct mysql_slot *slot_of(struct lock_ctx *ctx)
{
    struct mysql_slot *s = ctx->mysql;

    if (s == NULL) {
        s = ctx->mysql = xcalloc(1, sizeof *s);
        wait_cond_init(&s->wake);
    }
    return s;
}

void mysql_queue_ctx_free(struct lock_ctx *ctx)
{
    if (ctx->mysql == NULL)
        return;
    pthread_mutex_destroy(&ctx->mysql->wake.mu);
    free(ctx->mysql);
    ctx->mysql = NULL;
}

static void unlink_purchase(struct queue *q, struct purchase *p)
{
    struct purchase **pp, *prev = NULL;

    for (pp = &q->head; *pp; prev = *pp, pp = &(*pp)->next) {
        if (*pp != p)
            continue;
        *pp = p->next;
        if (q->tail == p)
            q->tail = prev;
        return;
    }
}

/* May ctx's purchase share a batch: one unit, no fault switch. */
static int alone_ok(const struct lock_ctx *ctx)
{
    return ctx->qty == 1 && !ctx->hold_ms && !ctx->late_ms && !ctx->crash && !ctx->lose_answer;
}

/* Take me and up to max − 1 purchases of my row and kind, in order.
 * A batch sells units, one a purchase: a purchase of several (POST /order's
 * qty) is sold alone. Under q->lock. */
static int take_batch(struct queue *q, struct purchase *me, struct purchase **batch, int max)
{
    struct purchase *p, *next;
    int n = 0;

    unlink_purchase(q, me);
    batch[n++] = me;
    if (!alone_ok(me->ctx))
        max = 1;
    for (p = q->head; p && n < max; p = next) {
        next = p->next;
        if (p->prod->id != me->prod->id || p->sell != me->sell || !alone_ok(p->ctx))
            continue;
        unlink_purchase(q, p);
        p->taken = 1;
        batch[n++] = p;
    }
    return n;
}

static int sell_n(struct lock_ctx *ctx, long long id, long long n);

/* --ledger: qty units or none, in a transaction with its ledger row (the
 * count it left read back under the row lock it holds). */
static int sell_ledger(struct lock_ctx *ctx, const struct product *prod, long long *remaining)
{
    static const char sql[] =
        "UPDATE db_stock SET count = count - ? WHERE id = ? AND count >= ?";
    const long long n = ctx->qty;
    long long rows = 0, left = 0;
    int rc;

    ctx->backend_ops++;
    if ((rc = db_begin(ctx)) != LL_OK)
        return rc;
    rc = db_exec(ctx, sql, &rows, "lll", n, prod->id, n);
    if (rc == LL_OK && rows == 1)
        rc = stock_read(ctx, prod, &left);
    if (rc != LL_OK) {
        db_rollback(ctx);
        return rc;
    }
    if (rows == 0) {
        rc = db_commit(ctx);
        return rc == LL_OK ? LL_SOLD_OUT : rc;
    }
    if ((rc = stock_ledger_commit(ctx, prod, left + n, left, 0, 0)) == LL_OK)
        *remaining = left;
    return rc;
}

/* The seeds' statement (seed 001): one unit. */
const char mysql_sql_sell_one[] =
    "UPDATE db_stock SET count = count - 1 WHERE id = ? AND count >= 1";

/* One unit, mysql_sql_sell_one; a purchase of qty units (POST /order) sells them
 * all or none, seed 003's statement. */
int mysql_sell_one(struct lock_ctx *ctx, const struct product *prod, long long *remaining)
{
    long long rows = 0;
    int rc;

    *remaining = -1;
    if (ctx->cfg->ledger)
        return sell_ledger(ctx, prod, remaining);
    if (ctx->qty > 1)
        return sell_n(ctx, prod->id, ctx->qty);
    ctx->backend_ops++;
    rc = db_exec(ctx, mysql_sql_sell_one, &rows, "!l", prod->id);
    return rc != LL_OK ? rc : rows == 1 ? LL_OK : LL_SOLD_OUT;
}

/* n units or none. */
static int sell_n(struct lock_ctx *ctx, long long id, long long n)
{
    static const char sql[] =
        "UPDATE db_stock SET count = count - ? WHERE id = ? AND count >= ?";
    long long rows = 0;
    int rc;

    ctx->backend_ops++;
    rc = db_exec(ctx, sql, &rows, "!lll", n, id, n);

    return rc != LL_OK ? rc : rows == 1 ? LL_OK : LL_SOLD_OUT;
}

/* A pipelined batch: mysql_sql_sell_one n times in one round trip, an answer
 * each; a failed exchange is every purchase's answer. */
static void run_pipeline(struct purchase **batch, int n, int *status)
{
    struct lock_ctx *ctx = batch[0]->ctx;
    long long rows[MYSQL_QUEUE_MAX], id = batch[0]->prod->id;
    int st[MYSQL_QUEUE_MAX], i, rc;

    ctx->backend_ops++;
    rc = db_exec_repeat(ctx, mysql_sql_sell_one, &id, 1, n, rows, st);
    for (i = 0; i < n; i++)
        status[i] = rc != LL_OK ? rc : st[i] != LL_OK ? st[i] : rows[i] == 1 ? LL_OK : LL_SOLD_OUT;
}

/* The leader's work, without q->lock: an answer for each of batch[0..n). */
static void run_batch(struct purchase **batch, int n, int pipeline, int *status)
{
    struct purchase *me = batch[0];
    int i, rc;

    if (n == 1) {
        status[0] = me->sell(me->ctx, me->prod, &me->remaining);
        return;
    }
    if (pipeline) {
        run_pipeline(batch, n, status);
        return;
    }
    rc = sell_n(me->ctx, me->prod->id, n);
    for (i = 0; i < n; i++)
        status[i] = rc;
    if (rc != LL_SOLD_OUT)
        return;
    for (i = 0; i < n; i++) {               /* fewer than n left: one by one */
        status[i] = me->sell(me->ctx, me->prod, &batch[i]->remaining);
        if (status[i] != LL_OK)
            break;
    }
    for (i++; i < n; i++)
        status[i] = status[i - 1];
}

/* Lead one batch, entered with q->lock held, left without it. The answers
 * and the next leader's turn are set under q->lock, the wake-ups sent once
 * it is free: each goes to a slot's condition (struct mysql_slot), which
 * outlives the request, so signalling a purchase that has already read its
 * answer and gone is harmless, and no woken thread blocks again on the
 * leader's mutex. */
static void lead(struct queue *q, struct purchase *me, int max, int pipeline)
{
    struct purchase *batch[MYSQL_QUEUE_MAX];
    struct wait_cond *wake[MYSQL_QUEUE_MAX + 1];
    int status[MYSQL_QUEUE_MAX];
    int i, n, nwake = 0;

    q->busy = 1;
    n = take_batch(q, me, batch, max);
    pthread_mutex_unlock(&q->lock);
    run_batch(batch, n, pipeline, status);
    pthread_mutex_lock(&q->lock);
    for (i = 0; i < n; i++) {
        batch[i]->status = status[i];
        if (batch[i] == me)
            continue;
        if (status[i] != LL_OK && status[i] != LL_SOLD_OUT) {
            lock_error(batch[i]->ctx, status[i], me->ctx->backend, "%s", me->ctx->errstr);
            batch[i]->ctx->cert_failed = me->ctx->cert_failed;  /* may run again */
        }
        wake[nwake++] = &batch[i]->slot->wake;
    }
    if (!me->passed) {                      /* else the row is the next's */
        q->busy = 0;
        if (q->head)                        /* the next in line leads */
            wake[nwake++] = &q->head->slot->wake;
    }
    pthread_mutex_unlock(&q->lock);
    for (i = 0; i < nwake; i++)
        wait_cond_signal(wake[i]);
}

struct purchase *mysql_queue_claim(struct lock_ctx *ctx)
{
    struct purchase *me = ctx->mysql ? ctx->mysql->queued : NULL, *p;
    struct queue *q;

    if (me == NULL)
        return NULL;
    q = queue_of(me->prod);
    pthread_mutex_lock(&q->lock);
    for (p = q->head; p; p = p->next)
        if (p->prod->id == me->prod->id && p->sell == me->sell)
            break;
    if (p) {
        unlink_purchase(q, p);
        p->taken = 1;                       /* its deadline no longer counts */
    }
    pthread_mutex_unlock(&q->lock);
    return p;
}

void mysql_queue_leave_row(const struct product *prod, const long long row[2])
{
    struct queue *q = queue_of(prod);

    pthread_mutex_lock(&q->lock);
    if (q->head != NULL) {                  /* only for one already in line */
        q->row_id = prod->id;
        q->row[0] = row[0];
        q->row[1] = row[1];
        q->row_us = now_us();
    }
    pthread_mutex_unlock(&q->lock);
}

int mysql_queue_take_row(const struct product *prod, long long row[2])
{
    struct queue *q = queue_of(prod);
    int fresh;

    pthread_mutex_lock(&q->lock);
    fresh = q->row_us != 0 && q->row_id == prod->id && now_us() - q->row_us <= ROW_FRESH_US;
    if (fresh) {
        row[0] = q->row[0];
        row[1] = q->row[1];
    }
    q->row_us = 0;                          /* taken once, fresh or not */
    pthread_mutex_unlock(&q->lock);
    return fresh;
}

void mysql_queue_pass(struct lock_ctx *ctx, struct purchase *next, int began)
{
    struct purchase *me = ctx->mysql->queued;
    struct queue *q = queue_of(me->prod);
    struct db *db;

    pthread_mutex_lock(&q->lock);
    if (began) {                            /* my connection is its now */
        db = ctx->db;
        ctx->db = next->ctx->db;
        next->ctx->db = db;
        next->lead = 1;
        me->passed = 1;
    } else {                                /* first in line again */
        next->taken = 0;
        next->next = q->head;
        q->head = next;
        if (q->tail == NULL)
            q->tail = next;
    }
    pthread_mutex_unlock(&q->lock);
    if (began)
        wait_cond_signal(&next->slot->wake);
}

int mysql_queue_sell(struct lock_ctx *ctx, const struct product *prod, long long *remaining)
{
    const struct mysql_queue_conf *conf = ctx->ops->conf;
    int max = conf->batch < MYSQL_QUEUE_MAX ? conf->batch : MYSQL_QUEUE_MAX;

    if (ctx->cfg->ledger)           /* a ledger row a sale: one sale a statement */
        max = 1;
    struct queue *q = queue_of(prod);
    struct mysql_slot *slot = slot_of(ctx);
    struct purchase me = { .ctx = ctx, .slot = slot, .prod = prod, .sell = conf->sell,
                           .remaining = -1, .status = PENDING };

    pthread_once(&queues_once, queues_init);
    pthread_mutex_lock(&q->lock);
    if (q->tail)
        q->tail->next = &me;
    else
        q->head = &me;
    q->tail = &me;
    slot->queued = &me;
    while (me.status == PENDING) {
        if (me.lead || (!me.taken && !q->busy && q->head == &me)) {
            lead(q, &me, max, conf->pipeline);  /* answers me, frees q->lock */
            slot->queued = NULL;
            *remaining = me.remaining;
            return me.status;
        } else if (me.taken) {              /* answered soon, deadline or not */
            wait_cond_wait(&slot->wake, &q->lock, WAIT_FOREVER);
        } else if (!wait_cond_wait(&slot->wake, &q->lock, ctx->deadline_ms * 1000) &&
                 me.status == PENDING && !me.taken) {
            unlink_purchase(q, &me);        /* still in line: give up */
            me.status = lock_error(ctx, LL_TIMEOUT, NULL,
                                   "not at the row within %d ms", ctx->wait_ms);
            if (!q->busy && q->head)
                wait_cond_signal(&q->head->slot->wake);
        }
    }
    pthread_mutex_unlock(&q->lock);
    slot->queued = NULL;
    *remaining = me.remaining;
    return me.status;
}

/* The MySQL family: a slot keeps its row queue's state (ctx->mysql). */
const struct lock_family lock_family_mysql = {
    .name     = "mysql",
    .ctx_free = mysql_queue_ctx_free,
};
