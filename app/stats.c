/* stats.c — counters and latency histograms per strategy, shown as JSON
 * by GET /stats and in Prometheus's format by GET /metrics (metrics.h).
 *
 * Each answer adds to its strategy's relaxed atomics and nothing else: its
 * result, its latency in the fine log-linear histogram /stats computes
 * percentiles from and in the coarse one of fixed bounds Prometheus gets
 * (metrics_le_us), its lock's hold time in another of those, the units it
 * sold and what its context counted (retries, round trips, wake-ups). A
 * reader sees each counter exact, the set of them not quite at one moment.
 */
#include "stats.h"
#include "metrics.h"
#include "rtt.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../locks/lock.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

struct lock_stats {
    _Atomic uint64_t status[LL_STATUS_MAX];
    _Atomic uint64_t retries, backend_ops, wakeups, release_errors;
    _Atomic uint64_t deadlocks;         /* MariaDB's 1213s met (mysql-share-mode …) */
    _Atomic uint64_t cert_failures;     /* ... on a Galera node (sale.c retries) */
    _Atomic uint64_t foreign;           /* purchases that found their lock's key held
                                         * by another strategy's kind of lock     */
    _Atomic uint64_t holds, held_us;    /* purchases that got the lock, and how long */
    _Atomic uint64_t bucket[HIST_BUCKETS];
    _Atomic uint64_t sum_us, max_us;
    _Atomic uint64_t units;             /* units sold: a purchase's qty when sold */
    _Atomic uint64_t latency_le[METRICS_LE_N + 1], hold_le[METRICS_LE_N + 1];
};

static struct lock_stats *stats;
static int nstats;
static _Atomic int64_t in_flight;
static _Atomic int64_t late;            /* purchases in their ?late_ms window */
static _Atomic int64_t holding;         /* guarded sales in their ?hold_ms window */
static _Atomic uint64_t overloaded;

void stats_begin(void) { atomic_fetch_add(&in_flight, 1); }
void stats_end(void)   { atomic_fetch_sub(&in_flight, 1); }
void stats_late(int n)  { atomic_fetch_add(&late, n); }
void stats_holding(int n) { atomic_fetch_add(&holding, n); }
void stats_overloaded(void) { atomic_fetch_add_explicit(&overloaded, 1, memory_order_relaxed); }

/* ---------------------------------------------------------------- histogram */

int hist_bucket(int64_t us)
{
    int exp, b;

    if (us < HIST_SUB)
        return us < 0 ? 0 : (int)us;
    exp = 63 - __builtin_clzll((unsigned long long)us);      /* >= 3 */
    b = (exp - 2) * HIST_SUB + (int)((us >> (exp - 3)) & (HIST_SUB - 1));
    return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

/* The largest value that lands in bucket b. */
int64_t hist_bucket_top(int b)
{
    int exp, sub;

    if (b < HIST_SUB)
        return b;
    exp = b / HIST_SUB + 2;
    sub = b % HIST_SUB;
    return ((int64_t)(HIST_SUB + sub + 1) << (exp - 3)) - 1;
}

void hist_add(struct hist *h, int64_t us)
{
    h->bucket[hist_bucket(us)]++;
    h->count++;
    h->sum_us += (uint64_t)us;
    if ((uint64_t)us > h->max_us)
        h->max_us = (uint64_t)us;
}

int64_t hist_percentile(const struct hist *h, double q)
{
    uint64_t rank, seen = 0;
    int b;

    if (h->count == 0)
        return 0;
    rank = (uint64_t)(q * (double)h->count + 0.5);
    if (rank < 1)
        rank = 1;
    for (b = 0; b < HIST_BUCKETS; b++) {
        seen += h->bucket[b];
        if (seen >= rank) {
            int64_t top = hist_bucket_top(b);
            return top < (int64_t)h->max_us ? top : (int64_t)h->max_us;
        }
    }
    return (int64_t)h->max_us;
}

/* ---------------------------------------------------------------- counters */

void stats_init(int nlocks)
{
    stats = xcalloc((size_t)nlocks, sizeof *stats);
    nstats = nlocks;
}

void stats_record(int lock, int status, int64_t latency_us,
                  const struct lock_ctx *ctx, int release_failed)
{
    struct lock_stats *s = &stats[lock];
    uint64_t us = latency_us < 0 ? 0 : (uint64_t)latency_us, max;

    atomic_fetch_add_explicit(&s->status[status], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bucket[hist_bucket((int64_t)us)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->latency_le[metrics_bucket((int64_t)us)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us, us, memory_order_relaxed);
    if (status == LL_OK)
        atomic_fetch_add_explicit(&s->units, ctx && ctx->qty > 0 ? (uint64_t)ctx->qty : 1,
                                  memory_order_relaxed);
    max = atomic_load_explicit(&s->max_us, memory_order_relaxed);
    while (us > max && !atomic_compare_exchange_weak(&s->max_us, &max, us))
        ;
    if (ctx) {
        atomic_fetch_add_explicit(&s->retries, ctx->retries, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->backend_ops, ctx->backend_ops, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->wakeups, ctx->wakeups, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->deadlocks, ctx->deadlocks, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->cert_failures, ctx->cert_failures, memory_order_relaxed);
        if (ctx->foreign)
            atomic_fetch_add_explicit(&s->foreign, 1, memory_order_relaxed);
        if (ctx->held_us >= 0) {
            atomic_fetch_add_explicit(&s->holds, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&s->held_us, (uint64_t)ctx->held_us,
                                      memory_order_relaxed);
            atomic_fetch_add_explicit(&s->hold_le[metrics_bucket(ctx->held_us)], 1,
                                      memory_order_relaxed);
        }
    }
    if (release_failed)
        atomic_fetch_add_explicit(&s->release_errors, 1, memory_order_relaxed);
}

void stats_reset(void)
{
    int i, k;

    atomic_store(&overloaded, 0);
    rtt_reset();
    for (i = 0; i < nstats; i++) {
        struct lock_stats *s = &stats[i];
        for (k = 0; k < LL_STATUS_MAX; k++)
            atomic_store(&s->status[k], 0);
        for (k = 0; k < HIST_BUCKETS; k++)
            atomic_store(&s->bucket[k], 0);
        for (k = 0; k <= METRICS_LE_N; k++) {
            atomic_store(&s->latency_le[k], 0);
            atomic_store(&s->hold_le[k], 0);
        }
        atomic_store(&s->units, 0);
        atomic_store(&s->retries, 0);
        atomic_store(&s->backend_ops, 0);
        atomic_store(&s->wakeups, 0);
        atomic_store(&s->deadlocks, 0);
        atomic_store(&s->cert_failures, 0);
        atomic_store(&s->foreign, 0);
        atomic_store(&s->release_errors, 0);
        atomic_store(&s->holds, 0);
        atomic_store(&s->held_us, 0);
        atomic_store(&s->sum_us, 0);
        atomic_store(&s->max_us, 0);
    }
}

static json_t *one_json(struct lock_stats *s)
{
    struct hist h;
    json_t *o;
    uint64_t n, acquisitions, holds = atomic_load(&s->holds), held = atomic_load(&s->held_us);
    int k;

    memset(&h, 0, sizeof h);
    for (k = 0; k < HIST_BUCKETS; k++) {
        h.bucket[k] = atomic_load_explicit(&s->bucket[k], memory_order_relaxed);
        h.count += h.bucket[k];
    }
    h.sum_us = atomic_load(&s->sum_us);
    h.max_us = atomic_load(&s->max_us);
    n = h.count;
    acquisitions = atomic_load(&s->status[LL_OK]) + atomic_load(&s->status[LL_SOLD_OUT]);
    o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,"
                     "s:f,s:{s:f,s:f,s:f,s:f,s:f,s:f}}",
        "requests", (json_int_t)n,
        "sold", (json_int_t)atomic_load(&s->status[LL_OK]),
        "sold_units", (json_int_t)atomic_load(&s->units),
        "sold_out", (json_int_t)atomic_load(&s->status[LL_SOLD_OUT]),
        "lock_timeouts", (json_int_t)atomic_load(&s->status[LL_TIMEOUT]),
        "unavailable", (json_int_t)atomic_load(&s->status[LL_UNAVAILABLE]),
        "errors", (json_int_t)atomic_load(&s->status[LL_ERROR]),
        "unknown", (json_int_t)atomic_load(&s->status[LL_UNKNOWN]),
        "fenced", (json_int_t)atomic_load(&s->status[LL_FENCED]),
        "lock_lost", (json_int_t)atomic_load(&s->status[LL_LOST]),
        "release_errors", (json_int_t)atomic_load(&s->release_errors),
        "retries", (json_int_t)atomic_load(&s->retries),
        "backend_ops", (json_int_t)atomic_load(&s->backend_ops),
        "wakeups", (json_int_t)atomic_load(&s->wakeups),
        "foreign", (json_int_t)atomic_load(&s->foreign),
        "holds", (json_int_t)holds,
        "held_us", (json_int_t)held,
        "backend_ops_per_sale", acquisitions ? (double)atomic_load(&s->backend_ops) / (double)acquisitions : 0.0,
        "wakeups_per_sale", acquisitions ? (double)atomic_load(&s->wakeups) / (double)acquisitions : 0.0,
        "hold_us_mean", holds ? (double)held / (double)holds : 0.0,
        "latency_ms",
        "mean", n ? (double)h.sum_us / (double)n / 1000.0 : 0.0,
        "p50", (double)hist_percentile(&h, 0.50) / 1000.0,
        "p90", (double)hist_percentile(&h, 0.90) / 1000.0,
        "p95", (double)hist_percentile(&h, 0.95) / 1000.0,
        "p99", (double)hist_percentile(&h, 0.99) / 1000.0,
        "max", (double)h.max_us / 1000.0);
    json_object_set_new(o, "deadlocks", json_integer((json_int_t)atomic_load(&s->deadlocks)));
    json_object_set_new(o, "cert_failures",
                        json_integer((json_int_t)atomic_load(&s->cert_failures)));
    return o;
}

/* The process's context switches since it began, voluntary and not, of
 * every thread it ever had: a connection's thread that has ended still
 * counts, which /proc/PID/task/ of a live process cannot show. */
static long long context_switches(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return (long long)ru.ru_nvcsw + (long long)ru.ru_nivcsw;
}

/* The process's threads now: the loop's, and the client libraries' own. */
static int thread_count(void)
{
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    int n = -1;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* What the loop says of itself: turns, pieces of a turn longer than the
 * warning, the longest, and waits that blocked it (all should be rare). */
static json_t *loop_json(void)
{
    struct loop_stats ls;

    loop_stats(&ls);
    return json_pack("{s:I,s:I,s:f,s:I}", "turns", (json_int_t)ls.turns,
                     "slow_turns", (json_int_t)ls.slow_turns,
                     "longest_ms", (double)ls.longest_us / 1000.0,
                     "blocking_waits", (json_int_t)ls.blocking_waits);
}

json_t *stats_json(void)
{
    const struct lock_ops *const *all;
    json_t *by = json_object();
    int i, n;

    all = lock_all(&n);
    for (i = 0; i < n && i < nstats; i++)
        json_object_set_new(by, all[i]->name, one_json(&stats[i]));
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:i,s:o,s:o,s:o}",
                     "in_flight", (json_int_t)atomic_load(&in_flight),
                     "late", (json_int_t)atomic_load(&late),
                     "holding", (json_int_t)atomic_load(&holding),
                     "overloaded", (json_int_t)atomic_load(&overloaded),
                     "context_switches", (json_int_t)context_switches(),
                     "threads", thread_count(), "loop", loop_json(),
                     "rtt", rtt_json(), "strategies", by);
}

/* ---------------------------------------------------------------- GET /metrics */

/* One counter family over every strategy, from the field at `offset` in
 * struct lock_stats. */
static void per_strategy(struct metrics *m, const char *name, const char *help, size_t offset)
{
    const struct lock_ops *const *all;
    char labels[96];
    int i, n;

    all = lock_all(&n);
    metrics_family(m, name, "counter", help);
    for (i = 0; i < n && i < nstats; i++) {
        const _Atomic uint64_t *v = (const _Atomic uint64_t *)((const char *)&stats[i] + offset);
        snprintf(labels, sizeof labels, "strategy=\"%s\"", all[i]->name);
        metrics_int(m, name, labels, atomic_load_explicit(v, memory_order_relaxed));
    }
}

/* One histogram family over every strategy: per-bucket counts at `offset`,
 * their sum in microseconds at `sum_offset`. */
static void per_strategy_histogram(struct metrics *m, const char *name, const char *help,
                                   size_t offset, size_t sum_offset)
{
    const struct lock_ops *const *all;
    uint64_t bucket[METRICS_LE_N + 1];
    char labels[96];
    int i, k, n;

    all = lock_all(&n);
    metrics_family(m, name, "histogram", help);
    for (i = 0; i < n && i < nstats; i++) {
        const char *base = (const char *)&stats[i];
        const _Atomic uint64_t *b = (const _Atomic uint64_t *)(base + offset);
        const _Atomic uint64_t *sum = (const _Atomic uint64_t *)(base + sum_offset);

        for (k = 0; k <= METRICS_LE_N; k++)
            bucket[k] = atomic_load_explicit(&b[k], memory_order_relaxed);
        snprintf(labels, sizeof labels, "strategy=\"%s\"", all[i]->name);
        metrics_histogram(m, name, labels, bucket,
                          atomic_load_explicit(sum, memory_order_relaxed));
    }
}

void stats_metrics(struct metrics *m)
{
    const struct lock_ops *const *all;
    char labels[128];
    int i, k, n;

    all = lock_all(&n);
    metrics_family(m, "locklab_purchases_total", "counter",
                   "Purchases answered, by strategy and by the answer's result (GET /stats's "
                   "sold, sold_out, lock_timeouts, ...; bad_request: an unknown product).");
    for (i = 0; i < n && i < nstats; i++)
        for (k = 0; k < LL_STATUS_MAX; k++) {
            snprintf(labels, sizeof labels, "strategy=\"%s\",result=\"%s\"", all[i]->name,
                     ll_status_name(k));
            metrics_int(m, "locklab_purchases_total", labels,
                        atomic_load_explicit(&stats[i].status[k], memory_order_relaxed));
        }
    per_strategy(m, "locklab_sold_units_total",
                 "Units sold: each sold purchase's quantity (1, or POST /order's qty).",
                 offsetof(struct lock_stats, units));
    per_strategy(m, "locklab_retries_total",
                 "Spins, polls and optimistic retries of the purchases.",
                 offsetof(struct lock_stats, retries));
    per_strategy(m, "locklab_backend_operations_total",
                 "Round trips to the lock's backend (Redis, ZooKeeper, MariaDB statements "
                 "of the batching strategies).", offsetof(struct lock_stats, backend_ops));
    per_strategy(m, "locklab_wakeups_total",
                 "Waiters woken by a watch, a message or a release in this instance.",
                 offsetof(struct lock_stats, wakeups));
    per_strategy(m, "locklab_deadlocks_total",
                 "MariaDB deadlocks (error 1213) the purchases met and retried "
                 "(mysql-share-mode).", offsetof(struct lock_stats, deadlocks));
    per_strategy(m, "locklab_cert_failures_total",
                 "MariaDB deadlock errors (1213) met on a Galera node: certification "
                 "failures and brute-force aborts, each sale's attempt rolled back and run "
                 "again.",
                 offsetof(struct lock_stats, cert_failures));
    per_strategy(m, "locklab_foreign_locks_total",
                 "Purchases that found their lock's key held by another strategy's kind of "
                 "lock (two strategies mixed on one product).",
                 offsetof(struct lock_stats, foreign));
    per_strategy(m, "locklab_release_errors_total",
                 "Sales whose lock could not be released (answered sold, with a warning).",
                 offsetof(struct lock_stats, release_errors));
    per_strategy_histogram(m, "locklab_request_duration_seconds",
                           "A purchase's time in this instance, from its request to its answer.",
                           offsetof(struct lock_stats, latency_le),
                           offsetof(struct lock_stats, sum_us));
    per_strategy_histogram(m, "locklab_lock_hold_seconds",
                           "How long a purchase held its lock, acquired to released (purchases "
                           "that never held one are not counted).",
                           offsetof(struct lock_stats, hold_le),
                           offsetof(struct lock_stats, held_us));
    metrics_family(m, "locklab_purchases_in_flight", "gauge",
                   "Purchases begun and not yet answered.");
    metrics_gauge(m, "locklab_purchases_in_flight", NULL, (long long)atomic_load(&in_flight));
    metrics_family(m, "locklab_overloaded_total", "counter",
                   "Requests answered 503 overloaded: more connections than --max-connections.");
    metrics_int(m, "locklab_overloaded_total", NULL, atomic_load(&overloaded));
    metrics_family(m, "locklab_context_switches_total", "counter",
                   "The process's context switches, voluntary and not, of every thread it had.");
    metrics_int(m, "locklab_context_switches_total", NULL,
                (uint64_t)(context_switches() < 0 ? 0 : context_switches()));
    rtt_metrics(m);
}
