/* report_table.c — what every format of the report shows: the main table
 * (one row per run), where the time goes (its table, and its chart on the
 * page), the faults table, and the notes that go under the main table.
 * The text forms are what `ll-report build` and `ll-report table` print.
 */
#include "report_private.h"

#include <string.h>

/* ---------------------------------------------------------------- notes */

/* Where the time goes, one table in three formats. */
#define COST_COLS (NCOST_GROUPS + 7)
static const char *const cost_heads[COST_COLS] = {
    "app", "nginx", "MariaDB", "Redis", "ZooKeeper", "load+rest", "total", "busy",
    "app sw", "MariaDB sw", "hold us", "held",
};

/* The cells of one run's row; 0 when the run has no cost. */
static int cost_cells(char cell[COST_COLS][16], const json_t *run)
{
    const json_t *c = json_object_get(run, "cost");
    const json_t *us = json_object_get(c, "cpu_us_per_request");
    const json_t *sw = json_object_get(c, "switches_per_request");
    size_t i;

    if (!json_is_object(c))
        return 0;
    for (i = 0; i < NCOST_GROUPS; i++)
        snprintf(cell[i], 16, "%.0f", jnum(us, cost_groups[i][0]));
    snprintf(cell[NCOST_GROUPS], 16, "%.0f", jnum(us, "rest"));
    snprintf(cell[NCOST_GROUPS + 1], 16, "%.0f", jnum(us, "total"));
    snprintf(cell[NCOST_GROUPS + 2], 16, "%.0f%%", jnum(c, "busy") * 100.0);
    snprintf(cell[NCOST_GROUPS + 3], 16, "%.1f", jnum(sw, "app"));
    snprintf(cell[NCOST_GROUPS + 4], 16, "%.1f", jnum(sw, "mysql"));
    if (json_is_number(json_object_get(run, "lock_hold_us")))
        snprintf(cell[NCOST_GROUPS + 5], 16, "%.0f", jnum(run, "lock_hold_us"));
    else
        snprintf(cell[NCOST_GROUPS + 5], 16, "-");
    if (json_is_number(json_object_get(run, "lock_held_share")))
        snprintf(cell[NCOST_GROUPS + 6], 16, "%.0f%%", jnum(run, "lock_held_share") * 100.0);
    else
        snprintf(cell[NCOST_GROUPS + 6], 16, "-");
    return 1;
}

static const char cost_note[] =
    "CPU microseconds per answered request, by who spent them, from /proc over the load's "
    "time: the stack's processes (three instances together), and load+rest, what else the "
    "machine was busy with, the load generator above all. busy: the machine's CPU time in "
    "use; near 100 % the run was CPU-bound, well below it the strategy waited (for a lock, "
    "a sleep, a round trip). sw: context switches per request, voluntary and not, of the "
    "instances (every thread they had, from their /stats) and of MariaDB's threads. "
    "hold: how long a purchase held its lock on average, from the acquire that got it to "
    "the end of its release (strategies that sell in one SQL statement or transaction "
    "take no lock of ours: -). held: the share of the load's time some purchase held it, "
    "the instances' holds added up; an exclusive lock stays at or below about 100 %, and "
    "the rest of the time it sat idle between holders. Far above 100 %, purchases held it "
    "at the same time: it did not exclude.";

void print_cost(FILE *f, const json_t *res, enum fmt fmt)
{
    /* In HTML the head has two rows, and its own names under them. */
    static const char *const html_heads[COST_COLS + 1] = {
        "strategy", "app", "nginx", "MariaDB", "Redis", "ZooKeeper", "load+rest", "total",
        "busy", "app", "MariaDB", "hold &micro;s", "held",
    };
    static const struct col_group groups[] = {
        { NULL, 0 }, { "CPU &micro;s per request", NCOST_GROUPS + 2 }, { NULL, 0 },
        { "switches per request", 2 }, { "the lock", 2 },
    };
    const char *names[COST_COLS + 1], *cv[COST_COLS + 1];
    int widths[COST_COLS + 1];
    const struct table t = { f, fmt, COST_COLS + 1, fmt == FMT_HTML ? html_heads : names, widths };
    const json_t *runs = json_object_get(res, "runs"), *run;
    char cell[COST_COLS][16], label[48];
    size_t i, k;
    int any = 0;

    json_array_foreach(runs, i, run)
        any |= cost_cells(cell, run);
    if (!any)
        return;
    names[0] = "strategy";
    widths[0] = 20;
    cv[0] = label;
    for (k = 0; k < COST_COLS; k++) {
        names[k + 1] = cost_heads[k];
        widths[k + 1] = k < NCOST_GROUPS + 2 ? 9 : 10;
        cv[k + 1] = cell[k];
    }
    write_section(f, fmt, fmt == FMT_TEXT ? "where the time goes: CPU us per request, busy "
                  "share, switches per request, lock hold" : "where the time goes", cost_note);
    table_head_grouped(&t, groups, sizeof groups / sizeof groups[0]);
    json_array_foreach(runs, i, run) {
        if (!cost_cells(cell, run))
            continue;
        run_label(run, label, sizeof label);
        table_row(&t, cv);
    }
    table_end(&t);
}

/* Where the time goes as a chart: one bar per run, stacked by who spent
 * the CPU time per request. Runs without a cost get no bar. */
void print_cost_chart(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const colour[NCOST_GROUPS + 1] = {
        "#3366cc", "#999999", "#ee9933", "#cc3333", "#339966", "#cccc66",
    };
    const int label_w = 170, bar_h = 16, gap = 6, width = 760, chart_w = width - label_w - 90;
    const json_t *runs = json_object_get(res, "runs");
    size_t n = json_array_size(runs), i, k, bars = 0;
    struct svg_frame fr = { "cost", width, 0, 0, 0, 0, 0, 12, NULL };
    double max = 0;
    int y;

    for (i = 0; i < n; i++) {
        const json_t *us = json_object_get(json_object_get(json_array_get(runs, i), "cost"),
                                           "cpu_us_per_request");
        if (us && jnum(us, "total") > max)
            max = jnum(us, "total");
        for (k = 0; us && k <= NCOST_GROUPS; k++)       /* the segments drawn below */
            bars += jnum(us, k < NCOST_GROUPS ? cost_groups[k][0] : "rest") > 0;
    }
    if (max <= 0)
        return;
    fr.h = 40 + (int)n * (bar_h + gap) + 10;
    svg_open(f, &fr, bars, "CPU time per request, µs, by who spent it");
    for (k = 0; k <= NCOST_GROUPS; k++) {                         /* legend */
        svg_rect(f, label_w + (int)k * 95, 8, 12, 12, colour[k]);
        svg_text(f, label_w + (int)k * 95 + 16, 18, NULL, "%s",
                 k < NCOST_GROUPS ? cost_groups[k][1] : "load+rest");
    }
    y = 34;
    for (i = 0; i < n; i++, y += bar_h + gap) {
        const json_t *run = json_array_get(runs, i);
        const json_t *us = json_object_get(json_object_get(run, "cost"), "cpu_us_per_request");
        char label[48];
        double x = label_w;

        svg_text(f, label_w - 8, y + bar_h - 4, "end", "%s", run_label(run, label, sizeof label));
        if (us == NULL)
            continue;
        for (k = 0; k <= NCOST_GROUPS; k++) {
            const char *key = k < NCOST_GROUPS ? cost_groups[k][0] : "rest";
            double v = jnum(us, key), w = v / max * chart_w;
            if (v <= 0)
                continue;
            svg_bar(f, x, y, w, bar_h - 2, colour[k], "%s: %.0f us",
                    k < NCOST_GROUPS ? cost_groups[k][1] : "load+rest", v);
            x += w;
        }
        svg_text(f, x + 4, y + bar_h - 4, NULL, "%.0f", jnum(us, "total"));
    }
    svg_close(f);
}

/* ---------------------------------------------------------------- table */

/* The efficiency, or lo..hi when its ceiling's trials spread past
 * HARNESS_SPREAD_MAX (report_ceiling.c). */
static void fmt_eff(char *buf, size_t n, const json_t *run)
{
    const json_t *range = json_object_get(run, "efficiency_range");
    double eff = jnum(run, "efficiency");

    if (eff < 0)
        snprintf(buf, n, "n/a");
    else if (json_array_size(range) == 2)
        snprintf(buf, n, "%.1f..%.1f%%", json_number_value(json_array_get(range, 0)) * 100.0,
                 json_number_value(json_array_get(range, 1)) * 100.0);
    else
        snprintf(buf, n, "%.1f%%", eff * 100.0);
}

static void fmt_ll(char *buf, size_t n, const json_t *v)
{
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else
        snprintf(buf, n, "?");
}

/* lo, or "lo..hi" when an unknown answer may make it up to hi. */
static void fmt_range(char *buf, size_t n, const json_t *lo, const json_t *hi)
{
    if (json_is_integer(lo) && json_is_integer(hi) &&
        json_integer_value(hi) != json_integer_value(lo))
        snprintf(buf, n, "%lld..%lld", (long long)json_integer_value(lo),
                 (long long)json_integer_value(hi));
    else
        fmt_ll(buf, n, lo);
}

/* The main table's columns: their names on the terminal, in Markdown and
 * in HTML (NULL: not there; the page has its latency table) and their
 * width on the terminal. The capacity's (compare --scenario capacity:
 * report_capacity.c) stands beside sold/s, in a report that has one. */
#define RUN_COLS 16
#define CAP_COL  3
static const struct {
    const char *text, *md, *html;
    int         width;
} run_cols[RUN_COLS] = {
    { "strategy", "strategy", "strategy", 20 }, { "req/s", "req/s", "req/s", 8 },
    { "sold/s", "sold/s", "sold/s", 8 }, { "cap/s", "capacity/s", "capacity/s", 8 },
    { "steady/s", "steady/s", "steady/s", 8 },
    { "sold", "sold", "sold", 6 }, { "final", "final", "final", 6 },
    { "oversold", "oversold", "oversold", 8 }, { "lost", "lost", "lost updates", 6 },
    { "unknown", "unknown", "unknown", 7 }, { "p50 ms", "p50 ms", NULL, 7 },
    { "p99 ms", "p99 ms", NULL, 7 }, { "failed", "failed", "failed", 6 },
    { "ceiling/s", "ceiling/s", "ceiling/s", 8 }, { "effic.", "efficiency", "efficiency", 7 },
    { "seeds/s", "seeds req/s*", "seeds req/s*", 8 },
};

/* One run's cells, in run_cols' order. */
static void run_cells(char c[RUN_COLS][48], const json_t *run)
{
    const json_t *lat = json_object_get(run, "latency_ms");
    const json_t *seed = json_object_get(run, "seed");
    double crate = jnum(run, "ceiling_rate");

    const json_t *cap_at = json_object_get(json_object_get(run, "capacity"), "at");

    run_label(run, c[0], 48);
    snprintf(c[1], 48, "%.1f", jnum(run, "rps"));
    snprintf(c[2], 48, "%.1f", jnum(run, "sold_per_s"));
    snprintf(c[CAP_COL], 48, json_is_object(cap_at) ? "%.0f" : "-", jnum(cap_at, "rate"));
    snprintf(c[4], 48, "%.1f", jnum(run, "steady_sold_per_s"));
    snprintf(c[5], 48, "%lld", jint(run, "sold"));
    fmt_ll(c[6], 48, json_object_get(run, "final"));
    fmt_range(c[7], 48, json_object_get(run, "oversold"), json_object_get(run, "oversold_max"));
    fmt_range(c[8], 48, json_object_get(run, "lost_updates"),
              json_object_get(run, "lost_updates_max"));
    snprintf(c[9], 48, "%lld", jint(run, "unknown"));
    snprintf(c[10], 48, "%.1f", jnum(lat, "p50"));
    snprintf(c[11], 48, "%.1f", jnum(lat, "p99"));
    snprintf(c[12], 48, "%lld", jint(run, "lock_timeouts") + jint(run, "unavailable") +
             jint(run, "errors") + jint(run, "other_answers") + jint(run, "transport_errors"));
    if (crate > 0)
        snprintf(c[13], 48, "%.0f", crate);
    else
        snprintf(c[13], 48, "n/a");
    fmt_eff(c[14], 48, run);
    if (seed)
        snprintf(c[15], 48, "%.1f", jnum(seed, "rps"));
    else
        snprintf(c[15], 48, "-");
}

void print_runs(FILE *f, const json_t *res, enum fmt fmt)
{
    const char *names[RUN_COLS], *cv[RUN_COLS];
    int widths[RUN_COLS], col[RUN_COLS], n = 0, k;
    struct table t = { f, fmt, 0, names, widths };
    char cell[RUN_COLS][48];
    const json_t *run;
    size_t i;
    int has_cap = 0;

    json_array_foreach(json_object_get(res, "runs"), i, run)
        has_cap |= json_object_get(run, "capacity") != NULL;
    for (k = 0; k < RUN_COLS; k++) {
        const char *name = fmt == FMT_TEXT ? run_cols[k].text
                         : fmt == FMT_MD ? run_cols[k].md : run_cols[k].html;
        if (name == NULL || (k == CAP_COL && !has_cap))
            continue;
        names[n] = name;
        widths[n] = run_cols[k].width;
        col[n++] = k;
    }
    t.n = n;
    table_head(&t);
    json_array_foreach(json_object_get(res, "runs"), i, run) {
        int bad = jint(run, "oversold") > 0 || jint(run, "lost_updates") != 0;
        run_cells(cell, run);
        for (k = 0; k < n; k++)
            cv[k] = cell[col[k]];
        table_row_class(&t, cv, bad ? "bad" : NULL);
    }
    table_end(&t);
}

/* ---------------------------------------------------------------- seeds */

long long served_instances(const json_t *settings)
{
    long long n = jint(settings, "instances_served");

    if (n <= 0)                       /* a run written before compare said */
        n = jint(settings, "instances");
    return n > 0 ? n : 3;
}

static const char *instances_word(long long n)
{
    return n == 1 ? "one" : n == 2 ? "two" : n == 3 ? "three" : "several";
}

/* The footnote of the seeds' column: what the figures are, and which were
 * left out because the seed measured them on another number of service
 * instances than this run's (report_derive.c's seeds[]). */
void print_seeds(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *runs = json_object_get(res, "runs"), *run, *seed;
    long long n = served_instances(json_object_get(res, "settings")), other = 0;
    int shown = 0, left = 0;
    size_t i;

    json_array_foreach(runs, i, run) {
        shown += json_object_get(run, "seed") != NULL;
        if ((seed = json_object_get(run, "seed_elsewhere")) != NULL) {
            left++;
            other = jint(seed, "instances");
        }
    }
    if (!shown && !left)
        return;
    write_note_open(f, fmt);
    fprintf(f, "%s* %s: the seeds' published JMeter throughput (seed 000: 5000 units, 100 "
            "threads × 50 loops), measured by the course authors on their hardware: compare "
            "shapes, not absolute numbers. A figure stands only beside a run on as many "
            "service instances, here %s: the seed's no lock and JVM lock were measured straight "
            "on one service (§1.3, §1.4.1), its other locks through nginx on three (§1.5 on).",
            fmt == FMT_MD ? "\\" : "", fmt == FMT_TEXT ? "seeds/s" : "seeds req/s",
            instances_word(n));
    if (left) {
        int k = 0;
        fprintf(f, " Left out, measured on %s:", instances_word(other));
        json_array_foreach(runs, i, run)
            if ((seed = json_object_get(run, "seed_elsewhere")) != NULL)
                fprintf(f, "%s %s %.1f/s", k++ ? "," : "", jstr(run, "strategy", "?"),
                        jnum(seed, "rps"));
        fprintf(f, " (%s).", other == 1 ? "bench/compare --scenario seeds --instances 1 sets "
                                          "the one-instance figures beside a run on one"
                                        : "a run through nginx on three instances sets the "
                                          "three-instance figures beside its own");
    }
    write_note_close(f, fmt);
}

/* The strategies measured against the row's peak, against the concurrent
 * ceiling too: one sentence. */
void print_concurrent(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *run;
    size_t i;
    int n = 0;

    json_array_foreach(json_object_get(res, "runs"), i, run) {
        double e = jnum(run, "efficiency_concurrent");
        if (!json_object_get(run, "efficiency_concurrent") || e < 0)
            continue;
        write_note_item(f, fmt, &n);
        fprintf(f, "%s reaches %.1f%% of the concurrent hot-row UPDATE ceiling",
                jstr(run, "strategy", "?"), e * 100.0);
    }
    write_note_items_close(f, fmt, n, " (the efficiency column uses the row's peak).");
}

/* Redlock over fewer than three servers is not the algorithm the row is
 * named after: with one server its quorum is that server, and with two it
 * needs both and survives no failure. Say so under the table. */
void print_topology(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *settings = json_object_get(res, "settings"), *run;
    long long n = jint(settings, "redis_servers");
    size_t i;

    if (n < 1 || n >= 3)                /* 0: not recorded (an older run) */
        return;
    json_array_foreach(json_object_get(res, "runs"), i, run)
        if (!strcmp(jstr(run, "strategy", ""), "redlock"))
            break;
    if (i == json_array_size(json_object_get(res, "runs")))
        return;
    write_note_open(f, fmt);
    fprintf(f, "redlock ran over %s: %s (bench/stack up --redis 5 runs five).",
            n == 1 ? "one Redis server" : "two Redis servers",
            n == 1 ? "its quorum is that server, so the row is a single-server lock with "
                     "Redlock's validity check, showing neither Redlock's cost nor its "
                     "fault tolerance"
                   : "its quorum is both, so it costs Redlock's round trips but "
                     "survives no server failure");
    write_note_close(f, fmt);
}

/* A run whose purchases found their lock's key held by another strategy's
 * kind of lock (GET /stats "foreign") did not run alone: another strategy
 * sold the same product meanwhile, a service of its own or the previous
 * run's purchases still in flight. Its counts are not its own alone. */
void print_mixed(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *run;
    size_t i;
    int n = 0;

    json_array_foreach(json_object_get(res, "runs"), i, run) {
        long long met = jint(json_object_get(run, "server"), "foreign");
        if (met <= 0)
            continue;
        write_note_item(f, fmt, &n);
        fprintf(f, "%s: %lld purchase%s found the lock's key held by another strategy's kind "
                "of lock", jstr(run, "strategy", "?"), met, met == 1 ? "" : "s");
    }
    write_note_items_close(f, fmt, n, ". Strategies were mixed on one product: another "
                           "service, or a previous run's purchases still in flight, sold it "
                           "meanwhile.");
}

static const char wrk_note[] =
    "Duration runs (wrk): purchases still in flight when the time is up go on in their "
    "instances until answered; compare waits for them, and sold, oversold and lost "
    "updates count them (the instances' counters), while req/s and sold/s are the "
    "answers wrk saw within its time.";
static const char serial_note[] =
    "none and mutex are measured against the serial SELECT + UPDATE ceiling although they "
    "do not serialise across instances: above 100 % means sales overlapped, which is "
    "exactly how they lose updates.";

/* What the main table's numbers are, under it: the duration runs' count
 * (wrk), and why none and mutex may pass their ceiling. */
void print_notes(FILE *f, const json_t *res, enum fmt fmt)
{
    if (!strcmp(jstr(json_object_get(res, "settings"), "driver", ""), "wrk")) {
        write_note_open(f, fmt);
        fputs(wrk_note, f);
        write_note_close(f, fmt);
    }
    write_note_open(f, fmt);
    fputs(serial_note, f);
    write_note_close(f, fmt);
}

/* ---------------------------------------------------------------- faults */

/* The fault scenarios' table (runs with ll-check's verdict, "check"): per
 * strategy and fence, what sold and what was refused, and what the
 * checker found in the ledger alone. Nothing is printed for other runs. */
static const char faults_note[] =
    "sold, oversold and lost come from the instances' counters and the stock; fenced: late "
    "writes the database refused for an old token; lock_lost: writes the holder refused "
    "itself because its lease may have ended; the last three columns are what ll-check "
    "found in the sales ledger alone.";

void print_faults(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "fence", "sold", "oversold", "lost", "fenced", "lock_lost", "unknown",
        "ledger: lost", "overlaps", "stale tokens",
    };
    static const int widths[] = { 20, 5, 6, 8, 6, 6, 9, 7, 12, 8, 12 };
    enum { NCOL = sizeof widths / sizeof widths[0] };
    const struct table t = { f, fmt, NCOL, names, widths };
    const json_t *runs = json_object_get(res, "runs"), *run, *check;
    char cell[NCOL][48];
    const char *cv[NCOL];
    size_t i, c;
    int any = 0;

    json_array_foreach(runs, i, run)
        any |= json_object_get(run, "check") != NULL;
    if (!any)
        return;
    for (c = 0; c < NCOL; c++)
        cv[c] = cell[c];
    write_section(f, fmt, "under faults (the ledger judged by ll-check)", faults_note);
    table_head(&t);
    json_array_foreach(runs, i, run) {
        const json_t *server = json_object_get(run, "server");
        int bad;

        if ((check = json_object_get(run, "check")) == NULL)
            continue;
        bad = jint(run, "lost_updates") != 0 || jint(check, "lost") || jint(check, "overlap");
        snprintf(cell[0], sizeof cell[0], "%s", jstr(run, "strategy", "?"));
        snprintf(cell[1], sizeof cell[1], "%s", json_is_true(json_object_get(run, "fence")) ? "yes" : "no");
        snprintf(cell[2], sizeof cell[2], "%lld", jint(run, "sold"));
        snprintf(cell[3], sizeof cell[3], "%lld", jint(run, "oversold"));
        snprintf(cell[4], sizeof cell[4], "%lld", jint(run, "lost_updates"));
        snprintf(cell[5], sizeof cell[5], "%lld", jint(server, "fenced"));
        snprintf(cell[6], sizeof cell[6], "%lld", jint(server, "lock_lost"));
        snprintf(cell[7], sizeof cell[7], "%lld", jint(run, "unknown"));
        snprintf(cell[8], sizeof cell[8], "%lld", jint(check, "lost"));
        snprintf(cell[9], sizeof cell[9], "%lld", jint(check, "overlap"));
        snprintf(cell[10], sizeof cell[10], "%lld", jint(check, "token"));
        table_row_class(&t, cv, bad ? "bad" : NULL);
    }
    table_end(&t);
}
