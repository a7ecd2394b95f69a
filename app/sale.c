/* sale.c — the sale: the seeds' checkAndLock() around any lock strategy.
 *
 *     acquire × reentry                 (strategy)
 *     SELECT count FROM db_stock …      (autocommit, as MyBatis selectById)
 *     if count > 0:
 *         UPDATE db_stock SET count = <count read − 1> …   (updateById)
 *     release × reentry                 (strategy, on every path)
 *
 * The UPDATE writes the absolute value read (store/stock.c says why).
 * Strategies with a `sell` hook replace this whole function (mysql-update's
 * single statement …).
 *
 * Just before the write, the holder makes sure of what it holds: the
 * strategy's check hook (still ours?), then the lease (ctx->lease_until_us:
 * the last moment its lease is sure to run, from the acquire or the last
 * renewal confirmed; a lock whose lease may have ended is not written
 * under, LL_LOST). A check cannot close the window between itself and the
 * write — a holder paused right there writes late all the same — so with
 * ?fence=1 the write carries the hold's fencing token (store/stock.c), and
 * when an older holder's write landed between our read and our write the
 * sale reads and writes again under its token, at most STOCK_FENCED_TRIES
 * times, checks and all. The fault ?check_pause_ms pauses between the
 * check and the lease's judgement: a holder whose check's answer came back
 * late, which the lease (from when the check was sent) must refuse.
 */
#include "sale.h"
#include "stats.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../locks/lock.h"
#include "../store/stock.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the sale */

/* A fault's pause (late_ms, check_pause_ms), counted in GET /stats "late"
 * while it lasts, so a test can wait until a purchase is in it. */
static void fault_pause(int ms)
{
    stats_late(1);
    sleep_us((int64_t)ms * 1000);
    stats_late(-1);
}

static int sell_guarded(struct lock_ctx *ctx, const struct product *p, const char *key,
                        long long *remaining)
{
    long long count;
    int rc, tries = 0;

again:
    rc = stock_read(ctx, p, &count);
    if (rc != LL_OK)
        return rc;
    if (count < ctx->qty)           /* qty units or none (seed 003) */
        return LL_SOLD_OUT;
    if (tries == 0 && ctx->hold_ms > 0) {   /* the window between read and write, stretched */
        stats_holding(1);
        stock_hold(ctx);
        stats_holding(-1);
    }
    if ((rc = lock_check(ctx, key)) != LL_OK)
        return rc;
    if (ctx->check_pause_ms > 0 && tries == 0)  /* fault: the check's answer came late */
        fault_pause(ctx->check_pause_ms);
    if (ctx->lease_until_us && now_us() >= ctx->lease_until_us)
        return lock_error(ctx, LL_LOST, NULL, "the lease on %s may have run out %lld ms "
                          "ago: sale not written", key,
                          (long long)(now_us() - ctx->lease_until_us) / 1000);
    if (ctx->late_ms > 0 && tries == 0)     /* fault: a pause no check can see */
        fault_pause(ctx->late_ms);
    rc = stock_write_guarded(ctx, p, count);
    if (rc == STOCK_MOVED) {        /* an older holder's write landed after our read */
        ctx->retries++;
        if (++tries < STOCK_FENCED_TRIES)
            goto again;
        return lock_error(ctx, LL_FENCED, NULL, "%s token %lld is the newest, but older "
                          "holders' writes changed the count %d times between its read and "
                          "its write: nothing written", ctx->token_src, ctx->token, tries);
    }
    if (rc == LL_OK)
        *remaining = count - ctx->qty;
    return rc;
}

static int sale_once(struct lock_ctx *ctx, const struct lock_ops *ops,
                     const struct product *p, int reentry, long long *remaining)
{
    int held = 0, rc = LL_OK, rrc, why_saved = 0;
    struct { int err; const char *backend; char errstr[sizeof ctx->errstr]; } why;
    const char *key = lock_key_for(ops, p->key);
    int64_t got = 0;

    ctx->ops = ops;
    ctx->strategy = ops->name;
    if (lock_sells(ops))
        return lock_sell(ctx, p, remaining);
    while (held < reentry && rc == LL_OK) {
        rc = lock_acquire(ctx, key);
        if (rc == LL_OK && held++ == 0)
            ctx->held_since_us = got = now_us();
    }
    if (rc == LL_OK) {
        if (ctx->crash) {       /* fault: the holder dies holding the lock */
            fprintf(stderr, "locklab: crash requested while holding %s (%s)\n",
                    key, ops->name);
            _exit(3);
        }
        rc = sell_guarded(ctx, p, key, remaining);
    }
    /* Release on every path, innermost first. A failed release after a
     * sale does not undo the sale: it stays on ctx->err, which the HTTP
     * layer reports as a warning on the 200 answer. After a failure, the
     * failure is the answer, whatever the release says. */
    if (rc == LL_OK || rc == LL_SOLD_OUT)
        ctx->err = 0;
    else
        why.err = ctx->err, why.backend = ctx->backend, why_saved = 1,
        memcpy(why.errstr, ctx->errstr, sizeof why.errstr);
    if (held > 0) {
        while (held > 0) {
            rrc = lock_release(ctx, key);
            held--;
            if (rrc != LL_OK && rc == LL_SOLD_OUT)
                rc = rrc;
        }
        ctx->held_us = now_us() - got;
    }
    if (why_saved)
        lock_error(ctx, why.err, why.backend, "%s", why.errstr);
    return rc;
}

/* On Galera a transaction can fail at its COMMIT (or be aborted before
 * it) when a transaction of another node on the same row was certified
 * first: error 1213, everything rolled back, nothing sold, whatever lock
 * the sale held released (sale_once releases on every path). The sale
 * then runs again, from the acquire, after a jittered pause
 * (lock_backoff), until its deadline: a certification failure costs time,
 * never a lost update. Only those failures (ctx->cert_failed, set by
 * clients/db.c on a Galera node) are retried, never a single server's
 * deadlock or a lock wait timeout, whose answer stays lock_timeout. */
int sale_run(struct lock_ctx *ctx, const struct lock_ops *ops,
             const struct product *p, int reentry, long long *remaining)
{
    int rc;

    for (;;) {
        ctx->cert_failed = 0;
        rc = sale_once(ctx, ops, p, reentry, remaining);
        if (rc != LL_TIMEOUT || !ctx->cert_failed || lock_time_left(ctx) <= 0)
            return rc;
        if (lock_backoff(ctx) != LL_OK)
            return rc;
    }
}
