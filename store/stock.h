/* stock.h — the stock table: products and their counts in db_stock.
 *
 * A product's row is found by its code in warehouse STOCK_WAREHOUSE
 * ("001"), as in the seeds. The sale that uses these is app/sale.h.
 */
#ifndef LOCKLAB_STOCK_H
#define LOCKLAB_STOCK_H

#include <stdint.h>

struct lock_ctx;

#define STOCK_WAREHOUSE "001"
#define STOCK_CODE_MAX  32
#define STOCK_DEFAULT   "1001"      /* the seeds' product: ?product='s default */

struct product {
    long long id;                     /* db_stock.id                     */
    char      code[STOCK_CODE_MAX + 1];
    char      key[STOCK_CODE_MAX + 8]; /* the lock's name: "lock:<code>"  */
};

/* Is `code` a well-formed product code ([A-Za-z0-9_-], 1..32)? */
int stock_code_valid(const char *code);

/* Find the product; LL_BADREQ when no such row. */
int stock_find(struct lock_ctx *ctx, const char *code, struct product *p);

/* The products found so far (at most max, in the order they were first
 * found), copied into out: what GET /metrics reports the stock of. */
int stock_products(struct product *out, int max);

/* The guarded strategies' two statements, exported for the strategies that
 * replace the sale but keep its shape; stock_read() also answers GET /stock. */
int stock_read(struct lock_ctx *ctx, const struct product *p, long long *count);
/* Their statements, as sent (ll-limits sends them too: bench/limits/). */
extern const char stock_sql_read[], stock_sql_write[];
/* The absolute write, unfenced (the guarded sale fences its own, stock.c).
 * A statement that sells ('!'). */
int stock_write(struct lock_ctx *ctx, const struct product *p, long long count);
/* The sale's db_ledger row (--ledger; inside the transaction of its write):
 * the count read and written, the critical section [cs_start, cs_end] on
 * CLOCK_MONOTONIC (0, 0: none of its own), the token when fenced. */
int stock_ledger(struct lock_ctx *ctx, const struct product *p, long long read,
                 long long written, int64_t cs_start_us, int64_t cs_end_us);
/* stock_ledger(), then the COMMIT that sells, in the transaction the caller
 * began and wrote in; a failure rolls it back. */
int stock_ledger_commit(struct lock_ctx *ctx, const struct product *p, long long read,
                        long long written, int64_t cs_start_us, int64_t cs_end_us);
/* stock_write() and COMMIT in one round trip, ending the transaction. */
int stock_write_commit(struct lock_ctx *ctx, const struct product *p, long long count);
/* stock_write_commit(), and behind it, in the same round trip, `next_sql`
 * (a query of p's id) opening the next transaction (db_exec_commit_next()). */
int stock_write_commit_next(struct lock_ctx *ctx, const struct product *p, long long count,
                            const char *next_sql, int *next_sent);

/* The guarded sale's write of read − ctx->qty, fenced (ctx->fence) or not:
 * alone (autocommit), or with --ledger in one transaction with its ledger
 * row. LL_OK, LL_FENCED, STOCK_MOVED (our token is still the newest, but
 * the count moved since `read`: read again, at most STOCK_FENCED_TRIES
 * times), or a failure. */
#define STOCK_FENCED_TRIES 3
#define STOCK_MOVED (-1)
int stock_write_guarded(struct lock_ctx *ctx, const struct product *p, long long read);

/* POST /stock/reset: the count, and the version back to 0. */
int stock_set(struct lock_ctx *ctx, const struct product *p, long long count);

/* Sleep ctx->hold_ms inside the critical section (fault injection). */
void stock_hold(struct lock_ctx *ctx);

#endif /* LOCKLAB_STOCK_H */
