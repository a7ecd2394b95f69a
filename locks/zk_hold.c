/* zk_hold.c — what the ZooKeeper strategies keep of the locks they hold,
 * on top of the client (clients/zk.c): a slot's holds and tokens, the
 * check before the write, the release, and the deletes that a connection
 * loss left behind.
 *
 * Holds. A slot (ctx->zk) remembers each lock it holds: the strategy and
 * key, our node, the token written into it, how deep the request
 * re-entered, and a reference on the session (struct zk_conn) that
 * created the node. A lock taken in a session that expired is never taken
 * for one of the live session: zk_check() asks ZooKeeper whether the node
 * is still there and its ephemeralOwner still our session, and that answer
 * is the lease the write may count on (the session timeout the server
 * granted, from when it was asked) and, with ?fence=1, its czxid the
 * fencing token.
 *
 * Deletes. Our node is deleted on release, or on any failure after its
 * create. A delete (or a create) whose outcome a connection loss hid is
 * retried once the same session is back; if it cannot be, it is put on a
 * list that the next user of the session works off (zk_lock_session()), as
 * long as that session lives — nodes of a dead session went with it — and
 * so does a task of its own every ZK_RETRY_MS while the list is not
 * empty: an instance that serves nothing else after a failed release would
 * otherwise leave its node at the head of the queue, every other instance
 * waiting behind it until the session ends (CURATOR-678's stuck lock). A
 * sequential create whose answer was lost is found by the prefix of its
 * name (zk_queue.c), so it too can be forgotten here rather than block a
 * queue until its session ends.
 *
 * The last slot to go closes the session (zk_ctx_free): our ephemeral
 * nodes vanish then rather than a session timeout later.
 */
#include "zk_private.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A delete that failed over a connection loss, retried by the next
 * zk_lock_session() while the session is still the one that created the
 * node. */
struct zk_pending {
    uint64_t           gen;
    char               path[ZK_PATH_MAX];
    char               token[ZK_TOKEN_MAX];    /* "" when the name is ours alone */
    int                prefix;  /* path is a parent: delete its children named token* */
    struct zk_pending *next;
};

struct zk_slot {
    struct zk_hold holds[4];
    unsigned       counter;
};

#define ZK_RETRY_MS 500     /* the retrier's pace while deletes are pending */

static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;    /* the four below */
static struct zk_pending *zk_pending;
static int zk_slots_live;
static struct wait_cond retry_cv = WAIT_COND_INIT;  /* something is pending */
static const struct config *retry_cfg;              /* the slots' config    */
static int retry_started;

static void drain_pending(struct lock_ctx *ctx, struct zk_conn *c);

/* ---------------------------------------------------------------- session */

int zk_lock_session(struct lock_ctx *ctx, struct zk_conn **out)
{
    int rc = zk_connect(ctx, out);

    if (rc == LL_OK)
        drain_pending(ctx, *out);
    return rc;
}

void zk_product_path(char *buf, int len, const char *root, const char *key)
{
    const char *colon = strchr(key, ':');
    zk_join(buf, len, root, colon ? colon + 1 : key);
}

int zk_reset_tree(struct lock_ctx *ctx, const char *path, int self)
{
    struct zk_conn *c;
    int rc;

    if ((rc = zk_lock_session(ctx, &c)) != LL_OK)
        return rc;
    rc = zk_delete_tree(ctx, c, path, self);
    zk_put(c);
    return rc;
}

/* ---------------------------------------------------------------- deletes */

/* One attempt at deleting our node. With a token, the name is not ours
 * alone: read the node first and delete that version only if it carries
 * our token in our session. */
static int delete_once(struct lock_ctx *ctx, struct zk_conn *c, const char *node,
                       const char *token)
{
    char buf[ZK_TOKEN_MAX];
    int len = sizeof buf - 1, zrc;
    struct Stat st;

    if (token == NULL || token[0] == '\0')
        return zk_delete(ctx, c, node, -1);
    zrc = zk_get(ctx, c, node, 0, buf, &len, &st);
    if (zrc != ZOK)
        return zrc;
    buf[len < 0 ? 0 : len] = '\0';
    if (strcmp(buf, token) != 0 || st.ephemeralOwner != zk_session_id(c))
        return ZNONODE;         /* not ours: ours is gone already */
    return zk_delete(ctx, c, node, st.version);
}

/* The retrier: while deletes are pending, works them off every
 * ZK_RETRY_MS on a context of its own, whether or not anyone else uses
 * ZooKeeper meanwhile (see the top). */
static void retry_main(void *arg)
{
    struct lock_ctx ctx = { .slot = -1 };
    struct zk_conn *c;

    (void)arg;
    for (;;) {
        pthread_mutex_lock(&hold_mu);
        while (zk_pending == NULL)
            wait_cond_wait(&retry_cv, &hold_mu, WAIT_FOREVER);
        ctx.cfg = retry_cfg;
        pthread_mutex_unlock(&hold_mu);
        sleep_us(ZK_RETRY_MS * 1000LL);
        ctx.err = 0;
        ctx.deadline_ms = now_ms() + ZK_RETRY_MS;
        ctx.wait_ms = ZK_RETRY_MS;
        if (zk_lock_session(&ctx, &c) == LL_OK)     /* drains what is pending */
            zk_put(c);
    }
}

static void pending_add(struct zk_conn *c, const char *node, const char *token, int prefix)
{
    struct zk_pending *p = xcalloc(1, sizeof *p);
    int start;

    p->gen = zk_generation(c);
    p->prefix = prefix;
    strlcopy(p->path, node, sizeof p->path);
    strlcopy(p->token, token ? token : "", sizeof p->token);
    pthread_mutex_lock(&hold_mu);
    p->next = zk_pending;
    zk_pending = p;
    start = !retry_started && retry_cfg != NULL;
    retry_started |= start;
    wait_cond_signal(&retry_cv);
    pthread_mutex_unlock(&hold_mu);
    if (start)
        task_background("zk-retry", retry_main, NULL);
}

/* Delete the children of parent whose names start with prefix: a node
 * whose create was lost in a connection loss, found by its name. */
static int delete_prefixed(struct lock_ctx *ctx, struct zk_conn *c, const char *parent,
                           const char *prefix)
{
    struct String_vector kids;
    char child[ZK_PATH_MAX];
    int zrc, i;

    zrc = zk_children(ctx, c, parent, &kids);
    if (zrc != ZOK)
        return zrc;
    for (i = 0; i < kids.count && (zrc == ZOK || zrc == ZNONODE); i++)
        if (strncmp(kids.data[i], prefix, strlen(prefix)) == 0) {
            zk_join(child, sizeof child, parent, kids.data[i]);
            zrc = zk_delete(ctx, c, child, -1);
        }
    deallocate_String_vector(&kids);
    return zrc;
}

void zk_forget_create(struct zk_conn *c, const char *parent, const char *prefix)
{
    if (!zk_expired(c))
        pending_add(c, parent, prefix, 1);
}

void zk_forget_node(struct zk_conn *c, const char *node, const char *token)
{
    if (!zk_expired(c))
        pending_add(c, node, token, 0);
}

/* Retry the deletes that connection losses left behind, once each. */
static void drain_pending(struct lock_ctx *ctx, struct zk_conn *c)
{
    struct zk_pending *list, *p;
    int zrc;

    pthread_mutex_lock(&hold_mu);
    list = zk_pending;
    zk_pending = NULL;
    pthread_mutex_unlock(&hold_mu);
    while ((p = list) != NULL) {
        list = p->next;
        if (p->gen == zk_generation(c)) {     /* other sessions' nodes died with them */
            zrc = p->prefix ? delete_prefixed(ctx, c, p->path, p->token)
                            : delete_once(ctx, c, p->path, p->token);
            if (zk_retryable(zrc)) {
                pending_add(c, p->path, p->token, p->prefix);
            } else if (zrc != ZOK && zrc != ZNONODE) {
                fprintf(stderr, "locklab: could not delete %s: %s\n", p->path, zerror(zrc));
            }
        }
        free(p);
    }
}

int zk_delete_ours(struct lock_ctx *ctx, struct zk_conn *c, const char *node,
                   const char *token)
{
    int64_t until = now_ms() + zk_timeout_ms(c);
    int zrc, tries;

    /* First attempt: while our session lives nobody else can have removed
     * or replaced our node, so a plain delete is right. After a connection
     * loss the first delete may have happened: check before deleting. */
    zrc = zk_delete(ctx, c, node, -1);
    for (tries = 0; zk_retryable(zrc) && tries < 10; tries++) {
        if (zk_await(ctx, c, until) != LL_OK)
            break;
        zrc = delete_once(ctx, c, node, token);
    }
    if (zrc == ZOK || zrc == ZNONODE)
        return LL_OK;
    if (zk_retryable(zrc) && !zk_expired(c))
        pending_add(c, node, token, 0);
    if (zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE || zk_expired(c))
        return lock_error(ctx, LL_UNAVAILABLE, zk_backend(),
                          "ZooKeeper session expired: %s had already gone with it", node);
    return zk_fail(ctx, zrc, "delete", node);
}

int zk_delete_keeping(struct lock_ctx *ctx, struct zk_conn *c, const char *node,
                      const char *token)
{
    struct lock_saved_error e;
    int rc;

    if (ctx->err == 0)
        return zk_delete_ours(ctx, c, node, token);
    lock_error_save(ctx, &e);
    rc = zk_delete_ours(ctx, c, node, token);
    lock_error_restore(ctx, &e);
    return rc;
}

/* ---------------------------------------------------------------- holds */

static struct zk_slot *slot_of(struct lock_ctx *ctx)
{
    struct zk_slot *s = ctx->zk;

    if (s == NULL) {
        s = ctx->zk = xcalloc(1, sizeof *s);
        pthread_mutex_lock(&hold_mu);
        zk_slots_live++;
        retry_cfg = ctx->cfg;
        pthread_mutex_unlock(&hold_mu);
    }
    return s;
}

unsigned zk_token(struct lock_ctx *ctx, char *buf, int len)
{
    struct zk_slot *s = slot_of(ctx);
    snprintf(buf, (size_t)len, "%s:%d:%u", ctx->cfg->instance_id, ctx->slot, ++s->counter);
    return s->counter;
}

struct zk_hold *zk_hold_find(struct lock_ctx *ctx, const struct lock_ops *ops,
                             const char *key)
{
    struct zk_slot *s = slot_of(ctx);
    int i;

    for (i = 0; i < (int)(sizeof s->holds / sizeof s->holds[0]); i++) {
        struct zk_hold *h = &s->holds[i];
        if (h->ops != ops || strcmp(h->key, key) != 0)
            continue;
        if (h->stamp == ctx->deadline_ms)
            return h;
        /* Left by an earlier request that never released: not a re-entry. */
        fprintf(stderr, "locklab: dropping a stale %s hold of %s\n", ops->name, key);
        zk_delete_ours(ctx, h->conn, h->node, h->token);
        zk_put(h->conn);
        memset(h, 0, sizeof *h);
    }
    return NULL;
}

int zk_hold_add(struct lock_ctx *ctx, const struct lock_ops *ops, const char *key,
                struct zk_conn *c, const char *node, const char *token)
{
    struct zk_slot *s = slot_of(ctx);
    int i;

    for (i = 0; i < (int)(sizeof s->holds / sizeof s->holds[0]); i++) {
        struct zk_hold *h = &s->holds[i];
        if (h->ops != NULL)
            continue;
        h->ops = ops;
        strlcopy(h->key, key, sizeof h->key);
        strlcopy(h->node, node, sizeof h->node);
        strlcopy(h->token, token, sizeof h->token);
        h->depth = 1;
        h->stamp = ctx->deadline_ms;
        h->conn = c;
        return LL_OK;
    }
    zk_delete_ours(ctx, c, node, token);
    zk_put(c);
    return lock_error(ctx, LL_ERROR, zk_backend(), "too many ZooKeeper locks held by slot %d",
                      ctx->slot);
}

int zk_release(struct lock_ctx *ctx, const char *key, int fixed_path)
{
    struct zk_hold *h = zk_hold_find(ctx, ctx->ops, key);
    int rc;

    if (h == NULL)
        return lock_error(ctx, LL_ERROR, zk_backend(), "%s: release of %s not held",
                          ctx->ops->name, key);
    if (--h->depth > 0)
        return LL_OK;
    /* If the sale failed already, its reason stays the answer's. */
    rc = zk_delete_keeping(ctx, h->conn, h->node, fixed_path ? h->token : NULL);
    zk_put(h->conn);
    memset(h, 0, sizeof *h);
    return rc;
}

/* The node is still ours: an exists() answered on our session. That answer
 * also proves the session alive when it was sent, so the lease the write
 * may count on is the session timeout from then (lock_lease): the granted
 * one, which may be shorter than the one asked. With
 * ?fence=1 the token is the node's czxid: ZooKeeper's transaction ids grow
 * with every write of the ensemble, and a holder's node is created before
 * any later holder's (its sequence number, or its turn on the one node of
 * zk-ephemeral), so the holders' tokens grow in the order they hold. */
int zk_check(struct lock_ctx *ctx, const char *key)
{
    struct zk_hold *h = zk_hold_find(ctx, ctx->ops, key);
    int64_t until, sent;
    const char *why = NULL;
    struct Stat st;
    int zrc, tries;

    if (h == NULL)
        return lock_error(ctx, LL_ERROR, zk_backend(), "%s: %s not held", ctx->ops->name, key);
    until = now_ms() + zk_timeout_ms(h->conn);
    for (tries = 0; tries < 10 && why == NULL; tries++) {
        sent = now_us();
        zrc = zk_exists(ctx, h->conn, h->node, 0, &st);
        if (zrc == ZOK && st.ephemeralOwner == zk_session_id(h->conn)) {
            lock_lease(ctx, sent, zk_timeout_ms(h->conn));     /* as granted */
            if (ctx->fence) {
                ctx->token = st.czxid;
                ctx->token_src = ZK_FENCE;
            }
            return LL_OK;
        }
        if (zrc == ZOK)
            why = "it belongs to another session now";
        else if (zrc == ZNONODE)
            why = "the node is gone";
        else if (!zk_retryable(zrc))
            why = zerror(zrc);
        else if (zk_await(ctx, h->conn, until) != LL_OK)
            why = zk_expired(h->conn) ? "session expired" : "connection lost";
    }
    return lock_error(ctx, LL_LOST, zk_backend(),
                      "lock %s lost before the write: %s", h->node, why ? why : "connection lost");
}

void zk_ctx_free(struct lock_ctx *ctx)
{
    struct zk_slot *s = ctx->zk;
    struct zk_pending *p;
    int i, last;

    if (s == NULL)
        return;
    for (i = 0; i < (int)(sizeof s->holds / sizeof s->holds[0]); i++)
        if (s->holds[i].conn)
            zk_put(s->holds[i].conn);
    free(s);
    ctx->zk = NULL;

    /* The last slot to go closes the session: our ephemeral nodes vanish now
     * rather than a session timeout later, and with them what was left to
     * delete. */
    pthread_mutex_lock(&hold_mu);
    last = --zk_slots_live == 0;
    if (last)
        while ((p = zk_pending) != NULL) {
            zk_pending = p->next;
            free(p);
        }
    pthread_mutex_unlock(&hold_mu);
    if (last)
        zk_close();
}

/* The ZooKeeper family: a slot keeps its holds, and the last slot to go
 * closes the session. */
const struct lock_family lock_family_zookeeper = {
    .name     = "zookeeper",
    .ctx_free = zk_ctx_free,
};
