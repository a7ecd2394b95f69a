/* redis_conn.c — the Redis family's connections, scripts and pub/sub.
 *
 * Design (see redis_private.h): per worker slot, lazily, one blocking
 * hiredis connection per server and one pub/sub connection to server 0,
 * all with connect and command timeouts. A transport error frees the
 * connection; the next use reconnects, and a failed connect holds off the
 * next one for REDIS_RECONNECT_MS, so a dead server is not hammered. The
 * failure becomes LL_UNAVAILABLE with backend "redis HOST:PORT". Every
 * command is one round trip counted in ctx->backend_ops.
 *
 * Where server 0 is. With --redis-sentinel, server 0 is whatever master the
 * Sentinels name (SENTINEL get-master-addr-by-name locklab), asked at every
 * connect to it: by the slots' connections, the watchdog's and the pub/sub
 * dispatcher's (redis_server_addr()). A failover is followed the way a
 * Sentinel client follows one: Sentinel kills the clients of the servers it
 * reconfigures, every connection finds its peer gone, and the next use
 * connects to the master it names then. A connection that still reaches
 * a demoted master is answered READONLY at its first write, which drops it
 * the same way. When no Sentinel answers, the master last named, or else
 * the address given, is used.
 */
#include "redis_private.h"
#include "../core/util.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct redis_script redis_compare_and_delete = {
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('del', KEYS[1]) else return 0 end",
    ""
};

static pthread_mutex_t script_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- where server 0 is */

#define SENTINEL_TIMEOUT_MS 300         /* per Sentinel asked */

static struct {
    pthread_mutex_t mu;
    struct hostport named;              /* the master the Sentinels last named */
    int             known;
} master = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Ask one Sentinel for the master's address: 0, or -1. */
static int sentinel_ask(const struct hostport *s, struct hostport *out)
{
    struct timeval tv = { 0, SENTINEL_TIMEOUT_MS * 1000 };
    redisContext *c = redisConnectWithTimeout(s->host, s->port, tv);
    redisReply *r = NULL;
    int rc = -1;

    if (c && !c->err) {
        redisSetTimeout(c, tv);
        r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", REDIS_SENTINEL_MASTER);
    }
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
        strlen(r->element[0]->str) < sizeof out->host &&
        parse_int(r->element[1]->str, 1, 65535, &(long long){ 0 }) == 0) {
        snprintf(out->host, sizeof out->host, "%s", r->element[0]->str);
        out->port = atoi(r->element[1]->str);
        rc = 0;
    }
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    return rc;
}

void redis_server_addr(const struct config *cfg, int server, struct hostport *out)
{
    int i;

    *out = cfg->redis[server];
    if (server != 0 || cfg->nsentinel == 0)
        return;
    for (i = 0; i < cfg->nsentinel; i++)
        if (sentinel_ask(&cfg->sentinel[i], out) == 0) {
            pthread_mutex_lock(&master.mu);
            master.named = *out;
            master.known = 1;
            pthread_mutex_unlock(&master.mu);
            return;
        }
    pthread_mutex_lock(&master.mu);
    if (master.known)
        *out = master.named;
    pthread_mutex_unlock(&master.mu);
}

/* ---------------------------------------------------------------- the set */

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

static void link_close(struct redis_link *l)
{
    if (l->c)
        redisFree(l->c);
    l->c = NULL;
}

void redis_ctx_free(struct lock_ctx *ctx)
{
    struct redis_set *rs = ctx->redis;
    int i;

    if (rs == NULL)
        return;
    for (i = 0; i < CONFIG_MAX_SERVERS; i++)
        link_close(&rs->link[i]);
    free(rs);
    ctx->redis = NULL;
}

static struct timeval ms_tv(int ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    return tv;
}

/* Connect l to server i unless it is connected or throttled. */
static redisContext *link_open(struct lock_ctx *ctx, struct redis_link *l, int server,
                               int timeout_ms)
{
    struct redis_set *rs = redis_set_of(ctx);
    struct hostport hp;
    int64_t now;

    if (l->c && fd_peer_closed(l->c->fd)) {
        snprintf(l->lasterr, sizeof l->lasterr, "closed by the server");
        link_close(l);
    }
    if (l->c) {
        if (l->timeout_ms != timeout_ms) {
            redisSetTimeout(l->c, ms_tv(timeout_ms));
            l->timeout_ms = timeout_ms;
        }
        return l->c;
    }
    now = now_ms();
    if (now < l->retry_at_ms) {
        lock_error(ctx, LL_UNAVAILABLE, rs->name[server], "%s is down: %s (next try in %lld ms)",
                   rs->name[server], l->lasterr, (long long)(l->retry_at_ms - now));
        return NULL;
    }
    ctx->backend_ops++;
    redis_server_addr(ctx->cfg, server, &hp);
    snprintf(rs->name[server], sizeof rs->name[server], "redis %s:%d", hp.host, hp.port);
    l->gen++;
    l->c = redisConnectWithTimeout(hp.host, hp.port, ms_tv(timeout_ms));
    if (l->c == NULL || l->c->err) {
        snprintf(l->lasterr, sizeof l->lasterr, "%s", l->c ? l->c->errstr : "out of memory");
        link_close(l);
        l->retry_at_ms = now + REDIS_RECONNECT_MS;
        lock_error(ctx, LL_UNAVAILABLE, rs->name[server], "cannot connect to %s: %s",
                   rs->name[server], l->lasterr);
        return NULL;
    }
    redisSetTimeout(l->c, ms_tv(timeout_ms));
    redisEnableKeepAlive(l->c);
    l->timeout_ms = timeout_ms;
    return l->c;
}

redisContext *redis_link(struct lock_ctx *ctx, int server, int timeout_ms)
{
    struct redis_set *rs = redis_set_of(ctx);
    return link_open(ctx, &rs->link[server], server, timeout_ms);
}

/* Close a failed connection. The next use reconnects at once: a lost
 * connection (a command timed out, the server restarted) says little about
 * the server; only a failed connect throttles the next one. */
static void link_forget(struct redis_link *l)
{
    snprintf(l->lasterr, sizeof l->lasterr, "%s",
             l->c && l->c->errstr[0] ? l->c->errstr : "connection lost");
    link_close(l);
}

static int link_drop(struct lock_ctx *ctx, struct redis_link *l, int server, const char *what)
{
    struct redis_set *rs = redis_set_of(ctx);

    link_forget(l);
    return lock_error(ctx, LL_UNAVAILABLE, rs->name[server], "%s on %s failed: %s",
                      what, rs->name[server], l->lasterr);
}

int redis_drop(struct lock_ctx *ctx, int server, const char *what)
{
    return link_drop(ctx, &redis_set_of(ctx)->link[server], server, what);
}

/* ---------------------------------------------------------------- commands */

redisReply *redis_cmd(struct lock_ctx *ctx, int server, const char *fmt, ...)
{
    redisContext *c = redis_link(ctx, server, REDIS_CMD_TIMEOUT_MS);
    redisReply *r;
    va_list ap;

    if (c == NULL)
        return NULL;
    ctx->backend_ops++;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        redis_drop(ctx, server, strchr(fmt, ' ') ? "command" : fmt);
    return r;
}

static int is_error(const redisReply *r, const char *prefix)
{
    return r->type == REDIS_REPLY_ERROR && r->str &&
           strncmp(r->str, prefix, strlen(prefix)) == 0;
}

static redisReply *run_argv(redisContext *c, int argc, const char **argv, unsigned *ops)
{
    (*ops)++;
    return redisCommandArgv(c, argc, argv, NULL);
}

/* SCRIPT LOAD once per process; leaves sha empty if the server refused. */
static int script_sha(redisContext *c, struct redis_script *s, char sha[41], unsigned *ops)
{
    redisReply *r;

    pthread_mutex_lock(&script_lock);
    memcpy(sha, s->sha, 41);
    pthread_mutex_unlock(&script_lock);
    if (sha[0])
        return 0;
    (*ops)++;
    r = redisCommand(c, "SCRIPT LOAD %s", s->text);
    if (r == NULL)
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

redisReply *redis_eval_on(redisContext *c, struct redis_script *s,
                          int nkeys, int argc, const char **argv, unsigned *ops)
{
    const char *args[REDIS_EVAL_ARGS + 3];
    char sha[41], nk[12];
    redisReply *r;
    int i;

    assert(argc + 3 <= (int)(sizeof args / sizeof args[0]));
    if (script_sha(c, s, sha, ops) < 0)
        return NULL;
    snprintf(nk, sizeof nk, "%d", nkeys);
    args[1] = sha;
    args[2] = nk;
    for (i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    if (sha[0]) {
        args[0] = "EVALSHA";
        r = run_argv(c, argc + 3, args, ops);
        if (r == NULL || !is_error(r, "NOSCRIPT"))
            return r;
        freeReplyObject(r);     /* a restarted server: send the source */
    }
    args[0] = "EVAL";
    args[1] = s->text;
    return run_argv(c, argc + 3, args, ops);
}

redisReply *redis_eval(struct lock_ctx *ctx, int server, struct redis_script *s,
                       int nkeys, int argc, const char **argv)
{
    return redis_eval_within(ctx, server, REDIS_CMD_TIMEOUT_MS, s, nkeys, argc, argv);
}

redisReply *redis_eval_within(struct lock_ctx *ctx, int server, int timeout_ms,
                              struct redis_script *s, int nkeys, int argc, const char **argv)
{
    redisContext *c = redis_link(ctx, server, timeout_ms);
    redisReply *r;

    if (c == NULL)
        return NULL;
    r = redis_eval_on(c, s, nkeys, argc, argv, &ctx->backend_ops);
    if (r == NULL)
        redis_drop(ctx, server, "EVALSHA");
    return r;
}

int redis_reply_error(struct lock_ctx *ctx, int server, redisReply *r, const char *key)
{
    struct redis_set *rs = redis_set_of(ctx);
    int rc;

    if (is_error(r, "WRONGTYPE"))
        rc = lock_error(ctx, LL_ERROR, rs->name[server],
                        "%s on %s holds another strategy's key type (%s); "
                        "POST /stock/reset clears it", key, rs->name[server], r->str);
    else if (is_error(r, "LOADING") || is_error(r, "BUSY") || is_error(r, "MASTERDOWN"))
        rc = lock_error(ctx, LL_UNAVAILABLE, rs->name[server], "%s: %s",
                        rs->name[server], r->str);
    else if (is_error(r, "READONLY")) {     /* a demoted master: ask again */
        rc = lock_error(ctx, LL_UNAVAILABLE, rs->name[server], "%s is a replica now (a "
                        "failover): %s", rs->name[server], r->str);
        link_forget(&rs->link[server]);
    } else
        rc = lock_error(ctx, LL_ERROR, rs->name[server], "%s on %s: %s", key,
                        rs->name[server], r->type == REDIS_REPLY_ERROR ? r->str
                        : "unexpected reply type");
    freeReplyObject(r);
    return rc;
}

int redis_ttl_reply(struct lock_ctx *ctx, redisReply *r, const char *key, long long *ttl)
{
    *ttl = -1;
    if (r == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_NIL)
        *ttl = -2;
    else if (r->type == REDIS_REPLY_INTEGER)
        *ttl = r->integer;
    else
        return redis_reply_error(ctx, 0, r, key);
    freeReplyObject(r);
    return LL_OK;
}

int redis_timeout(struct lock_ctx *ctx, int server, const char *key, const char *type)
{
    struct redis_set *rs = redis_set_of(ctx);
    char why[sizeof ctx->errstr];
    redisReply *r;

    snprintf(why, sizeof why, "%s", ctx->errstr);
    r = redis_cmd(ctx, server, "TYPE %s", key);
    if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "none") != 0 &&
        strcmp(r->str, type) != 0) {
        lock_error(ctx, LL_ERROR, rs->name[server],
                   "%s is a %s, not a %s: left by another strategy; POST /stock/reset "
                   "clears it", key, r->str, type);
        freeReplyObject(r);
        return LL_ERROR;
    }
    if (r)
        freeReplyObject(r);
    return lock_error(ctx, LL_TIMEOUT, NULL, "%s", why);
}

int redis_del(struct lock_ctx *ctx, int server, int nkeys, const char **keys)
{
    const char *argv[8];
    redisContext *c;
    redisReply *r;
    int i;

    assert(nkeys + 1 <= 8);
    if ((c = redis_link(ctx, server, REDIS_CMD_TIMEOUT_MS)) == NULL)
        return ctx->err;
    argv[0] = "DEL";
    for (i = 0; i < nkeys; i++)
        argv[1 + i] = keys[i];
    r = run_argv(c, nkeys + 1, argv, &ctx->backend_ops);
    if (r == NULL)
        return redis_drop(ctx, server, "DEL");
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, server, r, keys[0]);
    freeReplyObject(r);
    return LL_OK;
}

int redis_del_key(struct lock_ctx *ctx, const char *key)
{
    const char *keys[1] = { key };
    return redis_del(ctx, 0, 1, keys);
}

void redis_new_token(struct lock_ctx *ctx, char *buf, int len)
{
    struct redis_set *rs = redis_set_of(ctx);
    char owner[80];

    lock_owner(ctx, owner, sizeof owner);
    snprintf(buf, (size_t)len, "%s:%llu", owner, (unsigned long long)++rs->seq);
}

int64_t redis_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SETNX answers 1 or 0; SET … NX answers OK or nil. */
/* The fenced try (?fence=1): the same SETNX or SET NX, and when it takes
 * the lock, INCR of the key's token counter in the same atomic step, so a
 * token belongs to one acquisition and later ones get larger tokens. */
static struct redis_script set_fenced = {
    "local ok; "
    "if ARGV[2] == '' then ok = redis.call('setnx', KEYS[1], ARGV[1]) == 1; "
    "else ok = redis.call('set', KEYS[1], ARGV[1], 'NX', ARGV[2], ARGV[3]); end; "
    "if ok then return redis.call('incr', KEYS[2]); end; return 0;",
    ""
};

/* One try: 1 taken (and on ctx the token when fenced), 0 held by someone
 * else, -1 a failure recorded on ctx. */
static int set_try(struct lock_ctx *ctx, const char *key, const char *value,
                   const char *unit, int ttl)
{
    char counter[LOCK_KEY_MAX + 8], ttls[16];
    const char *argv[5];
    redisReply *r;
    int got;

    if (ctx->fence) {
        snprintf(counter, sizeof counter, "%s" REDIS_FENCE_SUFFIX, key);
        snprintf(ttls, sizeof ttls, "%d", ttl);
        argv[0] = key, argv[1] = counter, argv[2] = value;
        argv[3] = unit ? unit : "", argv[4] = ttls;
        if ((r = redis_eval(ctx, 0, &set_fenced, 2, 5, argv)) == NULL)
            return -1;
        if (r->type != REDIS_REPLY_INTEGER)
            return redis_reply_error(ctx, 0, r, key), -1;
        ctx->token = r->integer;
        ctx->token_src = REDIS_FENCE;
    } else {
        r = unit ? redis_cmd(ctx, 0, "SET %s %s NX %s %d", key, value, unit, ttl)
                 : redis_cmd(ctx, 0, "SETNX %s %s", key, value);
        if (r == NULL)
            return -1;
        if (r->type == REDIS_REPLY_ERROR || (!unit && r->type != REDIS_REPLY_INTEGER))
            return redis_reply_error(ctx, 0, r, key), -1;
    }
    got = ctx->fence ? r->integer > 0 : unit ? r->type == REDIS_REPLY_STATUS : r->integer == 1;
    freeReplyObject(r);
    return got;
}

int redis_spin(struct lock_ctx *ctx, const char *key, redis_try_fn try_once, const void *arg,
               int64_t lease_ms)
{
    int64_t sent;
    int got;

    for (;;) {
        sent = now_us();
        if ((got = try_once(ctx, key, arg)) < 0)
            return ctx->err;
        if (got) {
            if (lease_ms > 0)   /* the lease runs from the try that took it */
                lock_lease(ctx, sent, lease_ms);
            return LL_OK;
        }
        if (lock_poll(ctx, key) != LL_OK)
            return redis_timeout(ctx, 0, key, "string");
    }
}

struct set_args {
    const char *value, *unit;
    int         ttl;
};

static int set_try_args(struct lock_ctx *ctx, const char *key, const void *arg)
{
    const struct set_args *a = arg;
    return set_try(ctx, key, a->value, a->unit, a->ttl);
}

int redis_set_spin(struct lock_ctx *ctx, const char *key, const char *value,
                   const char *unit, int ttl)
{
    const struct set_args a = { value, unit, ttl };

    return redis_spin(ctx, key, set_try_args, &a,
                      !unit ? 0 : unit[0] == 'E' ? ttl * 1000LL : ttl);
}

int redis_set_token_spin(struct lock_ctx *ctx, const char *key, const char *unit, int ttl)
{
    char token[REDIS_TOKEN_MAX];
    int rc;

    redis_new_token(ctx, token, sizeof token);
    if ((rc = redis_set_spin(ctx, key, token, unit, ttl)) == LL_OK)
        memcpy(redis_set_of(ctx)->token, token, sizeof token);
    return rc;
}
