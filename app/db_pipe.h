/* db_pipe.h — two prepared statements in one round trip.
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
 */
#ifndef LOCKLAB_DB_PIPE_H
#define LOCKLAB_DB_PIPE_H

#include <mysql.h>

#define DB_PIPE_PARAMS 8

struct db_pipe_answer {
    unsigned           err;         /* 0, or the server's error number */
    unsigned long long affected;    /* of an OK answer */
    char               msg[128];    /* of an ERR answer */
};

/* Runs `first` with its n (≤ DB_PIPE_PARAMS) long long parameters, then
 * `second` with none. Returns 0 when both answers were read; each may be a
 * server error, and the second ran even after a failed first. Returns -1
 * when the pair could not be run to the end, with a[0].err one of
 *   CR_NOT_IMPLEMENTED   a TLS or compressed connection: nothing was sent
 *   CR_SERVER_LOST       the connection failed or timed out on the way
 *   CR_MALFORMED_PACKET  an answer that is not a lone OK or ERR
 * and a sentence in a[0].msg. After the last two the connection is out of
 * step with libmariadb and must be closed. */
int db_pipe2(MYSQL *conn, MYSQL_STMT *first, const long long *params, int n,
             MYSQL_STMT *second, int timeout_ms, struct db_pipe_answer a[2]);

#endif /* LOCKLAB_DB_PIPE_H */
