/* report_table.c — what every format of the report shows: the main table
 * (one formatted row per run), where the time goes (text, markdown or
 * HTML), and the notes that go under them. The text forms are what
 * `ll-report build` and `ll-report table` print.
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

void print_cost(FILE *f, const json_t *runs, enum fmt fmt)
{
    char cell[COST_COLS][16];
    const json_t *run;
    size_t i, k;
    int any = 0;

    json_array_foreach(runs, i, run)
        any |= cost_cells(cell, run);
    if (!any)
        return;
    if (fmt == FMT_TEXT) {
        fprintf(f, "\nwhere the time goes: CPU us per request, busy share, switches per request, lock hold\n");
        fprintf(f, "%-20s", "strategy");
        for (k = 0; k < COST_COLS; k++)
            fprintf(f, " %*s", k < NCOST_GROUPS + 2 ? 9 : 10, cost_heads[k]);
        fputc('\n', f);
    } else if (fmt == FMT_MD) {
        fprintf(f, "## Where the time goes\n\n%s\n\n| strategy |", cost_note);
        for (k = 0; k < COST_COLS; k++)
            fprintf(f, " %s |", cost_heads[k]);
        fprintf(f, "\n|---|");
        for (k = 0; k < COST_COLS; k++)
            fprintf(f, "--:|");
        fputc('\n', f);
    } else {
        fprintf(f, "<h2>Where the time goes</h2>\n<p class=note>%s</p>\n<table><tr>"
                "<th rowspan=2>strategy</th><th colspan=%d>CPU &micro;s per request</th>"
                "<th rowspan=2>busy</th><th colspan=2>switches per request</th>"
                "<th colspan=2>the lock</th></tr><tr>",
                cost_note, (int)NCOST_GROUPS + 2);
        for (k = 0; k < COST_COLS; k++)
            if (k != NCOST_GROUPS + 2)
                fprintf(f, "<th>%s</th>", k < NCOST_GROUPS + 3 ? cost_heads[k] :
                        k == NCOST_GROUPS + 3 ? "app" : k == NCOST_GROUPS + 4 ? "MariaDB" :
                        k == NCOST_GROUPS + 5 ? "hold &micro;s" : "held");
        fprintf(f, "</tr>\n");
    }
    json_array_foreach(runs, i, run) {
        char label[48];
        const char *name = run_label(run, label, sizeof label);
        if (!cost_cells(cell, run))
            continue;
        if (fmt == FMT_TEXT)
            fprintf(f, "%-20s", name);
        else if (fmt == FMT_MD)
            fprintf(f, "| %s |", name);
        else {
            fprintf(f, "<tr><td>");
            html_text(f, name);
            fprintf(f, "</td>");
        }
        for (k = 0; k < COST_COLS; k++) {
            if (fmt == FMT_TEXT)
                fprintf(f, " %*s", k < NCOST_GROUPS + 2 ? 9 : 10, cell[k]);
            else if (fmt == FMT_MD)
                fprintf(f, " %s |", cell[k]);
            else
                fprintf(f, "<td class=n>%s</td>", cell[k]);
        }
        fprintf(f, fmt == FMT_HTML ? "</tr>\n" : "\n");
    }
    if (fmt == FMT_HTML)
        fprintf(f, "</table>\n");
    else if (fmt == FMT_MD)
        fputc('\n', f);
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

const char *run_label(const json_t *run, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", jstr(run, "strategy", "?"),
             json_is_true(json_object_get(run, "fence")) ? " +fence" : "");
    return buf;
}

void row_fill(struct row *r, const json_t *run)
{
    const json_t *lat = json_object_get(run, "latency_ms");
    const json_t *seed = json_object_get(run, "seed");
    double crate = jnum(run, "ceiling_rate");

    run_label(run, r->name, sizeof r->name);
    snprintf(r->rps, sizeof r->rps, "%.1f", jnum(run, "rps"));
    snprintf(r->sold_s, sizeof r->sold_s, "%.1f", jnum(run, "sold_per_s"));
    snprintf(r->steady, sizeof r->steady, "%.1f", jnum(run, "steady_sold_per_s"));
    snprintf(r->sold, sizeof r->sold, "%lld", jint(run, "sold"));
    fmt_ll(r->final, sizeof r->final, json_object_get(run, "final"));
    fmt_range(r->oversold, sizeof r->oversold, json_object_get(run, "oversold"),
              json_object_get(run, "oversold_max"));
    fmt_range(r->lost, sizeof r->lost, json_object_get(run, "lost_updates"),
              json_object_get(run, "lost_updates_max"));
    snprintf(r->unknown, sizeof r->unknown, "%lld", jint(run, "unknown"));
    snprintf(r->p50, sizeof r->p50, "%.1f", jnum(lat, "p50"));
    snprintf(r->p99, sizeof r->p99, "%.1f", jnum(lat, "p99"));
    if (crate > 0)
        snprintf(r->ceiling, sizeof r->ceiling, "%.0f", crate);
    else
        snprintf(r->ceiling, sizeof r->ceiling, "n/a");
    fmt_eff(r->eff, sizeof r->eff, run);
    if (seed)
        snprintf(r->seed, sizeof r->seed, "%.1f", jnum(seed, "rps"));
    else
        snprintf(r->seed, sizeof r->seed, "-");
    snprintf(r->errs, sizeof r->errs, "%lld", jint(run, "lock_timeouts") +
             jint(run, "unavailable") + jint(run, "errors") + jint(run, "other_answers") +
             jint(run, "transport_errors"));
}

void print_table(FILE *f, const json_t *results)
{
    const json_t *runs = json_object_get(results, "runs"), *run;
    size_t i;

    fprintf(f, "%-20s %8s %8s %8s %6s %6s %8s %6s %7s %7s %7s %6s %8s %7s %8s\n",
            "strategy", "req/s", "sold/s", "steady/s", "sold", "final", "oversold", "lost",
            "unknown", "p50 ms", "p99 ms", "failed", "ceiling/s", "effic.", "seeds/s");
    json_array_foreach(runs, i, run) {
        struct row r;
        row_fill(&r, run);
        fprintf(f, "%-20s %8s %8s %8s %6s %6s %8s %6s %7s %7s %7s %6s %8s %7s %8s\n",
                r.name, r.rps, r.sold_s, r.steady, r.sold, r.final, r.oversold, r.lost,
                r.unknown, r.p50, r.p99, r.errs, r.ceiling, r.eff, r.seed);
    }
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
    fprintf(f, "%s* %s: the seeds' published JMeter throughput (seed 000: 5000 units, 100 "
            "threads × 50 loops), measured by the course authors on their hardware: compare "
            "shapes, not absolute numbers. A figure stands only beside a run on as many "
            "service instances, here %s: the seed's no lock and JVM lock were measured straight "
            "on one service (§1.3, §1.4.1), its other locks through nginx on three (§1.5 on).",
            fmt == FMT_HTML ? "<p class=note>" : fmt == FMT_TEXT ? "\n" : "\\",
            fmt == FMT_TEXT ? "seeds/s" : "seeds req/s", instances_word(n));
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
    fprintf(f, "%s", fmt == FMT_HTML ? "</p>\n" : fmt == FMT_TEXT ? "\n" : "\n\n");
}

/* The strategies measured against the row's peak, against the concurrent
 * ceiling too: one sentence. */
void print_concurrent(FILE *f, const json_t *runs, enum fmt fmt)
{
    const json_t *run;
    size_t i;
    int n = 0;

    json_array_foreach(runs, i, run) {
        double e = jnum(run, "efficiency_concurrent");
        if (!json_object_get(run, "efficiency_concurrent") || e < 0)
            continue;
        fprintf(f, "%s%s reaches %.1f%% of the concurrent hot-row UPDATE ceiling",
                n++ ? "; " : fmt == FMT_HTML ? "<p class=note>" : "",
                jstr(run, "strategy", "?"), e * 100.0);
    }
    if (n)
        fprintf(f, fmt == FMT_HTML ? " (the efficiency column uses the row's peak).</p>\n"
                                   : " (the efficiency column uses the row's peak).\n\n");
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
    fprintf(f, "%sredlock ran over %s: %s (bench/stack up --redis 5 runs five).%s",
            fmt == FMT_HTML ? "<p class=note>" : fmt == FMT_TEXT ? "\n" : "",
            n == 1 ? "one Redis server" : "two Redis servers",
            n == 1 ? "its quorum is that server, so the row is a single-server lock with "
                     "Redlock's validity check, showing neither Redlock's cost nor its "
                     "fault tolerance"
                   : "its quorum is both, so it costs Redlock's round trips but "
                     "survives no server failure",
            fmt == FMT_HTML ? "</p>\n" : fmt == FMT_TEXT ? "\n" : "\n\n");
}

/* A run whose purchases found their lock's key held by another strategy's
 * kind of lock (GET /stats "foreign") did not run alone: another strategy
 * sold the same product meanwhile, a service of its own or the previous
 * run's purchases still in flight. Its counts are not its own alone. */
void print_mixed(FILE *f, const json_t *runs, enum fmt fmt)
{
    const json_t *run;
    size_t i;
    int n = 0;

    json_array_foreach(runs, i, run) {
        long long met = jint(json_object_get(run, "server"), "foreign");
        if (met <= 0)
            continue;
        fprintf(f, "%s%s: %lld purchase%s found the lock's key held by another strategy's kind "
                "of lock", n++ ? "; " : fmt == FMT_HTML ? "<p class=note>" : "",
                jstr(run, "strategy", "?"), met, met == 1 ? "" : "s");
    }
    if (n)
        fprintf(f, "%s", fmt == FMT_HTML
                ? ". Strategies were mixed on one product: another service, or a previous "
                  "run's purchases still in flight, sold it meanwhile.</p>\n"
                : ". Strategies were mixed on one product: another service, or a previous "
                  "run's purchases still in flight, sold it meanwhile.\n\n");
}

const char wrk_note[] =
    "Duration runs (wrk): purchases still in flight when the time is up go on in their "
    "instances until answered; compare waits for them, and sold, oversold and lost "
    "updates count them (the instances' counters), while req/s and sold/s are the "
    "answers wrk saw within its time.";
const char serial_note[] =
    "none and mutex are measured against the serial SELECT + UPDATE ceiling although they "
    "do not serialise across instances: above 100 % means sales overlapped, which is "
    "exactly how they lose updates.";

/* ---------------------------------------------------------------- faults */

/* The fault scenarios' table (runs with ll-check's verdict, "check"): per
 * strategy and fence, what sold and what was refused, and what the
 * checker found in the ledger alone. Nothing is printed for other runs. */
void print_faults(FILE *f, const json_t *runs, enum fmt fmt)
{
    static const char *const head[] = {
        "strategy", "fence", "sold", "oversold", "lost", "fenced", "lock_lost", "unknown",
        "ledger: lost", "overlaps", "stale tokens",
    };
    const size_t ncol = sizeof head / sizeof head[0];
    const json_t *run, *check;
    char cell[11][48];
    size_t i, c;
    int any = 0;

    json_array_foreach(runs, i, run)
        any |= json_object_get(run, "check") != NULL;
    if (!any)
        return;
    if (fmt == FMT_HTML) {
        fprintf(f, "<h2>Under faults</h2>\n<table><tr>");
        for (c = 0; c < ncol; c++)
            fprintf(f, "<th>%s</th>", head[c]);
        fprintf(f, "</tr>\n");
    } else if (fmt == FMT_MD) {
        fprintf(f, "## Under faults\n\n|");
        for (c = 0; c < ncol; c++)
            fprintf(f, " %s |", head[c]);
        fprintf(f, "\n|---|---|");
        for (c = 2; c < ncol; c++)
            fprintf(f, "--:|");
        fprintf(f, "\n");
    } else {
        fprintf(f, "\nunder faults (the ledger judged by ll-check):\n"
                "%-20s %5s %6s %8s %6s %6s %9s %7s %12s %8s %12s\n", head[0], head[1],
                head[2], head[3], head[4], head[5], head[6], head[7], head[8], head[9], head[10]);
    }
    json_array_foreach(runs, i, run) {
        if ((check = json_object_get(run, "check")) == NULL)
            continue;
        const json_t *server = json_object_get(run, "server");
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
        if (fmt == FMT_HTML) {
            int bad = jint(run, "lost_updates") != 0 || jint(check, "lost") || jint(check, "overlap");
            fprintf(f, "<tr%s>", bad ? " class=\"bad\"" : "");
            for (c = 0; c < ncol; c++) {
                fprintf(f, c ? "<td class=n>" : "<td>");
                html_text(f, cell[c]);
                fprintf(f, "</td>");
            }
            fprintf(f, "</tr>\n");
        } else if (fmt == FMT_MD) {
            fprintf(f, "|");
            for (c = 0; c < ncol; c++)
                fprintf(f, " %s |", cell[c]);
            fprintf(f, "\n");
        } else {
            fprintf(f, "%-20s %5s %6s %8s %6s %6s %9s %7s %12s %8s %12s\n", cell[0], cell[1],
                    cell[2], cell[3], cell[4], cell[5], cell[6], cell[7], cell[8], cell[9],
                    cell[10]);
        }
    }
    if (fmt == FMT_HTML)
        fprintf(f, "</table>\n<p class=note>sold, oversold and lost from the instances' "
                "counters and the stock; fenced: late writes the database refused for an old "
                "token; lock_lost: writes the holder itself refused because its lease may have "
                "ended; the last three columns are what ll-check found in the sales ledger "
                "alone.</p>\n");
    else if (fmt == FMT_MD)
        fprintf(f, "\nsold, oversold and lost come from the instances' counters and the "
                "stock; fenced: late writes the database refused for an old token; lock_lost: "
                "writes the holder refused itself because its lease may have ended; the last "
                "three columns are what ll-check found in the sales ledger alone.\n\n");
}
