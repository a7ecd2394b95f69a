/* test_db_pipe.c — clients/db_pipe.c against the stack's real MariaDB, over its
 * Unix socket and over TCP: two statements in one round trip (integer and
 * string parameters), a failing first statement, a killed connection, and
 * libmariadb still in step with the connection afterwards; a third
 * statement behind the two, a query whose answer db_pipe_row() reads: a
 * row, no row, a lock wait timeout; a statement and a query read at once
 * (db_pipe_exec_query()); one statement 64 times in one write
 * (db_pipe_repeat()); an answer that cannot be read once the statements
 * left (a result set where an OK was due, after a COMMIT's OK, or behind a
 * statement's OK), which is a lost answer, not a refusal. Works on product
 * 1002 (the one ll-limits uses) and puts its count back at the end.
 *
 * Then clients/db.c on the same server, over the socket: more distinct
 * prepared statements on one connection than its cache once held (32:
 * under -DNDEBUG the old cache wrote past its end); a sale in autocommit
 * whose pipelined query fails behind the UPDATE's OK (a server error, an
 * answer that cannot be read): the sale counts as made; and over TCP, the
 * server named by a host name (localhost), which is never looked up on the
 * loop (a resolver made slow, tests/slow_resolver.h).
 *
 *     set -a; . .run/stack.env; set +a; build/test_db_pipe
 */
#include "check.h"
#include "slow_resolver.h"
#include "../clients/db.h"
#include "../clients/db_pipe.h"
#include "../core/config.h"
#include "../core/ctx.h"
#include "../core/loop.h"
#include "../core/util.h"

#include <errmsg.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        fprintf(stderr, "test_db_pipe: %s is not set: source .run/stack.env\n", name);
        exit(2);
    }
    return v;
}

static MYSQL *connect_to(int tcp)
{
    MYSQL *m = mysql_init(NULL);
    const char *sock = tcp ? NULL : env("LOCKLAB_MYSQL_SOCKET");
    unsigned tcp_proto = MYSQL_PROTOCOL_TCP;

    if (tcp)
        mysql_options(m, MYSQL_OPT_PROTOCOL, &tcp_proto);
    if (!mysql_real_connect(m, tcp ? env("LOCKLAB_MYSQL_HOST") : "localhost",
                            env("LOCKLAB_MYSQL_USER"), env("LOCKLAB_MYSQL_PASSWORD"),
                            env("LOCKLAB_MYSQL_DB"), (unsigned)atoi(env("LOCKLAB_MYSQL_PORT")),
                            sock, 0)) {
        fprintf(stderr, "test_db_pipe: connect: %s\n", mysql_error(m));
        exit(2);
    }
    return m;
}

static MYSQL_STMT *prepare(MYSQL *m, const char *sql)
{
    MYSQL_STMT *st = mysql_stmt_init(m);
    if (st == NULL || mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) != 0) {
        fprintf(stderr, "test_db_pipe: prepare %s: %s\n", sql, mysql_error(m));
        exit(2);
    }
    return st;
}

/* Run st with long long parameters p[0..n) and return the first column of
 * its one row (or the affected rows); -1 on error, the error in *err. */
static long long run(MYSQL_STMT *st, const long long *p, int n, unsigned *err)
{
    MYSQL_BIND in[4], out;
    long long v = -1;
    int i;

    memset(in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    for (i = 0; i < n; i++) {
        in[i].buffer_type = MYSQL_TYPE_LONGLONG;
        in[i].buffer = (void *)&p[i];
    }
    *err = 0;
    if ((n && mysql_stmt_bind_param(st, in)) || mysql_stmt_execute(st)) {
        *err = mysql_stmt_errno(st);
        return -1;
    }
    if (mysql_stmt_field_count(st) == 0)
        return (long long)mysql_stmt_affected_rows(st);
    out.buffer_type = MYSQL_TYPE_LONGLONG;
    out.buffer = &v;
    if (mysql_stmt_bind_result(st, &out) || mysql_stmt_fetch(st) != 0)
        *err = mysql_stmt_errno(st) ? mysql_stmt_errno(st) : 1;
    mysql_stmt_free_result(st);
    return v;
}

static void suite(int tcp)
{
    MYSQL *m = connect_to(tcp), *other = connect_to(tcp), *victim = connect_to(tcp);
    MYSQL_STMT *find = prepare(m, "SELECT id FROM db_stock WHERE product_code = '1002' "
                                  "AND stock_code = '001'");
    MYSQL_STMT *lock = prepare(m, "SELECT count FROM db_stock WHERE id = ? FOR UPDATE");
    MYSQL_STMT *write = prepare(m, "UPDATE db_stock SET count = ? WHERE id = ?");
    MYSQL_STMT *dup = prepare(m, "INSERT INTO db_stock (product_code, stock_code, count) "
                                 "VALUES (?, '001', ?)");
    MYSQL_STMT *commit = prepare(m, "COMMIT");
    MYSQL_STMT *nowait = prepare(other, "SELECT count FROM db_stock WHERE id = ? "
                                        "FOR UPDATE NOWAIT");
    MYSQL_STMT *waitrow = prepare(other, "SELECT count FROM db_stock WHERE id = ? FOR UPDATE");
    MYSQL_STMT *kill = prepare(other, "KILL CONNECTION ?");
    struct db_pipe_answer a[2];
    long long id, was, p[2];
    unsigned err;
    int i;

    printf("-- over %s\n", tcp ? "TCP" : "the Unix socket");
    id = run(find, NULL, 0, &err);
    CHECK(err == 0 && id > 0);
    CHECK(mysql_autocommit(m, 0) == 0);

    /* The pair runs, commits and frees the row, again and again. */
    was = run(lock, &id, 1, &err);
    CHECK(err == 0 && was >= 0);
    for (i = 1; i <= 3; i++) {
        if (i > 1)
            run(lock, &id, 1, &err);
        p[0] = was - i, p[1] = id;
        CHECK(db_pipe2(m, write, p, NULL, 2, commit, 5000, a) == 0);
        CHECK(a[0].err == 0 && a[0].affected == 1 && a[1].err == 0);
        CHECK(run(nowait, &id, 1, &err) == was - i && err == 0);   /* committed, free */
    }
    /* libmariadb is still in step: the next statements through its API. */
    CHECK(run(lock, &id, 1, &err) == was - 3 && err == 0);
    p[0] = was, p[1] = id;
    CHECK(run(write, p, 2, &err) == 1 && err == 0);
    CHECK(mysql_commit(m) == 0);

    /* A failing first statement: its error, and the COMMIT still runs. */
    run(lock, &id, 1, &err);
    p[0] = 1002, p[1] = 5;
    CHECK(db_pipe2(m, dup, p, NULL, 2, commit, 5000, a) == 0);
    CHECK(a[0].err == 1062 && strstr(a[0].msg, "Duplicate") != NULL);
    CHECK(a[1].err == 0);
    CHECK(run(nowait, &id, 1, &err) == was && err == 0);
    CHECK(run(lock, &id, 1, &err) == was && err == 0);
    CHECK(mysql_commit(m) == 0);

    /* String parameters: the row named by its codes, or by one that names
     * no row. */
    {
        MYSQL_STMT *bycode = prepare(m, "UPDATE db_stock SET count = ? "
                                        "WHERE product_code = ? AND stock_code = ?");
        const char *strs[3] = { NULL, "1002", "001" };
        long long q[3] = { was - 7, 0, 0 };

        run(lock, &id, 1, &err);
        CHECK(db_pipe2(m, bycode, q, strs, 3, commit, 5000, a) == 0);
        CHECK(a[0].err == 0 && a[0].affected == 1 && a[1].err == 0);
        CHECK(run(nowait, &id, 1, &err) == was - 7 && err == 0);
        strs[1] = "1002x";
        q[0] = was;
        CHECK(db_pipe2(m, bycode, q, strs, 3, commit, 5000, a) == 0);
        CHECK(a[0].err == 0 && a[0].affected == 0 && a[1].err == 0);
        CHECK(run(nowait, &id, 1, &err) == was - 7 && err == 0);
        strs[1] = "1002";
        CHECK(db_pipe2(m, bycode, q, strs, 3, commit, 5000, a) == 0);
        CHECK(a[0].err == 0 && a[0].affected == 1 && a[1].err == 0);
        CHECK(run(nowait, &id, 1, &err) == was && err == 0);
        mysql_stmt_close(bycode);
    }

    /* A query behind the pair: the next transaction's SELECT … FOR UPDATE,
     * its answer read later by db_pipe_row(), again and again. */
    {
        MYSQL_STMT *short_wait = prepare(m, "SET SESSION innodb_lock_wait_timeout = 1");
        struct db_pipe_buf rest;
        long long v = -1, none = -1;
        int found = -1;

        run(lock, &id, 1, &err);
        for (i = 1; i <= 3; i++) {
            p[0] = was - i, p[1] = id;
            CHECK(db_pipe2_then(m, write, p, 2, commit, lock, &id, 1, 5000, a, &rest) == 0);
            CHECK(a[0].err == 0 && a[0].affected == 1 && a[1].err == 0);
            CHECK(db_pipe_row(m, lock, &rest, 5000, &v, &found, &a[0]) == 0);
            CHECK(a[0].err == 0 && found == 1 && v == was - i && rest.have == 0);
            CHECK(run(nowait, &id, 1, &err) == -1 && err != 0);    /* held again */
        }
        /* No such row: no row, and the answer ends where it should. */
        p[0] = was, p[1] = id;
        CHECK(db_pipe2_then(m, write, p, 2, commit, lock, &none, 1, 5000, a, &rest) == 0);
        CHECK(a[0].err == 0 && a[1].err == 0);
        CHECK(db_pipe_row(m, lock, &rest, 5000, &v, &found, &a[0]) == 0);
        CHECK(a[0].err == 0 && found == 0);
        CHECK(mysql_commit(m) == 0);                                /* in step */
        CHECK(run(nowait, &id, 1, &err) == was && err == 0);

        /* The query waits for a row another transaction holds and times
         * out: the server's error is the answer, and the connection is in
         * step afterwards. */
        CHECK(mysql_autocommit(other, 0) == 0);
        CHECK(run(waitrow, &id, 1, &err) == was && err == 0);       /* other holds it */
        run(short_wait, NULL, 0, &err);
        CHECK(err == 0);
        p[0] = 0, p[1] = none;
        CHECK(db_pipe2_then(m, write, p, 2, commit, lock, &id, 1, 5000, a, &rest) == 0);
        CHECK(a[0].err == 0 && a[0].affected == 0 && a[1].err == 0);
        CHECK(db_pipe_row(m, lock, &rest, 5000, &v, &found, &a[0]) == 0);
        CHECK(a[0].err == 1205 && found == 0);
        CHECK(mysql_rollback(m) == 0);
        CHECK(run(find, NULL, 0, &err) == id && err == 0);
        CHECK(mysql_commit(other) == 0 && mysql_autocommit(other, 1) == 0);
        mysql_stmt_close(short_wait);
    }

    /* A statement and a query of two columns in one round trip, both
     * answers read at once (autocommit, as mysql-optimistic runs it). */
    {
        MYSQL_STMT *row2 = prepare(m, "SELECT count, id FROM db_stock WHERE id = ?");
        long long v2[2] = { -1, -1 }, none = -1;
        int found = -1;

        CHECK(mysql_autocommit(m, 1) == 0);
        p[0] = was - 7, p[1] = id;
        CHECK(db_pipe_exec_query(m, write, p, 2, row2, &id, 1, 5000, a, v2, &found) == 0);
        CHECK(a[0].err == 0 && a[0].affected == 1 && a[1].err == 0);
        CHECK(found == 1 && v2[0] == was - 7 && v2[1] == id);
        p[0] = 1002, p[1] = 5;                     /* a failing first: the query runs */
        CHECK(db_pipe_exec_query(m, dup, p, 2, row2, &id, 1, 5000, a, v2, &found) == 0);
        CHECK(a[0].err == 1062 && a[1].err == 0 && found == 1 && v2[0] == was - 7);
        p[0] = was, p[1] = id;                     /* no such row */
        CHECK(db_pipe_exec_query(m, write, p, 2, row2, &none, 1, 5000, a, v2, &found) == 0);
        CHECK(a[0].err == 0 && a[0].affected == 1 && a[1].err == 0 && found == 0);
        CHECK(run(nowait, &id, 1, &err) == was && err == 0);       /* committed */
        CHECK(run(find, NULL, 0, &err) == id && err == 0);         /* in step */
        mysql_stmt_close(row2);
    }

    /* An answer that cannot be read once the statements left is a lost
     * answer: they may have run. A query's unreadable answer behind an
     * OK (a string column where integers are read) keeps the OK; a
     * result set where an OK was due, after a COMMIT's OK, says the
     * COMMIT may have run, and it did. Each leaves its connection out
     * of step: a connection of its own. */
    {
        MYSQL *odd = connect_to(tcp);
        MYSQL_STMT *owrite = prepare(odd, "UPDATE db_stock SET count = ? WHERE id = ?");
        MYSQL_STMT *ostr = prepare(odd, "SELECT 'x' FROM db_stock WHERE id = ?");
        long long v1[1] = { -1 };
        int found = -1;

        p[0] = was - 9, p[1] = id;
        CHECK(db_pipe_exec_query(odd, owrite, p, 2, ostr, &id, 1, 5000, a, v1, &found) == 1);
        CHECK(a[0].err == 0 && a[0].affected == 1 && a[1].err == CR_SERVER_LOST);
        CHECK(run(nowait, &id, 1, &err) == was - 9 && err == 0);   /* sold, in autocommit */
        mysql_stmt_close(owrite), mysql_stmt_close(ostr);
        mysql_close(odd);

        odd = connect_to(tcp);
        owrite = prepare(odd, "UPDATE db_stock SET count = ? WHERE id = ?");
        ostr = prepare(odd, "SELECT 'x'");
        MYSQL_STMT *ocommit = prepare(odd, "COMMIT");
        CHECK(mysql_autocommit(odd, 0) == 0);
        p[0] = was, p[1] = id;
        CHECK(run(owrite, p, 2, &err) == 1 && err == 0);            /* in its transaction */
        CHECK(db_pipe2(odd, ocommit, NULL, NULL, 0, ostr, 5000, a) == -1);
        CHECK(a[0].err == CR_SERVER_LOST && strstr(a[0].msg, "malformed") != NULL);
        CHECK(run(waitrow, &id, 1, &err) == was && err == 0);      /* it committed */
        CHECK(mysql_commit(other) == 0);
        mysql_stmt_close(owrite), mysql_stmt_close(ostr), mysql_stmt_close(ocommit);
        mysql_close(odd);
    }

    /* One statement run 64 times in one write (mysql-update's pipeline),
     * in autocommit: 64 answers, each its own sale; a conditional one
     * that runs out answers 0 rows from then on; a failing statement
     * fails each run alone; libmariadb in step afterwards. */
    {
        MYSQL_STMT *dec = prepare(m, "UPDATE db_stock SET count = count - 1 "
                                     "WHERE id = ? AND count >= 1");
        struct db_pipe_answer r[DB_PIPE_REPEAT_MAX];
        long long ten[2] = { 10, id };
        int sold = 0, none = 0;

        CHECK(mysql_autocommit(m, 1) == 0);
        run(write, ten, 2, &err);                   /* 0 rows if it was 10 already */
        CHECK(err == 0 && run(nowait, &id, 1, &err) == 10 && err == 0);
        CHECK(db_pipe_repeat(m, dec, &id, 1, DB_PIPE_REPEAT_MAX, 5000, r) == 0);
        for (i = 0; i < DB_PIPE_REPEAT_MAX; i++) {
            sold += r[i].err == 0 && r[i].affected == 1;
            none += r[i].err == 0 && r[i].affected == 0 && i >= 10;
        }
        CHECK(sold == 10 && none == DB_PIPE_REPEAT_MAX - 10);
        CHECK(run(nowait, &id, 1, &err) == 0 && err == 0);         /* committed, each */
        p[0] = 1002, p[1] = 5;
        CHECK(db_pipe_repeat(m, dup, p, 2, 3, 5000, r) == 0);
        CHECK(r[0].err == 1062 && r[1].err == 1062 && r[2].err == 1062);
        CHECK(db_pipe_repeat(m, dec, &id, 1, 1, 5000, r) == 0 && r[0].affected == 0);
        CHECK(run(find, NULL, 0, &err) == id && err == 0);         /* in step */
        p[0] = was, p[1] = id;                     /* put back (was may be 0) */
        run(write, p, 2, &err);
        CHECK(err == 0 && run(nowait, &id, 1, &err) == was && err == 0);
        mysql_stmt_close(dec);
    }

    /* The server ends the connection: lost, not an answer. Gone when the
     * write already found it closed (nothing sent), lost when the write
     * went into the socket before the server closed it. */
    {
        MYSQL_STMT *vlock = prepare(victim, "SELECT count FROM db_stock WHERE id = ? FOR UPDATE");
        MYSQL_STMT *vwrite = prepare(victim, "UPDATE db_stock SET count = ? WHERE id = ?");
        MYSQL_STMT *vcommit = prepare(victim, "COMMIT");
        long long tid = (long long)mysql_thread_id(victim);

        mysql_autocommit(victim, 0);
        run(vlock, &id, 1, &err);
        run(kill, &tid, 1, &err);
        CHECK(err == 0);
        p[0] = 0, p[1] = id;
        CHECK(db_pipe2(victim, vwrite, p, NULL, 2, vcommit, 5000, a) == -1);
        CHECK(a[0].err == CR_SERVER_LOST || a[0].err == CR_SERVER_GONE_ERROR);
        /* The server rolls the killed transaction back in its own time:
         * wait for the row (innodb_lock_wait_timeout), do not NOWAIT. */
        CHECK(run(waitrow, &id, 1, &err) == was && err == 0);      /* rolled back */
        mysql_stmt_close(vlock), mysql_stmt_close(vwrite), mysql_stmt_close(vcommit);
    }

    MYSQL_STMT *all[] = { find, lock, write, dup, commit, nowait, waitrow, kill };
    for (i = 0; i < (int)(sizeof all / sizeof all[0]); i++)
        mysql_stmt_close(all[i]);
    mysql_close(victim);
    mysql_close(other);
    mysql_close(m);
}

/* ---------------------------------------------------------------- db.c */

static struct config cfg;

static void db_ctx(struct lock_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->cfg = &cfg;
    ctx->db = db_new(&cfg);
}

static long long product_id(struct lock_ctx *ctx, long long *count)
{
    static const char sql[] = "SELECT id, count FROM db_stock WHERE product_code = '1002' "
                              "AND stock_code = '001'";
    long long id = -1, rows = 0;

    CHECK(db_exec(ctx, sql, &rows, ">ll", &id, count) == LL_OK && rows == 1);
    return id;
}

/* More distinct statements than the old cache's 32 slots (a worker slot
 * prepares about 46), each prepared on first use and run twice: every
 * answer right, on one connection throughout (the cache never dropped
 * it), under any build. */
#define MANY_STMTS 80

static void test_many_statements(void)
{
    static const char sql_conn[] = "SELECT CONNECTION_ID()";
    struct lock_ctx ctx;
    char *sql[MANY_STMTS];
    long long v, rows, conn0 = -1, conn1 = -2;
    int i, round, ok = 1;

    printf("-- db.c: %d distinct statements on one connection\n", MANY_STMTS);
    db_ctx(&ctx);
    CHECK(db_exec(&ctx, sql_conn, &rows, ">l", &conn0) == LL_OK && rows == 1);
    for (i = 0; i < MANY_STMTS; i++) {
        sql[i] = xmalloc(32);
        snprintf(sql[i], 32, "SELECT %d + ?", i);
    }
    for (round = 0; round < 2; round++)
        for (i = 0; i < MANY_STMTS; i++) {
            v = -1;
            ok &= db_exec(&ctx, sql[i], &rows, "l>l", (long long)round, &v) == LL_OK &&
                  rows == 1 && v == i + round;
        }
    CHECK(ok);
    CHECK(db_exec(&ctx, sql_conn, &rows, ">l", &conn1) == LL_OK && conn1 == conn0);
    db_free(ctx.db);
    for (i = 0; i < MANY_STMTS; i++)
        free(sql[i]);
}

/* mysql-optimistic's pipeline: the UPDATE in autocommit, a query behind
 * it. Once the UPDATE's OK with its row is read, the sale is made, what
 * ever comes of the query: a server error (a subquery of two rows), or
 * an answer that cannot be read (a string where integers are read). */
static void test_sale_then_query_fails(void)
{
    static const char write_sql[] = "UPDATE db_stock SET count = ? WHERE id = ?";
    static const char err_sql[] = "SELECT (SELECT id FROM db_stock) FROM db_stock WHERE id = ?";
    static const char str_sql[] = "SELECT 'x' FROM db_stock WHERE id = ?";
    const char *queries[2] = { err_sql, str_sql };
    struct lock_ctx ctx;
    long long was = -1, now = -1, id, rows, found, values[DB_PIPE_COLS];
    int i, rc;

    printf("-- db.c: a sale whose pipelined query fails\n");
    db_ctx(&ctx);
    id = product_id(&ctx, &was);
    for (i = 0; i < 2; i++) {
        const long long params[2] = { was - 1 - i, id };

        rows = found = -1;
        rc = db_exec_query(&ctx, write_sql, &rows, params, 2, queries[i], &id, 1, values, &found);
        printf("   %s: %s, rows %lld, found %lld (%s)\n", i ? "unreadable" : "server error",
               ll_status_name(rc), rows, found, rc == LL_OK ? "" : ctx.errstr);
        CHECK(rc == LL_OK && rows == 1 && found == 0);
        CHECK(product_id(&ctx, &now) == id && now == was - 1 - i);      /* it sold */
    }
    {
        const long long back[2] = { was, id };

        CHECK(db_exec_ints(&ctx, write_sql, &rows, back, 2) == LL_OK);
    }
    db_free(ctx.db);
}

/* MariaDB named "localhost" over TCP, as --mysql-host would name it and
 * parsed as the server parses it: a coroutine's statement reaches the
 * server at that port, and the name is resolved before the loop, never on
 * it. */
struct named {
    struct lock_ctx ctx;
    long long       port;
    int             rc, done;
};

static void named_co(void *arg)
{
    static const char sql_port[] = "SELECT @@port";
    struct named *n = arg;
    long long rows = 0;

    n->rc = db_exec(&n->ctx, sql_port, &rows, ">l", &n->port);
    n->done = 1;
}

static void test_host_name(void)
{
    static struct config named_cfg;
    const char *sock = getenv("LOCKLAB_MYSQL_SOCKET"), *host = getenv("LOCKLAB_MYSQL_HOST");
    char keep_sock[256], keep_host[128], err[256];
    struct loop_stats before, after;
    struct named n;

    printf("-- db.c: MariaDB named localhost, over TCP, on a loop\n");
    snprintf(keep_sock, sizeof keep_sock, "%s", sock ? sock : "");
    snprintf(keep_host, sizeof keep_host, "%s", host ? host : "");
    setenv("LOCKLAB_MYSQL_HOST", "localhost", 1);
    unsetenv("LOCKLAB_MYSQL_SOCKET");
    CHECK(config_parse(&named_cfg, 1, (char *[]){ "test_db_pipe", NULL }, err, sizeof err) == 0);
    setenv("LOCKLAB_MYSQL_SOCKET", keep_sock, 1);
    setenv("LOCKLAB_MYSQL_HOST", keep_host, 1);
    memset(&n, 0, sizeof n);
    n.ctx.cfg = &named_cfg;
    n.ctx.db = db_new(&named_cfg);
    CHECK(loop_init() == 0);
    slow_lookups = 0;
    loop_stats(&before);
    task_spawn(named_co, &n);
    while (!n.done)
        loop_once();
    loop_stats(&after);
    printf("   %s, port %lld%s%s\n", n.rc == LL_OK ? "connected" : ll_status_name(n.rc),
           n.port, n.rc == LL_OK ? "" : ": ", n.rc == LL_OK ? "" : n.ctx.errstr);
    CHECK(n.rc == LL_OK && n.port == atoll(env("LOCKLAB_MYSQL_PORT")));
    CHECK(slow_lookups == 0);                           /* none on the loop */
    CHECK(after.slow_turns == before.slow_turns);
    db_free(n.ctx.db);
    loop_free();
}

int main(void)
{
    char err[256];

    suite(0);
    suite(1);
    if (config_parse(&cfg, 1, (char *[]){ "test_db_pipe", NULL }, err, sizeof err) != 0) {
        fprintf(stderr, "test_db_pipe: %s\n", err);
        return 2;
    }
    test_sale_then_query_fails();
    test_many_statements();
    test_host_name();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
