/* report_sweep.c — ll-report sweep RUN: a sweep's points into one figure.
 *
 * bench/compare --sweep PARAM=V1,V2,… (bench/lib/compare_sweep.sh) runs a
 * whole comparison at each value V of one setting, connections,
 * instances, buckets or threads, and leaves RUN/sweep.env (param, values,
 * started, the points' options) and RUN/points.tsv, one line
 * "V<TAB>DIR[<TAB>VARIANT]" per point, DIR the point's run (RUN/DIR/
 * results.json, built and checkable like any other) and VARIANT what else
 * the point set ("detect off": InnoDB's deadlock detection, compare
 * --deadlock-detect), a value having a point for each. This reads them
 * into RUN/sweep.json — per strategy and variant (a fenced run is a
 * strategy of its own, "+fence"; a variant's, "(detect off)"), its
 * sold/s, client p99, oversold and lost units, req/s and MariaDB's own
 * counters (below) at each V, null where a point has no such run, and the
 * HTTP tier's ceiling at each V (its first point's) — and writes
 * RUN/sweep.md, and RUN/sweep.html: the tables, and a line chart against
 * V for sold/s (the HTTP tier's ceiling dashed beside it), p99, oversold
 * and lost units and, when the points have the counters, the row lock
 * time a sale, one line per strategy and variant. V is on a log axis when
 * the values span a factor of 8 or more (1, 4, 16, 64, 256 evenly apart),
 * else a linear one. Each chart is an <svg data-chart="sweep"
 * data-points="N">, as in report.html: N dots of class "mark", the
 * strategies' (the HTTP tier's are not).
 *
 * MariaDB's counters: a sweep's runs keep SHOW GLOBAL STATUS before the
 * load and after the last purchase (raw/NN.innodb-before, -after, NN a
 * run's line of raw/runs.tsv); a point's row lock waits, their time (ms)
 * and deadlocks are the differences, and a sale's share of the first two
 * (the server's whole count: other products' purchases would count too,
 * and a run has none).
 *
 * The stories it is for: seed 000 §1.6.2 lowers the concurrency to show
 * its optimistic lock (version column, retried) recovering — the more
 * buyers race for the row, the more of them lose and retry; and the hot
 * row against the slots (threads): the seeds' FOR UPDATE from every
 * Tomcat thread, InnoDB's queue of waiters and its deadlock detection.
 */
#include "report_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_MAX 32                /* points of one sweep */

/* ---------------------------------------------------------------- reading */

/* The run labelled `label` among a point's runs, or NULL. */
static const json_t *point_run(const json_t *res, const char *label)
{
    const json_t *run;
    size_t i;

    json_array_foreach(json_object_get(res, "runs"), i, run) {
        char buf[64];
        if (!strcmp(run_label(run, buf, sizeof buf), label))
            return run;
    }
    return NULL;
}

/* A series' point: the run's numbers at value, and its MariaDB counters
 * (innodb, or NULL) with a sale's share of them. */
static json_t *point_of(const json_t *run, long long value, const json_t *innodb)
{
    const json_t *lat = json_object_get(run, "latency_ms");
    json_t *pt;
    long long sold;

    if (run == NULL)
        return json_pack("{s:I,s:n}", "value", (json_int_t)value, "sold_per_s");
    pt = json_pack("{s:I,s:f,s:f,s:f,s:O?,s:O?,s:O?,s:I,s:I,s:f,s:f,s:O?}",
                     "value", (json_int_t)value,
                     "sold_per_s", jnum(run, "sold_per_s"), "rps", jnum(run, "rps"),
                     "p99_ms", jnum(lat, "p99"),
                     "oversold", json_object_get(run, "oversold"),
                     "oversold_max", json_object_get(run, "oversold_max"),
                     "lost_updates", json_object_get(run, "lost_updates"),
                     "sold", (json_int_t)jint(run, "sold"),
                     "requests", (json_int_t)jint(run, "requests"),
                     "steady_sold_per_s", jnum(run, "steady_sold_per_s"),
                     "ceiling_rate", jnum(run, "ceiling_rate"),
                     "bound", json_object_get(run, "bound"));
    sold = jint(run, "sold");
    if (innodb != NULL) {
        json_t *copy = json_deep_copy(innodb);
        json_object_update(pt, copy);
        json_decref(copy);
        json_object_set_new(pt, "row_lock_waits_per_sale",
            sold > 0 ? json_real((double)jint(innodb, "row_lock_waits") / (double)sold)
                     : json_null());
        json_object_set_new(pt, "row_lock_ms_per_sale",
            sold > 0 ? json_real((double)jint(innodb, "row_lock_time_ms") / (double)sold)
                     : json_null());
    }
    return pt;
}

/* A counter of a SHOW GLOBAL STATUS snapshot ("NAME<TAB>VALUE" lines);
 * -1 when the file or the line is missing. */
static long long status_value(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    char line[256], key[128];
    long long v, found = -1;

    if (f == NULL)
        return -1;
    while (found < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "%127s %lld", key, &v) == 2 && !strcmp(key, name))
            found = v;
    fclose(f);
    return found;
}

/* The counters of each run of the point at rundir, by its label:
 * {label: {row_lock_waits, row_lock_time_ms, deadlocks}}, from
 * raw/runs.tsv and each run's innodb-before and -after; a run without both
 * snapshots has none. */
static json_t *read_innodb(const char *rundir)
{
    static const char *const keys[][2] = {
        { "Innodb_row_lock_waits", "row_lock_waits" },
        { "Innodb_row_lock_time", "row_lock_time_ms" },
        { "Innodb_deadlocks", "deadlocks" },
    };
    char *raw = path_join(rundir, "raw"), *tsv = path_join(raw, "runs.tsv"), line[512];
    json_t *all = json_object();
    FILE *f = fopen(tsv, "r");

    while (f != NULL && fgets(line, sizeof line, f)) {
        char idx[16], name[128], family[64], variant[32], label[160], file[48];
        char *before, *after;
        json_t *one = json_object();
        size_t k;

        if (sscanf(line, "%15s %127s %63s %31s", idx, name, family, variant) != 4)
            continue;
        snprintf(label, sizeof label, "%s%s", name, strcmp(variant, "fence") ? "" : " +fence");
        snprintf(file, sizeof file, "%s.innodb-before", idx);
        before = path_join(raw, file);
        snprintf(file, sizeof file, "%s.innodb-after", idx);
        after = path_join(raw, file);
        for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            long long a = status_value(before, keys[k][0]), b = status_value(after, keys[k][0]);
            if (a >= 0 && b >= 0)
                json_object_set_new(one, keys[k][1], json_integer(b - a));
        }
        if (json_object_size(one) == sizeof keys / sizeof keys[0])
            json_object_set_new(all, label, one);
        else
            json_decref(one);
        free(before);
        free(after);
    }
    if (f != NULL)
        fclose(f);
    free(tsv);
    free(raw);
    return all;
}

/* RUN/points.tsv's points, each {value, variant, run, results, innodb}. */
static json_t *read_points(const char *dir)
{
    char *p = path_join(dir, "points.tsv"), line[1024];
    FILE *f = fopen(p, "r");
    json_t *points = json_array();

    if (f == NULL)
        die("%s: no such file (bench/compare --sweep writes it)", p);
    while (fgets(line, sizeof line, f)) {
        char *rp, *rj, *rel, *variant, *end;
        long long v;

        line[strcspn(line, "\r\n")] = '\0';
        v = strtoll(line, &end, 10);
        if (end == line || *end != '\t')
            continue;
        rel = end + 1;
        variant = strchr(rel, '\t');
        if (variant != NULL)
            *variant++ = '\0';
        if (*rel == '\0')
            continue;
        if (json_array_size(points) == SWEEP_MAX)
            die("%s: more than %d points", p, SWEEP_MAX);
        rp = path_join(dir, rel);
        rj = path_join(rp, "results.json");
        json_array_append_new(points, json_pack("{s:I,s:s,s:s,s:o,s:o}", "value", (json_int_t)v,
                                                "variant", variant ? variant : "", "run", rel,
                                                "results", load_json(rj),
                                                "innodb", read_innodb(rp)));
        free(rj);
        free(rp);
    }
    fclose(f);
    free(p);
    if (json_array_size(points) == 0)
        die("%s: no points", dir);
    return points;
}

/* The point of value and variant, or NULL. */
static const json_t *point_at(const json_t *points, long long value, const char *variant)
{
    const json_t *pt;
    size_t i;

    json_array_foreach(points, i, pt)
        if (jint(pt, "value") == value && !strcmp(jstr(pt, "variant", ""), variant))
            return pt;
    return NULL;
}

/* Every strategy and variant of every point, first seen first, with its
 * point at each of the values: "strategy (variant)" when the point has
 * one. */
static json_t *build_series(const json_t *points, const json_t *values)
{
    json_t *series = json_array(), *seen = json_object();
    const json_t *pt, *run, *v;
    size_t i, j, k;

    json_array_foreach(points, i, pt)
        json_array_foreach(json_object_get(json_object_get(pt, "results"), "runs"), j, run) {
            const char *variant = jstr(pt, "variant", "");
            char label[64], name[128];
            json_t *s;
            run_label(run, label, sizeof label);
            snprintf(name, sizeof name, *variant ? "%s (%s)" : "%s%s", label, variant);
            if (json_object_get(seen, name))
                continue;
            json_object_set_new(seen, name, json_true());
            s = json_pack("{s:s,s:s,s:s,s:[]}", "strategy", name, "run", label,
                          "variant", variant, "points");
            json_array_foreach(values, k, v) {
                const json_t *at = point_at(points, json_integer_value(v), variant);
                json_array_append_new(json_object_get(s, "points"),
                    point_of(at ? point_run(json_object_get(at, "results"), label) : NULL,
                             json_integer_value(v),
                             at ? json_object_get(json_object_get(at, "innodb"), label) : NULL));
            }
            json_array_append_new(series, s);
        }
    json_decref(seen);
    return series;
}

static int value_in(const json_t *values, long long v)
{
    const json_t *x;
    size_t i;

    json_array_foreach(values, i, x)
        if (json_integer_value(x) == v)
            return 1;
    return 0;
}

static json_t *build_sweep(const char *dir)
{
    char *p = path_join(dir, "sweep.env");
    json_t *env = load_env(p), *points = read_points(dir), *http = json_array(), *values = json_array();
    json_t *first = json_object_get(json_array_get(points, 0), "results"), *pt, *sweep;
    size_t i;

    free(p);
    json_array_foreach(points, i, pt) {             /* each value once: its first point */
        const json_t *c = json_object_get(json_object_get(json_object_get(
            json_object_get(pt, "results"), "limits"), "ceilings"), CEIL_HTTP);
        if (value_in(values, jint(pt, "value")))
            continue;
        json_array_append_new(values, json_integer(jint(pt, "value")));
        json_array_append_new(http, c ? json_real(jnum(c, "rate")) : json_null());
    }
    sweep = json_pack("{s:i,s:s,s:s,s:s,s:s,s:O,s:O,s:o,s:o,s:o}", "version", 1,
        "tool", "locklab bench/compare --sweep", "param", jstr(env, "param", "?"),
        "started", jstr(env, "started", "?"), "deadlock_detect", jstr(env, "deadlock_detect", ""),
        "settings", json_object_get(first, "settings"),
        "machine", json_object_get(first, "machine"), "values", values,
        "series", build_series(points, values), "http", http);
    json_array_foreach(points, i, pt) {
        json_object_del((json_t *)pt, "results");
        json_object_del((json_t *)pt, "innodb");
    }
    json_object_set_new(sweep, "points", points);
    json_decref(env);
    return sweep;
}

/* ---------------------------------------------------------------- table */

static const char sweep_note[] =
    "The same comparison at each value, each point a whole run of bench/compare (its own "
    "warm-ups, HTTP tier and report in points/). sold/s and req/s are the load tool's, p99 "
    "the client's, oversold and lost the instances' counts against the stock.";

static void fmt_int_or_dash(char *buf, size_t n, const json_t *v)
{
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else
        snprintf(buf, n, "-");
}

/* Each point is a run of its own, checked against its ceilings
 * (report_ceiling.c): the exact strategies that came within 5 % of theirs
 * or passed them, point by point, so that the sweep says it in one place. */
static void print_sweep_bounds(FILE *f, const json_t *sw, enum fmt fmt)
{
    const json_t *s, *pt;
    size_t i, j;
    int n = 0;

    json_array_foreach(json_object_get(sw, "series"), i, s)
        json_array_foreach(json_object_get(s, "points"), j, pt) {
            const json_t *b = json_object_get(pt, "bound");
            const char *v = jstr(b, "verdict", "none");
            if (!json_is_true(json_object_get(b, "exact")) ||
                (strcmp(v, "near") && strcmp(v, "above")))
                continue;
            write_note(f, fmt, "%s%s at %s=%lld: %.0f sold/s steady against its ceiling's "
                       "%.0f/s (spread %.0f %%)",
                       strcmp(v, "above") ? "near its ceiling: " : "ABOVE ITS CEILING: ",
                       jstr(s, "strategy", "?"), jstr(sw, "param", "?"), jint(pt, "value"),
                       jnum(pt, "steady_sold_per_s"), jnum(pt, "ceiling_rate"),
                       jnum(b, "margin") * 100);
            n++;
        }
    if (n == 0)
        write_note(f, fmt, "No exact strategy came within 5 %% of its ceiling at any point.");
}

/* The terminal's width of the strategy column: at least `least`, and
 * room for the longest name and two spaces. */
static int label_width(const json_t *sw, int least)
{
    const json_t *s;
    size_t i;
    int w = least;

    json_array_foreach(json_object_get(sw, "series"), i, s)
        if ((int)strlen(jstr(s, "strategy", "")) + 2 > w)
            w = (int)strlen(jstr(s, "strategy", "")) + 2;
    return w;
}

/* Do the points have MariaDB's counters (read_innodb)? */
static int sweep_has_innodb(const json_t *sw)
{
    const json_t *s, *pt;
    size_t i, j;

    json_array_foreach(json_object_get(sw, "series"), i, s)
        json_array_foreach(json_object_get(s, "points"), j, pt)
            if (json_object_get(pt, "row_lock_waits"))
                return 1;
    return 0;
}

static const char innodb_note[] =
    "MariaDB's own counters over each run (SHOW GLOBAL STATUS before the load and after its "
    "last purchase): the transactions that waited for a row lock (Innodb_row_lock_waits), the "
    "time they waited (Innodb_row_lock_time, ms), the deadlocks InnoDB found "
    "(Innodb_deadlocks), and a sale's share of the first two.";

/* The counters beside the rates: one row per strategy, variant and value. */
static void print_sweep_innodb(FILE *f, const json_t *sw, enum fmt fmt)
{
    const int widths[] = { label_width(sw, 24), 9, 9, 11, 11, 13, 10, 10 };
    const char *names[] = { "strategy", jstr(sw, "param", "?"), "sold/s", "lock waits",
                            "waits/sale", "lock time ms", "ms/sale", "deadlocks" };
    char v[8][96];
    const char *cv[8] = { v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7] };
    const struct table t = { f, fmt, 8, names, widths };
    const json_t *s, *pt;
    size_t i, j;

    if (!sweep_has_innodb(sw))
        return;
    write_section(f, fmt, "MariaDB's counters", innodb_note);
    table_head(&t);
    json_array_foreach(json_object_get(sw, "series"), i, s)
        json_array_foreach(json_object_get(s, "points"), j, pt) {
            if (!json_object_get(pt, "row_lock_waits"))
                continue;
            snprintf(v[0], sizeof v[0], "%s", jstr(s, "strategy", "?"));
            snprintf(v[1], sizeof v[1], "%lld", jint(pt, "value"));
            snprintf(v[2], sizeof v[2], "%.0f", jnum(pt, "sold_per_s"));
            snprintf(v[3], sizeof v[3], "%lld", jint(pt, "row_lock_waits"));
            snprintf(v[4], sizeof v[4], "%.2f", jnum(pt, "row_lock_waits_per_sale"));
            snprintf(v[5], sizeof v[5], "%lld", jint(pt, "row_lock_time_ms"));
            snprintf(v[6], sizeof v[6], "%.3f", jnum(pt, "row_lock_ms_per_sale"));
            snprintf(v[7], sizeof v[7], "%lld", jint(pt, "deadlocks"));
            table_row(&t, cv);
        }
    table_end(&t);
}

static void print_sweep(FILE *f, const json_t *sw, enum fmt fmt)
{
    const int widths[] = { label_width(sw, 24), 11, 9, 9, 9, 9, 9 };
    const char *names[] = { "strategy", jstr(sw, "param", "?"), "sold/s", "p99 ms", "oversold",
                            "lost", "req/s" };
    char v[7][96], title[96];
    const char *cv[7] = { v[0], v[1], v[2], v[3], v[4], v[5], v[6] };
    const struct table t = { f, fmt, 7, names, widths };
    const json_t *s, *pt;
    size_t i, j;

    snprintf(title, sizeof title, "the sweep over %s", jstr(sw, "param", "?"));
    write_section(f, fmt, title, sweep_note);
    table_head(&t);
    json_array_foreach(json_object_get(sw, "series"), i, s)
        json_array_foreach(json_object_get(s, "points"), j, pt) {
            snprintf(v[0], sizeof v[0], "%s", jstr(s, "strategy", "?"));
            snprintf(v[1], sizeof v[1], "%lld", jint(pt, "value"));
            if (json_is_null(json_object_get(pt, "sold_per_s"))) {
                for (int k = 2; k < 7; k++)
                    snprintf(v[k], sizeof v[k], "-");
            } else {
                snprintf(v[2], sizeof v[2], "%.0f", jnum(pt, "sold_per_s"));
                snprintf(v[3], sizeof v[3], "%.1f", jnum(pt, "p99_ms"));
                fmt_int_or_dash(v[4], sizeof v[4], json_object_get(pt, "oversold"));
                fmt_int_or_dash(v[5], sizeof v[5], json_object_get(pt, "lost_updates"));
                snprintf(v[6], sizeof v[6], "%.0f", jnum(pt, "rps"));
            }
            table_row(&t, cv);
        }
    json_array_foreach(json_object_get(sw, "http"), i, pt) {
        snprintf(v[0], sizeof v[0], "(the HTTP tier)");
        snprintf(v[1], sizeof v[1], "%lld", (long long)json_integer_value(
            json_array_get(json_object_get(sw, "values"), i)));
        if (json_is_number(pt))
            snprintf(v[2], sizeof v[2], "%.0f", json_number_value(pt));
        else
            snprintf(v[2], sizeof v[2], "-");
        for (j = 3; j < 7; j++)
            snprintf(v[j], sizeof v[j], "-");
        table_row(&t, cv);
    }
    table_end(&t);
    print_sweep_bounds(f, sw, fmt);
    print_sweep_innodb(f, sw, fmt);
}

/* ---------------------------------------------------------------- charts */

/* The frame of every chart of the sweep: the legend right of the plot,
 * 220 pixels or wider for its longest name (about 7 a character). */
static struct svg_frame sweep_frame_of(const json_t *sw)
{
    struct svg_frame fr = { "sweep", 820, 300, 70, 220, 16, 44, 12, NULL };
    int legend = 30 + 7 * (label_width(sw, 0) - 2);

    if (legend > fr.r) {
        fr.w += legend - fr.r;
        fr.r = legend;
    }
    return fr;
}

static const char *const palette[] = {
    "#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00",
    "#b82e2e", "#316395",
};

/* The x axis: the swept values, on a log scale when they span a factor
 * of 8 or more. */
struct axis {
    double lo, hi;
    int    log;
};

static double axis_x(const struct svg_frame *fr, const struct axis *a, double v)
{

    if (a->hi <= a->lo)
        return svg_x(fr, 0.5);
    return svg_x(fr, a->log ? (log(v) - log(a->lo)) / (log(a->hi) - log(a->lo))
                            : (v - a->lo) / (a->hi - a->lo));
}

/* A metric of a point, or NAN where there is none. */
static double metric(const json_t *pt, const char *key)
{
    const json_t *v = json_object_get(pt, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The values of `key` across a series' points, NAN where missing, into
 * y[0..n); their highest, or max if none is higher. */
static double series_metric(const json_t *s, const char *key, double *y, size_t n, double max)
{
    size_t i;

    for (i = 0; i < n; i++) {
        y[i] = metric(json_array_get(json_object_get(s, "points"), i), key);
        if (y[i] > max)
            max = y[i];
    }
    return max;
}

/* One line of the chart: through the points that have the metric (broken
 * where one has not), a dot on each (a mark when `mark`), and its key in
 * the legend's row `row`. Returns the dots drawn. */
static size_t sweep_line(FILE *f, const struct svg_frame *fr, const double *x, const double *v,
                         size_t n, double max, const json_t *vals, const char *colour,
                         const char *dash, const char *label, const char *unit, int mark,
                         size_t row)
{
    const double kx[2] = { fr->w - fr->r + 10, fr->w - fr->r + 26 };
    const double ky[2] = { fr->t + 7 + (double)row * 16, fr->t + 7 + (double)row * 16 };
    double y[SWEEP_MAX] = { 0 };
    size_t i, dots = 0;

    for (i = 0; i < n; i++)
        y[i] = isnan(v[i]) ? NAN : svg_y(fr, v[i], max);
    svg_line(f, x, y, n, colour, 2, dash);
    for (i = 0; i < n; i++) {
        if (isnan(v[i]))
            continue;
        svg_dot(f, x[i], y[i], 3, colour, mark, "%s at %lld: %.1f %s", label,
                (long long)json_integer_value(json_array_get(vals, i)), v[i], unit);
        dots++;
    }
    svg_line(f, kx, ky, 2, colour, 3, dash);     /* the legend's key: the line's own */
    svg_text(f, fr->w - fr->r + 30, fr->t + 10 + (double)row * 16, NULL, "%s", label);
    return dots;
}

/* A strategy keeps its colour across the variants: series i's is the
 * rank, among the runs first seen, of its run. */
static size_t series_colour(const json_t *series, size_t i)
{
    const char *run = jstr(json_array_get(series, i), "run", "");
    size_t j, k, c = 0;

    for (j = 0; j < i; j++) {
        const char *other = jstr(json_array_get(series, j), "run", "");
        if (!strcmp(other, run))
            return series_colour(series, j);
        for (k = 0; k < j && strcmp(jstr(json_array_get(series, k), "run", ""), other); k++)
            ;
        c += k == j;                    /* other's first series */
    }
    return c;
}

/* Is series i of a variant after the first (its line dashed)? */
static int series_variant(const json_t *series, size_t i)
{
    const char *variant = jstr(json_array_get(series, i), "variant", "");
    size_t j;

    for (j = 0; j < i; j++)
        if (strcmp(jstr(json_array_get(series, j), "variant", ""), variant))
            return 1;
    return 0;
}

static void svg_sweep(FILE *f, const json_t *sw, const char *title, const char *key,
                      const char *unit, int with_http)
{
    const struct svg_frame frame = sweep_frame_of(sw), *fr = &frame;
    const json_t *vals = json_object_get(sw, "values"), *s;
    const json_t *series = json_object_get(sw, "series"), *http = json_object_get(sw, "http");
    size_t n = json_array_size(vals), ns = json_array_size(series), i, points = 0;
    struct axis ax = { INFINITY, 0, 0 };
    double max = 0, hmax = 0, x[SWEEP_MAX], hv[SWEEP_MAX], *ys = calloc(ns * n + 1, sizeof *ys);
    char text[32];

    if (ys == NULL)
        die("sweep: out of memory");
    for (i = 0; i < n; i++) {
        double v = (double)json_integer_value(json_array_get(vals, i));
        ax.lo = v < ax.lo ? v : ax.lo;
        ax.hi = v > ax.hi ? v : ax.hi;
    }
    ax.log = ax.lo > 0 && ax.hi >= 8 * ax.lo;
    for (i = 0; i < n; i++) {
        x[i] = axis_x(fr, &ax, (double)json_integer_value(json_array_get(vals, i)));
        hv[i] = json_is_number(json_array_get(http, i)) ? json_number_value(json_array_get(http, i))
                                                        : NAN;
        hmax = hv[i] > hmax ? hv[i] : hmax;
    }
    json_array_foreach(series, i, s)
        max = series_metric(s, key, ys + i * n, n, max);
    for (i = 0; i < ns * n; i++)
        points += !isnan(ys[i]);
    if (with_http && hmax > max)
        max = hmax;
    if (max <= 0)
        max = 1;
    svg_open(f, fr, points, "%s", title);
    svg_axes(f, fr);
    for (i = 0; i < n; i++) {                      /* x ticks: the swept values */
        snprintf(text, sizeof text, "%lld", (long long)json_integer_value(json_array_get(vals, i)));
        svg_tick_x(f, fr, x[i], text);
    }
    svg_text(f, svg_x(fr, 0.5), fr->h - 6, "middle", "%s%s", jstr(sw, "param", "?"),
             ax.log ? " (log scale)" : "");
    for (i = 0; i <= 4; i++) {                     /* y: a grid line every quarter */
        double y = svg_y(fr, max * (double)i / 4, max);
        if (i > 0)
            svg_grid_y(f, fr, y);
        snprintf(text, sizeof text, max >= 40 ? "%.0f" : "%.3g", max * (double)i / 4);
        svg_tick_y(f, fr, y, text);
    }
    json_array_foreach(series, i, s) {
        size_t c = series_colour(series, i);
        sweep_line(f, fr, x, ys + i * n, n, max, vals,
                   palette[c % (sizeof palette / sizeof palette[0])],
                   series_variant(series, i) ? "7 3" : NULL, jstr(s, "strategy", "?"), unit, 1, i);
    }
    if (with_http && hmax > 0)
        sweep_line(f, fr, x, hv, n, max, vals, "#888888", "5 4", "the HTTP tier", unit,
                   0, ns);
    free(ys);
    svg_close(f);
}

/* ---------------------------------------------------------------- reports */

static void write_sweep_md(FILE *f, const json_t *sw)
{
    const json_t *settings = json_object_get(sw, "settings");

    fprintf(f, "# locklab sweep — %s over %s\n\nStarted %s; scenario %s, stock %s, ",
            jstr(settings, "scenario", "?"), jstr(sw, "param", "?"), jstr(sw, "started", "?"),
            jstr(settings, "scenario", "?"), jstr(settings, "stock", "?"));
    if (json_object_get(settings, "duration_s"))
        fprintf(f, "%s s of load per strategy and point.\n\n", jstr(settings, "duration_s", "?"));
    else
        fprintf(f, "%s purchases per strategy and point.\n\n", jstr(settings, "requests", "?"));
    if (strchr(jstr(sw, "deadlock_detect", ""), ','))
        fprintf(f, "Each value twice, InnoDB's deadlock detection on and off (a point each: a "
                "line per strategy and setting).\n\n");
    else if (*jstr(sw, "deadlock_detect", ""))
        fprintf(f, "InnoDB's deadlock detection %s at every point.\n\n",
                jstr(sw, "deadlock_detect", ""));
    print_sweep(f, sw, FMT_MD);
    fprintf(f, "sweep.html draws sold/s, p99, oversold and lost%s against %s, a line per "
            "strategy.\n", sweep_has_innodb(sw) ? " and the row lock time a sale" : "",
            jstr(sw, "param", "?"));
}

static void write_sweep_html(FILE *f, const json_t *sw)
{
    const json_t *settings = json_object_get(sw, "settings"), *pt;
    char title[128];
    size_t i;

    html_page_open(f, "locklab sweep", 1100);
    fprintf(f, "<h1>locklab: ");
    html_text(f, jstr(settings, "scenario", "?"));
    fprintf(f, " over ");
    html_text(f, jstr(sw, "param", "?"));
    fprintf(f, "</h1>\n<p>Started ");
    html_text(f, jstr(sw, "started", "?"));
    fprintf(f, "; stock %s each run.</p>\n", jstr(settings, "stock", "?"));
    snprintf(title, sizeof title, "Sold per second against %s", jstr(sw, "param", "?"));
    svg_sweep(f, sw, title, "sold_per_s", "sold/s", 1);
    snprintf(title, sizeof title, "p99 latency (client), ms, against %s", jstr(sw, "param", "?"));
    svg_sweep(f, sw, title, "p99_ms", "ms", 0);
    snprintf(title, sizeof title, "Oversold units against %s", jstr(sw, "param", "?"));
    svg_sweep(f, sw, title, "oversold", "units", 0);
    snprintf(title, sizeof title, "Lost updates against %s", jstr(sw, "param", "?"));
    svg_sweep(f, sw, title, "lost_updates", "units", 0);
    if (sweep_has_innodb(sw)) {
        snprintf(title, sizeof title, "InnoDB's row lock time a sale (ms) against %s",
                 jstr(sw, "param", "?"));
        svg_sweep(f, sw, title, "row_lock_ms_per_sale", "ms", 0);
    }
    print_sweep(f, sw, FMT_HTML);
    fprintf(f, "<p>Each point's own report:");
    json_array_foreach(json_object_get(sw, "points"), i, pt) {
        fprintf(f, " <a href=\"");
        html_text(f, jstr(pt, "run", ""));
        fprintf(f, "/report.html\">%s=%lld", jstr(sw, "param", "?"), jint(pt, "value"));
        if (*jstr(pt, "variant", ""))
            html_text(f, ", "), html_text(f, jstr(pt, "variant", ""));
        fprintf(f, "</a>");
    }
    fprintf(f, ".</p>\n");
    html_page_close(f);
}

int cmd_sweep(const char *dir)
{
    json_t *sw = build_sweep(dir);

    write_docs(dir, "sweep", sw, write_sweep_md, write_sweep_html);
    print_sweep(stdout, sw, FMT_TEXT);
    json_decref(sw);
    return 0;
}
