/* db_pipe.h — prepared statements in one round trip: two, or one repeated.
 *
 * libmariadb sends a statement and waits for its answer before it will
 * send another. MariaDB reads a connection's commands one after the other
 * from its socket, so nothing on the server's side stops a client from
 * writing two COM_STMT_EXECUTE packets at once and reading the two answers
 * after them: the second statement then runs the moment the first is done,
 * without a trip back to the client and a wake-up on each side in between.
 * mysql-for-update sends its UPDATE and its COMMIT this way, which ends the
 * transaction, and frees the row, one round trip sooner.
 *
 * db_pipe2() writes the two packets itself and reads the two answers itself
 * (an OK or an ERR packet each: statements without a result set only), then
 * leaves the connection as libmariadb expects it between commands, ready for
 * the next call through its API. It works on any connection libmariadb made
 * without TLS or compression, which locklab never asks for.
 *
 * db_pipe2_then() sends a third statement behind the two, a query of one
 * row of integer columns, and leaves its answer coming: whoever holds
 * the connection next reads it with db_pipe_row(), and must, before the
 * connection is used for anything else. mysql-for-update starts its next
 * sale's transaction (SELECT … FOR UPDATE) this way behind the last one's
 * COMMIT. The answer is read the way libmariadb 3.3 reads it: no
 * CLIENT_DEPRECATE_EOF (it never asks for it), so an EOF packet ends the
 * column definitions and the rows, and the column definitions themselves
 * may be skipped (MARIADB_CLIENT_CACHE_METADATA), their types then being
 * those the statement was prepared with.
 */
#ifndef LOCKLAB_DB_PIPE_H
#define LOCKLAB_DB_PIPE_H

#include <mysql.h>

#define DB_PIPE_PARAMS 8
#define DB_PIPE_COLS   4            /* integer columns of a pipelined query */
#define DB_PIPE_BUF    2048         /* two OKs are ~20 bytes; an ERR ≤ 530 */
#define DB_PIPE_STR_MAX 64          /* bytes of a string parameter, at most */

/* What was read off a connection past the answers asked for so far: the
 * beginning of a pending answer. */
struct db_pipe_buf {
    size_t        have;
    unsigned char data[DB_PIPE_BUF];
};

struct db_pipe_answer {
    unsigned           err;         /* 0, or the server's error number */
    unsigned long long affected;    /* of an OK answer */
    char               msg[128];    /* of an ERR answer */
};

/* Runs `first` with its n (≤ DB_PIPE_PARAMS) parameters, then `second`
 * with none. Parameter i is the string strs[i] (≤ DB_PIPE_STR_MAX bytes)
 * when strs and strs[i] are not NULL, else the long long params[i].
 * Returns 0 when both answers were read; each may be a server error, and
 * the second ran even after a failed first. Returns -1
 * when the pair could not be run to the end, with a[0].err one of
 *   CR_NOT_IMPLEMENTED   a TLS or compressed connection: nothing was sent
 *   CR_SERVER_GONE_ERROR the connection failed before anything was sent
 *   CR_SERVER_LOST       once the statements were on their way, the
 *                        connection failed or timed out, or an answer
 *                        could not be read (not a lone OK or ERR, bytes
 *                        past the answers: "malformed" in the sentence),
 *                        even after a COMMIT's OK: they may have run
 * and a sentence in a[0].msg. After the last the connection is out of
 * step with libmariadb and must be closed. */
int db_pipe2(MYSQL *conn, MYSQL_STMT *first, const long long *params, const char *const *strs,
             int n, MYSQL_STMT *second, int timeout_ms, struct db_pipe_answer a[2]);

/* db_pipe2(), then `third` with its m parameters in the same write; its
 * answer is left for db_pipe_row(), with what came of it already in *rest.
 * Returns as db_pipe2(); the third was sent only when it returns 0. */
int db_pipe2_then(MYSQL *conn, MYSQL_STMT *first, const long long *params, int n,
                  MYSQL_STMT *second, MYSQL_STMT *third, const long long *tparams, int m,
                  int timeout_ms, struct db_pipe_answer a[2], struct db_pipe_buf *rest);

/* Reads the pending answer of `stmt` (sent by db_pipe2_then(); its columns
 * integers, at most DB_PIPE_COLS): 0 with *found (0 or 1 rows) and the
 * row's values[], or with a->err a server error (no row then); -1 as
 * db_pipe2(), the connection then out of step. Either way nothing is
 * pending afterwards. */
int db_pipe_row(MYSQL *conn, MYSQL_STMT *stmt, struct db_pipe_buf *rest, int timeout_ms,
                long long *values, int *found, struct db_pipe_answer *a);

/* One statement (n parameters, no result set) run `times` times in one
 * write, 1 ≤ times ≤ DB_PIPE_REPEAT_MAX, and every answer read: a[i] is
 * the i-th run's, an OK with its affected rows or an ERR (the runs after
 * a failed one still ran). mysql-update sends the UPDATEs of its row queue
 * this way: they run one after the other on the server with no trip back
 * to the client in between, and the instance wakes once for all of them.
 * Returns as db_pipe2(), why in a[0]. */
#define DB_PIPE_REPEAT_MAX 64
int db_pipe_repeat(MYSQL *conn, MYSQL_STMT *stmt, const long long *params, int n, int times,
                   int timeout_ms, struct db_pipe_answer *a);

/* `first` (n parameters, no result set) and `query` (m parameters, a row
 * of integers as db_pipe_row() reads) in one round trip, both answers
 * read: first's in a[0], the query's in a[1] with *found and values[].
 * The query runs even after a failed first. Returns 0 when both answers
 * were read (each may be a server error); -1 as db_pipe2() when first's
 * answer was not (why in a[0]); 1 when first's answer is in a[0] but the
 * query's was lost or could not be read (why in a[1], CR_SERVER_LOST; the
 * connection out of step): a first statement that sells has then sold or
 * not by its own answer. */
int db_pipe_exec_query(MYSQL *conn, MYSQL_STMT *first, const long long *params, int n,
                       MYSQL_STMT *query, const long long *qparams, int m, int timeout_ms,
                       struct db_pipe_answer a[2], long long *values, int *found);

#endif /* LOCKLAB_DB_PIPE_H */
