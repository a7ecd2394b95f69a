/* redis_cluster.c — the slot of a key, the slot map of a Redis Cluster and
 * its nodes (redis_cluster.h), for redis.c's routing.
 *
 * The slot is Redis Cluster's own: CRC16-CCITT (XMODEM: polynomial 0x1021,
 * initial 0) of the key mod 16384, or of its hash tag, the part between the
 * first '{' and the next '}' when that is not empty ("{P}" and
 * "redisson_lock__channel:{P}" share a slot). CLUSTER KEYSLOT gives the
 * same numbers (the unit tests hold a few).
 *
 * The map: for each slot the node of its master, from CLUSTER SLOTS, asked
 * of the first node that answers (the one that answered last, then the
 * others in the table's order: the seeds first). It is loaded at the first
 * use and again, at most every REDIS_CLUSTER_REFRESH_MS, after anything
 * said it is stale: a MOVED (whose own slot is set at once), a node lost,
 * CLUSTERDOWN. Asking is a bare connection of its own, every wait through
 * the wait layer (a coroutine parks), outside the mutex; whoever finds the
 * map stale asks, a caller that finds a loaded map while another asks
 * uses it as it is, and one that finds none asks as well.
 *
 * One state per configuration (an instance has one; a test may have two),
 * shared by the loop and any threads under one mutex.
 */
#include "redis_cluster.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REDIS_CLUSTER_REFRESH_MS 100    /* least time between two askings */
#define CLUSTER_ASK_MS           500    /* CLUSTER SLOTS, per node asked   */
#define CLUSTER_STATES           16

/* ---------------------------------------------------------------- slots */

static uint16_t crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (b = 0; b < 8; b++)
            crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

int redis_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len), *close;

    if (open) {
        close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
        if (close && close > open + 1) {
            key = open + 1;
            len = (size_t)(close - open - 1);
        }
    }
    return crc16(key, len) & (REDIS_CLUSTER_SLOTS - 1);
}

/* One bulk string of a command's protocol text at *pos: 0 and its place,
 * or -1 when the text is not what hiredis formats. */
static int bulk_at(const char *cmd, size_t len, size_t *pos, const char **s, size_t *n)
{
    char *end;
    long v;

    if (*pos >= len || cmd[*pos] != '$')
        return -1;
    v = strtol(cmd + *pos + 1, &end, 10);
    if (v < 0 || (size_t)(end - cmd) + 2 + (size_t)v + 2 > len)
        return -1;
    *s = end + 2;
    *n = (size_t)v;
    *pos = (size_t)(end - cmd) + 2 + (size_t)v + 2;
    return 0;
}

static int word_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

int redis_cmd_slot(const char *cmd, size_t len)
{
    const char *arg[4] = { 0 }, *s;
    size_t alen[4] = { 0 }, n, pos;
    long argc, i;
    char *end;

    if (len < 4 || cmd[0] != '*')
        return -1;
    argc = strtol(cmd + 1, &end, 10);
    pos = (size_t)(end - cmd) + 2;
    for (i = 0; i < argc; i++) {
        if (bulk_at(cmd, len, &pos, &s, &n) != 0)
            return -1;
        if (i < 4) {
            arg[i] = s;
            alen[i] = n;
        } else if (word_is(arg[0], alen[0], "XREADGROUP") && word_is(s, n, "STREAMS")) {
            if (bulk_at(cmd, len, &pos, &s, &n) != 0)
                return -1;
            return redis_key_slot(s, n);
        }
    }
    if (argc < 2)
        return -1;                      /* MULTI, EXEC, ROLE … */
    if (word_is(arg[0], alen[0], "EVAL") || word_is(arg[0], alen[0], "EVALSHA"))
        return argc > 3 && !(alen[2] == 1 && arg[2][0] == '0') ? redis_key_slot(arg[3], alen[3])
                                                                : -1;
    if (word_is(arg[0], alen[0], "XGROUP") || word_is(arg[0], alen[0], "XINFO"))
        return argc > 2 ? redis_key_slot(arg[2], alen[2]) : -1;
    if (word_is(arg[0], alen[0], "SCRIPT") || word_is(arg[0], alen[0], "WAIT") ||
        word_is(arg[0], alen[0], "CLUSTER") || word_is(arg[0], alen[0], "INFO") ||
        word_is(arg[0], alen[0], "CLIENT") || word_is(arg[0], alen[0], "CONFIG"))
        return -1;
    return redis_key_slot(arg[1], alen[1]);
}

/* ---------------------------------------------------------------- the map */

struct cluster {
    const struct config *cfg;
    struct hostport node[CONFIG_MAX_SERVERS];
    int             nnode;
    int16_t         slot_node[REDIS_CLUSTER_SLOTS];     /* -1: no master known */
    int             loaded, stale, asking, last_good;
    int64_t         next_ask_ms;
    char            lasterr[160];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct cluster *states[CLUSTER_STATES];

int redis_cluster_on(const struct config *cfg)
{
    return cfg->ncluster > 0;
}

/* Under mu: cfg's state, made with its seeds. */
static struct cluster *state_of(const struct config *cfg)
{
    struct cluster *c;
    int i;

    for (i = 0; i < CLUSTER_STATES && states[i]; i++)
        if (states[i]->cfg == cfg)
            return states[i];
    /* States live as long as the process (callers keep them outside mu):
     * more cluster configurations than this is a bug of a test. */
    assert(i < CLUSTER_STATES);
    c = xcalloc(1, sizeof *c);
    c->cfg = cfg;
    for (c->nnode = 0; c->nnode < cfg->ncluster; c->nnode++)
        c->node[c->nnode] = cfg->cluster[c->nnode];
    memset(c->slot_node, 0xff, sizeof c->slot_node);
    states[i] = c;
    return c;
}

/* Under mu: the index of host:port, added if new (-1: the table is full). */
static int node_index(struct cluster *c, const char *host, size_t hlen, int port)
{
    int i;

    if (hlen == 0 || hlen >= sizeof c->node[0].host)
        return -1;
    for (i = 0; i < c->nnode; i++)
        if (c->node[i].port == port && strlen(c->node[i].host) == hlen &&
            memcmp(c->node[i].host, host, hlen) == 0)
            return i;
    if (c->nnode == CONFIG_MAX_SERVERS)
        return -1;
    memcpy(c->node[i].host, host, hlen);
    c->node[i].host[hlen] = '\0';
    c->node[i].port = port;
    return c->nnode++;
}

/* CLUSTER SLOTS of the node at hp: its reply, or NULL with why. */
static redisReply *slots_of(const struct hostport *hp, char *why, size_t wlen)
{
    int64_t deadline = now_us() + CLUSTER_ASK_MS * 1000LL;
    redisContext *rc = redis_connect_to(hp->host, hp->port, deadline, why, wlen);
    redisReply *r = NULL;

    if (rc == NULL)
        return NULL;
    if (redisAppendCommand(rc, "CLUSTER SLOTS") == REDIS_OK &&
        redis_link_write(rc, deadline, why, wlen) == 0)
        redis_link_read(rc, deadline, &r, why, wlen);
    redisFree(rc);
    if (r && r->type != REDIS_REPLY_ARRAY) {
        snprintf(why, wlen, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Under mu: the map from a CLUSTER SLOTS reply (asked of `from`). */
static void map_load(struct cluster *c, const redisReply *r, const struct hostport *from)
{
    size_t i;
    long long s;
    int node;

    memset(c->slot_node, 0xff, sizeof c->slot_node);
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        m = e->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING || m->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        node = m->element[0]->len ? node_index(c, m->element[0]->str, m->element[0]->len,
                                               (int)m->element[1]->integer)
                                  : node_index(c, from->host, strlen(from->host),
                                               (int)m->element[1]->integer);
        if (node < 0)
            continue;
        for (s = e->element[0]->integer; s <= e->element[1]->integer && s < REDIS_CLUSTER_SLOTS; s++)
            if (s >= 0)
                c->slot_node[s] = (int16_t)node;
    }
    c->loaded = 1;
    c->stale = 0;
}

/* Ask the nodes for the map, the one that answered last first. */
static void map_ask(struct cluster *c)
{
    struct hostport hp[CONFIG_MAX_SERVERS];
    char why[112] = "no node known";   /* fits lasterr with its words */
    redisReply *r = NULL;
    int i, n, first, k = 0;

    pthread_mutex_lock(&mu);
    n = c->nnode;
    first = c->last_good;
    memcpy(hp, c->node, sizeof hp);
    c->asking = 1;
    c->next_ask_ms = now_ms() + REDIS_CLUSTER_REFRESH_MS;
    pthread_mutex_unlock(&mu);
    for (i = 0; i < n && r == NULL; i++) {
        k = (first + i) % n;
        r = slots_of(&hp[k], why, sizeof why);
    }
    pthread_mutex_lock(&mu);
    c->asking = 0;
    if (r) {
        map_load(c, r, &hp[k]);
        c->last_good = k;
    } else {
        snprintf(c->lasterr, sizeof c->lasterr, "no node answers CLUSTER SLOTS (last: %s)", why);
    }
    pthread_mutex_unlock(&mu);
    if (r)
        freeReplyObject(r);
}

int redis_cluster_node(struct lock_ctx *ctx, int slot)
{
    struct cluster *c;
    int ask, node;
    char err[160];

    pthread_mutex_lock(&mu);
    c = state_of(ctx->cfg);
    /* No map yet: ask too when another is asking (its answer would come
     * too late for this caller); a loaded map serves while one asks. */
    ask = c->loaded ? c->stale && !c->asking && now_ms() >= c->next_ask_ms
                    : c->asking || now_ms() >= c->next_ask_ms;
    pthread_mutex_unlock(&mu);
    if (ask)
        map_ask(c);
    pthread_mutex_lock(&mu);
    node = c->loaded ? c->slot_node[slot] : -1;
    if (node < 0)
        c->stale = 1;
    if (node < 0 && c->loaded)
        snprintf(err, sizeof err, "no master serves slot %d (a failover?)", slot);
    else
        snprintf(err, sizeof err, "%s", c->lasterr[0] ? c->lasterr : "the map is being asked for");
    pthread_mutex_unlock(&mu);
    if (node < 0) {
        lock_error(ctx, LL_UNAVAILABLE, "redis cluster", "redis cluster: %s", err);
        return -1;
    }
    return node;
}

int redis_cluster_redirect(const struct config *cfg, const char *err, int moved)
{
    const char *sp = strchr(err, ' '), *addr, *colon;
    long slot, port;
    struct cluster *c;
    int node;

    if (sp == NULL)
        return -1;
    slot = strtol(sp + 1, (char **)&addr, 10);
    if (*addr != ' ' || slot < 0 || slot >= REDIS_CLUSTER_SLOTS ||
        (colon = strrchr(addr + 1, ':')) == NULL)
        return -1;
    port = strtol(colon + 1, NULL, 10);
    if (port <= 0 || port > 65535)
        return -1;
    pthread_mutex_lock(&mu);
    c = state_of(cfg);
    node = node_index(c, addr + 1, (size_t)(colon - addr - 1), (int)port);
    if (moved && node >= 0) {
        c->slot_node[slot] = (int16_t)node;
        c->stale = 1;
    }
    pthread_mutex_unlock(&mu);
    return node;
}

void redis_cluster_stale(const struct config *cfg)
{
    pthread_mutex_lock(&mu);
    state_of(cfg)->stale = 1;
    pthread_mutex_unlock(&mu);
}

void redis_cluster_addr(const struct config *cfg, int node, struct hostport *out)
{
    struct cluster *c;

    pthread_mutex_lock(&mu);
    c = state_of(cfg);
    *out = node < c->nnode ? c->node[node] : cfg->cluster[0];
    pthread_mutex_unlock(&mu);
}
