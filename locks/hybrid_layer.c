/* hybrid_layer.c — running a strategy as a layer of a composite lock
 * (hybrid.c, fallback.c): see hybrid_layer.h. */
#include "hybrid_layer.h"
#include "../core/util.h"

#include <stdlib.h>
#include <string.h>

int hybrid_layer(struct lock_ctx *ctx, const struct lock_ops *layer, enum hybrid_op op,
                 const char *key)
{
    const struct lock_ops *outer = ctx->ops;
    int rc = LL_OK;

    ctx->ops = layer;
    switch (op) {
    case LAYER_ACQUIRE: rc = lock_acquire(ctx, key); break;
    case LAYER_RELEASE: rc = lock_release(ctx, key); break;
    case LAYER_CHECK:   rc = lock_check(ctx, key); break;
    case LAYER_RESET:   rc = lock_reset(ctx, key); break;
    }
    ctx->ops = outer;
    return rc;
}

void hybrid_release_keeping(struct lock_ctx *ctx, const struct lock_ops *layer,
                            const char *key)
{
    int err = ctx->err;
    const char *backend = ctx->backend;
    char why[sizeof ctx->errstr];

    memcpy(why, ctx->errstr, sizeof why);
    hybrid_layer(ctx, layer, LAYER_RELEASE, key);
    lock_error(ctx, err, backend, "%s", why);
}

struct hybrid_slot *hybrid_slot_of(struct lock_ctx *ctx)
{
    if (ctx->hybrid == NULL)
        ctx->hybrid = xcalloc(1, sizeof *ctx->hybrid);
    return ctx->hybrid;
}

void hybrid_ctx_free(struct lock_ctx *ctx)
{
    free(ctx->hybrid);
    ctx->hybrid = NULL;
}

