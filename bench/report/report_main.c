/* report_main.c — ll-report: the comparison's JSON, table and reports.
 *
 * bench/compare does the HTTP and leaves its raw measurements in
 * RUN/raw/; everything that parses JSON or does arithmetic is here, with
 * the arithmetic itself in harness.c:
 *
 *   ll-report locks LOCKS.json          GET /locks → "name<TAB>family<TAB>fence
 *                                       <TAB>distributed<TAB>stock<TAB>exact
 *                                       <TAB>skip" lines (stock: mysql or
 *                                       redis; the booleans 0 or 1; skip: 1
 *                                       when compare_skip says to leave it
 *                                       out of the default runs)
 *   ll-report line STOCK LOAD.json STOCK.json [--redis] [NAME STATS.json…]
 *                                       one progress line for a finished run
 *                                       (--redis: the stock is Redis's, and
 *                                       the line shows the three stores)
 *   ll-report build RUN                 RUN/raw/ → RUN/results.json,
 *                                       RUN/report.md, RUN/report.html, and
 *                                       the table on stdout
 *   ll-report table RESULTS.json        the table again
 *   ll-report check RESULTS.json        validate: every run's counts add up
 *                                       and its derived numbers agree with
 *                                       its raw ones; exit 1 if not
 *   ll-report bounds RESULTS.json       the exact runs against their
 *                                       ceilings: one line, and exit 1 if
 *                                       one passed its ceiling by more than
 *                                       the ceiling's spread (compare's
 *                                       assertion, report_ceiling.c)
 *   ll-report jtl RESULTS.csv [--stock S --final F]
 *                                       JMeter's aggregate report from a CSV
 *                                       results file, plus the sale counts
 *   ll-report cost BEFORE AFTER         two snapshots of the stack's CPU
 *                                       time and context switches → the
 *                                       run's NN.cost.json (report_cost.c)
 *   ll-report limits-merge BEFORE AFTER two passes of ll-limits (before and
 *                                       after the runs) as one limits.json:
 *                                       the faster pass's ceiling, both
 *                                       passes' trials and their spread
 *                                       (report_ceiling.c)
 *   ll-report get FILE|- KEY[.KEY...]   one value of a JSON document (an
 *                                       answer of the stack, for scripts)
 *   ll-report stocks STOCK.json...      the GET /stock answers of a run's
 *                                       products (--products) as one: their
 *                                       counts summed
 *   ll-report sync-plan SYNC.json       the synchronizers' runs (report_sync.c)
 *   ll-report sync RUN                  their results, invariants checked
 *   ll-report sample NAME               the instances' /stats on stdin, one
 *                                       a line: "REQUESTS SOLD" of NAME
 *                                       added up (compare's polls of a wrk
 *                                       run, report_time.c)
 *   ll-report sweep RUN                 compare --sweep's points (RUN/
 *                                       points.tsv) → sweep.json, sweep.md,
 *                                       sweep.html (report_sweep.c)
 *   ll-report capacity-next RAW IDX     compare --scenario capacity: the next
 *                                       open-loop step's rate of run IDX, or
 *                                       nothing (report_capacity.c)
 *   ll-report capacity-step RAW IDX K   step K's verdict; K = 0: the capacity
 *   ll-report matrix-plan LOCKS.json STRATEGIES FAULTS PARALLEL
 *                                       compare --scenario matrix's cells
 *                                       and rounds (report_matrix.c)
 *   ll-report matrix RUN [--drop-claim S:F]...
 *                                       their verdicts against the claims
 *                                       → report.json, .md, .html; exit 1
 *                                       when a claim or a round broke
 *
 * RUN/raw/ holds settings.env and machine.env (key=value lines written by
 * bench/compare), limits.json (ll-limits), locks.json (GET /locks: each
 * strategy's ceiling), runs.tsv (one line per strategy:
 * index, name, family) and for run NN: NN.load.json (ll-load --json or
 * wrk-count.lua), NN.stock.json (GET /stock after the run), NN.stats-I.json
 * (GET /stats of instance I), NN.cost.json (ll-report cost), its warm-up's
 * NN.warmup.json (ll-load --json: its steady rate, report_ceiling.c) and,
 * for a wrk run, NN.series.tsv (compare's polls: report_time.c); and, when
 * compare measured them, http.load.json (GET /health through the same
 * front end: the HTTP tier's ceiling) with its warm-up's http.warmup.json,
 * and the retry storms of orders
 * (storms.tsv: index, strategy, stock source, copies; storm-NN.load.json,
 * storm-NN.stock.json, storm-NN.stats-I.json). report_stock.c reads those.
 * A capacity run NN has its open-loop steps too, NN.capacity.tsv ("K<TAB>
 * rate") and each step's NN.cKK.load.json, .stock.json, .stats-I.json
 * (report_capacity.c).
 *
 * results.json keeps the raw answers (limits, every instance's stats) next
 * to the derived numbers, so that a report can be rebuilt or re-checked.
 * This file holds the commands; the sections they use are files of their
 * own, listed in report_private.h.
 */
#include "report_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NAME_LEN 64

/* ---------------------------------------------------------------- commands */

static int cmd_locks(const char *path)
{
    json_t *j = load_json(path), *s;
    size_t i;

    json_array_foreach(json_object_get(j, "strategies"), i, s)
        printf("%s\t%s\t%s\t%d\t%s\t%d\t%d\n", jstr(s, "name", "?"), jstr(s, "family", "-"),
               jstr(s, "fence", "-"), json_is_true(json_object_get(s, "distributed")),
               jstr(s, "stock", "mysql"), json_is_true(json_object_get(s, "exact")),
               json_object_get(s, "compare_skip") != NULL);
    json_decref(j);
    return 0;
}

/* One run's live line. With NAME and the instances' stats, sold is their
 * count for NAME (as in results.json); without, the client's 200s. With
 * `redis`, the stock is Redis's, and the line ends with the three stores. */
static int cmd_line(const char *stock_s, const char *load_path, const char *stock_path,
                    int redis, const char *name, int nstats, char **stats_paths)
{
    json_t *load = load_json(load_path), *after = load_json(stock_path);
    json_t *rc = redis ? derive_reconcile(after) : NULL;
    long long stock = atoll(stock_s), sold;
    long long fin = redis ? jint(rc, "redis") : jint(after, "count");
    struct answers a;
    int i;

    count_answers(load, &a);
    sold = nstats > 0 ? 0 : a.sold;
    for (i = 0; i < nstats; i++) {
        json_t *st = load_json(stats_paths[i]);
        sold += jint(json_object_get(json_object_get(st, "strategies"), name), "sold");
        json_decref(st);
    }
    printf("sold %lld  sold_out %lld  failed %lld  unknown %lld  final %lld  oversold %lld  "
           "lost %lld  %.1f req/s  p99 %.1f ms", sold, a.sold_out,
           a.timeouts + a.unavailable + a.errors + a.other + a.transport, a.unknown, fin,
           harness_oversold(stock, sold), harness_lost(stock, sold, fin),
           jnum(load, "rps"), jnum(load, "lat_p99_ms"));
    if (rc)
        printf("  mysql %lld  in flight %lld  %s", jint(rc, "mysql"), jint(rc, "in_flight"),
               !json_is_true(json_object_get(rc, "reconciled")) ? "NOT RECONCILED"
               : json_is_true(json_object_get(rc, "drained")) ? "reconciled, drained"
                                                               : "reconciled");
    putchar('\n');
    json_decref(rc);
    json_decref(load);
    json_decref(after);
    return 0;
}

/* The seeds' published numbers go beside ours only where the runs are the
 * seeds' own (scenario seeds): next to another scenario they mislead.
 * seed_instances: how many instances served the load (0: no seeds), so
 * that a figure goes only beside a run on as many (report_derive.c). */
static json_t *build_runs(const char *raw, long long stock, long long seed_instances,
                          const json_t *limits, const json_t *settings)
{
    char *tsv = path_join(raw, "runs.tsv"), *lp = path_join(raw, "locks.json"), line[512];
    json_t *runs = json_array(), *locks = json_load_file(lp, 0, NULL);  /* NULL: none */
    FILE *f = fopen(tsv, "r");

    if (f == NULL)
        die("%s: %s", tsv, strerror(errno));
    while (fgets(line, sizeof line, f)) {
        char idx[16], name[NAME_LEN], family[NAME_LEN], variant[NAME_LEN] = "-";
        char file[NAME_LEN + 32];
        json_t *load, *after, *cost, *check, *inst, *run, *warm;

        if (sscanf(line, "%15s %63s %63s %63s", idx, name, family, variant) < 3)
            continue;
        load = load_part(raw, "%s.load.json", idx, 0);
        after = load_part(raw, "%s.stock.json", idx, 0);
        cost = load_part(raw, "%s.cost.json", idx, 1);     /* NULL: not measured */
        check = load_part(raw, "%s.check.json", idx, 1);   /* NULL: no ledger checked */
        warm = load_part(raw, "%s.warmup.json", idx, 1);   /* NULL: no warm-up kept */
        snprintf(file, sizeof file, "%s.stats", idx);
        inst = load_numbered(raw, file);
        run = derive_run(name, family, stock, seed_instances, load, after, inst, locks, cost);
        derive_ceiling(run, limits, locks, warm, settings);  /* report_ceiling.c */
        derive_time(run, raw, idx, load);                    /* report_time.c */
        derive_capacity(run, raw, idx, settings, locks);     /* report_capacity.c */
        /* A fault scenario's run: with ?fence=1 or not, and ll-check's
         * verdict on the ledger. */
        json_object_set_new(run, "fence", json_boolean(!strcmp(variant, "fence")));
        if (check)
            json_object_set_new(run, "check", json_incref(check));
        json_array_append_new(runs, run);
        json_decref(check);
        json_decref(warm);
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
    /* The HTTP tier's ceiling, measured by compare itself (report_stock.c). */
    p = path_join(raw, "http.load.json");
    {
        char *wp = path_join(raw, "http.warmup.json");
        json_t *hl = json_load_file(p, 0, NULL), *hw = json_load_file(wp, 0, NULL), *http;
        /* A run of so many requests is not steady: its warm-up is. */
        http = derive_http(hl, jint(settings, "duration_s") > 0 ? NULL : hw,
                           jint(settings, "connections"));
        if (http)
            json_object_set_new(json_object_get(limits, "ceilings"), CEIL_HTTP, http);
        json_decref(hl);
        json_decref(hw);
        free(wp);
    }
    free(p);
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
                            !strcmp(jstr(settings, "scenario", ""), "seeds") &&
                            jint(settings, "products") <= 1 ? served_instances(settings) : 0,
                            limits, settings));
    json_object_set_new(res, "storms", build_storms(raw, jint(settings, "storm_stock")));
    /* How tall report.html's first screen is: report.png (bench/compare). */
    json_object_set_new(res, "first_screen_px", json_integer(overview_height(res)));
    p = path_join(dir, "results.json");
    if (json_dump_file(res, p, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
        die("%s: cannot write", p);
    free(p);
    write_file(dir, "report.md", write_md, res);
    write_file(dir, "report.html", write_html, res);
    print_summary(stdout, res);                          /* report_page.c */
    json_decref(res);
    free(raw);
    return 0;
}

static int cmd_table(const char *path)
{
    json_t *res = load_json(path);
    print_runs(stdout, res, FMT_TEXT);
    json_decref(res);
    return 0;
}

static int cmd_bounds(const char *path)
{
    json_t *res = load_json(path);
    int above = summarize_bounds(res, path);

    json_decref(res);
    return above ? 1 : 0;
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
        EXPECT(a.sold + a.sold_out + a.timeouts + a.unavailable + a.errors + a.unknown +
               a.other + a.transport == a.requests, "%s: answers do not add up to %lld requests",
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
    bad += check_stock(res, path);
    bad += check_time(res, path);
    bad += check_bounds(res, path);
    json_decref(res);
    if (bad == 0)
        printf("%s: valid\n", path);
    return bad ? 1 : 0;
}

/* One value of a JSON document: a string as it is, anything else as JSON
 * (a number as a number). Each KEY of the path names a member of an
 * object, or, all digits, an element of an array. Exit 1 when the path
 * leads nowhere. */
static int cmd_get(const char *path, const char *keys)
{
    json_t *doc = load_json(path), *v = doc;
    const char *k = keys;

    while (v != NULL && *k != '\0') {
        char key[256], *end;
        size_t n = strcspn(k, ".");
        unsigned long i;

        if (n >= sizeof key)
            die("get: key too long in %s", keys);
        memcpy(key, k, n);
        key[n] = '\0';
        k += n + (k[n] == '.');
        i = strtoul(key, &end, 10);
        v = json_is_array(v) && key[0] >= '0' && key[0] <= '9' && *end == '\0'
            ? json_array_get(v, i) : json_object_get(v, key);
    }
    if (v == NULL)
        die("%s: no %s", path, keys);
    if (json_is_string(v)) {
        puts(json_string_value(v));
    } else {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER |
                                JSON_REAL_PRECISION(15));
        puts(text);
        free(text);
    }
    json_decref(doc);
    return 0;
}

static const char usage[] =
"usage: ll-report locks LOCKS.json\n"
"       ll-report line STOCK LOAD.json STOCK.json [--redis] [NAME STATS.json...]\n"
"       ll-report build RUNDIR\n"
"       ll-report table RESULTS.json      (the main table only)\n"
"       ll-report check RESULTS.json\n"
"       ll-report bounds RESULTS.json     (exact runs against their ceilings; 1 if above)\n"
"       ll-report jtl RESULTS.csv [--stock S --final F]\n"
"       ll-report cost BEFORE AFTER       (NN.cost.json from two snapshots)\n"
"       ll-report limits-merge BEFORE AFTER (two passes of ll-limits as one limits.json)\n"
"       ll-report get FILE|- KEY[.KEY...] (one value of a JSON document)\n"
"       ll-report stocks STOCK.json...    (the products' GET /stock answers, summed)\n"
"       ll-report sync-plan SYNC.json     (the synchronizers' runs, from GET /sync)\n"
"       ll-report sync RUNDIR             (their results, invariants checked)\n"
"       ll-report sample NAME < STATS     (NAME's purchases and sales, /stats a line)\n"
"       ll-report sweep RUNDIR            (compare --sweep's points: sweep.json, .md, .html)\n"
"       ll-report rtt RUNDIR              (compare --rtt's points: rtt.json, .md, .html)\n"
"       ll-report capacity-next RAW IDX   (compare --scenario capacity: the next step's rate)\n"
"       ll-report capacity-step RAW IDX K (its step K's verdict; 0: the capacity)\n"
"       ll-report matrix-plan LOCKS.json STRATEGIES FAULTS PARALLEL (the matrix's cells)\n"
"       ll-report matrix RUNDIR [--drop-claim S:F]... (their verdicts: report.json, .md, .html)\n";

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";

    cli_init("ll-report", 1);
    if (!strcmp(cmd, "locks") && argc == 3)
        return cmd_locks(argv[2]);
    if (!strcmp(cmd, "line") && argc >= 5) {
        int redis = argc > 5 && !strcmp(argv[5], "--redis");
        return cmd_line(argv[2], argv[3], argv[4], redis, argc > 5 + redis ? argv[5 + redis] : NULL,
                        argc > 6 + redis ? argc - 6 - redis : 0, argv + 6 + redis);
    }
    if (!strcmp(cmd, "build") && argc == 3)
        return cmd_build(argv[2]);
    if (!strcmp(cmd, "table") && argc == 3)
        return cmd_table(argv[2]);
    if (!strcmp(cmd, "check") && argc == 3)
        return cmd_check(argv[2]);
    if (!strcmp(cmd, "bounds") && argc == 3)
        return cmd_bounds(argv[2]);
    if (!strcmp(cmd, "cost") && argc == 4)
        return cmd_cost(argv[2], argv[3]);
    if (!strcmp(cmd, "limits-merge") && argc == 4)
        return cmd_limits_merge(argv[2], argv[3]);
    if (!strcmp(cmd, "get") && argc == 4)
        return cmd_get(argv[2], argv[3]);
    if (!strcmp(cmd, "stocks") && argc >= 3)
        return cmd_stocks(argc - 2, argv + 2);
    if (!strcmp(cmd, "sync-plan") && argc == 3)
        return cmd_sync_plan(argv[2]);
    if (!strcmp(cmd, "sync") && argc == 3)
        return cmd_sync(argv[2]);
    if (!strcmp(cmd, "sample") && argc == 3)
        return cmd_sample(argv[2]);
    if (!strcmp(cmd, "sweep") && argc == 3)
        return cmd_sweep(argv[2]);
    if (!strcmp(cmd, "rtt") && argc == 3)
        return cmd_rtt(argv[2]);
    if (!strcmp(cmd, "capacity-next") && argc == 4)
        return cmd_capacity_next(argv[2], argv[3]);
    if (!strcmp(cmd, "capacity-step") && argc == 5) {
        long long k;
        if (cli_number(argv[4], 0, 99, &k) != 0)
            goto bad;
        return cmd_capacity_step(argv[2], argv[3], (int)k);
    }
    if (!strcmp(cmd, "matrix-plan") && argc == 6)
        return cmd_matrix_plan(argv[2], argv[3], argv[4], argv[5]);
    if (!strcmp(cmd, "matrix") && argc >= 3)
        return cmd_matrix(argc - 2, argv + 2);
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
