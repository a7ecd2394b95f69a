/* report_rtt.c — ll-report rtt RUN: the comparison at several round trips
 * between hosts in one report, and the model of a lock's ceiling beside it.
 *
 * bench/compare --rtt MS,MS,… (bench/lib/compare_rtt.sh) runs a whole
 * comparison at each round trip MS between an instance and its backends
 * (bench/stack rtt MS: instances in network namespaces, ll-delay on every
 * packet between them), and leaves:
 *   RUN/rtt.env        values, started, the points' options
 *   RUN/holds.tsv      "<strategy> <hold_rtts>" (ll-strategies --holds):
 *                      the round trips a strategy's table says a sale keeps
 *                      the hot item from the next (locks/lock.h), negative
 *                      for a hold per instance (its row queue)
 *   RUN/points.tsv     "MS<TAB>DIR" a point, DIR its run (DIR/results.json)
 *   RUN/points/rtt-MS/delay-before.json, delay-after.json
 *                      ll-delay's counters around the point (bench/net/delay.c),
 *                      when the point had a delay
 *   RUN/points/rtt-MS/ping.txt
 *                      "min max avg samples", ms: Redis PINGs from an
 *                      instance's namespace at the point's start (redis-cli
 *                      --latency), the round trip as an application sees it
 *   RUN/points/rtt-MS/measured.tsv
 *                      "instance backend where least median" a line, ms:
 *                      the instances' own probes at the point's start
 *                      (app/rtt.c: SELECT 1 and PING on the connections
 *                      they sell with; compare refused the point when
 *                      MariaDB's or a Redis server's was 0.1 ms off)
 *
 * It writes RUN/rtt.json, rtt.md and rtt.html, and prints the tables:
 *   - the round trip asked and the one the instances measured at each
 *     point, per backend: the least and the largest of their leasts;
 *   - per strategy, at each round trip: sold/s, its rank among the point's
 *     strategies, and the client's p99;
 *   - the lock's hold: the mean time a purchase held its lock, as the
 *     holder times it (acquired to released; the acquire's answer and the
 *     release's request each take half a round trip, so this is also the
 *     hold as the lock service sees it), in round trips, and the share of
 *     the run's time some purchase held it (the rest: the lock idle between
 *     holders, the hand-off);
 *   - the model: for each strategy with hold_rtts k, the ceiling
 *     1 / (k × R) (N / (k × R) with N instances for a hold per instance)
 *     beside what it sold, and how far apart; and the same model with the
 *     time a sale takes on loopback added to each cycle, 1 / (k × R + 1 /
 *     sold/s at 0 ms), which is what the model leaves out; and that again
 *     with R the round trip an application saw grow since 0 ms (the PINGs:
 *     the wire's delay, and a wake-up of an idle process at each end,
 *     which a loaded VM makes long). The measured hold and held share
 *     explain the rest: sold/s = held share / hold;
 *   - the ranking at each round trip;
 *   - ll-delay's own cost at each: packets, packets/s, CPU µs a packet
 *     and its share of one CPU over the point.
 */
#include "report_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RTT_MAX 16                      /* points of one comparison */

/* ---------------------------------------------------------------- reading */

static json_t *num_or_null(double v)
{
    return isfinite(v) && v >= 0 ? json_real(v) : json_null();
}

/* RUN/holds.tsv into {strategy: k}. */
static json_t *read_holds(const char *dir)
{
    char *p = path_join(dir, "holds.tsv"), name[128];
    FILE *f = fopen(p, "r");
    json_t *holds = json_object();
    int k;

    if (f != NULL) {
        while (fscanf(f, "%127s %d", name, &k) == 2)
            json_object_set_new(holds, name, json_integer(k));
        fclose(f);
    }
    free(p);
    return holds;
}

/* The delay's counters over a point: the difference of its two snapshots,
 * or null when it had none (0 ms: no ll-delay). */
static json_t *read_delay(const char *dir, const char *rel)
{
    char *pd = path_join(dir, rel), *pb, *pa;
    json_t *b = NULL, *a = NULL, *out = json_null();
    char *slash = strrchr(pd, '/');

    if (slash != NULL)                  /* points/rtt-MS/<run> -> points/rtt-MS */
        *slash = '\0';
    pb = path_join(pd, "delay-before.json");
    pa = path_join(pd, "delay-after.json");
    if (access(pb, R_OK) == 0 && access(pa, R_OK) == 0) {
        double packets, cpu, el;
        b = load_json(pb);
        a = load_json(pa);
        if (jint(a, "pid") == jint(b, "pid")) {     /* one ll-delay throughout */
            packets = jnum(a, "packets") - jnum(b, "packets");
            cpu = jnum(a, "cpu_s") - jnum(b, "cpu_s");
            el = jnum(a, "elapsed_s") - jnum(b, "elapsed_s");
            out = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I}",
                "delay_us", jnum(a, "delay_us"), "packets", packets, "elapsed_s", el,
                "cpu_s", cpu, "packets_per_s", el > 0 ? packets / el : 0.0,
                "cpu_us_per_packet", packets > 0 ? cpu * 1e6 / packets : 0.0,
                "cpu_share", el > 0 ? cpu / el : 0.0,
                "late_us_mean", jnum(a, "late_us_mean"), "late_us_p99", jnum(a, "late_us_p99"),
                "held_max", (json_int_t)jint(a, "held_max"));
        }
    }
    json_decref(a);
    json_decref(b);
    free(pa);
    free(pb);
    free(pd);
    return out;
}

/* The mean of the point's PINGs in ms (ping.txt beside its run), or -1. */
static double read_ping(const char *dir, const char *rel)
{
    char *pd = path_join(dir, rel), *pp, *slash = strrchr(pd, '/');
    double lo, hi, avg = -1;
    long n;
    FILE *f;

    if (slash != NULL)
        *slash = '\0';
    pp = path_join(pd, "ping.txt");
    if ((f = fopen(pp, "r")) != NULL) {
        if (fscanf(f, "%lf %lf %lf %ld", &lo, &hi, &avg, &n) != 4 || n <= 0)
            avg = -1;
        fclose(f);
    }
    free(pp);
    free(pd);
    return avg;
}

/* The instances' own round trips of a point (measured.tsv beside its run):
 * {backend: {lo, hi, n}}, the least and largest of the instances' leasts
 * (a Redis server each is one "redis"); {} without the file. */
static json_t *read_measured(const char *dir, const char *rel)
{
    char *pd = path_join(dir, rel), *pp, *slash = strrchr(pd, '/'), line[512];
    char inst[200], backend[32], where[200], least[32];
    json_t *out = json_object();
    FILE *f;

    if (slash != NULL)
        *slash = '\0';
    pp = path_join(pd, "measured.tsv");
    if ((f = fopen(pp, "r")) != NULL) {
        while (fgets(line, sizeof line, f)) {
            json_t *b;
            double v;
            if (sscanf(line, "%199[^\t]\t%31[^\t]\t%199[^\t]\t%31[^\t]", inst, backend, where,
                       least) != 4 || cli_real(least, &v) != 0)
                continue;
            if ((b = json_object_get(out, backend)) == NULL) {
                json_object_set_new(out, backend, json_pack("{s:f,s:f,s:i}", "lo", v, "hi", v,
                                                            "n", 0));
                b = json_object_get(out, backend);
            }
            json_object_set_new(b, "lo", json_real(fmin(v, jnum(b, "lo"))));
            json_object_set_new(b, "hi", json_real(fmax(v, jnum(b, "hi"))));
            json_object_set_new(b, "n", json_integer(jint(b, "n") + 1));
        }
        fclose(f);
    }
    free(pp);
    free(pd);
    return out;
}

/* RUN/points.tsv's points, each {rtt_ms, run, results, delay, app_rtt_ms,
 * measured}. */
static json_t *read_points(const char *dir)
{
    char *p = path_join(dir, "points.tsv"), line[1024];
    FILE *f = fopen(p, "r");
    json_t *points = json_array();

    if (f == NULL)
        die("%s: no such file (bench/compare --rtt writes it)", p);
    while (fgets(line, sizeof line, f)) {
        char rel[900], *rp, *rj;
        double ms;

        if (sscanf(line, "%lf %899s", &ms, rel) != 2)
            continue;
        if (json_array_size(points) == RTT_MAX)
            die("%s: more than %d points", p, RTT_MAX);
        rp = path_join(dir, rel);
        rj = path_join(rp, "results.json");
        json_array_append_new(points, json_pack("{s:f,s:s,s:o,s:o,s:o,s:o}", "rtt_ms", ms,
                                                "run", rel, "results", load_json(rj),
                                                "delay", read_delay(dir, rel),
                                                "app_rtt_ms", num_or_null(read_ping(dir, rel)),
                                                "measured", read_measured(dir, rel)));
        free(rj);
        free(rp);
    }
    fclose(f);
    free(p);
    if (json_array_size(points) == 0)
        die("%s: no points", dir);
    return points;
}

/* ---------------------------------------------------------------- deriving */

/* The run of `label` among a point's, or NULL. */
static const json_t *run_of(const json_t *pt, const char *label)
{
    const json_t *run;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(pt, "results"), "runs"), i, run) {
        char buf[64];
        if (!strcmp(run_label(run, buf, sizeof buf), label))
            return run;
    }
    return NULL;
}

/* 1-based rank of `run` by sold/s among its point's runs. */
static int rank_of(const json_t *pt, const json_t *run)
{
    const json_t *other;
    size_t i;
    int rank = 1;

    json_array_foreach(json_object_get(json_object_get(pt, "results"), "runs"), i, other)
        if (jnum(other, "sold_per_s") > jnum(run, "sold_per_s"))
            rank++;
    return rank;
}

/* The round trips between two sales of the hot item the model counts: k,
 * or k / N for a hold per instance among N. NAN when there is no model. */
static double k_eff(int k, long long instances)
{
    if (k > 0)
        return k;
    if (k < 0 && instances > 0)
        return (double)-k / (double)instances;
    return NAN;
}

/* What a strategy's run at 0 ms measured, which the models beside each
 * later point build on: its sold/s, the PINGs' round trip (ms), its lock's
 * mean hold (µs); -1 each when there is none. */
struct at0 {
    double rate, app, hold;
};

/* One strategy at one point. The hold's growth since 0 ms over the k − 1
 * round trips the hold contains (all but the hand-off) is what one round
 * trip cost there, wake-ups included: +hold is +loop with that for R. */
static json_t *point_of(const json_t *pt, const json_t *run, int k, long long instances,
                        const struct at0 *b)
{
    double ms = jnum(pt, "rtt_ms"), rate, hold, model = NAN, model_lb = NAN, model_app = NAN, ke;
    double app = json_is_number(json_object_get(pt, "app_rtt_ms")) ? jnum(pt, "app_rtt_ms") : -1;
    double rate0 = b->rate, app0 = b->app, trip = NAN, model_hold = NAN;
    json_t *o;

    if (run == NULL)
        return json_pack("{s:f,s:n}", "rtt_ms", ms, "sold_per_s");
    rate = jnum(run, "sold_per_s");
    hold = json_is_number(json_object_get(run, "lock_hold_us")) ? jnum(run, "lock_hold_us") : NAN;
    ke = k_eff(k, instances);
    if (ms > 0 && !isnan(ke)) {
        model = 1e3 / (ke * ms);
        if (rate0 > 0)
            model_lb = 1.0 / (ke * ms / 1e3 + 1.0 / rate0);
        if (rate0 > 0 && app0 >= 0 && app > app0)
            model_app = 1.0 / (ke * (app - app0) / 1e3 + 1.0 / rate0);
        if (k > 1 && rate0 > 0 && b->hold >= 0 && hold > b->hold) {
            trip = (hold - b->hold) / 1e3 / (k - 1);
            model_hold = 1.0 / (ke * trip / 1e3 + 1.0 / rate0);
        }
    }
    o = json_pack("{s:f,s:f,s:i,s:f,s:o,s:o,s:O?,s:O?,s:O?}", "rtt_ms", ms, "sold_per_s", rate,
                  "rank", rank_of(pt, run), "p99_ms", jnum(json_object_get(run, "latency_ms"), "p99"),
                  "hold_us", num_or_null(hold),
                  "hold_rtts", num_or_null(ms > 0 ? hold / (ms * 1e3) : NAN),
                  "held_share", json_object_get(run, "lock_held_share"),
                  "oversold", json_object_get(run, "oversold"),
                  "lost_updates", json_object_get(run, "lost_updates"));
    json_object_set_new(o, "model_per_s", num_or_null(model));
    json_object_set_new(o, "model_ratio", num_or_null(rate / model));
    json_object_set_new(o, "model_loopback_per_s", num_or_null(model_lb));
    json_object_set_new(o, "model_loopback_ratio", num_or_null(rate / model_lb));
    json_object_set_new(o, "app_rtt_added_ms", num_or_null(app0 >= 0 && app >= 0 ? app - app0 : NAN));
    json_object_set_new(o, "model_app_per_s", num_or_null(model_app));
    json_object_set_new(o, "model_app_ratio", num_or_null(rate / model_app));
    json_object_set_new(o, "rtt_in_hold_ms", num_or_null(trip));
    json_object_set_new(o, "model_hold_per_s", num_or_null(model_hold));
    json_object_set_new(o, "model_hold_ratio", num_or_null(rate / model_hold));
    return o;
}

/* Every strategy of every point, first seen first. */
static json_t *build_series(const json_t *points, const json_t *holds, long long instances)
{
    json_t *series = json_array(), *seen = json_object();
    const json_t *pt, *run, *first = json_array_get(points, 0);
    size_t i, j, k;

    json_array_foreach(points, i, pt)
        json_array_foreach(json_object_get(json_object_get(pt, "results"), "runs"), j, run) {
            char label[64];
            const json_t *r0;
            struct at0 b = { -1, -1, -1 };
            int hold;
            json_t *s;

            run_label(run, label, sizeof label);
            if (json_object_get(seen, label))
                continue;
            json_object_set_new(seen, label, json_true());
            hold = (int)jint(holds, jstr(run, "strategy", label));
            if (jnum(first, "rtt_ms") == 0 && (r0 = run_of(first, label)) != NULL) {
                b.rate = jnum(r0, "sold_per_s");
                if (json_is_number(json_object_get(r0, "lock_hold_us")))
                    b.hold = jnum(r0, "lock_hold_us");
            }
            if (jnum(first, "rtt_ms") == 0 && json_is_number(json_object_get(first, "app_rtt_ms")))
                b.app = jnum(first, "app_rtt_ms");
            s = json_pack("{s:s,s:s,s:i,s:[]}", "strategy", label, "family",
                          jstr(run, "family", "-"), "hold_rtts", hold, "points");
            json_array_foreach(points, k, pt)
                json_array_append_new(json_object_get(s, "points"),
                    point_of(pt, run_of(pt, label), hold, instances, &b));
            json_array_append_new(series, s);
        }
    json_decref(seen);
    return series;
}

static int by_rate(const void *a, const void *b)
{
    double x = jnum(*(json_t *const *)a, "sold_per_s"), y = jnum(*(json_t *const *)b, "sold_per_s");

    return (x < y) - (x > y);
}

/* Each point's strategies, fastest first. */
static json_t *build_ranking(const json_t *points)
{
    json_t *ranking = json_array();
    const json_t *pt;
    size_t i, j, n;

    json_array_foreach(points, i, pt) {
        const json_t *runs = json_object_get(json_object_get(pt, "results"), "runs");
        json_t **v, *order = json_array();

        n = json_array_size(runs);
        v = calloc(n ? n : 1, sizeof *v);
        if (v == NULL)
            die("rtt: out of memory");
        for (j = 0; j < n; j++)
            v[j] = json_array_get(runs, j);
        qsort(v, n, sizeof *v, by_rate);
        for (j = 0; j < n; j++) {
            char label[64];
            json_array_append_new(order, json_string(run_label(v[j], label, sizeof label)));
        }
        free(v);
        json_array_append_new(ranking, json_pack("{s:f,s:o}", "rtt_ms", jnum(pt, "rtt_ms"),
                                                 "order", order));
    }
    return ranking;
}

static json_t *build_rtt(const char *dir)
{
    char *p = path_join(dir, "rtt.env");
    json_t *env = load_env(p), *points = read_points(dir), *holds = read_holds(dir);
    json_t *first = json_object_get(json_array_get(points, 0), "results"), *values = json_array();
    json_t *delay = json_array(), *rtt, *pt;
    long long instances = jint(json_object_get(first, "settings"), "instances");
    size_t i;

    free(p);
    json_array_foreach(points, i, pt) {
        json_array_append_new(values, json_real(jnum(pt, "rtt_ms")));
        json_array_append_new(delay, json_pack("{s:f,s:O}", "rtt_ms", jnum(pt, "rtt_ms"),
                                               "delay", json_object_get(pt, "delay")));
    }
    rtt = json_pack("{s:i,s:s,s:s,s:O,s:O,s:I,s:o,s:o,s:o,s:o}", "version", 1,
        "tool", "locklab bench/compare --rtt", "started", jstr(env, "started", "?"),
        "settings", json_object_get(first, "settings"), "machine", json_object_get(first, "machine"),
        "instances", (json_int_t)instances, "values", values,
        "strategies", build_series(points, holds, instances), "ranking", build_ranking(points),
        "delay", delay);
    json_array_foreach(points, i, pt) {
        json_object_del((json_t *)pt, "results");
        json_object_del((json_t *)pt, "delay");
    }
    json_object_set_new(rtt, "points", points);
    json_decref(env);
    json_decref(holds);
    return rtt;
}

/* ---------------------------------------------------------------- tables */

#define RTT_COLS (1 + 3 * RTT_MAX)

static const char rate_note[] =
    "Each round trip R a whole run of bench/compare: every packet between an instance and a "
    "backend, and between ensemble members, waits R/2 each way (ll-delay). sold/s is the "
    "instances' count over the load's time, # its rank at that R, p99 the client's, in ms.";

static const char hold_note[] =
    "The mean time a purchase held its lock (acquired to released, as the holder times it: "
    "the grant's answer and the release's request take half a round trip each, so this is the "
    "hold as the lock service sees it too), in round trips of R and in ms, and the share of "
    "the run some purchase held it; the rest of the time the lock was idle between holders. "
    "sold/s = share / hold. Strategies that sell in one statement hold no lock of their own.";

static const char model_note[] =
    "k: the round trips between two sales of the hot item that the strategy's table counts "
    "(locks/lock.h hold_rtts; /N: per instance, N instances). model: 1 / (k × R), the most "
    "the item sells when the network is all that counts; sold/model: how far apart. "
    "+loop: the model with the time a sale takes at 0 ms added to each cycle, "
    "1 / (k × R + 1 / sold/s at 0 ms). app +ms: how much longer a Redis PING from an "
    "instance took than at 0 ms (the wire's R and a wake-up at each end); +app: +loop with "
    "that in place of R. hold and share as above: the measured hold against k and the lock's "
    "idle share explain what remains. trip ms: what one round trip inside the hold cost, "
    "(hold − hold at 0 ms) / (k − 1), the wire's R and the wake-ups; +hold: +loop with that "
    "in place of R.";

static const char measured_note[] =
    "Before each point ran, every instance timed its own round trip to each backend on the "
    "connections it sells with (app/rtt.c: SELECT 1 on a worker slot's MariaDB connection, "
    "PING on each Redis server's shared one, exists on its ZooKeeper session; the least of 5 "
    "a second apart), and compare refused a point where MariaDB's or a Redis server's was more "
    "than 0.1 ms from what was asked. Each cell: the least and the largest of the instances' "
    "leasts, ms. ZooKeeper's adds its client's hand-offs between threads: not judged.";

static const char delay_note[] =
    "ll-delay's own cost over each point (its warm-ups, the HTTP tier and every run): the "
    "packets it held and let go, per second, its CPU time per packet (including the kernel's "
    "work on each packet it lets go, done in its verdict call), its share of one CPU, and "
    "how late it let packets go (mean, p99, µs).";

static void fmt_ms(char *buf, size_t n, double ms)
{
    snprintf(buf, n, "%g ms", ms);
}

static void fmt_num(char *buf, size_t n, const json_t *v, const char *fmt)
{
    if (json_is_number(v))
        snprintf(buf, n, fmt, json_number_value(v));
    else
        snprintf(buf, n, "-");
}

/* The head of a table with a pair of columns per round trip (those above 0
 * only, with `nonzero`): names and widths from column 1 on, the column of
 * each round trip in col[] (-1: none). Returns the number of columns. */
static int pair_head(const json_t *values, int nonzero, const char *first, int w1,
                     const char *second, int w2, char names[][48], int *widths, int *col)
{
    size_t i;
    int n = 1;

    snprintf(names[0], 48, "strategy");
    widths[0] = 26;
    for (i = 0; i < json_array_size(values); i++) {
        double r = json_number_value(json_array_get(values, i));
        col[i] = -1;
        if (nonzero && r <= 0)
            continue;
        col[i] = n;
        snprintf(names[n], 48, "%g ms %s", r, first);
        snprintf(names[n + 1], 48, "%s", second);
        widths[n] = w1;
        widths[n + 1] = w2;
        n += 2;
    }
    return n;
}

/* One table of pairs: fill(point, first cell, second cell) for each
 * strategy at each round trip the head has a column for. */
static void print_pairs(FILE *f, const json_t *rtt, enum fmt fmt, int nonzero,
                        const char *first, int w1, const char *second, int w2,
                        void (*fill)(const json_t *pt, char *a, char *b, size_t n))
{
    const json_t *values = json_object_get(rtt, "values"), *s, *pt;
    char names_b[RTT_COLS][48], v[RTT_COLS][48];
    const char *names[RTT_COLS], *cv[RTT_COLS];
    int widths[RTT_COLS], col[RTT_MAX], n, c;
    struct table t = { f, fmt, 0, names, widths };
    size_t i, j;

    n = pair_head(values, nonzero, first, w1, second, w2, names_b, widths, col);
    for (c = 0; c < n; c++)
        names[c] = names_b[c], cv[c] = v[c];
    t.n = n;
    table_head(&t);
    json_array_foreach(json_object_get(rtt, "strategies"), i, s) {
        snprintf(v[0], sizeof v[0], "%s", jstr(s, "strategy", "?"));
        json_array_foreach(json_object_get(s, "points"), j, pt)
            if (j < RTT_MAX && col[j] >= 0)
                fill(pt, v[col[j]], v[col[j] + 1], sizeof v[0]);
        table_row(&t, cv);
    }
    table_end(&t);
}

static void fill_rate(const json_t *pt, char *a, char *b, size_t n)
{
    if (!json_is_number(json_object_get(pt, "sold_per_s"))) {
        snprintf(a, n, "-");
        snprintf(b, n, "-");
        return;
    }
    snprintf(a, n, "%.0f (#%lld)", jnum(pt, "sold_per_s"), jint(pt, "rank"));
    snprintf(b, n, "%.1f", jnum(pt, "p99_ms"));
}

static void fill_hold(const json_t *pt, char *a, char *b, size_t n)
{
    if (json_is_number(json_object_get(pt, "hold_rtts")))
        snprintf(a, n, "%.2f (%.2f)", jnum(pt, "hold_rtts"), jnum(pt, "hold_us") / 1e3);
    else
        snprintf(a, n, "-");
    fmt_num(b, n, json_object_get(pt, "held_share"), "%.2f");
}

static void print_rates(FILE *f, const json_t *rtt, enum fmt fmt)
{
    write_section(f, fmt, "sold/s and p99 at each round trip between hosts", rate_note);
    print_pairs(f, rtt, fmt, 0, "sold/s (#)", 19, "p99", 7, fill_rate);
}

static void print_holds(FILE *f, const json_t *rtt, enum fmt fmt)
{
    write_section(f, fmt, "the lock's hold, in round trips", hold_note);
    print_pairs(f, rtt, fmt, 1, "hold: R (ms)", 22, "share", 6, fill_hold);
}

static void print_model(FILE *f, const json_t *rtt, enum fmt fmt)
{
    static const char *const names[] = { "strategy", "R", "k", "sold/s", "model", "sold/model",
                                         "+loop", "sold/+loop", "app +ms", "+app", "sold/+app",
                                         "hold R", "share", "trip ms", "+hold", "sold/+hold" };
    static const int widths[] = { 20, 7, 5, 8, 8, 10, 8, 10, 8, 8, 9, 7, 6, 7, 6, 10 };
    enum { NCOL = sizeof widths / sizeof widths[0] };
    const struct table t = { f, fmt, NCOL, names, widths };
    const json_t *s, *pt;
    char v[NCOL][40];
    const char *cv[NCOL];
    size_t i, j;
    int c;

    for (c = 0; c < NCOL; c++)
        cv[c] = v[c];
    write_section(f, fmt, "the model beside the measured ceiling", model_note);
    table_head(&t);
    json_array_foreach(json_object_get(rtt, "strategies"), i, s) {
        int k = (int)jint(s, "hold_rtts");
        if (k == 0)
            continue;
        json_array_foreach(json_object_get(s, "points"), j, pt) {
            if (jnum(pt, "rtt_ms") <= 0 || !json_is_number(json_object_get(pt, "sold_per_s")))
                continue;
            snprintf(v[0], sizeof v[0], "%s", jstr(s, "strategy", "?"));
            fmt_ms(v[1], sizeof v[1], jnum(pt, "rtt_ms"));
            if (k > 0)
                snprintf(v[2], sizeof v[2], "%d", k);
            else
                snprintf(v[2], sizeof v[2], "%d/%lld", -k, jint(rtt, "instances"));
            snprintf(v[3], sizeof v[3], "%.0f", jnum(pt, "sold_per_s"));
            fmt_num(v[4], sizeof v[4], json_object_get(pt, "model_per_s"), "%.0f");
            fmt_num(v[5], sizeof v[5], json_object_get(pt, "model_ratio"), "%.2f");
            fmt_num(v[6], sizeof v[6], json_object_get(pt, "model_loopback_per_s"), "%.0f");
            fmt_num(v[7], sizeof v[7], json_object_get(pt, "model_loopback_ratio"), "%.2f");
            fmt_num(v[8], sizeof v[8], json_object_get(pt, "app_rtt_added_ms"), "%.2f");
            fmt_num(v[9], sizeof v[9], json_object_get(pt, "model_app_per_s"), "%.0f");
            fmt_num(v[10], sizeof v[10], json_object_get(pt, "model_app_ratio"), "%.2f");
            fmt_num(v[11], sizeof v[11], json_object_get(pt, "hold_rtts"), "%.2f");
            fmt_num(v[12], sizeof v[12], json_object_get(pt, "held_share"), "%.2f");
            fmt_num(v[13], sizeof v[13], json_object_get(pt, "rtt_in_hold_ms"), "%.2f");
            fmt_num(v[14], sizeof v[14], json_object_get(pt, "model_hold_per_s"), "%.0f");
            fmt_num(v[15], sizeof v[15], json_object_get(pt, "model_hold_ratio"), "%.2f");
            table_row(&t, cv);
        }
    }
    table_end(&t);
}

static void print_ranking(FILE *f, const json_t *rtt, enum fmt fmt)
{
    static const char *const names[] = { "R", "fastest first" };
    static const int widths[] = { 8, 10 };
    const struct table t = { f, fmt, 2, names, widths };
    const json_t *r, *name;
    char v[2][1024];
    const char *cv[2] = { v[0], v[1] };
    size_t i, j;

    write_section(f, fmt, "the ranking at each round trip",
                  "The strategies by sold/s at each R, the first ten.");
    table_head(&t);
    json_array_foreach(json_object_get(rtt, "ranking"), i, r) {
        size_t used = 0;
        fmt_ms(v[0], sizeof v[0], jnum(r, "rtt_ms"));
        v[1][0] = '\0';
        json_array_foreach(json_object_get(r, "order"), j, name) {
            if (j == 10)
                break;
            used += (size_t)snprintf(v[1] + used, used < sizeof v[1] ? sizeof v[1] - used : 0,
                                     "%s%zu. %s", j ? ", " : "", j + 1, json_string_value(name));
            if (used >= sizeof v[1])
                break;
        }
        table_row(&t, cv);
    }
    table_end(&t);
}

static void print_delay(FILE *f, const json_t *rtt, enum fmt fmt)
{
    static const char *const names[] = { "R", "packets", "packets/s", "CPU us/packet",
                                         "of a CPU", "late mean us", "late p99 us" };
    static const int widths[] = { 8, 9, 9, 13, 8, 12, 11 };
    const struct table t = { f, fmt, 7, names, widths };
    const json_t *d, *o;
    char v[7][32];
    const char *cv[7];
    size_t i;
    int c;

    for (c = 0; c < 7; c++)
        cv[c] = v[c];
    write_section(f, fmt, "the delay's own cost", delay_note);
    table_head(&t);
    json_array_foreach(json_object_get(rtt, "delay"), i, d) {
        fmt_ms(v[0], sizeof v[0], jnum(d, "rtt_ms"));
        o = json_object_get(d, "delay");
        if (!json_is_object(o)) {
            for (c = 1; c < 7; c++)
                snprintf(v[c], sizeof v[c], "-");
        } else {
            snprintf(v[1], sizeof v[1], "%.0f", jnum(o, "packets"));
            snprintf(v[2], sizeof v[2], "%.0f", jnum(o, "packets_per_s"));
            snprintf(v[3], sizeof v[3], "%.1f", jnum(o, "cpu_us_per_packet"));
            snprintf(v[4], sizeof v[4], "%.0f %%", 100 * jnum(o, "cpu_share"));
            snprintf(v[5], sizeof v[5], "%.1f", jnum(o, "late_us_mean"));
            snprintf(v[6], sizeof v[6], "%.1f", jnum(o, "late_us_p99"));
        }
        table_row(&t, cv);
    }
    table_end(&t);
}

/* The round trip asked and measured at each point (measured_note). */
static void print_measured(FILE *f, const json_t *rtt, enum fmt fmt)
{
    static const char *const names[] = { "R asked", "mysql", "redis", "zookeeper" };
    static const int widths[] = { 8, 14, 14, 14 };
    const struct table t = { f, fmt, 4, names, widths };
    const json_t *pt;
    char v[4][48];
    const char *cv[4];
    size_t i, any = 0;
    int c;

    json_array_foreach(json_object_get(rtt, "points"), i, pt)
        any += json_object_size(json_object_get(pt, "measured"));
    if (any == 0)
        return;
    for (c = 0; c < 4; c++)
        cv[c] = v[c];
    write_section(f, fmt, "the round trip, asked and measured", measured_note);
    table_head(&t);
    json_array_foreach(json_object_get(rtt, "points"), i, pt) {
        const json_t *m = json_object_get(pt, "measured");
        fmt_ms(v[0], sizeof v[0], jnum(pt, "rtt_ms"));
        for (c = 1; c < 4; c++) {
            const json_t *b = json_object_get(m, names[c]);
            if (b == NULL)
                snprintf(v[c], sizeof v[c], "-");
            else if (jnum(b, "lo") == jnum(b, "hi"))
                snprintf(v[c], sizeof v[c], "%.3f", jnum(b, "lo"));
            else
                snprintf(v[c], sizeof v[c], "%.3f-%.3f", jnum(b, "lo"), jnum(b, "hi"));
        }
        table_row(&t, cv);
    }
    table_end(&t);
}

static void print_all(FILE *f, const json_t *rtt, enum fmt fmt)
{
    print_measured(f, rtt, fmt);
    print_rates(f, rtt, fmt);
    print_ranking(f, rtt, fmt);
    print_holds(f, rtt, fmt);
    print_model(f, rtt, fmt);
    print_delay(f, rtt, fmt);
}

/* ---------------------------------------------------------------- one run's */

/* A comparison on a stack with a round trip between hosts (settings
 * rtt_ms, bench/compare from the topology): the one asked, and what the
 * instances measured on the connections they sold with, from the /stats
 * each one gave at the end of each run (app/rtt.c: the least of its last
 * 10 samples, taken under the run's load), per backend the least and the
 * largest; a note when MariaDB's or Redis's is more than 0.1 ms away. */
void print_run_rtt(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const backends[] = { "mysql", "redis", "zookeeper" };
    const json_t *settings = json_object_get(res, "settings"), *run, *inst, *b;
    double asked, lo[3] = { -1, -1, -1 }, hi[3] = { -1, -1, -1 };
    size_t i, j, k, c;
    int off = 0;

    if (json_object_get(settings, "rtt_ms") == NULL)
        return;
    asked = jnum(settings, "rtt_ms");
    json_array_foreach(json_object_get(res, "runs"), i, run)
        json_array_foreach(json_object_get(run, "instances"), j, inst)
            json_array_foreach(json_object_get(json_object_get(inst, "rtt"), "backends"), k, b)
                for (c = 0; c < 3; c++) {
                    double v = jnum(b, "min_ms");
                    if (strcmp(jstr(b, "backend", ""), backends[c]) || !json_object_get(b, "min_ms"))
                        continue;
                    lo[c] = lo[c] < 0 || v < lo[c] ? v : lo[c];
                    hi[c] = v > hi[c] ? v : hi[c];
                    off |= c < 2 && fabs(v - asked) > 0.1;
                }
    write_note_open(f, fmt);
    fprintf(f, "Round trip between hosts: %g ms asked (bench/stack rtt); the instances measured, "
            "on the connections they sold with, at the end of each run:", asked);
    for (c = 0; c < 3; c++)
        if (lo[c] >= 0)
            fprintf(f, " %s %.3f%s%.3f ms%s", backends[c], lo[c], "-", hi[c], c < 2 ? "," : "");
    fprintf(f, " (the least of each one's last 10 samples, app/rtt.c; ZooKeeper's adds its "
            "client's hand-offs).%s", off ? " MariaDB's or Redis's is more than 0.1 ms from what "
            "was asked: these runs may not have crossed the round trip they are named by." : "");
    write_note_close(f, fmt);
}

/* ---------------------------------------------------------------- reports */

static void write_rtt_md(FILE *f, const json_t *rtt)
{
    const json_t *settings = json_object_get(rtt, "settings");

    fprintf(f, "# locklab — which lock wins at which round trip\n\nStarted %s; scenario %s, "
            "%s s of load per strategy and round trip, %s connections, %lld instances.\n\n",
            jstr(rtt, "started", "?"), jstr(settings, "scenario", "?"),
            jstr(settings, "duration_s", "?"), jstr(settings, "connections", "?"),
            jint(rtt, "instances"));
    print_all(f, rtt, FMT_MD);
}

static void write_rtt_html(FILE *f, const json_t *rtt)
{
    const json_t *settings = json_object_get(rtt, "settings"), *pt;
    size_t i;

    html_page_open(f, "locklab: round trips", 1300);
    fprintf(f, "<h1>locklab: which lock wins at which round trip</h1>\n<p>Started ");
    html_text(f, jstr(rtt, "started", "?"));
    fprintf(f, "; scenario ");
    html_text(f, jstr(settings, "scenario", "?"));
    fprintf(f, ", %s s of load per strategy and round trip, %s connections, %lld instances."
            "</p>\n", jstr(settings, "duration_s", "?"), jstr(settings, "connections", "?"),
            jint(rtt, "instances"));
    print_all(f, rtt, FMT_HTML);
    fprintf(f, "<p>Each point's own report:");
    json_array_foreach(json_object_get(rtt, "points"), i, pt) {
        fprintf(f, " <a href=\"");
        html_text(f, jstr(pt, "run", ""));
        fprintf(f, "/report.html\">%g ms</a>", jnum(pt, "rtt_ms"));
    }
    fprintf(f, ".</p>\n");
    html_page_close(f);
}

int cmd_rtt(const char *dir)
{
    json_t *rtt = build_rtt(dir);

    write_docs(dir, "rtt", rtt, write_rtt_md, write_rtt_html);
    print_all(stdout, rtt, FMT_TEXT);
    json_decref(rtt);
    return 0;
}
