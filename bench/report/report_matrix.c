/* report_matrix.c — ll-report's side of bench/compare --scenario matrix:
 * which cells run in which round, and each cell's verdict from its counts
 * and the ledger alone, judged against its strategy's claims.
 *
 *   ll-report matrix-plan LOCKS.json STRATEGIES FAULTS PARALLEL
 *       GET /locks → one line per cell to run, in the order they run:
 *       "ROUND<TAB>IDX<TAB>FAULT<TAB>STRATEGY<TAB>VARIANT<TAB>FAMILY<TAB>
 *       STOCK<TAB>GUARDED<TAB>CUT<TAB>PRODUCT" (STRATEGIES and FAULTS:
 *       comma-separated names, "" for all; VARIANT "-" or "fence"; STOCK
 *       mysql or redis; GUARDED 1 when the sale is the guarded one of
 *       app/sale.c, whose holder GET /stats counts; CUT the backend a
 *       partition cuts it from; PRODUCT the cell's own product)
 *   ll-report matrix RUN [--drop-claim STRATEGY:FAULT]...
 *       RUN/raw/ → RUN/report.json, report.md, report.html and the table;
 *       exit 1 when the claims do not hold or a round broke
 *
 * The grid. A row is a strategy of GET /locks (its plain run, and its run
 * with ?fence=1 when it has a fencing service), a column "none" (the
 * ordinary run) and then each fault of GET /locks' list. A cell runs when
 * its fault can touch the strategy's family (locks/faults.h) and the
 * strategy is exact: a strategy that loses updates with no fault at all
 * runs the ordinary column only, which shows it. Cells of one fault run
 * together in rounds of at most PARALLEL, each on a product of its own,
 * under one application of the fault; two cells of a lock that is not
 * their product's (redisson-global's one lock for all) never share a
 * round, a cell whose sale locks every row of the stock table
 * (mysql-update-noindex, as its ceiling says) runs in a round alone,
 * where it holds up no other, and a partition runs the MySQL locks, cut
 * off from MariaDB, in rounds of their own.
 *
 * RUN/raw/ holds locks.json, settings.env (stock, and the drop-claim list
 * of a test), cells.tsv (the plan's lines as they ran), rounds.tsv
 * ("ROUND<TAB>FAULT<TAB>ok|broken<TAB>what broke it"), and for cell IDX:
 * IDX.load.json and IDX.after.json (ll-load --json: its load until the
 * fault's end and after it), IDX.a and IDX.b (the holder's and the
 * contender's answers, "CODE BODY" on one line; none for a fault without
 * them), IDX.stock.json (GET /stock after the round settled), IDX.check.
 * json (ll-check --json, for the stock in MariaDB), IDX.next (ms from the
 * fault's end to the cell's next sale, "-" when none came in the poll)
 * and IDX.held (1: the holder was in its window when the fault came).
 *
 * The verdict of a cell, from nothing but those counts:
 *   sold      the 200s of the loads, the holder and the contender
 *   unknown   answers that may have sold: 500 unknown, a transport error,
 *             a 502 or 504 from nginx (an instance killed mid-answer)
 *   lost      sold − (S − final) by the counts (final: Redis's count for
 *             the Redis stock), at least; ll-check's lost updates; one
 *             or the other above 0 is a loss
 *   oversold  sold − S if above 0, and ll-check's sales from nothing
 *   overlap   ll-check's overlapping critical sections; stale tokens
 *   refused   the 503s; fenced the 409 fenced
 *   phantom   units the stock lost beyond every sale and unknown answer:
 *             a sale answered as failed
 *   errors    500s other than unknown, which no fault may cause
 * and the cell is lost N (a loss or an oversell), overlapped, stalled (no
 * sale in the poll after the fault), refused (503 or fenced), or held;
 * n/a when every answer was 400, a strategy that refuses the topology
 * (redlock on a Redis Cluster, where its servers are not independent).
 *
 * The claims: a cell of an exact strategy that lost, oversold, sold a
 * phantom or answered an error under a fault its strategy does not list
 * (`fails`, or `fence_fails` with the fence; the ordinary column lists
 * nothing) fails the matrix, named; a listed fault is shown; a listed
 * fault whose cell held is reported ("the list may be wrong"). A round
 * that broke (a crash, a sanitizer's report, an instance that stopped
 * answering, a fault that could not be applied) fails it too, and its
 * cells are shown broken, not judged. --drop-claim S:F judges as if S did
 * not list F: the test that a false claim fails the matrix.
 */
#define _GNU_SOURCE                 /* asprintf, strdup, strtok_r */
#include "report_private.h"
#include "../../locks/faults.h"

#include <stdlib.h>
#include <string.h>

#define MX_MAX_COLS  33             /* "none" and 32 faults at most */
#define MX_MAX_CELLS 4096
#define MX_NAME      64

/* ---------------------------------------------------------------- the grid */

/* A list "a,b,c" holds name ("" holds every name). */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *at;

    if (list == NULL || *list == '\0')
        return 1;
    for (at = strstr(list, name); at; at = strstr(at + 1, name))
        if ((at == list || at[-1] == ',') && (at[n] == ',' || at[n] == '\0'))
            return 1;
    return 0;
}

/* Does the fault (GET /locks' entry) touch family? */
static int touches(const json_t *fault, const char *family)
{
    return lock_fault_list_has(jstr(fault, "families", ""), family);
}

/* The columns: "none", then the faults asked for, in GET /locks' order. A
 * name in FAULTS that is no fault dies. */
static int columns(const json_t *locks, const char *faults, const json_t **col, int max)
{
    const json_t *f, *all = json_object_get(locks, "faults");
    static json_t *none;
    int n = 0;
    size_t i;

    if (none == NULL)
        none = json_pack("{s:s,s:s,s:s}", "name", "none", "families", "*",
                         "what", "no fault: the ordinary run, which the exact claim covers");
    if (listed(faults, "none"))
        col[n++] = none;
    json_array_foreach(all, i, f)
        if (n < max && listed(faults, jstr(f, "name", "?")))
            col[n++] = f;
    if (faults && *faults) {
        char *copy = strdup(faults), *tok, *save = NULL;
        for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int k, found = strcmp(tok, "none") == 0;
            for (k = 0; k < n && !found; k++)
                found = strcmp(jstr(col[k], "name", ""), tok) == 0;
            if (!found)
                die("--faults: no fault '%s' (GET /locks lists the faults)", tok);
        }
        free(copy);
    }
    return n;
}

/* Does the strategy's sale lock every row of the stock table (its ceiling
 * says so: mysql-update-noindex's UPDATE on a column without an index)?
 * Its cells run alone: beside them, every other cell's write would wait
 * for its holder. */
static int locks_table(const json_t *s)
{
    return strcmp(jstr(s, "ceiling", ""), "mysql_update_noindex") == 0;
}

/* The lock a strategy's cells take that is not their product's own
 * (redisson-global's one lock for all), or NULL: two cells of one such
 * lock never share a round, where one holder would wait for the other. */
static const char *shared_lock(const json_t *s)
{
    const char *key = jstr(s, "lock_key", "lock:<product>");
    return strcmp(key, "lock:<product>") ? key : NULL;
}

/* The backend a partition cuts a strategy of family off from: its lock
 * service (the first layer, Redis, for the composite locks). */
static const char *cut_of(const char *family)
{
    if (!strcmp(family, "mysql") || !strcmp(family, "local"))
        return "mysql";
    if (!strcmp(family, "zookeeper"))
        return "zk";
    if (!strcmp(family, "etcd"))
        return "etcd";
    return "redis";
}

/* Is its sale app/sale.c's guarded one (GET /locks' "guarded": no sell
 * hook of its own), whose holder GET /stats counts in its window? */
static int guarded(const json_t *s)
{
    return json_is_true(json_object_get(s, "guarded"));
}

/* ---------------------------------------------------------------- plan */

/* The rounds of one fault as they fill: each with its cut (a partition's
 * backend), its cells, whether one runs alone in it, and the locks not a
 * product's own that its cells take. */
struct round {
    const char *cut, *locks[8];
    int         number, n, alone, nlocks;
};

struct rounds {
    struct round r[MX_MAX_CELLS / 8];
    int          n, next, parallel;     /* next: the next round's number */
};

/* The round a cell of strategy s (with cut) joins: the first with room
 * that it may share, or a new one. */
static struct round *place(struct rounds *rs, const json_t *s, const char *cut)
{
    const char *lock = shared_lock(s);
    int alone = locks_table(s), k, m, taken;
    struct round *r;

    for (k = 0; k < rs->n; k++) {
        r = &rs->r[k];
        for (taken = 0, m = 0; lock && m < r->nlocks; m++)
            taken |= !strcmp(r->locks[m], lock);
        if (!strcmp(r->cut, cut) && r->n < rs->parallel && !r->alone && !alone && !taken &&
            (!lock || r->nlocks < 8))
            goto found;
    }
    if (rs->n == (int)(sizeof rs->r / sizeof rs->r[0]))
        die("matrix-plan: more than %d rounds of one fault", rs->n);
    r = &rs->r[rs->n++];
    *r = (struct round){ .cut = cut, .number = ++rs->next, .alone = alone };
found:
    if (lock)
        r->locks[r->nlocks++] = lock;
    return r;
}

/* Does a cell of strategy s run in column c (its fault, none for c 0), in
 * variant v (1: ?fence=1)? */
static int runs(const json_t *col, int none, const json_t *s, const char *strategies, int v)
{
    int exact = json_is_true(json_object_get(s, "exact"));

    if (!listed(strategies, jstr(s, "name", "?")) || !touches(col, jstr(s, "family", "?")))
        return 0;
    if (!exact && !none)
        return 0;
    return v == 0 || (exact && json_is_string(json_object_get(s, "fence")));
}

int cmd_matrix_plan(const char *path, const char *strategies, const char *faults,
                    const char *parallel_s)
{
    json_t *locks = load_json(path);
    const json_t *col[MX_MAX_COLS], *s;
    static struct rounds rs;
    long long parallel;
    int ncol, c, v, idx = 0, next = 0;
    size_t i;

    if (cli_number(parallel_s, 1, 200, &parallel) != 0)
        die("matrix-plan: PARALLEL is 1 to 200, not '%s'", parallel_s);
    if (strategies && *strategies) {
        char *copy = strdup(strategies), *tok, *save = NULL;
        for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if (lock_entry(locks, tok) == NULL)
                die("--strategies: no strategy '%s' (GET /locks lists them)", tok);
        free(copy);
    }
    ncol = columns(locks, faults, col, MX_MAX_COLS);
    for (c = 0; c < ncol; c++) {
        const char *fault = jstr(col[c], "name", "?");
        int none = c == 0 && strcmp(fault, "none") == 0;

        memset(&rs, 0, sizeof rs);
        rs.parallel = (int)parallel;
        rs.next = next;
        /* The plain runs first, then the fenced: a lock shared between
         * products (redisson-global's) then falls in two rounds that are
         * full anyway. */
        for (v = 0; v < 2; v++)
            json_array_foreach(json_object_get(locks, "strategies"), i, s) {
                const char *family = jstr(s, "family", "?");
                const char *cut = strcmp(fault, "partition") ? "-" : cut_of(family);
                struct round *r;

                if (!runs(col[c], none, s, strategies, v))
                    continue;
                r = place(&rs, s, cut);
                printf("%d\t%03d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\n", r->number, ++idx, fault,
                       jstr(s, "name", "?"), v ? "fence" : "-", family,
                       jstr(s, "stock", "mysql"), guarded(s), cut, 5001 + r->n);
                r->n++;
            }
        next = rs.next;
    }
    json_decref(locks);
    return 0;
}

/* ---------------------------------------------------------------- a cell */

struct cell {
    char   fault[MX_NAME], strategy[MX_NAME], variant[8], family[24], stock[8];
    char   idx[8];
    int    round, ran;
    long long sold, unknown, lost, oversold, overlap, stale, refused, fenced, phantom, errors;
    long long answers, bad_requests;    /* every answer, and the 400s among them */
    long long next_ms;                  /* -1: no sale in the poll after the fault */
    int    held;                        /* the holder was in its window          */
    const char *state;                  /* held, refused, stalled, overlapped, lost,
                                         * broken, n/a, not exact                */
};

/* "CODE BODY" of one answer (the holder's or the contender's): adds it. */
static void add_answer(const char *raw, const char *idx, const char *who, struct cell *c)
{
    char name[32], *path, line[8192];
    FILE *f;
    int code = 0;

    snprintf(name, sizeof name, "%s.%s", idx, who);
    path = path_join(raw, name);
    f = fopen(path, "r");
    free(path);
    if (f == NULL)
        return;
    if (fgets(line, sizeof line, f) != NULL && sscanf(line, "%d", &code) == 1) {
        const char *body = strchr(line, ' ');
        json_t *j = body ? json_loads(body + 1, 0, NULL) : NULL;
        const char *result = jstr(j, "result", "");

        if (code == 200)
            c->sold++;
        else if (code == 503)
            c->refused++;
        else if (code == 409 && !strcmp(result, "fenced"))
            c->fenced++;
        else if (code == 500 && strcmp(result, "unknown") != 0)
            c->errors++;
        else if (code == 0 || code >= 500)      /* no answer, unknown, 502 */
            c->unknown++;
        json_decref(j);
    } else {
        c->unknown++;                           /* no answer at all */
    }
    fclose(f);
}

static long long status_count(const json_t *load, const char *code)
{
    return jint(json_object_get(load, "status"), code);
}

/* Adds a load's answers (ll-load --json) to the cell's counts; 0 when
 * there is none. */
static int add_load(const char *raw, const char *fmt, struct cell *c)
{
    json_t *load = load_part(raw, fmt, c->idx, 1);
    const json_t *result = json_object_get(load, "result");

    if (load == NULL)
        return 0;
    c->sold += status_count(load, "200");
    c->refused += status_count(load, "503");
    c->answers += jint(load, "responses");
    c->bad_requests += status_count(load, "400");
    c->fenced += jint(result, "fenced");
    c->unknown += jint(result, "unknown") + jint(load, "transport_errors") +
                  status_count(load, "502") + status_count(load, "504");
    c->errors += status_count(load, "500") - jint(result, "unknown");
    json_decref(load);
    return 1;
}

/* The counts of a cell that ran, and its state. */
static void judge_counts(const char *raw, struct cell *c, long long stock)
{
    int loaded = add_load(raw, "%s.load.json", c) & add_load(raw, "%s.after.json", c);
    json_t *after = load_part(raw, "%s.stock.json", c->idx, 1);
    json_t *check = load_part(raw, "%s.check.json", c->idx, 1);
    const json_t *redis;
    long long final, by_counts, mariadb;
    char name[32], *path, text[64] = "";
    FILE *f;

    add_answer(raw, c->idx, "a", c);
    add_answer(raw, c->idx, "b", c);

    /* The stock left: MariaDB's; for the Redis stock, Redis's too while it
     * still holds the product (a server restarted empty holds nothing),
     * and a sale either store lacks (Redis's count not fallen by it, or
     * MariaDB's not, once the streams drained) is lost. */
    redis = json_object_get(after, "redis");
    mariadb = jint(after, "count");
    by_counts = c->sold - (stock - mariadb);
    c->phantom = -by_counts > c->unknown ? -by_counts - c->unknown : 0;
    if (!strcmp(c->stock, "redis") && redis && json_is_true(json_object_get(redis, "loaded"))) {
        final = jint(redis, "count");
        if (c->sold - (stock - final) > by_counts)
            by_counts = c->sold - (stock - final);
    }
    c->lost = by_counts > 0 ? by_counts : 0;
    c->oversold = c->sold > stock ? c->sold - stock : 0;
    if (check) {
        if (jint(check, "lost") > c->lost)
            c->lost = jint(check, "lost");
        c->oversold += jint(check, "oversold");
        c->overlap = jint(check, "overlap");
        c->stale = jint(check, "token");
    }
    snprintf(name, sizeof name, "%s.next", c->idx);
    path = path_join(raw, name);
    c->next_ms = -2;                            /* no poll: no fault's end */
    if ((f = fopen(path, "r")) != NULL) {
        if (fgets(text, sizeof text, f))
            c->next_ms = text[0] == '-' ? -1 : atoll(text);
        fclose(f);
    }
    free(path);
    snprintf(name, sizeof name, "%s.held", c->idx);
    path = path_join(raw, name);
    c->held = -1;                               /* no holder, or none to watch */
    if ((f = fopen(path, "r")) != NULL) {
        if (fgets(text, sizeof text, f) && text[0] != '-')
            c->held = atoi(text);
        fclose(f);
    }
    free(path);

    if (!loaded || after == NULL)
        c->state = "broken";
    else if (c->answers > 0 && c->bad_requests == c->answers)
        c->state = "n/a";           /* it refuses this topology (redlock on a cluster) */
    else if (c->lost > 0 || c->oversold > 0 || c->phantom > 0)
        c->state = "lost";
    else if (c->overlap > 0 || c->stale > 0)
        c->state = "overlapped";
    else if (c->next_ms == -1)
        c->state = "stalled";
    else if (c->refused > 0 || c->fenced > 0)
        c->state = "refused";
    else
        c->state = "held";
    json_decref(after);
    json_decref(check);
}

/* ---------------------------------------------------------------- the verdict */

struct judge {
    json_t *broken;                     /* sentences: the claims broken   */
    json_t *notes;                      /* listed faults that held: by fault,
                                         * the cells                        */
    json_t *rounds;                     /* rounds that broke              */
    const char *const *drops;           /* --drop-claim S:F               */
    int ndrops;
};

/* Does the strategy (its GET /locks entry) list fault for the variant? */
static int lists(const json_t *s, const char *variant, const char *fault,
                 const struct judge *jd)
{
    const json_t *list = json_object_get(s, strcmp(variant, "fence") ? "fails" : "fence_fails");
    const json_t *v;
    char drop[2 * MX_NAME + 2];
    size_t i;
    int k;

    snprintf(drop, sizeof drop, "%s:%s", jstr(s, "name", "?"), fault);
    for (k = 0; k < jd->ndrops; k++)
        if (!strcmp(jd->drops[k], drop))
            return 0;
    json_array_foreach(list, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), fault))
            return 1;
    return 0;
}

static void judge_cell(const json_t *s, struct cell *c, struct judge *jd, json_t *o)
{
    int exact = json_is_true(json_object_get(s, "exact"));
    int listed_here = strcmp(c->fault, "none") && lists(s, c->variant, c->fault, jd);
    int bad = !strcmp(c->state, "lost") || c->errors > 0;
    /* A 500 other than unknown is never a fault's to cause: listed or not. */
    int broken = bad && (!listed_here || c->errors > 0);
    const char *verdict = "shown";
    char who[2 * MX_NAME], *line = NULL;

    snprintf(who, sizeof who, "%s%s", c->strategy, strcmp(c->variant, "fence") ? "" : " +fence");
    if (!exact || !strcmp(c->state, "broken") || !strcmp(c->state, "n/a")) {
        verdict = "not judged";
    } else if (broken) {
        verdict = "claim broken";
        if (asprintf(&line, "%s under %s: %lld lost, %lld oversold, %lld sold answered as "
                     "failed, %lld 500s other than unknown (cell %s)%s%s%s", who, c->fault,
                     c->lost, c->oversold, c->phantom, c->errors, c->idx,
                     listed_here ? "" : ", and ", listed_here ? "" : c->strategy,
                     listed_here ? ": no fault may answer 500 for a sale" : " does not list it")
            < 0)
            die("out of memory");
        json_array_append_new(jd->broken, json_string(line));
    } else if (listed_here && !bad) {
        json_t *list = json_object_get(jd->notes, c->fault);
        verdict = "listed, held";
        if (asprintf(&line, "%s (cell %s, %s)", who, c->idx, c->state) < 0)
            die("out of memory");
        if (list == NULL)
            json_object_set_new(jd->notes, c->fault, list = json_array());
        json_array_append_new(list, json_string(line));
    } else if (listed_here) {
        verdict = "listed";
    } else {
        verdict = "held as claimed";
    }
    free(line);
    json_object_set_new(o, "verdict", json_string(verdict));
    json_object_set_new(o, "listed", json_boolean(listed_here));
}

/* rounds.tsv: the rounds that broke, by number, with what broke them. */
static json_t *broken_rounds(const char *raw)
{
    json_t *o = json_object();
    char *path = path_join(raw, "rounds.tsv"), line[2048];
    FILE *f = fopen(path, "r");

    free(path);
    if (f == NULL)
        return o;
    while (fgets(line, sizeof line, f)) {
        char round[16], fault[MX_NAME], status[16], what[1600] = "";
        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "%15[^\t]\t%63[^\t]\t%15[^\t]\t%1599[^\n]", round, fault, status,
                   what) >= 3 && strcmp(status, "ok") != 0)
            json_object_set_new(o, round, json_string(what));
    }
    fclose(f);
    return o;
}

static json_t *cell_json(const struct cell *c)
{
    return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:s}",
        "fault", c->fault, "state", c->state, "sold", (json_int_t)c->sold,
        "lost", (json_int_t)c->lost, "oversold", (json_int_t)c->oversold,
        "overlap", (json_int_t)c->overlap, "stale_tokens", (json_int_t)c->stale,
        "unknown", (json_int_t)c->unknown, "refused", (json_int_t)c->refused,
        "fenced", (json_int_t)c->fenced, "phantom", (json_int_t)c->phantom,
        "errors", (json_int_t)c->errors, "next_sale_ms", (json_int_t)c->next_ms,
        "holder_held", c->held, "cell", c->idx);
}

/* The ran cells of cells.tsv, and the grid around them. */
static json_t *build(const char *run, const struct judge *jdc)
{
    struct judge jd = *jdc;
    char *raw = path_join(run, "raw"), *lp = path_join(raw, "locks.json");
    char *sp = path_join(raw, "settings.env"), *cp = path_join(raw, "cells.tsv"), line[1024];
    json_t *locks = load_json(lp), *settings = load_env(sp), *rows = json_array();
    json_t *cols = json_array(), *rounds = broken_rounds(raw);
    const json_t *col[MX_MAX_COLS], *s;
    const char *strategies = jstr(settings, "strategies", ""), *faults = jstr(settings, "faults", "");
    long long stock = jint(settings, "stock");
    static struct cell cells[MX_MAX_CELLS];
    int ncells = 0, ncol, c, k;
    size_t i;
    FILE *f = fopen(cp, "r");

    if (f == NULL)
        die("%s: no cells (did the matrix run?)", cp);
    while (ncells < MX_MAX_CELLS && fgets(line, sizeof line, f)) {
        struct cell *x = &cells[ncells];
        char round[16];
        memset(x, 0, sizeof *x);
        if (sscanf(line, "%15[^\t]\t%7[^\t]\t%63[^\t]\t%63[^\t]\t%7[^\t]\t%23[^\t]\t%7[^\t]",
                   round, x->idx, x->fault, x->strategy, x->variant, x->family, x->stock) != 7)
            continue;
        x->round = atoi(round);
        x->ran = 1;
        judge_counts(raw, x, stock);
        if (json_object_get(rounds, round))
            x->state = "broken";
        ncells++;
    }
    fclose(f);
    jd.broken = json_array();
    jd.notes = json_object();
    ncol = columns(locks, faults, col, MX_MAX_COLS);
    for (c = 0; c < ncol; c++)
        json_array_append_new(cols, json_pack("{s:s,s:s}", "name", jstr(col[c], "name", "?"),
                                              "what", jstr(col[c], "what", "")));
    json_array_foreach(json_object_get(locks, "strategies"), i, s) {
        const char *name = jstr(s, "name", "?");
        int v, exact = json_is_true(json_object_get(s, "exact"));

        if (!listed(strategies, name))
            continue;
        for (v = 0; v < 2; v++) {
            const char *variant = v ? "fence" : "-";
            json_t *row, *list = json_array();

            if (v == 1 && (!json_is_string(json_object_get(s, "fence")) || !exact))
                break;
            for (c = 0; c < ncol; c++) {
                const char *fault = jstr(col[c], "name", "?");
                struct cell *x = NULL, blank;
                json_t *o;

                for (k = 0; k < ncells && x == NULL; k++)
                    if (!strcmp(cells[k].fault, fault) && !strcmp(cells[k].strategy, name) &&
                        !strcmp(cells[k].variant, variant))
                        x = &cells[k];
                if (x == NULL) {
                    memset(&blank, 0, sizeof blank);
                    snprintf(blank.fault, sizeof blank.fault, "%s", fault);
                    blank.next_ms = -2;
                    blank.held = -1;
                    blank.state = !touches(col[c], jstr(s, "family", "?")) ? "n/a"
                                : !exact && c > 0 ? "not exact" : "not run";
                    o = cell_json(&blank);
                    json_object_set_new(o, "verdict", json_string("not run"));
                } else {
                    o = cell_json(x);
                    judge_cell(s, x, &jd, o);
                }
                json_array_append_new(list, o);
            }
            row = json_pack("{s:s,s:s,s:s,s:b,s:b,s:O,s:o}", "strategy", name, "variant",
                            variant, "family", jstr(s, "family", "?"), "exact", exact,
                            "fenced", json_is_true(json_object_get(s, "fenced")),
                            "fails", json_object_get(s, v ? "fence_fails" : "fails")
                                     ? json_object_get(s, v ? "fence_fails" : "fails")
                                     : json_array(),
                            "cells", list);
            json_array_append_new(rows, row);
        }
    }
    {
        json_t *doc = json_pack("{s:o,s:o,s:o,s:{s:b,s:o,s:o,s:o}}", "settings", settings,
            "columns", cols, "rows", rows, "verdict",
            "ok", json_array_size(jd.broken) == 0 && json_object_size(rounds) == 0,
            "claims_broken", jd.broken, "listed_held", jd.notes, "rounds_broken", rounds);
        free(raw);
        free(lp);
        free(sp);
        free(cp);
        json_decref(locks);
        return doc;
    }
}

/* ---------------------------------------------------------------- writing */

/* A cell's short text: "held", "lost 2", "n/a" …, "*" after a listed one. */
static void cell_text(const json_t *o, char *buf, size_t n)
{
    const char *state = jstr(o, "state", "?");
    const char *mark = json_is_true(json_object_get(o, "listed")) ? "*" : "";

    if (!strcmp(state, "lost"))
        snprintf(buf, n, "lost %lld%s", jint(o, "lost") + jint(o, "oversold") + jint(o, "phantom"),
                 mark);
    else
        snprintf(buf, n, "%s%s", state, mark);
}

/* Its counts, for the page's hover and the Markdown's key. */
static void cell_counts(const json_t *o, char *buf, size_t n)
{
    long long next = jint(o, "next_sale_ms");
    char nx[32];

    if (next >= 0)
        snprintf(nx, sizeof nx, "%lld ms", next);
    else
        snprintf(nx, sizeof nx, "%s", next == -1 ? "none in the poll" : "–");
    snprintf(buf, n, "cell %s: sold %lld, lost %lld, oversold %lld, overlaps %lld, stale tokens "
             "%lld, unknown %lld, refused (503) %lld, fenced %lld, sold answered failed %lld, "
             "500 errors %lld; next sale after the fault %s; the holder %s; %s",
             jstr(o, "cell", "-"), jint(o, "sold"), jint(o, "lost"), jint(o, "oversold"),
             jint(o, "overlap"), jint(o, "stale_tokens"), jint(o, "unknown"), jint(o, "refused"),
             jint(o, "fenced"), jint(o, "phantom"), jint(o, "errors"), nx,
             jint(o, "holder_held") == 1 ? "in its window" :
             jint(o, "holder_held") == 0 ? "NOT in its window" : "–",
             jstr(o, "verdict", ""));
}

/* A cell's colour by its state; a loss its strategy lists is a paler red
 * than one that breaks a claim. */
static const char *cell_colour(const json_t *o)
{
    static const char *const colours[][2] = {
        { "lost", "#d9534f" }, { "overlapped", "#f7c873" }, { "stalled", "#c9b6e4" },
        { "refused", "#fff0a8" }, { "held", "#b9e4b9" }, { "broken", "#888888" },
    };
    const char *state = jstr(o, "state", "?");
    size_t i;

    if (!strcmp(state, "lost") && json_is_true(json_object_get(o, "listed")))
        return "#f4b6b6";
    for (i = 0; i < sizeof colours / sizeof colours[0]; i++)
        if (!strcmp(state, colours[i][0]))
            return colours[i][1];
    return "#eeeeee";
}

static void write_table(FILE *f, enum fmt fmt, const json_t *doc)
{
    const json_t *cols = json_object_get(doc, "columns"), *row, *c;
    size_t ncol = json_array_size(cols), i, k;
    const char **names = calloc(ncol + 1, sizeof *names), **cells = calloc(ncol + 1, sizeof *cells);
    int *widths = calloc(ncol + 1, sizeof *widths);
    char (*text)[40] = calloc(ncol + 1, sizeof *text), label[2 * MX_NAME];
    struct table t;

    if (!names || !cells || !widths || !text)
        die("out of memory");
    names[0] = "strategy";
    widths[0] = 28;
    for (k = 0; k < ncol; k++) {
        names[k + 1] = jstr(json_array_get(cols, k), "name", "?");
        widths[k + 1] = (int)strlen(names[k + 1]) > 10 ? (int)strlen(names[k + 1]) + 1 : 11;
    }
    t = (struct table){ f, fmt, (int)ncol + 1, names, widths };
    if (fmt == FMT_HTML) {
        /* One line a row, however many columns: the cells are short. */
        fputs("<style>table.matrix td, table.matrix th { white-space: nowrap; font-size: 13px; "
              "padding: 2px 5px }</style>\n<table class=matrix><tr><th>strategy</th>", f);
        for (k = 0; k < ncol; k++) {
            fputs("<th title=\"", f);
            html_text(f, jstr(json_array_get(cols, k), "what", ""));
            fputs("\">", f);
            html_text(f, names[k + 1]);
            fputs("</th>", f);
        }
        fputs("</tr>\n", f);
    } else {
        table_head(&t);
    }
    json_array_foreach(json_object_get(doc, "rows"), i, row) {
        snprintf(label, sizeof label, "%s%s", jstr(row, "strategy", "?"),
                 strcmp(jstr(row, "variant", "-"), "fence") ? "" : " +fence");
        cells[0] = label;
        if (fmt == FMT_HTML) {
            fputs("<tr><td class=name>", f);
            html_text(f, label);
            fputs("</td>", f);
        }
        json_array_foreach(json_object_get(row, "cells"), k, c) {
            cell_text(c, text[k + 1], sizeof text[k + 1]);
            cells[k + 1] = text[k + 1];
            if (fmt == FMT_HTML) {
                char counts[600];
                cell_counts(c, counts, sizeof counts);
                fprintf(f, "<td style=\"background:%s\" title=\"", cell_colour(c));
                html_text(f, counts);
                fputs("\">", f);
                html_text(f, text[k + 1]);
                fputs("</td>", f);
            }
        }
        if (fmt == FMT_HTML)
            fputs("</tr>\n", f);
        else
            table_row(&t, cells);
    }
    if (fmt == FMT_HTML)
        fputs("</table>\n", f);
    else
        table_end(&t);
    free(names);
    free(cells);
    free(widths);
    free(text);
}

static void write_list(FILE *f, enum fmt fmt, const char *title, const char *note,
                       const json_t *list)
{
    const json_t *v;
    size_t i;

    if (json_array_size(list) == 0)
        return;
    write_section(f, fmt, title, note);
    json_array_foreach(list, i, v) {
        if (fmt == FMT_HTML) {
            fputs("<p class=note>", f);
            html_text(f, json_string_value(v));
            fputs("</p>\n", f);
        } else {
            fprintf(f, "- %s\n", json_string_value(v));
        }
    }
    if (fmt != FMT_HTML)
        fputc('\n', f);
}

static void write_matrix(FILE *f, enum fmt fmt, const json_t *doc)
{
    const json_t *v = json_object_get(doc, "verdict"), *settings = json_object_get(doc, "settings");
    json_t *rounds = json_array(), *what;
    const char *k;

    write_section(f, fmt, "the fault matrix",
                  "each strategy (and with ?fence=1) against each fault, judged from its "
                  "counts and ll-check alone: held, refused (503 or fenced, nothing lost), "
                  "stalled (no sale after the fault), overlapped (two holders, nothing lost), "
                  "lost N (units lost or oversold), n/a (the fault cannot touch it), not exact "
                  "(it loses without a fault: the none column shows it); * marks a fault the "
                  "strategy lists as one it does not survive");
    write_note(f, fmt, "%s", jstr(settings, "command", ""));
    write_table(f, fmt, doc);
    json_object_foreach((json_t *)json_object_get(v, "rounds_broken"), k, what)
        json_array_append_new(rounds, json_pack("s+++", "round ", k, ": ",
                                                json_string_value(what)));
    write_list(f, fmt, "claims broken", "cells that lost under a fault their strategy does not "
               "list: the matrix fails", json_object_get(v, "claims_broken"));
    write_list(f, fmt, "rounds that broke", "a crash, a sanitizer's report, an instance that "
               "stopped answering or a fault that could not be applied: the matrix fails",
               rounds);
    {
        json_t *held = json_array(), *cells;
        json_object_foreach((json_t *)json_object_get(v, "listed_held"), k, cells) {
            char *line = NULL;
            size_t len = 0, i;
            FILE *m = open_memstream(&line, &len);
            json_t *one;
            fprintf(m, "%s: ", k);
            json_array_foreach(cells, i, one)
                fprintf(m, "%s%s", i ? ", " : "", json_string_value(one));
            fclose(m);
            json_array_append_new(held, json_string(line));
            free(line);
        }
        write_list(f, fmt, "listed faults that held", "by fault, the strategies that list it "
                   "whose cell showed no loss in this run: the list may be wrong, or the fault "
                   "did not land where it hurts (a pause before the checks, which refuse)", held);
        json_decref(held);
    }
    write_note(f, fmt, "verdict: %s", json_is_true(json_object_get(v, "ok"))
               ? "every claim held" : "the claims did not hold (above)");
    json_decref(rounds);
}

static void matrix_md(FILE *f, const json_t *doc) { write_matrix(f, FMT_MD, doc); }

static void matrix_html(FILE *f, const json_t *doc)
{
    html_page_open(f, "locklab: the fault matrix", 1800);
    write_matrix(f, FMT_HTML, doc);
    html_page_close(f);
}

/* ll-report matrix RUN [--drop-claim S:F]...: argv[0] is RUN. */
int cmd_matrix(int argc, char **argv)
{
    static const char *drops[64];
    struct judge jd = { 0 };
    json_t *doc;
    int ok, i;

    if (argc < 1 || argc % 2 == 0)
        die("usage: ll-report matrix RUN [--drop-claim STRATEGY:FAULT]...");
    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--drop-claim") != 0 || strchr(argv[i + 1], ':') == NULL)
            die("matrix: '%s %s' is not --drop-claim STRATEGY:FAULT", argv[i], argv[i + 1]);
        if (jd.ndrops < 64)
            drops[jd.ndrops++] = argv[i + 1];
    }
    jd.drops = drops;
    doc = build(argv[0], &jd);
    write_docs(argv[0], "report", doc, matrix_md, matrix_html);
    write_matrix(stdout, FMT_TEXT, doc);
    ok = json_is_true(json_object_get(json_object_get(doc, "verdict"), "ok"));
    json_decref(doc);
    return ok ? 0 : 1;
}
