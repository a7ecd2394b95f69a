/* fuzz_request.c — libFuzzer target for everything that reads a request.
 *
 * The input is a request as bytes, in up to four lines:
 *
 *     METHOD \n PATH[?QUERY] \n AUTHORIZATION \n FLAGS
 *
 * and it goes through what app/http.c does with what libmicrohttpd parsed:
 * request_unescape() on the path, request_begin() (route, method, admin
 * token), the query split on '&' and '=' with '+' as a space, each name and
 * value unescaped and handed to request_param(), request_params_done(),
 * then the route's own checks (request_sale() with a configuration whose
 * fault switch comes from FLAGS, request_order(), request_product(),
 * request_int(), request_sync() for the synchronizers' routes). What
 * must hold whatever the bytes:
 *   - nothing crashes, reads out of bounds or overflows (ASan, UBSan);
 *   - every refusal has a status among 400, 401, 404, 405, 414 and an
 *     answer that jansson can write, whose text reads back as JSON;
 *   - an accepted purchase names a strategy, its product is well formed,
 *     its numbers are within their bounds and the configuration's;
 *   - an accepted synchronizer request names a registered primitive and
 *     one of its operations, valid names, waits and holds within bounds;
 *   - text_safe() of any bytes is valid UTF-8 that fits its buffer.
 *
 * Built two ways (tests/CMakeLists.txt): with clang's libFuzzer when
 * LOCKLAB_FUZZ is on (CI runs it for a bounded time), and with a small
 * main() (fuzz_main.c) that replays the seed corpus in tests/fuzz/ as a
 * unit test of every build.
 */
#include "../core/config.h"
#include "../locks/lock.h"
#include "../app/orders.h"
#include "../app/request.h"
#include "../store/stock.h"
#include "../sync/sync.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_MAX 4096

/* Abort with a message: libFuzzer and the replay both report it. */
#define MUST(cond) do {                                                     \
        if (!(cond)) {                                                      \
            fprintf(stderr, "fuzz_request: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* Line k (from 0) of data into out, NUL-terminated; a NUL byte in the input
 * ends the field there, as it would end a C string from libmicrohttpd. */
static void field(const uint8_t *data, size_t size, int k, char *out)
{
    size_t at = 0, n = 0;

    while (k > 0 && at < size)
        if (data[at++] == '\n')
            k--;
    while (at < size && data[at] != '\n' && data[at] != '\0' && n < FIELD_MAX - 1)
        out[n++] = (char)data[at++];
    out[n] = '\0';
}

static void check_answer(const struct request *r)
{
    json_t *body, *back;
    char *text;

    MUST(r->status == 400 || r->status == 401 || r->status == 404 || r->status == 405 ||
         r->status == 414);
    MUST(text_utf8_valid(r->error, strlen(r->error)));
    body = request_error_json(r);
    MUST(body != NULL);
    text = json_dumps(body, JSON_COMPACT);
    MUST(text != NULL);
    back = json_loads(text, 0, NULL);
    MUST(back != NULL && json_is_string(json_object_get(back, "result")));
    json_decref(back);
    free(text);
    json_decref(body);
}

/* The query as libmicrohttpd splits it: pairs on '&', name and value on
 * the first '=', '+' as a space, then each part unescaped. */
static void feed_query(struct request *r, char *q)
{
    char *pair, *save = NULL, *eq, *p;

    for (pair = strtok_r(q, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        size_t klen, vlen = 0;

        for (p = pair; *p; p++)
            if (*p == '+')
                *p = ' ';
        eq = strchr(pair, '=');
        if (eq)
            *eq++ = '\0';
        klen = request_unescape(pair);
        if (eq)
            vlen = request_unescape(eq);
        request_param(r, pair, klen, eq, vlen);
    }
}

static void check_text_safe(const uint8_t *data, size_t size)
{
    char small[16], big[256];

    text_safe(small, sizeof small, (const char *)data, size);
    MUST(strlen(small) < sizeof small && text_utf8_valid(small, strlen(small)));
    text_safe(big, sizeof big, (const char *)data, size);
    MUST(strlen(big) < sizeof big && text_utf8_valid(big, strlen(big)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char method[FIELD_MAX], target[FIELD_MAX], authz[FIELD_MAX], flags[FIELD_MAX];
    struct config cfg;
    struct request r;
    struct sale_args a;
    struct order_args o;
    struct sync_args sa;
    const char *code;
    long long count;
    char *query;

    check_text_safe(data, size);
    field(data, size, 0, method);
    field(data, size, 1, target);
    field(data, size, 2, authz);
    field(data, size, 3, flags);

    memset(&cfg, 0, sizeof cfg);
    cfg.lock = "none";
    cfg.lock_wait_ms = 10000;
    cfg.max_wait_ms = 20000;
    cfg.allow_faults = flags[0] == 'F';

    query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    request_unescape(target);
    if (request_begin(&r, method, target, authz[0] ? authz : NULL, "fuzz-token") != 0) {
        check_answer(&r);
        return 0;
    }
    MUST(r.route != NULL && strcmp(method, r.route->method) == 0);
    MUST(!r.route->admin || request_token_ok(authz, "fuzz-token"));
    if (query)
        feed_query(&r, query);
    if (request_params_done(&r) != 0) {
        check_answer(&r);
        return 0;
    }
    switch (r.route->id) {
    case ROUTE_SALE:
        if (request_sale(&r, &cfg, &a) != 0) {
            check_answer(&r);
            break;
        }
        MUST(a.ops != NULL && lock_find(a.ops->name) == a.ops);
        MUST(stock_code_valid(a.product));
        MUST(a.reentry >= 1 && a.reentry <= LOCK_MAX_DEPTH);
        MUST(a.reentry == 1 || (a.ops->props & LOCK_REENTRANT) || a.allow_deadlock);
        MUST(a.release_pause_ms == 0 || a.ops->release_pause != NULL);
        MUST(a.release_pause_ms >= 0 && a.release_pause_ms <= cfg.max_wait_ms);
        MUST(a.clock_skew_ms >= 0 && a.clock_skew_ms <= cfg.max_wait_ms);
        MUST(a.check_pause_ms >= 0 && a.check_pause_ms <= cfg.max_wait_ms);
        MUST(a.wait_ms >= 0 && a.wait_ms <= cfg.max_wait_ms);
        MUST(a.hold_ms >= 0 && a.hold_ms <= cfg.max_wait_ms);
        MUST(a.late_ms >= 0 && a.late_ms <= cfg.max_wait_ms);
        MUST(a.fence == 0 || a.ops->fence != NULL);
        MUST(cfg.allow_faults || (a.hold_ms == 0 && a.late_ms == 0 && a.crash == 0 &&
                                  a.lose_answer == 0 && a.consumer_crash == 0 &&
                                  a.release_pause_ms == 0 && a.allow_deadlock == 0 &&
                                  a.clock_skew_ms == 0 && a.check_pause_ms == 0 &&
                                  a.lose_lock == 0));
        break;
    case ROUTE_ORDER:
        if (request_sale(&r, &cfg, &a) != 0 || request_order(&r, &o) != 0) {
            check_answer(&r);
            break;
        }
        MUST(a.ops != NULL && stock_code_valid(a.product) && a.reentry == 1);
        MUST(order_name_valid(o.order_no) && (o.user == NULL || order_name_valid(o.user)));
        MUST(o.qty >= 1 && o.qty <= REQUEST_QTY_MAX);
        MUST(!o.one_per_user || o.user != NULL);
        MUST(cfg.allow_faults || o.lose_claim == 0);
        MUST(cfg.allow_faults || (a.hold_ms == 0 && a.late_ms == 0 && a.crash == 0 &&
                                  a.lose_answer == 0 && a.consumer_crash == 0 &&
                                  a.release_pause_ms == 0 && a.allow_deadlock == 0 &&
                                  a.clock_skew_ms == 0 && a.check_pause_ms == 0 &&
                                  a.lose_lock == 0));
        break;
    case ROUTE_STOCK:
    case ROUTE_STOCK_RESET:
        if (request_product(&r, &code) != 0 ||
            request_int(&r, P_COUNT, 0, 1000000000, 0, &count) != 0) {
            check_answer(&r);
            break;
        }
        MUST(stock_code_valid(code) && count >= 0 && count <= 1000000000);
        break;
    case ROUTE_SYNC:
    case ROUTE_TEST_READ:
    case ROUTE_TEST_WRITE:
    case ROUTE_TEST_SEMAPHORE:
    case ROUTE_TEST_LATCH:
    case ROUTE_TEST_COUNTDOWN:
        if (request_sync(&r, &cfg, &sa) != 0) {
            check_answer(&r);
            break;
        }
        MUST(sa.ops != NULL && sync_find(sa.ops->primitive, sa.ops->backend) == sa.ops);
        MUST(sa.op != NULL && sync_op_find(sa.ops, sa.op->name) == sa.op);
        MUST(sa.name == NULL || sync_name_valid(sa.name));
        MUST(sa.name != NULL || sa.nnames > 0);
        MUST(sa.wait_ms >= 0 && sa.wait_ms <= cfg.max_wait_ms);
        MUST(sa.hold_ms >= -1 && sa.hold_ms <= cfg.max_wait_ms);
        MUST(sa.qty == -1 || (sa.qty >= 1 && sa.qty <= 16));
        MUST(sa.member == NULL || (sync_name_valid(sa.member) && strlen(sa.member) <= 36));
        MUST(sa.permit == NULL || strlen(sa.permit) == 32);
        for (int i = 0; i < sa.nnames; i++)
            MUST(sync_name_valid(sa.names[i]));
        break;
    case ROUTE_SYNC_RESET:
        if (request_sync_name(&r, &code) != 0) {
            check_answer(&r);
            break;
        }
        MUST(sync_name_valid(code));
        break;
    default:
        break;
    }
    return 0;
}
