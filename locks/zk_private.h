/* zk_private.h — what the ZooKeeper strategies share (locks/zk_*.c), and
 * the synchronizers of sync/curator_*.c with them.
 *
 * The client (clients/zk.h) owns the one ZooKeeper session of the process
 * and every call on it; zk_hold.c is the lock logic around it (a slot's
 * holds, tokens, the check, deletes a connection loss left behind);
 * zk_queue.c is the sequential-node queue — Curator's LockInternals,
 * written once — that zk-sequential-poll, zk-sequential and curator differ
 * in only by naming and by how they wait, and that the Curator
 * synchronizers take their mutexes from. See the header comment of each
 * file.
 */
#ifndef LOCKLAB_ZK_PRIVATE_H
#define LOCKLAB_ZK_PRIVATE_H

#include "lock.h"
#include "../clients/zk.h"

#include <stdint.h>

#define ZK_TOKEN_MAX 96     /* a holder token: "<instance uuid>:<slot>:<n>" */
#define ZK_FENCE     "zookeeper"    /* the service of the czxid tokens (zk_check) */

/* ---------------------------------------------------------------- session */

/* zk_connect(), then the deletes that connection losses left behind in
 * this session (zk_forget_*), tried once more. Every lock and synchronizer
 * takes its session here. */
int zk_lock_session(struct lock_ctx *ctx, struct zk_conn **out);

/* "<root>/<product>" for key "lock:<product>". */
void zk_product_path(char *buf, int len, const char *root, const char *key);

/* Delete everything under path (and path itself when self=1): the reset
 * hook of every ZooKeeper strategy. */
int zk_reset_tree(struct lock_ctx *ctx, const char *path, int self);

/* ---------------------------------------------------------------- holds */

/* A lock this slot holds: which strategy and key, our znode, the token
 * written into it, how deep we re-entered and the session that created it
 * (a reference, released with the hold). Kept in the slot's struct zk_slot
 * (ctx->zk, zk_hold.c). */
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
/* The same after a failure: the failure already on ctx stays its reason. */
int zk_delete_keeping(struct lock_ctx *ctx, struct zk_conn *c, const char *node,
                      const char *token);

/* A sequential create whose outcome a connection loss hid, and which we
 * could not look for in time: the next user of the session deletes any
 * child of parent named prefix*, so it cannot block the queue. */
void zk_forget_create(struct zk_conn *c, const char *parent, const char *prefix);
/* The same for a node of a known name that must carry token to be ours. */
void zk_forget_node(struct zk_conn *c, const char *node, const char *token);

/* ---------------------------------------------------------------- one node */

/* The one EPHEMERAL node of a product (zk_ephemeral.c): zk-ephemeral spins
 * on create while it exists, zk-herd watches it (every waiter wakes at its
 * deletion). A strategy of the kind is its struct zk_ephemeral, the conf
 * of its lock_ops, and the methods below by name. */
struct zk_ephemeral {
    const char *root;           /* a strategy's nodes: <root>/<product>     */
    int         watch;          /* 0: sleep and retry, 1: an exists() watch */
};
int zk_ephemeral_acquire(struct lock_ctx *ctx, const char *key);
int zk_ephemeral_release(struct lock_ctx *ctx, const char *key);
int zk_ephemeral_reset(struct lock_ctx *ctx, const char *key);

#define ZK_EPHEMERAL_METHODS(e)                                                \
    .conf = (e), .acquire = zk_ephemeral_acquire,                             \
    .release = zk_ephemeral_release, .check = zk_check,                       \
    .reset = zk_ephemeral_reset, .fence = ZK_FENCE

/* ---------------------------------------------------------------- queue */

/* The sequential-node queue, Curator's LockInternals (zk_queue.c): the one
 * lock behind zk-sequential-poll, zk-sequential, curator and the Curator
 * synchronizers of sync/. */

enum zk_wait_kind {
    ZK_POLL,            /* re-list every --retry-ms (seed 000 §4.4.1)  */
    ZK_WATCH_EXISTS,    /* exists() watch on the predecessor (§4.4.2)   */
    ZK_WATCH_DATA       /* getData() watch on the predecessor (Curator) */
};

/* Which node holds, from the sorted queue (Curator's drivers). */
enum zk_driver {
    ZK_MUTEX,           /* the first of all (InterProcessMutex, our queues) */
    ZK_WRITE,           /* InterProcessReadWriteLock's writer: the same     */
    ZK_READ             /* its reader: no "__WRIT__" node before ours       */
};

/* How a queue names its nodes, sorts them and waits. A queue strategy is
 * its parameters, the conf of its lock_ops, and the methods below by name:
 * zk-sequential-poll, zk-sequential and curator differ in nothing else. */
struct zk_queue {
    const char       *root;      /* a strategy's nodes: <root>/<product>/      */
    enum zk_wait_kind wait;
    int               curator;   /* _c_<uuid>-lock-NNNNNNNNNN, containers       */
    int               reentrant;
};

/* Take the lock of dir: our node in its queue (data written into it, NULL
 * for none; attempt tells our own apart in our naming), then wait as q says
 * until driver d finds that it holds (own_write: our node of the write lock
 * we hold, which lets the read driver grant us). Our node into node. On
 * failure — the deadline, a lost session — our node is deleted and node is
 * "". zk_queue_unlock() gives it back. */
int zk_queue_lock(struct lock_ctx *ctx, struct zk_conn *c, const struct zk_queue *q,
                  enum zk_driver d, const char *dir, const char *own_write,
                  const char *data, unsigned attempt, char *node, int len);
int zk_queue_unlock(struct lock_ctx *ctx, struct zk_conn *c, const char *node);

/* Curator's InterProcessMutex (d = ZK_MUTEX) and read-write lock on dir,
 * as its Java clients take them (no data, a getData watch): zk_queue_lock()
 * with Curator's queue. */
int zk_curator_lock(struct lock_ctx *ctx, struct zk_conn *c, enum zk_driver d,
                    const char *dir, const char *own_write, char *node, int len);

/* Curator's protected name "_c_<fresh uuid>-<name>" into buf. */
void zk_protected_name(char *buf, int len, const char *name);

/* An EPHEMERAL_SEQUENTIAL node <dir>/<prefix><sequence> with data (NULL:
 * none), its missing parents made as parent_mode (ZOO_CONTAINER,
 * ZOO_PERSISTENT). After a connection loss it looks for a child named
 * prefix* before creating again, so the prefix must be ours alone (a
 * protected name). The full path into node. */
int zk_create_sequential(struct lock_ctx *ctx, struct zk_conn *c, const char *dir,
                         const char *prefix, const char *data, int parent_mode,
                         char *node, int len);

/* The queue strategies' methods. */
int zk_queue_acquire(struct lock_ctx *ctx, const char *key);
int zk_queue_release(struct lock_ctx *ctx, const char *key);
int zk_queue_reset(struct lock_ctx *ctx, const char *key);   /* <root>/<product>'s nodes */

/* The hooks of a queue strategy's lock_ops, whose queue is *q (SQLite's
 * IOMETHODS builds its locking styles from shared methods the same way). */
#define ZK_QUEUE_METHODS(q)                                                   \
    .conf = (q), .acquire = zk_queue_acquire, .release = zk_queue_release,    \
    .check = zk_check, .reset = zk_queue_reset, \
    .fence = ZK_FENCE

#endif /* LOCKLAB_ZK_PRIVATE_H */
