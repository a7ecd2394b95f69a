/* harness.c — oversold, lost updates, efficiency, ceilings, merged latency.
 *
 * See harness.h for the definitions. Which ceiling bounds a strategy is
 * not decided here: each strategy names its own (struct lock_ops's
 * `ceiling`, exported by GET /locks), and ll-report reads it from there.
 */
#include "harness.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- counts */

long long harness_oversold(long long stock, long long sold)
{
    return sold > stock ? sold - stock : 0;
}

long long harness_lost(long long stock, long long sold, long long final_stock)
{
    return sold - (stock - final_stock);
}

double harness_rate(long long n, double seconds)
{
    return seconds > 0 ? (double)n / seconds : 0.0;
}

double harness_efficiency(double rate, double ceiling)
{
    return ceiling > 0 ? rate / ceiling : -1.0;
}

/* ---------------------------------------------------------------- cost */

double harness_per_request(double count, long long n)
{
    return n > 0 && count >= 0 ? count / (double)n : -1.0;
}

double harness_per_request_us(double cpu_s, long long n)
{
    double per = harness_per_request(cpu_s, n);
    return per < 0 ? per : per * 1e6;
}

double harness_busy_share(double busy, double idle)
{
    return busy >= 0 && idle >= 0 && busy + idle > 0 ? busy / (busy + idle) : -1.0;
}

double harness_hold_us(long long held_us, long long holds)
{
    return holds > 0 && held_us >= 0 ? (double)held_us / (double)holds : -1.0;
}

double harness_held_share(long long held_us, double seconds)
{
    return held_us > 0 && seconds > 0 ? (double)held_us / (seconds * 1e6) : -1.0;
}

/* ---------------------------------------------------------------- ceilings */

const char *harness_ceiling_text(const char *key)
{
    return lock_ceiling_what(key);
}

const char *harness_ceiling_method(const char *key)
{
    return lock_ceiling_method(key);
}

double harness_hold_rate(double *hold_s, size_t n)
{
    double median = harness_percentile(hold_s, n, 0.5);
    return n > 0 && median > 0 ? 1.0 / median : 0.0;
}

double harness_spread(const double *rate, size_t n)
{
    double lo = 0, hi = 0;
    size_t i, used = 0;

    for (i = 0; i < n; i++) {
        if (!(rate[i] > 0))
            continue;
        if (used++ == 0 || rate[i] < lo)
            lo = rate[i];
        if (rate[i] > hi)
            hi = rate[i];
    }
    return used == 0 ? -1.0 : (hi - lo) / hi;
}

enum harness_bound harness_bound(double rate, double ceiling, double spread)
{
    if (!(ceiling > 0) || !(rate > 0))
        return HARNESS_BOUND_NONE;
    if (spread < 0)
        spread = 0;
    if (rate > ceiling * (1.0 + spread))
        return HARNESS_BOUND_ABOVE;
    if (rate >= ceiling * (1.0 - HARNESS_NEAR))
        return HARNESS_BOUND_NEAR;
    return HARNESS_BOUND_BELOW;
}

const char *harness_bound_name(enum harness_bound b)
{
    static const char *const names[] = { "none", "below", "near", "above" };
    return names[b];
}

double harness_steady_rate(const long long *sold, size_t n, double elapsed_s, size_t skip)
{
    long long sum = 0;
    size_t i, whole = 0;

    for (i = skip; i < n && (double)(i + 1) <= elapsed_s; i++) {
        sum += sold[i];
        whole++;
    }
    return whole > 0 ? (double)sum / (double)whole : -1.0;
}

/* ---------------------------------------------------------------- latency */

double harness_lat_cdf(const struct lat_summary *s, double x)
{
    const double px[] = { 0.0, s->p50, s->p90, s->p95, s->p99, s->max };
    const double py[] = { 0.0, 0.50,   0.90,   0.95,   0.99,   1.0 };
    size_t i;

    if (x <= 0)
        return 0.0;
    if (x >= s->max)
        return 1.0;
    for (i = 1; i < sizeof px / sizeof px[0]; i++) {
        if (x > px[i])
            continue;
        if (px[i] <= px[i - 1])          /* a step: all of it lies at px[i] */
            return py[i];
        return py[i - 1] + (py[i] - py[i - 1]) * (x - px[i - 1]) / (px[i] - px[i - 1]);
    }
    return 1.0;
}

/* The x at which the n-weighted CDF of the k summaries reaches q. */
static double merged_quantile(const struct lat_summary *in, size_t k, long long total,
                              double max, double q)
{
    double lo = 0.0, hi = max;
    int it;

    for (it = 0; it < 60; it++) {
        double mid = (lo + hi) / 2, below = 0;
        size_t i;
        for (i = 0; i < k; i++)
            below += (double)in[i].n * harness_lat_cdf(&in[i], mid);
        if (below >= q * (double)total)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

void harness_lat_merge(const struct lat_summary *in, size_t k, struct lat_summary *out)
{
    double sum = 0;
    size_t i, used = 0, last = 0;

    memset(out, 0, sizeof *out);
    for (i = 0; i < k; i++) {
        if (in[i].n <= 0)
            continue;
        out->n += in[i].n;
        sum += in[i].mean * (double)in[i].n;
        if (in[i].max > out->max)
            out->max = in[i].max;
        used++;
        last = i;
    }
    if (out->n == 0)
        return;
    out->mean = sum / (double)out->n;
    if (used == 1) {                     /* nothing to merge: keep it exact */
        *out = in[last];
        return;
    }
    out->p50 = merged_quantile(in, k, out->n, out->max, 0.50);
    out->p90 = merged_quantile(in, k, out->n, out->max, 0.90);
    out->p95 = merged_quantile(in, k, out->n, out->max, 0.95);
    out->p99 = merged_quantile(in, k, out->n, out->max, 0.99);
}

/* ---------------------------------------------------------------- samples */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double harness_percentile(double *v, size_t n, double q)
{
    size_t rank;

    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    rank = (size_t)(q * (double)n);
    if ((double)rank < q * (double)n)
        rank++;                          /* ceil without libm */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    assert(rank >= 1 && rank <= n);
    return v[rank - 1];
}
