/* redis_server.c — where Redis server i is, and connecting a link to it:
 * above the links (redis_link.c) and the cluster's map (redis_cluster.c),
 * below the connections that use both (redis.c, redis_shared.c).
 *
 * Server i is --redis's i-th address, or with --redis-cluster node i of
 * the cluster's table. With --redis-sentinel, server 0 is whatever master
 * the Sentinels name (SENTINEL get-master-addr-by-name locklab), asked at
 * every connect to it: by the slots' connections, the shared ones and the
 * pub/sub dispatcher's (redis_server_addr()). A failover is followed the
 * way a Sentinel client follows one: Sentinel kills the clients of the
 * servers it reconfigures, every connection finds its peer gone, and the
 * next use connects to the master it names then. A connection that still
 * reaches a demoted master is answered READONLY at its first write, which
 * drops it the same way (redis_reply_error()). When no Sentinel answers,
 * the master last named, or else the address given, is used.
 */
#include "redis_server.h"
#include "redis_cluster.h"
#include "../core/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL_TIMEOUT_MS 300         /* per Sentinel asked */

/* ---------------------------------------------------------------- where server 0 is */

static struct {
    pthread_mutex_t mu;
    struct hostport named;              /* the master the Sentinels last named */
    int             known;
} master = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Ask one Sentinel for the master's address: 0, or -1. */
static int sentinel_ask(const struct hostport *s, struct hostport *out)
{
    char why[128];
    redisContext *c = redis_connect_to(s->host, s->port,
                                       now_us() + SENTINEL_TIMEOUT_MS * 1000LL, why, sizeof why);
    redisReply *r = NULL;
    int64_t deadline = now_us() + SENTINEL_TIMEOUT_MS * 1000LL;
    int rc = -1;

    if (c == NULL)
        return -1;
    if (redisAppendCommand(c, "SENTINEL get-master-addr-by-name %s",
                           REDIS_SENTINEL_MASTER) == REDIS_OK &&
        redis_link_write(c, deadline, why, sizeof why) == 0)
        redis_link_read(c, deadline, &r, why, sizeof why);
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
    redisFree(c);
    return rc;
}

void redis_server_addr(const struct config *cfg, int server, struct hostport *out)
{
    int i;

    if (redis_cluster_on(cfg)) {       /* server is a node of the cluster */
        redis_cluster_addr(cfg, server, out);
        return;
    }
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

/* ---------------------------------------------------------------- connecting */

int redis_link_connect(struct lock_ctx *ctx, struct redis_link *l, int server, int timeout_ms,
                       char *name, size_t nlen)
{
    struct hostport hp;
    int64_t now = now_ms();

    if (now < l->retry_at_ms) {
        lock_error(ctx, LL_UNAVAILABLE, name, "%s is down: %s (next try in %lld ms)",
                   name, l->lasterr, (long long)(l->retry_at_ms - now));
        return -1;
    }
    ctx->backend_ops++;
    redis_server_addr(ctx->cfg, server, &hp);
    snprintf(name, nlen, "redis %s:%d", hp.host, hp.port);
    l->gen++;
    l->c = redis_connect_to(hp.host, hp.port, now_us() + timeout_ms * 1000LL, l->lasterr,
                            sizeof l->lasterr);
    if (l->c == NULL) {
        l->retry_at_ms = now_ms() + REDIS_RECONNECT_MS;
        lock_error(ctx, LL_UNAVAILABLE, name, "cannot connect to %s: %s", name, l->lasterr);
        return -1;
    }
    return 0;
}
