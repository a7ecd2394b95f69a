/* mysql_optimistic_recursive.c — the seeds' optimistic lock as written
 * (seed 000 §1.6.2): on a lost race checkAndLock() calls itself at once.
 *
 *     SELECT count, version …;  UPDATE … WHERE id = ? AND version = ?;
 *     0 rows → checkAndLock()          -- recursion, no pause
 *
 * Kept as a teaching strategy beside mysql-optimistic: every lost race
 * costs a stack frame and an immediate retry, so under contention the
 * losers hammer the hot row and the database serves retries instead of
 * sales (the seeds' own JMeter run shows it slower than FOR UPDATE). In
 * Java a deep enough pile-up ends in StackOverflowError; here the depth is
 * capped at RECURSION_MAX frames and the deadline, and running out answers
 * lock_timeout, so the server never dies of it.
 */
#include "lock.h"
#include "protocol.h"
#include "mysql_private.h"

#define RECURSION_MAX 2000

static int check_and_lock(struct lock_ctx *ctx, const struct product *p,
                          long long *remaining, int depth)
{
    int won, rc;

    if (depth >= RECURSION_MAX || lock_time_left(ctx) <= 0)
        return lock_error(ctx, LL_TIMEOUT, "mysql",
                          "gave up after %d recursive retries (Java would overflow its stack)", depth);
    rc = mysql_optimistic_attempt(ctx, p, remaining, &won);
    if (rc != LL_OK || won)
        return rc;
    ctx->retries++;
    return check_and_lock(ctx, p, remaining, depth + 1);
}

static int recursive_sell(struct lock_ctx *ctx, const struct product *p, long long *remaining)
{
    return check_and_lock(ctx, p, remaining, 0);
}

const struct lock_ops lock_mysql_optimistic_recursive = {
    .name    = "mysql-optimistic-recursive",
    .family  = "mysql",
    .summary = "the seeds' optimistic lock as written: on a lost race, recurse at once (seed 000 §1.6.2)",
    .flaw    = "no pause between retries and a stack frame per lost race: losers hammer the row",
    .props   = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .ceiling = LOCK_CEIL_OPTIMISTIC_RECURSIVE,
    .protocol = (const char *const[]){ mysql_sql_optimistic_read, mysql_sql_optimistic_write,
                                       NULL },
    .sell    = recursive_sell,
    .nofence = MYSQL_NOFENCE,
};
