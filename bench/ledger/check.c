/* check.c — ll-check, the checker that trusts nobody (bench/ledger/ledger.h).
 *
 *     ll-check [--product CODE] [--json]            the stack's MariaDB
 *     ll-check --file LEDGER.tsv --final N [--json] a ledger written down
 *
 * It reads a product's sales ledger (db_ledger, written by instances run
 * with --ledger) and its final stock, and nothing else: not the instances'
 * counters, not what the load tool saw, not what a strategy claims. Each
 * anomaly is printed as a sentence naming the two sales involved, then one
 * summary line; --json prints one object instead, the sentences in
 * "anomalies". Exit status: 0 clean, 1 anomalies found, 2 it could not
 * read what it needs.
 *
 * MariaDB is reached as every bench tool reaches it: LOCKLAB_MYSQL_HOST,
 * _PORT, _USER, _PASSWORD, _DB and _SOCKET from the environment (bench/
 * stack's .run/stack.env), the password never on a command line. Both
 * queries are prepared statements.
 */
#define _POSIX_C_SOURCE 200809L    /* open_memstream */
#include "ledger.h"
#include "../common/cli.h"

#include <errno.h>
#include <jansson.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS_START 1024

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

struct rows {
    struct ledger_row *v;
    size_t n, cap;
};

static struct ledger_row *rows_add(struct rows *r)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : MAX_ROWS_START;
        r->v = realloc(r->v, r->cap * sizeof *r->v);
        if (r->v == NULL)
            die("out of memory");
    }
    memset(&r->v[r->n], 0, sizeof r->v[0]);
    return &r->v[r->n++];
}

/* ---------------------------------------------------------------- a file */

static void read_file(const char *path, struct rows *r)
{
    char line[1024];
    FILE *f = fopen(path, "r");
    int lineno = 0;

    if (f == NULL)
        die("%s: %s", path, strerror(errno));
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (ledger_parse(line, rows_add(r)) != 0)
            die("%s:%d: not a ledger row (10 tab-separated columns)", path, lineno);
    }
    fclose(f);
}

/* ---------------------------------------------------------------- MariaDB */

static MYSQL_STMT *prepare(MYSQL *db, const char *sql)
{
    MYSQL_STMT *st = mysql_stmt_init(db);

    if (st == NULL || mysql_stmt_prepare(st, sql, strlen(sql)) != 0)
        die("prepare: %s", st ? mysql_stmt_error(st) : mysql_error(db));
    return st;
}

/* The product's row id and its count now. */
static void read_stock(MYSQL *db, const char *code, long long *id, long long *count)
{
    static const char sql[] =
        "SELECT id, count FROM db_stock WHERE product_code = ? AND stock_code = '001'";
    MYSQL_STMT *st = prepare(db, sql);
    unsigned long len = strlen(code);
    MYSQL_BIND in[1], out[2];

    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    in[0].buffer_type = MYSQL_TYPE_STRING;
    in[0].buffer = (char *)code;
    in[0].buffer_length = len;
    in[0].length = &len;
    out[0].buffer_type = out[1].buffer_type = MYSQL_TYPE_LONGLONG;
    out[0].buffer = id;
    out[1].buffer = count;
    if (mysql_stmt_bind_param(st, in) || mysql_stmt_execute(st) ||
        mysql_stmt_bind_result(st, out))
        die("db_stock: %s", mysql_stmt_error(st));
    if (mysql_stmt_fetch(st) != 0)
        die("no product '%s' in warehouse 001", code);
    mysql_stmt_close(st);
}

static void read_ledger(MYSQL *db, long long stock_id, struct rows *r)
{
    static const char sql[] =
        "SELECT id, instance, slot, strategy, token_src, token, count_read, count_written, "
        "cs_start_us, cs_end_us FROM db_ledger WHERE stock_id = ? ORDER BY id";
    MYSQL_STMT *st = prepare(db, sql);
    struct ledger_row row;
    unsigned long len[10];
    MYSQL_BIND in[1], out[10];
    int i, rc;

    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    in[0].buffer_type = MYSQL_TYPE_LONGLONG;
    in[0].buffer = &stock_id;
    {
        void *where[10] = { &row.id, row.instance, &row.slot, row.strategy, row.token_src,
                            &row.token, &row.count_read, &row.count_written,
                            &row.cs_start_us, &row.cs_end_us };
        size_t size[10] = { 0, sizeof row.instance, 0, sizeof row.strategy,
                            sizeof row.token_src, 0, 0, 0, 0, 0 };
        for (i = 0; i < 10; i++) {
            out[i].buffer = where[i];
            out[i].length = &len[i];
            if (size[i]) {
                out[i].buffer_type = MYSQL_TYPE_STRING;
                out[i].buffer_length = size[i];
            } else {
                out[i].buffer_type = i == 2 ? MYSQL_TYPE_LONG : MYSQL_TYPE_LONGLONG;
            }
        }
    }
    if (mysql_stmt_bind_param(st, in) || mysql_stmt_execute(st) ||
        mysql_stmt_bind_result(st, out))
        die("db_ledger: %s (were the instances started with --ledger?)", mysql_stmt_error(st));
    for (;;) {
        memset(&row, 0, sizeof row);
        rc = mysql_stmt_fetch(st);
        if (rc == MYSQL_NO_DATA)
            break;
        if (rc != 0 && rc != MYSQL_DATA_TRUNCATED)
            die("db_ledger: %s", mysql_stmt_error(st));
        *rows_add(r) = row;
    }
    mysql_stmt_close(st);
}

static void read_db(const char *code, struct rows *r, long long *final)
{
    const char *sock = env_or("LOCKLAB_MYSQL_SOCKET", "");
    MYSQL *db = mysql_init(NULL);
    long long id;

    if (db == NULL || !mysql_real_connect(db, *sock ? "localhost" : env_or("LOCKLAB_MYSQL_HOST", "127.0.0.1"),
                                          env_or("LOCKLAB_MYSQL_USER", "locklab"),
                                          getenv("LOCKLAB_MYSQL_PASSWORD"),
                                          env_or("LOCKLAB_MYSQL_DB", "locklab"),
                                          (unsigned)atoi(env_or("LOCKLAB_MYSQL_PORT", "3306")),
                                          *sock ? sock : NULL, 0))
        die("cannot reach MariaDB: %s (source .run/stack.env)", db ? mysql_error(db) : "");
    read_stock(db, code, &id, final);
    read_ledger(db, id, r);
    mysql_close(db);
}

/* ---------------------------------------------------------------- output */

int main(int argc, char **argv)
{
    const char *product = "1001", *file = NULL;
    long long final = 0;
    int json = 0, have_final = 0, i, n;
    struct ledger_report rep;
    struct rows rows = { 0 };
    char *said = NULL;
    size_t said_len = 0;
    FILE *out;

    cli_init("ll-check", 2);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--product") && i + 1 < argc)
            product = argv[++i];
        else if (!strcmp(argv[i], "--file") && i + 1 < argc)
            file = argv[++i];
        else if (!strcmp(argv[i], "--final") && i + 1 < argc)
            final = atoll(argv[++i]), have_final = 1;
        else
            die("usage: ll-check [--product CODE] [--json] | --file LEDGER.tsv --final N [--json]");
    }
    if (file) {
        if (!have_final)
            die("--file needs --final N, the stock at the end");
        read_file(file, &rows);
    } else {
        read_db(product, &rows, &final);
    }
    out = open_memstream(&said, &said_len);
    n = ledger_check(rows.v, rows.n, -1, final, out, &rep);
    fclose(out);
    if (json) {
        json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I,s:i,s:i,s:i,s:i,s:i,s:o}",
            "product", file ? file : product, "sales", (json_int_t)rep.sales,
            "units", (json_int_t)rep.units, "initial", (json_int_t)rep.initial,
            "final", (json_int_t)rep.final, "lost", rep.lost, "overlap", rep.overlap,
            "token", rep.token, "oversold", rep.empty, "final_bad", rep.final_bad,
            "anomalies", json_array());
        char *line = said, *nl;
        while (line && *line && (nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            json_array_append_new(json_object_get(o, "anomalies"), json_string(line));
            line = nl + 1;
        }
        json_dumpf(o, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(o);
    } else {
        fputs(said, stdout);
        printf("ll-check: %s: %lld -> %lld, %lld sales of %lld units: %d lost, %d overlaps, "
               "%d stale tokens, %d oversold, final %s\n", file ? file : product, rep.initial,
               rep.final, rep.sales, rep.units, rep.lost, rep.overlap, rep.token, rep.empty,
               rep.final_bad ? "WRONG" : "right");
    }
    free(said);
    free(rows.v);
    return n ? 1 : 0;
}
