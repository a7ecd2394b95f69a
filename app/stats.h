/* stats.h — this instance's counters per strategy, lock-free.
 *
 * Every answer of /check/lock is counted once, under the strategy that
 * served it, with its latency in a log-linear histogram (8 sub-buckets per
 * power of two of microseconds: under 10% error on any percentile).
 * Counters are relaxed atomics: /stats is a snapshot, not a transaction.
 */
#ifndef LOCKLAB_STATS_H
#define LOCKLAB_STATS_H

#include <stdint.h>
#include <jansson.h>

struct lock_ctx;
struct metrics;

#define HIST_SUB     8
#define HIST_BUCKETS (40 * HIST_SUB)

struct hist {
    uint64_t bucket[HIST_BUCKETS];
    uint64_t count, sum_us, max_us;
};

void     hist_add(struct hist *h, int64_t us);           /* not atomic */
int64_t  hist_percentile(const struct hist *h, double q); /* microseconds */
int      hist_bucket(int64_t us);
int64_t  hist_bucket_top(int b);

void    stats_init(int nlocks);
void    stats_record(int lock, int status, int64_t latency_us,
                     const struct lock_ctx *ctx, int release_failed);
void    stats_reset(void);
/* Purchases begun and not yet answered: a client that gave up (wrk at the
 * end of its time) leaves its purchase running until the lock wait ends,
 * and a harness must wait for in_flight 0 before it reads the counts. */
void    stats_begin(void);
void    stats_end(void);
/* Purchases now in the window of the fault switch ?late_ms (past every
 * check, before the write): +1 as one enters it, -1 as it leaves. A test
 * waits for its holders to be there before it pauses them
 * (tests/faults.sh); nothing else counts on it. */
void    stats_late(int n);
/* The same for the window of ?hold_ms of a guarded sale (holding its lock,
 * before its checks): the fault matrix waits for its holders there
 * (bench/lib/compare_matrix.sh). */
void    stats_holding(int n);
/* A request refused because the instance had more than --max-connections
 * connections open (answered 503 "overloaded", before any route). */
void    stats_overloaded(void);
json_t *stats_json(void);   /* {"in_flight":N,"late":N,"holding":N,"overloaded":N,
                             *  "context_switches":N, "rtt":{...} (rtt.h),
                             *  "strategies":{name:{...}}} */
/* The same counters as Prometheus's families (metrics.h, docs/metrics.md). */
void    stats_metrics(struct metrics *m);

#endif /* LOCKLAB_STATS_H */
