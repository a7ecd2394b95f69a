/* test_unit.c — the pieces that need no server: flag parsing, integer
 * parsing, the latency histogram, GET /metrics's text, product codes, the
 * registry and its ceilings, POST /order's parameters, and the polling
 * locks' waiting room, a Redis Cluster's key slots, and what GET /stock
 * calls a Redis stock that adds up and one reconciled. */
#include "check.h"
#include "../clients/redis_cluster.h"
#include "../bench/common/harness.h"
#include "../bench/limits/limits_protocol.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../locks/keeper.h"
#include "../locks/lock.h"
#include "../app/metrics.h"
#include "../app/orders.h"
#include "../app/request.h"
#include "../app/stats.h"
#include "../store/redis_stock.h"
#include "../store/stock.h"
#include "../sync/sync.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(struct config *cfg, char *err, int n, char **argv)
{
    return config_parse(cfg, n, argv, err, 256);
}

static void test_config(void)
{
    struct config cfg;
    char err[256];
    char *ok[] = { "locklab", "--port", "8100", "--lock=mysql-update", "--redis",
                   "127.0.0.1:1,localhost:2", "--allow-faults", "--threads", "4" };
    char *badport[] = { "locklab", "--port", "70000" };
    char *badlock[] = { "locklab", "--lock", "nope" };
    char *badredis[] = { "locklab", "--redis", "hostonly" };
    char *unknown[] = { "locklab", "--frobnicate" };
    char *novalue[] = { "locklab", "--port" };
    char *help[] = { "locklab", "--help" };
    char *sentinel[] = { "locklab", "--redis-sentinel", "127.0.0.1:26379,localhost:2" };
    char *noname[] = { "locklab", "--redis", "127.0.0.1:1,nosuchhost.invalid:2" };
    char *badsentinel[] = { "locklab", "--redis-sentinel", "26379" };
    char *cluster[] = { "locklab", "--redis", "127.0.0.1:1,127.0.0.1:2", "--redis-cluster",
                        "127.0.0.1:7000,127.0.0.1:7001" };
    char *both[] = { "locklab", "--redis-cluster", "127.0.0.1:1", "--redis-sentinel",
                     "127.0.0.1:2" };

    unsetenv("LOCKLAB_PORT");
    unsetenv("LOCKLAB_REDIS_SENTINEL");
    CHECK(parse(&cfg, err, 9, ok) == 0);
    CHECK(cfg.port == 8100 && cfg.threads == 4 && cfg.allow_faults == 1);
    CHECK(strcmp(cfg.lock, "mysql-update") == 0);
    /* Host names are resolved at start, to numeric addresses (IPv4 first). */
    CHECK(cfg.nredis == 2 && cfg.redis[1].port == 2 && !strcmp(cfg.redis[1].host, "127.0.0.1"));
    CHECK(strcmp(cfg.name, "app-8100") == 0);
    CHECK(strlen(cfg.instance_id) == 36);
    CHECK(parse(&cfg, err, 3, noname) == -1 && strstr(err, "--redis") &&
          strstr(err, "nosuchhost.invalid") && strstr(err, "does not resolve"));
    CHECK(parse(&cfg, err, 3, badport) == -1 && strstr(err, "--port"));
    /* The ground floor does not know the strategies: main() refuses an
     * unknown --lock by the registry. */
    CHECK(parse(&cfg, err, 3, badlock) == 0 && lock_find(cfg.lock) == NULL);
    CHECK(parse(&cfg, err, 3, badredis) == -1 && strstr(err, "--redis"));
    CHECK(parse(&cfg, err, 2, unknown) == -1 && strstr(err, "frobnicate"));
    CHECK(parse(&cfg, err, 2, novalue) == -1 && strstr(err, "needs a value"));
    CHECK(parse(&cfg, err, 2, help) == 1);
    CHECK(cfg.nsentinel == 0);                  /* off unless asked for */
    CHECK(parse(&cfg, err, 3, sentinel) == 0 && cfg.nsentinel == 2);
    CHECK(cfg.sentinel[0].port == 26379 && !strcmp(cfg.sentinel[1].host, "127.0.0.1"));
    CHECK(parse(&cfg, err, 3, badsentinel) == -1 && strstr(err, "--redis-sentinel"));
    unsetenv("LOCKLAB_REDIS_CLUSTER");
    CHECK(parse(&cfg, err, 5, cluster) == 0 && cfg.ncluster == 2);
    CHECK(cfg.nredis == 1 && cfg.redis[0].port == 7000);    /* server 0 is the cluster */
    CHECK(parse(&cfg, err, 5, both) == -1 && strstr(err, "--redis-cluster"));
    CHECK(parse(&cfg, err, 2, help) == 1 && cfg.ncluster == 0);
    setenv("LOCKLAB_REDIS_CLUSTER", "", 1);     /* docker-compose.yml's default: none */
    CHECK(parse(&cfg, err, 2, help) == 1 && cfg.ncluster == 0 && cfg.redis_cluster == NULL);
    unsetenv("LOCKLAB_REDIS_CLUSTER");

    setenv("LOCKLAB_PORT", "9000", 1);
    CHECK(parse(&cfg, err, 1, help) == 0 && cfg.port == 9000);       /* env fallback */
    CHECK(parse(&cfg, err, 3, badport) == -1);                        /* flag wins */
    setenv("LOCKLAB_PORT", "abc", 1);
    CHECK(parse(&cfg, err, 1, help) == -1 && strstr(err, "LOCKLAB_PORT"));
    unsetenv("LOCKLAB_PORT");
}

static void test_parse_int(void)
{
    long long v = 0;
    CHECK(parse_int("42", 0, 100, &v) == 0 && v == 42);
    CHECK(parse_int("-1", 0, 100, &v) == -1);
    CHECK(parse_int("101", 0, 100, &v) == -1);
    CHECK(parse_int("4x", 0, 100, &v) == -1);
    CHECK(parse_int("", 0, 100, &v) == -1);
    CHECK(parse_int(" 4", 0, 100, &v) == -1);
    CHECK(parse_int("99999999999999999999", 0, 100, &v) == -1);
}

static void test_hist(void)
{
    struct hist h;
    int64_t us;
    int b;

    /* Every value lands in a bucket whose top is within 12.5% above it. */
    for (us = 0; us < 5000000; us = us * 9 / 8 + 1) {
        b = hist_bucket(us);
        CHECK(hist_bucket_top(b) >= us);
        CHECK(hist_bucket_top(b) <= us + us / 8 + 1);
    }
    memset(&h, 0, sizeof h);
    CHECK(hist_percentile(&h, 0.5) == 0);
    for (us = 1; us <= 1000; us++)
        hist_add(&h, us * 100);       /* 100 µs .. 100 ms, uniform */
    CHECK(h.count == 1000 && h.max_us == 100000);
    us = hist_percentile(&h, 0.50);
    CHECK(us >= 50000 && us <= 50000 * 9 / 8);
    us = hist_percentile(&h, 0.99);
    CHECK(us >= 99000 && us <= 100000);
    CHECK(hist_percentile(&h, 1.0) == 100000);
}

/* Does text hold line (a whole line)? */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    const char *at = text;

    while ((at = strstr(at, line)) != NULL) {
        if ((at == text || at[-1] == '\n') && at[n] == '\n')
            return 1;
        at++;
    }
    return 0;
}

/* Prometheus's buckets and text: each bound in its own bucket, buckets
 * cumulative, the sum exact in seconds, label values escaped; and the
 * strategies' families from what stats_record() counted. */
static void test_metrics(void)
{
    uint64_t bucket[METRICS_LE_N + 1] = { 0 };
    const struct lock_ops *const *all;
    struct lock_ctx ctx;
    struct metrics *m;
    char *text, line[200], esc[16];
    size_t len;
    int b, n;

    CHECK(metrics_bucket(0) == 0 && metrics_bucket(-5) == 0);
    CHECK(metrics_bucket(INT64_MAX) == METRICS_LE_N);
    for (b = 0; b < METRICS_LE_N; b++) {
        CHECK(metrics_bucket(metrics_le_us[b]) == b);
        CHECK(metrics_bucket(metrics_le_us[b] + 1) == b + 1);
        CHECK(b == 0 || metrics_le_us[b] > metrics_le_us[b - 1]);
    }
    bucket[metrics_bucket(700)] = 2;            /* 0.001 */
    bucket[metrics_bucket(1000)] += 1;          /* 0.001 as well: le is <= */
    bucket[METRICS_LE_N] = 4;                   /* past 30 s */
    m = metrics_new();
    metrics_histogram(m, "x_seconds", "k=\"v\"", bucket, 61500001);
    metrics_histogram(m, "y_seconds", NULL, bucket, 5);
    text = metrics_text(m, &len);
    CHECK(len == strlen(text));
    CHECK(has_line(text, "x_seconds_bucket{k=\"v\",le=\"0.0005\"} 0"));
    CHECK(has_line(text, "x_seconds_bucket{k=\"v\",le=\"0.001\"} 3"));
    CHECK(has_line(text, "x_seconds_bucket{k=\"v\",le=\"30\"} 3"));
    CHECK(has_line(text, "x_seconds_bucket{k=\"v\",le=\"+Inf\"} 7"));
    CHECK(has_line(text, "x_seconds_sum{k=\"v\"} 61.500001"));
    CHECK(has_line(text, "x_seconds_count{k=\"v\"} 7"));
    CHECK(has_line(text, "y_seconds_bucket{le=\"1e-05\"} 0"));
    CHECK(has_line(text, "y_seconds_sum 0.000005") && has_line(text, "y_seconds_count 7"));
    free(text);
    CHECK(strcmp(metrics_label_value(esc, sizeof esc, "a\"b\\c\nd"), "a\\\"b\\\\c\\nd") == 0);
    CHECK(strcmp(metrics_label_value(esc, 3, "a\"b"), "a") == 0);   /* never half an escape */

    all = lock_all(&n);
    stats_init(n);
    memset(&ctx, 0, sizeof ctx);
    ctx.qty = 3;
    ctx.held_us = 40;
    stats_record(1, LL_OK, 2000, &ctx, 0);
    ctx.held_us = -1;
    ctx.backend_ops = 5;
    stats_record(1, LL_TIMEOUT, 30000001, &ctx, 0);
    m = metrics_new();
    stats_metrics(m);
    text = metrics_text(m, &len);
    snprintf(line, sizeof line, "locklab_purchases_total{strategy=\"%s\",result=\"sold\"} 1",
             all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line, "locklab_purchases_total{strategy=\"%s\",result=\"lock_timeout\"} 1",
             all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line, "locklab_sold_units_total{strategy=\"%s\"} 3", all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line, "locklab_backend_operations_total{strategy=\"%s\"} 5",
             all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line,
             "locklab_request_duration_seconds_bucket{strategy=\"%s\",le=\"0.0025\"} 1",
             all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line, "locklab_request_duration_seconds_count{strategy=\"%s\"} 2",
             all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line, "locklab_request_duration_seconds_sum{strategy=\"%s\"} 30.002001",
             all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line, "locklab_lock_hold_seconds_count{strategy=\"%s\"} 1",
             all[1]->name);
    CHECK(has_line(text, line));
    snprintf(line, sizeof line, "locklab_sold_units_total{strategy=\"%s\"} 0", all[0]->name);
    CHECK(has_line(text, line));
    CHECK(strstr(text, "# TYPE locklab_request_duration_seconds histogram\n") != NULL);
    free(text);
    stats_reset();
    m = metrics_new();
    stats_metrics(m);
    text = metrics_text(m, &len);
    snprintf(line, sizeof line, "locklab_sold_units_total{strategy=\"%s\"} 0", all[1]->name);
    CHECK(has_line(text, line));
    free(text);
}

/* A registry with a name twice, a strategy that cannot sell, or one of a
 * family with no FAMILY line is refused (main() then stops before anything
 * starts). */
static void test_table_check(const struct lock_ops *const *all)
{
    struct lock_ops twin = *all[1], mute = *all[0], stray = *all[0];
    const struct lock_ops *dup[3] = { all[0], all[1], &twin };
    const struct lock_ops *bad[2] = { all[0], &mute };
    const struct lock_ops *lost[2] = { all[0], &stray };
    char err[160];

    twin.summary = "another strategy that took the same name";
    CHECK(lock_table_check(dup, 2, err, sizeof err) == 0);
    CHECK(lock_table_check(dup, 3, err, sizeof err) == -1);
    CHECK(strstr(err, all[1]->name) != NULL && strstr(err, "entries 1 and 2") != NULL);
    mute.name = "mute";
    mute.release = NULL;
    CHECK(lock_table_check(bad, 2, err, sizeof err) == -1 && strstr(err, "mute") != NULL);
    stray.name = "stray";
    stray.family = "consul";
    CHECK(lock_table_check(lost, 2, err, sizeof err) == -1 && strstr(err, "FAMILY") != NULL);
    CHECK(lock_family_find("redis") != NULL && lock_family_find("consul") == NULL);
    stray.family = all[0]->family;      /* claims of a fence it cannot issue */
    stray.fence = NULL;
    stray.fence_fails = FAULT_FAILOVER;
    CHECK(lock_table_check(lost, 2, err, sizeof err) == -1 && strstr(err, "fence_fails") != NULL);
}

/* The faults (locks/faults.h): one name each, the families each touches,
 * and every strategy's claims only of faults that can touch it. */
static void test_faults(const struct lock_ops *const *all, int n)
{
    int i, k;

    CHECK(LOCK_FAULT_COUNT >= 16 && LOCK_FAULT_COUNT <= 32);
    CHECK(strcmp(lock_fault_name(LOCK_FAULT_ID_PAUSE), "pause") == 0);
    CHECK(FAULT_CLOCK_REDIS == 1 << LOCK_FAULT_ID_CLOCK_REDIS);
    CHECK(lock_fault_name(LOCK_FAULT_COUNT) == NULL);
    for (i = 0; i < LOCK_FAULT_COUNT; i++)
        for (k = 0; k < i; k++)
            CHECK(strcmp(lock_fault_name(i), lock_fault_name(k)) != 0);
    CHECK(lock_fault_touches(LOCK_FAULT_ID_PAUSE, "mysql"));
    CHECK(lock_fault_touches(LOCK_FAULT_ID_REDIS_RESET, "redis-stock"));
    CHECK(lock_fault_touches(LOCK_FAULT_ID_REDIS_RESET, "hybrid"));
    CHECK(!lock_fault_touches(LOCK_FAULT_ID_REDIS_RESET, "mysql"));
    CHECK(!lock_fault_touches(LOCK_FAULT_ID_SLOT_MIGRATE, "redis-stock-x"));
    CHECK(!lock_fault_touches(LOCK_FAULT_ID_ETCD_REVOKE, "zookeeper"));
    for (i = 0; i < n; i++)
        for (k = 0; k < LOCK_FAULT_COUNT; k++)
            if ((all[i]->fails | all[i]->fence_fails) & (1u << k) &&
                !lock_fault_touches(k, all[i]->family)) {
                fprintf(stderr, "%s claims to fail %s, which cannot touch its family %s\n",
                        all[i]->name, lock_fault_name(k), all[i]->family);
                CHECK(0);
            }
}

/* Each strategy names the ceiling it is measured against, a key ll-limits
 * writes (bench/common/harness.h), and the ones the README states: InnoDB orders
 * the sales of mysql-update (the hot row's UPDATE peak) and of the FOR
 * UPDATE, share-mode, optimistic and no-index ones (each its own
 * statements' plateau); mysql-batch's row is no bound (n purchases a
 * statement), the HTTP tier is; the rest serialise every sale behind
 * their family's lock (its hold). */
static void test_ceilings(const struct lock_ops *const *all, int n)
{
    static const char *const want[][2] = {
        { "none", LOCK_CEIL_SERIAL_MYSQL }, { "mutex", LOCK_CEIL_SERIAL_MYSQL },
        { "mysql-update", LOCK_CEIL_UPDATE_PEAK }, { "mysql-batch", LOCK_CEIL_HTTP },
        { "mysql-for-update", LOCK_CEIL_FOR_UPDATE },
        { "mysql-share-mode", LOCK_CEIL_SHARE_MODE },
        { "mysql-update-noindex", LOCK_CEIL_UPDATE_NOINDEX },
        { "mysql-optimistic", LOCK_CEIL_OPTIMISTIC },
        { "mysql-optimistic-recursive", LOCK_CEIL_OPTIMISTIC_RECURSIVE },
        { "mysql-optimistic-tx", LOCK_CEIL_OPTIMISTIC_RECURSIVE },
        { "mysql-lock-naive", LOCK_CEIL_SERIAL_MYSQL },
        { "mysql-lock-table", LOCK_CEIL_SERIAL_MYSQL },
        { "redis-decr", LOCK_CEIL_REDIS_DECR }, { "redis-watch", LOCK_CEIL_REDIS_WATCH },
        { "redis-lock-stock", LOCK_CEIL_SERIAL_REDIS_STOCK },
        { "etcd", LOCK_CEIL_SERIAL_ETCD },
        /* hybrid: no faster than its arbiter; fallback: its first layer's */
        { "hybrid", LOCK_CEIL_SERIAL_ZK }, { "fallback", LOCK_CEIL_SERIAL_REDIS },
    };
    size_t k;
    int i;

    for (i = 0; i < n; i++) {
        CHECK(strlen(harness_ceiling_text(all[i]->ceiling)) > 0);
        if (!strcmp(all[i]->family, "redis"))
            CHECK(!strcmp(all[i]->ceiling, CEIL_SERIAL_REDIS));
        /* The Redis stock's family, and only it, sells from Redis. */
        CHECK(!strcmp(all[i]->family, "redis-stock") == (all[i]->stock != NULL));
        CHECK(all[i]->stock == NULL || !strcmp(all[i]->stock, "redis"));
        if (!strcmp(all[i]->family, "zookeeper"))
            CHECK(!strcmp(all[i]->ceiling, CEIL_SERIAL_ZK));
        if (!strcmp(all[i]->family, "etcd"))
            CHECK(!strcmp(all[i]->ceiling, CEIL_SERIAL_ETCD));
    }
    for (k = 0; k < sizeof want / sizeof want[0]; k++)
        CHECK(lock_find(want[k][0]) && !strcmp(lock_find(want[k][0])->ceiling, want[k][1]));
}

static void test_codes_and_registry(void)
{
    const struct lock_ops *const *all;
    char err[160];
    int i, n;

    CHECK(stock_code_valid("1001"));
    CHECK(stock_code_valid("A-b_9"));
    CHECK(!stock_code_valid(""));
    CHECK(!stock_code_valid("1001'"));
    CHECK(!stock_code_valid("1 0"));
    CHECK(!stock_code_valid("123456789012345678901234567890123"));

    all = lock_all(&n);
    CHECK(n >= 6);
    CHECK(lock_table_check(all, n, err, sizeof err) == 0);
    for (i = 0; i < n; i++)
        CHECK(lock_find(all[i]->name) == all[i] && lock_index(all[i]) == i);
    CHECK(lock_find("nope") == NULL);
    CHECK(!strcmp(all[0]->name, "none") && !strcmp(all[n - 1]->name, "fallback"));
    test_table_check(all);
    test_faults(all, n);
    test_ceilings(all, n);
    CHECK(!strcmp(ll_status_name(LL_OK), "sold") && !strcmp(ll_status_name(LL_TIMEOUT), "lock_timeout"));
}

/* ---------------------------------------------------------------- POST /order
 *
 * A request built as app/http.c builds it (tests/fuzz_request.c throws
 * arbitrary bytes at the same functions): method, path and query, its
 * parameters parsed and the purchase's checked; then, for POST /order, the
 * order's own. Returns the status, 0 when accepted. */
static int built_request(const char *method, const char *path, const char *query,
                         struct sale_args *a, struct order_args *o)
{
    static struct config cfg = { .lock = "none", .lock_wait_ms = 10000, .max_wait_ms = 20000 };
    struct request r;
    char buf[512], *pair, *save = NULL, *eq;

    if (request_begin(&r, method, path, NULL, NULL) != 0)
        return r.status;
    snprintf(buf, sizeof buf, "%s", query);
    for (pair = strtok_r(buf, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        eq = strchr(pair, '=');
        if (eq)
            *eq++ = '\0';
        request_param(&r, pair, strlen(pair), eq, eq ? strlen(eq) : 0);
    }
    if (request_params_done(&r) || request_sale(&r, &cfg, a) || (o && request_order(&r, o)))
        return r.status;
    return 0;
}

static int order_request(const char *query, struct sale_args *a, struct order_args *o)
{
    return built_request("POST", "/order", query, a, o);
}

/* The teaching strategies bench/lesson shows: each in the registry, with
 * its flaw, claiming no exact count and no re-entry, so that ?reentry=2 is
 * refused (400 "reentry") before a purchase waits for the lock it holds;
 * the ones whose holder may die holding it claim no auto-release. */
static int sale_request(const char *query)
{
    struct sale_args a;
    return built_request("GET", "/check/lock", query, &a, NULL);
}

static void test_lesson_strategies(void)
{
    static const char *const teaching[] = {
        "mutex-proto", "mysql-optimistic-tx", "mysql-lock-naive", "zk-herd",
    };
    const struct lock_ops *o;
    char q[96];
    size_t k;

    for (k = 0; k < sizeof teaching / sizeof teaching[0]; k++) {
        o = lock_find(teaching[k]);
        CHECK(o != NULL);
        if (o == NULL)
            continue;
        CHECK(o->flaw != NULL && o->flaw[0] != '\0');
        CHECK(!(o->props & (LOCK_EXACT | LOCK_FENCED | LOCK_REENTRANT | LOCK_FAIR)));
        snprintf(q, sizeof q, "lock=%s&reentry=2", o->name);
        CHECK(sale_request(q) == 400);
        snprintf(q, sizeof q, "lock=%s", o->name);
        CHECK(sale_request(q) == 0);
    }
    CHECK(!(lock_find("mysql-lock-naive")->props & LOCK_AUTO_RELEASE));
    CHECK(lock_find("mutex-proto")->acquire && lock_find("mysql-optimistic-tx")->sell);
}

static void test_order_request(void)
{
    struct sale_args a;
    struct order_args o;

    CHECK(order_request("order_no=A-1&lock=redis-decr", &a, &o) == 0);
    CHECK(!strcmp(o.order_no, "A-1") && o.qty == 1 && o.user == NULL && !o.one_per_user);
    CHECK(!strcmp(a.ops->name, "redis-decr") && !strcmp(a.product, "1001") && a.reentry == 1);
    CHECK(order_request("order_no=B&qty=10000&user=u_1&one_per_user=1&product=1002", &a, &o) == 0);
    CHECK(o.qty == 10000 && !strcmp(o.user, "u_1") && o.one_per_user == 1);
    CHECK(order_request("lock=none", &a, &o) == 400);                  /* no order_no */
    CHECK(order_request("order_no=a%20b", &a, &o) == 400);
    CHECK(order_request("order_no=x&qty=0", &a, &o) == 400);
    CHECK(order_request("order_no=x&qty=10001", &a, &o) == 400);
    CHECK(order_request("order_no=x&one_per_user=1", &a, &o) == 400);  /* whose? */
    CHECK(order_request("order_no=x&user=", &a, &o) == 400);
    CHECK(order_request("order_no=x&reentry=2", &a, &o) == 400);       /* not an order's */
    CHECK(order_request("order_no=x&consumer_crash=1", &a, &o) == 400);/* no --allow-faults */
    CHECK(order_request("order_no=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        &a, &o) == 400);                                /* 65 characters */
    CHECK(order_name_valid("0123456789012345678901234567890123456789012345678901234567890123"));
    CHECK(!order_name_valid("") && !order_name_valid("a.b") && !order_name_valid("é"));
}

/* ---------------------------------------------------------------- lock_poll.c
 *
 * --retry-ms 10000: a poller's own timer fires after 5 s at the soonest,
 * so within these waits (1 s and less) a poller returns only because a
 * release woke it. Nothing here depends on how fast threads run: each
 * release waits until the waiters are in the room (a release with nobody
 * there wakes nobody), and one that comes before the poller sleeps is
 * kept for it. */

struct poller {
    struct lock_ctx ctx;
    int             rounds;     /* lock_poll() calls before leaving   */
    atomic_int      returned;   /* how many returned LL_OK            */
    atomic_int      last_rc;
};

static const char poll_key[] = "lock:poll-test";

static void *poller_main(void *arg)
{
    struct poller *p = arg;
    int i, rc;

    for (i = 0; i < p->rounds; i++) {
        rc = lock_poll(&p->ctx, poll_key);
        atomic_store(&p->last_rc, rc);
        if (rc != LL_OK)
            break;
        atomic_fetch_add(&p->returned, 1);
    }
    lock_poll_done(&p->ctx);
    return NULL;
}

static int returned(struct poller *p, int n)
{
    int i, sum = 0;

    for (i = 0; i < n; i++)
        sum += atomic_load(&p[i].returned);
    return sum;
}

/* Wait up to 5 s until n requests are in the test's room. */
static int await_room(int n)
{
    int64_t until = now_ms() + 5000;

    while (lock_poll_waiting(lock_find("redis-lua"), poll_key) < n && now_ms() < until)
        sleep_us(1000);
    return lock_poll_waiting(lock_find("redis-lua"), poll_key) == n;
}

/* Wait up to ms for `want` returns in all; the count seen. */
static int await_returns(struct poller *p, int n, int want, int ms)
{
    int64_t until = now_ms() + ms;

    while (returned(p, n) < want && now_ms() < until)
        sleep_us(1000);
    return returned(p, n);
}

/* A request's first try (lock_poll_first) and its answer. */
static void *newcomer_main(void *arg)
{
    struct poller *p = arg;
    int rc = lock_poll_first(&p->ctx, poll_key);

    atomic_store(&p->last_rc, rc);
    if (rc == LL_OK)
        atomic_fetch_add(&p->returned, 1);
    lock_poll_done(&p->ctx);
    return NULL;
}

/* A release here, once somebody waits in the room. */
static void *release_when_waiting(void *arg)
{
    struct poller *p = arg;

    if (await_room(1))
        lock_poll_released(&p->ctx, poll_key);
    return NULL;
}

static void poller_init(struct poller *p, const struct config *cfg, int rounds, int wait_ms)
{
    memset(p, 0, sizeof *p);
    p->ctx.cfg = cfg;
    p->ctx.ops = lock_find("redis-lua");
    p->ctx.wait_ms = wait_ms;
    p->ctx.deadline_ms = now_ms() + wait_ms;
    p->rounds = rounds;
    atomic_init(&p->returned, 0);
    atomic_init(&p->last_rc, -1);
}

static void test_lock_poll(void)
{
    struct config cfg;
    struct lock_ctx other = { 0 };
    struct poller w[3], one;
    pthread_t tid[3];
    char err[256];
    char *argv[] = { "locklab", "--retry-ms", "10000" };
    int i;

    CHECK(parse(&cfg, err, 3, argv) == 0);

    /* Three waiters, one round each: a release wakes exactly one of
     * them, and the one it woke hands the room to the next. */
    for (i = 0; i < 3; i++) {
        poller_init(&w[i], &cfg, 1, 30000);
        pthread_create(&tid[i], NULL, poller_main, &w[i]);
    }
    CHECK(await_room(3));
    CHECK(returned(w, 3) == 0);                     /* nobody polls on their own */
    lock_poll_released(&w[0].ctx, poll_key);
    CHECK(await_returns(w, 3, 1, 5000) == 1);
    sleep_us(300000);
    CHECK(returned(w, 3) == 1);                     /* one release, one try */
    other.ops = lock_find("redis-reentrant");       /* another strategy's room */
    lock_poll_released(&other, poll_key);
    sleep_us(300000);
    CHECK(returned(w, 3) == 1);
    lock_poll_released(&w[0].ctx, poll_key);
    CHECK(await_returns(w, 3, 2, 5000) == 2);
    lock_poll_released(&w[0].ctx, poll_key);
    CHECK(await_returns(w, 3, 3, 5000) == 3);
    for (i = 0; i < 3; i++)
        pthread_join(tid[i], NULL);
    CHECK(lock_poll_waiting(lock_find("redis-lua"), poll_key) == 0);

    /* One poller trying again and again: after LOCK_POLL_STREAK wake-ups
     * in a row, one release is left to the timers, then they resume. */
    poller_init(&one, &cfg, LOCK_POLL_STREAK + 1, 30000);
    pthread_create(&tid[0], NULL, poller_main, &one);
    CHECK(await_room(1));
    for (i = 1; i <= LOCK_POLL_STREAK; i++) {
        lock_poll_released(&one.ctx, poll_key);
        CHECK(await_returns(&one, 1, i, 5000) == i);
    }
    lock_poll_released(&one.ctx, poll_key);
    sleep_us(300000);
    CHECK(returned(&one, 1) == LOCK_POLL_STREAK);
    lock_poll_released(&one.ctx, poll_key);
    CHECK(await_returns(&one, 1, LOCK_POLL_STREAK + 1, 5000) == LOCK_POLL_STREAK + 1);
    pthread_join(tid[0], NULL);

    /* The deadline ends the wait of the poller and of the queued. */
    for (i = 0; i < 2; i++) {
        poller_init(&w[i], &cfg, 1, 200);
        pthread_create(&tid[i], NULL, poller_main, &w[i]);
    }
    for (i = 0; i < 2; i++) {
        pthread_join(tid[i], NULL);
        CHECK(atomic_load(&w[i].last_rc) == LL_TIMEOUT && w[i].ctx.err == LL_TIMEOUT);
        CHECK(w[i].ctx.room == NULL);
    }

    /* A newcomer tries at once while the room's poller waits for its
     * timer: the lock is held elsewhere, or free since a release there. */
    poller_init(&w[0], &cfg, 1, 30000);
    pthread_create(&tid[0], NULL, poller_main, &w[0]);
    CHECK(await_room(1));
    poller_init(&one, &cfg, 0, 30000);
    CHECK(lock_poll_first(&one.ctx, poll_key) == LL_OK && one.ctx.room == NULL);
    lock_poll_released(&one.ctx, poll_key);
    CHECK(await_returns(&w[0], 1, 1, 5000) == 1);
    pthread_join(tid[0], NULL);

    /* Once a release here has woken the poller (this thread), a newcomer
     * queues until the poller's try is over, then polls as the others:
     * the try the release was announced for goes first. */
    poller_init(&one, &cfg, 0, 30000);
    poller_init(&w[1], &cfg, 0, 30000);
    pthread_create(&tid[0], NULL, release_when_waiting, &one);
    CHECK(lock_poll(&one.ctx, poll_key) == LL_OK);
    pthread_join(tid[0], NULL);
    pthread_create(&tid[1], NULL, newcomer_main, &w[1]);
    CHECK(await_room(2));
    sleep_us(300000);
    CHECK(atomic_load(&w[1].returned) == 0);
    lock_poll_done(&one.ctx);                   /* the try won */
    lock_poll_released(&one.ctx, poll_key);
    CHECK(await_returns(&w[1], 1, 1, 5000) == 1);
    pthread_join(tid[1], NULL);
    CHECK(w[1].ctx.retries == 0 && w[1].ctx.room == NULL);
    CHECK(lock_poll_waiting(lock_find("redis-lua"), poll_key) == 0);
}

/* The calls keep the waiting room: lock_acquire() leaves it, got or not,
 * and the release that ends a request's last hold of a key wakes the
 * poller of its instance, a re-entered hold's inner release not. A test
 * strategy whose acquire waits its turn in the room (lock_poll) once, to
 * its deadline, and then answers as told. */
static int fake_answer;

static int fake_acquire(struct lock_ctx *ctx, const char *key)
{
    if (ctx->wait_ms > 0 && lock_poll(ctx, key) != LL_OK)
        return LL_TIMEOUT;
    return fake_answer;
}

static int fake_release(struct lock_ctx *ctx, const char *key)
{
    (void)ctx;
    (void)key;
    return LL_OK;
}

static const struct lock_ops fake_lock = {
    .name = "poll-fake", .family = "local", .acquire = fake_acquire, .release = fake_release,
};

static void test_lock_calls(void)
{
    struct config cfg;
    struct poller w;
    struct lock_ctx one = { 0 };
    pthread_t tid;
    char err[256];
    char *argv[] = { "locklab", "--retry-ms", "10000" };
    int64_t until;

    CHECK(parse(&cfg, err, 3, argv) == 0);

    /* An acquire that waited in the room and timed out leaves it. */
    one.cfg = &cfg;
    one.ops = &fake_lock;
    one.wait_ms = 100;
    one.deadline_ms = now_ms() + 100;
    fake_answer = LL_OK;
    CHECK(lock_acquire(&one, poll_key) == LL_TIMEOUT);
    CHECK(one.room == NULL && lock_poll_waiting(&fake_lock, poll_key) == 0);
    CHECK(one.holds == 0);

    /* A poller waits for its next try; this request holds the key twice
     * (re-entry): the inner release wakes nobody, the outer one does. */
    poller_init(&w, &cfg, 1, 30000);
    w.ctx.ops = &fake_lock;
    pthread_create(&tid, NULL, poller_main, &w);
    until = now_ms() + 5000;
    while (lock_poll_waiting(&fake_lock, poll_key) < 1 && now_ms() < until)
        sleep_us(1000);
    CHECK(lock_poll_waiting(&fake_lock, poll_key) == 1);
    one.wait_ms = 0;                    /* no wait: the lock is free */
    one.deadline_ms = now_ms() + 30000;
    CHECK(lock_acquire(&one, poll_key) == LL_OK && lock_acquire(&one, poll_key) == LL_OK);
    CHECK(one.holds == 2);
    CHECK(lock_release(&one, poll_key) == LL_OK && one.holds == 1);
    sleep_us(300000);
    CHECK(atomic_load(&w.returned) == 0);           /* still held: nobody woken */
    CHECK(lock_release(&one, poll_key) == LL_OK && one.holds == 0);
    CHECK(await_returns(&w, 1, 1, 5000) == 1);      /* the last release woke it */
    pthread_join(tid, NULL);
    CHECK(lock_poll_waiting(&fake_lock, poll_key) == 0);
}

/* ll-limits sends each strategy's own statements and scripts: every text
 * of bench/limits/limits_protocol.c is, byte for byte, one that its
 * strategy's table lists as what it sends, and that strategy is measured
 * against a ceiling (the text's is a ceiling ll-limits measures). */
static void test_limits_protocol(void)
{
    int i, k, found;

    for (i = 0; i < LIMITS_NTEXTS; i++) {
        const struct limits_text_def *t = &limits_texts[i];
        const struct lock_ops *ops = t->strategy ? lock_find(t->strategy) : NULL;

        found = 0;
        for (k = 0; ops && ops->protocol && ops->protocol[k]; k++)
            found |= t->text && strcmp(t->text, ops->protocol[k]) == 0;
        if (!found)
            fprintf(stderr, "limits_texts[%d] (%s, %s) is not among %s's protocol: \"%s\"\n",
                    i, t->ceiling ? t->ceiling : "?", t->strategy ? t->strategy : "?",
                    t->strategy ? t->strategy : "?", t->text ? t->text : "(none)");
        CHECK(found);
        CHECK(t->ceiling && strcmp(lock_ceiling_method(t->ceiling), "") != 0);
    }
}

/* The ceilings whose commands are the product's own calls: every run of
 * limits_protocol.c names a registered strategy that has what the run
 * calls (acquire and release; a sell hook; the Redis stock's steps, which
 * a strategy of the Redis stock sells with) and is measured against the
 * run's ceiling: ll-limits then sends what that strategy sends. */
static int run_calls(const struct limits_run_def *run, const struct lock_ops *ops)
{
    switch (run->call) {
    case LIMITS_CALL_LOCK:
        return ops->acquire && ops->release && !ops->sell;
    case LIMITS_CALL_SELL:
        return ops->sell != NULL;
    case LIMITS_CALL_STEPS:
        return ops->sell && ops->stock && strcmp(ops->stock, "redis") == 0;
    }
    return 0;
}

static void test_limits_runs(void)
{
    int i, ok;

    for (i = 0; i < LIMITS_NRUNS; i++) {
        const struct limits_run_def *run = &limits_runs[i];
        const struct lock_ops *ops = run->strategy ? lock_find(run->strategy) : NULL;

        ok = ops && run_calls(run, ops) && run->ceiling && ops->ceiling &&
             strcmp(run->ceiling, ops->ceiling) == 0;
        if (!ok)
            fprintf(stderr, "limits_runs[%d] (%s) runs %s, which %s\n", i,
                    run->ceiling ? run->ceiling : "?", run->strategy ? run->strategy : "?",
                    !ops ? "is not registered" : !run_calls(run, ops) ?
                    "has not what the run calls" : "is measured against another ceiling");
        CHECK(ok);
    }
}

/* ---------------------------------------------------------------- keeper.c
 *
 * The lease keeper on a thread of its own (no loop here), renewing through
 * a hook that answers as told: confirmed (the lease's end: sent + 1 s +
 * the entry's value, so that a test can tell whose), gone, or no answer.
 * Every wait is for a thing to happen, up to 5 s. */
static atomic_int renewals;
static atomic_int renew_answer;

static enum keep_answer test_renew(const void *what, int64_t sent_us, int64_t *until_us,
                                   int *retry_ms)
{
    int v;

    memcpy(&v, what, sizeof v);
    atomic_fetch_add(&renewals, 1);
    *until_us = sent_us + 1000000 + v;
    *retry_ms = 20;
    return (enum keep_answer)atomic_load(&renew_answer);
}

static struct keeper test_keeper = KEEPER_INIT("test-keeper", sizeof(int), test_renew, NULL);

/* Wait up to 5 s until slot's state is `want`; its until into *until. */
static int await_state(int slot, enum keep_state want, int64_t *until)
{
    int64_t end = now_ms() + 5000;

    while (keeper_state(&test_keeper, slot, until) != want && now_ms() < end)
        sleep_us(1000);
    return keeper_state(&test_keeper, slot, until) == want;
}

static int await_renewals(int n)
{
    int64_t end = now_ms() + 5000;

    while (atomic_load(&renewals) < n && now_ms() < end)
        sleep_us(1000);
    return atomic_load(&renewals) >= n;
}

static void test_lease_keeper(void)
{
    struct config cfg;
    struct keeper *k = &test_keeper;
    char err[256];
    char *argv[] = { "locklab", "--threads", "4" };
    int64_t until, t0;
    int seven = 7, eight = 8, n;

    CHECK(parse(&cfg, err, 3, argv) == 0);
    atomic_init(&renewals, 0);
    atomic_init(&renew_answer, KEEP_CONFIRMED);
    keeper_init(k, &cfg);
    keeper_init(k, &cfg);                           /* once is enough */
    CHECK(keeper_state(k, 0, &until) == KEEP_NONE);

    /* Held: its end is the hold's until the keeper confirms a later one. */
    t0 = now_us();
    keeper_hold(k, 0, &seven, 123, 20);
    CHECK(keeper_state(k, 0, &until) == KEEP_HELD && until == 123);
    CHECK(await_renewals(2));
    CHECK(keeper_state(k, 0, &until) == KEEP_HELD && until > t0);

    /* No answer: tried again, the last confirmed end kept. */
    atomic_store(&renew_answer, KEEP_RETRY);
    n = atomic_load(&renewals);
    CHECK(await_renewals(n + 2));
    CHECK(keeper_state(k, 0, &until) == KEEP_HELD);

    /* Gone: lost, never renewed again. */
    atomic_store(&renew_answer, KEEP_GONE);
    CHECK(await_state(0, KEEP_LOST, &until));
    n = atomic_load(&renewals);
    sleep_us(200000);
    CHECK(atomic_load(&renewals) == n);
    CHECK(keeper_resume(k, 0, 0) == 0);             /* a lost lease is not resumed */

    /* Held anew: resumed while confirmed for long enough, lingering then
     * lapsing, and not resumed once lapsed. */
    atomic_store(&renew_answer, KEEP_CONFIRMED);
    keeper_hold(k, 0, &eight, now_us() + 10000000, 20);
    CHECK(keeper_state(k, 0, &until) == KEEP_HELD);
    CHECK(keeper_resume(k, 0, 20000000) == 0 && keeper_resume(k, 0, 100000) == 1);
    keeper_linger(k, 0, 50);
    CHECK(await_state(0, KEEP_NONE, &until));
    CHECK(keeper_resume(k, 0, 0) == 0);

    /* Released: no renewal but one already in flight. */
    keeper_hold(k, 1, &seven, 0, 20);
    n = atomic_load(&renewals);
    CHECK(await_renewals(n + 1));
    keeper_release(k, 1);
    CHECK(keeper_state(k, 1, &until) == KEEP_NONE);
    n = atomic_load(&renewals);
    sleep_us(200000);
    CHECK(atomic_load(&renewals) <= n + 1);
}

/* The synchronizers' registry: valid as built, refusing a (primitive,
 * backend) twice and an operation twice; Redisson's first when no backend
 * is named; names fit for both Redis keys and ZooKeeper path components. */
static void test_sync_registry(void)
{
    const struct sync_ops *const *all;
    struct sync_ops twin, odd;
    struct sync_op twice[3];
    const struct sync_ops *dup[2], *bad[1];
    char err[200];
    int n, i;

    all = sync_all(&n);
    CHECK(n >= 13);
    CHECK(sync_table_check(all, n, err, sizeof err) == 0);
    CHECK(sync_check_registry(err, sizeof err) == 0);
    for (i = 0; i < n; i++) {
        CHECK(!strcmp(all[i]->backend, "redisson") || !strcmp(all[i]->backend, "curator"));
        CHECK(strncmp(all[i]->ceiling, "sync_", 5) == 0);
        CHECK(all[i]->bench == NULL || sync_bench_op(all[i]) != NULL);
        CHECK(all[i]->reset != NULL);
    }
    twin = *all[0];
    dup[0] = all[0];
    dup[1] = &twin;
    CHECK(sync_table_check(dup, 2, err, sizeof err) == -1 && strstr(err, "entries 0 and 1"));
    odd = *all[0];
    twice[0] = all[0]->ops[0];
    twice[1] = all[0]->ops[0];
    memset(&twice[2], 0, sizeof twice[2]);
    odd.ops = twice;
    bad[0] = &odd;
    CHECK(sync_table_check(bad, 1, err, sizeof err) == -1 && strstr(err, "two operations"));
    CHECK(!strcmp(sync_find("rwlock", NULL)->backend, "redisson"));
    CHECK(!strcmp(sync_find("rwlock", "curator")->library, "Curator InterProcessReadWriteLock"));
    CHECK(sync_find("latch", "curator") == NULL && sync_find("nope", NULL) == NULL);
    CHECK(sync_op_takes(sync_op_find(sync_find("rwlock", NULL), "read"), "lease_ms"));
    CHECK(!sync_op_takes(sync_op_find(sync_find("rwlock", NULL), "read"), "lease"));
    CHECK(!sync_op_takes(sync_op_find(sync_find("latch", NULL), "count"), "count_"));
    CHECK(sync_name_valid("rwLock") && sync_name_valid("a.b:c-d_e"));
    CHECK(!sync_name_valid("") && !sync_name_valid(".") && !sync_name_valid(".."));
    CHECK(!sync_name_valid("a/b") && !sync_name_valid("{x}") && !sync_name_valid("a b"));
}

/* The slots CLUSTER KEYSLOT of Redis 7.0 gives for these keys, and the
 * slot of a command as the client routes it. */
static void test_cluster_slots(void)
{
    static const struct { const char *key; int slot; } v[] = {
        { "123456789", 12739 },         /* the Redis Cluster specification's */
        { "foo", 12182 }, { "bar", 5061 }, { "", 0 },
        { "{user1000}.following", 3443 },
        { "foo{}{bar}", 8363 },         /* an empty tag: the whole key       */
        { "foo{{bar}}zap", 4015 },      /* the tag is "{bar"                  */
        { "foo{bar}{zap}", 5061 },      /* the first tag: "bar"               */
        { "lock:1001", 6194 },
        { "redisson_lock__channel:{lock:1001}", 6194 },
    };
    char *cmd = NULL;
    size_t i;
    int len;

    for (i = 0; i < sizeof v / sizeof v[0]; i++)
        CHECK(redis_key_slot(v[i].key, strlen(v[i].key)) == v[i].slot);
    len = redisFormatCommand(&cmd, "SET %s %s", "foo", "x");
    CHECK(redis_cmd_slot(cmd, (size_t)len) == 12182);
    redisFreeCommand(cmd);
    len = redisFormatCommand(&cmd, "EVALSHA %s %d %s %s", "abc", 1, "{lock:1001}:fence", "x");
    CHECK(redis_cmd_slot(cmd, (size_t)len) == 6194);
    redisFreeCommand(cmd);
    len = redisFormatCommand(&cmd, "EVALSHA %s %d", "abc", 0);
    CHECK(redis_cmd_slot(cmd, (size_t)len) == -1);
    redisFreeCommand(cmd);
    len = redisFormatCommand(&cmd, "MULTI");
    CHECK(redis_cmd_slot(cmd, (size_t)len) == -1);
    redisFreeCommand(cmd);
    len = redisFormatCommand(&cmd, "XREADGROUP GROUP g c COUNT 10 STREAMS %s >", "bar");
    CHECK(redis_cmd_slot(cmd, (size_t)len) == 5061);
    redisFreeCommand(cmd);
}

/* GET /stock's judgement of a product's two stores (store/redis_stock.c),
 * on states a live stack makes, each loaded with 10 units in epoch 1. */
static void test_redis_stock_tally(void)
{
    /* loaded, Redis count sold epoch, MariaDB count applied epoch,
     * undelivered units, pending units */
    const struct rs_tally drained = { 1, 4, 6, 1, 4, 6, 1, 0, 0 };
    const struct rs_tally acked_late = { 1, 4, 6, 1, 4, 6, 1, 0, 2 };   /* applied, no XACK yet */
    const struct rs_tally on_its_way = { 1, 4, 6, 1, 7, 3, 1, 2, 1 };   /* 3 in flight */
    /* The issue's: sold in Redis, never read by a consumer (no cap on the
     * streams read any more, but a stream nobody reads looks like this). */
    const struct rs_tally unread = { 1, 0, 10, 1, 10, 0, 1, 10, 0 };
    /* Redis restarted from its append-only file without the last 2 sales
     * MariaDB had applied (3 sold, 3 applied; Redis back to 1 sold), then
     * sold 2 more, not yet read: the counts add up (7 and 7, 3 sold and 3
     * applied), but 2 units of the stream are in flight while nothing is. */
    const struct rs_tally lost_then_sold = { 1, 7, 3, 1, 7, 3, 1, 2, 0 };
    const struct rs_tally two_epochs = { 1, 10, 0, 2, 10, 0, 1, 0, 0 };
    const struct rs_tally applied_twice = { 1, 4, 6, 1, 3, 7, 1, 0, 0 };
    struct rs_tally too_many = unread;

    CHECK(rs_adds_up(&drained) && rs_reconciled(&drained));
    CHECK(rs_adds_up(&acked_late) && rs_reconciled(&acked_late));
    CHECK(rs_adds_up(&on_its_way) && !rs_reconciled(&on_its_way));
    CHECK(rs_adds_up(&unread) && !rs_reconciled(&unread));
    CHECK(!rs_adds_up(&lost_then_sold) && !rs_reconciled(&lost_then_sold));
    CHECK(!rs_adds_up(&two_epochs) && !rs_adds_up(&applied_twice));
    too_many.undelivered_units = -1;    /* more entries than the reading counts */
    CHECK(rs_adds_up(&too_many) && !rs_reconciled(&too_many));
}

int main(void)
{
    test_redis_stock_tally();
    test_cluster_slots();
    test_config();
    test_parse_int();
    test_hist();
    test_metrics();
    test_codes_and_registry();
    test_order_request();
    test_lesson_strategies();
    test_lock_poll();
    test_lock_calls();
    test_lease_keeper();
    test_limits_protocol();
    test_limits_runs();
    test_sync_registry();
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
