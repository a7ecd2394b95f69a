/* test_harness.c — the comparison's arithmetic (bench/common/harness.c): the
 * counts of tests/lib.sh, the ceilings' descriptions, latency merging and
 * JMeter's percentile. Prints "N passed, M failed". */
#include "check.h"
#include "../bench/common/harness.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NEAR(a, b, eps) (fabs((double)(a) - (double)(b)) <= (eps))

static void test_counts(void)
{
    /* Seed 000's no-lock run: 5000 sold out of 5000, 4870 left. */
    CHECK(harness_oversold(5000, 5000) == 0);
    CHECK(harness_lost(5000, 5000, 4870) == 4870);
    /* An exact strategy: everything sold, nothing left, nothing lost. */
    CHECK(harness_lost(5000, 5000, 0) == 0);
    /* Oversell: 100 units, 130 answers of 200, the row reads 0. */
    CHECK(harness_oversold(100, 130) == 30);
    CHECK(harness_lost(100, 130, 0) == 30);
    /* Fewer sold than stock, final agrees: nothing lost. */
    CHECK(harness_oversold(100, 40) == 0 && harness_lost(100, 40, 60) == 0);
    /* A sale subtracted but answered with an error (not 200): negative. */
    CHECK(harness_lost(100, 40, 59) == -1);

    CHECK(NEAR(harness_rate(5000, 10.0), 500.0, 1e-9));
    CHECK(harness_rate(5000, 0) == 0.0 && harness_rate(1, -1) == 0.0);
    CHECK(NEAR(harness_efficiency(250.0, 1000.0), 0.25, 1e-12));
    CHECK(harness_efficiency(250.0, 0) < 0);
    /* where the time goes: 6 CPU seconds over 50000 requests = 120 us each */
    CHECK(NEAR(harness_per_request_us(6.0, 50000), 120.0, 1e-9));
    CHECK(NEAR(harness_per_request(175000, 50000), 3.5, 1e-12));
    CHECK(harness_per_request_us(6.0, 0) < 0 && harness_per_request(-1, 10) < 0);
    CHECK(NEAR(harness_busy_share(1840, 160), 0.92, 1e-12));
    CHECK(harness_busy_share(0, 0) < 0 && harness_busy_share(-5, 10) < 0);
    CHECK(NEAR(harness_hold_us(3000000, 12000), 250.0, 1e-9));
    CHECK(harness_hold_us(0, 0) < 0 && harness_hold_us(-1, 5) < 0);
    CHECK(NEAR(harness_held_share(4500000, 6.0), 0.75, 1e-12));
    CHECK(NEAR(harness_held_share(15000000, 6.0), 2.5, 1e-12));   /* three mutexes */
    CHECK(harness_held_share(0, 6.0) < 0 && harness_held_share(100, 0) < 0);
}

/* Which ceiling bounds a strategy is the strategy's own field (tests/
 * test_unit.c checks each names one of these); here, that every key
 * ll-limits writes has its line and method for the reports, and others
 * have none; then the arithmetic of hold ceilings, spreads, bounds and
 * steady rates. */
static void test_ceilings(void)
{
    const char *const keys[] = { CEIL_MYSQL_UPDATE, CEIL_UPDATE_PEAK, CEIL_FOR_UPDATE,
                                 CEIL_SHARE_MODE, CEIL_OPTIMISTIC, CEIL_OPTIMISTIC_RECURSIVE,
                                 CEIL_UPDATE_NOINDEX, CEIL_SERIAL_MYSQL, CEIL_SERIAL_REDIS,
                                 CEIL_SERIAL_ZK, CEIL_SERIAL_ETCD, CEIL_REDIS_DECR,
                                 CEIL_REDIS_WATCH, CEIL_SERIAL_REDIS_STOCK, CEIL_HTTP };
    size_t i;

    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *m = harness_ceiling_method(keys[i]);
        CHECK(strlen(harness_ceiling_text(keys[i])) > 0);
        CHECK(!strcmp(m, "plateau") || !strcmp(m, "hold") || !strcmp(m, "concurrent") ||
              !strcmp(m, "front"));
    }
    CHECK(!strcmp(harness_ceiling_method(CEIL_FOR_UPDATE), "plateau"));
    CHECK(!strcmp(harness_ceiling_method(CEIL_SERIAL_ZK), "hold"));
    CHECK(!strcmp(harness_ceiling_text("nope"), "") && !strcmp(harness_ceiling_method("nope"), ""));
    CHECK(!strcmp(harness_ceiling_text(NULL), ""));
}

static void test_hold_and_bound(void)
{
    /* Holds of 100 us but for two stalls: the median ignores the stalls
     * (the mean, 1.9 ms, would not), so the lock lets through 10000/s. */
    double holds[] = { 100e-6, 100e-6, 0.009, 100e-6, 0.01, 100e-6, 100e-6 };
    double one[] = { 250e-6 }, trials[] = { 9000, 10000, 9500 }, flat[] = { 5000 };
    double none[] = { 0, -1 };
    long long sold[] = { 300, 5000, 5200, 4800, 70 };

    CHECK(NEAR(harness_hold_rate(holds, 7), 10000.0, 1e-6));
    CHECK(NEAR(harness_hold_rate(one, 1), 4000.0, 1e-6));
    CHECK(harness_hold_rate(one, 0) == 0.0);
    CHECK(NEAR(harness_spread(trials, 3), 0.1, 1e-12));
    CHECK(harness_spread(flat, 1) == 0.0 && harness_spread(none, 2) < 0);
    /* The bound: above the ceiling by more than its spread, or within it. */
    CHECK(harness_bound(10200, 10000, 0.01) == HARNESS_BOUND_ABOVE);
    CHECK(harness_bound(10200, 10000, 0.05) == HARNESS_BOUND_NEAR);
    CHECK(harness_bound(9600, 10000, 0.0) == HARNESS_BOUND_NEAR);
    CHECK(harness_bound(9400, 10000, 0.3) == HARNESS_BOUND_BELOW);
    CHECK(harness_bound(9400, 0, 0.3) == HARNESS_BOUND_NONE);
    CHECK(harness_bound(0, 10000, 0.3) == HARNESS_BOUND_NONE);
    CHECK(harness_bound(10001, 10000, -1) == HARNESS_BOUND_ABOVE);
    CHECK(!strcmp(harness_bound_name(HARNESS_BOUND_ABOVE), "above"));
    /* A 4.3 s load: seconds 1, 2 and 3 are whole, the first is the ramp,
     * the fifth is cut short; with skip 0 the first counts too. */
    CHECK(NEAR(harness_steady_rate(sold, 5, 4.3, 1), 5000.0, 1e-9));
    CHECK(NEAR(harness_steady_rate(sold, 5, 4.3, 0), 3825.0, 1e-9));
    CHECK(harness_steady_rate(sold, 5, 0.4, 0) < 0);
    CHECK(harness_steady_rate(sold, 1, 1.2, 1) < 0);
}

static void test_latency(void)
{
    struct lat_summary a = { 100, 2.0, 1.0, 3.0, 4.0, 8.0, 10.0 };
    struct lat_summary b = { 300, 20.0, 10.0, 30.0, 40.0, 80.0, 100.0 };
    struct lat_summary empty = { 0, 0, 0, 0, 0, 0, 0 };
    struct lat_summary in[3], m;

    /* The CDF goes through the summary's points and interpolates between. */
    CHECK(NEAR(harness_lat_cdf(&a, 1.0), 0.50, 1e-12));
    CHECK(NEAR(harness_lat_cdf(&a, 2.0), 0.70, 1e-12));
    CHECK(NEAR(harness_lat_cdf(&a, 0.5), 0.25, 1e-12));
    CHECK(harness_lat_cdf(&a, 0) == 0.0 && harness_lat_cdf(&a, 10.0) == 1.0);
    CHECK(harness_lat_cdf(&a, 1e9) == 1.0);

    /* One summary (or one plus empties) merges to itself, exactly. */
    in[0] = a;
    in[1] = empty;
    harness_lat_merge(in, 2, &m);
    CHECK(m.n == 100 && m.p50 == 1.0 && m.p99 == 8.0 && m.max == 10.0 && m.mean == 2.0);

    /* Two equal summaries merge to the same percentiles. */
    in[1] = a;
    harness_lat_merge(in, 2, &m);
    CHECK(m.n == 200 && NEAR(m.p50, 1.0, 1e-6) && NEAR(m.p90, 3.0, 1e-6));
    CHECK(NEAR(m.p99, 8.0, 1e-6) && m.max == 10.0);

    /* a (100 fast) + b (300 slow): counts add, mean weighted, max larger;
     * the merged median lies between the two medians. */
    in[1] = b;
    in[2] = empty;
    harness_lat_merge(in, 3, &m);
    CHECK(m.n == 400 && NEAR(m.mean, (100 * 2.0 + 300 * 20.0) / 400, 1e-9) && m.max == 100.0);
    CHECK(m.p50 > a.p50 && m.p50 < b.p50);
    CHECK(m.p50 <= m.p90 && m.p90 <= m.p95 && m.p95 <= m.p99 && m.p99 <= m.max);
    /* At the merged p50, exactly half of all requests are below. */
    CHECK(NEAR(100 * harness_lat_cdf(&a, m.p50) + 300 * harness_lat_cdf(&b, m.p50), 200, 1e-6));

    harness_lat_merge(in + 2, 1, &m);
    CHECK(m.n == 0 && m.p99 == 0 && m.max == 0);
}

static void test_percentile(void)
{
    double v[10] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
    double one[1] = { 42 };

    CHECK(harness_percentile(v, 10, 0.50) == 5);     /* rank 5 */
    CHECK(harness_percentile(v, 10, 0.90) == 9);     /* rank 9 */
    CHECK(harness_percentile(v, 10, 0.95) == 10);    /* rank ceil(9.5) = 10 */
    CHECK(harness_percentile(v, 10, 0.99) == 10);
    CHECK(harness_percentile(v, 10, 0.0) == 1);
    CHECK(harness_percentile(v, 10, 1.0) == 10);
    CHECK(harness_percentile(one, 1, 0.5) == 42);
    CHECK(harness_percentile(NULL, 0, 0.5) == 0);
}

int main(void)
{
    test_counts();
    test_ceilings();
    test_hold_and_bound();
    test_latency();
    test_percentile();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
