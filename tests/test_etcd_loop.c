/* test_etcd_loop.c — the etcd strategy on coroutines of one loop, against
 * the stack's etcd: its Mutex, and its session keeper as a coroutine of
 * that loop (what an instance will run once it is on its loop).
 *
 * Four worker slots, each a coroutine, take lock:9901 with the `etcd`
 * strategy at once. The first holder keeps it for 7 s — more than two of
 * its 3 s leases — while the other three wait on their watches; then each
 * in turn holds it briefly. Every acquire, check and release must answer
 * LL_OK, never two holders at once, and the holds come in the order the
 * keys were created (fair: each hold's token, ?fence=1's create revision,
 * above the one before). The long hold's check passes only if its
 * lease was renewed meanwhile, and so do the waiters' turns (their keys
 * live under their own leases): so the keeper ran, and since no thread
 * was started (the process has the threads it had before), it ran as a
 * coroutine of this loop, next to the waits it kept alive.
 *
 * Timing margin: the keeper renews a 3 s lease every second; the test
 * fails only if the loop went 2 s without serving it, which no wait here
 * asks for (each coroutine parks while it waits).
 *
 *     set -a; . .run/stack.env; set +a; build/tests/test_etcd_loop
 */
#include "check.h"
#include "../core/config.h"
#include "../core/ctx.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"
#include "../locks/lock.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS  4
#define KEY    "lock:9901"

static int running, holding, most_holding, norder;
static long long tokens[SLOTS];         /* in the order of the holds */

struct slot {
    struct lock_ctx ctx;
    int             acquire, check, release;
    int64_t         lease_left_ms;      /* at the check, what the lease had */
};

static void buyer(void *arg)
{
    struct slot *s = arg;
    struct lock_ctx *ctx = &s->ctx;

    ctx->wait_ms = 30000;
    ctx->deadline_ms = now_ms() + ctx->wait_ms;
    ctx->fence = 1;
    s->acquire = lock_acquire(ctx, KEY);
    if (s->acquire == LL_OK) {
        if (++holding > most_holding)
            most_holding = holding;
        tokens[norder++] = ctx->token;
        sleep_us(norder == 1 ? 7000000 : 100000);
        s->check = lock_check(ctx, KEY);
        s->lease_left_ms = (ctx->lease_until_us - now_us()) / 1000;
        holding--;
        s->release = lock_release(ctx, KEY);
    }
    if (ctx->err)
        printf("slot %d: %s: %s\n", ctx->slot, ll_status_name(ctx->err), ctx->errstr);
    running--;
}

/* A killed run's keys. */
static void reset(void *arg)
{
    struct slot *s = arg;

    CHECK(lock_reset(&s->ctx, KEY) == LL_OK);
    running--;
}

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    static struct config cfg;
    static struct slot slots[SLOTS];
    char err[256], *argv[] = { "test_etcd_loop", "--threads", "4", "--lease-ms", "3000", NULL };
    const char *etcd = getenv("LOCKLAB_ETCD");
    int i, threads;

    if (etcd == NULL || *etcd == '\0') {
        fprintf(stderr, "test_etcd_loop: LOCKLAB_ETCD is not set: source .run/stack.env\n");
        return 2;
    }
    if (config_parse(&cfg, 5, argv, err, sizeof err) != 0) {
        fprintf(stderr, "test_etcd_loop: %s\n", err);
        return 2;
    }
    if (loop_init() != 0)
        return 2;
    threads = threads_now();

    for (i = 0; i < SLOTS; i++) {
        slots[i].ctx.slot = i;
        slots[i].ctx.cfg = &cfg;
        slots[i].ctx.ops = lock_find("etcd");
    }
    if (slots[0].ctx.ops == NULL) {
        fprintf(stderr, "test_etcd_loop: no etcd strategy\n");
        return 2;
    }
    running = 1;                        /* a killed run's keys first */
    task_spawn(reset, &slots[0]);
    while (running > 0)
        loop_once();
    running = SLOTS;
    for (i = 0; i < SLOTS; i++)
        task_spawn(buyer, &slots[i]);
    while (running > 0)
        loop_once();

    for (i = 0; i < SLOTS; i++) {
        CHECK(slots[i].acquire == LL_OK);
        CHECK(slots[i].check == LL_OK);
        CHECK(slots[i].release == LL_OK);
        CHECK(slots[i].lease_left_ms > 0);
    }
    CHECK(norder == SLOTS && most_holding == 1);
    for (i = 1; i < SLOTS; i++)         /* in the order of their keys: fair */
        CHECK(tokens[i] > tokens[i - 1]);
    CHECK(threads_now() == threads);    /* the keeper is a coroutine here */

    for (i = 0; i < SLOTS; i++)
        lock_ctx_free(&slots[i].ctx);
    printf("test_etcd_loop: %d passed, %d failed (threads %d)\n", passed, failed, threads);
    return failed ? 1 : 0;
}
