/* redis.c — the Redis client's face (redis.h): the slots, pipelines,
 * commands, scripts and the errors they record, over the connections of
 * redis_link.c and the loop's shared ones of redis_shared.c.
 *
 * A pipeline on the slot's own connection is driven by its caller,
 * straight-line: connect if needed, append the commands to hiredis's
 * output buffer, write it out, then read the replies one by one, every
 * wait through the wait layer (redis_link.c). One deadline, the command's
 * timeout from the send, bounds the whole round trip. A connection the
 * server closed while idle is seen before use (fd_peer_closed()) and
 * replaced at once.
 *
 * A pipeline on the loop's shared connection is handed to redis_shared.c:
 * queued, written with the other callers' at the turn's end, and its
 * caller parks until its replies are there. redis_pipe_send() and _recv()
 * choose by the rule of redis.h; the rest of this file does not care.
 *
 * On a cluster (redis.h) a pipeline keeps its commands and where each
 * begins: its send asks redis_cluster.c for the node of their slot, and
 * its reading follows the redirections, each command so answered sent
 * again alone (ASKING before it for an ASK) to the node named, and
 * TRYAGAIN to the same node after a pause, for as long as the slot's
 * migration takes, up to REDIS_TRYAGAIN_MAX_MS (follow_one()). A pipeline
 * with a WATCH or a MULTI is one step and is not followed: sent again
 * alone, a queued command would run outside its transaction
 * (step_redirected(): the step fails whole, for its caller to run again).
 *
 * Scripts run with EVALSHA; the SHA1 comes once per process from SCRIPT
 * LOAD, and a NOSCRIPT answer (a restarted server, another server of
 * Redlock) falls back to EVAL, which caches the script again.
 */
#include "redis.h"
#include "redis_shared.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REDIS_CLUSTER_HOPS 100      /* MOVED and ASK followed for one command */
#define REDIS_TRYAGAIN_MS  10       /* a pause before each TRYAGAIN's retry,
                                     * and each MOVED or ASK from the third   */
#define REDIS_TRYAGAIN_MAX_MS 10000 /* TRYAGAIN retried this long at most     */

/* ---------------------------------------------------------------- the slot */

struct redis_set *redis_set_of(struct lock_ctx *ctx)
{
    struct redis_set *rs = ctx->redis;
    int i;

    if (rs == NULL) {
        rs = xcalloc(1, sizeof *rs);
        for (i = 0; i < ctx->cfg->nredis; i++)
            snprintf(rs->name[i], sizeof rs->name[i], "redis %s:%d",
                     ctx->cfg->redis[i].host, ctx->cfg->redis[i].port);
        ctx->redis = rs;
    }
    return rs;
}

void redis_ctx_free(struct lock_ctx *ctx)
{
    struct redis_set *rs = ctx->redis;
    int i;

    if (rs == NULL)
        return;
    for (i = 0; i < CONFIG_MAX_SERVERS; i++)
        redis_link_close(&rs->link[i]);
    free(rs->hold);
    free(rs);
    ctx->redis = NULL;
}

/* The connection index of "server" i: on a cluster, the node ctx's last
 * command went to. */
static int node_of(struct lock_ctx *ctx, int server)
{
    return redis_cluster_on(ctx->cfg) ? redis_set_of(ctx)->last_node : server;
}

void redis_pin(struct lock_ctx *ctx, int on)
{
    redis_set_of(ctx)->pinned = on;
}

unsigned redis_own_gen(struct lock_ctx *ctx, int server)
{
    return redis_own_mark(ctx, server).gen;
}

struct redis_mark redis_own_mark(struct lock_ctx *ctx, int server)
{
    int node = node_of(ctx, server);
    struct redis_link *l = &redis_set_of(ctx)->link[node];

    return (struct redis_mark){ node, l->c ? l->gen : 0 };
}

/* Does ctx's next command to a server go on the loop's shared connection? */
static int use_shared(struct lock_ctx *ctx)
{
    return task_on_loop() && !redis_set_of(ctx)->pinned;
}

/* ctx's own connection to server i, connected (or reconnected when the
 * server closed it while idle); NULL with the failure on ctx. */
static redisContext *own_link(struct lock_ctx *ctx, int server, int timeout_ms)
{
    struct redis_set *rs = redis_set_of(ctx);
    struct redis_link *l = &rs->link[server];

    if (l->c && fd_peer_closed(l->c->fd))
        redis_link_forget(l, "closed by the server");
    if (l->c == NULL &&
        redis_link_connect(ctx, l, server, timeout_ms, rs->name[server], sizeof rs->name[server]) != 0)
        return NULL;
    return l->c;
}

/* ---------------------------------------------------------------- pipelines */

int redis_connect(struct lock_ctx *ctx, int server, int timeout_ms)
{
    server = node_of(ctx, server);
    if (!use_shared(ctx))
        return own_link(ctx, server, timeout_ms) ? LL_OK : ctx->err;
    return redis_shared_connect(ctx, server, timeout_ms);
}

void redis_loop_close(void)
{
    redis_shared_close();
}

void redis_pipe_init(struct redis_pipe *p, struct lock_ctx *ctx, int server, int timeout_ms,
                     enum redis_via via, const char *what)
{
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->server = server;
    p->timeout_ms = timeout_ms;
    p->own = via == REDIS_OWN || !use_shared(ctx);
    p->what = what;
    p->cluster = redis_cluster_on(ctx->cfg);
    p->node = server;
    p->to = p->slot = -1;
}

void redis_pipe_on(struct redis_pipe *p, struct redis_mark m)
{
    assert(p->own);
    p->on = m;
}

/* Is cmd (its protocol text, "*N\r\n$L\r\nNAME\r\n…") a WATCH or a MULTI,
 * a command whose connection state the next ones of its step depend on? */
static int cmd_opens_step(const char *cmd, int len)
{
    const char *name = memchr(cmd, '$', (size_t)len), *end;

    if (name == NULL || (end = memchr(name, '\n', (size_t)(cmd + len - name))) == NULL ||
        cmd + len - end < 6 || strtol(name + 1, NULL, 10) != 5)
        return 0;
    return !strncasecmp(end + 1, "WATCH", 5) || !strncasecmp(end + 1, "MULTI", 5);
}

/* On a cluster: where the command begins, and its slot. */
static void pipe_mark(struct redis_pipe *p, const char *cmd, int len)
{
    int slot = redis_cmd_slot(cmd, (size_t)len);

    size_t *off;

    if ((p->n & (p->n - 1)) == 0) {     /* 0, 1, 2, 4 …: room for twice as many */
        off = xmalloc((size_t)(p->n ? 2 * p->n : 1) * sizeof *off);
        if (p->n)
            memcpy(off, p->off, (size_t)p->n * sizeof *off);
        free(p->off);
        p->off = off;
    }
    p->off[p->n] = p->len;
    p->whole |= cmd_opens_step(cmd, len);
    if (slot >= 0 && p->slot < 0)
        p->slot = slot;
    else if (slot >= 0 && slot != p->slot)
        p->cross = 1;
}

static void pipe_append(struct redis_pipe *p, const char *cmd, int len)
{
    assert(len > 0);            /* a format hiredis cannot read is a bug here */
    if (p->cluster)
        pipe_mark(p, cmd, len);
    if (p->len + (size_t)len > p->cap) {
        size_t cap = p->cap ? p->cap : 256;
        char *buf;

        while (cap < p->len + (size_t)len)
            cap *= 2;
        buf = xmalloc(cap);
        if (p->len)
            memcpy(buf, p->buf, p->len);
        free(p->buf);
        p->buf = buf;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, cmd, (size_t)len);
    p->len += (size_t)len;
    p->n++;
}

static void pipe_addv(struct redis_pipe *p, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);

    pipe_append(p, cmd, len);
    redisFreeCommand(cmd);
}

void redis_pipe_add(struct redis_pipe *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    pipe_addv(p, fmt, ap);
    va_end(ap);
}

void redis_pipe_argv(struct redis_pipe *p, int argc, const char **argv)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);

    pipe_append(p, cmd, len);
    redisFreeCommand(cmd);
}

/* A failure of p's own connection: dropped, recorded on ctx. */
static int own_failed(struct redis_pipe *p, const char *why)
{
    struct redis_set *rs = redis_set_of(p->ctx);
    struct redis_link *l = &rs->link[p->node];

    redis_link_forget(l, why);
    if (p->cluster)
        redis_cluster_stale(p->ctx->cfg);
    return lock_error(p->ctx, LL_UNAVAILABLE, rs->name[p->node], "%s on %s failed: %s",
                      p->what, rs->name[p->node], l->lasterr);
}

/* On a cluster: the node p goes to (its slot's master, a redirection's
 * node, or for no key the last one), its commands kept to send again.
 * LL_OK, or the failure on ctx. */
static int pipe_route(struct redis_pipe *p)
{
    struct redis_set *rs = redis_set_of(p->ctx);

    if (p->cross)
        return lock_error(p->ctx, LL_ERROR, "redis cluster", "%s: keys of two slots in one "
                          "pipeline (CROSSSLOT): a bug of the caller", p->what);
    if (p->to >= 0)
        p->node = p->to;
    else if (p->slot >= 0 && (p->node = redis_cluster_node(p->ctx, p->slot)) < 0)
        return p->ctx->err;
    else if (p->slot < 0)
        p->node = rs->last_node;
    rs->last_node = p->node;
    p->keep = xmalloc(p->len);
    memcpy(p->keep, p->buf, p->len);
    p->keep_len = p->len;
    return LL_OK;
}

int redis_pipe_send(struct redis_pipe *p)
{
    redisContext *c;
    char why[128];
    int rc;

    assert(p->n > 0);
    if (p->cluster && (rc = pipe_route(p)) != LL_OK)
        return rc;
    p->deadline_us = now_us() + p->timeout_ms * 1000LL;
    if (!p->own) {
        rc = redis_shared_send(p->ctx, p->node, p->timeout_ms, p->buf, p->len, p->n,
                               &p->entry);
        p->buf = NULL;                      /* the entry's now, or freed */
        if (rc != 0) {
            p->ctx->backend = redis_name(p->ctx, p->server);    /* the slot's copy */
            if (p->cluster)
                redis_cluster_stale(p->ctx->cfg);
        }
        return rc ? p->ctx->err : LL_OK;
    }
    if ((c = own_link(p->ctx, p->node, p->timeout_ms)) == NULL) {
        if (p->cluster)
            redis_cluster_stale(p->ctx->cfg);
        return p->ctx->err;
    }
    if (p->on.gen && (p->on.node != p->node ||
                      redis_set_of(p->ctx)->link[p->node].gen != p->on.gen))
        return lock_error(p->ctx, LL_LOST, redis_set_of(p->ctx)->name[p->node],
                          "%s: the connection of the step before is gone (%s): what it "
                          "held went with it", p->what, p->on.node != p->node ?
                          "the slot is on another node now" : "closed by the server");
    p->ctx->backend_ops++;
    redisAppendFormattedCommand(c, p->buf, p->len);
    free(p->buf);
    p->buf = NULL;
    p->sent = 1;
    if (redis_link_write(c, p->deadline_us, why, sizeof why) != 0)
        return own_failed(p, why);
    return LL_OK;
}

static int pipe_recv(struct redis_pipe *p, redisReply **r)
{
    redisContext *c = redis_set_of(p->ctx)->link[p->node].c;
    struct redis_wait_entry *e = p->entry;
    const char *name;
    char why[128];
    int i, k;

    if (!p->own) {
        p->entry = NULL;
        if (redis_shared_recv(e, p->deadline_us, p->timeout_ms, r, &p->sent, why,
                              sizeof why) == 0)
            return LL_OK;
        name = redis_name(p->ctx, p->server);
        if (p->cluster)
            redis_cluster_stale(p->ctx->cfg);
        return lock_error(p->ctx, LL_UNAVAILABLE, name, "%s on %s failed: %s", p->what,
                          name, why);
    }
    if (c == NULL)
        return own_failed(p, "connection lost");
    for (i = 0; i < p->n; i++)
        if (redis_link_read(c, p->deadline_us, &r[i], why, sizeof why) != 0) {
            for (k = 0; k < i; k++)
                freeReplyObject(r[k]);
            return own_failed(p, why);
        }
    return LL_OK;
}

/* Command i of p (its protocol text) to `node`, after ASKING for an ASK:
 * its reply, whatever it is, replaces *r (q does not follow it: follow()
 * does). LL_OK, or the failure on ctx (*r left). */
static int resend(struct redis_pipe *p, int i, int node, int ask, redisReply **r)
{
    size_t end = i + 1 < p->n ? p->off[i + 1] : p->keep_len;
    redisReply *rr[2] = { NULL, NULL };
    struct redis_pipe q;
    int rc;

    redis_pipe_init(&q, p->ctx, p->server, p->timeout_ms, p->own ? REDIS_OWN : REDIS_ANY, p->what);
    q.to = node;
    q.resent = 1;
    if (ask)
        redis_pipe_add(&q, "ASKING");
    pipe_append(&q, p->keep + p->off[i], (int)(end - p->off[i]));
    q.slot = -1;                        /* q.to decides */
    if ((rc = redis_pipe_run(&q, rr)) != LL_OK)
        return rc;
    freeReplyObject(*r);
    *r = rr[ask];
    if (ask)
        freeReplyObject(rr[0]);
    return LL_OK;
}

/* Follow command i's reply until it is neither MOVED, ASK nor TRYAGAIN:
 * MOVED and ASK to the node named (MOVED also sets the slot's node),
 * TRYAGAIN (a multi-key command in a slot being migrated, some keys not
 * there yet) to the same node after a pause, with ASKING again if that
 * was an ASK's. From the third MOVED or ASK on each waits
 * REDIS_TRYAGAIN_MS first (while a slot changes hands, source and target
 * may point at each other for a moment); REDIS_CLUSTER_HOPS of them in
 * all. TRYAGAIN lasts as long as the migration moves the slot's keys, a
 * pace set by whoever migrates it, not by us: it is retried by time,
 * REDIS_TRYAGAIN_MAX_MS at most (1 s, a hundred tries, once fell short
 * under the sanitizers while tests/redis_cluster.sh moved a slot). */
static int follow_one(struct redis_pipe *p, int i, redisReply **r)
{
    int node = p->node, ask = 0, hops = 0, moved, again;
    int64_t again_since = 0;

    for (;;) {
        moved = redis_is_error(*r, "MOVED ");
        again = redis_is_error(*r, "TRYAGAIN");
        if (!moved && !again && !redis_is_error(*r, "ASK "))
            return LL_OK;
        if (again) {
            if (again_since == 0)
                again_since = now_ms();
            else if (now_ms() - again_since > REDIS_TRYAGAIN_MAX_MS)
                return lock_error(p->ctx, LL_UNAVAILABLE, "redis cluster", "%s: TRYAGAIN "
                                  "for %d ms (%s)", p->what, REDIS_TRYAGAIN_MAX_MS, (*r)->str);
        } else if (++hops > REDIS_CLUSTER_HOPS) {
            return lock_error(p->ctx, LL_UNAVAILABLE, "redis cluster", "%s: still redirected "
                              "after %d tries (%s)", p->what, REDIS_CLUSTER_HOPS, (*r)->str);
        } else {
            ask = !moved;
            if ((node = redis_cluster_redirect(p->ctx->cfg, (*r)->str, moved)) < 0)
                return lock_error(p->ctx, LL_ERROR, "redis cluster", "%s: a redirection "
                                  "not understood: %s", p->what, (*r)->str);
        }
        if (hops > 2 || again)
            sleep_us(REDIS_TRYAGAIN_MS * 1000LL);
        if (resend(p, i, node, ask, r) != LL_OK)
            return p->ctx->err;
    }
}

/* On a cluster: every reply followed (follow_one()). LL_OK, or the
 * failure on ctx (r freed). */
static int follow(struct redis_pipe *p, redisReply **r)
{
    int i, rc;

    for (i = 0; i < p->n; i++)
        if ((rc = follow_one(p, i, &r[i])) != LL_OK) {
            redis_replies_free(r, p->n);
            return rc;
        }
    return LL_OK;
}

/* On a cluster, a step (a WATCH or a MULTI in p) whose command was
 * redirected: not followed, as redis.h says. LL_OK when none was;
 * otherwise every MOVED sets its slot's node, r is freed, and LL_LOST. */
static int step_redirected(struct redis_pipe *p, redisReply **r)
{
    const char *why = NULL;
    char said[96];
    int i;

    for (i = 0; i < p->n; i++) {
        int moved = redis_is_error(r[i], "MOVED ");

        if (!moved && !redis_is_error(r[i], "ASK ") && !redis_is_error(r[i], "TRYAGAIN"))
            continue;
        if (moved)
            redis_cluster_redirect(p->ctx->cfg, r[i]->str, 1);
        if (why == NULL)
            why = r[i]->str;
    }
    if (why == NULL)
        return LL_OK;
    snprintf(said, sizeof said, "%s", why);
    redis_replies_free(r, p->n);
    return lock_error(p->ctx, LL_LOST, "redis cluster", "%s: slot %d is moving (%s): "
                      "nothing of the step ran, and it is not split across nodes", p->what,
                      p->slot, said);
}

int redis_pipe_recv(struct redis_pipe *p, redisReply **r)
{
    int rc = pipe_recv(p, r);

    if (rc == LL_OK && p->cluster && !p->resent)
        rc = p->whole ? step_redirected(p, r) : follow(p, r);
    free(p->keep);
    free(p->off);
    p->keep = NULL;
    p->off = NULL;
    return rc;
}

int redis_pipe_run(struct redis_pipe *p, redisReply **r)
{
    int rc = redis_pipe_send(p);

    if (rc != LL_OK) {
        redis_pipe_free(p);
        return rc;
    }
    return redis_pipe_recv(p, r);
}

void redis_pipe_free(struct redis_pipe *p)
{
    free(p->buf);
    free(p->keep);
    free(p->off);
    p->buf = p->keep = NULL;
    p->off = NULL;
    if (p->entry) {
        redis_shared_abandon(p->entry);
        p->entry = NULL;
    } else if (p->own && p->sent && redis_set_of(p->ctx)->link[p->node].c) {
        redis_link_forget(&redis_set_of(p->ctx)->link[p->node], "replies left unread");
    }
}

int redis_pipe_drop(struct redis_pipe *p)
{
    const char *name;
    int rc;

    if (p->own) {
        rc = own_failed(p, "dropped (?lose_answer)");
    } else {
        redis_shared_fail(p->ctx, p->node, "dropped (?lose_answer)");
        name = redis_name(p->ctx, p->server);
        rc = lock_error(p->ctx, LL_UNAVAILABLE, name, "%s on %s failed: dropped", p->what,
                        name);
    }
    redis_pipe_free(p);
    return rc;
}

void redis_replies_free(redisReply **r, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (r[i])
            freeReplyObject(r[i]);
}

/* ---------------------------------------------------------------- commands */

static redisReply *run_one(struct redis_pipe *p, int *sent)
{
    redisReply *r = NULL;
    int rc = redis_pipe_run(p, &r);

    if (sent)
        *sent = p->sent;
    return rc == LL_OK ? r : NULL;
}

redisReply *redis_cmd(struct lock_ctx *ctx, int server, const char *fmt, ...)
{
    struct redis_pipe p;
    va_list ap;

    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY,
                    strchr(fmt, ' ') ? "command" : fmt);
    va_start(ap, fmt);
    pipe_addv(&p, fmt, ap);
    va_end(ap);
    return run_one(&p, NULL);
}

redisReply *redis_cmd_argv(struct lock_ctx *ctx, int server, int argc, const char **argv)
{
    struct redis_pipe p;

    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, argv[0]);
    redis_pipe_argv(&p, argc, argv);
    return run_one(&p, NULL);
}

int redis_is_error(const redisReply *r, const char *prefix)
{
    return r->type == REDIS_REPLY_ERROR && r->str &&
           strncmp(r->str, prefix, strlen(prefix)) == 0;
}

static pthread_mutex_t script_lock = PTHREAD_MUTEX_INITIALIZER;

/* s's SHA1 into sha: SCRIPT LOAD once per process; empty if the server
 * refused. 0, or -1 when the server could not be asked. */
static int script_sha(struct lock_ctx *ctx, int server, struct redis_script *s, char sha[41])
{
    struct redis_pipe p;
    redisReply *r;

    pthread_mutex_lock(&script_lock);
    memcpy(sha, s->sha, 41);
    pthread_mutex_unlock(&script_lock);
    if (sha[0])
        return 0;
    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, "EVALSHA");
    redis_pipe_add(&p, "SCRIPT LOAD %s", s->text);
    if ((r = run_one(&p, NULL)) == NULL)
        return -1;
    if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        pthread_mutex_lock(&script_lock);
        memcpy(s->sha, r->str, 40);
        s->sha[40] = '\0';
        memcpy(sha, s->sha, 41);
        pthread_mutex_unlock(&script_lock);
    }
    freeReplyObject(r);
    return 0;
}

redisReply *redis_eval_sent(struct lock_ctx *ctx, int server, struct redis_script *s,
                            int nkeys, int argc, const char **argv, int *sent)
{
    const char *args[REDIS_EVAL_ARGS + 3];
    struct redis_pipe p;
    char sha[41], nk[12];
    redisReply *r;
    int i, was = 0;

    assert(argc + 3 <= (int)(sizeof args / sizeof args[0]));
    if (sent)
        *sent = 0;
    if (script_sha(ctx, server, s, sha) < 0)
        return NULL;
    snprintf(nk, sizeof nk, "%d", nkeys);
    args[1] = sha;
    args[2] = nk;
    for (i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    if (sha[0]) {
        args[0] = "EVALSHA";
        redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, "EVALSHA");
        redis_pipe_argv(&p, argc + 3, args);
        r = run_one(&p, &was);
        if (sent)
            *sent = was;
        if (r == NULL || !redis_is_error(r, "NOSCRIPT"))
            return r;
        freeReplyObject(r);     /* a restarted server: send the source */
    }
    args[0] = "EVAL";
    args[1] = s->text;
    redis_pipe_init(&p, ctx, server, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, "EVALSHA");
    redis_pipe_argv(&p, argc + 3, args);
    r = run_one(&p, &was);
    if (sent)
        *sent = was;
    return r;
}

redisReply *redis_eval(struct lock_ctx *ctx, int server, struct redis_script *s,
                       int nkeys, int argc, const char **argv)
{
    return redis_eval_sent(ctx, server, s, nkeys, argc, argv, NULL);
}

const char *redis_name(struct lock_ctx *ctx, int server)
{
    struct redis_set *rs = redis_set_of(ctx);

    server = node_of(ctx, server);
    if (use_shared(ctx))
        snprintf(rs->name[server], sizeof rs->name[server], "%s",
                 redis_shared_name(ctx, server));
    return rs->name[server];
}

int redis_drop(struct lock_ctx *ctx, int server, const char *what)
{
    const char *name = redis_name(ctx, server);
    struct redis_link *l;

    server = node_of(ctx, server);
    l = &redis_set_of(ctx)->link[server];
    if (use_shared(ctx)) {
        redis_shared_fail(ctx, server, "dropped");
        return lock_error(ctx, LL_UNAVAILABLE, name, "%s on %s failed: dropped", what, name);
    }
    redis_link_forget(l, NULL);
    return lock_error(ctx, LL_UNAVAILABLE, name, "%s on %s failed: %s", what, name, l->lasterr);
}

int redis_reply_error(struct lock_ctx *ctx, int server, redisReply *r, const char *key)
{
    const char *name = redis_name(ctx, server);
    int rc;

    redis_set_of(ctx)->wrongtype = redis_is_error(r, "WRONGTYPE");
    if (redis_set_of(ctx)->wrongtype)
        rc = lock_error(ctx, LL_ERROR, name, "%s on %s holds another strategy's key type (%s); "
                        "POST /stock/reset clears it", key, name, r->str);
    else if (redis_is_error(r, "LOADING") || redis_is_error(r, "BUSY") ||
             redis_is_error(r, "MASTERDOWN"))
        rc = lock_error(ctx, LL_UNAVAILABLE, name, "%s: %s", name, r->str);
    else if (redis_is_error(r, "CLUSTERDOWN") || redis_is_error(r, "TRYAGAIN")) {
        rc = lock_error(ctx, LL_UNAVAILABLE, name, "%s: %s", name, r->str);
        redis_cluster_stale(ctx->cfg);      /* a failover: ask for the map again */
    }
    else if (redis_is_error(r, "READONLY")) {      /* a demoted master: ask again */
        rc = lock_error(ctx, LL_UNAVAILABLE, name, "%s is a replica now (a failover): %s",
                        name, r->str);
        if (redis_cluster_on(ctx->cfg))
            redis_cluster_stale(ctx->cfg);
        if (use_shared(ctx))
            redis_shared_fail(ctx, node_of(ctx, server), "a replica now (READONLY)");
        else
            redis_link_forget(&redis_set_of(ctx)->link[node_of(ctx, server)], r->str);
    } else
        rc = lock_error(ctx, LL_ERROR, name, "%s on %s: %s", key, name,
                        r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply type");
    freeReplyObject(r);
    return rc;
}
