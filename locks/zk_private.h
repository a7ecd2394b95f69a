/* zk_private.h — what the ZooKeeper strategies share (locks/zk_*.c).
 *
 * zk_client.c owns the one ZooKeeper session of the process and the
 * per-slot bookkeeping; zk_queue.c is the sequential-node queue that
 * zk-sequential-poll, zk-sequential and curator differ in only by naming
 * and by how they wait. See the header comment of each file.
 */
#ifndef LOCKLAB_ZK_PRIVATE_H
#define LOCKLAB_ZK_PRIVATE_H

#include "lock.h"

#include <stdint.h>
#include <zookeeper/zookeeper.h>

#define ZK_PATH_MAX  256    /* any znode path we build or are given back */
#define ZK_TOKEN_MAX 96     /* a holder token: "<instance uuid>:<slot>:<n>" */
#define ZK_FENCE     "zookeeper"    /* the service of the czxid tokens (zk_check) */

/* ---------------------------------------------------------------- session */

/* One ZooKeeper session (a zhandle and its generation). Worker threads
 * hold a reference while they use it; a session that expired is replaced
 * and closed when its last user lets go. */
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

int64_t zk_session_id(struct zk_conn *c);
int     zk_session_ms(const struct lock_ctx *ctx);
const char *zk_backend(void);

/* Synchronous operations on c, each counted in ctx->backend_ops. They
 * return ZooKeeper's own codes (ZOK, ZNONODE …). watch=1 sets a watch
 * that zk_wait_gone() can sleep on. */
int zk_create(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
              int mode, char *created, int created_len);
int zk_exists(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
              struct Stat *st);
int zk_get(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
           char *buf, int *len, struct Stat *st);
int zk_children(struct lock_ctx *ctx, struct zk_conn *c, const char *path,
                struct String_vector *out);
int zk_delete(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int version);

/* A connection loss or time-out: the outcome is unknown, the session may
 * live on. */
int zk_retryable(int zrc);

/* Record a ZooKeeper failure on ctx: LL_UNAVAILABLE for a lost connection
 * or session, LL_ERROR otherwise. `what` names the operation. */
int zk_fail(struct lock_ctx *ctx, int zrc, const char *what, const char *path);

/* Create path and its missing ancestors (mode ZOO_PERSISTENT or
 * ZOO_CONTAINER); an existing node is fine. */
int zk_ensure_path(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int mode);

/* Sleep until `path` changes or goes away: sets an exists watch
 * (data_watch=0) or a getData watch (data_watch=1) and waits on this
 * thread's own condition variable, which only an event on `path` signals.
 * LL_OK when the event came or the node was already gone (the caller
 * re-lists; counts a wake-up), LL_TIMEOUT at the deadline, LL_UNAVAILABLE
 * when the session was lost. */
int zk_wait_gone(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int data_watch);

/* Watches of any kind, for recipes that wait for more than one node to go
 * (the synchronizers of sync/: children of a lease directory, a barrier's
 * ready node). zk_watch_begin() registers the waiter for events on `path`
 * BEFORE the caller sets its watch (a read with watch=1), so no event can
 * slip between the read and the wait; zk_watch_wait() sleeps until an event
 * on path (LL_OK, a wake-up counted), until_ms (LL_TIMEOUT) or the session's
 * expiry (LL_UNAVAILABLE); zk_watch_end() unregisters. A waiter is used by
 * one thread; begin/wait may repeat before end. */
struct zk_watch;
struct zk_watch *zk_watch_begin(struct zk_conn *c, const char *path);
int  zk_watch_wait(struct lock_ctx *ctx, struct zk_watch *w, int64_t until_ms);
void zk_watch_end(struct zk_watch *w);

/* getChildren with a child watch (watch=1) or without; getData into a
 * binary buffer; create with binary data; setData at a version (-1: any). */
int zk_children_watch(struct lock_ctx *ctx, struct zk_conn *c, const char *path, int watch,
                      struct String_vector *out);
int zk_create_bin(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
                  int len, int mode, char *created, int created_len);
int zk_set(struct lock_ctx *ctx, struct zk_conn *c, const char *path, const char *data,
           int len, int version, struct Stat *st);

/* ---------------------------------------------------------------- paths */

/* "<root>/<product>" for key "lock:<product>". */
void zk_product_path(char *buf, int len, const char *root, const char *key);

/* "<dir>/<name>" into buf; a path that does not fit is a bug (assert). */
void zk_join(char *buf, int len, const char *dir, const char *name);

/* The node's last path component. */
const char *zk_basename(const char *path);

/* Delete everything under path (and path itself when self=1): the reset
 * hook of every ZooKeeper strategy. */
int zk_reset_tree(struct lock_ctx *ctx, const char *path, int self);

/* ---------------------------------------------------------------- holds */

/* A lock this slot holds: which strategy and key, our znode, the token
 * written into it, how deep we re-entered and the session that created it
 * (a reference, released with the hold). Kept in the slot's struct zk_slot
 * (ctx->zk, zk_client.c). */
struct zk_hold {
    const struct lock_ops *ops;
    char            key[48];
    char            node[ZK_PATH_MAX];
    char            token[ZK_TOKEN_MAX];
    int             depth;
    int64_t         stamp;          /* the request that took it: deadline */
    struct zk_conn *conn;
};

/* A fresh holder token "<instance uuid>:<slot>:<n>", unique per attempt;
 * returns n. */
unsigned zk_token(struct lock_ctx *ctx, char *buf, int len);

/* The hold of (ops, key) taken by the current request, or NULL. */
struct zk_hold *zk_hold_find(struct lock_ctx *ctx, const struct lock_ops *ops,
                             const char *key);

/* Record a lock just taken; the hold takes over the reference on c. */
int zk_hold_add(struct lock_ctx *ctx, const struct lock_ops *ops, const char *key,
                struct zk_conn *c, const char *node, const char *token);

/* Give back the hold of (ctx->ops, key). fixed_path: the node's name is
 * not unique to us (zk-ephemeral), so a retried delete first checks the
 * token in it. */
int  zk_release(struct lock_ctx *ctx, const char *key, int fixed_path);

/* Hooks every ZooKeeper strategy shares, by name in its table: the check
 * that the hold's node is still there and still of our session, and the
 * ctx_free that gives back the slot's holds. */
int  zk_check(struct lock_ctx *ctx, const char *key);
void zk_ctx_free(struct lock_ctx *ctx);

/* Delete our node: retried over connection losses for up to a session
 * timeout, then left to the next user of the session. */
int zk_delete_ours(struct lock_ctx *ctx, struct zk_conn *c, const char *node,
                   const char *token);

/* A sequential create whose outcome a connection loss hid, and which we
 * could not look for in time: the next user of the session deletes any
 * child of parent named prefix*, so it cannot block the queue. */
void zk_forget_create(struct zk_conn *c, const char *parent, const char *prefix);
/* The same for a node of a known name that must carry token to be ours. */
void zk_forget_node(struct zk_conn *c, const char *node, const char *token);

/* ---------------------------------------------------------------- queue */

enum zk_wait_kind {
    ZK_POLL,            /* re-list every --retry-ms (seed 000 §4.4.1)  */
    ZK_WATCH_EXISTS,    /* exists() watch on the predecessor (§4.4.2)   */
    ZK_WATCH_DATA       /* getData() watch on the predecessor (Curator) */
};

/* A queue strategy is its parameters, the conf of its lock_ops, and the
 * methods below by name: zk-sequential-poll, zk-sequential and curator
 * differ in nothing else. */
struct zk_queue {
    const char       *root;      /* lock nodes live in <root>/<product>/ */
    enum zk_wait_kind wait;
    int               curator;   /* _c_<uuid>-lock-NNNNNNNNNN, containers */
    int               reentrant;
};

int zk_queue_acquire(struct lock_ctx *ctx, const char *key);
int zk_queue_release(struct lock_ctx *ctx, const char *key);
int zk_queue_reset(struct lock_ctx *ctx, const char *key);   /* <root>/<product>'s nodes */

/* The hooks of a queue strategy's lock_ops, whose queue is *q (SQLite's
 * IOMETHODS builds its locking styles from shared methods the same way). */
#define ZK_QUEUE_METHODS(q)                                                   \
    .conf = (q), .acquire = zk_queue_acquire, .release = zk_queue_release,    \
    .check = zk_check, .reset = zk_queue_reset, .ctx_free = zk_ctx_free,      \
    .fence = ZK_FENCE

#endif /* LOCKLAB_ZK_PRIVATE_H */
