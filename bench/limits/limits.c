/* limits.c — ll-limits: the physical limits the strategies are measured
 * against, on the same servers, from C, with no HTTP in between.
 *
 *     ll-limits [--seconds S] [--trials T] [--connections N] [--product CODE]
 *               [--only KEY[,KEY…]] [--mysql-host H] [--mysql-port N]
 *               [--mysql-user U] [--mysql-password P] [--mysql-db D]
 *               [--mysql-socket PATH] [--redis H:P[,…]] [--zk H:P[,…]]
 *               [--etcd H:P[,…]]
 *
 * Every option falls back to the LOCKLAB_* variable that bench/stack writes
 * to .run/stack.env (LOCKLAB_MYSQL_PORT, LOCKLAB_REDIS, LOCKLAB_ZK,
 * LOCKLAB_ETCD, …).
 * MariaDB is reached the way the stack's instances reach it: through
 * LOCKLAB_MYSQL_SOCKET when that is set, else host:port.
 *
 * What it measures, S seconds (default 3) each, under the keys of
 * bench/common/harness.h, is the protocol the strategies speak, from its
 * one definition (limits_protocol.h; the unit tests hold each entry
 * against its strategy's table), sent one of two ways:
 *   its texts  MariaDB's statements and redis-decr's script, sent on
 *              ll-limits' own connections (libmariadb, hiredis): the texts
 *              are the strategies' own; the binding, pipelining and retry
 *              around them are ll-limits', written beside each sale below
 *              as the strategy does them.
 *   its code   the Redis and ZooKeeper commands of serial_redis,
 *              serial_zk, redis_watch and serial_redis_stock: the
 *              product's own calls on its own clients, in this process on
 *              plain threads (core/wait.h), as limits_sync.c runs
 *              sync_run(). A command built from its arguments (SET NX
 *              PX, WATCH … EXEC, a create and a delete) would need its
 *              skeleton shared and each caller's arguments and pipelines
 *              kept in step by hand; the product's call shares all of it:
 *              the call is the definition, and no command of ll-limits'
 *              own is left to drift. What it costs the bound: the product's
 *              client waits for an answer in poll() where hiredis blocks in
 *              read(), one system call more a round trip, small beside the
 *              round trip itself; the servers see the same commands. The
 *              hold is timed where it was: from the lock's answer to the
 *              release's.
 *              serial_redis runs redis-lua's acquire and release; serial_zk
 *              zk-sequential's, whose release (one delete) is the family's
 *              shortest (zk-ephemeral's reads its node back first), so the
 *              hold still bounds every ZooKeeper strategy; redis_watch the
 *              Redis stock's read and write steps (store/redis_stock.h:
 *              rs_read with its WATCH, rs_write with DECRBY), as redis-
 *              watch's sell hook makes an attempt, without its gate and
 *              back-off (the strategy's tuning, not its protocol);
 *              serial_redis_stock redis-lock-stock's sell hook whole, its
 *              hold the one it times itself.
 * Each is measured the way locks/lock.h's table says (its method):
 *   plateau   the strategy's own statements, looped by N clients on the
 *             hot row, N = 1, 2, 3, 4, 6, 8 for S/12 seconds each (the
 *             sweep), then the best N --trials times (default 3) for S/2
 *             in all: the ceiling is the best of those trials. A hot row
 *             takes the most from a few clients (InnoDB makes row-lock
 *             waiters sleep and wake, and on two vCPUs two or three clients
 *             keep both CPUs from going idle), so no count is assumed.
 *   hold      one client runs the critical section back to back for S/T
 *             seconds, T times after a trial that warms the servers up and
 *             is not kept, and times each hold: from the lock's answer to
 *             the release's answer (hold_from()). A trial's ceiling is 1 ÷
 *             its median hold (a stall of the shared machine moves a mean,
 *             not a median); the ceiling is the best trial. No hand-off
 *             takes less than no time, so this bounds every strategy of the
 *             family, those whose waiters queue in advance too (zk-
 *             sequential's nodes, etcd's keys: their hand-off is short, not
 *             their hold); the loop's own rate is kept beside it.
 *   concurrent --connections clients (default 32), trials as a hold's.
 * The ceilings:
 *   mysql_update      concurrent: mysql-update's UPDATE db_stock SET count =
 *                     count - 1 WHERE id = ? AND count >= 1 — InnoDB at a
 *                     crowd.
 *   mysql_update_peak plateau of that UPDATE as mysql-update sends it:
 *                     64 in one write (db_pipe_repeat()), every answer
 *                     read, then the next 64.
 *   mysql_for_update  plateau of mysql-for-update's pipeline: autocommit
 *                     off, SELECT count … FOR UPDATE, then UPDATE … SET
 *                     count = ?, COMMIT and the next sale's SELECT … FOR
 *                     UPDATE in one write (db_pipe2_then()), the next
 *                     SELECT's answer the next sale's read.
 *   mysql_share_mode  plateau of SELECT … LOCK IN SHARE MODE, UPDATE,
 *                     COMMIT; a deadlock (1213) is rolled back and run again.
 *   mysql_optimistic  plateau of mysql-optimistic's: SELECT count, version,
 *                     then UPDATE … WHERE version = ? with the SELECT behind
 *                     it in one write; a lost race retries with that read
 *                     (OPT_EAGER times, then reads afresh).
 *   mysql_optimistic_recursive plateau of SELECT count, version; UPDATE …
 *                     WHERE version = ?; again at once on a lost race.
 *   mysql_update_noindex plateau of UPDATE … WHERE sku = ? (no index: every
 *                     row it scans stays locked) and COMMIT.
 *   serial_mysql      hold: SELECT count, UPDATE count = read − 1
 *                     (autocommit) — the section inside every lock.
 *   serial_redis      hold: redis-lua's acquire (SET lock:ll-limits token
 *                     NX PX lease), then the SELECT + UPDATE and its release
 *                     (EVALSHA of the compare-and-delete script).
 *   serial_zk         hold: zk-sequential's acquire (create(EPHEMERAL_
 *                     SEQUENTIAL), getChildren), then the SELECT + UPDATE
 *                     and its release (delete), one session.
 *   serial_etcd       hold: concurrency.Mutex's transaction (put our key
 *                     under a lease, range the owner), then the SELECT +
 *                     UPDATE and delete — over etcd's JSON gateway, as the
 *                     etcd strategy speaks it (clients/etcd.c).
 *   redis_decr        concurrent: EVALSHA of redis-decr's own script for one
 *                     purchase (DECRBY, INCRBY, XADD) on the scratch
 *                     product's keys {stock:ll-limits}…: what Redis takes of
 *                     the seckill sale, one call a sale, no MariaDB.
 *   redis_watch       plateau of redis-watch's attempt (its read step: WATCH,
 *                     MGET …; its write step: MULTI DECRBY INCRBY XADD
 *                     EXEC); only the EXECs that committed count.
 *   serial_redis_stock hold: redis-lock-stock's sale (redis-lua's lock, the
 *                     read step, MULTI SET INCRBY XADD EXEC, the release).
 *   sync_*            the synchronizers' (limits_sync.c): each primitive's
 *                     bench operation from one client, in this process —
 *                     only when --only names them, or says "sync".
 *
 * The row. It works on product --product (default 1002, not the 1001 the
 * comparison sells) in warehouse 001: it sets its count to 10^9 first so
 * that nothing runs out, and puts the old count back at the end. The
 * Redis and ZooKeeper sides work on a scratch product, "ll-limits", that
 * no sale touches: its lock lock:ll-limits (/locklab/seq/ll-limits), and
 * its Redis stock {stock:ll-limits}… of 10^9 units, loaded for the run and
 * deleted after it, which no consumer reads (it is not in locklab:stocks).
 *
 * Output: one JSON object on stdout,
 *     {"seconds":3,"connections":32,"product":"1002",
 *      "versions":{"mariadb":"…","redis":"…"},
 *      "ceilings":{"mysql_update":{"method":"concurrent","rate":…,"ops":…,
 *                  "seconds":…,"connections":32,"what":"…","trials":[…],
 *                  "spread":…}, …}}
 * where spread is (best − slowest) ÷ best over the trials; a plateau adds
 * "sweep" ([{"connections":N,"rate":…}…]) and its best N as "connections",
 * a hold "hold_us" (the best trial's median) and "loop_rate" (its loop's
 * own sales per second).
 * A ceiling whose backend cannot be reached has "error" instead of "rate";
 * one whose trials failed (the warm-up included) lists their errors under
 * "failed_trials" and ran them again (at most T more runs): it has a rate
 * unless none succeeded. A trial that failed after its backend had answered
 * (a ZooKeeper quorum lost, a server restarted) begins an outage, which
 * costs one rerun, not T: for RECOVER_S seconds after it, a rerun that
 * fails, reaching the backend or not, is tried again without counting.
 * The product's clients (the runs above) ride out a loss shorter than
 * their own waits, as the server does (ZooKeeper's: a session timeout, or
 * the call's deadline): the trial goes on, one hold of it long, its median
 * unmoved; a longer one fails the trial.
 * --progress says on stderr when each trial starts measuring
 * ("ll-limits: KEY: trial N of T: measuring", "warm-up" for the first),
 * which a test waits for to break a trial in its middle, and when one
 * failed ("… trial N of T: failed: why"), which it waits for to end the
 * outage.
 * Exit status 0 when it ran (even with errors in it), 2 on bad usage.
 */
#ifndef _GNU_SOURCE            /* clock_gettime, nanosleep, pthread barriers */
#define _GNU_SOURCE
#endif
#include "../common/harness.h"
#include "limits_protocol.h"
#include "limits_sync.h"
#include "../../clients/db_pipe.h"
#include "../../clients/etcd.h"
#include "../../clients/redis.h"
#include "../../core/config.h"
#include "../../core/util.h"
#include "../../locks/lock.h"
#include "../../store/redis_stock.h"
#include "../../store/stock.h"

#include <assert.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS   256
#define ERR_LEN     200
#define ROW_FILL    1000000000LL
#define ETCD_PREFIX "/locklab-limits/etcd/"
#define RECOVER_S   90      /* an outage's reruns wait this long: bench/stack's bound for a server to answer */

/* A statement or script of the strategies, as they send it
 * (limits_protocol.h): SENT(FOR_UPDATE) … */
#define SENT(t)     (limits_texts[LIMITS_##t].text)

/* ---------------------------------------------------------------- options */

struct opts {
    const char *mysql_host, *mysql_user, *mysql_password, *mysql_db;
    const char *mysql_socket;   /* NULL or "": TCP to host:port */
    int         mysql_port;
    char        redis_host[128];
    int         redis_port;
    const char *zk;
    const char *etcd;
    const char *product;
    const char *only;
    double      seconds;
    int         connections;
    int         trials;
    int         progress;       /* --progress: trial starts on stderr */
};

static const char usage[] =
"usage: ll-limits [--seconds S] [--trials T] [--connections N] [--product CODE]\n"
"                 [--only KEY,...] [--progress]\n"
"                 [--mysql-host H] [--mysql-port N] [--mysql-user U]\n"
"                 [--mysql-password P] [--mysql-db D] [--mysql-socket PATH]\n"
"                 [--redis H:P] [--zk H:P,...] [--etcd H:P,...]\n"
"keys: mysql_update mysql_update_peak mysql_for_update mysql_share_mode\n"
"      mysql_optimistic mysql_optimistic_recursive mysql_update_noindex serial_mysql\n"
"      serial_redis serial_zk serial_etcd redis_decr redis_watch serial_redis_stock;\n"
"      sync (every synchronizer's), sync_<backend>_<primitive>\n";

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static int set_redis(struct opts *o, const char *list)
{
    const char *colon = strchr(list, ':'), *comma = strchr(list, ',');
    size_t hlen;

    if (colon == NULL || (comma && comma < colon))
        return -1;
    hlen = (size_t)(colon - list);
    if (hlen == 0 || hlen >= sizeof o->redis_host)
        return -1;
    memcpy(o->redis_host, list, hlen);
    o->redis_host[hlen] = '\0';
    o->redis_port = atoi(colon + 1);         /* the first server is enough */
    return o->redis_port > 0 && o->redis_port < 65536 ? 0 : -1;
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
    int i;

    o->mysql_host = env_or("LOCKLAB_MYSQL_HOST", "127.0.0.1");
    o->mysql_port = atoi(env_or("LOCKLAB_MYSQL_PORT", "3306"));
    o->mysql_user = env_or("LOCKLAB_MYSQL_USER", "locklab");
    o->mysql_password = env_or("LOCKLAB_MYSQL_PASSWORD", "locklab");
    o->mysql_db = env_or("LOCKLAB_MYSQL_DB", "locklab");
    o->mysql_socket = env_or("LOCKLAB_MYSQL_SOCKET", "");
    o->zk = env_or("LOCKLAB_ZK", "127.0.0.1:2181");
    o->etcd = env_or("LOCKLAB_ETCD", "127.0.0.1:2379");
    o->product = "1002";
    o->only = NULL;
    o->seconds = 3.0;
    o->connections = 32;
    o->trials = 3;
    if (set_redis(o, env_or("LOCKLAB_REDIS", "127.0.0.1:6379")) != 0)
        return -1;
    o->progress = 0;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--progress")) {
            o->progress = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help") || v == NULL)
            return -1;
        i++;
        if (!strcmp(a, "--seconds"))               o->seconds = atof(v);
        else if (!strcmp(a, "--connections"))      o->connections = atoi(v);
        else if (!strcmp(a, "--trials"))           o->trials = atoi(v);
        else if (!strcmp(a, "--product"))          o->product = v;
        else if (!strcmp(a, "--only"))             o->only = v;
        else if (!strcmp(a, "--mysql-host"))       o->mysql_host = v;
        else if (!strcmp(a, "--mysql-port"))       o->mysql_port = atoi(v);
        else if (!strcmp(a, "--mysql-user"))       o->mysql_user = v;
        else if (!strcmp(a, "--mysql-password"))   o->mysql_password = v;
        else if (!strcmp(a, "--mysql-db"))         o->mysql_db = v;
        else if (!strcmp(a, "--mysql-socket"))     o->mysql_socket = v;
        else if (!strcmp(a, "--zk"))               o->zk = v;
        else if (!strcmp(a, "--etcd"))             o->etcd = v;
        else if (!strcmp(a, "--redis")) {
            if (set_redis(o, v) != 0)
                return -1;
        } else
            return -1;
    }
    if (o->seconds <= 0 || o->seconds > 600 || o->connections < 1 ||
        o->connections > MAX_CONNS || o->trials < 1 || o->trials > 100 ||
        o->mysql_port <= 0 || o->mysql_port > 65535)
        return -1;
    return 0;
}

static int wanted(const struct opts *o, const char *key)
{
    const char *p = o->only;
    size_t n = strlen(key);

    if (p == NULL)
        return 1;
    while ((p = strstr(p, key)) != NULL) {
        if ((p == o->only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
        p += n;
    }
    return 0;
}

/* ---------------------------------------------------------------- results */

struct ceiling {
    long long ops;
    double    seconds;
    int       connections;
    double    hold_us;                       /* a hold ceiling's median hold, or 0 */
    char      err[ERR_LEN];
    int       reached;                       /* its backend answered (a session) */
    json_t   *trials;                        /* every trial's rate, or NULL */
    json_t   *failed;                        /* failed later trials' errors, or NULL */
    json_t   *sweep;                         /* a plateau's rate at each client count */
};

static void set_err(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_err(char *err, const char *fmt, ...)
{
    va_list ap;
    if (err[0])
        return;                              /* the first failure tells most */
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What a trial lets through: a hold ceiling 1 ÷ its median hold, any
 * other its sales over its time. */
static double ceiling_rate(const struct ceiling *c)
{
    return c->hold_us > 0 ? 1e6 / c->hold_us : harness_rate(c->ops, c->seconds);
}

static json_t *ceiling_json(const char *key, const struct ceiling *c)
{
    json_t *o = json_pack("{s:s,s:I,s:f,s:i,s:s}", "method", harness_ceiling_method(key),
                          "ops", (json_int_t)c->ops, "seconds", c->seconds,
                          "connections", c->connections, "what", harness_ceiling_text(key));
    double rates[64];
    size_t i, n = json_array_size(c->trials);

    if (c->err[0])
        json_object_set_new(o, "error", json_string(c->err));
    else
        json_object_set_new(o, "rate", json_real(ceiling_rate(c)));
    if (c->hold_us > 0 && !c->err[0]) {
        json_object_set_new(o, "hold_us", json_real(c->hold_us));
        json_object_set_new(o, "loop_rate", json_real(harness_rate(c->ops, c->seconds)));
    }
    if (c->trials) {
        for (i = 0; i < n && i < sizeof rates / sizeof rates[0]; i++)
            rates[i] = json_number_value(json_array_get(c->trials, i));
        json_object_set_new(o, "trials", c->trials);
        if (n > 0)
            json_object_set_new(o, "spread", json_real(harness_spread(rates, i)));
    }
    if (c->sweep)
        json_object_set_new(o, "sweep", c->sweep);
    if (c->failed)
        json_object_set_new(o, "failed_trials", c->failed);
    return o;
}

/* ---------------------------------------------------------------- MariaDB */

/* One connection and its prepared statements, bound once to its fields. */
struct db {
    MYSQL      *conn;
    MYSQL_STMT *select, *select_fu, *select_sm, *select_v, *write, *write_v, *decrement,
               *noindex, *commit;
    long long   id, value, read, version, one;
    char        sku[32];                /* the product's code: db_stock.sku */
    char        warehouse[8];           /* its stock_code: STOCK_WAREHOUSE  */
    unsigned long sku_len, warehouse_len;
    MYSQL_BIND  b_id, b_write[2], b_write_v[3], b_read, b_read_v[2], b_noindex[4];
    int         manual;         /* autocommit turned off */
    int         held;           /* FOR UPDATE: the row is ours, its count in read */
    struct db_pipe_buf rest;    /* what came of the next SELECT's answer */
    double      got;            /* when the lock's answer came (the hold) */
};

static MYSQL_STMT *prepare(struct db *d, const char *sql, MYSQL_BIND *params,
                           MYSQL_BIND *result, char *err)
{
    MYSQL_STMT *st = mysql_stmt_init(d->conn);

    if (st == NULL || mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) != 0 ||
        mysql_stmt_bind_param(st, params) != 0 ||
        (result && mysql_stmt_bind_result(st, result) != 0)) {
        set_err(err, "mysql: prepare '%.40s…': %s", sql,
                st ? mysql_stmt_error(st) : mysql_error(d->conn));
        if (st)
            mysql_stmt_close(st);
        return NULL;
    }
    return st;
}

static void bind_ll(MYSQL_BIND *b, long long *v)
{
    memset(b, 0, sizeof *b);
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = v;
}

static void db_close(struct db *d)
{
    MYSQL_STMT *all[] = { d->select, d->select_fu, d->select_sm, d->select_v, d->write,
                          d->write_v, d->decrement, d->noindex, d->commit };
    size_t i;

    for (i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            mysql_stmt_close(all[i]);
    if (d->conn)
        mysql_close(d->conn);
    memset(d, 0, sizeof *d);
}

/* The statements of every MariaDB measurement: each strategy's own. */
static int db_prepare(struct db *d, char *err)
{
    bind_ll(&d->b_id, &d->id);
    bind_ll(&d->b_write[0], &d->value);
    bind_ll(&d->b_write[1], &d->id);
    bind_ll(&d->b_write_v[0], &d->value);
    bind_ll(&d->b_write_v[1], &d->id);
    bind_ll(&d->b_write_v[2], &d->version);
    bind_ll(&d->b_read, &d->read);
    bind_ll(&d->b_read_v[0], &d->read);
    bind_ll(&d->b_read_v[1], &d->version);
    /* mysql-update-noindex's: count - qty WHERE sku = ? AND stock_code = ?
     * AND count >= qty, for one unit of the product in its warehouse. */
    d->one = 1;
    snprintf(d->warehouse, sizeof d->warehouse, "%s", STOCK_WAREHOUSE);
    d->warehouse_len = strlen(d->warehouse);
    bind_ll(&d->b_noindex[0], &d->one);
    memset(&d->b_noindex[1], 0, 2 * sizeof d->b_noindex[1]);
    d->b_noindex[1].buffer_type = MYSQL_TYPE_STRING;
    d->b_noindex[1].buffer = d->sku;
    d->b_noindex[1].buffer_length = sizeof d->sku;
    d->b_noindex[1].length = &d->sku_len;
    d->b_noindex[2].buffer_type = MYSQL_TYPE_STRING;
    d->b_noindex[2].buffer = d->warehouse;
    d->b_noindex[2].buffer_length = sizeof d->warehouse;
    d->b_noindex[2].length = &d->warehouse_len;
    bind_ll(&d->b_noindex[3], &d->one);
    d->select = prepare(d, SENT(READ), &d->b_id, &d->b_read, err);
    d->select_fu = prepare(d, SENT(FOR_UPDATE), &d->b_id, &d->b_read, err);
    d->select_sm = prepare(d, SENT(SHARE_MODE), &d->b_id, &d->b_read, err);
    d->select_v = prepare(d, SENT(OPT_READ), &d->b_id, d->b_read_v, err);
    d->write = prepare(d, SENT(WRITE), d->b_write, NULL, err);
    d->write_v = prepare(d, SENT(OPT_WRITE), d->b_write_v, NULL, err);
    d->decrement = prepare(d, SENT(SELL_ONE), &d->b_id, NULL, err);
    d->noindex = prepare(d, SENT(NOINDEX), d->b_noindex, NULL, err);
    d->commit = prepare(d, "COMMIT", NULL, NULL, err);
    return d->select && d->select_fu && d->select_sm && d->select_v && d->write &&
           d->write_v && d->decrement && d->noindex && d->commit ? 0 : -1;
}

static int db_open(struct db *d, const struct opts *o, long long id, char *err)
{
    unsigned timeout = 10;

    memset(d, 0, sizeof *d);
    d->id = id;
    snprintf(d->sku, sizeof d->sku, "%s", o->product);
    d->sku_len = strlen(d->sku);
    d->conn = mysql_init(NULL);
    if (d->conn == NULL) {
        set_err(err, "mysql: out of memory");
        return -1;
    }
    mysql_options(d->conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (mysql_real_connect(d->conn, *o->mysql_socket ? "localhost" : o->mysql_host,
                           o->mysql_user, o->mysql_password, o->mysql_db,
                           (unsigned)o->mysql_port, *o->mysql_socket ? o->mysql_socket : NULL,
                           0) == NULL) {
        set_err(err, "mysql %s:%d%s%s: %s", o->mysql_host, o->mysql_port,
                *o->mysql_socket ? " via " : "", o->mysql_socket, mysql_error(d->conn));
        db_close(d);
        return -1;
    }
    if (db_prepare(d, err) != 0) {
        db_close(d);
        return -1;
    }
    return 0;
}

/* Runs st (and fetches its one row): 0, or the server's error number
 * (CR_NO_DATA when the row is not there). No error is recorded. */
static unsigned stmt_run(struct db *d, MYSQL_STMT *st)
{
    (void)d;
    if (mysql_stmt_execute(st) != 0)
        return mysql_stmt_errno(st);
    if (mysql_stmt_field_count(st) > 0) {
        int rc = mysql_stmt_fetch(st);
        mysql_stmt_free_result(st);
        if (rc != 0)
            return CR_NO_DATA;
    }
    return 0;
}

static int run_stmt(struct db *d, MYSQL_STMT *st, char *err)
{
    unsigned e = stmt_run(d, st);

    if (e == CR_NO_DATA)
        set_err(err, "mysql: db_stock row %lld not found", d->id);
    else if (e != 0)
        set_err(err, "mysql: %s", mysql_stmt_error(st));
    return e == 0 ? 0 : -1;
}

/* Autocommit off, once, as the server's connections do (clients/db.c):
 * the first statement then opens the transaction, BEGIN costs no round
 * trip, and COMMIT ends it. */
static int manual_commit(struct db *d, char *err)
{
    if (!d->manual && mysql_autocommit(d->conn, 0) != 0) {
        set_err(err, "mysql: autocommit off: %s", mysql_error(d->conn));
        return -1;
    }
    d->manual = 1;
    return 0;
}

static int sale_plain(struct db *d, char *err)         /* SELECT + UPDATE */
{
    if (run_stmt(d, d->select, err) != 0)
        return -1;
    d->value = d->read - 1;
    return run_stmt(d, d->write, err);
}

/* The failure of n pipelined answers a (rc: what db_pipe_* returned; a
 * failed call's reason is in a[0]) into err, or the missing row's; -1. */
static int pipe_failed(const struct db *d, int rc, const struct db_pipe_answer *a, int n,
                       const char *what, char *err)
{
    int i;

    for (i = 0; i < n; i++)
        if (rc != 0 || a[i].err) {
            set_err(err, "mysql: %s: %s (%u)", what, a[i].msg, a[i].err);
            return -1;
        }
    set_err(err, "mysql: %s: db_stock row %lld not found", what, d->id);
    return -1;
}

/* As mysql-for-update sells when a purchase waits behind it (locks/
 * mysql_for_update.c, db_exec_commit_next()): with the row held and its
 * count read, the UPDATE, the COMMIT and the next sale's SELECT … FOR
 * UPDATE leave in one write; the next SELECT's answer, when the row is
 * ours again, is the next sale's read. The first sale of a connection
 * reads on its own. A connection closed holding the row rolls back. */
static int sale_for_update(struct db *d, char *err)
{
    long long params[2], row[DB_PIPE_COLS];
    struct db_pipe_answer a[2];
    int rc, found = 0;

    if (manual_commit(d, err) != 0)
        return -1;
    if (!d->held && run_stmt(d, d->select_fu, err) != 0) {
        mysql_rollback(d->conn);
        return -1;
    }
    d->held = 0;
    params[0] = d->read - 1;
    params[1] = d->id;
    rc = db_pipe2_then(d->conn, d->write, params, 2, d->commit, d->select_fu, &d->id, 1,
                       30000, a, &d->rest);
    if (rc != 0 || a[0].err || a[1].err)
        return pipe_failed(d, rc, a, 2, "UPDATE + COMMIT + SELECT … FOR UPDATE", err);
    rc = db_pipe_row(d->conn, d->select_fu, &d->rest, 30000, row, &found, &a[0]);
    if (rc != 0 || a[0].err || !found)
        return pipe_failed(d, rc, a, 1, "the next SELECT … FOR UPDATE", err);
    d->read = row[0];
    d->held = 1;
    return 0;
}

/* As mysql-share-mode sells (locks/mysql_share_mode.c): a shared lock for
 * the read, the UPDATE, the COMMIT. Two readers then wait for each other's
 * shared lock: InnoDB rolls one back (1213), which reads again at once. */
static int sale_share_mode(struct db *d, char *err)
{
    unsigned e;

    if (manual_commit(d, err) != 0)
        return -1;
    for (;;) {
        if ((e = stmt_run(d, d->select_sm)) == 0) {
            d->value = d->read - 1;
            if ((e = stmt_run(d, d->write)) == 0 && (e = stmt_run(d, d->commit)) == 0)
                return 0;
        }
        mysql_rollback(d->conn);
        if (e != ER_LOCK_DEADLOCK) {
            set_err(err, "mysql: SELECT … LOCK IN SHARE MODE, UPDATE, COMMIT: error %u", e);
            return -1;
        }
    }
}

/* As mysql-optimistic sells (locks/mysql_optimistic.c): read count and
 * version, then the conditional UPDATE with the next read behind it in the
 * same write; a lost race retries at once with that read, the first
 * OPT_EAGER times, then reads afresh (where the strategy also backs off). */
#define OPT_EAGER 3
static int sale_optimistic(struct db *d, char *err)
{
    long long params[3], row[DB_PIPE_COLS];
    struct db_pipe_answer a[2];
    int rc, found = 0, lost = 0;

    if (run_stmt(d, d->select_v, err) != 0)
        return -1;
    for (;;) {
        params[0] = d->read - 1;
        params[1] = d->id;
        params[2] = d->version;
        rc = db_pipe_exec_query(d->conn, d->write_v, params, 3, d->select_v, &d->id, 1,
                                30000, a, row, &found);
        if (rc != 0 || a[0].err || a[1].err || !found)
            return pipe_failed(d, rc, a, 2, "UPDATE … WHERE version + SELECT", err);
        if (a[0].affected == 1)
            return 0;
        if (++lost < OPT_EAGER) {
            d->read = row[0];
            d->version = row[1];
        } else if (run_stmt(d, d->select_v, err) != 0) {
            return -1;
        }
    }
}

/* As mysql-optimistic-recursive sells: read, conditional write, and on a
 * lost race all over again at once. */
static int sale_optimistic_recursive(struct db *d, char *err)
{
    for (;;) {
        if (run_stmt(d, d->select_v, err) != 0)
            return -1;
        d->value = d->read - 1;
        if (run_stmt(d, d->write_v, err) != 0)
            return -1;
        if (mysql_stmt_affected_rows(d->write_v) == 1)
            return 0;
    }
}

/* As mysql-update-noindex sells: its UPDATE scans db_stock by sku, which
 * has no index, and keeps every row it scanned locked until the COMMIT. */
static int sale_noindex(struct db *d, char *err)
{
    if (manual_commit(d, err) != 0)
        return -1;
    if (run_stmt(d, d->noindex, err) != 0 || run_stmt(d, d->commit, err) != 0) {
        mysql_rollback(d->conn);
        return -1;
    }
    return 0;
}

static int sale_decrement(struct db *d, char *err)
{
    return run_stmt(d, d->decrement, err);
}

/* As mysql-update sells when purchases wait in its row queue (locks/
 * mysql_queue.c, db_exec_repeat()): the UPDATE PIPE_SALES times in one
 * write, each autocommitted, every answer read. */
#define PIPE_SALES DB_PIPE_REPEAT_MAX
static int sale_decrement_pipe(struct db *d, char *err)
{
    struct db_pipe_answer a[PIPE_SALES];
    int rc = db_pipe_repeat(d->conn, d->decrement, &d->id, 1, PIPE_SALES, 30000, a), i;

    for (i = 0; i < PIPE_SALES; i++)
        if (rc != 0 || a[i].err || a[i].affected != 1)
            return pipe_failed(d, rc, rc != 0 ? a : a + i, 1, "the pipelined UPDATEs", err);
    return 0;
}

/* ---------------------------------------------------------------- concurrency */

/* N workers each open a connection, meet at the barrier, then sell until
 * the main thread raises `stop` S seconds later: connect time is not
 * counted, and every worker runs for the same interval. A worker sells on
 * MariaDB (worker_main: sale on row id) or on Redis (rworker_main: step,
 * with script loaded first). */
struct rconn;
struct race {
    const struct opts *o;
    long long          id;
    int              (*sale)(struct db *d, char *err);
    int                sales;       /* a sale() call sells this many */
    int              (*step)(struct rconn *rc, char *err);
    const char        *script;      /* hiredis with this script, or the product's client */
    enum limits_run    run;         /* ... running this strategy's steps */
    pthread_barrier_t  start;
    atomic_int         stop;
};

struct worker {
    pthread_t    tid;
    struct race *race;
    int          slot;          /* its number: the product's worker slot */
    long long    ops;
    char         err[ERR_LEN];
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct race *r = w->race;
    struct db d;
    int ok = db_open(&d, r->o, r->id, w->err) == 0;

    pthread_barrier_wait(&r->start);
    if (!ok)
        return NULL;
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed) && r->sale(&d, w->err) == 0)
        w->ops += r->sales;
    db_close(&d);
    return NULL;
}

/* Run o->connections workers of `main` in race r for o->seconds; their
 * sales and first error into c. */
static void race_run(const struct opts *o, struct race *r, void *(*main)(void *),
                     struct ceiling *c)
{
    struct worker *w = calloc((size_t)o->connections, sizeof *w);
    struct timespec nap;
    double t0;
    int i;

    if (w == NULL)
        abort();                              /* out of memory: nothing to save */
    c->connections = o->connections;
    r->o = o;
    atomic_init(&r->stop, 0);
    pthread_barrier_init(&r->start, NULL, (unsigned)o->connections + 1);
    for (i = 0; i < o->connections; i++) {
        w[i].race = r;
        w[i].slot = i;
        if (pthread_create(&w[i].tid, NULL, main, &w[i]) != 0) {
            fprintf(stderr, "ll-limits: cannot start thread %d\n", i);
            abort();                          /* the barrier would wait forever */
        }
    }
    pthread_barrier_wait(&r->start);
    t0 = now_s();
    nap.tv_sec = (time_t)o->seconds;
    nap.tv_nsec = (long)((o->seconds - (double)nap.tv_sec) * 1e9);
    while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
        ;
    atomic_store(&r->stop, 1);
    for (i = 0; i < o->connections; i++)
        pthread_join(w[i].tid, NULL);
    c->seconds = now_s() - t0;
    for (i = 0; i < o->connections; i++) {
        c->ops += w[i].ops;
        if (w[i].err[0])
            set_err(c->err, "%s", w[i].err);
    }
    pthread_barrier_destroy(&r->start);
    free(w);
}

static void measure_concurrent(const struct opts *o, long long id,
                               int (*sale)(struct db *, char *), struct ceiling *c)
{
    struct race r = { .id = id, .sale = sale, .sales = sale == sale_decrement_pipe ? PIPE_SALES : 1 };

    memset(c, 0, sizeof *c);
    race_run(o, &r, worker_main, c);
}

/* ---------------------------------------------------------------- serial */

/* A hold ceiling: one client runs step back to back, and each sale's hold
 * is timed from the lock's answer (d->got: the step's start, unless the
 * step's lock answers later and says so with hold_from()) to the end of
 * the step, the release's answer. The trial's ceiling is 1 ÷ the median
 * hold (harness_hold_rate). */
struct holds {
    double *v;
    size_t  n, cap;
};

static void holds_add(struct holds *h, double v)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 4096;
        h->v = realloc(h->v, h->cap * sizeof *h->v);
        if (h->v == NULL)
            abort();                          /* out of memory: nothing to save */
    }
    h->v[h->n++] = v;
}

/* The lock is ours from now: its answer just came. */
static void hold_from(struct db *d)
{
    d->got = now_s();
}

/* --progress: the trial measure_best runs now, said when its measurement
 * starts (in measure_serial once the session is up, else in measure_best). */
static struct { const char *key; int trial, trials, said; } progress;

static void progress_print(const char *what)
{
    if (progress.trial < 0)
        fprintf(stderr, "ll-limits: %s: warm-up: %s\n", progress.key, what);
    else
        fprintf(stderr, "ll-limits: %s: trial %d of %d: %s\n", progress.key,
                progress.trial + 1, progress.trials, what);
}

static void progress_say(void)
{
    if (progress.key == NULL || progress.said)
        return;
    progress.said = 1;
    progress_print("measuring");
}

/* ... and when a trial failed (not the uncounted reruns of an outage). */
static void progress_failed(const char *err)
{
    char what[ERR_LEN + 16];

    if (progress.key == NULL)
        return;
    snprintf(what, sizeof what, "failed: %s", err);
    progress_print(what);
}

/* c->reached is set by the caller (the session it opened) and survives. */
static void measure_serial(const struct opts *o, struct db *d,
                           int (*step)(void *arg, struct db *d, char *err), void *arg,
                           struct ceiling *c)
{
    double t0 = now_s(), until = t0 + o->seconds, t = t0, rate;
    struct holds h = { NULL, 0, 0 };
    int reached = c->reached;

    memset(c, 0, sizeof *c);
    c->reached = reached;
    c->connections = 1;
    progress_say();
    while (t < until) {
        d->got = t;
        if (step(arg, d, c->err) != 0)
            break;
        t = now_s();
        holds_add(&h, t - d->got);
        c->ops++;
    }
    c->seconds = now_s() - t0;
    rate = harness_hold_rate(h.v, h.n);
    c->hold_us = rate > 0 ? 1e6 / rate : 0;
    free(h.v);
}

static int step_mysql(void *arg, struct db *d, char *err)
{
    (void)arg;
    return sale_plain(d, err);
}

/* ---------------------------------------------------------------- the product's code */

/* The ceilings of limits_protocol.h's runs call the product's own code on
 * its own clients, on plain threads (core/wait.h: every wait blocks the
 * thread, as hiredis and ZooKeeper's synchronous calls did): the product's
 * configuration names the stack's servers (main() fills it), and each
 * client is a worker slot of its own, a struct lock_ctx. */
static struct config product_cfg;

/* The scratch product of those ceilings, and the key of their locks:
 * no sale of the comparison touches it, and no consumer reads its stream
 * (it is not in locklab:stocks). Its Redis stock's keys are the
 * product's own names (rs_keys()). */
static const struct product scratch = { 0, "ll-limits", "lock:ll-limits" };
static struct rs_keys scratch_keys;

static void product_config(const struct opts *o)
{
    snprintf(product_cfg.redis[0].host, sizeof product_cfg.redis[0].host, "%.*s",
             (int)sizeof product_cfg.redis[0].host - 1, o->redis_host);
    product_cfg.redis[0].port = o->redis_port;
    product_cfg.nredis = 1;
    product_cfg.zk = o->zk;
    product_cfg.threads = MAX_CONNS;
    product_cfg.lock_wait_ms = 10000;
    product_cfg.max_wait_ms = 30000;
    product_cfg.lease_ms = 30000;
    product_cfg.retry_ms = 5;
    product_cfg.name = "ll-limits";
    product_cfg.lock = "none";
    uuid4(product_cfg.instance_id);
    rs_keys(&scratch_keys, scratch.code, NULL);
}

/* The strategy a run of limits_protocol.h calls: found by its name. */
static const struct lock_ops *run_ops(enum limits_run run)
{
    const struct lock_ops *ops = lock_find(limits_runs[run].strategy);

    assert(ops != NULL);                /* tests/test_unit.c holds the table */
    return ops;
}

/* Slot `slot` running the strategy of `run`, for one purchase of a unit. */
static void product_ctx(struct lock_ctx *ctx, int slot, enum limits_run run)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->slot = slot;
    ctx->cfg = &product_cfg;
    ctx->ops = run_ops(run);
    ctx->strategy = ctx->ops->name;
    ctx->qty = 1;
}

/* Before a call: its deadline, no error left over. */
static void product_begin(struct lock_ctx *ctx)
{
    ctx->wait_ms = product_cfg.lock_wait_ms;
    ctx->deadline_ms = now_ms() + ctx->wait_ms;
    ctx->err = 0;
    ctx->errstr[0] = '\0';
}

/* The product's failure on ctx into err; -1. */
static int product_failed(const struct lock_ctx *ctx, const char *what, char *err)
{
    set_err(err, "%s: %s: %s (%s)", ctx->strategy, what,
            ctx->errstr[0] ? ctx->errstr : "failed", ll_status_name(ctx->err));
    return -1;
}

/* A lock ceiling: the strategy's acquire, the sale, its release. */
static int step_lock(void *arg, struct db *d, char *err)
{
    struct lock_ctx *ctx = arg;
    const char *key = scratch.key;

    product_begin(ctx);
    if (lock_acquire_by(ctx, ctx->ops, key) != LL_OK)
        return product_failed(ctx, "acquire", err);
    hold_from(d);
    if (sale_plain(d, err) != 0) {
        lock_release_by(ctx, ctx->ops, key);
        return -1;
    }
    if (lock_release_by(ctx, ctx->ops, key) != LL_OK)
        return product_failed(ctx, "release", err);
    return 0;
}

/* One client holding the lock of `run` around the sale, back to back. The
 * strategy's reset hook clears what a killed run left, and answering it is
 * the backend reached (a ZooKeeper session up): --progress says so. */
static void measure_lock(const struct opts *o, struct db *d, enum limits_run run,
                         struct ceiling *c)
{
    struct lock_ctx ctx;

    memset(c, 0, sizeof *c);
    product_ctx(&ctx, 0, run);
    product_begin(&ctx);
    if (lock_reset(&ctx, scratch.key) != LL_OK) {
        product_failed(&ctx, "reset", c->err);
    } else {
        c->reached = 1;
        measure_serial(o, d, step_lock, &ctx, c);
        product_begin(&ctx);
        lock_reset(&ctx, scratch.key);
    }
    lock_ctx_free(&ctx);
}

/* ---------------------------------------------------------------- the Redis stock */

/* What Redis alone takes of the Redis stock's sales (store/redis_stock.h),
 * on the scratch product: no MariaDB on the path, as none is on theirs
 * (the consumer applies the stream afterwards). */
struct rconn {
    redisContext   *c;              /* redis-decr's script: hiredis */
    char            sha[48];
    struct lock_ctx ctx;            /* redis-watch's steps: the product's client */
};

static redisContext *redis_open(const struct opts *o, char *err)
{
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout(o->redis_host, o->redis_port, tv);

    if (c == NULL || c->err) {
        set_err(err, "redis %s:%d: %s", o->redis_host, o->redis_port,
                c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* A reply of the expected type, or the error in err; the reply is freed. */
static int redis_ok(redisContext *c, redisReply *r, int type, const char *what, char *err)
{
    int ok = r && r->type == type;

    if (!ok)
        set_err(err, "redis: %s: %s", what, r ? (r->type == REDIS_REPLY_ERROR ? r->str :
                "unexpected reply") : c->errstr);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* The scratch stock loaded (`load`: 10^9 units, nothing sold, an empty
 * stream) or gone. */
static int redis_stock_fill(redisContext *c, int load, char *err)
{
    const struct rs_keys *k = &scratch_keys;
    redisReply *r = redisCommand(c, "DEL %s %s %s %s %s", k->stock, k->sold, k->sales,
                                 k->epoch, k->buyers);
    if (redis_ok(c, r, REDIS_REPLY_INTEGER, "DEL", err) != 0)
        return -1;
    if (!load)
        return 0;
    r = redisCommand(c, "SET %s %lld", k->stock, ROW_FILL);
    return redis_ok(c, r, REDIS_REPLY_STATUS, "SET", err);
}

/* The server's version, for the output. */
static void redis_version_of(const struct opts *o, char *version, size_t size)
{
    char err[ERR_LEN] = "";
    redisContext *c = redis_open(o, err);
    redisReply *r;
    char *v;

    if (c == NULL)
        return;
    r = redisCommand(c, "INFO server");
    if (r && r->type == REDIS_REPLY_STRING && (v = strstr(r->str, "redis_version:")))
        snprintf(version, size, "%.*s", (int)strcspn(v + 14, "\r\n"), v + 14);
    freeReplyObject(r);
    redisFree(c);
}

static int step_decr(struct rconn *rc, char *err)
{
    const struct rs_keys *k = &scratch_keys;
    redisReply *r = redisCommand(rc->c, "EVALSHA %s 6 %s %s %s %s %s %s ll-limits %s "
                                 "1 %s %s 0", rc->sha, k->stock, k->sold, k->sales, k->epoch,
                                 k->buyers, k->stock, scratch.code, "", "");
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
             r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2 &&
             !strcmp(r->element[0]->element[0]->str, "sold");

    if (!ok)
        return redis_ok(rc->c, r, -1, "the decrement script", err);
    freeReplyObject(r);
    return 0;
}

/* One sale as redis-watch makes it, with its steps (redis_watch.c): the
 * read with its WATCH, then the write, DECRBY; a lost race (EXEC nil) is
 * read and tried again at once. Only the EXECs that committed count. */
static int step_watch(struct rconn *rc, char *err)
{
    struct lock_ctx *ctx = &rc->ctx;
    struct rs_sale s;
    long long left;
    int committed = 0, done;

    product_begin(ctx);
    rs_sale_init(&s, ctx, &scratch, ctx->ops->name);
    while (!committed) {
        if (rs_read(ctx, &s, 1) != LL_OK || rs_precheck(ctx, &s, &done) != LL_OK || done ||
            rs_write(ctx, &s, 0, &committed, &left) != LL_OK)
            return product_failed(ctx, "WATCH, MULTI … EXEC", err);
    }
    return 0;
}

static int script_load(redisContext *c, const char *text, char *sha, char *err)
{
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", text);

    if (r == NULL || r->type != REDIS_REPLY_STRING)
        return redis_ok(c, r, REDIS_REPLY_STRING, "SCRIPT LOAD", err);
    snprintf(sha, 48, "%s", r->str);
    freeReplyObject(r);
    return 0;
}

/* A worker's connection, made before the race starts: hiredis with the
 * script loaded, or the product's client, connected. */
static int rconn_open(struct rconn *rc, const struct race *r, int slot, char *err)
{
    if (r->script != NULL)
        return (rc->c = redis_open(r->o, err)) != NULL &&
               script_load(rc->c, r->script, rc->sha, err) == 0 ? 0 : -1;
    product_ctx(&rc->ctx, slot, r->run);
    if (redis_connect(&rc->ctx, 0, 5000) != LL_OK)
        return product_failed(&rc->ctx, "connect", err);
    return 0;
}

static void *rworker_main(void *arg)
{
    struct worker *w = arg;
    struct race *r = w->race;
    struct rconn rc;
    int ok;

    memset(&rc, 0, sizeof rc);
    ok = rconn_open(&rc, r, w->slot, w->err) == 0;
    pthread_barrier_wait(&r->start);
    while (ok && !atomic_load_explicit(&r->stop, memory_order_relaxed) &&
           r->step(&rc, w->err) == 0)
        w->ops++;
    if (rc.c)
        redisFree(rc.c);
    lock_ctx_free(&rc.ctx);
    return NULL;
}

/* N clients each looping step: one thread and connection each. */
static void measure_redis_concurrent(const struct opts *o, int (*step)(struct rconn *, char *),
                                     const char *script, struct ceiling *c)
{
    struct race r = { .step = step, .script = script, .run = LIMITS_RUN_WATCH };
    redisContext *setup;

    memset(c, 0, sizeof *c);
    if ((setup = redis_open(o, c->err)) != NULL && redis_stock_fill(setup, 1, c->err) == 0) {
        race_run(o, &r, rworker_main, c);
        redis_stock_fill(setup, 0, c->err);   /* the stream's entries go */
    }
    if (setup)
        redisFree(setup);
}

/* One client: redis-lock-stock's sale, its sell hook whole, back to back;
 * the hold is the one it times itself (ctx->held_us: from its lock's
 * answer to its release's). */
static int step_redis_stock(void *arg, struct db *d, char *err)
{
    struct lock_ctx *ctx = arg;
    long long left;

    product_begin(ctx);
    if (lock_sell(ctx, &scratch, &left) != LL_OK)
        return product_failed(ctx, "sale", err);
    d->got = now_s() - (double)ctx->held_us / 1e6;
    return 0;
}

static void measure_redis_stock_serial(const struct opts *o, struct db *d, struct ceiling *c)
{
    struct lock_ctx ctx;
    redisContext *setup;

    memset(c, 0, sizeof *c);
    if ((setup = redis_open(o, c->err)) == NULL)
        return;
    product_ctx(&ctx, 0, LIMITS_RUN_LOCK_STOCK);
    product_begin(&ctx);
    if (redis_stock_fill(setup, 1, c->err) == 0 && lock_reset(&ctx, scratch.key) == LL_OK)
        measure_serial(o, d, step_redis_stock, &ctx, c);
    else
        product_failed(&ctx, "reset", c->err);
    redis_stock_fill(setup, 0, c->err);
    lock_ctx_free(&ctx);
    redisFree(setup);
}

/* etcd: the Mutex's transaction around the sale, delete after. */
struct etcd_serial {
    struct etcd_conn conn;
    long long        lease;
    char             key[ETCD_KEY_MAX];
};

static int step_etcd(void *arg, struct db *d, char *err)
{
    struct etcd_serial *e = arg;
    long long mine, owner;

    if (etcd_mutex_txn(&e->conn, ETCD_PREFIX, e->key, e->lease, &mine, &owner,
                       now_ms() + ETCD_CALL_MS) != ETCD_OK) {
        set_err(err, "etcd: txn %s: %s", e->key, e->conn.err);
        return -1;
    }
    if (owner != mine) {
        set_err(err, "etcd: %s is held by another key (revision %lld)", ETCD_PREFIX, owner);
        return -1;
    }
    hold_from(d);
    if (sale_plain(d, err) != 0)
        return -1;
    if (etcd_delete(&e->conn, e->key, 0, now_ms() + ETCD_CALL_MS) != ETCD_OK) {
        set_err(err, "etcd: delete %s: %s", e->key, e->conn.err);
        return -1;
    }
    return 0;
}

static void measure_etcd(const struct opts *o, struct db *d, struct ceiling *c)
{
    struct etcd_serial e;
    int ttl;

    memset(c, 0, sizeof *c);
    if (etcd_conn_init(&e.conn, o->etcd) != 0) {
        set_err(c->err, "etcd: '%s' is not host:port[,…]", o->etcd);
        return;
    }
    if (etcd_lease_grant(&e.conn, 10, &e.lease, &ttl, now_ms() + 10000) != ETCD_OK) {
        set_err(c->err, "etcd %s: lease grant: %s", o->etcd, e.conn.err);
    } else {
        c->reached = 1;
        snprintf(e.key, sizeof e.key, "%s%llx", ETCD_PREFIX, (unsigned long long)e.lease);
        etcd_delete(&e.conn, ETCD_PREFIX, 1, now_ms() + 5000);  /* a killed run's */
        measure_serial(o, d, step_etcd, &e, c);
        etcd_lease_revoke(&e.conn, e.lease, now_ms() + 5000);
    }
    etcd_conn_free(&e.conn);
}

/* ---------------------------------------------------------------- trials */

/* One run of the measurement `key`, o->seconds long. */
static void measure_once(const struct opts *o, const char *key, struct db *d, long long id,
                         struct ceiling *c)
{
    if (!strcmp(key, CEIL_MYSQL_UPDATE))
        measure_concurrent(o, id, sale_decrement, c);
    else if (!strcmp(key, CEIL_UPDATE_PEAK))
        measure_concurrent(o, id, sale_decrement_pipe, c);
    else if (!strcmp(key, CEIL_FOR_UPDATE))
        measure_concurrent(o, id, sale_for_update, c);
    else if (!strcmp(key, CEIL_SHARE_MODE))
        measure_concurrent(o, id, sale_share_mode, c);
    else if (!strcmp(key, CEIL_OPTIMISTIC))
        measure_concurrent(o, id, sale_optimistic, c);
    else if (!strcmp(key, CEIL_OPTIMISTIC_RECURSIVE))
        measure_concurrent(o, id, sale_optimistic_recursive, c);
    else if (!strcmp(key, CEIL_UPDATE_NOINDEX))
        measure_concurrent(o, id, sale_noindex, c);
    else if (!strcmp(key, CEIL_SERIAL_MYSQL))
        measure_serial(o, d, step_mysql, NULL, c);
    else if (!strcmp(key, CEIL_SERIAL_REDIS))
        measure_lock(o, d, LIMITS_RUN_LOCK_REDIS, c);
    else if (!strcmp(key, CEIL_REDIS_DECR))
        measure_redis_concurrent(o, step_decr, SENT(DECR), c);
    else if (!strcmp(key, CEIL_REDIS_WATCH))
        measure_redis_concurrent(o, step_watch, NULL, c);
    else if (!strcmp(key, CEIL_SERIAL_REDIS_STOCK))
        measure_redis_stock_serial(o, d, c);
    else if (!strcmp(key, CEIL_SERIAL_ETCD))
        measure_etcd(o, d, c);
    else
        measure_lock(o, d, LIMITS_RUN_LOCK_ZK, c);
}

/* Keep the faster of best and c. A trial that fails (a stall past a client
 * timeout, a ZooKeeper server still catching up after a restart) is noted
 * in `failed`; the caller runs it again. */
static void keep_best(struct ceiling *best, const struct ceiling *c, json_t *trials,
                      json_t *failed)
{
    if (c->err[0]) {
        json_array_append_new(failed, json_string(c->err));
        return;
    }
    json_array_append_new(trials, json_real(ceiling_rate(c)));
    if (best->seconds == 0 || ceiling_rate(c) > ceiling_rate(best))
        *best = *c;
}

/* A plateau's client counts (locks/lock.h): the most a hot row takes comes
 * from a few clients, since InnoDB makes waiters on a row lock sleep and
 * wake (and redis-watch's EXECs lose more, the more clients WATCH), while
 * on two vCPUs two or three clients keep both CPUs from going idle. */
static const int plateau_counts[] = { 1, 2, 3, 4, 6, 8 };
#define NPLATEAU ((int)(sizeof plateau_counts / sizeof plateau_counts[0]))

/* The plateau's first half: each client count for seconds/2/NPLATEAU; its
 * rate at each into best->sweep. Returns the best count. */
static int plateau_sweep(const struct opts *o, const char *key, struct db *d, long long id,
                         json_t *sweep, json_t *failed)
{
    struct opts one = *o;
    struct ceiling c;
    double top = 0;
    int k, at = 1;

    one.seconds = o->seconds / 2 / NPLATEAU;
    for (k = 0; k < NPLATEAU; k++) {
        one.connections = plateau_counts[k];
        measure_once(&one, key, d, id, &c);
        if (c.err[0]) {
            json_array_append_new(failed, json_string(c.err));
            continue;
        }
        json_array_append_new(sweep, json_pack("{s:i,s:f}", "connections", plateau_counts[k],
                                               "rate", ceiling_rate(&c)));
        if (ceiling_rate(&c) > top) {
            top = ceiling_rate(&c);
            at = plateau_counts[k];
        }
    }
    return at;
}

/* A ceiling is an upper bound, and on a shared machine a trial can only be
 * slowed down by the rest of it: each ceiling is the best of --trials runs.
 * A plateau (locks/lock.h) first sweeps the client counts for half its
 * time, then runs the best count --trials times in the other half; any
 * other ceiling runs --trials times seconds/trials after a trial that is
 * not kept (a server just started, ZooKeeper's JVMs above all, is slower
 * than it will be). The trials' spread goes into the JSON beside them. */
static void measure_best(const struct opts *o, const char *key, struct db *d, long long id,
                         struct ceiling *best)
{
    json_t *trials = json_array(), *failed = json_array(), *sweep = NULL;
    int plateau = !strcmp(harness_ceiling_method(key), "plateau");
    struct opts one = *o;
    struct ceiling c;
    double recover_until = 0;
    int t, again, n = o->trials;

    memset(best, 0, sizeof *best);
    one.seconds = o->seconds / n;
    if (plateau) {
        sweep = json_array();
        one.connections = plateau_sweep(o, key, d, id, sweep, failed);
        one.seconds = o->seconds / 2 / n;
    }
    /* A failed trial, the warm-up too, runs again, at most n times in all:
     * the ceiling stays the best of n trials, and is an error only when
     * none succeeded. A trial that failed with its backend reached begins
     * an outage: for RECOVER_S after it, a rerun that fails is the same
     * outage, whether it reached the backend or not (an ensemble that
     * accepts a session before it serves again times the call out), and
     * is tried again each second, uncounted. So an outage longer than n
     * reruns (ZooKeeper's JVMs restarting on a loaded machine) costs one
     * rerun, not the ceiling, and a backend that never serves again costs
     * RECOVER_S more at most. */
    for (t = plateau ? 0 : -1, again = 0; t < n; t++) {
        if (o->progress) {
            progress.key = key, progress.trial = t, progress.trials = n, progress.said = 0;
            if (strcmp(key, CEIL_SERIAL_ZK) != 0 && strcmp(key, CEIL_SERIAL_ETCD) != 0)
                progress_say();         /* nothing to connect first */
        }
        memset(&c, 0, sizeof c);
        measure_once(&one, key, d, id, &c);
        if (c.err[0] && now_s() < recover_until) {
            json_array_append_new(failed, json_string(c.err));
            nanosleep(&(struct timespec){ 1, 0 }, NULL);
            t--;
            continue;
        }
        if (c.err[0] && c.reached)
            recover_until = now_s() + RECOVER_S;
        if (c.err[0] && o->progress)
            progress_failed(c.err);
        if (t >= 0)
            keep_best(best, &c, trials, failed);
        else if (c.err[0])
            json_array_append_new(failed, json_string(c.err));
        if (c.err[0] && again++ < n)
            t--;
    }
    if (best->seconds == 0 && c.err[0])
        *best = c;
    best->trials = trials;
    best->sweep = sweep;
    if (json_array_size(failed) > 0)
        best->failed = failed;
    else
        json_decref(failed);
}

/* ---------------------------------------------------------------- main */

/* The id and count of the product's row; 0 on success. */
static int find_row(struct db *d, const char *product, long long *id, char *err)
{
    static const char sql[] =
        "SELECT id FROM db_stock WHERE product_code = ? AND stock_code = '001'";
    unsigned long len = (unsigned long)strlen(product);
    MYSQL_BIND param, result;
    MYSQL_STMT *st;
    int rc = -1;

    memset(&param, 0, sizeof param);
    param.buffer_type = MYSQL_TYPE_STRING;
    param.buffer = (void *)product;
    param.buffer_length = len;
    param.length = &len;
    bind_ll(&result, id);
    st = mysql_stmt_init(d->conn);
    if (st == NULL || mysql_stmt_prepare(st, sql, sizeof sql - 1) != 0 ||
        mysql_stmt_bind_param(st, &param) != 0 || mysql_stmt_bind_result(st, &result) != 0 ||
        mysql_stmt_execute(st) != 0)
        set_err(err, "mysql: %s", st ? mysql_stmt_error(st) : mysql_error(d->conn));
    else if ((rc = mysql_stmt_fetch(st)) != 0)
        set_err(err, "mysql: no db_stock row for product %s in warehouse 001", product);
    if (st)
        mysql_stmt_close(st);
    return rc == 0 ? 0 : -1;
}

static int set_count(struct db *d, long long count, char *err)
{
    d->value = count;
    return run_stmt(d, d->write, err);
}

int main(int argc, char **argv)
{
    struct opts o;
    struct db d;
    struct ceiling c;
    char err[ERR_LEN] = "", redis_version[32] = "";
    long long id = 0, saved = -1;
    json_t *out, *ceilings, *versions;

    if (parse_opts(&o, argc, argv) != 0) {
        fputs(usage, stderr);
        return 2;
    }
    product_config(&o);
    mysql_library_init(0, NULL, NULL);
    ceilings = json_object();
    versions = json_object();
    out = json_pack("{s:f,s:i,s:s,s:o,s:o}", "seconds", o.seconds,
                    "connections", o.connections, "product", o.product,
                    "versions", versions, "ceilings", ceilings);
    memset(&d, 0, sizeof d);
    if (db_open(&d, &o, 0, err) == 0 && find_row(&d, o.product, &id, err) == 0) {
        d.id = id;
        json_object_set_new(versions, "mariadb", json_string(mysql_get_server_info(d.conn)));
        if (run_stmt(&d, d.select, err) == 0)
            saved = d.read;
    }
    if (saved < 0 || set_count(&d, ROW_FILL, err) != 0) {
        json_object_set_new(out, "error", json_string(err));
        fprintf(stderr, "ll-limits: %s\n", err);
    } else {
        static const char *const keys[] = {
            CEIL_MYSQL_UPDATE, CEIL_UPDATE_PEAK, CEIL_FOR_UPDATE, CEIL_SHARE_MODE,
            CEIL_OPTIMISTIC, CEIL_OPTIMISTIC_RECURSIVE, CEIL_UPDATE_NOINDEX, CEIL_SERIAL_MYSQL,
            CEIL_SERIAL_REDIS, CEIL_SERIAL_ZK, CEIL_SERIAL_ETCD, CEIL_REDIS_DECR,
            CEIL_REDIS_WATCH, CEIL_SERIAL_REDIS_STOCK,
        };
        size_t k;
        for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (!wanted(&o, keys[k]))
                continue;
            measure_best(&o, keys[k], &d, id, &c);
            json_object_set_new(ceilings, keys[k], ceiling_json(keys[k], &c));
            set_count(&d, ROW_FILL, err);
        }
        if (set_count(&d, saved, err) != 0)
            fprintf(stderr, "ll-limits: could not restore product %s to %lld: %s\n",
                    o.product, saved, err);
    }
    limits_sync(ceilings, o.only, o.seconds, o.trials, &product_cfg);
    if (wanted(&o, CEIL_SERIAL_REDIS))
        redis_version_of(&o, redis_version, sizeof redis_version);
    if (redis_version[0])
        json_object_set_new(versions, "redis", json_string(redis_version));
    db_close(&d);
    mysql_library_end();
    json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    json_decref(out);
    return 0;
}
