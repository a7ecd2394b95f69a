/* zk.h — the ZooKeeper client: the process's one session, and every call
 * on it through ZooKeeper's asynchronous API, waited for through the wait
 * layer (core/wait.h).
 *
 * A caller — a coroutine on a loop or a plain thread — issues a call
 * (zoo_acreate, zoo_aget …) and waits for its answer; ZooKeeper's
 * completion thread records the answer and wakes it. The caller reads on
 * as if the call had blocked, so the lock strategies above stay
 * straight-line (seed 000 §4's ZkClient calls), while on a loop the thread
 * underneath serves everyone else. Watches wake their waiters the same
 * way. Nothing in the client blocks a thread except ZooKeeper's own two
 * (its I/O and completion threads) and the short-lived thread that closes
 * a retired handle (zookeeper_close() joins the library's threads).
 *
 * Calls return ZooKeeper's own codes (ZOK, ZNONODE …); zk_fail() maps one
 * onto ctx (LL_UNAVAILABLE naming "zookeeper <connect string>" for a lost
 * connection or session, LL_ERROR otherwise). Each call counts one
 * ctx->backend_ops. See clients/zk.c for the design.
 */
#ifndef LOCKLAB_CLIENTS_ZK_H
#define LOCKLAB_CLIENTS_ZK_H

#include "../core/ctx.h"

#include <stdint.h>
#include <zookeeper/zookeeper.h>

#define ZK_PATH_MAX  256    /* any znode path we build or are given back */

/* ---------------------------------------------------------------- session */

/* One ZooKeeper session (a zhandle and its generation). Callers hold a
 * reference while they use it; a session that expired is replaced and
 * closed when its last user lets go. */
struct zk_conn;

/* A connected session, referenced: zk_put() it when done. Waits for the
 * connection at most until the request's deadline, and not at all once
 * ZooKeeper has been unreachable for a whole session timeout. Failure is
 * LL_UNAVAILABLE with backend "zookeeper <connect string>". */
int  zk_connect(struct lock_ctx *ctx, struct zk_conn **out);
void zk_put(struct zk_conn *c);

/* Wait (until until_ms at most) for c to be connected again after a
 * connection loss. LL_OK on the same session; LL_UNAVAILABLE when it
 * expired or did not come back in time. */
int zk_await(struct lock_ctx *ctx, struct zk_conn *c, int64_t until_ms);

/* Close the current session now (its ephemeral nodes go at once rather
 * than a session timeout later), once its last user lets go; the next
 * zk_connect() opens a new one. Waits for the close (a few seconds at
 * most) unless a user still holds the session. */
void zk_close(void);

int64_t     zk_session_id(struct zk_conn *c);
int         zk_expired(struct zk_conn *c);     /* EXPIRED: gone for good */
uint64_t    zk_generation(struct zk_conn *c);  /* 1, 2 … one per handle   */
/* The session timeout a new session asks for (--zk-session-ms, or a fifth
 * of --lease-ms), and the one c's server granted (what was asked until it
 * has answered): the server may grant less, and every lease and wait
 * counts the granted one. */
int         zk_session_ms(const struct lock_ctx *ctx);
int         zk_timeout_ms(struct zk_conn *c);
const char *zk_backend(void);

/* A connection loss or time-out: the outcome is unknown, the session may
 * live on. */
int zk_retryable(int zrc);

/* Record a ZooKeeper failure on ctx: LL_UNAVAILABLE for a lost connection
 * or session, LL_ERROR otherwise. `what` names the operation. */
int zk_fail(struct lock_ctx *ctx, int zrc, const char *what, const char *path);

/* ---------------------------------------------------------------- calls */

enum zk_op { ZK_OP_CREATE, ZK_OP_EXISTS, ZK_OP_GET, ZK_OP_CHILDREN, ZK_OP_DELETE, ZK_OP_SET,
             ZK_OP_SYNC };

/* One call and its answer. The answer goes into the caller's buffers only
 * while the caller waits for it: a late answer (after the deadline) is
 * dropped by the completion record, never written here. */
struct zk_call {
    enum zk_op   op;
    const char  *path;
    const char  *data;          /* create, set: data bytes (NULL: none)   */
    int          len;           /* their length                            */
    int          mode;          /* create: ZOO_EPHEMERAL …                 */
    int          version;       /* delete, set: -1 for any                 */
    int          watch;         /* exists, get, children: leave a watch    */

    /* The answer, on ZOK. */
    char        *out;           /* create: the path made; get: the data    */
    int          out_len;       /* its size in; get: the data's length out */
    struct Stat  stat;          /* exists, get, set                        */
    struct String_vector kids;  /* children: deallocate_String_vector()    */
};

/* Issue the call on c and wait until its answer or the deadline (monotonic
 * µs): ZooKeeper's code, or ZOPERATIONTIMEOUT when the deadline came first
 * (the outcome is then unknown, like a connection loss). */
int zk_call(struct lock_ctx *ctx, struct zk_conn *c, struct zk_call *call, int64_t deadline_us);

/* The calls as the lock code makes them, each waiting at most a session
 * timeout (ZooKeeper itself answers a connection loss well before). watch=1
 * leaves a watch that zk_wait_gone() / zk_watch_wait() can sleep on. */
int zk_create(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
              int mode, char *created, int created_len);
int zk_create_bin(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
                  int len, int mode, char *created, int created_len);
int zk_exists(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
              struct Stat *st);
int zk_get(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
           char *buf, int *len, struct Stat *st);
int zk_children(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                struct String_vector *out);
int zk_children_watch(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
                      struct String_vector *out);
int zk_delete(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int version);
int zk_set(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
           int len, int version, struct Stat *st);
/* sync(path): the server c talks to (a follower, on an ensemble) has
 * caught up with the leader before it answers, so a read after it sees
 * every write committed before the sync, ours among them. */
int zk_sync(struct lock_ctx *ctx, struct zk_conn *c, const char *path);

/* Create path and its missing ancestors (mode ZOO_PERSISTENT or
 * ZOO_CONTAINER); an existing node is fine. */
int zk_ensure_path(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int mode);

/* Delete everything under path (and path itself when self=1), four levels
 * deep at most: the reset hooks. */
int zk_delete_tree(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int self);

/* ---------------------------------------------------------------- watches */

/* Sleep until `path` changes or goes away: sets an exists watch
 * (data_watch=0) or a getData watch (data_watch=1) and waits until an
 * event on `path`. LL_OK when the event came or the node was already gone
 * (the caller looks again; an event counts a wake-up), LL_TIMEOUT at the
 * request's deadline, LL_UNAVAILABLE when the session was lost. */
int zk_wait_gone(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int data_watch);

/* Watches of any kind, for recipes that wait for more than one node
 * (children of a lease directory, a barrier's ready node).
 * zk_watch_begin() registers the waiter for events on `path` BEFORE the
 * caller sets its watch (a call with watch=1), so no event can slip
 * between the call and the wait; zk_watch_wait() sleeps until an event on
 * path (LL_OK, a wake-up counted), until_ms (LL_TIMEOUT) or the session's
 * expiry (LL_UNAVAILABLE); zk_watch_end() unregisters. A waiter belongs
 * to one task; begin/wait may repeat before end. */
struct zk_watch;
struct zk_watch *zk_watch_begin(struct zk_conn *c, const char *path);
int  zk_watch_wait(struct lock_ctx *ctx, struct zk_watch *w, int64_t until_ms);
void zk_watch_end(struct zk_watch *w);

/* ---------------------------------------------------------------- paths */

/* "<dir>/<name>" into buf; one that does not fit is "" (ZooKeeper refuses it). */
void zk_join(char *buf, int len, const char *dir, const char *name);

/* The node's last path component. */
const char *zk_basename(const char *path);

#endif /* LOCKLAB_CLIENTS_ZK_H */
