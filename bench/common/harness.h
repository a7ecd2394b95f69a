/* harness.h — the arithmetic of the comparison, apart from any I/O.
 *
 * bench/compare measures; ll-report (bench/report/) turns the measurements into
 * a table and reports with the functions below, and tests/test_harness.c
 * checks them. Nothing here allocates or prints.
 *
 * Definitions (the same as tests/lib.sh). With initial stock S, sold = the
 * number of 200 answers and final = the stock after the run:
 *     oversold     = max(0, sold − S)
 *     lost_updates = sold − (S − final)     units sold but never subtracted
 *     efficiency   = sold per second ÷ the ceiling of the strategy's path
 * The ceiling of a path is measured by ll-limits on the same servers with no
 * HTTP in between; each strategy says which one applies to it (struct
 * lock_ops's `ceiling`, one of the keys below, given by GET /locks).
 */
#ifndef LOCKLAB_HARNESS_H
#define LOCKLAB_HARNESS_H

#include "../../locks/lock.h"

#include <stddef.h>

/* ---------------------------------------------------------------- counts */

long long harness_oversold(long long stock, long long sold);
long long harness_lost(long long stock, long long sold, long long final_stock);

/* With u answers "unknown" (a sale sent to MariaDB whose answer was lost:
 * it may have been made), c of them sold for some 0 <= c <= u, and the
 * true figures are harness_*(stock, sold + c, …): between the values for
 * sold and for sold + u. The reports show that range. */

/* n per second over `seconds`; 0 when seconds <= 0. */
double harness_rate(long long n, double seconds);

/* rate ÷ ceiling, or -1 when there is no usable ceiling (<= 0). */
double harness_efficiency(double rate, double ceiling);

/* ---------------------------------------------------------------- cost */

/* Where the time goes: a run's CPU seconds (or context switches) spread
 * over its n requests, as microseconds (or switches) per request; -1 when
 * n <= 0 or the amount is negative (nothing measured). */
double harness_per_request_us(double cpu_s, long long n);
double harness_per_request(double count, long long n);

/* The machine's busy share over a run: busy ÷ (busy + idle), from the
 * CPU ticks of /proc/stat; -1 when nothing was measured. */
double harness_busy_share(double busy, double idle);

/* How long a purchase held its lock, on average (held_us ÷ holds), and
 * what share of the run's wall time some purchase held it (the instances'
 * held_us summed ÷ the run's seconds). An exclusive lock is never held by
 * two at once, so its share stays at or below 1 (a little above: each
 * hold is timed from the holder's side, its answers' delivery included);
 * the rest of the time the lock sat idle between holders. A share well
 * above 1 is purchases holding "the" lock at the same time: one that does
 * not exclude (mutex across instances). -1 when no purchase held it. */
double harness_hold_us(long long held_us, long long holds);
double harness_held_share(long long held_us, double seconds);

/* ---------------------------------------------------------------- ceilings */

/* The ceilings ll-limits measures, by the key it writes them under; a
 * strategy names one of them. The list, each one's method and definition
 * live in locks/lock.h (LOCK_CEILINGS), so GET /locks, ll-limits and the
 * reports say the same. */
#define CEIL_MYSQL_UPDATE   LOCK_CEIL_MYSQL_UPDATE
#define CEIL_UPDATE_PEAK    LOCK_CEIL_UPDATE_PEAK
#define CEIL_FOR_UPDATE     LOCK_CEIL_FOR_UPDATE
#define CEIL_SHARE_MODE     LOCK_CEIL_SHARE_MODE
#define CEIL_OPTIMISTIC     LOCK_CEIL_OPTIMISTIC
#define CEIL_OPTIMISTIC_RECURSIVE LOCK_CEIL_OPTIMISTIC_RECURSIVE
#define CEIL_UPDATE_NOINDEX LOCK_CEIL_UPDATE_NOINDEX
#define CEIL_SERIAL_MYSQL   LOCK_CEIL_SERIAL_MYSQL
#define CEIL_SERIAL_REDIS   LOCK_CEIL_SERIAL_REDIS
#define CEIL_SERIAL_ZK      LOCK_CEIL_SERIAL_ZK
#define CEIL_SERIAL_ETCD    LOCK_CEIL_SERIAL_ETCD
#define CEIL_REDIS_DECR     LOCK_CEIL_REDIS_DECR
#define CEIL_REDIS_WATCH    LOCK_CEIL_REDIS_WATCH
#define CEIL_SERIAL_REDIS_STOCK LOCK_CEIL_SERIAL_REDIS_STOCK
/* Not ll-limits': bench/compare measures the HTTP tier itself, GET /health
 * through the same front end over the same connections (raw/http.load.json). */
#define CEIL_HTTP           LOCK_CEIL_HTTP

/* A one-line definition of a ceiling key, and how it is measured
 * ("plateau", "hold", "concurrent", "front"); "" when unknown. */
const char *harness_ceiling_text(const char *key);
const char *harness_ceiling_method(const char *key);

/* A hold-derived ceiling: 1 ÷ the median of n holds (seconds), the most a
 * lock held that long lets through however fast it is handed over. Sorts
 * hold_s; 0 when n is 0 or the median is not above 0. */
double harness_hold_rate(double *hold_s, size_t n);

/* How far n trials of one ceiling spread: (max − min) ÷ max. 0 for one
 * trial, -1 for none (or none above 0). */
double harness_spread(const double *rate, size_t n);

/* A ceiling whose trials spread more than this is not one figure: the
 * reports give the efficiency as a range, from its slowest to its best. */
#define HARNESS_SPREAD_MAX 0.10

/* Does a strategy's steady rate stay under its ceiling? ABOVE: more than
 * the ceiling's own spread above it (the ceiling did not bound it); NEAR:
 * within HARNESS_NEAR of it, or above it by no more than the spread;
 * BELOW otherwise; NONE without a ceiling or a rate. */
#define HARNESS_NEAR 0.05
enum harness_bound { HARNESS_BOUND_NONE, HARNESS_BOUND_BELOW, HARNESS_BOUND_NEAR,
                     HARNESS_BOUND_ABOVE };
enum harness_bound harness_bound(double rate, double ceiling, double spread);
const char *harness_bound_name(enum harness_bound b);

/* A run's steady rate from its seconds: the sales of the whole seconds
 * from `skip` on (second i is whole when i + 1 <= elapsed_s: the last one,
 * cut short by the end of the run, is not), per second. The first second
 * of a load holds its ramp (connections opening, servers warming up), so a
 * caller skips it when whole seconds remain after it. -1 when no whole
 * second is left. */
double harness_steady_rate(const long long *sold, size_t n, double elapsed_s, size_t skip);

/* ---------------------------------------------------------------- latency */

/* One instance's latency summary as /stats gives it, in milliseconds. */
struct lat_summary {
    long long n;                          /* requests behind the summary */
    double    mean, p50, p90, p95, p99, max;
};

/* The fraction of instance s's requests at or below x ms, reading its
 * summary as a piecewise-linear distribution through (0 ms, 0), (p50, .50),
 * (p90, .90), (p95, .95), (p99, .99), (max, 1). */
double harness_lat_cdf(const struct lat_summary *s, double x);

/* Merge k summaries into one: n adds up, the mean is weighted by n, the
 * max is the largest; each percentile q solves Σ nᵢ·cdfᵢ(x) = q·Σ nᵢ for x
 * by bisection on [0, max], so a merged p99 is the latency 99 % of all the
 * instances' requests stayed under, as far as the summaries tell. Exact
 * when one summary has every request; an estimate otherwise. */
void harness_lat_merge(const struct lat_summary *in, size_t k, struct lat_summary *out);

/* ---------------------------------------------------------------- samples */

/* JMeter's aggregate-report percentile of n samples: the value of rank
 * ceil(q·n) in ascending order. Sorts v in place; 0 when n is 0. */
double harness_percentile(double *v, size_t n, double q);

#endif /* LOCKLAB_HARNESS_H */
