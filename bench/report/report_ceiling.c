/* report_ceiling.c — what a run is measured against, and whether it held.
 *
 * A run's efficiency is its steady rate over the ceiling of its strategy
 * (GET /locks' `ceiling`, one of ll-limits' keys: locks/lock.h says what
 * each is and how it is measured).
 *
 * The steady rate. A duration run (wrk, the throughput scenario) comes
 * after its warm-up and lasts seconds: its own sold/s is steady. A run of
 * a fixed number of purchases (the seeds' experiment: 5000 over 100
 * connections, half a second for a fast strategy) is not: its whole-run
 * rate holds the ramp, connections opening and the first answers, and the
 * tail, the last buyers served while the others have left, and for a fast
 * strategy these are most of it. That whole-run rate is what the seeds'
 * JMeter figures are, so the table keeps it as the seeds' experiment; the
 * steady rate beside it is the strategy's warm-up, which bench/compare
 * runs with the same load, driver and connections for --warmup seconds on
 * another product just before (raw/NN.warmup.json): the sales of its
 * whole seconds after the first (harness_steady_rate). Without a warm-up,
 * or with the load over several products (the warm-up has one), it is the
 * whole run's rate, and the report says so.
 *
 * The ceiling's spread: its trials' (max − min) ÷ max, from ll-limits.
 * Past HARNESS_SPREAD_MAX the efficiency is a range, steady ÷ the best
 * trial to steady ÷ the slowest.
 *
 * The bound. An exact strategy cannot sell faster than its ceiling: a run
 * above it by more than the ceiling's own spread says the ceiling is not a
 * bound (harness_bound), which `ll-report check` refuses; within 5 % of it
 * or above by no more than the spread, the report notes it. Strategies
 * that are not exact (none, mutex across instances) overlap their sales
 * and may pass their ceiling: that is how they lose updates.
 */
#include "report_private.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- derived */

/* A ceiling's slowest trial, best trial (its rate) and spread; spread -1
 * when it has no trials (the HTTP tier's). */
static void trial_range(const json_t *ceil, double *lo, double *hi, double *spread)
{
    const json_t *t = json_object_get(ceil, "trials");
    double v[64];
    size_t i, n = json_array_size(t);

    *hi = jnum(ceil, "rate");
    *lo = *hi;
    for (i = 0; i < n && i < sizeof v / sizeof v[0]; i++) {
        v[i] = json_number_value(json_array_get(t, i));
        if (v[i] > 0 && v[i] < *lo)
            *lo = v[i];
    }
    *spread = n > 0 ? harness_spread(v, i) : -1.0;
}

void derive_ceiling(json_t *run, const json_t *limits, const json_t *locks,
                    const json_t *warmup, const json_t *settings)
{
    const json_t *all = json_object_get(limits, "ceilings");
    const json_t *lock = lock_entry(locks, jstr(run, "strategy", ""));
    const char *key = lock ? jstr(lock, "ceiling", NULL) : NULL;
    const json_t *ceil = key ? json_object_get(all, key) : NULL;
    double steady = -1, lo = 0, hi = 0, spread = -1;
    const char *source = "whole run";
    enum harness_bound b;

    if (jint(settings, "duration_s") > 0) {
        steady = jnum(run, "sold_per_s");
        source = "run";
    } else if (warmup && jint(settings, "products") <= 1 &&
               (steady = load_steady_rate(warmup)) >= 0) {
        source = "warm-up";
    }
    if (steady < 0)
        steady = jnum(run, "sold_per_s");
    if (ceil && !json_object_get(ceil, "error"))
        trial_range(ceil, &lo, &hi, &spread);
    json_object_set_new(run, "steady_sold_per_s", json_real(steady));
    json_object_set_new(run, "steady_source", json_string(source));
    json_object_set_new(run, "ceiling", key ? json_string(key) : json_null());
    json_object_set_new(run, "ceiling_rate", json_real(hi));
    json_object_set_new(run, "ceiling_spread", spread >= 0 ? json_real(spread) : json_null());
    json_object_set_new(run, "efficiency", json_real(harness_efficiency(steady, hi)));
    if (spread > HARNESS_SPREAD_MAX && lo > 0)
        json_object_set_new(run, "efficiency_range",
                            json_pack("[f,f]", steady / hi, steady / lo));
    /* Measured against the row's peak, a strategy also says how it does
     * against the concurrent hot-row ceiling (issue 5's yardstick). */
    if (key && !strcmp(key, CEIL_UPDATE_PEAK))
        json_object_set_new(run, "efficiency_concurrent", json_real(harness_efficiency(
            steady, jnum(json_object_get(all, CEIL_MYSQL_UPDATE), "rate"))));
    {
        double http = harness_efficiency(steady, jnum(json_object_get(all, CEIL_HTTP), "rate"));
        json_object_set_new(run, "http_share", http < 0 ? json_null() : json_real(http));
    }
    b = harness_bound(steady, hi, spread);
    json_object_set_new(run, "bound", json_pack("{s:s,s:f,s:b}", "verdict",
                        harness_bound_name(b), "margin", spread > 0 ? spread : 0.0,
                        "exact", lock && json_is_true(json_object_get(lock, "exact"))));
}

/* ---------------------------------------------------------------- notes */

/* The runs that --max-seconds stopped before they had sent their
 * purchases (ll-load -n with -d): each is named with what it sent. Its
 * counts are as exact as any run's; only its stock was not sold out. */
static void print_capped(FILE *f, const json_t *settings, const json_t *runs, enum fmt fmt)
{
    long long asked = strtoll(jstr(settings, "requests", "0"), NULL, 10);
    const char *cap = jstr(settings, "max_seconds", "");
    const json_t *run;
    char label[48];
    size_t i;

    if (asked <= 0 || !*cap)
        return;
    json_array_foreach(runs, i, run) {
        if (jint(run, "requests") >= asked)
            continue;
        run_label(run, label, sizeof label);
        write_note(f, fmt, "%s: %lld of %lld purchases sent: the run stopped at --max-seconds "
                   "%s, so its rates are over %s s and its stock was not sold out.", label,
                   jint(run, "requests"), asked, cap, cap);
    }
}

/* Under the table: what the rates are, which efficiencies are ranges,
 * which runs a time cap stopped, and which came near their ceiling or
 * passed it. */
void print_bounds(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *settings = json_object_get(res, "settings");
    const json_t *runs = json_object_get(res, "runs"), *run;
    int warm = 0, whole = 0, ranges = 0;
    size_t i;

    json_array_foreach(runs, i, run) {
        warm += !strcmp(jstr(run, "steady_source", ""), "warm-up");
        whole += !strcmp(jstr(run, "steady_source", ""), "whole run");
        ranges += json_object_get(run, "efficiency_range") != NULL;
    }
    if (jint(settings, "duration_s") <= 0)
        write_note(f, fmt, "%s: req/s and sold/s are whole-run rates, %s purchases over %s "
                   "connections from the first request to the last answer, ramp and last "
                   "buyers included, as the seeds' own JMeter figures are: the %s short "
                   "experiment. steady/s is the strategy's rate once the same load runs%s; the "
                   "efficiency uses it.", jstr(settings, "scenario", "?"),
                   jstr(settings, "requests", "?"), jstr(settings, "connections", "?"),
                   !strcmp(jstr(settings, "scenario", ""), "seeds") ? "seeds'" : "scenario's",
                   warm ? ": its warm-up's seconds after the first (the same load on another "
                          "product, just before)" : "");
    if (whole)
        write_note(f, fmt, "%d run%s had no warm-up to measure a steady rate with (--warmup 0, "
                   "or --products): steady/s is %s whole-run rate.", whole,
                   whole == 1 ? "" : "s", whole == 1 ? "its" : "their");
    if (ranges)
        write_note(f, fmt, "An efficiency lo..hi: its ceiling's trials spread more than %.0f %% "
                   "(the ceilings table), from its best trial to its slowest.",
                   HARNESS_SPREAD_MAX * 100);
    print_capped(f, settings, runs, fmt);
    json_array_foreach(runs, i, run) {
        const json_t *b = json_object_get(run, "bound");
        const char *v = jstr(b, "verdict", "none");
        char label[48];

        if (!json_is_true(json_object_get(b, "exact")) ||
            (strcmp(v, "near") && strcmp(v, "above")))
            continue;
        run_label(run, label, sizeof label);
        write_note(f, fmt, "%s%s: %.0f sold/s steady against its ceiling %s of %.0f/s (spread "
                   "%.0f %%): %s", strcmp(v, "above") ? "" : "ABOVE ITS CEILING, ", label,
                   jnum(run, "steady_sold_per_s"), jstr(run, "ceiling", "?"),
                   jnum(run, "ceiling_rate"), jnum(b, "margin") * 100,
                   strcmp(v, "above") ? "within 5 % of it, or above by no more than the "
                                        "ceiling's own spread."
                                      : "more than the ceiling's own spread above it, so the "
                                        "ceiling does not bound this exact strategy.");
    }
}

/* ---------------------------------------------------------------- the ceilings table */

static const char ceilings_note[] =
    "Each ceiling bounds the protocol of the strategies measured against it (GET /locks' "
    "ceiling), measured by ll-limits on the same servers with no HTTP. plateau: the "
    "strategy's own statements from 1, 2, 3, 4, 6 and 8 clients (sweep), then the best "
    "count three times; the ceiling is the best of those trials. hold: one client runs "
    "the family's shortest critical section and times each hold, from the lock's answer "
    "to the release's; the ceiling is 1 ÷ the median hold, since no hand-off takes less "
    "than no time. concurrent: 32 clients. front: the HTTP tier itself (GET /health), "
    "measured by compare. Measured twice, before the runs and after them (trials "
    "a, b, c / d, e, f), a ceiling is the best trial of both passes. spread: (best − "
    "slowest) ÷ best over the trials, how far the yardstick moved while this run went "
    "on; past 10 % the efficiencies against it are ranges.";

/* The "measured" cell: the sweep of a plateau, the hold of a hold. */
static void measured(char *buf, size_t n, const json_t *c)
{
    const json_t *sweep = json_object_get(c, "sweep"), *p;
    size_t i, at = 0;

    buf[0] = '\0';
    if (json_object_get(c, "hold_us")) {
        snprintf(buf, n, "median hold %.0f us; one client looped %.0f/s",
                 jnum(c, "hold_us"), jnum(c, "loop_rate"));
        return;
    }
    json_array_foreach(sweep, i, p) {
        int w = snprintf(buf + at, n - at, "%s%lld: %.0f", i ? ", " : "clients ",
                         jint(p, "connections"), jnum(p, "rate"));
        if (w < 0 || (size_t)w >= n - at)
            break;
        at += (size_t)w;
    }
    if (at == 0)
        snprintf(buf, n, "%lld client%s", jint(c, "connections"),
                 jint(c, "connections") == 1 ? "" : "s");
}

void print_ceilings(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "ceiling", "method", "per second", "spread", "clients", "trials", "measured", "what",
    };
    static const int widths[] = { 26, 10, 10, 6, 7, 22, 0, 0 };
    const json_t *lim = json_object_get(json_object_get(res, "limits"), "ceilings");
    const struct table tab = { f, fmt, fmt == FMT_TEXT ? 7 : 8, names, widths };
    const char *k;
    json_t *c;

    if (json_object_size(lim) == 0)
        return;
    write_section(f, fmt, "ceilings (ll-limits)", ceilings_note);
    table_head(&tab);
    json_object_foreach((json_t *)lim, k, c) {
        char rate[24], spread[16], clients[16], trials[160] = "", meas[200], what[400];
        const char *v[8];
        const json_t *t = json_object_get(c, "trials");
        size_t i, at = 0, first;

        if (json_object_get(c, "error")) {
            snprintf(rate, sizeof rate, "n/a");
            snprintf(what, sizeof what, "%s: %s", jstr(c, "what", ""), jstr(c, "error", ""));
        } else {
            snprintf(rate, sizeof rate, "%.0f", jnum(c, "rate"));
            snprintf(what, sizeof what, "%s", jstr(c, "what", ""));
        }
        if (json_is_number(json_object_get(c, "spread")))
            snprintf(spread, sizeof spread, "%.0f%%", jnum(c, "spread") * 100);
        else
            snprintf(spread, sizeof spread, "-");
        snprintf(clients, sizeof clients, "%lld", jint(c, "connections"));
        /* A second pass's trials after a slash (limits-merge's pass_trials). */
        first = (size_t)json_integer_value(json_array_get(json_object_get(c, "pass_trials"), 0));
        for (i = 0; i < json_array_size(t); i++) {
            int w = snprintf(trials + at, sizeof trials - at, "%s%.0f",
                             i == 0 ? "" : i == first ? " / " : ", ",
                             json_number_value(json_array_get(t, i)));
            if (w < 0 || (size_t)w >= sizeof trials - at)
                break;
            at += (size_t)w;
        }
        measured(meas, sizeof meas, c);
        v[0] = k, v[1] = jstr(c, "method", harness_ceiling_method(k)), v[2] = rate;
        v[3] = spread, v[4] = clients, v[5] = trials, v[6] = meas, v[7] = what;
        table_row(&tab, v);
    }
    table_end(&tab);
}

/* ---------------------------------------------------------------- check */

int check_bounds(const json_t *res, const char *path)
{
    const json_t *run;
    size_t i;
    int bad = 0;

    json_array_foreach(json_object_get(res, "runs"), i, run) {
        const json_t *b = json_object_get(run, "bound");
        char label[48];

        if (!json_is_true(json_object_get(b, "exact")) || strcmp(jstr(b, "verdict", ""), "above"))
            continue;
        bad++;
        fprintf(stderr, "ll-report check: %s: %s, an exact strategy, sold %.0f/s steady, above "
                "its ceiling %s of %.0f/s by more than the ceiling's spread (%.0f %%)\n", path,
                run_label(run, label, sizeof label), jnum(run, "steady_sold_per_s"),
                jstr(run, "ceiling", "?"), jnum(run, "ceiling_rate"), jnum(b, "margin") * 100);
    }
    return bad;
}

/* ll-report bounds: the benchmark's assertion, run by bench/compare after
 * every run (each point of a sweep too). One line: how many exact runs
 * were set against a ceiling, how many came within 5 % of it, how many
 * passed it by more than its spread; check_bounds names those on stderr.
 * Returns how many passed it. */
int summarize_bounds(const json_t *res, const char *path)
{
    const json_t *run;
    size_t i;
    int exact = 0, near = 0, above;

    json_array_foreach(json_object_get(res, "runs"), i, run) {
        const json_t *b = json_object_get(run, "bound");
        const char *v = jstr(b, "verdict", "none");

        if (!json_is_true(json_object_get(b, "exact")) || !strcmp(v, "none"))
            continue;
        exact++;
        near += !strcmp(v, "near");
    }
    above = check_bounds(res, path);
    printf("bounds: %d exact run%s set against a ceiling: %d within 5 %% of it, %d above it "
           "by more than the ceiling's spread%s\n", exact, exact == 1 ? "" : "s", near, above,
           above ? " (not a bound)" : "");
    return above;
}

/* ---------------------------------------------------------------- two passes */

/* One ceiling of two passes of ll-limits, before the runs and after them:
 * the faster pass's entry, with every trial of both and their spread, so
 * that the spread covers how far the ceiling moved while the runs went
 * on, not only how far it moved within one pass (issue 34: across runs a
 * ceiling moves 10-47 %, within one pass 1-33 %). "passes" keeps each
 * pass's rate (null: it failed, its "error" under "pass_errors"). */
static json_t *merge_ceiling(const json_t *a, const json_t *b)
{
    const json_t *pass[2] = { a, b }, *best = NULL, *t, *e;
    json_t *out, *trials = json_array(), *rates = json_array(), *errors = json_array(),
           *counts = json_array();
    double v[128];
    size_t i, k, n = 0;

    for (k = 0; k < 2; k++) {
        const json_t *p = pass[k];
        int ok = p && !json_object_get(p, "error") && jnum(p, "rate") > 0;

        json_array_append_new(rates, ok ? json_real(jnum(p, "rate")) : json_null());
        e = p ? json_object_get(p, "error") : NULL;
        json_array_append_new(errors, e ? json_incref((json_t *)e) : json_null());
        json_array_append_new(counts, json_integer(ok ? (json_int_t)json_array_size(
                                                   json_object_get(p, "trials")) : 0));
        if (!ok)
            continue;
        if (!best || jnum(p, "rate") > jnum(best, "rate"))
            best = p;
        json_array_foreach(json_object_get(p, "trials"), i, t) {
            json_array_append(trials, (json_t *)t);
            if (n < sizeof v / sizeof v[0])
                v[n++] = json_number_value(t);
        }
    }
    out = json_deep_copy(best ? best : (a ? a : b));
    json_object_set_new(out, "passes", rates);
    json_object_set_new(out, "pass_errors", errors);
    json_object_set_new(out, "pass_trials", counts);
    if (best) {
        json_object_del(out, "error");
        json_object_set_new(out, "trials", trials);
        json_object_set_new(out, "spread", json_real(harness_spread(v, n)));
    } else {
        json_decref(trials);
    }
    return out;
}

/* ll-report limits-merge BEFORE AFTER: the two passes as one limits.json
 * (report_main.c; bench/compare measures half its --limits-seconds before the
 * runs and half after). */
int cmd_limits_merge(const char *before, const char *after)
{
    json_t *a = load_json(before), *b = load_json(after), *out = json_deep_copy(a);
    json_t *all = json_object(), *ca = json_object_get(a, "ceilings"),
           *cb = json_object_get(b, "ceilings"), *c;
    const char *key;

    json_object_foreach(ca, key, c)
        json_object_set_new(all, key, merge_ceiling(c, json_object_get(cb, key)));
    json_object_foreach(cb, key, c)
        if (!json_object_get(ca, key))
            json_object_set_new(all, key, merge_ceiling(NULL, c));
    json_object_set_new(out, "ceilings", all);
    json_object_set_new(out, "seconds", json_real(jnum(a, "seconds") + jnum(b, "seconds")));
    json_object_set_new(out, "passes", json_pack("[s,s]", "before the runs", "after the runs"));
    json_dumpf(out, stdout, JSON_INDENT(1));
    putchar('\n');
    json_decref(a);
    json_decref(b);
    json_decref(out);
    return 0;
}
