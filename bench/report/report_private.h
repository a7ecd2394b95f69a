/* report_private.h — what the files of ll-report share, floor by floor.
 *
 * ll-report (see report_main.c for its commands) is split along its sections,
 * each file using only the ones listed above it (and bench/common/: the
 * arithmetic, harness.h; the writers of every format, write.h; die(),
 * cli.h):
 *
 *   report_base.c    reading: JSON files, key=value files, typed lookups;
 *                    a run's label, its strategy's entry, a load's steady
 *                    rate
 *   report_cost.c    where the time goes: /proc snapshots → NN.cost.json,
 *                    and NN.cost.json → per request
 *   report_stock.c   the HTTP tier's ceiling, the Redis stock's three
 *                    stores, the retry storms, several products: derived,
 *                    and their sections
 *   report_derive.c  the derived numbers of one run (results.json's runs)
 *   report_ceiling.c what a run is measured against: steady rate,
 *                    ceiling, efficiency, bound; the ceilings table
 *   report_time.c    a run over time and by percentile: its seconds, its
 *                    latency distribution, their checks, table and charts
 *   report_table.c   the main table, where the time goes, the faults
 *                    table, the notes under the main table
 *   report_overview.c the first screen of report.html: sold/s by family,
 *                    the lossy in red, ceilings and capacities on the bars
 *   report_page.c    report.md, report.html and the terminal's summary:
 *                    the one list of sections they walk (say how to add
 *                    one), and the page's own (charts of the runs, latency)
 *   report_jtl.c     JMeter's aggregate report from its CSV results
 *   report_sync.c    the synchronizers' scenario: its plan, results and
 *                    invariant checks
 *   report_sweep.c   a sweep's points (compare --sweep) into one figure
 *   report_rtt.c     the points of compare --rtt, the ranking at each round
 *                    trip and the model of a lock's ceiling beside them
 *   report_capacity.c compare --scenario capacity: its plan of open-loop
 *                    steps, their verdicts, the capacity, its table and
 *                    charts
 *   report_matrix.c  compare --scenario matrix: its cells and rounds, each
 *                    cell's verdict against its strategy's claims, the
 *                    picture of strategies by faults
 *   report_main.c    the commands and main
 */
#ifndef LOCKLAB_REPORT_PRIVATE_H
#define LOCKLAB_REPORT_PRIVATE_H

#include "../common/cli.h"
#include "../common/harness.h"
#include "../common/write.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* ---------------------------------------------------------------- base: loading */

/* A JSON file (- for stdin), or die saying where it is not JSON. */
json_t *load_json(const char *path);

/* dir/name, malloc'ed. */
char *path_join(const char *dir, const char *name);

/* The run's file dir/<fmt with idx>, as load_json(), or NULL without it
 * when optional. */
json_t *load_part(const char *dir, const char *fmt, const char *idx, int optional)
    __attribute__((format(printf, 2, 0)));

/* dir/STEM-0.json, dir/STEM-1.json … up to the first missing, loaded into
 * an array (the instances' answers of a run: "01.stats" …). */
json_t *load_numbered(const char *dir, const char *stem);

/* A document's three files in dir: NAME.json (doc itself), NAME.md and
 * NAME.html (written by md and html); dies when one cannot be written. */
void write_docs(const char *dir, const char *name, const json_t *doc,
                void (*md)(FILE *, const json_t *), void (*html)(FILE *, const json_t *));

/* key=value lines into a JSON object of strings; {} without the file. */
json_t *load_env(const char *path);

/* o[key] as a number (a numeric string too) or a string; 0, 0.0 or def
 * when it is missing or of another type. */
long long jint(const json_t *o, const char *key);
double jnum(const json_t *o, const char *key);
const char *jstr(const json_t *o, const char *key, const char *def);

/* How a run is named in every table: its strategy, with " +fence" when it
 * ran with ?fence=1. Returns buf. */
const char *run_label(const json_t *run, char *buf, size_t n);

/* Strategy `name`'s entry of GET /locks, or NULL. */
const json_t *lock_entry(const json_t *locks, const char *name);

/* A duration-free load's steady rate from its --json (-1 without one):
 * its whole seconds after the first (harness_steady_rate). */
double load_steady_rate(const json_t *load);

/* A chart axis' step from 0 to max in about `ticks` ticks: 1, 2 or 5
 * times a power of ten. */
double axis_step(double max, int ticks);

/* ---------------------------------------------------------------- derived */

/* Counts of one load answer: by status (sold = 200s) and by result. */
struct answers {
    long long requests, transport, sold, sold_out, timeouts, unavailable, errors, unknown;
    long long other;
};

void count_answers(const json_t *load, struct answers *a);

/* One run's object of results.json from its raw pieces. */
json_t *derive_run(const char *name, const char *family, long long stock,
                   long long seed_instances, json_t *load, json_t *stock_after,
                   json_t *instances, const json_t *locks, const json_t *cost);

/* ---------------------------------------------------------------- cost */

/* The stack's process groups, as NN.cost.json names them, and how the
 * reports head them. */
#define NCOST_GROUPS ((size_t)5)
extern const char *const cost_groups[NCOST_GROUPS][2];

/* A run's cost per request from NN.cost.json; NULL without a measurement. */
json_t *derive_cost(const json_t *cost, long long n);

/* ll-report cost BEFORE AFTER: NN.cost.json on stdout. */
int cmd_cost(const char *before, const char *after);

/* ---------------------------------------------------------------- sections */

/* Each section is print_NAME(f, res, fmt): from results.json, in one of
 * the formats of write.h, nothing when res holds nothing for it
 * (report_page.c lists them in the order of the page). */

/* report_table.c: the main table; where the time goes, its table and its
 * chart (HTML); the faults table; the notes under the main table: the
 * seeds' column's footnote (which figures stand, which were left out for
 * having been measured on another number of instances), the duration
 * runs' count and the serial ceiling's, the strategies also measured
 * against the concurrent ceiling, redlock over fewer than three servers,
 * the runs whose purchases met another strategy's lock on their key
 * (the instances' "foreign": strategies were mixed on one product). */
void print_runs(FILE *f, const json_t *res, enum fmt fmt);
void print_cost(FILE *f, const json_t *res, enum fmt fmt);
void print_cost_chart(FILE *f, const json_t *res, enum fmt fmt);
void print_faults(FILE *f, const json_t *res, enum fmt fmt);
void print_seeds(FILE *f, const json_t *res, enum fmt fmt);
void print_notes(FILE *f, const json_t *res, enum fmt fmt);
void print_concurrent(FILE *f, const json_t *res, enum fmt fmt);
void print_topology(FILE *f, const json_t *res, enum fmt fmt);
void print_mixed(FILE *f, const json_t *res, enum fmt fmt);

/* The service instances that served the load (settings instances_served). */
long long served_instances(const json_t *settings);

/* ---------------------------------------------------------------- ceilings */

/* report_ceiling.c: what a run is measured against. Its steady rate (a
 * duration run's own; else its warm-up's seconds after the first, the
 * same load once it runs: raw/NN.warmup.json), its ceiling and the
 * ceiling's spread over its trials, the efficiency (steady ÷ ceiling; a
 * range when the trials spread more than HARNESS_SPREAD_MAX), the share of
 * the HTTP tier, and whether the ceiling bounded it ("bound"), added to
 * run; the notes and the ceilings table that say so; its part of
 * ll-report check (an exact strategy above its ceiling by more than the
 * spread). */
void derive_ceiling(json_t *run, const json_t *limits, const json_t *locks,
                    const json_t *warmup, const json_t *settings);
void print_bounds(FILE *f, const json_t *res, enum fmt fmt);
void print_ceilings(FILE *f, const json_t *res, enum fmt fmt);
int  check_bounds(const json_t *res, const char *path);
/* ll-report bounds: one line on the exact runs against their ceilings;
 * the number above theirs by more than the spread. */
int  summarize_bounds(const json_t *res, const char *path);
/* ll-report limits-merge: two passes of ll-limits as one limits.json. */
int  cmd_limits_merge(const char *before, const char *after);

/* ---------------------------------------------------------------- the front end, the Redis stock */

/* report_stock.c: the HTTP tier's ceiling from compare's GET /health load
 * (NULL without one); a Redis stock's run's three stores from GET /stock;
 * the retry storms of raw/storms.tsv (stock: the storms' initial stock). */
json_t *derive_http(const json_t *load, const json_t *warmup, long long connections);
json_t *derive_reconcile(const json_t *stock_after);
json_t *build_storms(const char *raw, long long stock);

/* Their tables, in the three formats, and their part of ll-report check
 * (problems on stderr, naming path; returns how many). */
void print_front(FILE *f, const json_t *res, enum fmt fmt);
void print_reconcile(FILE *f, const json_t *res, enum fmt fmt);
void print_storms(FILE *f, const json_t *res, enum fmt fmt);
int  check_stock(const json_t *res, const char *path);

/* ---------------------------------------------------------------- over time */

/* report_time.c: a run's `timeline` (its seconds: from ll-load's
 * per_second, else from compare's polls of /stats in raw/IDX.series.tsv)
 * and its `lat_percentiles`, added to run; their part of ll-report check;
 * the table of both and, in HTML, the charts of each run; ll-report
 * sample NAME (the /stats answers on stdin added up). */
void derive_time(json_t *run, const char *raw, const char *idx, const json_t *load);
int  check_time(const json_t *res, const char *path);
void print_time(FILE *f, const json_t *res, enum fmt fmt);
int  cmd_sample(const char *name);

/* report_capacity.c: compare --scenario capacity's steps (raw/NN.capacity.tsv)
 * into run's "capacity"; ll-report capacity-next and capacity-step; the
 * capacity table and, in HTML, each strategy's latency against the
 * offered load. */
void derive_capacity(json_t *run, const char *raw, const char *idx, const json_t *settings,
                     const json_t *locks);
int  cmd_capacity_next(const char *raw, const char *idx);
int  cmd_capacity_step(const char *raw, const char *idx, int k);
void print_capacity(FILE *f, const json_t *res, enum fmt fmt);

/* report_rtt.c: ll-report rtt RUN (compare --rtt's points); and in one
 * run's report on a stack with a round trip between hosts (settings
 * rtt_ms), the one asked beside the one the instances measured. */
int  cmd_rtt(const char *dir);
void print_run_rtt(FILE *f, const json_t *res, enum fmt fmt);

/* report_sweep.c: ll-report sweep RUN (compare --sweep's points). */
int  cmd_sweep(const char *dir);
/* bench/compare --products N (report_stock.c): ll-report stocks, the
 * products' GET /stock answers summed; the lock granularity table. */
int  cmd_stocks(int n, char **paths);
void print_grain(FILE *f, const json_t *res, enum fmt fmt);

/* ---------------------------------------------------------------- the page */

/* report_overview.c: report.html's first screen (the title, one line, one
 * chart of every run's sold/s, HTML only), and how tall it is in pixels at
 * the page's width (results.json's first_screen_px: report.png's height).
 * The page is OVERVIEW_PAGE_PX wide. */
#define OVERVIEW_PAGE_PX 1160
void print_overview(FILE *f, const json_t *res, enum fmt fmt);
int  overview_height(const json_t *res);

/* report_page.c: report.md, report.html, and the summary that ll-report
 * build prints on the terminal: the same sections in their formats. */
void write_md(FILE *f, const json_t *res);
void write_html(FILE *f, const json_t *res);
void print_summary(FILE *f, const json_t *res);

/* ---------------------------------------------------------------- JMeter */

/* ll-report jtl: the aggregate report of a CSV results file; stock < 0
 * leaves out the sale counts. */
int cmd_jtl(const char *path, long long stock, long long fin);

/* ---------------------------------------------------------------- synchronizers */

/* ll-report sync-plan SYNC.json and ll-report sync RUN (report_sync.c). */
int cmd_sync_plan(const char *path);
int cmd_sync(const char *run);

/* ---------------------------------------------------------------- the fault matrix */

/* ll-report matrix-plan LOCKS.json STRATEGIES FAULTS PARALLEL and
 * ll-report matrix RUN [--drop-claim S:F]... (report_matrix.c): argc and
 * argv from RUN on. */
int cmd_matrix_plan(const char *path, const char *strategies, const char *faults,
                    const char *parallel);
int cmd_matrix(int argc, char **argv);

#endif /* LOCKLAB_REPORT_PRIVATE_H */
