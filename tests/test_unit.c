/* test_unit.c — the pieces that need no server: flag parsing, integer
 * parsing, the latency histogram, product codes and the registry. */
#include "../app/config.h"
#include "../app/stats.h"
#include "../app/stock.h"
#include "../app/util.h"
#include "../locks/lock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond) do {                                              \
        if (cond) passed++;                                           \
        else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)

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

    unsetenv("LOCKLAB_PORT");
    CHECK(parse(&cfg, err, 9, ok) == 0);
    CHECK(cfg.port == 8100 && cfg.threads == 4 && cfg.allow_faults == 1);
    CHECK(strcmp(cfg.lock, "mysql-update") == 0);
    CHECK(cfg.nredis == 2 && cfg.redis[1].port == 2 && !strcmp(cfg.redis[1].host, "localhost"));
    CHECK(strcmp(cfg.name, "app-8100") == 0);
    CHECK(strlen(cfg.instance_id) == 36);
    CHECK(parse(&cfg, err, 3, badport) == -1 && strstr(err, "--port"));
    CHECK(parse(&cfg, err, 3, badlock) == -1 && strstr(err, "nope"));
    CHECK(parse(&cfg, err, 3, badredis) == -1 && strstr(err, "--redis"));
    CHECK(parse(&cfg, err, 2, unknown) == -1 && strstr(err, "frobnicate"));
    CHECK(parse(&cfg, err, 2, novalue) == -1 && strstr(err, "needs a value"));
    CHECK(parse(&cfg, err, 2, help) == 1);

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

static void test_codes_and_registry(void)
{
    const struct lock_ops *const *all;
    int i, k, n;

    CHECK(stock_code_valid("1001"));
    CHECK(stock_code_valid("A-b_9"));
    CHECK(!stock_code_valid(""));
    CHECK(!stock_code_valid("1001'"));
    CHECK(!stock_code_valid("1 0"));
    CHECK(!stock_code_valid("123456789012345678901234567890123"));

    all = lock_all(&n);
    CHECK(n >= 6);
    for (i = 0; i < n; i++) {
        CHECK(all[i]->name && all[i]->family && all[i]->summary);
        CHECK(all[i]->sell || (all[i]->acquire && all[i]->release));
        CHECK(lock_find(all[i]->name) == all[i] && lock_index(all[i]) == i);
        for (k = 0; k < i; k++)
            CHECK(strcmp(all[i]->name, all[k]->name) != 0);
    }
    CHECK(lock_find("nope") == NULL);
    CHECK(!strcmp(ll_status_name(LL_OK), "sold") && !strcmp(ll_status_name(LL_TIMEOUT), "lock_timeout"));
}

int main(void)
{
    test_config();
    test_parse_int();
    test_hist();
    test_codes_and_registry();
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
