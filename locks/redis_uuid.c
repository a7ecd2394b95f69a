/* redis_uuid.c — an owner token, checked with GET before DEL (seed 000
 * §3.3 "防误删").
 *
 *     acquire:  SET lock:P <token> NX EX 3      token = <instance>:<slot>:<seq>
 *     release:  if GET lock:P == token: DEL lock:P     (two commands)
 *
 * The token stops a slow holder from deleting a lock that expired and was
 * taken by someone else — unless the expiry and the new holder's SET fall
 * between our GET and our DEL: then the DEL deletes the new holder's lock.
 * That window is the seed's "删除操作缺乏原子性", fixed by redis-lua. Like
 * redis-set-nx-ex, a holder slower than the 3 s expiry is overtaken while
 * it still sells. Not reentrant. The fault switch ?release_pause_ms
 * pauses right in that window (bench/lesson uuid-window).
 */
#include "redis_private.h"

#include <string.h>

#define UUID_EX_S 3

static int uuid_acquire(struct lock_ctx *ctx, const char *key)
{
    return redis_set_token_spin(ctx, key, "EX", UUID_EX_S);
}

static int uuid_release(struct lock_ctx *ctx, const char *key)
{
    struct redis_hold *h = redis_hold_of(ctx);
    const char *keys[1] = { key };
    redisReply *r;
    int ours;

    if ((r = redis_cmd(ctx, 0, "GET %s", key)) == NULL)
        return ctx->err;
    if (r->type == REDIS_REPLY_ERROR)
        return redis_reply_error(ctx, 0, r, key);
    ours = r->type == REDIS_REPLY_STRING && strcmp(r->str, h->token) == 0;
    freeReplyObject(r);
    if (!ours)
        return lock_error(ctx, LL_ERROR, "redis",
                          "%s was no longer ours at release (expired after %d s)", key,
                          UUID_EX_S);
    /* The window: the key may expire and be taken right here. */
    lock_release_pause(ctx);
    return redis_del(ctx, 0, 1, keys);
}

const struct lock_ops lock_redis_uuid = {
    .name     = "redis-uuid",
    .family   = "redis",
    .summary  = "SET lock:P <token> NX EX 3; release = GET, compare, DEL (seed 000 §3.3)",
    .flaw     = "GET-compare-DEL is two commands: an expiry in between deletes the next holder's lock",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_CLOCK_REDIS |
                FAULT_REDIS_RESTART | FAULT_FAILOVER,
    .ceiling  = LOCK_CEIL_SERIAL_REDIS,
    .acquire  = uuid_acquire,
    .release  = uuid_release,
    .reset    = redis_del_key,
    .fence    = REDIS_FENCE,
    .release_pause = "between its GET and its DEL",
};
