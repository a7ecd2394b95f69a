/* db.h — one worker slot's MariaDB connection and its prepared statements.
 *
 * Every statement goes through db_exec(): it (re)connects when needed,
 * prepares `sql` once per connection and caches the handle by the string's
 * address (callers pass string literals / static arrays), binds parameters
 * from a tiny format and fetches at most one row. There is no other way to
 * send SQL, so everything is a prepared statement.
 *
 * Failures are mapped onto the shared codes: a lost or refused connection
 * is LL_UNAVAILABLE with backend "mysql" (the connection is dropped and
 * re-made on a later call, at most every DB_RETRY_MS); an InnoDB lock wait
 * timeout or deadlock is LL_TIMEOUT; anything else LL_ERROR; a sale whose
 * answer was lost after it was sent is LL_UNKNOWN (see db_exec). db_errno()
 * keeps the server's error number (e.g. 1062 duplicate key) for callers
 * that treat one error as an answer.
 */
#ifndef LOCKLAB_DB_H
#define LOCKLAB_DB_H

struct db;
struct lock_ctx;
struct config;

#define DB_ER_DUP_ENTRY     1062
#define DB_ER_LOCK_DEADLOCK 1213
#define DB_ER_LOCK_WAIT_TIMEOUT 1205 /* also MariaDB's answer to a NOWAIT that meets a lock */

struct db *db_new(const struct config *cfg);
/* A connection to cfg's read replica (--mysql-replica; it must be set). */
struct db *db_new_replica(const struct config *cfg);
void       db_free(struct db *db);

/* fmt: one letter a parameter — 'l' long long, 's' const char * — then,
 * optionally, '>' and one letter a result column — 'l' long long *.
 * *rows (may be NULL) receives the affected rows of a DML statement, or the
 * number of rows fetched (0 or 1) of a query. A leading '!' marks the
 * statement that sells (an UPDATE of db_stock in autocommit): once it was
 * sent, a connection lost before its answer is LL_UNKNOWN, not
 * LL_UNAVAILABLE, since the server may have committed it. Inside a
 * transaction the mark does nothing (a lost connection rolls the
 * statement back with the rest): there the COMMIT sells. The pipelined
 * calls below that commit (db_exec_commit, db_exec_commit_next) or run in
 * autocommit (db_exec_query) always sell in that sense. */
int db_exec(struct lock_ctx *ctx, const char *sql, long long *rows,
            const char *fmt, ...);

/* db_exec() for a statement of n integer parameters, given as an array,
 * and no result (a multi-row INSERT …): *rows its affected rows. Inside a
 * transaction or not, like db_exec(); never a sale in db_exec()'s sense. */
int db_exec_ints(struct lock_ctx *ctx, const char *sql, long long *rows,
                 const long long *params, int n);

/* Transactions, as prepared statements like the rest: begin turns autocommit
 * off (a round trip only the first time on a connection), commit and
 * rollback end the transaction (a failed commit rolls back). A connection
 * lost in between fails every statement of the transaction with
 * LL_UNAVAILABLE. */
int db_begin(struct lock_ctx *ctx);
int db_commit(struct lock_ctx *ctx);
/* db_commit() of a transaction whose commit sells: its answer lost on the
 * way back is LL_UNKNOWN (see db_exec's '!'). */
int db_commit_sale(struct lock_ctx *ctx);
void db_rollback(struct lock_ctx *ctx);   /* best effort, on error paths */

/* The transaction's last statement (fmt: 'l' and 's' parameters, strings
 * of at most DB_PIPE_STR_MAX bytes, no result) and its COMMIT in one round
 * trip (clients/db_pipe.h), ending the transaction whatever happens, like
 * db_commit(). A failed statement commits nothing of its own: its error is
 * the answer. */
int db_exec_commit(struct lock_ctx *ctx, const char *sql, long long *rows,
                   const char *fmt, ...);

/* db_exec_commit() with the statement's parameters in params[0..n), and in
 * the same round trip the next transaction's first statement, `next_sql`: a
 * query of next_n long long parameters and one integer column, which runs
 * the moment the COMMIT is done. Its answer stays pending on the connection
 * (*next_sent = 1), for db_exec_pending() on whichever slot holds the
 * connection by then: nothing else may use it before. Whenever this does
 * not return LL_OK, *next_sent is 0: nothing was sent, or the connection
 * was closed, which rolled the next statement back. */
int db_exec_commit_next(struct lock_ctx *ctx, const char *sql, long long *rows,
                        const long long *params, int n, const char *next_sql,
                        const long long *next_params, int next_n, int *next_sent);

/* Whether ctx's connection has a pending answer; reading it, as db_exec()
 * with fmt "…>l": *rows the rows fetched (0 or 1), *value the column. */
int db_pending(const struct lock_ctx *ctx);
int db_exec_pending(struct lock_ctx *ctx, long long *rows, long long *value);

/* Outside a transaction: `sql` (n long long parameters, no result, its
 * affected rows in *rows) and, in the same round trip, the query
 * `query_sql` (m parameters, up to 4 integer columns): *found its rows
 * fetched (0 or 1), values[] the row. The query runs the moment the first
 * statement is done, whatever its outcome; the first failure is the
 * answer. */
int db_exec_query(struct lock_ctx *ctx, const char *sql, long long *rows,
                  const long long *params, int n, const char *query_sql,
                  const long long *qparams, int m, long long *values, long long *found);

/* Outside a transaction: `sql` (n long long parameters, no result) run
 * `times` times in one round trip (db_pipe_repeat(), times ≤ 64), each run
 * a statement that sells: rows[i] its affected rows, or status[i] its
 * failure (the context then holds the last one's error). LL_OK when every
 * answer came back; otherwise the exchange failed as a whole, the
 * connection is closed, and since the statements may have run it is
 * LL_UNKNOWN once they were sent (db_exec's '!'). */
int db_exec_repeat(struct lock_ctx *ctx, const char *sql, const long long *params, int n,
                   int times, long long *rows, int *status);

unsigned db_errno(const struct lock_ctx *ctx);

#endif /* LOCKLAB_DB_H */
