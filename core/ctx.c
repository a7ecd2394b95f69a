/* ctx.c — the status names, and recording on a context what went wrong,
 * what is left of its wait, and how long its lease is sure to run. */
#include "ctx.h"
#include "config.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ll_status_name(int status)
{
    static const char *const names[LL_STATUS_MAX] = {
        [LL_OK] = "sold", [LL_SOLD_OUT] = "sold_out", [LL_TIMEOUT] = "lock_timeout",
        [LL_UNAVAILABLE] = "unavailable", [LL_ERROR] = "error", [LL_BADREQ] = "bad_request",
        [LL_UNKNOWN] = "unknown", [LL_FENCED] = "fenced", [LL_LOST] = "lock_lost",
    };
    return status >= 0 && status < LL_STATUS_MAX ? names[status] : "error";
}

int lock_error(struct lock_ctx *ctx, int status, const char *backend, const char *fmt, ...)
{
    va_list ap;

    ctx->err = status;
    ctx->backend = backend;
    va_start(ap, fmt);
    vsnprintf(ctx->errstr, sizeof ctx->errstr, fmt, ap);
    va_end(ap);
    return status;
}

void lock_error_save(const struct lock_ctx *ctx, struct lock_saved_error *e)
{
    _Static_assert(sizeof e->errstr == sizeof ctx->errstr, "the same error text");
    e->err = ctx->err;
    e->backend = ctx->backend;
    memcpy(e->errstr, ctx->errstr, sizeof e->errstr);
}

void lock_error_restore(struct lock_ctx *ctx, const struct lock_saved_error *e)
{
    ctx->err = e->err;
    ctx->backend = e->backend;
    memcpy(ctx->errstr, e->errstr, sizeof ctx->errstr);
}

int lock_timeout(struct lock_ctx *ctx)
{
    return lock_error(ctx, LL_TIMEOUT, NULL, "lock not obtained within %d ms", ctx->wait_ms);
}

int64_t lock_time_left(const struct lock_ctx *ctx)
{
    return ctx->deadline_ms - now_ms();
}

void lock_owner(const struct lock_ctx *ctx, char *buf, int len)
{
    snprintf(buf, (size_t)len, "%s:%d", ctx->cfg->instance_id, ctx->slot);
}

int64_t lock_drift_us(int64_t lease_ms)
{
    return lease_ms * 10 + 2000;        /* 1 % of the lease, and 2 ms */
}

void lock_lease(struct lock_ctx *ctx, int64_t sent_us, int64_t lease_ms)
{
    ctx->lease_until_us = sent_us + lease_ms * 1000 - lock_drift_us(lease_ms);
}
