/* redis.h — the Redis client: connections, commands, pipelines, scripts and
 * the errors they record on a context, for every caller above (the Redis
 * lock strategies, the Redis stock, the Redisson synchronizers).
 *
 * Every socket is non-blocking and every would-block is a wait_fd() with
 * the command's timeout as its deadline (core/wait.h): a caller on a plain
 * thread blocks in poll() as it used to block in hiredis, a coroutine on
 * the loop parks and lets the loop serve everyone else.
 *
 * Which connection carries a command:
 *   - on the loop (task_on_loop()), the commands that need no state of
 *     their connection — scripts, GET/SET/INCR/DEL …, no WATCH/MULTI, no
 *     WAIT, no blocking read — of every coroutine go on ONE shared
 *     connection per server per loop: each caller's commands are appended
 *     to its output at once, written together at the end of the loop's
 *     turn (pipelining), and the replies handed in order to a FIFO of the
 *     waiting callers;
 *   - what needs its connection's state (WATCH … EXEC, WAIT after a
 *     write, a blocking XREADGROUP), what a caller pins (redis_pin()), and
 *     everything of a plain thread goes on the worker slot's own
 *     connection, one per server, as before the loop.
 * Pub/sub has connections of its own, one per node (locks/redis_pubsub.c).
 *
 * Failures. A connection that fails is dropped and the next command
 * reconnects at once; a failed connect holds off the next one to that
 * server for REDIS_RECONNECT_MS. A failure is LL_UNAVAILABLE on ctx, with
 * backend "redis HOST:PORT". On the shared connection a transport error,
 * or no reply to its oldest command within REDIS_CMD_TIMEOUT_MS, fails
 * every caller waiting on it the same way; a caller with a shorter
 * timeout of its own (Redlock's) gives up alone, and its reply, when it
 * comes, is thrown away. Each round trip counts one in ctx->backend_ops.
 *
 * Server 0 with --redis-sentinel is whatever master the Sentinels name,
 * asked at every connect to it (redis_server_addr()).
 *
 * With --redis-cluster, server 0 is a Redis Cluster (redis_cluster.h):
 * each pipeline goes to the master of its commands' slot (they must share
 * one; a pipeline without a key to the node ctx used last), on that
 * node's connection (the slot's own one, or the loop's shared one); a
 * reply MOVED sets the slot's node and the command is sent there again,
 * a reply ASK sends ASKING and the command to the node named, once; a
 * failure on a node has the map asked for again. A pipeline with a WATCH
 * or a MULTI is one step, redirected as a whole or not at all: a command
 * of it answered MOVED, ASK or TRYAGAIN is never sent again alone (out of
 * its transaction, away from its WATCH). Redis discards a transaction one
 * of whose commands it redirected, so nothing of the step ran: MOVED sets
 * the slot's node, and the step fails with LL_LOST, for its caller to run
 * it again from its start (the read, the WATCH) — on the new node once
 * the slot has moved. What names "server 0"
 * after a command (redis_name(), redis_reply_error(), redis_drop()) names
 * the node it went to.
 *
 * The code: redis.c (this header: slots, pipelines, commands, scripts,
 * errors) over redis_shared.c (the loop's shared connections) over
 * redis_link.c (one connection, the timeouts, where server 0 is; its
 * header is included here).
 */
#ifndef LOCKLAB_REDIS_H
#define LOCKLAB_REDIS_H

#include "redis_cluster.h"
#include "redis_link.h"
#include "redis_server.h"
#include "../core/config.h"
#include "../core/ctx.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#define REDIS_EVAL_ARGS      256    /* keys and arguments of one script call   */

struct redis_hold;                  /* the lock family's state of a slot
                                     * (locks/redis_private.h): plain memory */

/* A worker slot's Redis (ctx->redis), made at its first use. */
struct redis_set {
    struct redis_link  link[CONFIG_MAX_SERVERS];   /* its own connections   */
    char               name[CONFIG_MAX_SERVERS][80];   /* "redis 127.0.0.1:6379" */
    int                pinned;      /* redis_pin(): every command on link[]    */
    struct redis_hold *hold;        /* freed with the set                      */
    int                wrongtype;   /* the last error reply redis_reply_error()
                                     * recorded was WRONGTYPE                  */
    int                last_node;   /* on a cluster: where the last command went */
};

/* One connection of a slot, as it was at a moment: its node (the server,
 * or a cluster's node) and its generation (struct redis_link's gen). */
struct redis_mark {
    int      node;
    unsigned gen;
};

/* A Lua script run by SHA1; sha is filled once per process (SCRIPT LOAD). */
struct redis_script {
    const char *text;
    char        sha[41];
};

/* ---------------------------------------------------------------- the slot */

struct redis_set *redis_set_of(struct lock_ctx *ctx);
/* Close ctx's connections and free its set (every family's ctx_free). */
void              redis_ctx_free(struct lock_ctx *ctx);

/* "redis HOST:PORT" of server i as ctx last reached it (a failover changes
 * server 0's); the string lives as long as ctx's set. */
const char *redis_name(struct lock_ctx *ctx, int server);

/* Pin (1) or unpin (0) ctx to its own connections: while pinned, every
 * command of ctx goes on link[] even on the loop, so one connection
 * carries a sequence whose later steps depend on it (WAIT counts the
 * writes of its own connection: redisson-wait). */
void redis_pin(struct lock_ctx *ctx, int on);

/* The generation of ctx's own connection to server i, 0 when it has none:
 * two equal answers mean nothing came between on that connection. */
unsigned redis_own_gen(struct lock_ctx *ctx, int server);

/* ctx's own connection to server i as it is now: the node (on a cluster,
 * where ctx's last command went) and its generation there (0: none). */
struct redis_mark redis_own_mark(struct lock_ctx *ctx, int server);

/* Make sure ctx's next command to server i has a connection, connecting
 * now if there is none (the rule below says which): LL_OK, or the failure
 * on ctx (Redlock counts the servers it cannot reach first). */
int redis_connect(struct lock_ctx *ctx, int server, int timeout_ms);

/* ---------------------------------------------------------------- pipelines */

/* Commands sent together and their replies read after: one round trip.
 * REDIS_ANY lets the rule above choose (the shared connection on the
 * loop), REDIS_OWN asks for the slot's own connection. */
enum redis_via { REDIS_ANY, REDIS_OWN };

struct redis_wait_entry;            /* clients/redis_shared.h */

struct redis_pipe {
    struct lock_ctx *ctx;
    int              server, timeout_ms, own;
    const char      *what;          /* names the step in a failure: "EXEC"   */
    int              n;             /* commands added                        */
    char            *buf;           /* their protocol text                   */
    size_t           len, cap;
    int              sent;          /* they may have reached the server      */
    struct redis_mark on;           /* REDIS_OWN: only on this connection,
                                     * else refused unsent (redis_pipe_on());
                                     * gen 0: any                            */
    int64_t          deadline_us;   /* from the send                         */
    struct redis_wait_entry *entry; /* on the shared connection, until read  */
    /* On a cluster: */
    int              cluster;       /* ctx runs on one                       */
    int              node;          /* the node it went to (else: server)    */
    int              to;            /* a redirection's node, or -1           */
    int              slot, cross;   /* its commands' slot; two slots seen    */
    int              resent;        /* a redirection's: its replies as they are */
    int              whole;         /* a WATCH or MULTI in it: one step      */
    char            *keep;          /* the commands, to send again           */
    size_t           keep_len, *off;/* ... and where each begins             */
};

void redis_pipe_init(struct redis_pipe *p, struct lock_ctx *ctx, int server, int timeout_ms,
                     enum redis_via via, const char *what);
/* A pipeline on ctx's own connection that depends on that connection's
 * state (MULTI … EXEC after a WATCH) goes out only on the very connection
 * that made the state: m, redis_own_mark() taken right after the step that
 * made it. If that connection was replaced since (the server closed it:
 * the send would reconnect) or the commands now go to another node (a
 * cluster's slot moved), the send refuses, nothing sent, with LL_LOST on
 * ctx: what the connection held is gone. */
void redis_pipe_on(struct redis_pipe *p, struct redis_mark m);

/* Add one command: a hiredis format (%s, %d, %lld, %b …), or argv. */
void redis_pipe_add(struct redis_pipe *p, const char *fmt, ...);
void redis_pipe_argv(struct redis_pipe *p, int argc, const char **argv);

/* Send the commands: LL_OK, or a failure recorded on ctx before anything
 * was sent (the server is down). On the shared connection they leave at
 * the turn's end, with the other callers'. */
int  redis_pipe_send(struct redis_pipe *p);
/* Read their replies into r[0..n): LL_OK, or every reply is lost and the
 * failure recorded on ctx (p->sent says whether they had left: a write
 * may then have been made). Counts one round trip. Frees p's buffer. */
int  redis_pipe_recv(struct redis_pipe *p, redisReply **r);
/* Both. */
int  redis_pipe_run(struct redis_pipe *p, redisReply **r);
/* Drop the connection p used (a fault that loses an answer): the next
 * command reconnects; LL_UNAVAILABLE recorded on ctx. Frees p. */
int  redis_pipe_drop(struct redis_pipe *p);
/* Free what p still holds (after a send that is not read). */
void redis_pipe_free(struct redis_pipe *p);

/* Free r[0..n) (NULLs skipped). */
void redis_replies_free(redisReply **r, int n);

/* ---------------------------------------------------------------- commands */

/* One command to server i (REDIS_CMD_TIMEOUT_MS). NULL when the server is
 * unreachable (ctx->err = LL_UNAVAILABLE); otherwise the reply, which may
 * be an error reply: see redis_reply_error(). */
redisReply *redis_cmd(struct lock_ctx *ctx, int server, const char *fmt, ...);
redisReply *redis_cmd_argv(struct lock_ctx *ctx, int server, int argc, const char **argv);

/* Run script s on server i: argv holds argc strings, the nkeys keys first
 * and then the other arguments. EVALSHA, and EVAL with the source when the
 * server answers NOSCRIPT (a restart, another server of Redlock). Same
 * contract as redis_cmd(); *sent (may be NULL) says whether the script
 * may have reached the server when NULL is returned. */
redisReply *redis_eval(struct lock_ctx *ctx, int server, struct redis_script *s,
                       int nkeys, int argc, const char **argv);
redisReply *redis_eval_sent(struct lock_ctx *ctx, int server, struct redis_script *s,
                            int nkeys, int argc, const char **argv, int *sent);

/* Forget ctx's connection to server i (the one its commands use now):
 * LL_UNAVAILABLE recorded on ctx with `what` and the reason. */
int redis_drop(struct lock_ctx *ctx, int server, const char *what);

/* An error reply from server i on `key` as a status on ctx (LL_ERROR, or
 * LL_UNAVAILABLE for LOADING/BUSY/MASTERDOWN, and READONLY, which drops
 * the connection: a demoted master); frees the reply. A WRONGTYPE names the
 * likely cause, another strategy's key, and is remembered in the set
 * (wrongtype) until the next error reply: a lock's try that meets one
 * treats the key as held (locks/redis_common.c, redis_foreign()). */
int redis_reply_error(struct lock_ctx *ctx, int server, redisReply *r, const char *key);

/* Is r an error reply starting with prefix ("NOSCRIPT")? */
int redis_is_error(const redisReply *r, const char *prefix);

/* ---------------------------------------------------------------- the loop */

/* Close this loop's shared connections (a test's end, before loop_free();
 * the instance keeps them for its life). Loop thread, nobody waiting on
 * them. The shared connections are made at their first use on a loop,
 * which also hooks the loop's turn end (loop_at_turn_end()): nothing to
 * set up beforehand. */
void redis_loop_close(void);

#endif /* LOCKLAB_REDIS_H */
