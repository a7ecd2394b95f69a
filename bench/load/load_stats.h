/* load_stats.h — a latency histogram and per-second counts for ll-load
 * (and anything else).
 *
 * The histogram is HdrHistogram's bucket scheme at 3 significant digits,
 * from 1 µs to 60 s (Debian packages no C HdrHistogram; this is the few
 * lines of it ll-load needs). Values below 2048 µs each get a bucket of
 * their own; above that, every power of two [1024 × 2^b, 2048 × 2^b) is
 * split into 1024 buckets of width 2^b, so a bucket is never wider than
 * 1/1024 of the values it holds. A percentile answers with the highest
 * value its bucket holds (HdrHistogram's "highest equivalent value"): at
 * or above the exact order statistic, and by less than 0.1 % of it. The
 * layout reaches HIST_MAX_US (67 s); a larger value is counted in the top
 * bucket. Count, sum (so the mean), minimum and maximum are exact.
 *
 * One struct hist is 17,408 counters (136 KB) and owns no memory: embed
 * it, copy it, memset it. All zeros is an empty histogram, so one in
 * calloc'ed memory costs only the pages its samples touch (ll-load gives
 * each of its threads one). It is not thread-safe; the intended use is one
 * histogram per thread, merged with hist_merge() after the threads are
 * joined, so that the hot path takes no lock.
 *
 *     struct hist h;
 *     hist_init(&h);
 *     hist_add(&h, 1250);                    // one sample of 1.25 ms
 *     uint64_t p99 = hist_percentile(&h, 0.99);
 */
#ifndef LOCKLAB_LOAD_STATS_H
#define LOCKLAB_LOAD_STATS_H

#include <stdint.h>

#define HIST_SUB_BITS  11                        /* 2048 single-µs buckets   */
#define HIST_HALF_BITS (HIST_SUB_BITS - 1)       /* 1024 buckets an octave   */
#define HIST_GROUPS    16                        /* 2048 << 15 > 60 s        */
#define HIST_MAX_US    ((UINT64_C(1) << (HIST_SUB_BITS + HIST_GROUPS - 1)) - 1)
#define HIST_BUCKETS   ((HIST_GROUPS + 1) << HIST_HALF_BITS)

/* The fields are private: read them through the functions below. */
struct hist {
    uint64_t count;                  /* samples added                     */
    uint64_t sum_us;                 /* exact sum, for the mean           */
    uint64_t min_us;                 /* meaningful once count > 0         */
    uint64_t max_us;                 /* 0 while empty                     */
    uint64_t bucket[HIST_BUCKETS];
};

/* Make h empty (the same as filling it with zeros). */
void hist_init(struct hist *h);

/* Record one sample of `us` microseconds. */
void hist_add(struct hist *h, uint64_t us);

/* Add every sample of src to dst (src is unchanged). */
void hist_merge(struct hist *dst, const struct hist *src);

/* Number of samples recorded. */
uint64_t hist_count(const struct hist *h);

/* Arithmetic mean in microseconds (exact); 0 when empty. */
double hist_mean(const struct hist *h);

/* Smallest and largest sample in microseconds (exact); 0 when empty. */
uint64_t hist_min(const struct hist *h);
uint64_t hist_max(const struct hist *h);

/* The q-quantile in microseconds, q in [0, 1] (0.99 for p99): the value of
 * the sample of rank ceil(q × count), given as the highest value of its
 * bucket and clamped to [min, max]. q <= 0 gives the exact minimum, q >= 1
 * the exact maximum, and an empty histogram gives 0. */
uint64_t hist_percentile(const struct hist *h, double q);

/* The bucket scheme itself, for the tests: the bucket of a value, and the
 * lowest value and width of a bucket. */
unsigned hist_index(uint64_t us);
uint64_t hist_bucket_low(unsigned idx);
uint64_t hist_bucket_width(unsigned idx);

/* ---------------------------------------------------------------- timeline */

/* What happened in each second of a run: answers, the 200s among them
 * (sold) and the requests that failed below HTTP, counted by the second
 * they ended in, from the run's start (second 0 is [0 s, 1 s)). Like a
 * histogram, one per thread, merged after the join; the array grows by
 * doubling when a new second begins, so the hot path is an index and an
 * increment, and a realloc a few times a run. Out of memory aborts. */
enum tl_kind { TL_ANSWERS, TL_SOLD, TL_ERRORS, TL_KINDS };

struct timeline {
    uint64_t (*sec)[TL_KINDS];      /* sec[s][kind]; NULL while empty       */
    uint64_t n;                     /* seconds recorded: 0..n-1             */
    uint64_t cap;
};

/* Make t empty (a zero-filled struct timeline is empty too). */
void timeline_init(struct timeline *t);

/* Count one event of `kind` in second `second`. */
void timeline_add(struct timeline *t, uint64_t second, enum tl_kind kind);

/* Add every second of src to dst (src is unchanged). */
void timeline_merge(struct timeline *dst, const struct timeline *src);

/* Seconds recorded (the last one that has an event, plus one), and one count. */
uint64_t timeline_seconds(const struct timeline *t);
uint64_t timeline_get(const struct timeline *t, uint64_t second, enum tl_kind kind);

/* Give back the memory; t is empty again. */
void timeline_free(struct timeline *t);

#endif /* LOCKLAB_LOAD_STATS_H */
