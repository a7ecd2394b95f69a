/* report_html.c — report.html, one self-contained page: the main table,
 * bar charts drawn as inline SVG (throughput beside the seeds', oversold
 * and lost units, efficiency, CPU time per request by who spent it), the
 * latency of client and server, the ceilings, the machine, the settings,
 * and each run over time and by percentile (report_time.c). No script, no
 * stylesheet or image from elsewhere. Every chart is an <svg> with
 * data-chart (its kind) and data-points (the bars or points it drew, each
 * of class "mark"), so that a test reading the page's DOM can tell that
 * each one has data and drew it.
 */
#include "report_private.h"

#include <string.h>

/* ---------------------------------------------------------------- HTML */

void html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:  fputc(*s, f);
        }
    }
}

/* One series of a bar chart: a value per run (< 0: no bar) and a colour. */
struct series {
    const char *label, *colour;
    double      value[64];
};

/* A horizontal bar chart: one group of bars per run, one bar per series. */
static void svg_bars(FILE *f, const char *title, const char *unit, const json_t *runs,
                     const struct series *s, int nseries)
{
    const int label_w = 170, bar_h = 14, gap = 8, width = 760, chart_w = width - label_w - 90;
    size_t n = json_array_size(runs), i, bars = 0;
    double max = 0;
    int j, y, height, decimals = strcmp(unit, "units") == 0 ? 0 : 1;

    if (n > 64)
        n = 64;
    for (i = 0; i < n; i++)
        for (j = 0; j < nseries; j++) {
            if (s[j].value[i] > max)
                max = s[j].value[i];
            bars += s[j].value[i] >= 0;
        }
    if (bars == 0)                  /* nothing measured (no ceilings): no chart */
        return;
    if (max <= 0)
        max = 1;
    height = 40 + (int)n * (nseries * bar_h + gap) + 20;
    fprintf(f, "<figure><figcaption>");
    html_text(f, title);
    fprintf(f, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\" "
            "data-chart=\"bars\" data-points=\"%zu\">\n", width, height, bars);
    for (j = 0; j < nseries; j++) {              /* legend */
        fprintf(f, "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"18\">", label_w + j * 230, s[j].colour, label_w + j * 230 + 16);
        html_text(f, s[j].label);
        fprintf(f, "</text>\n");
    }
    y = 34;
    for (i = 0; i < n; i++) {
        char label[48];
        const char *name = run_label(json_array_get(runs, i), label, sizeof label);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label_w - 8,
                y + (nseries * bar_h) / 2 + 4);
        html_text(f, name);
        fprintf(f, "</text>\n");
        for (j = 0; j < nseries; j++, y += bar_h) {
            double v = s[j].value[i];
            int w;
            if (v < 0)
                continue;
            w = (int)(v / max * chart_w + 0.5);
            fprintf(f, "<rect class=\"mark\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                    "fill=\"%s\"><title>%s: %.1f %s</title></rect>", label_w, y, w > 0 ? w : 1,
                    bar_h - 2, s[j].colour, s[j].label, v, unit);
            fprintf(f, "<text x=\"%d\" y=\"%d\">%.*f</text>\n", label_w + w + 4,
                    y + bar_h - 4, decimals, v);
        }
        y += gap;
    }
    fprintf(f, "</svg></figure>\n");
}

/* Where the time goes as a chart: one bar per run, stacked by who spent
 * the CPU time per request. Runs without a cost get no bar. */
static void svg_cost(FILE *f, const json_t *runs)
{
    static const char *const colour[NCOST_GROUPS + 1] = {
        "#3366cc", "#999999", "#ee9933", "#cc3333", "#339966", "#cccc66",
    };
    const int label_w = 170, bar_h = 16, gap = 6, width = 760, chart_w = width - label_w - 90;
    size_t n = json_array_size(runs), i, k, bars = 0;
    double max = 0;
    int y, height;

    for (i = 0; i < n; i++) {
        const json_t *us = json_object_get(json_object_get(json_array_get(runs, i), "cost"),
                                           "cpu_us_per_request");
        if (us && jnum(us, "total") > max)
            max = jnum(us, "total");
    }
    if (max <= 0)
        return;
    height = 40 + (int)n * (bar_h + gap) + 10;
    for (i = 0; i < n; i++) {                   /* the segments drawn below */
        const json_t *us = json_object_get(json_object_get(json_array_get(runs, i), "cost"),
                                           "cpu_us_per_request");
        for (k = 0; us && k <= NCOST_GROUPS; k++)
            bars += jnum(us, k < NCOST_GROUPS ? cost_groups[k][0] : "rest") > 0;
    }
    fprintf(f, "<figure><figcaption>CPU time per request, &micro;s, by who spent it</figcaption>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" "
            "font-family=\"sans-serif\" font-size=\"12\" data-chart=\"cost\" "
            "data-points=\"%zu\">\n", width, height, bars);
    for (k = 0; k <= NCOST_GROUPS; k++)                          /* legend */
        fprintf(f, "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"18\">%s</text>\n", label_w + (int)k * 95, colour[k],
                label_w + (int)k * 95 + 16, k < NCOST_GROUPS ? cost_groups[k][1] : "load+rest");
    y = 34;
    for (i = 0; i < n; i++, y += bar_h + gap) {
        const json_t *run = json_array_get(runs, i);
        const json_t *us = json_object_get(json_object_get(run, "cost"), "cpu_us_per_request");
        char label[48];
        double x = label_w;

        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label_w - 8, y + bar_h - 4);
        html_text(f, run_label(run, label, sizeof label));
        fprintf(f, "</text>\n");
        if (us == NULL)
            continue;
        for (k = 0; k <= NCOST_GROUPS; k++) {
            const char *key = k < NCOST_GROUPS ? cost_groups[k][0] : "rest";
            double v = jnum(us, key), w = v / max * chart_w;
            if (v <= 0)
                continue;
            fprintf(f, "<rect class=\"mark\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                    "fill=\"%s\"><title>%s: %.0f us</title></rect>", x, y, w, bar_h - 2, colour[k],
                    k < NCOST_GROUPS ? cost_groups[k][1] : "load+rest", v);
            x += w;
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.0f</text>\n", x + 4, y + bar_h - 4,
                jnum(us, "total"));
    }
    fprintf(f, "</svg></figure>\n");
}

static const char html_style[] =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}"
    "tr.bad td{background:#fdecea}figure{margin:1.5em 0}figcaption{font-weight:bold}"
    ".note{color:#555;font-size:90%}";

static void html_runs_table(FILE *f, const json_t *runs)
{
    const json_t *run;
    size_t i;

    fprintf(f, "<table><tr><th>strategy</th><th>req/s</th><th>sold/s</th><th>steady/s</th>"
            "<th>sold</th><th>final</th><th>oversold</th><th>lost updates</th><th>unknown</th><th>failed</th>"
            "<th>ceiling/s</th><th>efficiency</th><th>seeds req/s*</th></tr>\n");
    json_array_foreach(runs, i, run) {
        struct row r;
        int bad = jint(run, "oversold") > 0 || jint(run, "lost_updates") != 0;
        row_fill(&r, run);
        fprintf(f, "<tr%s><td>", bad ? " class=\"bad\"" : "");
        html_text(f, r.name);
        fprintf(f, "</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td>"
                "<td class=n>%s</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td>"
                "<td class=n>%s</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td>"
                "<td class=n>%s</td></tr>\n",
                r.rps, r.sold_s, r.steady, r.sold, r.final, r.oversold, r.lost, r.unknown,
                r.errs, r.ceiling, r.eff, r.seed);
    }
    fprintf(f, "</table>\n");
}

static void html_latency_table(FILE *f, const json_t *runs)
{
    static const char *const q[] = { "mean", "p50", "p90", "p95", "p99", "max" };
    const json_t *run;
    size_t i, k;

    fprintf(f, "<table><tr><th rowspan=2>strategy</th><th colspan=6>client (load generator)"
            "</th><th colspan=6>server (instances merged)</th></tr><tr>");
    for (k = 0; k < 12; k++)
        fprintf(f, "<th>%s</th>", q[k % 6]);
    fprintf(f, "</tr>\n");
    json_array_foreach(runs, i, run) {
        const json_t *c = json_object_get(run, "latency_ms");
        const json_t *s = json_object_get(json_object_get(run, "server"), "latency_ms");
        char label[48];
        fprintf(f, "<tr><td>");
        html_text(f, run_label(run, label, sizeof label));
        fprintf(f, "</td>");
        for (k = 0; k < 12; k++)
            fprintf(f, "<td class=n>%.1f</td>", jnum(k < 6 ? c : s, q[k % 6]));
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
}

static void html_kv(FILE *f, const json_t *o, const char *const keys[][2], size_t n)
{
    size_t i;

    fprintf(f, "<table>");
    for (i = 0; i < n; i++) {
        if (!json_object_get(o, keys[i][0]))
            continue;
        fprintf(f, "<tr><th>");
        html_text(f, keys[i][1]);
        fprintf(f, "</th><td>");
        html_text(f, jstr(o, keys[i][0], ""));
        fprintf(f, "</td></tr>");
    }
    fprintf(f, "</table>\n");
}

void write_html(FILE *f, const json_t *res)
{
    const json_t *runs = json_object_get(res, "runs"), *run, *settings;
    struct series thr[2] = { { "ours: requests/s", "#3366cc", { 0 } },
                             { "seeds (course authors' hardware): requests/s", "#bbbbbb", { 0 } } };
    struct series bad[2] = { { "oversold units", "#cc3333", { 0 } },
                             { "lost updates", "#ee9933", { 0 } } };
    struct series eff[1] = { { "steady sold/s ÷ ceiling of its protocol, %", "#339966", { 0 } } };
    int have_seeds = 0;
    size_t i;

    settings = json_object_get(res, "settings");
    json_array_foreach(runs, i, run) {
        const json_t *seed = json_object_get(run, "seed");
        if (i >= 64)
            break;
        thr[0].value[i] = jnum(run, "rps");
        thr[1].value[i] = seed ? jnum(seed, "rps") : -1;
        have_seeds |= seed != NULL;
        bad[0].value[i] = (double)jint(run, "oversold");
        bad[1].value[i] = (double)jint(run, "lost_updates");
        eff[0].value[i] = jnum(run, "efficiency") * 100.0;
    }
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>locklab comparison</title><style>%s</style></head><body>\n", html_style);
    fprintf(f, "<h1>locklab: every lock strategy against the physical limit</h1>\n<p>Scenario <b>");
    html_text(f, jstr(settings, "scenario", "?"));
    fprintf(f, "</b>, started ");
    html_text(f, jstr(settings, "started", "?"));
    fprintf(f, ". Each strategy starts from a stock of %s units; ", jstr(settings, "stock", "?"));
    if (json_object_get(settings, "duration_s") && jint(settings, "duration_s") > 0)
        fprintf(f, "the load runs for %s s ", jstr(settings, "duration_s", "?"));
    else
        fprintf(f, "%s purchases are sent ", jstr(settings, "requests", "?"));
    fprintf(f, "over %s connections to ", jstr(settings, "connections", "?"));
    html_text(f, jstr(settings, "target", "?"));
    fprintf(f, ".</p>\n<p class=note>sold = answers 200; oversold = max(0, sold − stock); "
            "lost updates = sold − (stock − final): units sold twice because a sale overwrote "
            "another; unknown = answers whose sale was sent to MariaDB and lost on the way "
            "back: each may have sold, so with u of them oversold and lost are shown as ranges "
            "up to their values for sold + u; efficiency = steady sold per second ÷ the ceiling of the strategy's "
            "protocol, measured by ll-limits on the same servers with no HTTP in between. Rows in red "
            "sold what they did not have.</p>\n");
    html_runs_table(f, runs);
    print_faults(f, runs, FMT_HTML);
    print_seeds(f, res, FMT_HTML);                       /* report_table.c */
    if (!strcmp(jstr(settings, "driver", ""), "wrk"))
        fprintf(f, "<p class=note>%s</p>\n", wrk_note);
    fprintf(f, "<p class=note>%s</p>\n", serial_note);
    print_bounds(f, res, FMT_HTML);                      /* report_ceiling.c */
    print_concurrent(f, runs, FMT_HTML);
    print_topology(f, res, FMT_HTML);
    print_mixed(f, runs, FMT_HTML);
    print_front(f, res, FMT_HTML);
    print_reconcile(f, runs, FMT_HTML);
    print_storms(f, res, FMT_HTML);
    print_grain(f, res, FMT_HTML);
    svg_bars(f, "Throughput", "requests/s", runs, thr, have_seeds ? 2 : 1);
    svg_bars(f, "Oversold units and lost updates", "units", runs, bad, 2);
    svg_bars(f, "Efficiency", "%", runs, eff, 1);
    fprintf(f, "<h2>Latency, ms</h2>\n<p class=note>Client: every request, from the load "
            "generator. Server: the instances' summaries merged, weighted by requests "
            "(an estimate when more than one instance served).</p>\n");
    html_latency_table(f, runs);
    print_cost(f, runs, FMT_HTML);
    svg_cost(f, runs);
    html_time(f, runs);                                   /* report_time.c */
    print_ceilings(f, res, FMT_HTML);                    /* report_ceiling.c */
    fprintf(f, "<h2>Machine</h2>\n");
    html_kv(f, json_object_get(res, "machine"), machine_keys, nmachine_keys);
    fprintf(f, "<h2>Settings</h2>\n");
    html_kv(f, settings, setting_keys, nsetting_keys);
    fprintf(f, "</body></html>\n");
}
