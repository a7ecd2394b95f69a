/* lock.c — the jittered retry interval of the spinning strategies, and the
 * release's fault pause. */
#include "lock.h"
#include "../core/config.h"
#include "../core/util.h"
#include "../core/wait.h"

/* The spin interval doubles this many times: --retry-ms 2 grows to 64 ms,
 * so sixty waiters polling one lock do not starve its holder of CPU. */
#define LOCK_BACKOFF_DOUBLINGS 5

int lock_backoff(struct lock_ctx *ctx)
{
    int64_t left_us = lock_time_left(ctx) * 1000;
    unsigned shift = ctx->retries < LOCK_BACKOFF_DOUBLINGS ? ctx->retries : LOCK_BACKOFF_DOUBLINGS;
    int64_t base_us = ((int64_t)ctx->cfg->retry_ms * 1000) << shift;
    int64_t us = rand_range(base_us / 2, base_us + base_us / 2);

    if (left_us <= 0)
        return lock_timeout(ctx);
    ctx->retries++;
    sleep_us(us < left_us ? us : left_us);
    return LL_OK;
}


/* ---------------------------------------------------------------- faults */

void lock_release_pause(struct lock_ctx *ctx)
{
    if (ctx->release_pause_ms > 0) {
        sleep_us((int64_t)ctx->release_pause_ms * 1000);
        ctx->release_pause_ms = 0;
    }
}
