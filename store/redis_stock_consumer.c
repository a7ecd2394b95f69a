/* redis_stock_consumer.c — the consumer: every instance's background
 * worker that applies the Redis stock's sales to MariaDB, each entry once.
 *
 * It is a member of the consumer group "locklab" of every product's stream
 * {stock:P}:sales (the products are the set locklab:stocks), named by its
 * instance's uuid, fresh at every start. A loop:
 *
 *   XREADGROUP GROUP locklab <uuid> COUNT 512 BLOCK 100 STREAMS … > …
 *                        (on a Redis Cluster one XREADGROUP a stream,
 *                        not blocking, on its slot's master: each
 *                        stream has a hash tag, a slot, of its own)
 *   per product, one MariaDB transaction:
 *     SELECT epoch FROM db_redis_stock … FOR UPDATE   (orders it with the
 *                        other consumers and with POST /stock/reset)
 *     the batch before the read's last entry: does it reach its first?
 *     INSERT INTO db_redis_batch (first ID, last ID, entries, units, …)
 *     UPDATE db_stock, db_redis_stock SET count = count − units,
 *                                          applied = applied + units
 *     INSERT INTO db_order … (the entries that carry an order)
 *     COMMIT
 *   XACK {stock:P}:sales locklab <ids>
 *
 * Exactly once. A read of new entries (">") gets every entry of the
 * stream after the group's last delivered one, up to COUNT: the entries
 * from its first to its last ID, which no other read of new entries ever
 * gets. Applied, it is recorded as one row, its batch. An entry delivered
 * a second time is applied only if no batch holds it (one query: the batch
 * with the greatest first ID at or before it), and then as a batch of its
 * own; a read of new entries that some batch already reaches into (its
 * entries were claimed and applied one by one while it was slow) goes the
 * same way. db_redis_stock's row lock makes the look and the insert one
 * step. An entry is delivered again when a consumer dies between its
 * COMMIT and its XACK (?consumer_crash=1 makes it die exactly there): the
 * entries stay pending in the group under the dead consumer's name, and
 * every CONSUMER_SWEEP_MS each live consumer takes over, with XAUTOCLAIM,
 * what has been pending for CONSUMER_CLAIM_MS with anyone, and applies it
 * again: as duplicates, acknowledged and not applied. A transaction that
 * fails (MariaDB down) commits nothing and acknowledges nothing: the
 * entries stay pending with this consumer, which reads its own pending
 * entries again (XREADGROUP … 0) after CONSUMER_RETRY_MS. An entry of an
 * earlier epoch than MariaDB's (sold before a reset) is acknowledged and
 * dropped; one of a later epoch (a reset half done) is left pending.
 * MariaDB's cost is a few statements and one row per batch, whatever the
 * number of sales in it.
 *
 * The streams are those of every product in locklab:stocks, read again
 * each CONSUMER_SWEEP_MS: a product listed is added (its group made), one
 * no longer listed (a reset that gave up a bucket, redis_stock_unload())
 * dropped; there is no cap on their number, and one XREADGROUP names up
 * to CONSUMER_PAGE of them (the last one of a round blocks).
 *
 * Consumers of instances long gone, with nothing pending, are removed from
 * the group in the sweep. After a short read the loop pauses
 * CONSUMER_PAUSE_MS, so that under load a transaction applies many entries:
 * MariaDB's count trails Redis's by about that, plus a transaction.
 *
 * The worker is a task_background(): a coroutine on the instance's loop,
 * or a thread of its own where there is none. It waits only through the
 * wait layer (its MariaDB calls, its Redis commands, its pauses), and its
 * context is pinned to its own Redis connection (clients/redis.h): the
 * XREADGROUP … BLOCK holds the connection it is sent on for up to
 * CONSUMER_BLOCK_MS, which no request's command may queue behind.
 */
#include "redis_stock.h"
#include "../clients/redis.h"
#include "../clients/db.h"
#include "buckets.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONSUMER_COUNT     512      /* entries one read takes per stream      */
#define CONSUMER_BLOCK_MS  100      /* how long a read waits for an entry     */
#define CONSUMER_PAUSE_MS  50       /* after a short read: let entries gather */
#define CONSUMER_CLAIM_MS  2000     /* pending this long with anyone: claimed */
#define CONSUMER_SWEEP_MS  1000     /* how often claims are looked for        */
#define CONSUMER_RETRY_MS  200      /* after a failure                        */
#define CONSUMER_DEAD_MS   60000    /* idle consumers with nothing pending    */
#define CONSUMER_PAGE      256      /* streams one XREADGROUP names           */

struct entry {
    char      id[48];               /* "<ms>-<seq>"                        */
    long long ms, seq, epoch, qty, remaining;
    int       deleted;              /* trimmed from the stream: ack only   */
    char      order[ORDER_NO_MAX + 1], user[ORDER_NO_MAX + 1], lock[64];
};

struct stream {
    struct product p;
    struct rs_keys k;
};

static struct {
    int             running;
    atomic_int      stop, crash;
    pthread_mutex_t end_mu;         /* guards ended                         */
    int             ended;          /* the worker has returned              */
    struct wait_cond end;
    struct lock_ctx ctx;
    char            name[40];
    struct stream  *streams;        /* every product listed, in no order    */
    int             nstreams;
    int             dirty;          /* own pending entries to read again    */

    _Atomic long long applied, units, duplicates, stale, claimed, batches, errors;
    pthread_mutex_t err_lock;
    char            last_error[200];
} cons = { .err_lock = PTHREAD_MUTEX_INITIALIZER, .end_mu = PTHREAD_MUTEX_INITIALIZER,
            .end = WAIT_COND_INIT };

/* ---------------------------------------------------------------- errors */

static void consumer_failed(const char *what)
{
    static int64_t logged_ms;
    int64_t now = now_ms();

    atomic_fetch_add(&cons.errors, 1);
    pthread_mutex_lock(&cons.err_lock);
    snprintf(cons.last_error, sizeof cons.last_error, "%s: %s", what, cons.ctx.errstr);
    pthread_mutex_unlock(&cons.err_lock);
    if (now - logged_ms >= 1000) {      /* at most a line a second */
        logged_ms = now;
        fprintf(stderr, "locklab: %s: consumer: %s: %s\n", cons.ctx.cfg->name, what,
                cons.ctx.errstr);
    }
    cons.dirty = 1;
}

/* ---------------------------------------------------------------- entries */

static void field_str(const redisReply *v, char *out, size_t size)
{
    snprintf(out, size, "%s", v->type == REDIS_REPLY_STRING ? v->str : "");
}

/* One entry of a stream reply: [id, [field, value, …] or nil]. */
static int entry_parse(const redisReply *r, struct entry *e)
{
    const redisReply *f;
    size_t i;

    memset(e, 0, sizeof *e);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        sscanf(r->element[0]->str, "%lld-%lld", &e->ms, &e->seq) != 2)
        return -1;
    snprintf(e->id, sizeof e->id, "%s", r->element[0]->str);
    f = r->element[1];
    if (f->type != REDIS_REPLY_ARRAY) {
        e->deleted = 1;
        return 0;
    }
    for (i = 0; i + 1 < f->elements; i += 2) {
        const char *k = f->element[i]->type == REDIS_REPLY_STRING ? f->element[i]->str : "";
        const redisReply *v = f->element[i + 1];
        if (!strcmp(k, "epoch"))
            e->epoch = strtoll(v->str, NULL, 10);
        else if (!strcmp(k, "qty"))
            e->qty = strtoll(v->str, NULL, 10);
        else if (!strcmp(k, "remaining"))
            e->remaining = strtoll(v->str, NULL, 10);
        else if (!strcmp(k, "order"))
            field_str(v, e->order, sizeof e->order);
        else if (!strcmp(k, "user"))
            field_str(v, e->user, sizeof e->user);
        else if (!strcmp(k, "lock"))
            field_str(v, e->lock, sizeof e->lock);
    }
    return e->qty > 0 ? 0 : -1;
}

/* The entries of an array of entries; *n of them into a malloc'ed array. */
static struct entry *entries_parse(const redisReply *list, int *n)
{
    struct entry *e;
    size_t i;

    *n = 0;
    if (list->type != REDIS_REPLY_ARRAY || list->elements == 0)
        return NULL;
    e = xcalloc(list->elements, sizeof *e);
    for (i = 0; i < list->elements; i++)
        if (entry_parse(list->element[i], &e[*n]) == 0)
            (*n)++;
    return e;
}

/* ---------------------------------------------------------------- MariaDB */

/* The batch with the greatest first ID at or before (ms, seq): *found, and
 * its last ID. Batches never overlap, so it is the only one that can hold
 * (ms, seq), and the only one that can overlap a range ending there. */
static int batch_before(struct lock_ctx *ctx, const struct stream *s, long long epoch,
                        long long ms, long long seq, int *found, long long *last_ms,
                        long long *last_seq)
{
    static const char sql[] =
        "SELECT last_ms, last_seq FROM db_redis_batch WHERE stock_id = ? AND epoch = ? "
        "AND (first_ms < ? OR (first_ms = ? AND first_seq <= ?)) "
        "ORDER BY first_ms DESC, first_seq DESC LIMIT 1";
    long long rows = 0;
    int rc = db_exec(ctx, sql, &rows, "lllll>ll", s->p.id, epoch, ms, ms, seq, last_ms,
                     last_seq);

    *found = rc == LL_OK && rows == 1;
    return rc;
}

static int id_before(long long ams, long long aseq, long long bms, long long bseq)
{
    return ams < bms || (ams == bms && aseq < bseq);
}

static int batch_insert(struct lock_ctx *ctx, const struct stream *s, long long epoch,
                        const struct entry *first, const struct entry *last, long long entries,
                        long long units)
{
    static const char sql[] =
        "INSERT INTO db_redis_batch (stock_id, epoch, first_ms, first_seq, last_ms, last_seq, "
        "entries, units) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    const long long params[8] = {
        s->p.id, epoch, first->ms, first->seq, last->ms, last->seq, entries, units,
    };
    return db_exec_ints(ctx, sql, NULL, params, 8);
}

static int insert_orders(struct lock_ctx *ctx, const struct stream *s, struct entry **e, int n)
{
    static const char sql[] =
        "INSERT INTO db_order (order_no, stock_id, qty, user, strategy, state, remaining, "
        "instance) VALUES (?, ?, ?, NULLIF(?, ''), ?, 'sold', ?, ?) "
        "ON DUPLICATE KEY UPDATE id = id";
    int i, rc;

    for (i = 0; i < n; i++) {
        if (!e[i]->order[0])
            continue;
        rc = db_exec(ctx, sql, NULL, "sllssls", e[i]->order, s->p.id, e[i]->qty, e[i]->user,
                     e[i]->lock, e[i]->remaining, ctx->cfg->instance_id);
        if (rc != LL_OK)
            return rc;
    }
    return LL_OK;
}

/* The entries of cur[0..n) that no batch holds yet, each recorded as a
 * batch of its own; they go to cur[0..*fresh). */
static int apply_singles(struct lock_ctx *ctx, const struct stream *s, long long epoch,
                         struct entry **cur, int n, int *fresh, long long *units)
{
    long long last_ms, last_seq;
    int i, found, rc = LL_OK;

    *fresh = 0;
    for (i = 0; i < n && rc == LL_OK; i++) {
        struct entry *e = cur[i];
        rc = batch_before(ctx, s, epoch, e->ms, e->seq, &found, &last_ms, &last_seq);
        if (rc != LL_OK || (found && !id_before(last_ms, last_seq, e->ms, e->seq)))
            continue;                                   /* applied before: a duplicate */
        rc = batch_insert(ctx, s, epoch, e, e, 1, e->qty);
        *units += e->qty;
        cur[(*fresh)++] = e;
    }
    return rc;
}

/* Apply the entries e[0..n) of stream s in one transaction. `read_new`:
 * they are one XREADGROUP … > read, all the stream's entries from the
 * first to the last. On LL_OK, ack[0..*nack) may be acknowledged. */
static int apply_tx(struct lock_ctx *ctx, const struct stream *s, struct entry *e, int n,
                    int read_new, struct entry **ack, int *nack, int *fresh, long long *units)
{
    static const char sql_epoch[] =
        "SELECT epoch FROM db_redis_stock WHERE stock_id = ? FOR UPDATE";
    static const char sql_take[] =
        "UPDATE db_stock s, db_redis_stock r SET s.count = s.count - ?, "
        "r.applied = r.applied + ? WHERE s.id = ? AND r.stock_id = ?";
    struct entry **cur = xcalloc((size_t)n, sizeof *cur);
    long long epoch = 0, rows = 0, stale = 0, last_ms = 0, last_seq = 0;
    int i, ncur = 0, later = 0, found = 0, rc;

    *nack = *fresh = 0;
    *units = 0;
    if ((rc = db_begin(ctx)) == LL_OK)
        rc = db_exec(ctx, sql_epoch, &rows, "l>l", s->p.id, &epoch);
    for (i = 0; rc == LL_OK && i < n; i++) {
        if (e[i].deleted || e[i].epoch < epoch) {       /* gone, or sold before a reset */
            ack[(*nack)++] = &e[i];
            stale += !e[i].deleted;
        } else if (e[i].epoch == epoch) {
            cur[ncur++] = &e[i];
        } else {
            later++;                                    /* a reset half done: left pending */
        }
    }
    /* New entries, none of them held by a batch: one batch for all. */
    if (rc == LL_OK && read_new && !later && ncur > 0)
        rc = batch_before(ctx, s, epoch, e[n - 1].ms, e[n - 1].seq, &found, &last_ms, &last_seq);
    if (rc == LL_OK && read_new && !later && ncur > 0 &&
        (!found || id_before(last_ms, last_seq, e[0].ms, e[0].seq))) {
        for (i = 0; i < ncur; i++)
            *units += cur[i]->qty;
        *fresh = ncur;
        rc = batch_insert(ctx, s, epoch, &e[0], &e[n - 1], ncur, *units);
    } else if (rc == LL_OK) {
        rc = apply_singles(ctx, s, epoch, cur, ncur, fresh, units);
    }
    if (rc == LL_OK && *units > 0)
        rc = db_exec(ctx, sql_take, NULL, "llll", *units, *units, s->p.id, s->p.id);
    if (rc == LL_OK)
        rc = insert_orders(ctx, s, cur, *fresh);
    if (rc == LL_OK)
        rc = db_commit(ctx);
    else
        db_rollback(ctx);
    if (rc == LL_OK) {
        for (i = 0; i < n; i++)                         /* every current one, fresh or not */
            if (!e[i].deleted && e[i].epoch == epoch)
                ack[(*nack)++] = &e[i];
        atomic_fetch_add(&cons.stale, stale);
        atomic_fetch_add(&cons.duplicates, ncur - *fresh);
    } else {
        *nack = 0;
    }
    free(cur);
    return rc;
}

/* ---------------------------------------------------------------- Redis */

static void xack(struct lock_ctx *ctx, const struct stream *s, struct entry **ack, int n)
{
    const char **argv;
    redisReply *r;
    int i;

    if (n == 0)
        return;
    argv = xcalloc((size_t)n + 3, sizeof *argv);
    argv[0] = "XACK", argv[1] = s->k.sales, argv[2] = REDIS_STOCK_GROUP;
    for (i = 0; i < n; i++)
        argv[3 + i] = ack[i]->id;
    /* Unacknowledged (Redis down): claimed and applied again, as duplicates. */
    if ((r = redis_cmd_argv(ctx, 0, n + 3, argv)) != NULL)
        freeReplyObject(r);
    free(argv);
}

/* Apply and acknowledge e[0..n) of stream s (read_new: see apply_tx()). */
static void apply(const struct stream *s, struct entry *e, int n, int read_new)
{
    struct lock_ctx *ctx = &cons.ctx;
    struct entry **ack;
    long long units;
    int nack, fresh, rc;

    if (n == 0)
        return;
    ack = xcalloc((size_t)n, sizeof *ack);
    rc = apply_tx(ctx, s, e, n, read_new, ack, &nack, &fresh, &units);
    if (rc != LL_OK) {
        consumer_failed("apply");
        free(ack);
        return;
    }
    atomic_fetch_add(&cons.batches, 1);
    atomic_fetch_add(&cons.applied, fresh);
    atomic_fetch_add(&cons.units, units);
    if (fresh > 0 && atomic_load(&cons.crash)) {    /* fault: applied, not acknowledged */
        fprintf(stderr, "locklab: %s: consumer crash requested: %d entries of %s applied, "
                "not acknowledged\n", ctx->cfg->name, fresh, s->k.sales);
        _exit(3);
    }
    xack(ctx, s, ack, nack);
    free(ack);
}

/* A reply of XREADGROUP: [[key, entries], …], each key one of ours. */
static void apply_read(const redisReply *r, int read_new)
{
    struct entry *e;
    size_t i;
    int k, n;

    if (r->type != REDIS_REPLY_ARRAY)
        return;                                         /* nil: nothing came */
    for (i = 0; i < r->elements; i++) {
        const redisReply *one = r->element[i];
        if (one->type != REDIS_REPLY_ARRAY || one->elements != 2 ||
            one->element[0]->type != REDIS_REPLY_STRING)
            continue;
        for (k = 0; k < cons.nstreams; k++)
            if (!strcmp(cons.streams[k].k.sales, one->element[0]->str))
                break;
        if (k == cons.nstreams)
            continue;
        e = entries_parse(one->element[1], &n);
        /* A new read is the stream's entries from first to last only if
         * every one of them parsed. */
        apply(&cons.streams[k], e, n, read_new && (size_t)n == one->element[1]->elements);
        free(e);
    }
}

/* A stream's group, made if missing (BUSYGROUP: it exists). */
static void ensure_group(const struct stream *s)
{
    redisReply *r = redis_cmd(&cons.ctx, 0, "XGROUP CREATE %s %s 0 MKSTREAM", s->k.sales,
                              REDIS_STOCK_GROUP);
    if (r)
        freeReplyObject(r);
}

static void ensure_groups(void)
{
    int i;

    for (i = 0; i < cons.nstreams; i++)
        ensure_group(&cons.streams[i]);
}

/* The stream of product `code` in list[0..n), or NULL. */
static const struct stream *stream_named(const struct stream *list, int n, const char *code)
{
    int i;

    for (i = 0; i < n; i++)
        if (!strcmp(list[i].p.code, code))
            return &list[i];
    return NULL;
}

/* The products loaded into Redis (locklab:stocks), found in MariaDB: the
 * list becomes the set's members, the ones new to it with their groups
 * made. */
static void refresh_streams(void)
{
    struct lock_ctx *ctx = &cons.ctx;
    redisReply *r = redis_cmd(ctx, 0, "SMEMBERS %s", REDIS_STOCK_SET);
    struct stream *next;
    const struct stream *old;
    int n = 0, known, i;
    size_t m;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        consumer_failed("SMEMBERS");
        return;
    }
    next = xcalloc(r->elements + 1, sizeof *next);
    for (m = 0; m < r->elements; m++) {
        const char *code = r->element[m]->str;
        if ((old = stream_named(cons.streams, cons.nstreams, code)) != NULL) {
            next[n++] = *old;
            continue;
        }
        if ((stock_bucket_named(code) ? stock_bucket_find(ctx, code, &next[n].p)
                                      : stock_find(ctx, code, &next[n].p)) != LL_OK)
            continue;                   /* not a product of this database */
        rs_keys(&next[n].k, code, NULL);
        n++;
    }
    freeReplyObject(r);
    old = cons.streams;
    known = cons.nstreams;
    cons.streams = next;
    cons.nstreams = n;
    for (i = 0; i < n; i++)
        if (stream_named(old, known, next[i].p.code) == NULL)
            ensure_group(&next[i]);
    free((void *)old);
}

/* XREADGROUP over streams [first, first + n), from `from` (">" new
 * entries, "0" our own pending ones); a failure is recorded (and marks
 * our pending entries to be read again). */
static void read_some(int first, int n, const char *from, int block_ms)
{
    struct lock_ctx *ctx = &cons.ctx;
    /* XREADGROUP GROUP g c COUNT n [BLOCK ms] STREAMS: 9 words, then n
     * keys and n ids. */
    const char **argv = xcalloc(9 + 2 * (size_t)n, sizeof *argv);
    char count[16], block[16];
    redisReply *r;
    int i, argc = 0;

    snprintf(count, sizeof count, "%d", CONSUMER_COUNT);
    snprintf(block, sizeof block, "%d", block_ms);
    argv[argc++] = "XREADGROUP", argv[argc++] = "GROUP", argv[argc++] = REDIS_STOCK_GROUP;
    argv[argc++] = cons.name, argv[argc++] = "COUNT", argv[argc++] = count;
    if (block_ms > 0)
        argv[argc++] = "BLOCK", argv[argc++] = block;
    argv[argc++] = "STREAMS";
    for (i = first; i < first + n; i++)
        argv[argc++] = cons.streams[i].k.sales;
    for (i = first; i < first + n; i++)
        argv[argc++] = from;
    r = redis_cmd_argv(ctx, 0, argc, argv);     /* its own connection */
    free(argv);
    if (r == NULL) {
        consumer_failed("XREADGROUP");
        return;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        /* NOGROUP: a stream lost (a restart), or one that a reset gave up
         * since the list was read: the list again, then the groups of
         * what is still listed. */
        lock_error(ctx, LL_ERROR, "redis", "%s", r->str);
        freeReplyObject(r);
        consumer_failed("XREADGROUP");
        refresh_streams();
        ensure_groups();
        return;
    }
    apply_read(r, !strcmp(from, ">"));
    freeReplyObject(r);
}

/* Every stream, from `from`. On one server one XREADGROUP reads
 * CONSUMER_PAGE of them, the last of the round waiting up to block_ms for
 * an entry. On a cluster each stream is on its own slot (its own hash
 * tag), and one command may not name two slots: one XREADGROUP a stream,
 * each to its slot's master, none blocking (a wait per empty stream would
 * add up; the loop's pause stands for it). */
static void read_streams(const char *from, int block_ms)
{
    int i, n;

    if (!strcmp(from, "0"))
        cons.dirty = 0;                 /* a failure sets it again */
    if (!redis_cluster_on(cons.ctx.cfg))
        for (i = 0; i < cons.nstreams; i += n) {
            n = cons.nstreams - i < CONSUMER_PAGE ? cons.nstreams - i : CONSUMER_PAGE;
            read_some(i, n, from, i + n == cons.nstreams ? block_ms : 0);
        }
    else
        for (i = 0; i < cons.nstreams; i++)
            read_some(i, 1, from, 0);
}

/* Take over what has been pending too long with anyone (a consumer that
 * died between its COMMIT and its XACK, or before it applied), and remove
 * consumers long gone. */
static void sweep(void)
{
    struct lock_ctx *ctx = &cons.ctx;
    char idle[16], count[16], cursor[48];
    struct entry *e;
    redisReply *r;
    int i, rounds, n;
    size_t k;

    snprintf(idle, sizeof idle, "%d", CONSUMER_CLAIM_MS);
    snprintf(count, sizeof count, "%d", CONSUMER_COUNT);
    for (i = 0; i < cons.nstreams; i++) {
        const struct stream *s = &cons.streams[i];
        snprintf(cursor, sizeof cursor, "0-0");
        for (rounds = 0; rounds < 16; rounds++) {
            r = redis_cmd(ctx, 0, "XAUTOCLAIM %s %s %s %s %s COUNT %s", s->k.sales,
                          REDIS_STOCK_GROUP, cons.name, idle, cursor, count);
            if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
                if (r)
                    freeReplyObject(r);
                break;
            }
            e = entries_parse(r->element[1], &n);
            atomic_fetch_add(&cons.claimed, n);
            apply(s, e, n, 0);
            free(e);
            snprintf(cursor, sizeof cursor, "%s",
                     r->element[0]->type == REDIS_REPLY_STRING ? r->element[0]->str : "0-0");
            freeReplyObject(r);
            if (!strcmp(cursor, "0-0"))
                break;
        }
        r = redis_cmd(ctx, 0, "XINFO CONSUMERS %s %s", s->k.sales, REDIS_STOCK_GROUP);
        for (k = 0; r && r->type == REDIS_REPLY_ARRAY && k < r->elements; k++) {
            const redisReply *c = r->element[k];
            const char *name = NULL;
            long long pending = -1, idle_ms = -1;
            size_t f;
            for (f = 0; c->type == REDIS_REPLY_ARRAY && f + 1 < c->elements; f += 2) {
                const char *key = c->element[f]->str;
                if (!strcmp(key, "name"))
                    name = c->element[f + 1]->str;
                else if (!strcmp(key, "pending"))
                    pending = c->element[f + 1]->integer;
                else if (!strcmp(key, "idle"))
                    idle_ms = c->element[f + 1]->integer;
            }
            if (name && strcmp(name, cons.name) && pending == 0 && idle_ms > CONSUMER_DEAD_MS) {
                redisReply *d = redis_cmd(ctx, 0, "XGROUP DELCONSUMER %s %s %s", s->k.sales,
                                          REDIS_STOCK_GROUP, name);
                if (d)
                    freeReplyObject(d);
            }
        }
        if (r)
            freeReplyObject(r);
    }
}

/* ---------------------------------------------------------------- the worker */

static void consumer_main(void *arg)
{
    int64_t next_refresh = 0, next_sweep = 0, now;

    (void)arg;
    while (!atomic_load(&cons.stop)) {
        long long before = atomic_load(&cons.applied) + atomic_load(&cons.duplicates) +
                           atomic_load(&cons.stale);
        int errors = (int)atomic_load(&cons.errors);

        now = now_ms();
        if (now >= next_refresh) {
            refresh_streams();
            next_refresh = now + CONSUMER_SWEEP_MS;
        }
        if (cons.nstreams == 0) {
            sleep_us(CONSUMER_RETRY_MS * 1000);
            continue;
        }
        if (now >= next_sweep) {
            sweep();
            next_sweep = now + CONSUMER_SWEEP_MS;
        }
        if (cons.dirty)
            read_streams("0", 0);
        read_streams(">", CONSUMER_BLOCK_MS);
        if ((int)atomic_load(&cons.errors) != errors)
            sleep_us(CONSUMER_RETRY_MS * 1000);
        else if (atomic_load(&cons.applied) + atomic_load(&cons.duplicates) +
                 atomic_load(&cons.stale) - before < CONSUMER_COUNT)
            sleep_us(CONSUMER_PAUSE_MS * 1000);
    }
    pthread_mutex_lock(&cons.end_mu);
    cons.ended = 1;
    pthread_mutex_unlock(&cons.end_mu);
    wait_cond_broadcast(&cons.end);
}

void redis_stock_consumer_start(const struct config *cfg)
{
    cons.ctx.slot = -1;
    cons.ctx.cfg = cfg;
    cons.ctx.qty = 1;
    cons.ctx.db = db_new(cfg);
    redis_pin(&cons.ctx, 1);
    snprintf(cons.name, sizeof cons.name, "%s", cfg->instance_id);
    cons.running = 1;
    task_background("redis-consumer", consumer_main, NULL);
}

void redis_stock_consumer_stop(void)
{
    if (!cons.running)
        return;
    atomic_store(&cons.stop, 1);
    pthread_mutex_lock(&cons.end_mu);
    while (!cons.ended)
        wait_cond_wait(&cons.end, &cons.end_mu, WAIT_FOREVER);
    pthread_mutex_unlock(&cons.end_mu);
    cons.running = 0;
    redis_ctx_free(&cons.ctx);      /* its only connections but the db */
    free(cons.streams);
    cons.streams = NULL;
    cons.nstreams = 0;
    db_free(cons.ctx.db);
    cons.ctx.db = NULL;
}

void redis_stock_consumer_crash(void)
{
    atomic_store(&cons.crash, 1);
}

json_t *redis_stock_stats_json(void)
{
    json_t *o;

    pthread_mutex_lock(&cons.err_lock);
    o = json_pack("{s:s,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}",
                  "consumer", cons.name, "streams", cons.nstreams,
                  "applied", (json_int_t)atomic_load(&cons.applied),
                  "units", (json_int_t)atomic_load(&cons.units),
                  "duplicates", (json_int_t)atomic_load(&cons.duplicates),
                  "stale", (json_int_t)atomic_load(&cons.stale),
                  "claimed", (json_int_t)atomic_load(&cons.claimed),
                  "batches", (json_int_t)atomic_load(&cons.batches),
                  "errors", (json_int_t)atomic_load(&cons.errors),
                  "last_error", cons.last_error);
    pthread_mutex_unlock(&cons.err_lock);
    return o;
}

void redis_stock_stats_reset(void)
{
    atomic_store(&cons.applied, 0);
    atomic_store(&cons.units, 0);
    atomic_store(&cons.duplicates, 0);
    atomic_store(&cons.stale, 0);
    atomic_store(&cons.claimed, 0);
    atomic_store(&cons.batches, 0);
    atomic_store(&cons.errors, 0);
    pthread_mutex_lock(&cons.err_lock);
    cons.last_error[0] = '\0';
    pthread_mutex_unlock(&cons.err_lock);
}
