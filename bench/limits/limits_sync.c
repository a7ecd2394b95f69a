/* limits_sync.c — ll-limits' ceilings of the synchronizers (sync/): each
 * primitive's bench operation, the very one bench/compare --scenario sync
 * loads through nginx, run by one client back to back on the same Redis or
 * ZooKeeper, in this process, with no HTTP in between.
 *
 * It runs the server's own code: the operation's request goes through
 * app/request.c's request_sync() as GET /sync/<primitive>/<bench> with
 * name=limits-<primitive> and the table's backend, and then sync_run() on a
 * worker context of its own, so the ceiling and the load differ in nothing
 * but HTTP, nginx and the other callers. Keys are the tables' `ceiling`s
 * ("sync_redisson_rwlock" …), measured only when --only names them or says
 * "sync" (all of them): the lock scenarios never pay for them. Like the
 * other ceilings, each is the best of --trials runs of seconds/trials after
 * one warm-up run that is not kept; an operation that fails ends its run
 * with the error, and the run is tried again (at most --trials more).
 */
#include "limits_sync.h"
#include "../common/harness.h"
#include "../../core/config.h"
#include "../../core/util.h"
#include "../../locks/lock.h"
#include "../../app/request.h"
#include "../../sync/sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_PREFIX "limits-"

/* Is `key` asked for by --only (a list; "sync" means every sync key)? */
static int sync_wanted(const char *only, const char *key)
{
    const char *p = only;
    size_t n;

    if (only == NULL)
        return 0;
    while (*p) {
        n = strcspn(p, ",");
        if ((n == 4 && strncmp(p, "sync", 4) == 0) ||
            (n == strlen(key) && strncmp(p, key, n) == 0))
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* The bench request of ops, checked by request.c into a; 0 or -1 + err. */
static int bench_args(const struct config *cfg, const struct sync_ops *ops,
                      struct sync_args *a, struct request *r, char *path, char *query,
                      char *err, int len)
{
    const char *q = strchr(ops->bench, '?');
    char *pair, *save = NULL, *eq;

    snprintf(path, 128, "/sync/%s/%.*s", ops->primitive,
             (int)(q ? (size_t)(q - ops->bench) : strlen(ops->bench)), ops->bench);
    snprintf(query, 512, "%s%sname=" NAME_PREFIX "%s&backend=%s", q ? q + 1 : "", q ? "&" : "",
             ops->primitive, ops->backend);
    if (request_begin(r, "GET", path, NULL, NULL) != 0)
        goto refused;
    for (pair = strtok_r(query, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        eq = strchr(pair, '=');
        if (eq)
            *eq++ = '\0';
        request_param(r, pair, strlen(pair), eq, eq ? strlen(eq) : 0);
    }
    if (request_params_done(r) != 0 || request_sync(r, cfg, a) != 0)
        goto refused;
    return 0;
refused:
    snprintf(err, (size_t)len, "%.100s: %.200s", path, r->error);
    return -1;
}

/* Clear what the measured name may hold (a killed run's leftovers). */
static void bench_reset(struct lock_ctx *ctx, const struct sync_ops *ops,
                        const struct sync_args *a)
{
    int i;

    ctx->deadline_ms = now_ms() + 10000;
    ops->reset(ctx, a->name);
    for (i = 0; i < a->nnames; i++)
        ops->reset(ctx, a->names[i]);
}

/* One run of `seconds`: the operation back to back. */
static void run_once(struct lock_ctx *ctx, const struct sync_args *a, double seconds,
                     long long *ops, double *took, char *err, int len)
{
    int64_t t0 = now_us(), until = t0 + (int64_t)(seconds * 1e6);
    json_t *out;
    int rc;

    *ops = 0;
    err[0] = '\0';
    do {
        ctx->deadline_ms = now_ms() + a->wait_ms;
        ctx->wait_ms = a->wait_ms;
        ctx->err = 0;
        ctx->errstr[0] = '\0';
        out = json_object();
        rc = sync_run(ctx, a, out);
        json_decref(out);
        if (rc != LL_OK) {
            snprintf(err, (size_t)len, "%s/%s %s: %s: %s", a->ops->primitive, a->ops->backend,
                     a->op->name, ll_status_name(rc), ctx->errstr);
            break;
        }
        (*ops)++;
    } while (now_us() < until);
    *took = (double)(now_us() - t0) / 1e6;
}

static json_t *measure(struct lock_ctx *ctx, const struct sync_ops *ops,
                       const struct sync_args *a, double seconds, int trials)
{
    json_t *rates = json_array(), *failed = json_array(), *o;
    double took, best_s = 0;
    long long n, best_n = 0;
    char err[300], last[300] = "", what[200];
    int t, again = 0;

    for (t = -1; t < trials; t++) {
        run_once(ctx, a, seconds / trials, &n, &took, err, sizeof err);
        if (err[0]) {
            json_array_append_new(failed, json_string(err));
            snprintf(last, sizeof last, "%s", err);
            if (again++ < trials)
                t--;
            continue;
        }
        if (t < 0)
            continue;
        json_array_append_new(rates, json_real(harness_rate(n, took)));
        if (best_s == 0 || harness_rate(n, took) > harness_rate(best_n, best_s))
            best_n = n, best_s = took;
    }
    snprintf(what, sizeof what, "%s: %s, one client back to back, no HTTP", ops->library,
             ops->bench);
    o = json_pack("{s:I,s:f,s:i,s:s}", "ops", (json_int_t)best_n, "seconds", best_s,
                  "connections", 1, "what", what);
    if (best_s > 0)
        json_object_set_new(o, "rate", json_real(harness_rate(best_n, best_s)));
    else
        json_object_set_new(o, "error", json_string(last[0] ? last : "no run succeeded"));
    json_object_set_new(o, "trials", rates);
    if (json_array_size(failed) > 0)
        json_object_set_new(o, "failed_trials", failed);
    else
        json_decref(failed);
    return o;
}

void limits_sync(json_t *ceilings, const char *only, double seconds, int trials,
                 const struct config *cfg)
{
    const struct sync_ops *const *all;
    struct lock_ctx ctx;
    struct sync_args a;
    struct request r;
    char path[128], query[512], err[400];
    int i, n;

    memset(&ctx, 0, sizeof ctx);
    ctx.cfg = cfg;
    all = sync_all(&n);
    for (i = 0; i < n; i++) {
        if (all[i]->bench == NULL || !sync_wanted(only, all[i]->ceiling))
            continue;
        if (bench_args(cfg, all[i], &a, &r, path, query, err, sizeof err) != 0) {
            json_object_set_new(ceilings, all[i]->ceiling, json_pack("{s:s}", "error", err));
            continue;
        }
        bench_reset(&ctx, all[i], &a);
        json_object_set_new(ceilings, all[i]->ceiling, measure(&ctx, all[i], &a, seconds, trials));
        bench_reset(&ctx, all[i], &a);
    }
    lock_ctx_free(&ctx);
}
