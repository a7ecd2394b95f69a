/* report_sync.c — ll-report's side of bench/compare --scenario sync: the
 * plan of the runs, and their results with the invariant checked from
 * what each answer says it was granted.
 *
 *   ll-report sync-plan SYNC.json   GET /sync → one line per synchronizer
 *                                   with a bench operation:
 *                                   "NN<TAB>primitive<TAB>backend<TAB>
 *                                   /sync/<primitive>/<op>?…&name=…&backend=…
 *                                   <TAB>names to reset, comma-separated"
 *   ll-report sync RUN              RUN/raw/ → RUN/results-sync.json,
 *                                   RUN/report-sync.md and the table
 *
 * RUN/raw/ holds sync.json (GET /sync), limits.json (ll-limits --only sync)
 * and, for run NN of the plan, NN.load.json (ll-load --json) and NN.bodies
 * (ll-load --bodies: every answer, one a line).
 *
 * The invariant (each table's bench_check) is judged on the answers that
 * say "ok", from the interval [granted_at_us, released_at_us) each names
 * (wall-clock microseconds; released_at is taken before the release is
 * sent, so the interval lies within the real hold: an overlap of intervals
 * is an overlap of holds) and the values they report:
 *   holders<=N   sweep the intervals in time order, releases before grants
 *                at one instant (half-open intervals; an empty one, a hold
 *                shorter than the clock's resolution, overlaps nothing); a
 *                grant that finds N holders already is a violation (a
 *                permit over the maximum);
 *   rw           a write grant that finds any holder, or a read grant that
 *                finds a writer, is a violation (a reader beside a writer);
 *   distinct:F   every value of F answered twice is a violation (a lost
 *                increment: two callers wrote the same count).
 * Violations are reported as the lock scenarios report oversold units.
 */
#include "report_private.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PLAN_MAX 64

struct plan {
    char idx[12], primitive[40], backend[16], query[400], reset[200];
    const json_t *sync;                 /* its object in GET /sync */
};

/* The runs, from GET /sync's answer: the synchronizers with a bench. */
static int plan_of(const json_t *sync, struct plan *p, int max)
{
    const json_t *s;
    size_t i;
    int n = 0;

    json_array_foreach(json_object_get(sync, "synchronizers"), i, s) {
        const char *bench = jstr(s, "bench", NULL), *names;
        const char *prim = jstr(s, "primitive", "?"), *backend = jstr(s, "backend", "?");
        size_t len;

        if (bench == NULL || n == max)
            continue;
        snprintf(p[n].idx, sizeof p[n].idx, "%02d", n + 1);
        snprintf(p[n].primitive, sizeof p[n].primitive, "%s", prim);
        snprintf(p[n].backend, sizeof p[n].backend, "%s", backend);
        snprintf(p[n].query, sizeof p[n].query, "/sync/%s/%s%sname=bench-%s&backend=%s", prim,
                 bench, strchr(bench, '?') ? "&" : "?", prim, backend);
        snprintf(p[n].reset, sizeof p[n].reset, "bench-%s", prim);
        if ((names = strstr(bench, "names=")) != NULL) {
            names += 6;
            len = strcspn(names, "&");
            snprintf(p[n].reset + strlen(p[n].reset), sizeof p[n].reset - strlen(p[n].reset),
                     ",%.*s", (int)len, names);
        }
        p[n].sync = s;
        n++;
    }
    return n;
}

int cmd_sync_plan(const char *path)
{
    json_t *sync = load_json(path);
    struct plan p[PLAN_MAX];
    int i, n = plan_of(sync, p, PLAN_MAX);

    for (i = 0; i < n; i++)
        printf("%s\t%s\t%s\t%s\t%s\n", p[i].idx, p[i].primitive, p[i].backend, p[i].query,
               p[i].reset);
    json_decref(sync);
    return 0;
}

/* ---------------------------------------------------------------- checks */

struct event {
    long long t;
    int       delta;                    /* +1 grant, -1 release            */
    int       write;
};

static int by_time(const void *x, const void *y)
{
    const struct event *a = x, *b = y;

    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->delta - b->delta;         /* releases first at one ms */
}

static int by_value(const void *x, const void *y)
{
    long long a = *(const long long *)x, b = *(const long long *)y;
    return a < b ? -1 : a > b;
}

struct verdict {
    long long ok, examined, violations;
};

/* Sweep the events: holders<=max (max >= 1) or, with max = 0, rw. */
static long long sweep(struct event *e, size_t n, int max)
{
    long long bad = 0;
    int holders = 0, writers = 0;
    size_t i;

    qsort(e, n, sizeof e[0], by_time);
    for (i = 0; i < n; i++) {
        if (e[i].delta > 0) {
            if (max > 0 ? holders >= max
                        : (e[i].write ? holders > 0 : writers > 0))
                bad++;
            holders++;
            writers += e[i].write;
        } else {
            holders--;
            writers -= e[i].write;
        }
    }
    return bad;
}

static long long duplicates(long long *v, size_t n)
{
    long long bad = 0;
    size_t i;

    qsort(v, n, sizeof v[0], by_value);
    for (i = 1; i < n; i++)
        bad += v[i] == v[i - 1];
    return bad;
}

/* Judge the answers in `bodies` by `check`. */
static void judge(const char *bodies, const char *check, struct verdict *v)
{
    FILE *f = fopen(bodies, "r");
    struct event *ev = NULL;
    long long *vals = NULL;
    size_t nev = 0, cap = 0, nval = 0;
    char line[8192 + 16];
    const char *field = strncmp(check, "distinct:", 9) == 0 ? check + 9 : NULL;
    int max = strncmp(check, "holders<=", 9) == 0 ? atoi(check + 9) : 0;

    memset(v, 0, sizeof *v);
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f)) {
        json_t *a = json_loads(line, 0, NULL);
        if (a == NULL)
            continue;
        if (strcmp(jstr(a, "result", ""), "ok") == 0) {
            v->ok++;
            if (nev + 2 > cap || nval + 1 > cap) {
                cap = cap ? 2 * cap : 1024;
                ev = realloc(ev, cap * sizeof *ev);
                vals = realloc(vals, cap * sizeof *vals);
                if (ev == NULL || vals == NULL)
                    die("out of memory");
            }
            if (field && json_object_get(a, field)) {
                vals[nval++] = jint(a, field);
                v->examined++;
            } else if (!field && check[0] && json_object_get(a, "released_at_us")) {
                int w = strcmp(jstr(a, "lock", ""), "write") == 0;
                long long g = jint(a, "granted_at_us"), r = jint(a, "released_at_us");
                if (r > g) {
                    ev[nev++] = (struct event){ g, +1, w };
                    ev[nev++] = (struct event){ r, -1, w };
                }
                v->examined++;
            }
        }
        json_decref(a);
    }
    fclose(f);
    if (field)
        v->violations = duplicates(vals, nval);
    else if (max > 0 || strcmp(check, "rw") == 0)
        v->violations = sweep(ev, nev, max);
    free(ev);
    free(vals);
}

/* ---------------------------------------------------------------- results */

static json_t *derive(const char *raw, const struct plan *p, const json_t *limits)
{
    char name[32];
    char *lp, *bp;
    json_t *load, *res, *results;
    const char *check = jstr(p->sync, "bench_check", ""), *key = jstr(p->sync, "ceiling", "");
    const json_t *ceil = json_object_get(json_object_get(limits, "ceilings"), key);
    double seconds, rate, ceiling = jnum(ceil, "rate");
    struct verdict v;

    snprintf(name, sizeof name, "%.8s.load.json", p->idx);
    lp = path_join(raw, name);
    snprintf(name, sizeof name, "%.8s.bodies", p->idx);
    bp = path_join(raw, name);
    load = load_json(lp);
    results = json_object_get(load, "result");
    judge(bp, check, &v);
    seconds = jnum(load, "elapsed_s");
    rate = seconds > 0 ? (double)jint(results, "ok") / seconds : 0;
    res = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:I,s:I}",
        "primitive", p->primitive, "backend", p->backend,
        "library", jstr(p->sync, "library", "?"), "bench", jstr(p->sync, "bench", "?"),
        "invariant", jstr(p->sync, "invariant", ""), "check", check, "ceiling_key", key,
        "requests", (json_int_t)jint(load, "requests"),
        "ok", (json_int_t)jint(results, "ok"),
        "lock_timeout", (json_int_t)jint(results, "lock_timeout"),
        "busy", (json_int_t)jint(results, "busy"),
        "errors", (json_int_t)(jint(load, "responses") - jint(results, "ok") -
                               jint(results, "lock_timeout") - jint(results, "busy")),
        "transport", (json_int_t)jint(load, "transport_errors"),
        "seconds", seconds, "rate", rate, "p99_ms", jnum(load, "lat_p99_ms"),
        "p50_ms", jnum(load, "lat_p50_ms"),
        "examined", (json_int_t)v.examined, "violations", (json_int_t)v.violations);
    if (ceiling > 0) {
        json_object_set_new(res, "ceiling", json_real(ceiling));
        json_object_set_new(res, "ratio", json_real(harness_efficiency(rate, ceiling)));
    }
    /* The lock family's serial ceiling (a lock, a sale, an unlock), for a
     * second ratio on the scale the lock strategies are judged by. */
    key = strcmp(p->backend, "curator") == 0 ? CEIL_SERIAL_ZK : CEIL_SERIAL_REDIS;
    ceiling = jnum(json_object_get(json_object_get(limits, "ceilings"), key), "rate");
    if (ceiling > 0) {
        json_object_set_new(res, "family_ceiling_key", json_string(key));
        json_object_set_new(res, "family_ceiling", json_real(ceiling));
        json_object_set_new(res, "family_ratio", json_real(harness_efficiency(rate, ceiling)));
    }
    json_decref(load);
    free(lp);
    free(bp);
    return res;
}

static void print_sync_table(FILE *f, const json_t *runs, int md)
{
    const json_t *r;
    size_t i;
    char ratio[16], ceiling[24], viol[24], fam[16];

    if (md) {
        fprintf(f, "| primitive | backend | operation | ops/s | p99 ms | ceiling ops/s | ratio | "
                   "÷ family ceiling | ok | timeouts | busy | errors | invariant checked | "
                   "violations |\n");
        fprintf(f, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|\n");
    } else {
        fprintf(f, "%-16s %-8s %-32s %8s %7s %8s %6s %6s %7s %6s %10s\n", "primitive",
                "backend", "operation", "ops/s", "p99 ms", "ceiling", "ratio", "family", "ok",
                "failed", "violations");
    }
    json_array_foreach(runs, i, r) {
        double c = jnum(r, "ceiling");
        snprintf(ceiling, sizeof ceiling, c > 0 ? "%.0f" : "–", c);
        snprintf(ratio, sizeof ratio, c > 0 ? "%.2f" : "–", jnum(r, "ratio"));
        snprintf(fam, sizeof fam, jnum(r, "family_ceiling") > 0 ? "%.2f" : "–",
                 jnum(r, "family_ratio"));
        snprintf(viol, sizeof viol, jstr(r, "check", "")[0] ? "%lld" : "–",
                 jint(r, "violations"));
        if (md)
            fprintf(f, "| %s | %s | `%s` | %.0f | %.1f | %s | %s | %s | %lld | %lld | %lld | "
                       "%lld | %s (%lld answers) | %s |\n",
                    jstr(r, "primitive", "?"), jstr(r, "backend", "?"), jstr(r, "bench", "?"),
                    jnum(r, "rate"), jnum(r, "p99_ms"), ceiling, ratio, fam, jint(r, "ok"),
                    jint(r, "lock_timeout"), jint(r, "busy"),
                    jint(r, "errors") + jint(r, "transport"),
                    jstr(r, "check", "")[0] ? jstr(r, "invariant", "") : "none under this load",
                    jint(r, "examined"), viol);
        else
            fprintf(f, "%-16s %-8s %-32.32s %8.0f %7.1f %8s %6s %6s %7lld %6lld %10s\n",
                    jstr(r, "primitive", "?"), jstr(r, "backend", "?"), jstr(r, "bench", "?"),
                    jnum(r, "rate"), jnum(r, "p99_ms"), ceiling, ratio, fam, jint(r, "ok"),
                    jint(r, "lock_timeout") + jint(r, "busy") + jint(r, "errors") +
                    jint(r, "transport"), viol);
    }
}

static const char sync_note[] =
    "ops/s: answers \"ok\" per second of the load, through nginx to the instances; "
    "ceiling: the same operation from one client back to back on the same servers, in "
    "ll-limits, with no HTTP (the best of its trials); ratio = ops/s ÷ ceiling; family: "
    "ops/s ÷ the lock family's serial ceiling (serial_redis or serial_zk: a lock, a "
    "sale, an unlock from one client), the scale the lock strategies are judged on. "
    "violations: answers whose intervals or values break the invariant (permits over the "
    "maximum, a reader beside a writer, a value answered twice), as oversold units are "
    "for the locks.";

int cmd_sync(const char *run)
{
    char *raw = path_join(run, "raw"), *sp = path_join(raw, "sync.json");
    char *lp = path_join(raw, "limits.json"), *ep = path_join(raw, "settings.env");
    char *mp = path_join(raw, "machine.env"), *out, *md;
    json_t *sync = load_json(sp), *limits = load_json(lp), *runs = json_array(), *res;
    struct plan p[PLAN_MAX];
    int i, n = plan_of(sync, p, PLAN_MAX);
    FILE *f;

    for (i = 0; i < n; i++) {
        char name[32], *load;
        snprintf(name, sizeof name, "%.8s.load.json", p[i].idx);
        load = path_join(raw, name);
        if (access(load, R_OK) == 0)
            json_array_append_new(runs, derive(raw, &p[i], limits));
        free(load);
    }
    res = json_pack("{s:s,s:o,s:o,s:O,s:O}", "scenario", "sync", "settings", load_env(ep),
                    "machine", load_env(mp), "limits", limits, "runs", runs);
    out = path_join(run, "results-sync.json");
    if (json_dump_file(res, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        die("cannot write %s", out);
    md = path_join(run, "report-sync.md");
    if ((f = fopen(md, "w")) == NULL)
        die("cannot write %s", md);
    fprintf(f, "# The synchronizers under contention\n\n");
    print_sync_table(f, runs, 1);
    fprintf(f, "\n%s\n", sync_note);
    fclose(f);
    print_sync_table(stdout, runs, 0);
    printf("\n%s\n", sync_note);
    json_decref(res);
    json_decref(sync);
    json_decref(limits);
    json_decref(runs);
    free(raw), free(sp), free(lp), free(ep), free(mp), free(out), free(md);
    return 0;
}
