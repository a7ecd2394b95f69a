/* ledger.h — the checker that trusts nobody: what a sales ledger and the
 * final stock say about a run, whatever the strategies claimed.
 *
 * With --ledger, every sale an instance makes writes one row of db_ledger
 * in the same transaction as its stock write (sql/schema.sql, store/stock.c):
 * which product, which instance and slot, which strategy, the fencing
 * token if it had one, the count it read and the count it wrote, and its
 * critical section on CLOCK_MONOTONIC (the instances share one machine, so
 * one clock): from the moment it held its lock to the moment its write was
 * in place (its answer back; the row stays locked until the COMMIT, so a
 * holder paused between the two overlaps a rival only in fact, not in the
 * ledger: its lost update is still found, by the counts).
 * POST /stock/reset starts a product's ledger afresh with one "reset" row
 * whose count written is the initial stock. Rows are numbered in commit
 * order: the stock row's lock orders the transactions that write it.
 *
 * ledger_check() reads only those rows and the final stock, and finds:
 *   lost      a sale whose read is not what the sale before it wrote: it
 *             wrote over a sale it never saw (a lost update);
 *   overlap   two sales whose critical sections overlap in time: two
 *             holders of one lock at once (sales without a critical
 *             section of their own, a single conditional UPDATE, have
 *             none to overlap);
 *   token     a fenced sale whose token is not above the last fenced
 *             sale's of the same lock service: a stale holder's write got
 *             through the fence;
 *   empty     a sale from a count of 0 or less: oversold;
 *   final     a final stock that is not the initial stock less the units
 *             the ledger sold (a lost update shows here too, as sales that
 *             took more than the stock lost), or not the last count written.
 * For each it writes a sentence a student can follow, naming both sales.
 */
#ifndef LOCKLAB_LEDGER_H
#define LOCKLAB_LEDGER_H

#include <stddef.h>
#include <stdio.h>

#define LEDGER_NAME 64

struct ledger_row {
    long long id;                   /* commit order                          */
    char      instance[LEDGER_NAME];
    int       slot;
    char      strategy[LEDGER_NAME]; /* "reset" for the row that starts it   */
    char      token_src[16];        /* "" when unfenced; else redis, zk, mysql */
    long long token;
    long long count_read, count_written;
    long long cs_start_us, cs_end_us;   /* 0, 0: no critical section of its own */
};

struct ledger_report {
    long long sales, units, initial, final;
    int       lost, overlap, token, empty, final_bad;
};

/* Check rows[0..n) of one product, in id order (sorted here if not), with
 * the stock found at the end. initial < 0: take it from the first row,
 * which must then be a "reset" row. Sentences go to out (may be NULL), one
 * a line. Returns the number of anomalies. */
int ledger_check(struct ledger_row *rows, size_t n, long long initial, long long final,
                 FILE *out, struct ledger_report *r);

/* Parse one line of a ledger file (the tab-separated columns of
 * ledger_row in its order, "-" for no token source): 0, or -1. */
int ledger_parse(const char *line, struct ledger_row *row);

#endif /* LOCKLAB_LEDGER_H */
