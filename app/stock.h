/* stock.h — the sale and the stock table.
 *
 * stock_sell() is the seeds' StockService.checkAndLock(), with the lock
 * strategy as a parameter. The row is found by product code in warehouse
 * STOCK_WAREHOUSE ("001"), as in the seeds.
 */
#ifndef LOCKLAB_STOCK_H
#define LOCKLAB_STOCK_H

struct lock_ctx;
struct lock_ops;

#define STOCK_WAREHOUSE "001"
#define STOCK_CODE_MAX  32

struct product {
    long long id;                     /* db_stock.id                     */
    char      code[STOCK_CODE_MAX + 1];
    char      key[STOCK_CODE_MAX + 8]; /* the lock's name: "lock:<code>"  */
};

/* Is `code` a well-formed product code ([A-Za-z0-9_-], 1..32)? */
int stock_code_valid(const char *code);

/* Find the product; LL_BADREQ when no such row. */
int stock_find(struct lock_ctx *ctx, const char *code, struct product *p);

/* One purchase of one unit. `reentry` (1..LOCK_MAX_DEPTH) is how many
 * times the lock is taken, nested, as the seeds' reentrancy demo does.
 * On LL_OK *remaining is the count written. */
int stock_sell(struct lock_ctx *ctx, const struct lock_ops *ops,
               const struct product *p, int reentry, long long *remaining);

/* The guarded strategies' two statements, exported for the strategies that
 * replace the sale but keep its shape; stock_read() also answers GET /stock. */
int stock_read(struct lock_ctx *ctx, const struct product *p, long long *count);
int stock_write(struct lock_ctx *ctx, const struct product *p, long long count);
/* stock_write() and COMMIT in one round trip, ending the transaction. */
int stock_write_commit(struct lock_ctx *ctx, const struct product *p, long long count);
/* stock_write_commit(), and behind it, in the same round trip, `next_sql`
 * (a query of p's id) opening the next transaction (db_exec_commit_next()). */
int stock_write_commit_next(struct lock_ctx *ctx, const struct product *p, long long count,
                            const char *next_sql, int *next_sent);

/* POST /stock/reset: the count, and the version back to 0. */
int stock_set(struct lock_ctx *ctx, const struct product *p, long long count);

/* Sleep ctx->hold_ms inside the critical section (fault injection). */
void stock_hold(struct lock_ctx *ctx);

#endif /* LOCKLAB_STOCK_H */
