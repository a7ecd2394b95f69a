/* test_etcd_client.c — clients/etcd.c against the stack's real etcd, on
 * coroutines on a loop and from a plain thread, at the same time.
 *
 * The same function runs every client call the etcd strategy makes — a
 * lease's grant, keep-alive and revoke, the Mutex's transaction (twice:
 * the repeat finds our key), the range of our key, a delete — on 24
 * coroutines of one loop at once and on a plain thread beside them, each
 * on a connection of its own under a prefix of its own, and checks the
 * answers and that the connection was kept alive (one connect for all).
 * Besides, on the loop:
 *   - a watch is in flight while another coroutine deletes the key it
 *     watches: the watch ends with the deletion, which can only happen if
 *     the watcher's wait let the deleter run;
 *   - a watch on a key nobody deletes, with a deadline 300 ms on: the
 *     deadline passes mid-request, the call says timed out, not before the
 *     deadline (the same from the thread);
 *   - a member that refuses (a port bound, never listened on) first in
 *     the list: the calls go on to the next one; alone in the list:
 *     unavailable, naming it, after a bounded number of attempts (no
 *     spin until the deadline).
 * That every one of the 24 coroutines is inside a call before any of them
 * has its answer is checked too: they all start in one turn of the loop,
 * and a call that blocked the loop would finish before the next began.
 * Timing margins: only "not before the deadline" and a loose bound on
 * attempts are checked, never how long a call took.
 *
 *     set -a; . .run/stack.env; set +a; build/tests/test_etcd_client
 */
#include "check.h"
#include "../clients/etcd.h"
#include "../core/ctx.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PREFIX  "/locklab-test/etcd-client/"
#define NCORO   24

static const char *endpoints;
static int running;             /* coroutines not yet finished (loop only)   */
static int in_call, most_in_call; /* loop coroutines inside a call, and the most */

/* ---------------------------------------------------------------- the calls */

struct run {
    int  id, on_loop;
    int  ok;                    /* every step as expected                    */
    char why[200];              /* the first step that was not               */
    unsigned calls, connects;
};

static int fail(struct run *r, const struct etcd_conn *c, const char *step)
{
    if (r->ok)
        snprintf(r->why, sizeof r->why, "run %d: %s: %s", r->id, step, c->err);
    r->ok = 0;
    return 0;
}

/* The strategy's calls, in its order, on a connection of our own. */
static int calls(struct run *r, struct etcd_conn *c)
{
    char prefix[64], key[ETCD_KEY_MAX];
    long long lease, mine, owner, again, rev;
    int ttl;
    int64_t until = now_ms() + 20000;

    snprintf(prefix, sizeof prefix, "%s%d/", PREFIX, r->id);
    if (etcd_lease_grant(c, 5, &lease, &ttl, until) != ETCD_OK || lease == 0 || ttl < 5)
        return fail(r, c, "lease grant");
    snprintf(key, sizeof key, "%s%llx", prefix, (unsigned long long)lease);
    if (etcd_mutex_txn(c, prefix, key, lease, &mine, &owner, until) != ETCD_OK ||
        mine <= 0 || owner != mine)
        return fail(r, c, "txn: our key, the owner");
    if (etcd_mutex_txn(c, prefix, key, lease, &again, &owner, until) != ETCD_OK ||
        again != mine || owner != mine)
        return fail(r, c, "txn again: the same key");
    if (etcd_create_rev(c, key, &rev, until) != ETCD_OK || rev != mine)
        return fail(r, c, "range of our key");
    if (etcd_delete(c, key, 0, until) != ETCD_OK)
        return fail(r, c, "delete");
    if (etcd_create_rev(c, key, &rev, until) != ETCD_OK || rev != 0)
        return fail(r, c, "range of the deleted key");
    if (etcd_lease_keepalive(c, lease, &ttl, until) != ETCD_OK || ttl <= 0)
        return fail(r, c, "keep-alive");
    if (etcd_lease_revoke(c, lease, until) != ETCD_OK)
        return fail(r, c, "revoke");
    if (etcd_lease_keepalive(c, lease, &ttl, until) != ETCD_OK || ttl != 0)
        return fail(r, c, "keep-alive of the revoked lease");
    return 1;
}

static void run_calls(void *arg)
{
    struct run *r = arg;
    struct etcd_conn c;

    r->ok = 1;
    etcd_conn_init(&c, endpoints);
    if (r->on_loop && ++in_call > most_in_call)
        most_in_call = in_call;
    calls(r, &c);
    if (r->on_loop)
        in_call--;
    r->calls = c.calls;
    r->connects = c.connects;
    etcd_conn_free(&c);
    if (r->on_loop)
        running--;
}

/* ---------------------------------------------------------------- watches */

/* A watch until the deletion of `key`, and a deleter. */
struct watch {
    char      key[ETCD_KEY_MAX];
    long long rev;              /* the key's create revision                 */
    int       started, rc, timed_out;
    int64_t   until_ms, ended_ms;
};

static void watcher(void *arg)
{
    struct watch *w = arg;
    struct etcd_conn c;

    etcd_conn_init(&c, endpoints);
    w->started = 1;
    w->rc = etcd_watch_delete(&c, w->key, w->rev, w->until_ms, &w->timed_out);
    w->ended_ms = now_ms();
    etcd_conn_free(&c);
    if (task_on_loop())
        running--;
}

static void deleter(void *arg)
{
    struct watch *w = arg;
    struct etcd_conn c;

    etcd_conn_init(&c, endpoints);
    while (!w->started)                 /* the watcher is in its call */
        sleep_us(1000);
    CHECK(etcd_delete(&c, w->key, 0, now_ms() + 20000) == ETCD_OK);
    etcd_conn_free(&c);
    running--;
}

/* Put `key` (no lease) with a transaction: its create revision. */
static long long put_key(const char *key)
{
    struct etcd_conn c;
    long long mine = 0, owner = 0;

    etcd_conn_init(&c, endpoints);
    CHECK(etcd_mutex_txn(&c, key, key, 0, &mine, &owner, now_ms() + 20000) == ETCD_OK);
    etcd_conn_free(&c);
    return mine;
}

/* ---------------------------------------------------------------- refused */

/* A port of this host that refuses connections: bound and held, never
 * listened on (a port let go could be the one the kernel picks for the
 * client's own end, and a socket connected to itself answers nothing). */
static int closed_port(int *held)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("test_etcd_client: a closed port");
        exit(2);
    }
    port = ntohs(a.sin_port);
    *held = fd;
    return port;
}

struct refused {
    char list[400];
    int  rc;
    unsigned calls;
    int  status;
    char backend[300];
    int64_t until_ms, ended_ms;
};

/* A lease grant through `list`. */
static void refused_grant(void *arg)
{
    struct refused *f = arg;
    struct lock_ctx ctx = { 0 };
    struct etcd_conn c;
    long long lease = 0;
    int ttl;

    etcd_conn_init(&c, f->list);
    f->rc = etcd_lease_grant(&c, 5, &lease, &ttl, f->until_ms);
    f->ended_ms = now_ms();
    f->calls = c.calls;
    if (f->rc != ETCD_OK) {
        f->status = etcd_error(&ctx, &c, f->rc, "lease grant");
        snprintf(f->backend, sizeof f->backend, "%s", ctx.backend ? ctx.backend : "");
    } else {
        etcd_lease_revoke(&c, lease, now_ms() + 20000);
    }
    etcd_conn_free(&c);
    running--;
}

/* ---------------------------------------------------------------- the thread */

struct thread_part {
    struct run   run;
    struct watch timeout;
};

static void *thread_main(void *arg)
{
    struct thread_part *t = arg;

    run_calls(&t->run);
    t->timeout.until_ms = now_ms() + 300;
    watcher(&t->timeout);
    return NULL;
}

/* ---------------------------------------------------------------- main */

static void check_run(const struct run *r)
{
    if (!r->ok)
        printf("%s\n", r->why);
    CHECK(r->ok);
    CHECK(r->calls == 9);
    CHECK(r->connects == 1);            /* kept alive from the first call */
}

int main(void)
{
    static struct run runs[NCORO];
    static struct thread_part tp;
    static struct watch deleted, timeout;
    static struct refused first, alone;
    struct etcd_conn c;
    pthread_t th;
    int i, held, port = closed_port(&held);

    if ((endpoints = getenv("LOCKLAB_ETCD")) == NULL || *endpoints == '\0') {
        fprintf(stderr, "test_etcd_client: LOCKLAB_ETCD is not set: source .run/stack.env\n");
        return 2;
    }
    /* A killed run's leftovers, from this plain thread. */
    etcd_conn_init(&c, endpoints);
    if (etcd_delete(&c, PREFIX, 1, now_ms() + 20000) != ETCD_OK) {
        fprintf(stderr, "test_etcd_client: etcd %s: %s\n", endpoints, c.err);
        return 2;
    }
    etcd_conn_free(&c);

    snprintf(deleted.key, sizeof deleted.key, "%sdeleted", PREFIX);
    deleted.rev = put_key(deleted.key);
    deleted.until_ms = now_ms() + 20000;
    snprintf(timeout.key, sizeof timeout.key, "%skept", PREFIX);
    timeout.rev = put_key(timeout.key);
    tp.timeout = timeout;
    snprintf(first.list, sizeof first.list, "127.0.0.1:%d,%s", port, endpoints);
    first.until_ms = now_ms() + 20000;
    snprintf(alone.list, sizeof alone.list, "127.0.0.1:%d", port);

    if (loop_init() != 0) {
        fprintf(stderr, "test_etcd_client: no loop\n");
        return 2;
    }
    tp.run.id = NCORO;
    if (pthread_create(&th, NULL, thread_main, &tp) != 0)
        return 2;
    for (i = 0; i < NCORO; i++) {
        runs[i].id = i;
        runs[i].on_loop = 1;
        task_spawn(run_calls, &runs[i]);
    }
    task_spawn(watcher, &deleted);
    task_spawn(deleter, &deleted);
    timeout.until_ms = now_ms() + 300;
    task_spawn(watcher, &timeout);
    task_spawn(refused_grant, &first);
    alone.until_ms = now_ms() + 300;
    task_spawn(refused_grant, &alone);
    running = NCORO + 5;
    while (running > 0)
        loop_once();
    pthread_join(th, NULL);

    /* The calls, on the loop and on the thread. */
    for (i = 0; i < NCORO; i++)
        check_run(&runs[i]);
    check_run(&tp.run);
    CHECK(most_in_call == NCORO);

    /* The watch ended by the deleter's delete. */
    CHECK(deleted.rc == ETCD_OK && deleted.timed_out == 0);

    /* The deadline passed mid-request: timed out, not before it. */
    CHECK(timeout.rc == ETCD_DOWN && timeout.timed_out == 1);
    CHECK(timeout.ended_ms >= timeout.until_ms);
    CHECK(tp.timeout.rc == ETCD_DOWN && tp.timeout.timed_out == 1);
    CHECK(tp.timeout.ended_ms >= tp.timeout.until_ms);

    /* A refusing member first: the next one answers. */
    CHECK(first.rc == ETCD_OK && first.calls >= 2);

    /* Refused alone: unavailable, naming it, tried until the deadline but
     * without spinning (a round of one endpoint pauses 20 ms: 300 ms allow
     * about 15 attempts). */
    CHECK(alone.rc == ETCD_DOWN);
    CHECK(alone.status == LL_UNAVAILABLE);
    CHECK(strstr(alone.backend, "etcd 127.0.0.1:") == alone.backend);
    CHECK(alone.calls >= 1 && alone.calls < 100);
    CHECK(alone.ended_ms >= alone.until_ms);

    etcd_conn_init(&c, endpoints);
    CHECK(etcd_delete(&c, PREFIX, 1, now_ms() + 20000) == ETCD_OK);
    etcd_conn_free(&c);
    loop_free();
    close(held);
    printf("test_etcd_client: %d passed, %d failed (refused alone: %u attempts)\n", passed,
           failed, alone.calls);
    return failed ? 1 : 0;
}
