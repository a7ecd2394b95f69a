/* fallback.c — "优先使用Redis … 降级到ZooKeeper … 最后降级到数据库" (seed 004
 * §4.5.2): Redis's lock, and when Redis is down ZooKeeper's, and when that
 * is down too the MySQL lock table.
 *
 *     acquire: try redisson (lock:P); if it answers unavailable, curator
 *              (/locklab/locks/P); if that is unavailable too,
 *              mysql-lock-table (db_lock row lock:P). The first layer that
 *              grants the lock holds it; a re-entry goes to the same layer.
 *     check, release: that layer's.
 *
 * The layers are the registered strategies themselves (hybrid_layer()).
 * Unlike the seed's executeWithFallback(), which also falls back when a
 * lock is merely busy (its tryLock timed out: a RuntimeException like any
 * other), we switch only when a backend is down: on a timeout the request
 * answers lock_timeout. Falling back on a busy lock would make two holders
 * the rule under contention.
 *
 * What it gets wrong, and why it is not `exact`: the layers do not exclude
 * each other, and nothing coordinates a switch. When Redis goes down, the
 * holder of the Redis lock is still in its critical section while the next
 * buyer takes ZooKeeper's; when one instance can reach Redis and another
 * cannot (a partition), or Redis comes back while ZooKeeper holders are
 * still working, two holders sell at once for as long as that lasts. A
 * fencing token does not save it either: each layer issues its own
 * service's tokens (redisson, zookeeper, mysql), and tokens of two
 * services do not compare (store/stock.c lets such a write through).
 *
 * What it measures (GET /stats "fallback", the family's section):
 * acquisitions per layer, the "switched" ones that went past a layer that
 * was down, and the "overlapped" ones that began while this instance held
 * the same product on another layer — two holders at once, for certain.
 * Overlaps across instances only the ledger shows (--ledger, ll-check).
 */
#include "hybrid_layer.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define FB_LAYERS 3
#define FB_KEYS   64

static const struct lock_ops *const layers[FB_LAYERS] = {
    &lock_redisson, &lock_curator, &lock_mysql_lock_table,
};

/* Who holds what here: per product, the live holds of each layer. fb.mu
 * guards the table for a few instructions at a time and is never held
 * across a layer's call, which may wait (on the loop, a mutex held across
 * a park would stop every other request of the instance). */
static struct {
    pthread_mutex_t mu;
    struct { char key[LOCK_KEY_MAX]; int active[FB_LAYERS]; } held[FB_KEYS];
} fb = { .mu = PTHREAD_MUTEX_INITIALIZER };

static _Atomic unsigned long long took[FB_LAYERS], switched, overlapped;

/* ---------------------------------------------------------------- counters */

/* The product's entry, made if needed (under fb.mu); NULL when the table is
 * full of live holds (then nothing is counted for it). */
static int *active_of(const char *key)
{
    int i, k, free_at = -1;

    for (i = 0; i < FB_KEYS; i++) {
        if (strcmp(fb.held[i].key, key) == 0)
            return fb.held[i].active;
        for (k = 0; k < FB_LAYERS && fb.held[i].active[k] == 0; k++)
            ;
        if (k == FB_LAYERS && free_at < 0)
            free_at = i;
    }
    if (free_at < 0)
        return NULL;
    snprintf(fb.held[free_at].key, sizeof fb.held[free_at].key, "%s", key);
    return fb.held[free_at].active;
}

static void hold_begin(const char *key, int layer, int went_past)
{
    int *active, k, other = 0;

    atomic_fetch_add(&took[layer], 1);
    if (went_past)
        atomic_fetch_add(&switched, 1);
    pthread_mutex_lock(&fb.mu);
    if ((active = active_of(key)) != NULL) {
        for (k = 0; k < FB_LAYERS; k++)
            if (k != layer && active[k] > 0)
                other = 1;
        active[layer]++;
    }
    pthread_mutex_unlock(&fb.mu);
    if (other)
        atomic_fetch_add(&overlapped, 1);
}

static void hold_end(const char *key, int layer)
{
    int *active;

    pthread_mutex_lock(&fb.mu);
    if ((active = active_of(key)) != NULL && active[layer] > 0)
        active[layer]--;
    pthread_mutex_unlock(&fb.mu);
}

/* {"held_on":{"redisson":N,"curator":N,"mysql-lock-table":N},
 *  "switched":N,"overlapped":N}: this instance's acquisitions by the layer
 * that granted them, those that went past a layer that was down, and those
 * that began while this instance held the same product on another layer
 * (two holders at once): the family's GET /stats section. */
static json_t *fallback_stats_json(void)
{
    json_t *on = json_object();
    int k;

    for (k = 0; k < FB_LAYERS; k++)
        json_object_set_new(on, layers[k]->name, json_integer((json_int_t)atomic_load(&took[k])));
    return json_pack("{s:o,s:I,s:I}", "held_on", on,
                     "switched", (json_int_t)atomic_load(&switched),
                     "overlapped", (json_int_t)atomic_load(&overlapped));
}

static void fallback_stats_reset(void)
{
    int k;

    for (k = 0; k < FB_LAYERS; k++)
        atomic_store(&took[k], 0);
    atomic_store(&switched, 0);
    atomic_store(&overlapped, 0);
}

/* ---------------------------------------------------------------- the lock */

static int fallback_acquire(struct lock_ctx *ctx, const char *key)
{
    struct hybrid_slot *s = hybrid_slot_of(ctx);
    int i, rc = LL_UNAVAILABLE;

    if (s->depth > 0 && s->stamp == ctx->deadline_ms && strcmp(s->key, key) == 0) {
        rc = hybrid_layer(ctx, layers[s->layer], LAYER_ACQUIRE, key);
        if (rc == LL_OK)
            s->depth++;
        return rc;
    }
    if (s->depth > 0)           /* an earlier request's, never released */
        hold_end(s->key, s->layer);
    s->depth = 0;
    for (i = 0; i < FB_LAYERS; i++)
        if ((rc = hybrid_layer(ctx, layers[i], LAYER_ACQUIRE, key)) != LL_UNAVAILABLE)
            break;
    if (rc != LL_OK)
        return rc;              /* busy, or every layer down (the last says) */
    ctx->err = 0;               /* the layers that were down are not the answer */
    ctx->backend = NULL;
    ctx->errstr[0] = '\0';
    s->layer = i;
    s->depth = 1;
    s->stamp = ctx->deadline_ms;
    snprintf(s->key, sizeof s->key, "%s", key);
    hold_begin(key, i, i > 0);
    return LL_OK;
}

static int fallback_check(struct lock_ctx *ctx, const char *key)
{
    struct hybrid_slot *s = hybrid_slot_of(ctx);

    if (s->depth == 0)
        return lock_error(ctx, LL_ERROR, NULL, "fallback: %s not held", key);
    return hybrid_layer(ctx, layers[s->layer], LAYER_CHECK, key);
}

static int fallback_release(struct lock_ctx *ctx, const char *key)
{
    struct hybrid_slot *s = hybrid_slot_of(ctx);
    int rc;

    if (s->depth == 0)
        return lock_error(ctx, LL_ERROR, NULL, "fallback: release of %s not held", key);
    rc = hybrid_layer(ctx, layers[s->layer], LAYER_RELEASE, key);
    if (--s->depth == 0)
        hold_end(key, s->layer);
    return rc;
}

/* Every layer's leftovers; a layer that is down says so. */
static int fallback_reset(struct lock_ctx *ctx, const char *key)
{
    int i, rc, first = LL_OK;

    for (i = 0; i < FB_LAYERS; i++)
        if ((rc = hybrid_layer(ctx, layers[i], LAYER_RESET, key)) != LL_OK && first == LL_OK)
            first = rc;
    return first;
}

const struct lock_ops lock_fallback = {
    .name     = "fallback",
    .family   = "hybrid",
    .summary  = "redisson's lock:P; when Redis is down curator's, then mysql-lock-table's; a busy lock is waited for, not switched (seed 004 §4.5.2)",
    .flaw     = "the layers do not exclude each other: during a switch two holders sell at once; tokens of two services do not compare",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = fallback_acquire,
    .release  = fallback_release,
    .check    = fallback_check,
    .reset    = fallback_reset,
    .fence    = "the granting layer's: redisson, zookeeper or mysql",
};

/* The composite family: a slot keeps which layers it holds; /stats says
 * which layer fallback held each lock on and how often it switched. */
static void hybrid_stats(json_t *body)
{
    json_object_set_new(body, "fallback", fallback_stats_json());
}

const struct lock_family lock_family_hybrid = {
    .name        = "hybrid",
    .ctx_free    = hybrid_ctx_free,
    .stats_add   = hybrid_stats,
    .stats_clear = fallback_stats_reset,
};
