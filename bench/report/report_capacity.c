/* report_capacity.c — compare --scenario capacity: how many purchases a
 * second a strategy takes before its latency passes a target.
 *
 * bench/lib/compare_capacity.sh runs each strategy's closed loop (the run
 * itself, RAW/IDX.*) and then open-loop steps (ll-load --rate, RAW/IDX.cKK.*,
 * listed in RAW/IDX.capacity.tsv as "K<TAB>rate"); this file decides them
 * and reads them back:
 *
 *   ll-report capacity-next RAW IDX    the next step's rate, or nothing when
 *                                      the scan is done (the plan below)
 *   ll-report capacity-step RAW IDX K  step K's verdict as a line; K = 0:
 *                                      the strategy's capacity
 *
 * The plan. Fixed steps at 0.2, 0.4, 0.6, 0.8, 1.0 and 1.2 of the closed
 * loop's rate (requests a second), on to 1.5 and 2.0 while every step
 * holds; the first step that does not hold ends them (a step past the
 * knee only grows a backlog), and two halvings between the highest step
 * that held and the lowest above it that did not (or 0) follow, unless
 * those are within 5 % of each other already. A step holds when its
 * latency at --slo-pct is within --slo-ms (settings slo_pct, slo_ms) and
 * at least that share of its requests sold (answered 200): a strategy
 * that answers lock_timeout fast does not take the load. The percentile
 * is the load's own (lat_percentiles), timed from each request's due
 * time.
 *
 * derive_capacity() adds the run's "capacity": its steps in offered order,
 * each with what it achieved, its latency, late sends and counts (sold,
 * final, oversold, lost: the step's own run, derive_run()), the capacity
 * (the highest offered rate that held, what it achieved and its latency)
 * and where it broke (the lowest offered rate above it that did not).
 * print_capacity() is its table; on the page, one chart a strategy of its
 * latency against the offered load, where the knee shows.
 */
#include "report_private.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CAP_STEPS_MAX 32
#define CAP_BISECT    2                 /* halvings at the knee              */

static const double cap_fixed[] = { 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 2.0 };

/* One step as the plan sees it. */
struct cap_step {
    int    k;
    double offered, achieved, p_ms;
    int    pass;
};

/* The target: the latency at pct % within slo_ms. */
struct cap_target {
    double slo_ms, pct;
};

static struct cap_target cap_target_of(const json_t *settings)
{
    struct cap_target t = { jnum(settings, "slo_ms"), jnum(settings, "slo_pct") };
    if (t.slo_ms <= 0)
        t.slo_ms = 50;
    if (t.pct <= 0)
        t.pct = 99;
    return t;
}

/* The load's latency at pct %, ms, from its lat_percentiles ([q, ms]
 * pairs); -1 when it has none at that quantile. */
static double load_pct_ms(const json_t *load, double pct)
{
    const json_t *pair;
    size_t i;

    json_array_foreach(json_object_get(load, "lat_percentiles"), i, pair)
        if (fabs(json_number_value(json_array_get(pair, 0)) - pct / 100.0) < 1e-9)
            return json_number_value(json_array_get(pair, 1));
    return -1;
}

/* A step's verdict from its load: its latency at the target's percentile,
 * what it achieved, and whether it held. */
static void cap_judge(struct cap_step *s, const json_t *load, const struct cap_target *t)
{
    long long requests = jint(load, "requests");
    long long sold = jint(json_object_get(load, "status"), "200");

    s->achieved = jnum(load, "rps");
    s->p_ms = load_pct_ms(load, t->pct);
    s->pass = requests > 0 && s->p_ms >= 0 && s->p_ms <= t->slo_ms &&
              (double)sold >= t->pct / 100.0 * (double)requests;
}

/* RAW/IDX.capacity.tsv's steps, judged, in the order they ran; their
 * number. */
static int cap_read(const char *raw, const char *idx, const struct cap_target *t,
                    struct cap_step *steps)
{
    char name[64], line[128], sid[64];
    char *path;
    FILE *f;
    int n = 0;

    snprintf(name, sizeof name, "%s.capacity.tsv", idx);
    path = path_join(raw, name);
    f = fopen(path, "r");
    free(path);
    if (f == NULL)
        return 0;
    while (n < CAP_STEPS_MAX && fgets(line, sizeof line, f)) {
        struct cap_step *s = &steps[n];
        json_t *load;
        if (sscanf(line, "%d %lf", &s->k, &s->offered) != 2)
            continue;
        snprintf(sid, sizeof sid, "%s.c%02d", idx, s->k);
        load = load_part(raw, "%s.load.json", sid, 1);
        if (load == NULL)
            continue;
        cap_judge(s, load, t);
        json_decref(load);
        n++;
    }
    fclose(f);
    return n;
}

/* The highest offered rate that held (0: none), and the lowest above it
 * that did not (0: none). */
static void cap_bounds(const struct cap_step *s, int n, double *lo, double *hi)
{
    int i;

    *lo = 0;
    *hi = 0;
    for (i = 0; i < n; i++)
        if (s[i].pass && s[i].offered > *lo)
            *lo = s[i].offered;
    for (i = 0; i < n; i++)
        if (!s[i].pass && s[i].offered > *lo && (*hi == 0 || s[i].offered < *hi))
            *hi = s[i].offered;
}

/* The plan (see the top): the next rate, or 0 when the scan is done. */
static double cap_next(const struct cap_step *s, int n, double closed_rps)
{
    int i, first_fail = -1;
    double lo, hi;

    if (closed_rps <= 0)
        return 0;
    for (i = 0; i < n && first_fail < 0; i++)
        if (!s[i].pass)
            first_fail = i;
    if (first_fail < 0)
        return n < (int)(sizeof cap_fixed / sizeof cap_fixed[0]) ? cap_fixed[n] * closed_rps : 0;
    if (n - 1 - first_fail >= CAP_BISECT)
        return 0;
    cap_bounds(s, n, &lo, &hi);
    if (hi <= 0 || (lo > 0 && hi <= lo * 1.05))
        return 0;
    return (lo + hi) / 2;
}

static json_t *cap_settings(const char *raw)
{
    char *p = path_join(raw, "settings.env");
    json_t *settings = load_env(p);
    free(p);
    return settings;
}

int cmd_capacity_next(const char *raw, const char *idx)
{
    json_t *settings = cap_settings(raw), *closed = load_part(raw, "%s.load.json", idx, 0);
    struct cap_target t = cap_target_of(settings);
    struct cap_step steps[CAP_STEPS_MAX];
    int n = cap_read(raw, idx, &t, steps);
    double next = cap_next(steps, n, jnum(closed, "rps"));

    if (next > 0)
        printf("%.0f\n", next < 1 ? 1 : next);
    json_decref(closed);
    json_decref(settings);
    return 0;
}

int cmd_capacity_step(const char *raw, const char *idx, int k)
{
    json_t *settings = cap_settings(raw);
    struct cap_target t = cap_target_of(settings);
    struct cap_step steps[CAP_STEPS_MAX];
    int n = cap_read(raw, idx, &t, steps), i;
    double lo, hi;

    if (k > 0) {
        for (i = 0; i < n && steps[i].k != k; i++)
            ;
        if (i == n)
            die("%s: no step %d of run %s", raw, k, idx);
        printf("%.0f/s offered, %.0f/s achieved, p%g %.1f ms: %s", steps[i].offered,
               steps[i].achieved, t.pct, steps[i].p_ms,
               steps[i].pass ? "within the target" : "past the target");
    } else {
        cap_bounds(steps, n, &lo, &hi);
        if (lo > 0)
            printf("capacity at p%g <= %g ms: %.0f/s", t.pct, t.slo_ms, lo);
        else
            printf("no step held p%g <= %g ms", t.pct, t.slo_ms);
        if (hi > 0)
            printf("; broke at %.0f/s", hi);
    }
    putchar('\n');
    json_decref(settings);
    return 0;
}

/* ---------------------------------------------------------------- results.json */

/* Step s of run idx as results.json keeps it: its own run's counts. */
static json_t *cap_step_json(const char *raw, const char *idx, const struct cap_step *s,
                             const char *name, const char *family, long long stock,
                             const json_t *locks)
{
    char sid[64], stem[80];
    json_t *load, *after, *inst, *run, *out;

    snprintf(sid, sizeof sid, "%s.c%02d", idx, s->k);
    snprintf(stem, sizeof stem, "%s.stats", sid);
    load = load_part(raw, "%s.load.json", sid, 0);
    after = load_part(raw, "%s.stock.json", sid, 0);
    inst = load_numbered(raw, stem);
    run = derive_run(name, family, stock, 0, load, after, inst, locks, NULL);
    out = json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:O,s:O,s:O,s:I,s:b}",
                    "step", s->k, "offered", s->offered, "achieved", s->achieved,
                    "p_ms", s->p_ms, "p50_ms", jnum(load, "lat_p50_ms"),
                    "p99_ms", jnum(load, "lat_p99_ms"), "max_ms", jnum(load, "lat_max_ms"),
                    "late", (json_int_t)jint(load, "late_sends"),
                    "requests", (json_int_t)jint(run, "requests"),
                    "sold", (json_int_t)jint(run, "sold"),
                    "final", json_object_get(run, "final"),
                    "oversold", json_object_get(run, "oversold"),
                    "lost_updates", json_object_get(run, "lost_updates"),
                    "unknown", (json_int_t)jint(run, "unknown"), "pass", s->pass);
    json_decref(run);
    json_decref(inst);
    json_decref(after);
    json_decref(load);
    return out;
}

static int cap_by_offered(const void *a, const void *b)
{
    double x = ((const struct cap_step *)a)->offered, y = ((const struct cap_step *)b)->offered;
    return x < y ? -1 : x > y;
}

void derive_capacity(json_t *run, const char *raw, const char *idx, const json_t *settings,
                     const json_t *locks)
{
    struct cap_target t = cap_target_of(settings);
    struct cap_step steps[CAP_STEPS_MAX];
    int n = cap_read(raw, idx, &t, steps), i;
    json_t *list = json_array(), *cap, *at = json_null(), *broke = json_null();
    double lo, hi;

    if (n == 0) {
        json_decref(list);
        return;
    }
    qsort(steps, (size_t)n, sizeof steps[0], cap_by_offered);
    cap_bounds(steps, n, &lo, &hi);
    for (i = 0; i < n; i++) {
        json_t *s = cap_step_json(raw, idx, &steps[i], jstr(run, "strategy", "?"),
                                  jstr(run, "family", "?"), jint(settings, "stock"), locks);
        if (steps[i].offered == lo)
            at = json_pack("{s:f,s:f,s:f}", "rate", lo, "achieved", steps[i].achieved,
                           "p_ms", steps[i].p_ms);
        if (steps[i].offered == hi)
            broke = json_pack("{s:f,s:f,s:f}", "rate", hi, "achieved", steps[i].achieved,
                              "p_ms", steps[i].p_ms);
        json_array_append_new(list, s);
    }
    cap = json_pack("{s:f,s:f,s:f,s:o,s:o,s:o}", "slo_ms", t.slo_ms, "slo_pct", t.pct,
                    "closed_rps", jnum(run, "rps"), "at", at, "broke_at", broke, "steps", list);
    json_object_set_new(run, "capacity", cap);
}

/* ---------------------------------------------------------------- the table */

/* A run's steps that sold exactly: no unit oversold or lost, no unknown
 * answer; and how many steps it had. */
static int cap_exact(const json_t *cap, int *nsteps)
{
    const json_t *s;
    size_t i;
    int exact = 0;

    *nsteps = (int)json_array_size(json_object_get(cap, "steps"));
    json_array_foreach(json_object_get(cap, "steps"), i, s)
        exact += jint(s, "oversold") == 0 && jint(s, "lost_updates") == 0 &&
                 jint(s, "unknown") == 0 && json_is_integer(json_object_get(s, "final"));
    return exact;
}

/* The target of the first run that has a capacity, or NULL. */
static const json_t *cap_first(const json_t *res)
{
    const json_t *run;
    size_t i;

    json_array_foreach(json_object_get(res, "runs"), i, run)
        if (json_object_get(run, "capacity"))
            return json_object_get(run, "capacity");
    return NULL;
}

static void cap_charts(FILE *f, const json_t *res);

void print_capacity(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "closed sold/s", "capacity/s", "achieved/s", "p ms", "broke at/s", "p ms",
        "steps exact",
    };
    static const int widths[] = { 20, 13, 11, 11, 8, 11, 8, 11 };
    const struct table t = { f, fmt, 8, names, widths };
    const json_t *first = cap_first(res), *run;
    char title[96], note[600];
    size_t i;

    if (first == NULL)
        return;
    snprintf(title, sizeof title, "capacity at p%g <= %g ms", jnum(first, "slo_pct"),
             jnum(first, "slo_ms"));
    snprintf(note, sizeof note, "The highest offered rate whose p%g stayed within %g ms "
             "(and at least %g %% of its purchases sold), from open-loop steps of ll-load "
             "--rate, each request timed from when it was due; what it achieved, and the "
             "step where it broke. closed sold/s: the strategy's closed loop beside it. "
             "steps exact: the steps that sold with nothing oversold, lost or unknown.",
             jnum(first, "slo_pct"), jnum(first, "slo_ms"), jnum(first, "slo_pct"));
    write_section(f, fmt, title, note);
    table_head(&t);
    json_array_foreach(json_object_get(res, "runs"), i, run) {
        const json_t *cap = json_object_get(run, "capacity");
        const json_t *at = json_object_get(cap, "at"), *broke = json_object_get(cap, "broke_at");
        char c[8][48];
        const char *cv[8];
        int nsteps, exact, k;

        if (cap == NULL)
            continue;
        exact = cap_exact(cap, &nsteps);
        run_label(run, c[0], sizeof c[0]);
        snprintf(c[1], 48, "%.1f", jnum(run, "sold_per_s"));
        snprintf(c[2], 48, json_is_object(at) ? "%.0f" : "< %.0f",
                 json_is_object(at) ? jnum(at, "rate") : jnum(broke, "rate"));
        snprintf(c[3], 48, json_is_object(at) ? "%.0f" : "-", jnum(at, "achieved"));
        snprintf(c[4], 48, json_is_object(at) ? "%.1f" : "-", jnum(at, "p_ms"));
        snprintf(c[5], 48, json_is_object(broke) ? "%.0f" : "-", jnum(broke, "rate"));
        snprintf(c[6], 48, json_is_object(broke) ? "%.1f" : "-", jnum(broke, "p_ms"));
        snprintf(c[7], 48, "%d/%d", exact, nsteps);
        for (k = 0; k < 8; k++)
            cv[k] = c[k];
        table_row_class(&t, cv, exact < nsteps ? "bad" : NULL);
    }
    table_end(&t);
    if (fmt == FMT_HTML)
        cap_charts(f, res);
}

/* ---------------------------------------------------------------- the charts */

/* y of a latency on a log scale from lo to hi ms. */
static double cap_y(const struct svg_frame *fr, double ms, double lo, double hi)
{
    if (ms < lo)
        ms = lo;
    return svg_y(fr, log10(ms / lo), log10(hi / lo));
}

/* One strategy's latency against the offered load: its steps as dots on a
 * line, the target as a dashed line across, the closed loop's rate as a
 * dashed line up, the capacity's step in green. */
static void cap_chart(FILE *f, const json_t *run)
{
    const json_t *cap = json_object_get(run, "capacity"), *steps = json_object_get(cap, "steps");
    const json_t *s;
    struct svg_frame fr = { "capacity", 350, 230, 52, 14, 28, 36, 11,
                            "display:inline-block;margin:0.5em 0.5em 0.5em 0;vertical-align:top" };
    double xmax = jnum(cap, "closed_rps"), lo = 0.1, hi = jnum(cap, "slo_ms") * 4;
    double x[CAP_STEPS_MAX], y[CAP_STEPS_MAX], gx[2], gy[2], d, step;
    size_t i, n = json_array_size(steps);
    char label[48], tick[32];

    if (n == 0)
        return;
    if (n > CAP_STEPS_MAX)
        n = CAP_STEPS_MAX;
    for (i = 0; i < n; i++) {
        s = json_array_get(steps, i);
        if (jnum(s, "offered") > xmax)
            xmax = jnum(s, "offered");
        if (jnum(s, "p_ms") > hi)
            hi = jnum(s, "p_ms");
    }
    step = axis_step(xmax * 1.05, 4);
    xmax = step * ceil(xmax * 1.05 / step);
    hi = pow(10, ceil(log10(hi)));
    svg_open(f, &fr, n, "%s: p%g against the offered load", run_label(run, label, sizeof label),
             jnum(cap, "slo_pct"));
    svg_axes(f, &fr);
    for (d = lo; d <= hi * 1.001; d *= 10) {
        snprintf(tick, sizeof tick, d < 1 ? "%.1f" : "%.0f", d);
        svg_tick_y(f, &fr, cap_y(&fr, d, lo, hi), tick);
        svg_grid_y(f, &fr, cap_y(&fr, d, lo, hi));
    }
    for (d = 0; d <= xmax + step / 2; d += step) {
        snprintf(tick, sizeof tick, "%.0f", d);
        svg_tick_x(f, &fr, svg_x(&fr, d / xmax), tick);
    }
    svg_text(f, svg_x(&fr, 0.5), fr.h - 4, "middle", "offered purchases/s");
    gx[0] = svg_x(&fr, 0);                               /* the target */
    gx[1] = svg_x(&fr, 1);
    gy[0] = gy[1] = cap_y(&fr, jnum(cap, "slo_ms"), lo, hi);
    svg_line(f, gx, gy, 2, "#cc3333", 1, "5 4");
    svg_text(f, gx[1], gy[0] - 4, "end", "%g ms", jnum(cap, "slo_ms"));
    gx[0] = gx[1] = svg_x(&fr, jnum(cap, "closed_rps") / xmax);    /* the closed loop */
    gy[0] = svg_y(&fr, 0, 1);
    gy[1] = svg_y(&fr, 1, 1);
    svg_line(f, gx, gy, 2, "#999999", 1, "3 3");
    svg_text(f, gx[0] - 3, gy[1] + 10, "end", "closed loop");
    for (i = 0; i < n; i++) {
        s = json_array_get(steps, i);
        x[i] = svg_x(&fr, jnum(s, "offered") / xmax);
        y[i] = cap_y(&fr, jnum(s, "p_ms"), lo, hi);
    }
    svg_line(f, x, y, n, "#3366cc", 1.5, NULL);
    for (i = 0; i < n; i++) {
        s = json_array_get(steps, i);
        svg_dot(f, x[i], y[i], 3.5, json_is_true(json_object_get(s, "pass")) ? "#339966" : "#cc3333",
                1, "%.0f/s offered, %.0f/s achieved: p%g %.1f ms, %lld sent late",
                jnum(s, "offered"), jnum(s, "achieved"), jnum(cap, "slo_pct"), jnum(s, "p_ms"),
                jint(s, "late"));
    }
    svg_close(f);
}

static void cap_charts(FILE *f, const json_t *res)
{
    const json_t *run;
    size_t i;

    write_note(f, FMT_HTML, "Each strategy's latency against the load offered to it (log "
               "scale): green steps held the target, red ones did not; the knee is where the "
               "line turns up.");
    json_array_foreach(json_object_get(res, "runs"), i, run)
        if (json_object_get(run, "capacity"))
            cap_chart(f, run);
}
