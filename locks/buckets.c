/* buckets.c — a hot product split in K buckets: the pass of the bucket
 * strategies (mysql-buckets, redis-buckets) over them (buckets.h).
 *
 * One hot row, or one Redis key, sells one unit at a time: every purchase
 * of the product waits for the one before it. Split the stock in K
 * buckets and K purchases can sell at once. A purchase starts at a bucket
 * that moves on with each purchase of its instance (round robin, from a
 * start of its own per process, so that instances do not march in step),
 * takes one unit there with the bucket's own atomic step (mysql-update's
 * conditional UPDATE, redis-decr's script), and moves to the next bucket
 * when that one is empty.
 *
 * Sold out, exactly. During a run the stock never increases: a bucket
 * found empty stays empty (only POST /stock/reset refills, and a reset
 * overwrites every count anyway). So when one pass has found each of the
 * K buckets empty, at the end of the pass all K are empty at once: the
 * product is sold out, and the answer is not a false sold-out, however
 * many purchases ran beside it. What remains is to be sure the pass saw
 * every bucket: an instance's K may be up to BUCKETS_FRESH_MS old (a
 * reset on another instance), so before answering sold out the pass reads
 * K again; a row's id never changes (store/buckets.c), so the same K is
 * the same buckets, and a different K means another pass over the new
 * ones.
 *
 * The reset and the reading of the buckets are the store's
 * (store/buckets.c).
 */
#include "buckets.h"
#include "lock.h"
#include "../core/util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/* ---------------------------------------------------------------- the sale */

static atomic_uint next_start;
static atomic_int  started;

int buckets_sell(struct lock_ctx *ctx, const struct product *p, bucket_sell_fn sell,
                 long long *remaining)
{
    struct stock_buckets sb;
    long long left;
    unsigned start;
    int i, j, k, pass, rc;

    *remaining = -1;
    if (ctx->order != NULL || ctx->qty != 1)
        return lock_error(ctx, LL_BADREQ, NULL, "%s sells one unit a purchase of GET "
                          "/check/lock: an order of several units could find every bucket "
                          "short of them while the product has enough", ctx->ops->name);
    if (!atomic_exchange(&started, 1))
        atomic_store(&next_start, (unsigned)getpid() * 2654435761u);
    if ((rc = stock_buckets_get(ctx, p, &sb, BUCKETS_FRESH_MS)) != LL_OK)
        return rc;
    start = atomic_fetch_add(&next_start, 1);
    for (pass = 0; pass < BUCKETS_PASSES; pass++) {
        for (j = 0; j < sb.k; j++) {
            i = (int)((start + (unsigned)j) % (unsigned)sb.k);
            if ((rc = sell(ctx, &sb.b[i], &left)) != LL_SOLD_OUT)
                return rc;                  /* sold, or a failure */
        }
        k = sb.k;                           /* all empty: still K buckets? */
        if ((rc = stock_buckets_get(ctx, p, &sb, 0)) != LL_OK)
            return rc;
        if (sb.k == k)
            return LL_SOLD_OUT;
    }
    return LL_SOLD_OUT;                     /* resets kept changing K */
}
