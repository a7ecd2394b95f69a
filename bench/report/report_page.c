/* report_page.c — the comparison's page, one list of sections for every
 * format: report.md, report.html (one self-contained page: no script, no
 * stylesheet or image from elsewhere) and the summary on the terminal
 * after `ll-report build`.
 *
 * sections[] below is the page, top to bottom. An entry names a section
 * and its writer in each format, NULL where the format leaves it out
 * (the terminal shows the tables and the notes that judge a run, the page
 * its charts too). A writer is called as fn(f, res, fmt) with the whole
 * of results.json, and writes nothing when res holds nothing for it.
 *
 * To add a section: write one function, print_NAME(FILE *f, const json_t
 * *res, enum fmt fmt), in the file of what it shows (report_NAME.c for a
 * new subject, listed in bench/CMakeLists.txt), through the writers of
 * bench/common/write.h (write_section for its title and note, then a
 * struct table, table_head, table_row …, table_end, or notes between
 * write_note_open and write_note_close), so that one function serves the
 * three formats; declare it in report_private.h; and give it one line
 * below where it belongs. A section whose formats differ in substance
 * gets a function for each instead (as the introduction has). Its charts,
 * in HTML only, are svg_* shapes of write.h, drawn by the same function
 * when fmt is FMT_HTML or by one of their own in the html column.
 *
 * The charts of the runs (throughput beside the seeds', oversold and lost
 * units, efficiency), the latency of client and server, the introduction
 * and the machine and settings are this file's own sections.
 */
#include "report_private.h"

#include <string.h>

/* ---------------------------------------------------------------- introduction */

static void intro_md(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *settings = json_object_get(res, "settings");

    fprintf(f, "# locklab comparison — %s\n\n", jstr(settings, "scenario", "?"));
    fprintf(f, "Started %s. Initial stock %s; sold = the sales the instances counted; oversold = max(0, sold − stock); "
            "lost = sold − (stock − final); unknown = answers whose sale was sent and lost on "
            "the way back, each of which may have sold, so with u of them oversold and lost "
            "are shown as ranges up to their values for sold + u; "
            "efficiency = steady sold/s ÷ the ceiling of the "
            "strategy's protocol (ll-limits, same servers, no HTTP).\n\n",
            jstr(settings, "started", "?"), jstr(settings, "stock", "?"));
}

static void intro_html(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *settings = json_object_get(res, "settings");

    /* The title and the scenario are the first screen's (report_overview.c). */
    fprintf(f, "<p>Each strategy starts from a stock of %s units; ", jstr(settings, "stock", "?"));
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
}

/* ---------------------------------------------------------------- the runs' charts */

#define CHART_RUNS 64                   /* runs a chart shows at most */

/* One series of a bar chart: a value per run (< 0: no bar) and a colour. */
struct series {
    const char *label, *colour;
    double      value[CHART_RUNS];
};

/* A horizontal bar chart: one group of bars per run, one bar per series. */
static void svg_bars(FILE *f, const char *title, const char *unit, const json_t *runs,
                     const struct series *s, int nseries)
{
    const int label_w = 170, bar_h = 14, gap = 8, width = 760, chart_w = width - label_w - 90;
    size_t n = json_array_size(runs), i, bars = 0;
    double max = 0;
    int j, y, decimals = strcmp(unit, "units") == 0 ? 0 : 1;
    struct svg_frame fr = { "bars", width, 0, 0, 0, 0, 0, 12, NULL };

    if (n > CHART_RUNS)
        n = CHART_RUNS;
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
    fr.h = 40 + (int)n * (nseries * bar_h + gap) + 20;
    svg_open(f, &fr, bars, "%s", title);
    for (j = 0; j < nseries; j++) {              /* legend */
        svg_rect(f, label_w + j * 230, 8, 12, 12, s[j].colour);
        svg_text(f, label_w + j * 230 + 16, 18, NULL, "%s", s[j].label);
    }
    y = 34;
    for (i = 0; i < n; i++) {
        char label[48];

        svg_text(f, label_w - 8, y + (nseries * bar_h) / 2 + 4, "end", "%s",
                 run_label(json_array_get(runs, i), label, sizeof label));
        for (j = 0; j < nseries; j++, y += bar_h) {
            double v = s[j].value[i];
            int w;
            if (v < 0)
                continue;
            w = (int)(v / max * chart_w + 0.5);
            svg_bar(f, label_w, y, w > 0 ? w : 1, bar_h - 2, s[j].colour, "%s: %.1f %s",
                    s[j].label, v, unit);
            svg_text(f, label_w + w + 4, y + bar_h - 4, NULL, "%.*f", decimals, v);
        }
        y += gap;
    }
    svg_close(f);
}

/* Throughput beside the seeds', oversold and lost units, efficiency. */
static void runs_charts(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *runs = json_object_get(res, "runs"), *run;
    struct series thr[2] = { { "ours: requests/s", "#3366cc", { 0 } },
                             { "seeds (course authors' hardware): requests/s", "#bbbbbb", { 0 } } };
    struct series bad[2] = { { "oversold units", "#cc3333", { 0 } },
                             { "lost updates", "#ee9933", { 0 } } };
    struct series eff[1] = { { "steady sold/s ÷ ceiling of its protocol, %", "#339966", { 0 } } };
    int have_seeds = 0;
    size_t i;

    json_array_foreach(runs, i, run) {
        const json_t *seed = json_object_get(run, "seed");
        if (i >= CHART_RUNS)
            break;
        thr[0].value[i] = jnum(run, "rps");
        thr[1].value[i] = seed ? jnum(seed, "rps") : -1;
        have_seeds |= seed != NULL;
        bad[0].value[i] = (double)jint(run, "oversold");
        bad[1].value[i] = (double)jint(run, "lost_updates");
        eff[0].value[i] = jnum(run, "efficiency") * 100.0;
    }
    svg_bars(f, "Throughput", "requests/s", runs, thr, have_seeds ? 2 : 1);
    svg_bars(f, "Oversold units and lost updates", "units", runs, bad, 2);
    svg_bars(f, "Efficiency", "%", runs, eff, 1);
}

/* ---------------------------------------------------------------- latency */

static void runs_latency(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "mean", "p50", "p90", "p95", "p99", "max", "mean", "p50", "p90", "p95",
        "p99", "max",
    };
    static const struct col_group groups[] = {
        { NULL, 0 }, { "client (load generator)", 6 }, { "server (instances merged)", 6 },
    };
    static const int widths[] = { 20, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7 };
    const struct table t = { f, fmt, 13, names, widths };
    const json_t *run;
    size_t i, k;

    write_section(f, fmt, "latency, ms", "Client: every request, from the load generator. "
                  "Server: the instances' summaries merged, weighted by requests (an estimate "
                  "when more than one instance served).");
    table_head_grouped(&t, groups, 3);
    json_array_foreach(json_object_get(res, "runs"), i, run) {
        const json_t *c = json_object_get(run, "latency_ms");
        const json_t *s = json_object_get(json_object_get(run, "server"), "latency_ms");
        char v[13][48];
        const char *cv[13];

        run_label(run, v[0], sizeof v[0]);
        for (k = 0; k < 12; k++)
            snprintf(v[k + 1], sizeof v[k + 1], "%.1f", jnum(k < 6 ? c : s, names[k + 1]));
        for (k = 0; k < 13; k++)
            cv[k] = v[k];
        table_row(&t, cv);
    }
    table_end(&t);
}

/* ---------------------------------------------------------------- machine, settings */

/* The machine's and the settings' keys, and how the reports name them. */
static const char *const machine_keys[][2] = {
    { "nproc", "cores" }, { "cpu", "CPU" }, { "kernel", "kernel" }, { "cpuidle", "CPU idle driver" },
    { "wake", "a thread's wake-up (ll-wake, before the run)" },
    { "mariadb_prio", "MariaDB's priority" }, { "load", "load average before" },
    { "mariadb", "MariaDB" }, { "redis", "Redis" }, { "zookeeper", "ZooKeeper" },
    { "etcd", "etcd" }, { "nginx", "nginx" }, { "wrk", "wrk" },
};

static const char *const setting_keys[][2] = {
    { "scenario", "scenario" }, { "started", "started" }, { "stock", "initial stock" },
    { "requests", "requests per strategy" }, { "duration_s", "duration per strategy (s)" },
    { "connections", "concurrent connections" }, { "instances", "instances" },
    { "target", "load sent to" }, { "driver", "load generator" }, { "product", "product" },
    { "limits_seconds", "seconds per ceiling (ll-limits)" },
    { "limits_connections", "connections of the concurrent ceilings" },
    { "warmup_s", "warm-up before each run, not counted (s)" },
    { "redis_servers", "Redis servers (redlock's quorum: N/2 + 1)" },
    { "zk_servers", "ZooKeeper servers (1: standalone)" },
    { "etcd_servers", "etcd members (1: alone)" },
    { "storm_orders", "orders of each retry storm, each sent twice" },
    { "storm_stock", "initial stock of each retry storm" },
    { "products", "products the load was spread over (1001 onwards)" },
    { "rtt_ms", "round trip between hosts asked, ms (--netns)" },
    { "slo_ms", "capacity: the latency target, ms" },
    { "slo_pct", "capacity: the target's percentile" },
    { "stock_per_product", "initial stock of each product" },
};

#define NKEYS(k) (sizeof k / sizeof k[0])

/* Object o's values under keys, named as keys says, as write_kv() takes
 * them: NULL for a key o does not hold. */
static void key_values(const json_t *o, const char *const keys[][2], size_t n,
                       const char *kv[][2])
{
    size_t i;

    for (i = 0; i < n; i++) {
        kv[i][0] = keys[i][1];
        kv[i][1] = json_object_get(o, keys[i][0]) ? jstr(o, keys[i][0], "") : NULL;
    }
}

static void print_setup(FILE *f, const json_t *res, enum fmt fmt)
{
    const char *machine[NKEYS(machine_keys)][2], *settings[NKEYS(setting_keys)][2];

    key_values(json_object_get(res, "machine"), machine_keys, NKEYS(machine_keys), machine);
    key_values(json_object_get(res, "settings"), setting_keys, NKEYS(setting_keys), settings);
    write_heading(f, fmt, "Machine");
    write_kv(f, fmt, machine, NKEYS(machine_keys));
    if (fmt == FMT_MD)          /* a list's end; the page's last, below, needs none */
        fputc('\n', f);
    write_heading(f, fmt, "Settings");
    write_kv(f, fmt, settings, NKEYS(setting_keys));
}

/* ---------------------------------------------------------------- the sections */

typedef void section_fn(FILE *f, const json_t *res, enum fmt fmt);

static const struct section {
    const char *name;
    section_fn *text, *md, *html;
} sections[] = {
    /* name             terminal          report.md         report.html */
    { "first screen",   NULL,             NULL,             print_overview },
    { "introduction",   NULL,             intro_md,         intro_html },
    { "the runs",       print_runs,       print_runs,       print_runs },
    { "capacity",       print_capacity,   print_capacity,   print_capacity },
    { "seeds",          print_seeds,      print_seeds,      print_seeds },
    { "notes",          NULL,             print_notes,      print_notes },
    { "bounds",         print_bounds,     print_bounds,     print_bounds },
    { "round trip",     print_run_rtt,    print_run_rtt,    print_run_rtt },
    { "concurrent",     NULL,             print_concurrent, print_concurrent },
    { "topology",       print_topology,   print_topology,   print_topology },
    { "mixed",          print_mixed,      print_mixed,      print_mixed },
    { "faults",         print_faults,     print_faults,     print_faults },
    { "front end",      print_front,      print_front,      print_front },
    { "Redis stock",    print_reconcile,  print_reconcile,  print_reconcile },
    { "storms",         print_storms,     print_storms,     print_storms },
    { "granularity",    print_grain,      print_grain,      print_grain },
    { "charts",         NULL,             NULL,             runs_charts },
    { "latency",        NULL,             NULL,             runs_latency },
    { "cost",           print_cost,       print_cost,       print_cost },
    { "cost chart",     NULL,             NULL,             print_cost_chart },
    { "over time",      NULL,             print_time,       print_time },
    { "ceilings",       print_ceilings,   print_ceilings,   print_ceilings },
    { "machine",        NULL,             print_setup,      print_setup },
};

static void page_walk(FILE *f, const json_t *res, enum fmt fmt)
{
    size_t i;

    for (i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        section_fn *fn = fmt == FMT_TEXT ? sections[i].text
                       : fmt == FMT_MD ? sections[i].md : sections[i].html;
        if (fn)
            fn(f, res, fmt);
    }
}

void write_md(FILE *f, const json_t *res)
{
    page_walk(f, res, FMT_MD);
}

void write_html(FILE *f, const json_t *res)
{
    html_page_open(f, "locklab comparison", OVERVIEW_PAGE_PX);
    page_walk(f, res, FMT_HTML);
    html_page_close(f);
}

void print_summary(FILE *f, const json_t *res)
{
    page_walk(f, res, FMT_TEXT);
}
