/* db.c — MariaDB access for one worker slot: connect, prepare, bind, fetch.
 *
 * A slot owns one MYSQL connection and its prepared statements, found by
 * the address of their SQL text: a cache that grows as statements are
 * first used, up to DB_MAX_STMTS, past which the least recently used one
 * is closed to make room (a worker slot that runs every strategy prepares
 * about 46; the bound keeps the server's max_prepared_stmt_count, shared
 * by every connection, out of reach). Reconnection is lazy:
 * a lost connection is closed at once and the next db_exec() connects
 * again (the server may be well: a connection lost on its own must not
 * make the slot refuse the next request); a connect that fails holds the
 * slot off for DB_RETRY_MS, so a stopped server costs a request one
 * refused connect, not a stuck thread. Autocommit is on, as in the seeds' MyBatis
 * service; a strategy whose sale is a transaction opens it with db_begin().
 *
 * Transactions are Spring's @Transactional, not START TRANSACTION: begin
 * turns autocommit off and the next statement opens the transaction, so a
 * transaction costs no round trip of its own. The mode stays off between
 * transactions of the same slot (a slot that runs mysql-for-update again
 * and again sets it once), and the first statement run outside a
 * transaction turns it back on. Inside a transaction the connection is
 * never replaced behind the caller's back: a lost connection fails the
 * statement, because a fresh one would run it outside the transaction.
 * db_exec_commit() ends a transaction with its last statement and the
 * COMMIT in one round trip (db_pipe.c); db_exec_commit_next() sends the next
 * transaction's first statement in the same round trip, and leaves its
 * answer pending on the connection for db_exec_pending().
 *
 * Nothing here blocks: every call that talks to the server is libmariadb's
 * non-blocking version (MYSQL_OPT_NONBLOCK, X_start and X_cont), and whatever
 * it waits for — the socket, its read/write timeout — it waits for through
 * core/wait.h. On a loop that parks the slot's coroutine, in a plain
 * thread it blocks the thread, as libmariadb's blocking calls would.
 */
#include "db.h"
#include "db_pipe.h"
#include "../core/config.h"
#include "../core/ctx.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <assert.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define DB_MAX_STMTS  64         /* prepared at once on a connection */
#define DB_MAX_PARAMS 12
#define DB_RETRY_MS   200

struct db_stmt {
    const char   *sql;
    MYSQL_STMT   *stmt;
    unsigned long used;         /* db->uses at its last use: the LRU's */
};

/* Bumped whenever any slot finds the server unavailable: every other slot
 * then pings before its next statement, so a restarted server costs no
 * request an error on a stale connection (a ping can be retried safely,
 * a statement cannot: it may have run). */
static _Atomic unsigned db_epoch;

struct db {
    const struct config *cfg;
    const char     *host, *sock;    /* where: cfg's primary, or its replica */
    int             port;
    char            where[128];     /* "127.0.0.1:13306" or the socket   */
    unsigned        epoch;          /* db_epoch when last known good     */
    MYSQL          *conn;           /* NULL while disconnected           */
    int64_t         retry_at_ms;    /* no connect attempt before this    */
    unsigned        last_errno;
    int             manual;         /* autocommit is off on this conn    */
    int             galera;         /* the server is a Galera node       */
    int             txn;            /* between db_begin and commit/roll. */
    MYSQL_STMT     *pending;        /* its answer not read yet: rest has
                                     * what came of it                   */
    struct db_pipe_buf rest;
    int             nstmts;         /* statements cached                 */
    unsigned long   uses;           /* statement uses so far             */
    struct db_stmt *stmts;          /* DB_MAX_STMTS of them              */
};

/* ---------------------------------------------------------------- non-blocking calls */

/* Wait for what libmariadb asked for (MYSQL_WAIT_*): what came of it. */
static int db_wait(MYSQL *m, int asked)
{
    int events = (asked & MYSQL_WAIT_READ ? WAIT_READ : 0) |
                 (asked & MYSQL_WAIT_WRITE ? WAIT_WRITE : 0);
    int64_t deadline = asked & MYSQL_WAIT_TIMEOUT ?
        now_us() + (int64_t)mysql_get_timeout_value_ms(m) * 1000 : WAIT_FOREVER;
    int got;

    if (events == 0) {
        wait_until(deadline);
        return MYSQL_WAIT_TIMEOUT;
    }
    got = wait_fd((int)mysql_get_socket(m), events, deadline);
    if (got == 0)
        return MYSQL_WAIT_TIMEOUT;
    return (got & WAIT_READ ? MYSQL_WAIT_READ : 0) | (got & WAIT_WRITE ? MYSQL_WAIT_WRITE : 0);
}

/* nb_X(): libmariadb's X, its waits through the wait layer: X_start(),
 * then X_cont() with what came of each wait it asks for, until done. */
#define DB_RUN(m, start, cont_call)                                      \
    do {                                                                      \
        int st_ = (start);                                                    \
        while (st_)                                                           \
            st_ = cont_call(db_wait((m), st_));                               \
    } while (0)

static MYSQL *nb_connect(MYSQL *m, const char *host, const char *user, const char *pw,
                         const char *dbname, unsigned port, const char *sock)
{
    MYSQL *ret;
#define CONT(w) mysql_real_connect_cont(&ret, m, w)
    DB_RUN(m, mysql_real_connect_start(&ret, m, host, user, pw, dbname, port, sock, 0),
           CONT);
#undef CONT
    return ret;
}

static int nb_ping(MYSQL *m)
{
    int ret;
#define CONT(w) mysql_ping_cont(&ret, m, w)
    DB_RUN(m, mysql_ping_start(&ret, m), CONT);
#undef CONT
    return ret;
}

static void nb_close(MYSQL *m)
{
#define CONT(w) mysql_close_cont(m, w)
    DB_RUN(m, mysql_close_start(m), CONT);
#undef CONT
}

static int nb_prepare(MYSQL *m, MYSQL_STMT *stmt, const char *sql, unsigned long len)
{
    int ret;
#define CONT(w) mysql_stmt_prepare_cont(&ret, stmt, w)
    DB_RUN(m, mysql_stmt_prepare_start(&ret, stmt, sql, len), CONT);
#undef CONT
    return ret;
}

static int nb_execute(MYSQL *m, MYSQL_STMT *stmt)
{
    int ret;
#define CONT(w) mysql_stmt_execute_cont(&ret, stmt, w)
    DB_RUN(m, mysql_stmt_execute_start(&ret, stmt), CONT);
#undef CONT
    return ret;
}

static int nb_fetch(MYSQL *m, MYSQL_STMT *stmt)
{
    int ret;
#define CONT(w) mysql_stmt_fetch_cont(&ret, stmt, w)
    DB_RUN(m, mysql_stmt_fetch_start(&ret, stmt), CONT);
#undef CONT
    return ret;
}

static void nb_stmt_close(MYSQL *m, MYSQL_STMT *stmt)
{
    my_bool ret;
#define CONT(w) mysql_stmt_close_cont(&ret, stmt, w)
    DB_RUN(m, mysql_stmt_close_start(&ret, stmt), CONT);
#undef CONT
}

/* ---------------------------------------------------------------- connections */

static struct db *db_at(const struct config *cfg, const char *host, int port,
                        const char *sock)
{
    struct db *db = xcalloc(1, sizeof *db);
    db->stmts = xcalloc(DB_MAX_STMTS, sizeof *db->stmts);
    db->cfg = cfg;
    db->host = host;
    db->port = port;
    db->sock = sock;
    if (sock)
        snprintf(db->where, sizeof db->where, "%s", sock);
    else
        snprintf(db->where, sizeof db->where, "%s:%d", host, port);
    return db;
}

struct db *db_new(const struct config *cfg)
{
    /* The address config_parse() resolved: no name is looked up on the
     * loop (a config made by hand, as the tests' are, may have none). */
    return db_at(cfg, cfg->mysql_addr[0] ? cfg->mysql_addr : cfg->mysql_host,
                 cfg->mysql_port, cfg->mysql_socket);
}

struct db *db_new_replica(const struct config *cfg)
{
    assert(cfg->mysql_replica != NULL);
    if (cfg->mysql_replica[0] == '/')
        return db_at(cfg, NULL, 0, cfg->mysql_replica);
    return db_at(cfg, cfg->replica.host, cfg->replica.port, NULL);
}

static void db_disconnect(struct db *db)
{
    int i;
    db->pending = NULL;         /* a closed connection answers nothing */
    for (i = 0; i < db->nstmts; i++)
        nb_stmt_close(db->conn, db->stmts[i].stmt);
    db->nstmts = 0;
    if (db->conn)
        nb_close(db->conn);
    db->conn = NULL;
    db->manual = 0;             /* a new connection starts in autocommit */
}

void db_free(struct db *db)
{
    if (db == NULL)
        return;
    db_disconnect(db);
    free(db->stmts);
    free(db);
}

unsigned db_errno(const struct lock_ctx *ctx)
{
    return ctx->db->last_errno;
}

/* Server gone, refused, killed or shutting down: worth a 503 and a reconnect. */
static int db_is_unavailable(unsigned err)
{
    switch (err) {
    case CR_CONNECTION_ERROR: case CR_CONN_HOST_ERROR: case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST: case CR_SERVER_LOST_EXTENDED: case CR_UNKNOWN_HOST:
    case CR_COMMANDS_OUT_OF_SYNC: case CR_MALFORMED_PACKET:
    case ER_SERVER_SHUTDOWN: case ER_CONNECTION_KILLED: case ER_CON_COUNT_ERROR:
    case ER_QUERY_INTERRUPTED:
        return 1;
    }
    return 0;
}

/* Turn the error of the last call into ctx's error and a status. */
static int db_fail(struct lock_ctx *ctx, unsigned err, const char *error, const char *what)
{
    struct db *db = ctx->db;
    char msg[128];

    /* `error` lives in the connection or statement: copy it before they go. */
    strlcopy(msg, error, sizeof msg);
    db->last_errno = err;
    if (db_is_unavailable(err) || db->conn == NULL) {
        atomic_fetch_add(&db_epoch, 1);
        db_disconnect(db);
        return lock_error(ctx, LL_UNAVAILABLE, "mysql", "mysql %s: %s (%u)",
                          db->where, msg, err);
    }
    if (err == ER_LOCK_DEADLOCK) {
        ctx->deadlocks++;
        if (db->galera)             /* certification, or a brute-force abort */
            ctx->cert_failures++, ctx->cert_failed = 1;
    }
    if (err == ER_LOCK_WAIT_TIMEOUT || err == ER_LOCK_DEADLOCK)
        return lock_error(ctx, LL_TIMEOUT, "mysql", "mysql %s: %s (%u)", what, msg, err);
    return lock_error(ctx, LL_ERROR, "mysql", "mysql %s: %s (%u)", what, msg, err);
}

/* The failure of a statement that sells. A server's error answer means it
 * did not run, and a connection that failed before the statement left
 * (CR_SERVER_GONE_ERROR) means the same. But once it was sent, a connection
 * lost before its answer came back (CR_SERVER_LOST: the read failed or
 * timed out) leaves the sale unknown: the server may have committed it.
 * That is LL_UNKNOWN, never LL_UNAVAILABLE, and the statement is never
 * sent again on the next connection. */
static int db_fail_sale(struct lock_ctx *ctx, unsigned err, const char *error, const char *what)
{
    int status = db_fail(ctx, err, error, what);

    if (status == LL_UNAVAILABLE && (err == CR_SERVER_LOST || err == CR_SERVER_LOST_EXTENDED))
        return lock_error(ctx, LL_UNKNOWN, "mysql", "mysql %s: connection lost after the "
                          "sale was sent: it may or may not have been made (%u)",
                          ctx->db->where, err);
    return status;
}

/* The fault ?lose_answer=1 (app/http.c): the answer to the statement that
 * sells never arrives. Shutting the read side of the socket before the
 * statement leaves lets it reach the server and run there, while the read
 * of its answer ends at once at end-of-file, as if the connection had
 * dropped on the way back. On the Unix socket the stack uses this is
 * certain (the server's answer cannot even be written); over TCP the
 * answer would have to outrun the client's read. */
static void db_fault_lose_answer(struct lock_ctx *ctx)
{
    if (ctx->lose_answer && ctx->db->conn)
        shutdown((int)mysql_get_socket(ctx->db->conn), SHUT_RD);
}

/* The fault ?lose_answer=2 on db_exec_query(): the server kills the
 * connection between the statement's answer and the query's, as a KILL
 * or a shutdown from outside would, but certainly there: the query's
 * place in the round trip is taken by KILL CONNECTION of the connection
 * itself, which answers "Connection was killed" (1927) and closes it. */
static const char sql_kill_self[] = "KILL CONNECTION ?";

/* SET SESSION innodb_lock_wait_timeout = ?, prepared like everything else. */
static int db_set_lock_wait(MYSQL *conn, long long seconds)
{
    static const char sql[] = "SET SESSION innodb_lock_wait_timeout = ?";
    MYSQL_STMT *stmt = mysql_stmt_init(conn);
    MYSQL_BIND b;
    int rc = -1;

    if (stmt == NULL)
        return -1;
    memset(&b, 0, sizeof b);
    b.buffer_type = MYSQL_TYPE_LONGLONG;
    b.buffer = &seconds;
    if (nb_prepare(conn, stmt, sql, sizeof sql - 1) == 0 &&
        mysql_stmt_bind_param(stmt, &b) == 0 && nb_execute(conn, stmt) == 0)
        rc = 0;
    nb_stmt_close(conn, stmt);
    return rc;
}

/* SELECT @@wsrep_on: 1 on a node of a Galera cluster, where a 1213 is most
 * often the cluster's (a transaction that lost certification at its COMMIT,
 * or was aborted by a replicated one that won), not InnoDB's own deadlock.
 * A server that has no such variable is no Galera node. */
static int db_is_galera(MYSQL *conn)
{
    static const char sql[] = "SELECT @@wsrep_on";
    MYSQL_STMT *stmt = mysql_stmt_init(conn);
    MYSQL_BIND b;
    long long on = 0;

    if (stmt == NULL)
        return 0;
    memset(&b, 0, sizeof b);
    b.buffer_type = MYSQL_TYPE_LONGLONG;
    b.buffer = &on;
    if (nb_prepare(conn, stmt, sql, sizeof sql - 1) != 0 || nb_execute(conn, stmt) != 0 ||
        mysql_stmt_bind_result(stmt, &b) != 0 || nb_fetch(conn, stmt) != 0)
        on = 0;
    nb_stmt_close(conn, stmt);
    return on == 1;
}

/* How long a statement may take before its connection counts as lost. */
static unsigned db_rw_timeout(const struct config *cfg)
{
    return (unsigned)(cfg->lock_wait_ms / 1000) + 30;
}

static int db_connect(struct lock_ctx *ctx)
{
    struct db *db = ctx->db;
    const struct config *cfg = db->cfg;
    unsigned timeout = 2, rw_timeout = db_rw_timeout(cfg);
    my_bool off = 0;

    if (db->conn && fd_peer_closed((int)mysql_get_socket(db->conn)))
        db_disconnect(db);      /* the server restarted: nothing was sent */
    if (db->conn) {
        unsigned epoch = atomic_load(&db_epoch);
        if (db->epoch == epoch)
            return LL_OK;
        if (nb_ping(db->conn) == 0) {
            db->epoch = epoch;
            return LL_OK;
        }
        db_disconnect(db);      /* stale: reconnect below, nothing was sent */
    }
    if (db->txn)                /* a new connection would be outside it */
        return lock_error(ctx, LL_UNAVAILABLE, "mysql",
                          "mysql %s: connection lost inside a transaction", db->where);
    if (now_ms() < db->retry_at_ms)
        return lock_error(ctx, LL_UNAVAILABLE, "mysql",
                          "mysql %s: down, retrying shortly", db->where);
    db->conn = mysql_init(NULL);
    if (db->conn == NULL)
        return lock_error(ctx, LL_ERROR, "mysql", "mysql_init failed");
    mysql_options(db->conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(db->conn, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
    mysql_options(db->conn, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
    mysql_options(db->conn, MYSQL_OPT_RECONNECT, &off);
    mysql_options(db->conn, MYSQL_OPT_NONBLOCK, 0);
    /* With a socket, libmariadb takes host "localhost" to mean: use it. */
    if (!nb_connect(db->conn, db->sock ? "localhost" : db->host,
                    cfg->mysql_user, cfg->mysql_password, cfg->mysql_db,
                    (unsigned)db->port, db->sock)) {
        unsigned err = mysql_errno(db->conn);
        char msg[128];
        strlcopy(msg, mysql_error(db->conn), sizeof msg);
        db_disconnect(db);
        db->retry_at_ms = now_ms() + DB_RETRY_MS;
        db->last_errno = err;
        if (err == ER_ACCESS_DENIED_ERROR || err == ER_BAD_DB_ERROR || err == ER_DBACCESS_DENIED_ERROR)
            return lock_error(ctx, LL_UNAVAILABLE, "mysql", "mysql %s: %s (%u): check --mysql-user/--mysql-db",
                              db->where, msg, err);
        return lock_error(ctx, LL_UNAVAILABLE, "mysql", "mysql %s: %s (%u)", db->where, msg, err);
    }
    /* A row lock may be waited for as long as a lock of any other kind. */
    if (db_set_lock_wait(db->conn, cfg->lock_wait_ms / 1000 > 0 ? cfg->lock_wait_ms / 1000 : 1) != 0)
        return db_fail(ctx, mysql_errno(db->conn), mysql_error(db->conn), "session setup");
    db->galera = db_is_galera(db->conn);
    db->epoch = atomic_load(&db_epoch);
    return LL_OK;
}

/* A free entry of db's cache: a new one while there is room, else the
 * least recently used statement's, closed. The statements of the call in
 * progress were just used and the pending one is read before any other
 * use (db_prepare()), so the one closed is never one of them. */
static struct db_stmt *db_stmt_slot(struct db *db)
{
    struct db_stmt *lru;
    int i;

    if (db->nstmts < DB_MAX_STMTS)
        return &db->stmts[db->nstmts++];
    for (lru = &db->stmts[0], i = 1; i < db->nstmts; i++)
        if (db->stmts[i].used < lru->used)
            lru = &db->stmts[i];
    assert(lru->stmt != db->pending);
    nb_stmt_close(db->conn, lru->stmt);
    return lru;
}

/* `sql` prepared on the connection as it is (see db_prepare()). */
static MYSQL_STMT *db_stmt(struct lock_ctx *ctx, const char *sql, int *status)
{
    struct db *db = ctx->db;
    struct db_stmt *e;
    MYSQL_STMT *stmt;
    int i;

    for (i = 0; i < db->nstmts; i++)
        if (db->stmts[i].sql == sql) {
            db->stmts[i].used = ++db->uses;
            return db->stmts[i].stmt;
        }
    stmt = mysql_stmt_init(db->conn);
    if (stmt == NULL) {
        *status = db_fail(ctx, mysql_errno(db->conn), mysql_error(db->conn), "prepare");
        return NULL;
    }
    if (nb_prepare(db->conn, stmt, sql, strlen(sql)) != 0) {
        *status = db_fail(ctx, mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "prepare");
        nb_stmt_close(db->conn, stmt);
        return NULL;
    }
    e = db_stmt_slot(db);
    e->sql = sql;
    e->stmt = stmt;
    e->used = ++db->uses;
    return stmt;
}

/* `sql` prepared on a live connection: (re)connects first when needed. */
static MYSQL_STMT *db_prepare(struct lock_ctx *ctx, const char *sql, int *status)
{
    assert(ctx->db->pending == NULL);
    *status = db_connect(ctx);
    return *status == LL_OK ? db_stmt(ctx, sql, status) : NULL;
}

static const char sql_autocommit_off[] = "SET autocommit = 0";
static const char sql_autocommit_on[] = "SET autocommit = 1";

/* Outside a transaction, a statement runs in autocommit: turn it back on
 * if db_begin() turned it off on this connection. */
static int db_autocommit(struct lock_ctx *ctx)
{
    int status;

    if (!ctx->db->manual || ctx->db->txn)
        return LL_OK;
    if ((status = db_exec(ctx, sql_autocommit_on, NULL, "")) != LL_OK)
        return status;
    ctx->db->manual = 0;
    return LL_OK;
}
static const char sql_commit[] = "COMMIT";
static const char sql_rollback[] = "ROLLBACK";

int db_exec(struct lock_ctx *ctx, const char *sql, long long *rows, const char *fmt, ...)
{
    MYSQL_BIND in[DB_MAX_PARAMS], out[DB_MAX_PARAMS];
    unsigned long lens[DB_MAX_PARAMS];
    long long ints[DB_MAX_PARAMS];
    int nin = 0, nout = 0, status, found = 0, rc, sells = *fmt == '!';
    MYSQL_STMT *stmt;
    const char *f;
    va_list ap;

    fmt += sells;
    sells = sells && (!ctx->db->txn || sql == sql_commit);  /* see db.h */
    if (sql != sql_autocommit_on && (status = db_autocommit(ctx)) != LL_OK)
        return status;
    stmt = db_prepare(ctx, sql, &status);
    if (stmt == NULL)
        return status;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    va_start(ap, fmt);
    for (f = fmt; *f && *f != '>'; f++, nin++) {
        assert(nin < DB_MAX_PARAMS);
        if (*f == 'l') {
            ints[nin] = va_arg(ap, long long);
            in[nin].buffer_type = MYSQL_TYPE_LONGLONG;
            in[nin].buffer = &ints[nin];
        } else {
            char *s = va_arg(ap, char *);
            assert(*f == 's');
            lens[nin] = strlen(s);
            in[nin].buffer_type = MYSQL_TYPE_STRING;
            in[nin].buffer = s;
            in[nin].buffer_length = lens[nin];
            in[nin].length = &lens[nin];
        }
    }
    if (*f == '>')
        for (f++; *f; f++, nout++) {
            assert(*f == 'l' && nout < DB_MAX_PARAMS);
            out[nout].buffer_type = MYSQL_TYPE_LONGLONG;
            out[nout].buffer = va_arg(ap, long long *);
        }
    va_end(ap);
    assert((unsigned long)nin == mysql_stmt_param_count(stmt));

    if (nin && mysql_stmt_bind_param(stmt, in))
        return db_fail(ctx, mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "bind");
    if (sells)
        db_fault_lose_answer(ctx);
    if (nb_execute(ctx->db->conn, stmt))
        return (sells ? db_fail_sale : db_fail)(ctx, mysql_stmt_errno(stmt),
                                                mysql_stmt_error(stmt), "execute");
    if (mysql_stmt_field_count(stmt) == 0) {
        if (rows)
            *rows = (long long)mysql_stmt_affected_rows(stmt);
        return LL_OK;
    }
    if (nout && mysql_stmt_bind_result(stmt, out))
        return db_fail(ctx, mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "bind result");
    /* Read the whole (one-row) result so the connection is ready again. */
    while ((rc = nb_fetch(ctx->db->conn, stmt)) == 0 || rc == MYSQL_DATA_TRUNCATED)
        found = 1;
    if (rc != MYSQL_NO_DATA && mysql_stmt_errno(stmt) == 0)     /* the connection's */
        return db_fail(ctx, mysql_errno(ctx->db->conn), mysql_error(ctx->db->conn), "fetch");
    if (rc != MYSQL_NO_DATA)
        return db_fail(ctx, mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "fetch");
    if (rows)
        *rows = found;
    return LL_OK;
}

int db_exec_ints(struct lock_ctx *ctx, const char *sql, long long *rows,
                 const long long *params, int n)
{
    MYSQL_BIND *in;
    MYSQL_STMT *stmt;
    int i, status;

    if ((status = db_autocommit(ctx)) != LL_OK)
        return status;
    if ((stmt = db_prepare(ctx, sql, &status)) == NULL)
        return status;
    assert((unsigned long)n == mysql_stmt_param_count(stmt) && mysql_stmt_field_count(stmt) == 0);
    in = xcalloc((size_t)(n > 0 ? n : 1), sizeof *in);
    for (i = 0; i < n; i++) {
        in[i].buffer_type = MYSQL_TYPE_LONGLONG;
        in[i].buffer = (void *)&params[i];
    }
    if (n && mysql_stmt_bind_param(stmt, in))
        status = db_fail(ctx, mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "bind");
    else if (nb_execute(ctx->db->conn, stmt))
        status = db_fail(ctx, mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "execute");
    else if (rows)
        *rows = (long long)mysql_stmt_affected_rows(stmt);
    free(in);
    return status;
}

int db_begin(struct lock_ctx *ctx)
{
    struct db *db = ctx->db;
    int rc;

    assert(!db->txn);
    /* Nothing of the transaction is sent yet: a stale connection is
     * replaced here, where that is still safe, not at its first statement. */
    if ((rc = db_connect(ctx)) != LL_OK)
        return rc;
    if (!db->manual) {
        if ((rc = db_exec(ctx, sql_autocommit_off, NULL, "")) != LL_OK)
            return rc;
        db->manual = 1;
    }
    db->txn = 1;
    return LL_OK;
}

/* Ends the transaction whatever happens: a failed COMMIT is rolled back. */
static int commit(struct lock_ctx *ctx, const char *fmt)
{
    int rc = db_exec(ctx, sql_commit, NULL, fmt);

    if (rc != LL_OK)
        db_rollback(ctx);
    ctx->db->txn = 0;
    return rc;
}

int db_commit(struct lock_ctx *ctx)
{
    return commit(ctx, "");
}

int db_commit_sale(struct lock_ctx *ctx)
{
    return commit(ctx, "!");
}

void db_rollback(struct lock_ctx *ctx)
{
    /* Keep the first error: the rollback's own failure says nothing new.
     * A dead connection rolls back on the server by itself. */
    int err = ctx->err;
    char saved[sizeof ctx->errstr];
    const char *backend = ctx->backend;

    if (!ctx->db->txn)
        return;                 /* none open, or commit already ended it */
    if (ctx->db->conn == NULL) {
        ctx->db->txn = 0;
        return;
    }
    memcpy(saved, ctx->errstr, sizeof saved);
    db_exec(ctx, sql_rollback, NULL, "");
    ctx->db->txn = 0;
    ctx->err = err;
    ctx->backend = backend;
    memcpy(ctx->errstr, saved, sizeof saved);
}

/* A pipelined exchange that could not be finished: the connection is out
 * of step with libmariadb, so it is closed, and the server rolls back what
 * was not committed. When the exchange sells (a COMMIT, or a statement in
 * autocommit), what was sent may have been committed: see db_fail_sale(). */
static int db_pipe_lost(struct lock_ctx *ctx, const struct db_pipe_answer *a, int sells)
{
    int status;

    ctx->db->txn = 0;
    status = (sells ? db_fail_sale : db_fail)(ctx, a->err, a->msg, "execute");
    db_disconnect(ctx->db);
    return status;
}

/* A transaction's last statement (n parameters, no result) and its COMMIT,
 * prepared for a pipe; NULL, the transaction rolled back, if they cannot be. */
static MYSQL_STMT *db_prepare_last(struct lock_ctx *ctx, const char *sql, int n,
                                   MYSQL_STMT **commit, int *status)
{
    MYSQL_STMT *stmt;

    assert(ctx->db->txn);
    stmt = db_prepare(ctx, sql, status);
    *commit = stmt != NULL ? db_stmt(ctx, sql_commit, status) : NULL;
    if (*commit == NULL) {
        db_rollback(ctx);
        return NULL;
    }
    assert((unsigned long)n == mysql_stmt_param_count(stmt) && mysql_stmt_field_count(stmt) == 0);
    return stmt;
}

int db_exec_commit(struct lock_ctx *ctx, const char *sql, long long *rows, const char *fmt, ...)
{
    struct db *db = ctx->db;
    struct db_pipe_answer a[2];
    long long params[DB_PIPE_PARAMS] = {0};
    const char *strs[DB_PIPE_PARAMS] = {0};
    MYSQL_STMT *stmt, *commit;
    int n = 0, status;
    va_list ap;

    va_start(ap, fmt);
    for (; fmt[n]; n++) {
        assert((fmt[n] == 'l' || fmt[n] == 's') && n < DB_PIPE_PARAMS);
        if (fmt[n] == 's')
            strs[n] = va_arg(ap, const char *);
        else
            params[n] = va_arg(ap, long long);
    }
    va_end(ap);
    if ((stmt = db_prepare_last(ctx, sql, n, &commit, &status)) == NULL)
        return status;
    db_fault_lose_answer(ctx);
    if (db_pipe2(db->conn, stmt, params, strs, n, commit, (int)db_rw_timeout(db->cfg) * 1000,
                 a) != 0)
        return db_pipe_lost(ctx, &a[0], 1);
    if (a[1].err) {                         /* COMMIT failed: roll back */
        status = db_fail(ctx, a[1].err, a[1].msg, "commit");
        db_rollback(ctx);
        return status;
    }
    db->txn = 0;                            /* committed, with or without it */
    if (a[0].err)
        return db_fail(ctx, a[0].err, a[0].msg, "execute");
    if (rows)
        *rows = (long long)a[0].affected;
    return LL_OK;
}

int db_exec_commit_next(struct lock_ctx *ctx, const char *sql, long long *rows,
                        const long long *params, int n, const char *next_sql,
                        const long long *next_params, int next_n, int *next_sent)
{
    struct db *db = ctx->db;
    struct db_pipe_answer a[2];
    MYSQL_STMT *stmt, *commit, *next;
    int status;

    *next_sent = 0;
    if ((stmt = db_prepare_last(ctx, sql, n, &commit, &status)) == NULL)
        return status;
    if ((next = db_stmt(ctx, next_sql, &status)) == NULL) {
        db_rollback(ctx);
        return status;
    }
    assert((unsigned long)next_n == mysql_stmt_param_count(next) &&
           mysql_stmt_field_count(next) == 1);
    db_fault_lose_answer(ctx);
    if (db_pipe2_then(db->conn, stmt, params, n, commit, next, next_params, next_n,
                      (int)db_rw_timeout(db->cfg) * 1000, a, &db->rest) != 0)
        return db_pipe_lost(ctx, &a[0], 1);
    if (a[0].err || a[1].err) {
        /* The next statement ran too, in a transaction of its own: closing
         * the connection rolls back both, and the error is the answer. */
        status = a[1].err ? db_fail(ctx, a[1].err, a[1].msg, "commit")
                          : db_fail(ctx, a[0].err, a[0].msg, "execute");
        db->txn = 0;
        db_disconnect(db);
        return status;
    }
    db->pending = next;                     /* committed; the next one began */
    *next_sent = 1;
    if (rows)
        *rows = (long long)a[0].affected;
    return LL_OK;
}

int db_pending(const struct lock_ctx *ctx)
{
    return ctx->db->pending != NULL;
}

int db_exec_pending(struct lock_ctx *ctx, long long *rows, long long *value)
{
    struct db *db = ctx->db;
    struct db_pipe_answer a;
    MYSQL_STMT *stmt = db->pending;
    int found = 0;

    assert(stmt != NULL && db->txn);
    db->pending = NULL;
    if (db_pipe_row(db->conn, stmt, &db->rest, (int)db_rw_timeout(db->cfg) * 1000,
                    value, &found, &a) != 0)
        return db_pipe_lost(ctx, &a, 0);
    if (a.err)
        return db_fail(ctx, a.err, a.msg, "execute");
    if (rows)
        *rows = found;
    return LL_OK;
}

int db_exec_repeat(struct lock_ctx *ctx, const char *sql, const long long *params, int n,
                   int times, long long *rows, int *status)
{
    struct db *db = ctx->db;
    struct db_pipe_answer a[DB_PIPE_REPEAT_MAX];
    MYSQL_STMT *stmt;
    int i, rc;

    assert(!db->txn && times >= 1 && times <= DB_PIPE_REPEAT_MAX);
    if ((rc = db_autocommit(ctx)) != LL_OK || (stmt = db_prepare(ctx, sql, &rc)) == NULL)
        return rc;
    assert((unsigned long)n == mysql_stmt_param_count(stmt) && mysql_stmt_field_count(stmt) == 0);
    db_fault_lose_answer(ctx);
    if (db_pipe_repeat(db->conn, stmt, params, n, times, (int)db_rw_timeout(db->cfg) * 1000,
                       a) != 0)
        return db_pipe_lost(ctx, &a[0], 1);
    for (i = 0; i < times; i++) {
        rows[i] = (long long)a[i].affected;
        status[i] = a[i].err ? db_fail(ctx, a[i].err, a[i].msg, "execute") : LL_OK;
    }
    return LL_OK;
}

int db_exec_query(struct lock_ctx *ctx, const char *sql, long long *rows,
                  const long long *params, int n, const char *query_sql,
                  const long long *qparams, int m, long long *values, long long *found)
{
    struct db *db = ctx->db;
    struct db_pipe_answer a[2];
    MYSQL_STMT *stmt, *query = NULL;
    long long self;
    int status, got = 0, rc, killed = ctx->lose_answer == 2;

    assert(!db->txn);
    if ((status = db_autocommit(ctx)) != LL_OK)
        return status;
    stmt = db_prepare(ctx, sql, &status);
    if (stmt != NULL)
        query = db_stmt(ctx, killed ? sql_kill_self : query_sql, &status);
    if (query == NULL)
        return status;
    if (killed) {
        self = (long long)mysql_thread_id(db->conn);
        qparams = &self;
        m = 1;
    }
    assert((unsigned long)n == mysql_stmt_param_count(stmt) && mysql_stmt_field_count(stmt) == 0);
    assert((unsigned long)m == mysql_stmt_param_count(query) &&
           mysql_stmt_field_count(query) <= DB_PIPE_COLS);
    if (!killed)
        db_fault_lose_answer(ctx);
    rc = db_pipe_exec_query(db->conn, stmt, params, n, query, qparams, m,
                            (int)db_rw_timeout(db->cfg) * 1000, a, values, &got);
    if (rc < 0)
        return db_pipe_lost(ctx, &a[0], 1);
    if (a[0].err) {
        status = db_fail(ctx, a[0].err, a[0].msg, "execute");
        if (rc > 0)                         /* the query's answer lost too */
            db_disconnect(db);
        return status;
    }
    if (rows)
        *rows = (long long)a[0].affected;
    *found = got;
    if (rc == 0 && a[1].err == 0)
        return LL_OK;
    /* The statement's OK came, its query failed (the server's error, or
     * its answer lost: the connection is then closed). What the statement
     * did stands: an UPDATE in autocommit that changed its row has sold,
     * whatever came of the query behind it. */
    status = rc > 0 ? db_pipe_lost(ctx, &a[1], 0) : db_fail(ctx, a[1].err, a[1].msg, "query");
    *found = 0;
    if (a[0].affected == 0)
        return status;
    ctx->err = 0;
    return LL_OK;
}
