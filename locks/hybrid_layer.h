/* hybrid_layer.h — running a strategy as a layer of a composite lock
 * (locks/hybrid_layer.c), what the composite locks of seed 004 §4.5 stand
 * on: hybrid.c (a Redis lock in front of a ZooKeeper lock) and fallback.c
 * (Redis, else ZooKeeper, else the MySQL lock table).
 *
 * A composite runs other strategies' hooks as its layers, unchanged: it
 * points ctx->ops at the layer for the call, as sale_run() points it at
 * the strategy it runs, so the layer's family finds its own table (its
 * conf, its holds) and nothing in the layer knows it is one. Each layer
 * keeps its own state in its family's slot of ctx; the composite keeps only
 * which layer it took (ctx->hybrid).
 */
#ifndef LOCKLAB_HYBRID_LAYER_H
#define LOCKLAB_HYBRID_LAYER_H

#include "lock.h"

/* The layers, registered strategies of their own (locks.def). */
extern const struct lock_ops lock_redisson, lock_curator, lock_mysql_lock_table;

enum hybrid_op { LAYER_ACQUIRE, LAYER_RELEASE, LAYER_CHECK, LAYER_RESET };

/* Run one hook of `layer` on key, as if ctx ran that strategy. */
int hybrid_layer(struct lock_ctx *ctx, const struct lock_ops *layer, enum hybrid_op op,
                 const char *key);

/* Release `layer` without losing the failure already recorded on ctx. */
void hybrid_release_keeping(struct lock_ctx *ctx, const struct lock_ops *layer,
                            const char *key);

/* The layer a fallback acquisition took, per slot (ctx->hybrid). */
struct hybrid_slot {
    int     layer;              /* index into the fallback's layers       */
    int     depth;              /* re-entries of this request             */
    int64_t stamp;              /* the request: its deadline              */
    char    key[LOCK_KEY_MAX];
};

struct hybrid_slot *hybrid_slot_of(struct lock_ctx *ctx);
void hybrid_ctx_free(struct lock_ctx *ctx);

#endif /* LOCKLAB_HYBRID_LAYER_H */
