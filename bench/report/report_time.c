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

void print_time(FILE *f, const json_t *runs, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "seconds", "sold/s low", "median", "high", "p50 ms", "p90", "p99",
        "p99.9", "max",
    };
    static const double q[] = { 0.5, 0.9, 0.99, 0.999, 1 };
    static const int widths[] = { 24, 7, 10, 8, 8, 8, 8, 8, 8, 8 };
    char v[10][32];
    const char *cv[10];
    const json_t *run;
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
            section(f, fmt, "over time and by percentile", time_note);
            head(f, fmt, names, widths, 10);
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
        cells(f, fmt, cv, widths, 10);
    }
    if (any)
        table_end(f, fmt);
}

/* The plot area of every chart here, inside its margins. */
enum { CH_W = 420, CH_H = 180, CH_L = 58, CH_R = 28, CH_T = 12, CH_B = 36 };
#define PLOT_W ((double)(CH_W - CH_L - CH_R))
#define PLOT_H ((double)(CH_H - CH_T - CH_B))

static void chart_open(FILE *f, const char *kind, size_t points, const char *label,
                       const char *caption)
{
    fprintf(f, "<figure style=\"margin:0;width:%dpx\"><figcaption>", CH_W);
    html_text(f, label);
    fprintf(f, ": %s</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\" "
            "data-chart=\"%s\" data-points=\"%zu\">\n", caption, CH_W, CH_H, kind, points);
    fprintf(f, "<path d=\"M%d %d V%d H%d\" stroke=\"#888\" fill=\"none\"/>\n", CH_L, CH_T,
            CH_H - CH_B, CH_W - CH_R);
}

static void chart_close(FILE *f)
{
    fprintf(f, "</svg></figure>\n");
}

/* A y-axis label at value v of max. */
static void y_label(FILE *f, double v, double max, const char *fmt_s)
{
    double y = CH_T + PLOT_H - v / max * PLOT_H;
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", CH_L - 4, y + 4);
    fprintf(f, fmt_s, v);
    fprintf(f, "</text><path d=\"M%d %.1f h4\" stroke=\"#888\"/>\n", CH_L - 2, y);
}

static void x_label(FILE *f, double x, const char *text)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", CH_L + x,
            CH_H - CH_B + 14, text);
}

/* Answers and sales per second, one bar pair per bucket. */
static void svg_timeline(FILE *f, const json_t *run, const char *label)
{
    const json_t *tl = json_object_get(run, "timeline");
    size_t n = json_array_size(json_object_get(tl, "end_s")), i;
    double max = 0, total, b, e, a, s;
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
    chart_open(f, "timeline", n, label, !strcmp(jstr(tl, "source", ""), "server")
               ? "purchases finished and sold per second (the instances' /stats, polled)"
               : "answers and sales per second (the load tool's)");
    for (i = 0; i < n; i++) {
        double x, w;
        bucket_rates(tl, i, &b, &e, &a, &s);
        x = CH_L + b / total * PLOT_W;
        w = (e - b) / total * PLOT_W;
        fprintf(f, "<g class=\"mark\"><title>%.1f–%.1f s: %.0f answers/s, %.0f sold/s</title>"
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#cccccc\"/>"
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#3366cc\"/></g>\n",
                b, e, a, s, x + 0.5, CH_T + PLOT_H - a / max * PLOT_H, w > 2 ? w - 1 : w,
                a / max * PLOT_H, x + 0.5, CH_T + PLOT_H - s / max * PLOT_H,
                w > 2 ? w - 1 : w, s / max * PLOT_H);
    }
    y_label(f, 0, max, "%.0f");
    y_label(f, max, max, "%.0f/s");
    x_label(f, 0, "0");
    snprintf(text, sizeof text, "%.1f s", total);
    x_label(f, PLOT_W, text);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"#3366cc\"/>"
            "<text x=\"%d\" y=\"%d\">sold</text><rect x=\"%d\" y=\"%d\" width=\"10\" "
            "height=\"10\" fill=\"#cccccc\"/><text x=\"%d\" y=\"%d\">answered</text>\n",
            CH_L + 70, CH_H - 14, CH_L + 84, CH_H - 5, CH_L + 130, CH_H - 14, CH_L + 144,
            CH_H - 5);
    chart_close(f);
}

/* x of quantile q on the percentile chart: log10(1 / (1 − q)), the tail
 * cut at TAIL_DECADES (the maximum sits there too). */
static double q_x(double q)
{
    double d = q >= 1 ? TAIL_DECADES : log10(1.0 / (1.0 - q));
    return (d > TAIL_DECADES ? TAIL_DECADES : d) / TAIL_DECADES * PLOT_W;
}

/* Latency by percentile: one line through the load tool's quantiles. */
static void svg_percentiles(FILE *f, const json_t *run, const char *label)
{
    static const char *const ticks[] = { "0%", "90%", "99%", "99.9%", "99.99%", "99.999%" };
    const json_t *pct = json_object_get(run, "lat_percentiles"), *pair;
    size_t n = json_array_size(pct), i;
    double max = 0;

    if (n == 0)
        return;
    json_array_foreach(pct, i, pair)
        if (json_number_value(json_array_get(pair, 1)) > max)
            max = json_number_value(json_array_get(pair, 1));
    if (max <= 0)
        max = 1;
    chart_open(f, "percentiles", n, label, "latency by percentile, ms (the load tool's)");
    fprintf(f, "<polyline fill=\"none\" stroke=\"#cc3333\" stroke-width=\"1.5\" points=\"");
    json_array_foreach(pct, i, pair)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", CH_L + q_x(json_number_value(json_array_get(pair, 0))),
                CH_T + PLOT_H - json_number_value(json_array_get(pair, 1)) / max * PLOT_H);
    fprintf(f, "\"/>\n");
    json_array_foreach(pct, i, pair) {
        double q = json_number_value(json_array_get(pair, 0));
        double ms = json_number_value(json_array_get(pair, 1));
        fprintf(f, "<circle class=\"mark\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"#cc3333\">"
                "<title>%s%g: "
                "%.3f ms</title></circle>\n", CH_L + q_x(q), CH_T + PLOT_H - ms / max * PLOT_H,
                q >= 1 ? "max, q = " : "q = ", q, ms);
    }
    for (i = 0; i < sizeof ticks / sizeof ticks[0]; i++)
        x_label(f, (double)i / TAIL_DECADES * PLOT_W, ticks[i]);
    y_label(f, 0, max, "%.0f");
    y_label(f, max, max, max >= 10 ? "%.0f ms" : "%.2f ms");
    chart_close(f);
}

void html_time(FILE *f, const json_t *runs)
{
    const json_t *run;
    size_t i;
    int any = 0;

    json_array_foreach(runs, i, run)
        any |= json_array_size(json_object_get(json_object_get(run, "timeline"), "end_s")) > 0 ||
               json_array_size(json_object_get(run, "lat_percentiles")) > 0;
    if (!any)
        return;
    print_time(f, runs, FMT_HTML);
    json_array_foreach(runs, i, run) {
        char label[48];
        run_label(run, label, sizeof label);
        fprintf(f, "<div style=\"display:flex;flex-wrap:wrap;gap:16px;margin:1em 0\">\n");
        svg_timeline(f, run, label);
        svg_percentiles(f, run, label);
        fprintf(f, "</div>\n");
    }
}
