/* report.c — ll-report: the comparison's JSON, table and reports.
 *
 * bench/compare does the HTTP and leaves its raw measurements in
 * RUN/raw/; everything that parses JSON or does arithmetic is here, with
 * the arithmetic itself in harness.c:
 *
 *   ll-report locks LOCKS.json          GET /locks → "name<TAB>family" lines
 *   ll-report line STOCK LOAD.json STOCK.json
 *                                       one progress line for a finished run
 *   ll-report build RUN                 RUN/raw/ → RUN/results.json,
 *                                       RUN/report.md, RUN/report.html, and
 *                                       the table on stdout
 *   ll-report table RESULTS.json        the table again
 *   ll-report check RESULTS.json        validate: every run's counts add up
 *                                       and its derived numbers agree with
 *                                       its raw ones; exit 1 if not
 *   ll-report jtl RESULTS.csv [--stock S --final F]
 *                                       JMeter's aggregate report from a CSV
 *                                       results file, plus the sale counts
 *
 * RUN/raw/ holds settings.env and machine.env (key=value lines written by
 * bench/compare), limits.json (ll-limits), locks.json (GET /locks: each
 * strategy's ceiling), runs.tsv (one line per strategy:
 * index, name, family) and for run NN: NN.load.json (ll-load --json or
 * wrk-count.lua), NN.stock.json (GET /stock after the run) and NN.stats-I.json
 * (GET /stats of instance I).
 *
 * results.json keeps the raw answers (limits, every instance's stats) next
 * to the derived numbers, so that a report can be rebuilt or re-checked.
 * The sections below: loading, derived numbers, table, markdown, HTML,
 * commands.
 */
#include "harness.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_LEN 64

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("ll-report: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* ---------------------------------------------------------------- seeds */

/* The seeds' published JMeter results (seed 000 and the Redis/ZooKeeper
 * seeds): 5000 units, 100 threads × 50 loops through nginx to three
 * instances, measured by the course authors on their hardware. */
static const struct seed_result {
    const char *name;
    const char *label;
    double      rps;
    long long   final_stock;      /* -1: not published */
} seeds[] = {
    { "none",               "no lock",                     473.8, 4870 },
    { "mutex",              "JVM lock",                     82.2, -1 },
    { "mysql-for-update",   "SELECT … FOR UPDATE",         231.5, -1 },
    { "mysql-lock-table",   "db_lock table",                20.1, -1 },
    { "redis-setnx",        "Redis SETNX",                  47.8, -1 },
    { "redis-set-nx-ex",    "Redis SET NX EX",              47.7, -1 },
    { "redis-lua",          "Redis Lua release",            49.7, -1 },
    { "redis-reentrant",    "Redis reentrant hash lock",    47.7, -1 },
    { "redisson",           "Redisson",                     49.2, -1 },
    { "zk-ephemeral",       "ZooKeeper ephemeral node",     25.7, -1 },
    { "zk-sequential-poll", "ZooKeeper sequential, polling", 19.2, -1 },
    { "zk-sequential",      "ZooKeeper watching predecessor", 39.8, -1 },
    { "curator",            "Curator",                      36.6, -1 },
};

static const struct seed_result *seed_find(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        if (strcmp(seeds[i].name, name) == 0)
            return &seeds[i];
    return NULL;
}

/* ---------------------------------------------------------------- loading */

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (j == NULL)
        die("%s:%d: %s", path, e.line, e.text);
    return j;
}

static char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p == NULL)
        abort();                              /* out of memory */
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* key=value lines into a JSON object of strings (numbers stay strings:
 * bench/compare writes both, and the reports print them as given). */
static json_t *load_env(const char *path)
{
    json_t *o = json_object();
    char line[1024];
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return o;
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '='), *end = line + strcspn(line, "\r\n");
        *end = '\0';
        if (eq == NULL || eq == line)
            continue;
        *eq = '\0';
        json_object_set_new(o, line, json_string(eq + 1));
    }
    fclose(f);
    return o;
}

static long long jint(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (long long)json_integer_value(v);
    if (json_is_real(v))
        return (long long)json_real_value(v);
    if (json_is_string(v))
        return atoll(json_string_value(v));
    return 0;
}

static double jnum(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v))
        return json_number_value(v);
    if (json_is_string(v))
        return atof(json_string_value(v));
    return 0.0;
}

static const char *jstr(const json_t *o, const char *key, const char *def)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : def;
}

/* ---------------------------------------------------------------- derived */

/* Counts of one load answer: by status (sold = 200s) and by result. */
struct answers {
    long long requests, transport, sold, sold_out, timeouts, unavailable, errors, other;
};

static void count_answers(const json_t *load, struct answers *a)
{
    const json_t *status = json_object_get(load, "status");
    const json_t *result = json_object_get(load, "result");
    long long answered = 0;
    const char *k;
    json_t *v;

    memset(a, 0, sizeof *a);
    a->requests = jint(load, "requests");
    a->transport = jint(load, "transport_errors");
    a->sold = jint(status, "200");
    json_object_foreach((json_t *)status, k, v)
        answered += json_integer_value(v);
    a->sold_out = jint(result, "sold_out");
    a->timeouts = jint(result, "lock_timeout");
    a->unavailable = jint(result, "unavailable");
    a->errors = jint(result, "error");
    /* Whatever answered that is none of the above (a 502 from nginx, …). */
    a->other = answered - a->sold - a->sold_out - a->timeouts - a->unavailable - a->errors;
}

static json_t *lat_json(const struct lat_summary *s)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f}", "mean", s->mean, "p50", s->p50,
                     "p90", s->p90, "p95", s->p95, "p99", s->p99, "max", s->max);
}

static void lat_from_json(const json_t *o, struct lat_summary *s)
{
    s->mean = jnum(o, "mean");
    s->p50 = jnum(o, "p50");
    s->p90 = jnum(o, "p90");
    s->p95 = jnum(o, "p95");
    s->p99 = jnum(o, "p99");
    s->max = jnum(o, "max");
}

/* The server side of a run: every instance's counters for this strategy
 * added up, their latency summaries merged. */
static json_t *server_side(const char *name, json_t *instances)
{
    static const char *const counters[] = {
        "requests", "sold", "sold_out", "lock_timeouts", "unavailable", "errors",
        "release_errors", "retries", "backend_ops", "wakeups", "holds", "held_us",
    };
    struct lat_summary lat[16], merged;
    json_t *out = json_object(), *inst;
    size_t i, k, n = 0;

    for (k = 0; k < sizeof counters / sizeof counters[0]; k++) {
        long long sum = 0;
        json_array_foreach(instances, i, inst) {
            json_t *s = json_object_get(json_object_get(inst, "strategies"), name);
            sum += jint(s, counters[k]);
        }
        json_object_set_new(out, counters[k], json_integer(sum));
    }
    json_array_foreach(instances, i, inst) {
        json_t *s = json_object_get(json_object_get(inst, "strategies"), name);
        if (s == NULL || n == sizeof lat / sizeof lat[0])
            continue;
        lat[n].n = jint(s, "requests");
        lat_from_json(json_object_get(s, "latency_ms"), &lat[n]);
        n++;
    }
    harness_lat_merge(lat, n, &merged);
    json_object_set_new(out, "latency_ms", lat_json(&merged));
    return out;
}

/* The ceiling strategy `name` is measured against, as GET /locks
 * (raw/locks.json) names it; NULL when it names none. */
static const char *lock_ceiling(const json_t *locks, const char *name)
{
    const json_t *s;
    size_t i;

    json_array_foreach(json_object_get(locks, "strategies"), i, s)
        if (!strcmp(jstr(s, "name", ""), name))
            return json_string_value(json_object_get(s, "ceiling"));
    return NULL;
}

static double ceiling_rate(const json_t *limits, const char *key)
{
    json_t *c = json_object_get(json_object_get(limits, "ceilings"), key ? key : "");
    return c ? jnum(c, "rate") : 0.0;
}

/* ---------------------------------------------------------------- cost */

/* The stack's process groups, as bench/compare's cost_json names them,
 * and how the reports head them. */
static const char *const cost_groups[][2] = {
    { "app", "app" }, { "nginx", "nginx" }, { "mysql", "MariaDB" },
    { "redis", "Redis" }, { "zookeeper", "ZooKeeper" },
};
#define NCOST_GROUPS (sizeof cost_groups / sizeof cost_groups[0])

/* A run's cost per request from RAW/NN.cost.json: CPU microseconds per
 * answered request of each group, of the rest of the machine (the load
 * generator above all) and in all, the context switches per request of
 * each group, and how busy the machine was. NULL without a measurement. */
static json_t *derive_cost(const json_t *cost, long long n)
{
    const json_t *groups = json_object_get(cost, "groups");
    const json_t *machine = json_object_get(cost, "machine");
    double busy = jnum(machine, "busy_s"), sum = 0, rest;
    json_t *us, *sw;
    size_t i;

    if (!json_is_object(groups) || n <= 0)
        return NULL;
    us = json_object();
    sw = json_object();
    for (i = 0; i < NCOST_GROUPS; i++) {
        const json_t *g = json_object_get(groups, cost_groups[i][0]);
        double cpu = jnum(g, "cpu_s");
        sum += cpu;
        json_object_set_new(us, cost_groups[i][0], json_real(harness_per_request_us(cpu, n)));
        json_object_set_new(sw, cost_groups[i][0],
                            json_real(harness_per_request((double)jint(g, "switches"), n)));
    }
    rest = busy - sum;                  /* ticks are 10 ms: never below 0 */
    json_object_set_new(us, "rest", json_real(harness_per_request_us(rest > 0 ? rest : 0, n)));
    json_object_set_new(us, "total", json_real(harness_per_request_us(busy, n)));
    return json_pack("{s:f,s:i,s:I,s:f,s:o,s:o}", "seconds", jnum(cost, "seconds"),
                     "cpus", (int)jint(cost, "cpus"), "requests", (json_int_t)n,
                     "busy", harness_busy_share(busy, jnum(machine, "idle_s")),
                     "cpu_us_per_request", us, "switches_per_request", sw);
}

/* A derived figure, or null where harness_* said "none" (-1). */
static json_t *num_or_null(double v)
{
    return v < 0 ? json_null() : json_real(v);
}

/* One run's object of results.json from its raw pieces. */
static json_t *derive_run(const char *name, const char *family, long long stock,
                          int with_seed, json_t *load, json_t *stock_after, json_t *instances,
                          const json_t *limits, const json_t *locks, const json_t *cost)
{
    const char *ceiling = lock_ceiling(locks, name);
    double elapsed = jnum(load, "elapsed_s"), ceil_rate = ceiling_rate(limits, ceiling);
    const struct seed_result *seed = with_seed ? seed_find(name) : NULL;
    struct answers a;
    json_t *run, *final_v = json_object_get(stock_after, "count");
    struct lat_summary client;
    json_t *server = server_side(name, instances), *costs;
    long long sold;

    count_answers(load, &a);
    /* The units sold are the instances' count: it includes purchases the
     * client gave up on (wrk at the end of its time) that still sold. */
    sold = json_array_size(instances) > 0 ? jint(server, "sold") : a.sold;
    client.n = jint(load, "responses");
    client.mean = jnum(load, "lat_mean_ms");
    client.p50 = jnum(load, "lat_p50_ms");
    client.p90 = jnum(load, "lat_p90_ms");
    client.p95 = jnum(load, "lat_p95_ms");
    client.p99 = jnum(load, "lat_p99_ms");
    client.max = jnum(load, "lat_max_ms");
    run = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f}",
        "strategy", name, "family", family,
        "requests", (json_int_t)a.requests, "sold", (json_int_t)sold,
        "answered_sold", (json_int_t)a.sold,
        "sold_out", (json_int_t)a.sold_out, "lock_timeouts", (json_int_t)a.timeouts,
        "unavailable", (json_int_t)a.unavailable, "errors", (json_int_t)a.errors,
        "other_answers", (json_int_t)a.other, "transport_errors", (json_int_t)a.transport,
        "elapsed_s", elapsed, "rps", harness_rate(a.requests, elapsed),
        "sold_per_s", harness_rate(a.sold, elapsed));
    if (json_is_integer(final_v)) {
        long long fin = (long long)json_integer_value(final_v);
        json_object_set_new(run, "final", json_integer(fin));
        json_object_set_new(run, "oversold", json_integer(harness_oversold(stock, sold)));
        json_object_set_new(run, "lost_updates", json_integer(harness_lost(stock, sold, fin)));
    } else {
        json_object_set_new(run, "final", json_null());
        json_object_set_new(run, "oversold", json_null());
        json_object_set_new(run, "lost_updates", json_null());
    }
    json_object_set_new(run, "ceiling", ceiling ? json_string(ceiling) : json_null());
    json_object_set_new(run, "ceiling_rate", json_real(ceil_rate));
    json_object_set_new(run, "efficiency",
        json_real(harness_efficiency(harness_rate(a.sold, elapsed), ceil_rate)));
    /* Measured against the row's peak, a strategy also says how it does
     * against the concurrent hot-row ceiling (issue 5's yardstick). */
    if (ceiling && !strcmp(ceiling, CEIL_UPDATE_PEAK))
        json_object_set_new(run, "efficiency_concurrent", json_real(harness_efficiency(
            harness_rate(a.sold, elapsed), ceiling_rate(limits, CEIL_MYSQL_UPDATE))));
    json_object_set_new(run, "latency_ms", lat_json(&client));
    json_object_set_new(run, "lock_hold_us", num_or_null(harness_hold_us(
        jint(server, "held_us"), jint(server, "holds"))));
    json_object_set_new(run, "lock_held_share", num_or_null(harness_held_share(
        jint(server, "held_us"), elapsed)));
    json_object_set_new(run, "server", server);
    if (seed)
        json_object_set_new(run, "seed", json_pack("{s:s,s:f,s:I}", "label", seed->label,
                            "rps", seed->rps, "final", (json_int_t)seed->final_stock));
    costs = derive_cost(cost, client.n);
    json_object_set_new(run, "cost", costs ? costs : json_null());
    json_object_set_new(run, "load", json_incref(load));
    json_object_set_new(run, "instances", json_incref(instances));
    return run;
}

static void html_text(FILE *f, const char *s);

/* A ceiling is the best of its trials, and the trials show how far the
 * yardstick itself moved within the run: efficiency moves with it. */
static const char trials_note[] =
    "Each ceiling is the best of its trials (for mysql_update_peak, one trial per "
    "connection count). The trials show how much the ceiling itself moved within this "
    "run; a strategy's efficiency moves with it.";

static void print_trials(FILE *f, const json_t *ceiling)
{
    const json_t *t = json_object_get(ceiling, "trials");
    size_t i;

    for (i = 0; i < json_array_size(t); i++)
        fprintf(f, "%s%.0f", i ? ", " : "", json_number_value(json_array_get(t, i)));
}

/* Where the time goes, one table in three formats. */
enum fmt { FMT_TEXT, FMT_MD, FMT_HTML };

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

static void print_cost(FILE *f, const json_t *runs, enum fmt fmt)
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
        const char *name = jstr(run, "strategy", "?");
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

static void fmt_eff(char *buf, size_t n, double eff)
{
    if (eff < 0)
        snprintf(buf, n, "n/a");
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

struct row {                              /* one run, formatted */
    const char *name;
    char rps[16], sold_s[16], sold[16], final[16], oversold[16], lost[16];
    char p50[16], p99[16], ceiling[24], eff[16], seed[16], errs[16];
};

static void row_fill(struct row *r, const json_t *run)
{
    const json_t *lat = json_object_get(run, "latency_ms");
    const json_t *seed = json_object_get(run, "seed");
    double crate = jnum(run, "ceiling_rate");

    r->name = jstr(run, "strategy", "?");
    snprintf(r->rps, sizeof r->rps, "%.1f", jnum(run, "rps"));
    snprintf(r->sold_s, sizeof r->sold_s, "%.1f", jnum(run, "sold_per_s"));
    snprintf(r->sold, sizeof r->sold, "%lld", jint(run, "sold"));
    fmt_ll(r->final, sizeof r->final, json_object_get(run, "final"));
    fmt_ll(r->oversold, sizeof r->oversold, json_object_get(run, "oversold"));
    fmt_ll(r->lost, sizeof r->lost, json_object_get(run, "lost_updates"));
    snprintf(r->p50, sizeof r->p50, "%.1f", jnum(lat, "p50"));
    snprintf(r->p99, sizeof r->p99, "%.1f", jnum(lat, "p99"));
    if (crate > 0)
        snprintf(r->ceiling, sizeof r->ceiling, "%.0f", crate);
    else
        snprintf(r->ceiling, sizeof r->ceiling, "n/a");
    fmt_eff(r->eff, sizeof r->eff, jnum(run, "efficiency"));
    if (seed)
        snprintf(r->seed, sizeof r->seed, "%.1f", jnum(seed, "rps"));
    else
        snprintf(r->seed, sizeof r->seed, "-");
    snprintf(r->errs, sizeof r->errs, "%lld", jint(run, "lock_timeouts") +
             jint(run, "unavailable") + jint(run, "errors") + jint(run, "other_answers") +
             jint(run, "transport_errors"));
}

static void print_table(FILE *f, const json_t *results)
{
    const json_t *runs = json_object_get(results, "runs"), *run;
    size_t i;

    fprintf(f, "%-20s %8s %8s %6s %6s %8s %6s %7s %7s %6s %8s %7s %8s\n",
            "strategy", "req/s", "sold/s", "sold", "final", "oversold", "lost",
            "p50 ms", "p99 ms", "failed", "ceiling/s", "effic.", "seeds/s");
    json_array_foreach(runs, i, run) {
        struct row r;
        row_fill(&r, run);
        fprintf(f, "%-20s %8s %8s %6s %6s %8s %6s %7s %7s %6s %8s %7s %8s\n",
                r.name, r.rps, r.sold_s, r.sold, r.final, r.oversold, r.lost,
                r.p50, r.p99, r.errs, r.ceiling, r.eff, r.seed);
    }
}

/* The strategies measured against the row's peak, against the concurrent
 * ceiling too: one sentence. */
static void print_concurrent(FILE *f, const json_t *runs, enum fmt fmt)
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
static void print_topology(FILE *f, const json_t *res, enum fmt fmt)
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

static const char wrk_note[] =
    "Duration runs (wrk): purchases still in flight when the time is up go on in their "
    "instances until answered; compare waits for them, and sold, oversold and lost "
    "updates count them (the instances' counters), while req/s and sold/s are the "
    "answers wrk saw within its time.";
static const char serial_note[] =
    "none and mutex are measured against the serial SELECT + UPDATE ceiling although they "
    "do not serialise across instances: above 100 % means sales overlapped, which is "
    "exactly how they lose updates. zk-sequential and curator can pass 100 % too, and "
    "exclude all the same: their waiters create their queue nodes while the lock is held, "
    "so only the holder's delete, one ZooKeeper write, lies between two sales, while the "
    "serial ZooKeeper section makes two, a create and a delete.";

/* ---------------------------------------------------------------- markdown */

static const char *const machine_keys[][2] = {
    { "nproc", "cores" }, { "cpu", "CPU" }, { "kernel", "kernel" }, { "cpuidle", "CPU idle driver" },
    { "wake", "a thread's wake-up (ll-wake, before the run)" },
    { "mariadb_prio", "MariaDB's priority" }, { "load", "load average before" },
    { "mariadb", "MariaDB" }, { "redis", "Redis" }, { "zookeeper", "ZooKeeper" },
    { "nginx", "nginx" }, { "wrk", "wrk" },
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
};

static void write_md(FILE *f, const json_t *res)
{
    const json_t *runs = json_object_get(res, "runs"), *run, *settings, *machine, *lim;
    const char *k;
    json_t *v;
    size_t i;

    settings = json_object_get(res, "settings");
    machine = json_object_get(res, "machine");
    lim = json_object_get(json_object_get(res, "limits"), "ceilings");
    fprintf(f, "# locklab comparison — %s\n\n", jstr(settings, "scenario", "?"));
    fprintf(f, "Started %s. Initial stock %s; sold = the sales the instances counted; oversold = max(0, sold − stock); "
            "lost = sold − (stock − final); efficiency = sold/s ÷ the ceiling of the "
            "strategy's path (ll-limits, same servers, no HTTP).\n\n",
            jstr(settings, "started", "?"), jstr(settings, "stock", "?"));
    fprintf(f, "| strategy | req/s | sold/s | sold | final | oversold | lost | p50 ms | p99 ms "
            "| failed | ceiling/s | efficiency | seeds req/s* |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    json_array_foreach(runs, i, run) {
        struct row r;
        row_fill(&r, run);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                r.name, r.rps, r.sold_s, r.sold, r.final, r.oversold, r.lost, r.p50, r.p99,
                r.errs, r.ceiling, r.eff, r.seed);
    }
    fprintf(f, "\n\\* seeds req/s: the seeds' published JMeter throughput, measured by the "
            "course authors on their hardware (5000 units, 100 threads × 50 loops).\n\n");
    if (!strcmp(jstr(settings, "driver", ""), "wrk"))
        fprintf(f, "%s\n\n", wrk_note);
    fprintf(f, "%s\n\n", serial_note);
    print_concurrent(f, runs, FMT_MD);
    print_topology(f, res, FMT_MD);
    print_cost(f, runs, FMT_MD);
    fprintf(f, "## Ceilings (ll-limits)\n\n%s\n\n| ceiling | per second | trials | what |\n"
            "|---|--:|--:|---|\n", trials_note);
    json_object_foreach((json_t *)lim, k, v) {
        if (json_object_get(v, "error")) {
            fprintf(f, "| %s | n/a | | %s: %s |\n", k, jstr(v, "what", ""), jstr(v, "error", ""));
            continue;
        }
        fprintf(f, "| %s | %.0f | ", k, jnum(v, "rate"));
        print_trials(f, v);
        fprintf(f, " | %s |\n", jstr(v, "what", ""));
    }
    fprintf(f, "\n## Machine\n\n");
    for (i = 0; i < sizeof machine_keys / sizeof machine_keys[0]; i++)
        fprintf(f, "- %s: %s\n", machine_keys[i][1], jstr(machine, machine_keys[i][0], "?"));
    fprintf(f, "\n## Settings\n\n");
    for (i = 0; i < sizeof setting_keys / sizeof setting_keys[0]; i++)
        if (json_object_get(settings, setting_keys[i][0]))
            fprintf(f, "- %s: %s\n", setting_keys[i][1], jstr(settings, setting_keys[i][0], ""));
}

/* ---------------------------------------------------------------- HTML */

static void html_text(FILE *f, const char *s)
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
    size_t n = json_array_size(runs), i;
    double max = 0;
    int j, y, height, decimals = strcmp(unit, "units") == 0 ? 0 : 1;

    if (n > 64)
        n = 64;
    for (i = 0; i < n; i++)
        for (j = 0; j < nseries; j++)
            if (s[j].value[i] > max)
                max = s[j].value[i];
    if (max <= 0)
        max = 1;
    height = 40 + (int)n * (nseries * bar_h + gap) + 20;
    fprintf(f, "<figure><figcaption>");
    html_text(f, title);
    fprintf(f, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\n",
            width, height);
    for (j = 0; j < nseries; j++) {              /* legend */
        fprintf(f, "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"18\">", label_w + j * 230, s[j].colour, label_w + j * 230 + 16);
        html_text(f, s[j].label);
        fprintf(f, "</text>\n");
    }
    y = 34;
    for (i = 0; i < n; i++) {
        const char *name = jstr(json_array_get(runs, i), "strategy", "?");
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
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                    "<title>%s: %.1f %s</title></rect>", label_w, y, w > 0 ? w : 1,
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
    size_t n = json_array_size(runs), i, k;
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
    fprintf(f, "<figure><figcaption>CPU time per request, &micro;s, by who spent it</figcaption>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n", width, height);
    for (k = 0; k <= NCOST_GROUPS; k++)                          /* legend */
        fprintf(f, "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"18\">%s</text>\n", label_w + (int)k * 95, colour[k],
                label_w + (int)k * 95 + 16, k < NCOST_GROUPS ? cost_groups[k][1] : "load+rest");
    y = 34;
    for (i = 0; i < n; i++, y += bar_h + gap) {
        const json_t *run = json_array_get(runs, i);
        const json_t *us = json_object_get(json_object_get(run, "cost"), "cpu_us_per_request");
        double x = label_w;

        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label_w - 8, y + bar_h - 4);
        html_text(f, jstr(run, "strategy", "?"));
        fprintf(f, "</text>\n");
        if (us == NULL)
            continue;
        for (k = 0; k <= NCOST_GROUPS; k++) {
            const char *key = k < NCOST_GROUPS ? cost_groups[k][0] : "rest";
            double v = jnum(us, key), w = v / max * chart_w;
            if (v <= 0)
                continue;
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                    "<title>%s: %.0f us</title></rect>", x, y, w, bar_h - 2, colour[k],
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

    fprintf(f, "<table><tr><th>strategy</th><th>req/s</th><th>sold/s</th><th>sold</th>"
            "<th>final</th><th>oversold</th><th>lost updates</th><th>failed</th>"
            "<th>ceiling/s</th><th>efficiency</th><th>seeds req/s*</th></tr>\n");
    json_array_foreach(runs, i, run) {
        struct row r;
        int bad = jint(run, "oversold") > 0 || jint(run, "lost_updates") != 0;
        row_fill(&r, run);
        fprintf(f, "<tr%s><td>", bad ? " class=\"bad\"" : "");
        html_text(f, r.name);
        fprintf(f, "</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td>"
                "<td class=n>%s</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td>"
                "<td class=n>%s</td><td class=n>%s</td><td class=n>%s</td></tr>\n",
                r.rps, r.sold_s, r.sold, r.final, r.oversold, r.lost, r.errs,
                r.ceiling, r.eff, r.seed);
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
        fprintf(f, "<tr><td>");
        html_text(f, jstr(run, "strategy", "?"));
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

static void write_html(FILE *f, const json_t *res)
{
    const json_t *runs = json_object_get(res, "runs"), *run, *settings, *lim;
    struct series thr[2] = { { "ours: requests/s", "#3366cc", { 0 } },
                             { "seeds (course authors' hardware): requests/s", "#bbbbbb", { 0 } } };
    struct series bad[2] = { { "oversold units", "#cc3333", { 0 } },
                             { "lost updates", "#ee9933", { 0 } } };
    struct series eff[1] = { { "sold/s ÷ ceiling of its path, %", "#339966", { 0 } } };
    int have_seeds = 0;
    const char *k;
    json_t *v;
    size_t i;

    settings = json_object_get(res, "settings");
    lim = json_object_get(json_object_get(res, "limits"), "ceilings");
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
            "another; efficiency = sold per second ÷ the ceiling of the strategy's path, "
            "measured by ll-limits on the same servers with no HTTP in between. Rows in red "
            "sold what they did not have.</p>\n");
    html_runs_table(f, runs);
    if (have_seeds)
        fprintf(f, "<p class=note>* The seeds' published JMeter results (5000 units, 100 "
                "threads × 50 loops through nginx to three instances), measured by the course "
                "authors on their hardware: compare shapes, not absolute numbers.</p>\n");
    if (!strcmp(jstr(settings, "driver", ""), "wrk"))
        fprintf(f, "<p class=note>%s</p>\n", wrk_note);
    fprintf(f, "<p class=note>%s</p>\n", serial_note);
    print_concurrent(f, runs, FMT_HTML);
    print_topology(f, res, FMT_HTML);
    svg_bars(f, "Throughput", "requests/s", runs, thr, have_seeds ? 2 : 1);
    svg_bars(f, "Oversold units and lost updates", "units", runs, bad, 2);
    svg_bars(f, "Efficiency", "%", runs, eff, 1);
    fprintf(f, "<h2>Latency, ms</h2>\n<p class=note>Client: every request, from the load "
            "generator. Server: the instances' summaries merged, weighted by requests "
            "(an estimate when more than one instance served).</p>\n");
    html_latency_table(f, runs);
    print_cost(f, runs, FMT_HTML);
    svg_cost(f, runs);
    fprintf(f, "<h2>Ceilings</h2>\n<p class=note>%s</p>\n<table><tr><th>ceiling</th>"
            "<th>per second</th><th>trials</th><th>what ll-limits did</th></tr>\n",
            trials_note);
    json_object_foreach((json_t *)lim, k, v) {
        fprintf(f, "<tr><td>");
        html_text(f, k);
        if (json_object_get(v, "error"))
            fprintf(f, "</td><td class=n>n/a</td><td></td><td>");
        else {
            fprintf(f, "</td><td class=n>%.0f</td><td class=n>", jnum(v, "rate"));
            print_trials(f, v);
            fprintf(f, "</td><td>");
        }
        html_text(f, jstr(v, "what", ""));
        if (json_object_get(v, "error")) {
            fprintf(f, " — ");
            html_text(f, jstr(v, "error", ""));
        }
        fprintf(f, " (%lld connection%s)</td></tr>\n", jint(v, "connections"),
                jint(v, "connections") == 1 ? "" : "s");
    }
    fprintf(f, "</table>\n<h2>Machine</h2>\n");
    html_kv(f, json_object_get(res, "machine"), machine_keys,
            sizeof machine_keys / sizeof machine_keys[0]);
    fprintf(f, "<h2>Settings</h2>\n");
    html_kv(f, settings, setting_keys, sizeof setting_keys / sizeof setting_keys[0]);
    fprintf(f, "</body></html>\n");
}

/* ---------------------------------------------------------------- commands */

static int cmd_locks(const char *path)
{
    json_t *j = load_json(path), *s;
    size_t i;

    json_array_foreach(json_object_get(j, "strategies"), i, s)
        printf("%s\t%s\n", jstr(s, "name", "?"), jstr(s, "family", "-"));
    json_decref(j);
    return 0;
}

/* One run's live line. With NAME and the instances' stats, sold is their
 * count for NAME (as in results.json); without, the client's 200s. */
static int cmd_line(const char *stock_s, const char *load_path, const char *stock_path,
                    const char *name, int nstats, char **stats_paths)
{
    json_t *load = load_json(load_path), *after = load_json(stock_path);
    long long stock = atoll(stock_s), fin = jint(after, "count"), sold;
    struct answers a;
    int i;

    count_answers(load, &a);
    sold = nstats > 0 ? 0 : a.sold;
    for (i = 0; i < nstats; i++) {
        json_t *st = load_json(stats_paths[i]);
        sold += jint(json_object_get(json_object_get(st, "strategies"), name), "sold");
        json_decref(st);
    }
    printf("sold %lld  sold_out %lld  failed %lld  final %lld  oversold %lld  lost %lld  "
           "%.1f req/s  p99 %.1f ms\n", sold, a.sold_out,
           a.timeouts + a.unavailable + a.errors + a.other + a.transport, fin,
           harness_oversold(stock, sold), harness_lost(stock, sold, fin),
           jnum(load, "rps"), jnum(load, "lat_p99_ms"));
    json_decref(load);
    json_decref(after);
    return 0;
}

/* The seeds' published numbers go beside ours only where the runs are the
 * seeds' own (scenario seeds): next to another scenario they mislead. */
static json_t *build_runs(const char *raw, long long stock, int with_seed, const json_t *limits)
{
    char *tsv = path_join(raw, "runs.tsv"), *lp = path_join(raw, "locks.json"), line[512];
    json_t *runs = json_array(), *locks = load_json(lp);
    FILE *f = fopen(tsv, "r");

    if (f == NULL)
        die("%s: %s", tsv, strerror(errno));
    while (fgets(line, sizeof line, f)) {
        char idx[16], name[NAME_LEN], family[NAME_LEN], file[NAME_LEN + 32], *p;
        json_t *load, *after, *cost, *inst = json_array();
        int k;

        if (sscanf(line, "%15s %63s %63s", idx, name, family) != 3)
            continue;
        snprintf(file, sizeof file, "%s.load.json", idx);
        p = path_join(raw, file);
        load = load_json(p);
        free(p);
        snprintf(file, sizeof file, "%s.stock.json", idx);
        p = path_join(raw, file);
        after = load_json(p);
        free(p);
        snprintf(file, sizeof file, "%s.cost.json", idx);
        p = path_join(raw, file);
        cost = json_load_file(p, 0, NULL);      /* NULL: not measured */
        free(p);
        for (k = 0;; k++) {
            FILE *probe;
            snprintf(file, sizeof file, "%s.stats-%d.json", idx, k);
            p = path_join(raw, file);
            probe = fopen(p, "r");
            if (probe)
                fclose(probe);
            if (probe)
                json_array_append_new(inst, load_json(p));
            free(p);
            if (probe == NULL)
                break;
        }
        json_array_append_new(runs, derive_run(name, family, stock, with_seed, load, after,
                                                     inst, limits, locks, cost));
        json_decref(cost);
        json_decref(load);
        json_decref(after);
        json_decref(inst);
    }
    fclose(f);
    free(tsv);
    free(lp);
    json_decref(locks);
    return runs;
}

static void write_file(const char *dir, const char *name, void (*fn)(FILE *, const json_t *),
                       const json_t *res)
{
    char *p = path_join(dir, name);
    FILE *f = fopen(p, "w");

    if (f == NULL)
        die("%s: %s", p, strerror(errno));
    fn(f, res);
    if (fclose(f) != 0)
        die("%s: %s", p, strerror(errno));
    free(p);
}

static int cmd_build(const char *dir)
{
    char *raw = path_join(dir, "raw"), *p;
    json_t *res, *settings, *limits;
    long long stock;

    p = path_join(raw, "settings.env");
    settings = load_env(p);
    free(p);
    p = path_join(raw, "limits.json");
    limits = json_load_file(p, 0, NULL);
    free(p);
    if (limits == NULL)
        limits = json_pack("{s:{}}", "ceilings");
    stock = jint(settings, "stock");
    p = path_join(raw, "machine.env");
    res = json_pack("{s:i,s:s,s:o,s:o,s:o}", "version", 1, "tool", "locklab bench/compare",
                    "settings", settings, "machine", load_env(p), "limits", limits);
    free(p);
    /* MariaDB's and Redis's versions as the servers themselves tell them. */
    {
        json_t *m = json_object_get(res, "machine");
        json_t *vers = json_object_get(limits, "versions");
        const char *k;
        json_t *v;
        json_object_foreach(vers, k, v)
            json_object_set(m, k, v);
    }
    json_object_set_new(res, "runs", build_runs(raw, stock,
                            !strcmp(jstr(settings, "scenario", ""), "seeds"), limits));
    p = path_join(dir, "results.json");
    if (json_dump_file(res, p, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
        die("%s: cannot write", p);
    free(p);
    write_file(dir, "report.md", write_md, res);
    write_file(dir, "report.html", write_html, res);
    print_table(stdout, res);
    print_cost(stdout, json_object_get(res, "runs"), FMT_TEXT);
    print_topology(stdout, res, FMT_TEXT);
    json_decref(res);
    free(raw);
    return 0;
}

static int cmd_table(const char *path)
{
    json_t *res = load_json(path);
    print_table(stdout, res);
    json_decref(res);
    return 0;
}

static int cmd_check(const char *path)
{
    json_t *res = load_json(path), *runs = json_object_get(res, "runs"), *run;
    long long stock = jint(json_object_get(res, "settings"), "stock");
    int bad = 0;
    size_t i;

#define EXPECT(cond, ...) do { if (!(cond)) { bad++; \
        fprintf(stderr, "ll-report check: %s: ", path); fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); } } while (0)
    EXPECT(jint(res, "version") == 1, "version is not 1");
    EXPECT(json_is_object(json_object_get(res, "machine")), "no machine");
    EXPECT(json_is_object(json_object_get(res, "limits")), "no limits");
    EXPECT(json_array_size(runs) > 0, "no runs");
    json_array_foreach(runs, i, run) {
        const char *name = jstr(run, "strategy", "?");
        struct answers a;
        long long fin = jint(run, "final");

        count_answers(json_object_get(run, "load"), &a);
        EXPECT(a.requests > 0, "%s: no requests", name);
        EXPECT(a.sold == jint(run, "answered_sold"), "%s: answered_sold %lld is not the 200 "
               "answers %lld", name, jint(run, "answered_sold"), a.sold);
        EXPECT(jint(run, "sold") == jint(json_object_get(run, "server"), "sold"),
               "%s: sold %lld is not the instances' count %lld", name, jint(run, "sold"),
               jint(json_object_get(run, "server"), "sold"));
        EXPECT(a.sold + a.sold_out + a.timeouts + a.unavailable + a.errors + a.other +
               a.transport == a.requests, "%s: answers do not add up to %lld requests",
               name, a.requests);
        EXPECT(json_is_integer(json_object_get(run, "final")), "%s: no final stock", name);
        EXPECT(jint(run, "oversold") == harness_oversold(stock, jint(run, "sold")),
               "%s: oversold", name);
        EXPECT(jint(run, "lost_updates") == harness_lost(stock, jint(run, "sold"), fin),
               "%s: lost", name);
        if (json_is_object(json_object_get(run, "cost"))) {
            const json_t *c = json_object_get(run, "cost");
            const json_t *us = json_object_get(c, "cpu_us_per_request");
            size_t g;
            EXPECT(jnum(c, "busy") > 0 && jnum(c, "busy") <= 1, "%s: busy share %.3f",
                   name, jnum(c, "busy"));
            EXPECT(jnum(us, "total") > 0, "%s: no CPU time per request", name);
            for (g = 0; g < NCOST_GROUPS; g++)
                EXPECT(jnum(us, cost_groups[g][0]) >= 0, "%s: %s CPU time below 0",
                       name, cost_groups[g][0]);
        }
        /* A purchase that held the lock sold or found it sold out (or
         * failed after): no more holds than answers of the instances. */
        {
            const json_t *srv = json_object_get(run, "server");
            const json_t *hold = json_object_get(run, "lock_hold_us");
            EXPECT(jint(srv, "holds") <= jint(srv, "requests"), "%s: %lld holds of %lld "
                   "purchases", name, jint(srv, "holds"), jint(srv, "requests"));
            EXPECT(jint(srv, "holds") > 0 ? json_is_number(hold) &&
                   jnum(run, "lock_hold_us") == harness_hold_us(jint(srv, "held_us"),
                                                                jint(srv, "holds"))
                   : json_is_null(hold), "%s: lock_hold_us disagrees with the holds", name);
        }
        /* Every 200 the client saw was a sale some instance counted (the
         * instances may count more: requests wrk left in flight). */
        EXPECT(jint(json_object_get(run, "server"), "sold") >= a.sold,
               "%s: the instances counted %lld sales, the client %lld", name,
               jint(json_object_get(run, "server"), "sold"), a.sold);
    }
#undef EXPECT
    json_decref(res);
    if (bad == 0)
        printf("%s: valid\n", path);
    return bad ? 1 : 0;
}

/* JMeter's CSV results: split one line into at most max fields, in place,
 * honouring "quoted, fields" with "" for a quote. */
static int csv_split(char *line, char **field, int max)
{
    int n = 0;
    char *r = line, *w;

    while (n < max) {
        field[n++] = w = r;
        if (*r == '"') {
            r++;
            for (; *r; r++) {
                if (*r == '"' && r[1] == '"')
                    *w++ = *r++;
                else if (*r == '"')
                    break;
                else
                    *w++ = *r;
            }
            if (*r == '"')
                r++;
        } else {
            while (*r && *r != ',' && *r != '\n' && *r != '\r')
                *w++ = *r++;
        }
        if (*r != ',') {
            *w = '\0';
            break;
        }
        *w = '\0';
        r++;
    }
    return n;
}

static int csv_column(char **field, int n, const char *name)
{
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(field[i], name) == 0)
            return i;
    die("JMeter results have no '%s' column (save field names: "
        "-Jjmeter.save.saveservice.print_field_names=true)", name);
}

static int cmd_jtl(const char *path, long long stock, long long fin)
{
    char line[8192], *field[64];
    int nf, c_ts, c_el, c_code, c_ok, c_label;
    long long samples = 0, failures = 0, sold = 0, sold_out = 0, other = 0;
    double *el = NULL, sum = 0, first = -1, last = 0, span;
    size_t cap = 0;
    char label[128] = "";
    FILE *f = fopen(path, "r");

    if (f == NULL)
        die("%s: %s", path, strerror(errno));
    if (fgets(line, sizeof line, f) == NULL)
        die("%s: empty", path);
    nf = csv_split(line, field, 64);
    c_ts = csv_column(field, nf, "timeStamp");
    c_el = csv_column(field, nf, "elapsed");
    c_label = csv_column(field, nf, "label");
    c_code = csv_column(field, nf, "responseCode");
    c_ok = csv_column(field, nf, "success");
    while (fgets(line, sizeof line, f)) {
        double ts, e;
        if (csv_split(line, field, 64) < nf)
            continue;
        ts = atof(field[c_ts]);
        e = atof(field[c_el]);
        if ((size_t)samples == cap) {
            cap = cap ? cap * 2 : 1024;
            el = realloc(el, cap * sizeof *el);
            if (el == NULL)
                abort();                      /* out of memory */
        }
        el[samples++] = e;
        sum += e;
        if (first < 0 || ts < first)
            first = ts;
        if (ts + e > last)
            last = ts + e;
        failures += strcmp(field[c_ok], "true") != 0;
        if (strcmp(field[c_code], "200") == 0)
            sold++;
        else if (strcmp(field[c_code], "409") == 0)
            sold_out++;
        else
            other++;
        snprintf(label, sizeof label, "%s", field[c_label]);
    }
    fclose(f);
    span = (last - first) / 1000.0;
    printf("%-18s %8s %8s %7s %9s %9s %9s %6s %6s %8s %11s\n", "Label", "# Samples",
           "Average", "Median", "90% Line", "95% Line", "99% Line", "Min", "Max",
           "Error %", "Throughput");
    printf("%-18s %8lld %8.0f %7.0f %9.0f %9.0f %9.0f %6.0f %6.0f %7.2f%% %9.1f/s\n",
           label, samples, samples ? sum / (double)samples : 0.0,
           harness_percentile(el, (size_t)samples, 0.50),
           harness_percentile(el, (size_t)samples, 0.90),
           harness_percentile(el, (size_t)samples, 0.95),
           harness_percentile(el, (size_t)samples, 0.99),
           harness_percentile(el, (size_t)samples, 0.0),
           harness_percentile(el, (size_t)samples, 1.0),
           samples ? 100.0 * (double)failures / (double)samples : 0.0,
           harness_rate(samples, span));
    printf("(times in ms; errors are every answer but 2xx, sold out 409 included)\n");
    printf("answers: %lld sold (200), %lld sold out (409), %lld other\n", sold, sold_out, other);
    if (stock >= 0)
        printf("stock %lld -> final %lld: sold %lld, oversold %lld, lost updates %lld\n",
               stock, fin, sold, harness_oversold(stock, sold), harness_lost(stock, sold, fin));
    printf("jtl: samples=%lld sold=%lld sold_out=%lld other=%lld errors=%lld",
           samples, sold, sold_out, other, failures);
    if (stock >= 0)
        printf(" stock=%lld final=%lld oversold=%lld lost=%lld", stock, fin,
               harness_oversold(stock, sold), harness_lost(stock, sold, fin));
    printf("\n");
    free(el);
    return 0;
}

static const char usage[] =
"usage: ll-report locks LOCKS.json\n"
"       ll-report line STOCK LOAD.json STOCK.json [NAME STATS.json...]\n"
"       ll-report build RUNDIR\n"
"       ll-report table RESULTS.json      (the main table only)\n"
"       ll-report check RESULTS.json\n"
"       ll-report jtl RESULTS.csv [--stock S --final F]\n";

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";

    if (!strcmp(cmd, "locks") && argc == 3)
        return cmd_locks(argv[2]);
    if (!strcmp(cmd, "line") && argc >= 5)
        return cmd_line(argv[2], argv[3], argv[4], argc > 5 ? argv[5] : NULL,
                        argc > 6 ? argc - 6 : 0, argv + 6);
    if (!strcmp(cmd, "build") && argc == 3)
        return cmd_build(argv[2]);
    if (!strcmp(cmd, "table") && argc == 3)
        return cmd_table(argv[2]);
    if (!strcmp(cmd, "check") && argc == 3)
        return cmd_check(argv[2]);
    if (!strcmp(cmd, "jtl") && (argc == 3 || argc == 7)) {
        long long stock = -1, fin = 0;
        if (argc == 7) {
            if (strcmp(argv[3], "--stock") || strcmp(argv[5], "--final"))
                goto bad;
            stock = atoll(argv[4]);
            fin = atoll(argv[6]);
        }
        return cmd_jtl(argv[2], stock, fin);
    }
bad:
    fputs(usage, stderr);
    return 2;
}
