/* report_derive.c — one run of results.json from its raw answers: the
 * counts of the load generator's answers, the instances' counters added up
 * and their latency merged, the stock before and after (oversold, lost
 * updates), the lock's hold, the seeds' published figure beside ours,
 * and the cost per request (report_cost.c). What the run is measured
 * against, its ceiling, is report_ceiling.c's. The raw answers go into
 * the run too, so that a report can be rebuilt or re-checked.
 */
#include "report_private.h"

#include <string.h>

/* ---------------------------------------------------------------- seeds */

/* The seeds' published JMeter results (all of them seed 000's; the other
 * seeds publish none): 5000 units, 100 threads × 50 loops, measured by the
 * course authors on their hardware, and on how many service instances:
 *
 * - one: §1.3 (no lock) and §1.4.1 (the JVM lock) ran before the seed
 *   starts a second service. §1.4.1 restarts "the tomcat service"
 *   (重启tomcat服务) and tests again, and §1.5 opens with "the JVM lock
 *   is fine with one project and one service; but in a cluster?"
 *   (使用jvm锁在单工程单服务情况下确实没有问题,但是在集群情况下会怎样?).
 * - three behind nginx: from §1.5 on, "start three services (ports 8000
 *   8100 8200)" (启动三个服务), and §1.5.2 makes a new JMeter test group
 *   against nginx's address (配置nginx的地址). Its own figure there is an
 *   image ("性能只是略有提升"), so the JVM lock on three has no row. The
 *   later sections (§1.6.1 on) do not restate the target and name no
 *   other; their locks are the ones meant for that cluster, so they are
 *   taken as measured through nginx on three.
 *
 * The report sets a figure only beside a run on as many instances
 * (bench/compare --scenario seeds --instances 1 for the first two). */
static const struct seed_result {
    const char *name;
    const char *label;
    double      rps;
    long long   final_stock;      /* -1: not published */
    int         instances;        /* service instances JMeter's load reached */
} seeds[] = {
    { "none",               "no lock",                     473.8, 4870, 1 },  /* §1.3 */
    { "mutex",              "JVM lock",                     82.2, -1, 1 },    /* §1.4.1 */
    { "mysql-for-update",   "SELECT … FOR UPDATE",         231.5, -1, 3 },    /* §1.6.1 */
    { "mysql-lock-table",   "db_lock table",                20.1, -1, 3 },    /* §2.2 */
    { "redis-setnx",        "Redis SETNX",                  47.8, -1, 3 },    /* §3.1 */
    { "redis-set-nx-ex",    "Redis SET NX EX",              47.7, -1, 3 },    /* §3.2 */
    { "redis-lua",          "Redis Lua release",            49.7, -1, 3 },    /* §3.5 */
    { "redis-reentrant",    "Redis reentrant hash lock",    47.7, -1, 3 },    /* §3.6.4 */
    { "redisson",           "Redisson",                     49.2, -1, 3 },    /* §3.9.1 */
    { "zk-ephemeral",       "ZooKeeper ephemeral node",     25.7, -1, 3 },    /* §4.3 */
    { "zk-sequential-poll", "ZooKeeper sequential, polling", 19.2, -1, 3 },   /* §4.4.1 */
    { "zk-sequential",      "ZooKeeper watching predecessor", 39.8, -1, 3 },  /* §4.4.2 */
    { "curator",            "Curator",                      36.6, -1, 3 },    /* §4.6.1 */
};

static const struct seed_result *seed_find(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        if (strcmp(seeds[i].name, name) == 0)
            return &seeds[i];
    return NULL;
}

/* ---------------------------------------------------------------- derived */

void count_answers(const json_t *load, struct answers *a)
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
    a->unknown = jint(result, "unknown");
    /* Whatever answered that is none of the above (a 502 from nginx, …). */
    a->other = answered - a->sold - a->sold_out - a->timeouts - a->unavailable - a->errors -
               a->unknown;
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
        "requests", "sold", "sold_out", "lock_timeouts", "unavailable", "errors", "unknown",
        "fenced", "lock_lost", "release_errors", "retries", "backend_ops", "wakeups", "holds", "held_us",
        "deadlocks", "foreign",
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

/* Field `field` of strategy `name` in GET /locks, or def where it has
 * none (an older locks.json): "stock", where it sells from ("redis" for
 * the Redis stock, else "mysql"); "lock_key", its lock's granularity. */
static const char *lock_field(const json_t *locks, const char *name, const char *field,
                              const char *def)
{
    const json_t *s = lock_entry(locks, name);
    return s ? jstr(s, field, def) : def;
}

/* A derived figure, or null where harness_* said "none" (-1). */
static json_t *num_or_null(double v)
{
    return v < 0 ? json_null() : json_real(v);
}

/* One run's object of results.json from its raw pieces. */
json_t *derive_run(const char *name, const char *family, long long stock,
                   long long seed_instances, json_t *load, json_t *stock_after,
                   json_t *instances, const json_t *locks, const json_t *cost)
{
    const char *src = lock_field(locks, name, "stock", "mysql");
    double elapsed = jnum(load, "elapsed_s");
    const struct seed_result *seed = seed_instances > 0 ? seed_find(name) : NULL;
    struct answers a;
    json_t *run, *final_v;
    struct lat_summary client;
    json_t *server = server_side(name, instances), *costs;
    long long sold, unknown;

    /* The stock the strategy sells from: db_stock's count, or for the
     * Redis stock Redis's (report_stock.c reconciles the two). */
    final_v = !strcmp(src, "redis") ? json_object_get(json_object_get(stock_after, "redis"), "count")
                                    : json_object_get(stock_after, "count");
    count_answers(load, &a);
    /* The units sold are the instances' count: it includes purchases the
     * client gave up on (wrk at the end of its time) that still sold. The
     * same for the unknown ones. */
    sold = json_array_size(instances) > 0 ? jint(server, "sold") : a.sold;
    unknown = json_array_size(instances) > 0 ? jint(server, "unknown") : a.unknown;
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
        /* Each unknown answer may have sold (harness.h): the upper ends. */
        json_object_set_new(run, "oversold_max",
                            json_integer(harness_oversold(stock, sold + unknown)));
        json_object_set_new(run, "lost_updates_max",
                            json_integer(harness_lost(stock, sold + unknown, fin)));
    } else {
        json_object_set_new(run, "final", json_null());
        json_object_set_new(run, "oversold", json_null());
        json_object_set_new(run, "lost_updates", json_null());
        json_object_set_new(run, "oversold_max", json_null());
        json_object_set_new(run, "lost_updates_max", json_null());
    }
    json_object_set_new(run, "unknown", json_integer(unknown));
    json_object_set_new(run, "stock", json_string(src));
    json_object_set_new(run, "lock_key",
                        json_string(lock_field(locks, name, "lock_key", "lock:<product>")));
    if (!strcmp(src, "redis"))
        json_object_set_new(run, "reconcile", derive_reconcile(stock_after));
    json_object_set_new(run, "retries_per_sale", num_or_null(jint(server, "sold") > 0 ?
        (double)jint(server, "retries") / (double)jint(server, "sold") : -1.0));
    json_object_set_new(run, "latency_ms", lat_json(&client));
    json_object_set_new(run, "lock_hold_us", num_or_null(harness_hold_us(
        jint(server, "held_us"), jint(server, "holds"))));
    json_object_set_new(run, "lock_held_share", num_or_null(harness_held_share(
        jint(server, "held_us"), elapsed)));
    json_object_set_new(run, "server", server);
    /* A figure measured on another number of instances is kept apart
     * (seed_elsewhere): the table leaves it out and a note names it. */
    if (seed)
        json_object_set_new(run, seed->instances == seed_instances ? "seed" : "seed_elsewhere",
                            json_pack("{s:s,s:f,s:I,s:i}", "label", seed->label, "rps", seed->rps,
                                      "final", (json_int_t)seed->final_stock,
                                      "instances", seed->instances));
    costs = derive_cost(cost, client.n);
    json_object_set_new(run, "cost", costs ? costs : json_null());
    json_object_set_new(run, "load", json_incref(load));
    json_object_set_new(run, "instances", json_incref(instances));
    return run;
}
