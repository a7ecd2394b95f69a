/* report_stock.c — the front end and the Redis stock in the report: the
 * HTTP tier's own ceiling and each run's share of it, retries per sale,
 * the three-way reconciliation of the runs that sell from Redis, and the
 * retry storm of orders.
 *
 * The HTTP ceiling is what the stack answers through the same front end
 * over the same connections for GET /health, which touches no backend
 * (bench/compare measures it in the run: raw/http.load.json): the most any
 * strategy can sell through this front end. A run's http_share is its
 * sold/s over it.
 *
 * A run of a strategy that sells from Redis (GET /locks: "stock": "redis")
 * takes its final count from Redis (GET /stock's redis.count), and adds
 * `reconcile`: Redis's count and its units sold since the load, MariaDB's
 * count and its units applied, what is in flight between them (sold −
 * applied) and what the stream itself still held, and whether they add up
 * (store/redis_stock.h): MariaDB = Redis + in flight, nothing applied twice,
 * every unit in flight still in the stream. bench/compare waits for the
 * consumers to drain the stream before it reads GET /stock, so an exact run
 * ends drained: in flight 0, Redis = MariaDB.
 *
 * The storm (raw/storm-NN.*): every order sent twice at once to two
 * instances (ll-load --copies 2). It is exact when the stock fell by the
 * orders the instances sold (each first attempt that sold), every order
 * accepted was answered sold to both copies (the client's 200s are twice
 * the orders sold), and every copy got the first answer (replayed).
 */
#include "report_private.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- derived */

json_t *derive_http(const json_t *load, const json_t *warmup, long long connections)
{
    double elapsed = jnum(load, "elapsed_s"), steady = load_steady_rate(warmup);
    long long ok = jint(json_object_get(load, "status"), "200");
    json_t *o;

    if (load == NULL || elapsed <= 0 || ok <= 0)
        return NULL;
    /* Its rate is the run's own, or, for a run of so many requests, its
     * warm-up's steady one (report_ceiling.c), the run's kept beside it. */
    o = json_pack("{s:s,s:f,s:I,s:f,s:I,s:s}", "method", harness_ceiling_method(CEIL_HTTP),
                  "rate", steady > 0 ? steady : harness_rate(ok, elapsed),
                  "ops", (json_int_t)ok, "seconds", elapsed,
                  "connections", (json_int_t)connections,
                  "what", harness_ceiling_text(CEIL_HTTP));
    if (steady > 0)
        json_object_set_new(o, "whole_run_rate", json_real(harness_rate(ok, elapsed)));
    return o;
}

json_t *derive_reconcile(const json_t *stock_after)
{
    const json_t *r = json_object_get(stock_after, "redis");
    const json_t *m = json_object_get(r, "mysql"), *s = json_object_get(r, "stream");
    long long redis = jint(r, "count"), mysql = jint(m, "count");
    long long in_flight = jint(r, "in_flight"), units = jint(s, "units");
    int loaded = json_is_true(json_object_get(r, "loaded"));
    int same_epoch = jint(r, "epoch") == jint(m, "epoch");

    if (!json_is_object(r) || json_object_get(r, "count") == NULL)
        return json_pack("{s:b,s:s}", "reconciled", 0, "error",
                         jstr(r, "error", "GET /stock had no answer from Redis"));
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:b}",
        "redis", (json_int_t)redis, "sold_redis", (json_int_t)jint(r, "sold"),
        "mysql", (json_int_t)mysql, "applied", (json_int_t)jint(m, "applied"),
        "in_flight", (json_int_t)in_flight, "stream_units", (json_int_t)units,
        "stream_pending", (json_int_t)jint(s, "pending"),
        "stream_undelivered", (json_int_t)jint(s, "undelivered"),
        "difference", (json_int_t)(mysql - redis - in_flight),
        "reconciled", loaded && same_epoch && mysql == redis + in_flight && in_flight >= 0 &&
                      (units < 0 || in_flight <= units),
        "drained", loaded && in_flight == 0 && units == 0);
}

/* The instances' order counters, added up. */
static long long orders_sum(const json_t *instances, const char *key)
{
    const json_t *inst;
    long long n = 0;
    size_t i;

    json_array_foreach(instances, i, inst)
        n += jint(json_object_get(inst, "orders"), key);
    return n;
}

static json_t *derive_storm(const char *name, const char *stock_src, long long stock,
                            long long copies, const json_t *load, const json_t *stock_after,
                            const json_t *instances)
{
    const json_t *fin = !strcmp(stock_src, "redis")
                        ? json_object_get(json_object_get(stock_after, "redis"), "count")
                        : json_object_get(stock_after, "count");
    long long requests = jint(load, "requests"), ok = jint(json_object_get(load, "status"), "200");
    long long sold = orders_sum(instances, "sold"), replayed = orders_sum(instances, "replayed");
    long long drop = json_is_integer(fin) ? stock - json_integer_value(fin) : -1;
    json_t *o;

    o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
        "strategy", name, "stock_source", stock_src, "stock", (json_int_t)stock,
        "copies", (json_int_t)copies, "requests", (json_int_t)requests,
        "orders", (json_int_t)(copies > 0 ? requests / copies : 0),
        "answered_sold", (json_int_t)ok,
        "sold", (json_int_t)sold, "sold_out", (json_int_t)orders_sum(instances, "sold_out"),
        "replayed", (json_int_t)replayed,
        "unknown", (json_int_t)orders_sum(instances, "unknown"),
        "failed", (json_int_t)orders_sum(instances, "failed"),
        "conflicts", (json_int_t)orders_sum(instances, "conflicts"),
        "transport_errors", (json_int_t)jint(load, "transport_errors"),
        "stock_drop", (json_int_t)drop);
    json_object_set_new(o, "exact", json_boolean(drop >= 0 && drop == sold && ok == copies * sold &&
                                                 replayed == requests - requests / copies &&
                                                 sold <= stock));
    if (!strcmp(stock_src, "redis"))
        json_object_set_new(o, "reconcile", derive_reconcile(stock_after));
    json_object_set_new(o, "load", json_incref((json_t *)load));
    json_object_set_new(o, "instances", json_incref((json_t *)instances));
    return o;
}

/* raw/storms.tsv (index, strategy, stock source, copies) and its files:
 * the storms of a run, or an empty array. */
json_t *build_storms(const char *raw, long long stock)
{
    char *tsv = path_join(raw, "storms.tsv"), line[256];
    FILE *f = fopen(tsv, "r");
    json_t *out = json_array();

    free(tsv);
    if (f == NULL)
        return out;
    while (fgets(line, sizeof line, f)) {
        char idx[16], name[64], src[16], file[128];
        json_t *load, *after, *inst;
        long long copies;

        if (sscanf(line, "%15s %63s %15s %lld", idx, name, src, &copies) != 4)
            continue;
        load = load_part(raw, "storm-%s.load.json", idx, 0);
        after = load_part(raw, "storm-%s.stock.json", idx, 0);
        snprintf(file, sizeof file, "storm-%s.stats", idx);
        inst = load_numbered(raw, file);
        json_array_append_new(out, derive_storm(name, src, stock, copies, load, after, inst));
        json_decref(load);
        json_decref(after);
        json_decref(inst);
    }
    fclose(f);
    return out;
}

/* ---------------------------------------------------------------- formats */

static const char front_note[] =
    "What each run sold per second once steady against what the stack answers through the "
    "same front end and connections for GET /health, which touches no backend, steady too: "
    "the most any strategy can sell here. retries/sale: lost races retried (redis-watch's EXECs, the optimistic "
    "UPDATEs) and lock polls, per sale.";

void print_front(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = { "strategy", "steady/s", "of http", "retries/sale" };
    static const int widths[] = { 20, 9, 8, 12 };
    const json_t *http = json_object_get(json_object_get(json_object_get(res, "limits"),
                                                         "ceilings"), CEIL_HTTP);
    const json_t *runs = json_object_get(res, "runs"), *run;
    const struct table t = { f, fmt, 4, names, widths };
    char title[160], v[4][32];
    const char *cv[4] = { v[0], v[1], v[2], v[3] };
    size_t i;

    if (!json_is_object(http) || jnum(http, "rate") <= 0)
        return;
    snprintf(title, sizeof title, "the HTTP tier: GET /health, %lld connections: %.0f "
             "answers/s, the most any strategy can sell through it",
             jint(http, "connections"), jnum(http, "rate"));
    write_section(f, fmt, title, front_note);
    table_head(&t);
    json_array_foreach(runs, i, run) {
        snprintf(v[0], sizeof v[0], "%s", jstr(run, "strategy", "?"));
        snprintf(v[1], sizeof v[1], "%.0f", jnum(run, "steady_sold_per_s"));
        if (json_is_number(json_object_get(run, "http_share")))
            snprintf(v[2], sizeof v[2], "%.1f%%", jnum(run, "http_share") * 100.0);
        else
            snprintf(v[2], sizeof v[2], "-");
        if (json_is_number(json_object_get(run, "retries_per_sale")))
            snprintf(v[3], sizeof v[3], "%.2f", jnum(run, "retries_per_sale"));
        else
            snprintf(v[3], sizeof v[3], "-");
        table_row(&t, cv);
    }
    table_end(&t);
}

static const char stock_note[] =
    "The runs that sell from Redis ({stock:P}), read once the consumers had drained the sales "
    "stream: Redis's count (the final of the table above), MariaDB's, the units sold in "
    "Redis and not yet applied to MariaDB (in flight) and those the stream still held "
    "unacknowledged. They add up when MariaDB = Redis + in flight, nothing was applied "
    "twice and every unit in flight is still in the stream; drained: nothing in flight.";

static void reconcile_cells(const json_t *c, char v[][32])
{
    snprintf(v[1], 32, "%lld", jint(c, "redis"));
    snprintf(v[2], 32, "%lld", jint(c, "mysql"));
    snprintf(v[3], 32, "%lld", jint(c, "in_flight"));
    snprintf(v[4], 32, "%lld", jint(c, "stream_units"));
    snprintf(v[5], 32, "%lld", jint(c, "applied"));
    snprintf(v[6], 32, "%s", !json_is_true(json_object_get(c, "reconciled")) ? "NO"
             : json_is_true(json_object_get(c, "drained")) ? "yes, drained" : "yes");
}

void print_reconcile(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "redis", "mysql", "in flight", "in stream", "applied", "reconciled",
    };
    static const int widths[] = { 20, 10, 10, 9, 9, 9, 12 };
    const struct table t = { f, fmt, 7, names, widths };
    char v[7][32];
    const char *cv[7] = { v[0], v[1], v[2], v[3], v[4], v[5], v[6] };
    const json_t *run;
    size_t i;
    int any = 0;

    json_array_foreach(json_object_get(res, "runs"), i, run) {
        const json_t *c = json_object_get(run, "reconcile");
        if (!json_is_object(c))
            continue;
        if (!any++) {
            write_section(f, fmt, "the Redis stock at the end of each run: the three stores, "
                          "in units", stock_note);
            table_head(&t);
        }
        snprintf(v[0], sizeof v[0], "%s", jstr(run, "strategy", "?"));
        reconcile_cells(c, v);
        table_row(&t, cv);
    }
    if (any)
        table_end(&t);
}

static const char storm_note[] =
    "POST /order with every order sent twice at once, its copies to two different instances "
    "(ll-load --copies 2). orders sold: first attempts that sold (the instances' count); "
    "answered sold: the client's 200s, twice the orders sold when every copy of an accepted "
    "order got its first answer; exact: the stock fell by exactly the orders sold, and every "
    "copy was answered the first attempt's answer (replayed).";

void print_storms(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "orders", "requests", "orders sold", "answered sold", "sold out",
        "replayed", "failed", "stock fell", "exact",
    };
    static const int widths[] = { 20, 7, 8, 11, 13, 8, 8, 6, 10, 5 };
    const json_t *storms = json_object_get(res, "storms"), *s;
    const struct table t = { f, fmt, 10, names, widths };
    char v[10][32];
    const char *cv[10];
    size_t i;
    int k;

    if (json_array_size(storms) == 0)
        return;
    for (k = 0; k < 10; k++)
        cv[k] = v[k];
    write_section(f, fmt, "orders: a retry storm", storm_note);
    table_head(&t);
    json_array_foreach(storms, i, s) {
        snprintf(v[0], 32, "%s", jstr(s, "strategy", "?"));
        snprintf(v[1], 32, "%lld", jint(s, "orders"));
        snprintf(v[2], 32, "%lld", jint(s, "requests"));
        snprintf(v[3], 32, "%lld", jint(s, "sold"));
        snprintf(v[4], 32, "%lld", jint(s, "answered_sold"));
        snprintf(v[5], 32, "%lld", jint(s, "sold_out"));
        snprintf(v[6], 32, "%lld", jint(s, "replayed"));
        snprintf(v[7], 32, "%lld", jint(s, "failed") + jint(s, "unknown") +
                 jint(s, "transport_errors"));
        snprintf(v[8], 32, "%lld", jint(s, "stock_drop"));
        snprintf(v[9], 32, "%s", json_is_true(json_object_get(s, "exact")) ? "yes" : "NO");
        table_row(&t, cv);
    }
    table_end(&t);
}

/* ---------------------------------------------------------------- check */

/* What ll-report check adds for these: each line on stderr; how many. */
#define BAD(...) do { fprintf(stderr, "ll-report check: %s: ", path); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); n++; } while (0)

int check_stock(const json_t *res, const char *path)
{
    const json_t *run, *s;
    size_t i;
    int n = 0;

    json_array_foreach(json_object_get(res, "runs"), i, run) {
        const json_t *c = json_object_get(run, "reconcile");
        const char *name = jstr(run, "strategy", "?");
        if (!json_is_object(c) || json_object_get(c, "error"))
            continue;
        if (jint(run, "final") != jint(c, "redis"))
            BAD("%s: final %lld is not Redis's count %lld", name, jint(run, "final"),
                jint(c, "redis"));
        if (json_is_true(json_object_get(c, "reconciled")) &&
            !(jint(c, "difference") == 0 && jint(c, "in_flight") >= 0 &&
              (jint(c, "stream_units") < 0 || jint(c, "in_flight") <= jint(c, "stream_units"))))
            BAD("%s: reconciled, but MariaDB %lld, Redis %lld and %lld in flight do not add up",
                name, jint(c, "mysql"), jint(c, "redis"), jint(c, "in_flight"));
    }
    json_array_foreach(json_object_get(res, "storms"), i, s) {
        long long copies = jint(s, "copies"), req = jint(s, "requests");
        int exact = jint(s, "stock_drop") == jint(s, "sold") &&
                    jint(s, "answered_sold") == copies * jint(s, "sold") &&
                    jint(s, "replayed") == req - (copies > 0 ? req / copies : 0) &&
                    jint(s, "stock_drop") >= 0 && jint(s, "sold") <= jint(s, "stock");
        if (json_is_true(json_object_get(s, "exact")) != exact)
            BAD("storm %s: exact says %s, the counts say otherwise", jstr(s, "strategy", "?"),
                exact ? "no" : "yes");
    }
    return n;
}
#undef BAD

/* ---------------------------------------------------------------- several products */

/* ll-report stocks FILE…: the GET /stock answers of one run's products
 * (bench/compare --products) as one, {"count": their sum, "products":
 * [{"product", "count"} …]}, on stdout: the run's NN.stock.json, whose
 * count the rest reads as any run's final stock. */
int cmd_stocks(int n, char **paths)
{
    json_t *each = json_array(), *one, *out;
    long long sum = 0;
    char *text;
    int i;

    for (i = 0; i < n; i++) {
        one = load_json(paths[i]);
        if (!json_is_integer(json_object_get(one, "count")))
            die("%s: no count", paths[i]);
        sum += jint(one, "count");
        json_array_append_new(each, json_pack("{s:s,s:I}", "product", jstr(one, "product", "?"),
                                              "count", (json_int_t)jint(one, "count")));
        json_decref(one);
    }
    out = json_pack("{s:I,s:o}", "count", (json_int_t)sum, "products", each);
    text = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    puts(text);
    free(text);
    json_decref(out);
    return 0;
}

static const char grain_note[] =
    "The load spread over the products, each purchase to the next one in turn, each with its "
    "own stock. A lock per product (lock:<product>) lets the sales of different products run "
    "at once; one lock for every product (lock:all, seed 004 §2.5's coarse lock) makes each "
    "sale wait for the one before, whatever either sold. sold/s counts every product's sales; "
    "oversold and lost add up over the products.";

void print_grain(FILE *f, const json_t *res, enum fmt fmt)
{
    static const char *const names[] = {
        "strategy", "lock", "sold/s", "p50 ms", "p99 ms", "oversold", "lost",
    };
    static const int widths[] = { 20, 24, 9, 8, 8, 8, 8 };
    const json_t *settings = json_object_get(res, "settings"), *run;
    const struct table t = { f, fmt, 7, names, widths };
    long long products = jint(settings, "products");
    char title[160], v[7][48];
    const char *cv[7] = { v[0], v[1], v[2], v[3], v[4], v[5], v[6] };
    const char *key;
    size_t i;

    if (products <= 1)
        return;
    snprintf(title, sizeof title, "lock granularity: %lld products, %lld units each", products,
             jint(settings, "stock_per_product"));
    write_section(f, fmt, title, grain_note);
    table_head(&t);
    json_array_foreach(json_object_get(res, "runs"), i, run) {
        key = jstr(run, "lock_key", "lock:<product>");
        snprintf(v[0], sizeof v[0], "%s", jstr(run, "strategy", "?"));
        if (!strcmp(key, "lock:<product>"))
            snprintf(v[1], sizeof v[1], "one per product");
        else
            snprintf(v[1], sizeof v[1], "one for all (%s)", key);
        snprintf(v[2], sizeof v[2], "%.0f", jnum(run, "sold_per_s"));
        snprintf(v[3], sizeof v[3], "%.1f", jnum(json_object_get(run, "latency_ms"), "p50"));
        snprintf(v[4], sizeof v[4], "%.1f", jnum(json_object_get(run, "latency_ms"), "p99"));
        snprintf(v[5], sizeof v[5], "%lld", jint(run, "oversold"));
        snprintf(v[6], sizeof v[6], "%lld", jint(run, "lost_updates"));
        table_row(&t, cv);
    }
    table_end(&t);
}
