/* report_time.c — a run over time and by percentile: what each second of
 * it sold and answered, and the latency its answers saw at each quantile.
 *
 * Where the seconds come from. ll-load counts them itself: --json's
 * per_second holds the answers, 200s and transport errors of each second
 * of the run, by the second a request ended in (bench/load/load.c). wrk cannot
 * (bench/load/wrk-count.lua says why), so for a wrk run bench/compare polls the
 * instances' /stats about once a second, `ll-report sample` adds up the
 * strategy's counters of every instance, and raw/NN.series.tsv keeps one
 * line "T REQUESTS SOLD" per poll (T: seconds since the load began; the
 * last line is read once nothing is in flight, so it holds the run's whole
 * count). Either way a run's `timeline` in results.json is a list of
 * buckets, each ending at end_s[i] and beginning where the one before
 * ended (the first at 0): answers, sold and, from ll-load, errors. A first
 * or last bucket shorter than half a second (the requests still in flight
 * when a duration ended, a poll that came early) joins its neighbour, so
 * that no sliver of a second shows a rate it never had. The buckets add up to the run's counts:
 * ll-load's answers, 200s and transport errors, or the instances'
 * purchases and sales; `ll-report check` says so.
 *
 * The latency distribution is the load tool's own: `lat_percentiles`, the
 * latency at a fixed list of quantiles (ll-load's histogram or wrk's),
 * drawn as a latency-by-percentile chart whose x axis spreads the tail:
 * x = log10(1 / (1 − q)), so 90 %, 99 %, 99.9 % … are evenly spaced.
 *
 * The page gets a pair of inline SVG charts per run, each <svg> marked
 * data-chart="timeline" or "percentiles" and data-points="N" (the points
 * it drew, each of class "mark"), so that a test can tell from the DOM
 * that every chart has data.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE            /* under -std=c11: getline */
#endif

#include "report_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BUCKET_S 0.5           /* a shorter last bucket joins the one before */
#define TAIL_DECADES 5.0           /* the percentile chart ends at 99.999 %    */

/* ---------------------------------------------------------------- sample */

/* ll-report sample NAME: the /stats answers on stdin, one a line (curl -w
 * '\n'), NAME's purchases and sales added up over them: "REQUESTS SOLD". */
int cmd_sample(const char *name)
{
    char *line = NULL;
    size_t cap = 0;
    long long requests = 0, sold = 0;

    while (getline(&line, &cap, stdin) > 0) {
        json_error_t e;
        json_t *st = json_loads(line, 0, &e), *s;

        if (st == NULL) {
            if (strspn(line, " \t\r\n") == strlen(line))
                continue;
            die("sample: a /stats answer that is not JSON: %s", e.text);
        }
        s = json_object_get(json_object_get(st, "strategies"), name);
        requests += jint(s, "requests");
        sold += jint(s, "sold");
        json_decref(st);
    }
    free(line);
    printf("%lld %lld\n", requests, sold);
    return 0;
}

/* ---------------------------------------------------------------- derived */

/* Append a bucket; a bucket of no width is dropped (two polls at once). */
static void bucket_add(json_t *tl, double end, long long answers, long long sold,
                       long long errors)
{
    json_t *ends = json_object_get(tl, "end_s");
    size_t n = json_array_size(ends);
    double begin = n ? json_real_value(json_array_get(ends, n - 1)) : 0.0;

    if (end <= begin)
        return;
    json_array_append_new(ends, json_real(end));
    json_array_append_new(json_object_get(tl, "answers"), json_integer(answers));
    json_array_append_new(json_object_get(tl, "sold"), json_integer(sold));
    if (errors >= 0)
        json_array_append_new(json_object_get(tl, "errors"), json_integer(errors));
}

/* Buckets i and i + 1 become one, ending where i + 1 ended. */
static void bucket_join(json_t *tl, size_t i)
{
    static const char *const keys[] = { "answers", "sold", "errors" };
    json_t *ends = json_object_get(tl, "end_s");
    size_t n = json_array_size(ends), k;

    json_array_remove(ends, i);
    for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *a = json_object_get(tl, keys[k]);
        if (json_array_size(a) != n)
            continue;
        json_array_set_new(a, i + 1, json_integer(json_integer_value(json_array_get(a, i)) +
                                                  json_integer_value(json_array_get(a, i + 1))));
        json_array_remove(a, i);
    }
}

/* A first or last bucket that is a sliver joins its neighbour. */
static void merge_slivers(json_t *tl)
{
    json_t *ends = json_object_get(tl, "end_s");
    size_t n = json_array_size(ends);

    if (n >= 2 && json_real_value(json_array_get(ends, n - 1)) -
                  json_real_value(json_array_get(ends, n - 2)) < MIN_BUCKET_S)
        bucket_join(tl, --n - 1);
    if (n >= 2 && json_real_value(json_array_get(ends, 0)) < MIN_BUCKET_S)
        bucket_join(tl, 0);
}

static json_t *timeline_new(const char *source, int with_errors)
{
    json_t *tl = json_pack("{s:s,s:[],s:[],s:[]}", "source", source, "end_s", "answers", "sold");
    if (with_errors)
        json_object_set_new(tl, "errors", json_array());
    return tl;
}

/* ll-load's per_second: second i ends at i + 1, the last at the run's end. */
static json_t *timeline_client(const json_t *load)
{
    const json_t *ps = json_object_get(load, "per_second");
    const json_t *a = json_object_get(ps, "answers"), *s = json_object_get(ps, "sold");
    const json_t *e = json_object_get(ps, "errors");
    size_t n = json_array_size(a), i;
    double elapsed = jnum(load, "elapsed_s");
    json_t *tl;

    if (n == 0 || json_array_size(s) != n || json_array_size(e) != n)
        return NULL;
    tl = timeline_new("client", 1);
    for (i = 0; i < n; i++) {
        double end = (double)(i + 1);
        if (i == n - 1 && elapsed > (double)i)
            end = elapsed;
        bucket_add(tl, end, (long long)json_integer_value(json_array_get(a, i)),
                   (long long)json_integer_value(json_array_get(s, i)),
                   (long long)json_integer_value(json_array_get(e, i)));
    }
    merge_slivers(tl);
    return tl;
}

/* compare's polls of /stats: the growth of the counts between two polls. */
static json_t *timeline_server(const char *series)
{
    FILE *f = fopen(series, "r");
    double t, t0 = 0;
    long long req, sold, req0 = 0, sold0 = 0;
    json_t *tl;

    if (f == NULL)
        return NULL;
    tl = timeline_new("server", 0);
    while (fscanf(f, "%lf %lld %lld", &t, &req, &sold) == 3) {
        if (t <= t0)            /* no time passed: its counts go to the next bucket */
            continue;
        bucket_add(tl, t, req - req0, sold - sold0, -1);
        t0 = t;
        req0 = req;
        sold0 = sold;
    }
    fclose(f);
    if (json_array_size(json_object_get(tl, "end_s")) == 0) {
        json_decref(tl);
        return NULL;
    }
    merge_slivers(tl);
    return tl;
}

void derive_time(json_t *run, const char *raw, const char *idx, const json_t *load)
{
    char name[64], *p;
    json_t *tl, *pct = json_object_get(load, "lat_percentiles");

    snprintf(name, sizeof name, "%s.series.tsv", idx);
    p = path_join(raw, name);
    tl = timeline_client(load);
    if (tl == NULL)
        tl = timeline_server(p);
    free(p);
    json_object_set_new(run, "timeline", tl ? tl : json_null());
    json_object_set(run, "lat_percentiles", json_is_array(pct) ? pct : json_null());
}

/* ---------------------------------------------------------------- check */

static long long sum_of(const json_t *a)
{
    long long n = 0;
    const json_t *v;
    size_t i;

    json_array_foreach(a, i, v)
        n += (long long)json_integer_value(v);
    return n;
}

int check_time(const json_t *res, const char *path)
{
    const json_t *run;
    size_t i, k;
    int bad = 0;

#define EXPECT(cond, ...) do { if (!(cond)) { bad++; \
        fprintf(stderr, "ll-report check: %s: ", path); fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); } } while (0)
    json_array_foreach(json_object_get(res, "runs"), i, run) {
        const char *name = jstr(run, "strategy", "?");
        const json_t *tl = json_object_get(run, "timeline"), *pair;
        const json_t *load = json_object_get(run, "load"), *srv = json_object_get(run, "server");
        double prev = 0, prev_ms = 0, prev_q = -1;

        if (json_is_object(tl)) {
            const json_t *ends = json_object_get(tl, "end_s");
            int client = !strcmp(jstr(tl, "source", ""), "client");
            long long answers = client ? jint(load, "responses") : jint(srv, "requests");
            long long sold = client ? jint(json_object_get(load, "status"), "200")
                                    : jint(srv, "sold");

            EXPECT(json_array_size(ends) > 0, "%s: a timeline without buckets", name);
            for (k = 0; k < json_array_size(ends); k++) {
                double end = json_number_value(json_array_get(ends, k));
                EXPECT(end > prev, "%s: bucket %zu ends at %.3f s, not after %.3f s", name, k,
                       end, prev);
                prev = end;
            }
            EXPECT(sum_of(json_object_get(tl, "answers")) == answers,
                   "%s: the buckets' answers add up to %lld, not %lld", name,
                   sum_of(json_object_get(tl, "answers")), answers);
            EXPECT(sum_of(json_object_get(tl, "sold")) == sold,
                   "%s: the buckets' sales add up to %lld, not %lld", name,
                   sum_of(json_object_get(tl, "sold")), sold);
            if (client)
                EXPECT(sum_of(json_object_get(tl, "errors")) == jint(load, "transport_errors"),
                       "%s: the buckets' transport errors do not add up", name);
        }
        json_array_foreach(json_object_get(run, "lat_percentiles"), k, pair) {
            double q = json_number_value(json_array_get(pair, 0));
            double ms = json_number_value(json_array_get(pair, 1));
            EXPECT(q > prev_q && q >= 0 && q <= 1, "%s: quantile %g out of order", name, q);
            EXPECT(ms >= prev_ms, "%s: latency falls from %.3f to %.3f ms at q = %g", name,
                   prev_ms, ms, q);
            prev_q = q;
            prev_ms = ms;
        }
    }
#undef EXPECT
    return bad;
}

/* ---------------------------------------------------------------- figures */

/* The latency at quantile q of a run's lat_percentiles, -1 without it. */
static double pct_at(const json_t *pairs, double q)
{
    const json_t *pair;
    size_t i;

    json_array_foreach(pairs, i, pair)
        if (fabs(json_number_value(json_array_get(pair, 0)) - q) < 1e-9)
            return json_number_value(json_array_get(pair, 1));
    return -1;
}

/* Bucket i's rates: its answers and sales per second of its width. */
static void bucket_rates(const json_t *tl, size_t i, double *begin, double *end,
                         double *answers, double *sold)
{
    const json_t *ends = json_object_get(tl, "end_s");
    double w;

    *begin = i ? json_number_value(json_array_get(ends, i - 1)) : 0.0;
    *end = json_number_value(json_array_get(ends, i));
    w = *end - *begin;
    *answers = (double)json_integer_value(json_array_get(json_object_get(tl, "answers"), i)) / w;
    *sold = (double)json_integer_value(json_array_get(json_object_get(tl, "sold"), i)) / w;
}

static int rate_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sold per second over the buckets: the lowest, the median, the highest. */
static void sold_spread(const json_t *tl, double out[3])
{
    size_t n = json_array_size(json_object_get(tl, "end_s")), i;
    double *r = calloc(n ? n : 1, sizeof *r), b, e, a;

    if (r == NULL)
        abort();                              /* out of memory */
    for (i = 0; i < n; i++)
        bucket_rates(tl, i, &b, &e, &a, &r[i]);
    qsort(r, n, sizeof *r, rate_cmp);
    out[0] = n ? r[0] : 0;
    out[1] = n ? r[n / 2] : 0;
    out[2] = n ? r[n - 1] : 0;
    free(r);
}

static const char time_note[] =
    "Each run second by second: what the load tool was answered (answers, and the 200s "
    "among them: sold) in each one-second bucket, or for a wrk run what the instances "
    "finished between two polls of their /stats about a second apart; and its latency by "
    "percentile, from the load tool's own histogram (the tail spread out: 90 %, 99 %, "
    "99.9 % … evenly spaced). A steady run has close lowest and highest seconds.";

static void svg_timeline(FILE *f, const json_t *run, const char *label);
static void svg_percentiles(FILE *f, const json_t *run, const char *label);

/* The table of every run's seconds and percentiles, and on the page each
 * run's pair of charts under it. */
void print_time(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "seconds", "sold/s low", "median", "high", "p50 ms", "p90", "p99",
        "p99.9", "max",
    };
    static const double q[] = { 0.5, 0.9, 0.99, 0.999, 1 };
    static const int widths[] = { 24, 7, 10, 8, 8, 8, 8, 8, 8, 8 };
    const struct table t = { f, fmt, 10, names, widths };
    const json_t *runs = json_object_get(res, "runs"), *run;
    char v[10][32];
    const char *cv[10];
    size_t i, k;
    int any = 0;

    for (k = 0; k < 10; k++)
        cv[k] = v[k];
    json_array_foreach(runs, i, run) {
        const json_t *tl = json_object_get(run, "timeline");
        const json_t *pct = json_object_get(run, "lat_percentiles");
        size_t n = json_array_size(json_object_get(tl, "end_s"));
        double spread[3];

        if (n == 0 && json_array_size(pct) == 0)
            continue;
        if (!any++) {
            write_section(f, fmt, "over time and by percentile", time_note);
            table_head(&t);
        }
        run_label(run, v[0], sizeof v[0]);
        sold_spread(tl, spread);
        snprintf(v[1], sizeof v[1], "%.1f",
                 json_number_value(json_array_get(json_object_get(tl, "end_s"), n - 1)));
        for (k = 0; k < 3; k++)
            snprintf(v[2 + k], sizeof v[2 + k], n ? "%.0f" : "-", spread[k]);
        for (k = 0; k < 5; k++) {
            double ms = pct_at(pct, q[k]);
            snprintf(v[5 + k], sizeof v[5 + k], ms < 0 ? "-" : "%.1f", ms);
        }
        table_row(&t, cv);
    }
    if (!any)
        return;
    table_end(&t);
    if (fmt != FMT_HTML)
        return;
    json_array_foreach(runs, i, run) {
        char label[48];
        run_label(run, label, sizeof label);
        fprintf(f, "<div style=\"display:flex;flex-wrap:wrap;gap:16px;margin:1em 0\">\n");
        svg_timeline(f, run, label);
        svg_percentiles(f, run, label);
        fprintf(f, "</div>\n");
    }
}

/* The frame of every chart here: 420 × 180, the plot inside its margins. */
static const struct svg_frame time_frame = {
    NULL, 420, 180, 58, 28, 12, 36, 11, "margin:0;width:420px",
};

/* A chart's frame, of its kind. */
static struct svg_frame frame_of(const char *kind)
{
    struct svg_frame fr = time_frame;

    fr.kind = kind;
    return fr;
}

/* Answers and sales per second, one bar pair per bucket. */
static void svg_timeline(FILE *f, const json_t *run, const char *label)
{
    const json_t *tl = json_object_get(run, "timeline");
    size_t n = json_array_size(json_object_get(tl, "end_s")), i;
    struct svg_frame fr = frame_of("timeline");
    double plot_w = fr.w - fr.l - fr.r, plot_h = fr.h - fr.t - fr.b, max = 0, total, b, e, a, s;
    char text[32];

    if (n == 0)
        return;
    for (i = 0; i < n; i++) {
        bucket_rates(tl, i, &b, &e, &a, &s);
        if (a > max)
            max = a;
    }
    total = e;
    if (max <= 0)
        max = 1;
    svg_open(f, &fr, n, "%s: %s", label, !strcmp(jstr(tl, "source", ""), "server")
             ? "purchases finished and sold per second (the instances' /stats, polled)"
             : "answers and sales per second (the load tool's)");
    svg_axes(f, &fr);
    for (i = 0; i < n; i++) {
        double x, w;
        bucket_rates(tl, i, &b, &e, &a, &s);
        x = svg_x(&fr, b / total);
        w = (e - b) / total * plot_w;
        svg_group_open(f, "%.1f–%.1f s: %.0f answers/s, %.0f sold/s", b, e, a, s);
        svg_rect(f, x + 0.5, svg_y(&fr, a, max), w > 2 ? w - 1 : w, a / max * plot_h, "#cccccc");
        svg_rect(f, x + 0.5, svg_y(&fr, s, max), w > 2 ? w - 1 : w, s / max * plot_h, "#3366cc");
        svg_group_close(f);
    }
    snprintf(text, sizeof text, "%.0f", 0.0);
    svg_tick_y(f, &fr, svg_y(&fr, 0, max), text);
    snprintf(text, sizeof text, "%.0f/s", max);
    svg_tick_y(f, &fr, svg_y(&fr, max, max), text);
    svg_tick_x(f, &fr, svg_x(&fr, 0), "0");
    snprintf(text, sizeof text, "%.1f s", total);
    svg_tick_x(f, &fr, svg_x(&fr, 1), text);
    svg_rect(f, fr.l + 70, fr.h - 14, 10, 10, "#3366cc");
    svg_text(f, fr.l + 84, fr.h - 5, NULL, "sold");
    svg_rect(f, fr.l + 130, fr.h - 14, 10, 10, "#cccccc");
    svg_text(f, fr.l + 144, fr.h - 5, NULL, "answered");
    svg_close(f);
}

/* x of quantile q on the percentile chart, a share of its width:
 * log10(1 / (1 − q)), the tail cut at TAIL_DECADES (the maximum sits
 * there too). */
static double q_share(double q)
{
    double d = q >= 1 ? TAIL_DECADES : log10(1.0 / (1.0 - q));
    return (d > TAIL_DECADES ? TAIL_DECADES : d) / TAIL_DECADES;
}

/* Latency by percentile: one line through the load tool's quantiles. */
static void svg_percentiles(FILE *f, const json_t *run, const char *label)
{
    static const char *const ticks[] = { "0%", "90%", "99%", "99.9%", "99.99%", "99.999%" };
    const json_t *pct = json_object_get(run, "lat_percentiles"), *pair;
    size_t n = json_array_size(pct), i;
    struct svg_frame fr = frame_of("percentiles");
    double max = 0, *x, *y;
    char text[32];

    if (n == 0)
        return;
    json_array_foreach(pct, i, pair)
        if (json_number_value(json_array_get(pair, 1)) > max)
            max = json_number_value(json_array_get(pair, 1));
    if (max <= 0)
        max = 1;
    x = calloc(n, sizeof *x);
    y = calloc(n, sizeof *y);
    if (x == NULL || y == NULL)
        abort();                              /* out of memory */
    json_array_foreach(pct, i, pair) {
        x[i] = svg_x(&fr, q_share(json_number_value(json_array_get(pair, 0))));
        y[i] = svg_y(&fr, json_number_value(json_array_get(pair, 1)), max);
    }
    svg_open(f, &fr, n, "%s: latency by percentile, ms (the load tool's)", label);
    svg_axes(f, &fr);
    svg_line(f, x, y, n, "#cc3333", 1.5, NULL);
    json_array_foreach(pct, i, pair) {
        double q = json_number_value(json_array_get(pair, 0));
        double ms = json_number_value(json_array_get(pair, 1));
        svg_dot(f, x[i], y[i], 2, "#cc3333", 1, "%s%g: %.3f ms", q >= 1 ? "max, q = " : "q = ",
                q, ms);
    }
    for (i = 0; i < sizeof ticks / sizeof ticks[0]; i++)
        svg_tick_x(f, &fr, svg_x(&fr, (double)i / TAIL_DECADES), ticks[i]);
    snprintf(text, sizeof text, "%.0f", 0.0);
    svg_tick_y(f, &fr, svg_y(&fr, 0, max), text);
    snprintf(text, sizeof text, max >= 10 ? "%.0f ms" : "%.2f ms", max);
    svg_tick_y(f, &fr, svg_y(&fr, max, max), text);
    free(x);
    free(y);
    svg_close(f);
}
