/* test_ledger.c — ledger_check() (bench/ledger/ledger.c) on ledgers written here:
 * a clean one finds nothing; each planted anomaly — a lost update, an
 * overlap of two critical sections, a stale token, a sale from nothing, a
 * unit gone without a sale — is found, alone, and its sentence names both
 * sales.
 */
#define _POSIX_C_SOURCE 200809L    /* fmemopen */
#include "check.h"
#include "../bench/ledger/ledger.h"

#include <stdlib.h>
#include <string.h>

#define MAXROWS 16

static struct ledger_row rows[MAXROWS];
static size_t nrows;
static char said[4096];

static void reset(long long stock)
{
    memset(rows, 0, sizeof rows);
    nrows = 0;
    rows[nrows].id = 1;
    strcpy(rows[nrows].strategy, "reset");
    rows[nrows].count_written = stock;
    nrows++;
}

/* A sale read→wrote, inside [start, end] (0, 0: none), token (src "" none). */
static struct ledger_row *sale(const char *inst, int slot, const char *strategy,
                               long long read, long long wrote, long long start, long long end,
                               const char *src, long long token)
{
    struct ledger_row *r = &rows[nrows];
    r->id = (long long)nrows + 1;
    snprintf(r->instance, sizeof r->instance, "%s", inst);
    r->slot = slot;
    snprintf(r->strategy, sizeof r->strategy, "%s", strategy);
    snprintf(r->token_src, sizeof r->token_src, "%s", src);
    r->token = token;
    r->count_read = read;
    r->count_written = wrote;
    r->cs_start_us = start;
    r->cs_end_us = end;
    nrows++;
    return r;
}

/* ledger_check over rows with the final stock; the sentences in said. */
static int run(long long final, struct ledger_report *rep)
{
    FILE *f = fmemopen(said, sizeof said, "w");
    int n;

    memset(said, 0, sizeof said);
    n = ledger_check(rows, nrows, -1, final, f, rep);
    fclose(f);
    return n;
}

static int clean_run(void)
{
    reset(3);
    sale("app-8000", 1, "redis-lua", 3, 2, 100, 200, "redis", 7);
    sale("app-8100", 2, "redis-lua", 2, 1, 210, 300, "redis", 8);
    sale("app-8200", 0, "redis-lua", 1, 0, 310, 400, "redis", 9);
    return 0;
}

int main(void)
{
    struct ledger_report rep;
    int n;

    /* Clean: nothing found, the counts right. */
    clean_run();
    n = run(0, &rep);
    CHECK(n == 0 && said[0] == '\0');
    CHECK(rep.sales == 3 && rep.units == 3 && rep.initial == 3 && rep.final == 0);

    /* Sales without a critical section of their own (one conditional UPDATE
     * each) never overlap, whatever their times. */
    reset(2);
    sale("app-8000", 1, "mysql-update", 2, 1, 0, 0, "", 0);
    sale("app-8100", 1, "mysql-update", 1, 0, 0, 0, "", 0);
    CHECK(run(0, &rep) == 0);

    /* A lost update: the second sale read what the first had read. */
    reset(10);
    sale("app-8000", 1, "none", 10, 9, 100, 200, "", 0);
    sale("app-8100", 4, "none", 10, 9, 300, 400, "", 0);
    n = run(9, &rep);
    CHECK(n == 2 && rep.lost == 1 && rep.overlap == 0 && rep.final_bad == 1);
    CHECK(strstr(said, "took 1 unit(s) more than the stock lost"));
    CHECK(strstr(said, "lost update") && strstr(said, "#3 (app-8100 slot 4, none)") &&
          strstr(said, "#2 (app-8000 slot 1, none)"));

    /* An overlap: a paused holder's section runs on past the next holder's
     * start; counts stay right (the second read the first's write). */
    reset(10);
    sale("app-8000", 1, "redis-lua", 10, 9, 100, 5000, "", 0);
    sale("app-8100", 2, "redis-lua", 9, 8, 3000, 3100, "", 0);
    n = run(8, &rep);
    CHECK(n == 1 && rep.overlap == 1 && rep.lost == 0);
    CHECK(strstr(said, "overlap") && strstr(said, "#2 (app-8000") && strstr(said, "#3 (app-8100") &&
          strstr(said, "for 100 us"));
    /* Touching sections (one ends as the next starts) do not overlap. */
    reset(10);
    sale("app-8000", 1, "redis-lua", 10, 9, 100, 200, "", 0);
    sale("app-8100", 2, "redis-lua", 9, 8, 200, 300, "", 0);
    CHECK(run(8, &rep) == 0);

    /* A stale token got through; tokens of another service do not count. */
    clean_run();
    rows[2].token = 6;
    sale("app-8000", 3, "curator", 0, -1, 500, 600, "zk", 1);    /* oversold too */
    n = run(-1, &rep);
    CHECK(rep.token == 1 && rep.empty == 1 && rep.lost == 0 && n == 2);
    CHECK(strstr(said, "token 6 after #2") && strstr(said, "nothing left"));

    /* A unit gone without a sale in the ledger. */
    clean_run();
    n = run(-1, &rep);
    CHECK(n == 1 && rep.final_bad == 1 && strstr(said, "1 unit(s) went without a sale"));

    /* Only the last reset counts; rows may come in any order. */
    clean_run();
    sale("x", 0, "reset", 0, 5, 0, 0, "", 0);
    sale("app-8000", 1, "redis-lua", 5, 4, 900, 950, "redis", 1);
    {
        struct ledger_row t = rows[0];
        rows[0] = rows[5];
        rows[5] = t;
    }
    CHECK(run(4, &rep) == 0 && rep.initial == 5 && rep.sales == 1);

    /* Parsing a ledger file's line. */
    {
        struct ledger_row r;
        CHECK(ledger_parse("7\tapp-8000\t3\tredisson\tredis\t42\t10\t9\t100\t250", &r) == 0);
        CHECK(r.id == 7 && r.slot == 3 && !strcmp(r.token_src, "redis") && r.token == 42 &&
              r.count_read == 10 && r.cs_end_us == 250);
        CHECK(ledger_parse("8\tapp-8000\t3\tnone\t-\t0\t10\t9\t0\t0", &r) == 0 &&
              r.token_src[0] == '\0');
        CHECK(ledger_parse("8\tapp-8000\tthree", &r) == -1);
    }

    printf("test_ledger: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
