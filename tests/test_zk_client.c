/* test_zk_client.c — clients/zk.c against the stack's real ZooKeeper, on
 * coroutines on a loop and on plain threads at the same time, sharing the
 * one session as the server's requests do.
 *
 *   calls:    every call (create, exists, getData, setData at a version,
 *             getChildren, delete) and its answer, from 48 coroutines at
 *             once and from a thread. How many of the coroutines' first
 *             calls were out at once is printed, not asserted: the loop
 *             runs a turn's jobs as a batch, so all 48 go out before any
 *             answer can wake its coroutine, but an answer that comes back
 *             before its caller looks for it (the loop's thread preempted
 *             between the two) is taken without a wait;
 *   refused:  a call the library refuses at once (a bad path) answers
 *             ZBADARGUMENTS and leaves nothing behind;
 *   watches:  16 coroutines each watch their own node (zk_watch_begin,
 *             exists with a watch) and a 17th deletes them all once every
 *             watch is set: each waiter wakes with its event counted. A
 *             waiter that blocked the loop's thread would keep the others
 *             from setting their watches, and so the deleter from deleting:
 *             every wait would end at its deadline instead. A
 *             zk_wait_gone() on a node being deleted returns LL_OK; the same
 *             from a thread, whose node another thread deletes;
 *   deadline: creates whose deadline has passed when they are issued
 *             (now_us()) answer ZOPERATIONTIMEOUT, and their coroutines end
 *             — their stacks and tasks freed — before ZooKeeper's answers
 *             arrive, which must touch neither (run under ASan). The
 *             creates did happen: after a later call's answer (ZooKeeper
 *             answers a session's calls in order, and its one completion
 *             thread runs the completions in order) every node is there.
 *             Why the deadline passes first: the caller looks at it within
 *             microseconds of handing the call to the library, while a
 *             create is a quorum write: the client's I/O thread sends it,
 *             the leader proposes it to a majority and waits for their
 *             acknowledgements, then the answer comes back through the
 *             I/O and completion threads; the case repeats until it has
 *             seen 20;
 *   close:    zk_close() ends the session, and its ephemeral nodes with it,
 *             as a fresh session sees.
 *
 * Nothing here asserts how long anything took.
 *
 *     set -a; . .run/stack.env; set +a; build/test_zk_client
 */
#include "check.h"
#include "../clients/zk.h"
#include "../core/config.h"
#include "../core/coro.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_CALLERS  48
#define N_WATCHERS 16
#define N_LATE     8            /* coroutines issuing late creates   */
#define LATE_WANT  20           /* late answers the case wants to see */

static struct config cfg;
static char root[128];

static void ctx_init(struct lock_ctx *ctx, int slot)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->slot = slot;
    ctx->cfg = &cfg;
    ctx->wait_ms = 20000;
    ctx->deadline_ms = now_ms() + ctx->wait_ms;
}

static struct zk_conn *session(struct lock_ctx *ctx)
{
    struct zk_conn *c = NULL;

    if (zk_connect(ctx, &c) != LL_OK) {
        printf("test_zk_client: %s\n", ctx->errstr);
        exit(2);
    }
    return c;
}

/* ---------------------------------------------------------------- calls */

/* One caller's round of every call on its own node <dir>/n<id>; how many
 * of its checks failed. */
static int round_of_calls(struct lock_ctx *ctx, struct zk_conn *c, const char *dir, int id)
{
    char path[ZK_PATH_MAX], made[ZK_PATH_MAX], data[32], buf[64];
    struct String_vector kids;
    struct Stat st, st2;
    int len = sizeof buf, bad = 0, zrc, i, seen = 0;

    snprintf(data, sizeof data, "n%d", id);
    zk_join(path, sizeof path, dir, data);
    bad += zk_create(ctx, c, path, data, ZOO_EPHEMERAL, made, sizeof made) != ZOK;
    bad += strcmp(made, path) != 0;
    bad += zk_create(ctx, c, path, data, ZOO_EPHEMERAL, NULL, 0) != ZNODEEXISTS;
    zrc = zk_get(ctx, c, path, 0, buf, &len, &st);
    bad += zrc != ZOK || len != (int)strlen(data) || memcmp(buf, data, (size_t)len) != 0;
    bad += st.ephemeralOwner != zk_session_id(c);
    bad += zk_set(ctx, c, path, "x", 1, st.version, &st2) != ZOK || st2.version != st.version + 1;
    bad += zk_set(ctx, c, path, "y", 1, st.version, NULL) != ZBADVERSION;
    bad += zk_exists(ctx, c, path, 0, &st) != ZOK || st.version != st2.version;
    bad += zk_children(ctx, c, dir, &kids) != ZOK;
    for (i = 0; i < kids.count; i++)
        seen += strcmp(kids.data[i], data) == 0;
    deallocate_String_vector(&kids);
    bad += seen != 1;
    bad += zk_delete(ctx, c, path, -1) != ZOK;
    bad += zk_exists(ctx, c, path, 0, &st) != ZNONODE;
    bad += zk_delete(ctx, c, path, -1) != ZNONODE;
    return bad;
}

static char calls_dir[ZK_PATH_MAX];
static int in_flight, most_in_flight, callers_done, callers_bad;

static void caller(void *arg)
{
    struct lock_ctx ctx;
    struct zk_conn *c;
    struct Stat st;
    int id = (int)(intptr_t)arg;

    ctx_init(&ctx, id);
    c = session(&ctx);
    /* The first call of every coroutine: counted in flight. */
    in_flight++;
    if (in_flight > most_in_flight)
        most_in_flight = in_flight;
    callers_bad += zk_exists(&ctx, c, calls_dir, 0, &st) != ZOK;
    in_flight--;
    callers_bad += round_of_calls(&ctx, c, calls_dir, id);
    callers_bad += ctx.backend_ops != 11;
    zk_put(c);
    callers_done++;
}

/* ---------------------------------------------------------------- watches */

static char watch_dir[ZK_PATH_MAX];
static int armed, watchers_done, watchers_bad, gone_rc = -1;
static struct wait_cond all_armed = WAIT_COND_INIT;

static void watcher(void *arg)
{
    struct lock_ctx ctx;
    struct zk_conn *c;
    struct zk_watch *w;
    char path[ZK_PATH_MAX], name[16];
    struct Stat st;
    int id = (int)(intptr_t)arg;

    ctx_init(&ctx, 100 + id);
    c = session(&ctx);
    snprintf(name, sizeof name, "w%d", id);
    zk_join(path, sizeof path, watch_dir, name);
    watchers_bad += zk_create(&ctx, c, path, NULL, ZOO_EPHEMERAL, NULL, 0) != ZOK;
    w = zk_watch_begin(c, path);
    watchers_bad += zk_exists(&ctx, c, path, 1, &st) != ZOK;
    armed++;
    wait_cond_signal(&all_armed);
    watchers_bad += zk_watch_wait(&ctx, w, ctx.deadline_ms) != LL_OK;
    watchers_bad += ctx.wakeups != 1;
    zk_watch_end(w);
    zk_put(c);
    watchers_done++;
}

static void deleter(void *arg)
{
    struct lock_ctx ctx;
    struct zk_conn *c;
    char path[ZK_PATH_MAX], name[16];
    int i;

    ctx_init(&ctx, 99);
    c = session(&ctx);
    while (armed < N_WATCHERS)          /* one loop thread: no lost signal */
        wait_cond_wait(&all_armed, NULL, now_us() + 20 * 1000000);
    for (i = 0; i < N_WATCHERS; i++) {
        snprintf(name, sizeof name, "w%d", i);
        zk_join(path, sizeof path, watch_dir, name);
        watchers_bad += zk_delete(&ctx, c, path, -1) != ZOK;
    }
    zk_join(path, sizeof path, watch_dir, "gone");
    watchers_bad += zk_delete(&ctx, c, path, -1) != ZOK;
    zk_put(c);
    watchers_done++;
}

/* Waits for <watch_dir>/gone, which the deleter removes. */
static void gone_waiter(void *arg)
{
    struct lock_ctx ctx;
    struct zk_conn *c;
    char path[ZK_PATH_MAX];

    ctx_init(&ctx, 98);
    c = session(&ctx);
    zk_join(path, sizeof path, watch_dir, "gone");
    gone_rc = zk_wait_gone(&ctx, c, path, 1);
    zk_put(c);
    watchers_done++;
}

/* ---------------------------------------------------------------- deadlines */

static char late_dir[ZK_PATH_MAX];
static int late_timeouts, late_issued, late_done, late_bad;

/* Creates with a deadline already passed, until LATE_WANT of them timed
 * out among all the late coroutines (or 50 tries each). */
static void late_caller(void *arg)
{
    struct lock_ctx ctx;
    struct zk_conn *c;
    char path[ZK_PATH_MAX];
    int i, zrc;

    ctx_init(&ctx, (int)(intptr_t)arg);
    c = session(&ctx);
    zk_join(path, sizeof path, late_dir, "late-");
    for (i = 0; i < 50 && late_timeouts < LATE_WANT; i++) {
        struct zk_call k = { .op = ZK_OP_CREATE, .path = path, .data = "late", .len = 4,
                             .mode = ZOO_EPHEMERAL_SEQUENTIAL };
        char made[ZK_PATH_MAX];

        k.out = made;
        k.out_len = sizeof made;
        late_issued++;
        zrc = zk_call(&ctx, c, &k, now_us());
        if (zrc == ZOPERATIONTIMEOUT)
            late_timeouts++;
        else
            late_bad += zrc != ZOK;
    }
    zk_put(c);
    late_done++;
}

/* ---------------------------------------------------------------- threads */

struct thread_run {
    int  bad;
    int  watch_rc, wakeups;
    int  late_timeouts, late_issued;
    char node[ZK_PATH_MAX];
};

static void *thread_deleter(void *arg)
{
    struct thread_run *r = arg;
    struct lock_ctx ctx;
    struct zk_conn *c;

    ctx_init(&ctx, 201);
    c = session(&ctx);
    r->bad += zk_delete(&ctx, c, r->node, -1) != ZOK;
    zk_put(c);
    return NULL;
}

/* Calls, a watch whose node another thread deletes, and late creates, on
 * a plain thread while the loop runs the coroutines. */
static void *thread_main(void *arg)
{
    struct thread_run *r = arg;
    struct lock_ctx ctx;
    struct zk_conn *c;
    struct zk_watch *w;
    struct Stat st;
    pthread_t th;
    char path[ZK_PATH_MAX];
    int i;

    ctx_init(&ctx, 200);
    c = session(&ctx);
    r->bad += round_of_calls(&ctx, c, calls_dir, 200);

    zk_join(r->node, sizeof r->node, watch_dir, "t");
    r->bad += zk_create(&ctx, c, r->node, NULL, ZOO_EPHEMERAL, NULL, 0) != ZOK;
    w = zk_watch_begin(c, r->node);
    r->bad += zk_exists(&ctx, c, r->node, 1, &st) != ZOK;
    pthread_create(&th, NULL, thread_deleter, r);
    r->watch_rc = zk_watch_wait(&ctx, w, ctx.deadline_ms);
    r->wakeups = (int)ctx.wakeups;
    zk_watch_end(w);
    pthread_join(th, NULL);

    zk_join(path, sizeof path, late_dir, "thread-");
    for (i = 0; i < 200 && r->late_timeouts < 5; i++) {
        struct zk_call k = { .op = ZK_OP_CREATE, .path = path, .mode = ZOO_EPHEMERAL_SEQUENTIAL };
        int zrc = zk_call(&ctx, c, &k, now_us());

        r->late_issued++;
        if (zrc == ZOPERATIONTIMEOUT)
            r->late_timeouts++;
        else
            r->bad += zrc != ZOK;
    }
    zk_put(c);
    return NULL;
}

/* ---------------------------------------------------------------- main */

static void setup_config(void)
{
    const char *zk = getenv("LOCKLAB_ZK");

    if (zk == NULL || *zk == '\0') {
        fprintf(stderr, "test_zk_client: LOCKLAB_ZK is not set: source .run/stack.env\n");
        exit(2);
    }
    cfg.zk = zk;
    cfg.lease_ms = 20000;       /* a 4 s session */
    cfg.retry_ms = 10;
    uuid4(cfg.instance_id);
    snprintf(root, sizeof root, "/locklab-test/zk-client-%.8s", cfg.instance_id);
}

static int count_children(struct lock_ctx *ctx, struct zk_conn *c, const char *dir)
{
    struct String_vector kids;
    int n;

    if (zk_children(ctx, c, dir, &kids) != ZOK)
        return -1;
    n = kids.count;
    deallocate_String_vector(&kids);
    return n;
}

int main(void)
{
    struct thread_run tr;
    struct lock_ctx ctx;
    struct zk_conn *c;
    char path[ZK_PATH_MAX];
    pthread_t th;
    int64_t t0;
    char buf[16];
    int i, left, len;

    setup_config();
    if (loop_init() != 0) {
        fprintf(stderr, "test_zk_client: no loop\n");
        return 2;
    }
    ctx_init(&ctx, 0);
    c = session(&ctx);
    zk_join(calls_dir, sizeof calls_dir, root, "calls");
    zk_join(watch_dir, sizeof watch_dir, root, "watch");
    zk_join(late_dir, sizeof late_dir, root, "late");
    CHECK(zk_ensure_path(&ctx, c, calls_dir, ZOO_PERSISTENT) == LL_OK);
    CHECK(zk_ensure_path(&ctx, c, watch_dir, ZOO_PERSISTENT) == LL_OK);
    CHECK(zk_ensure_path(&ctx, c, late_dir, ZOO_PERSISTENT) == LL_OK);
    zk_join(path, sizeof path, watch_dir, "gone");
    CHECK(zk_create(&ctx, c, path, "g", ZOO_EPHEMERAL, NULL, 0) == ZOK);

    /* data: none (-1), empty (0) */
    zk_join(path, sizeof path, root, "empty");
    CHECK(zk_create(&ctx, c, path, "", ZOO_EPHEMERAL, NULL, 0) == ZOK);
    len = sizeof buf;
    CHECK(zk_get(&ctx, c, path, 0, buf, &len, NULL) == ZOK && len == 0);
    CHECK(zk_delete(&ctx, c, path, -1) == ZOK);
    CHECK(zk_create(&ctx, c, path, NULL, ZOO_EPHEMERAL, NULL, 0) == ZOK);
    len = sizeof buf;
    CHECK(zk_get(&ctx, c, path, 0, buf, &len, NULL) == ZOK && len == -1);
    CHECK(zk_delete(&ctx, c, path, -1) == ZOK);

    /* sync: answered (the server caught up with the leader) */
    CHECK(zk_sync(&ctx, c, calls_dir) == ZOK);

    /* refused at once: no completion will come */
    CHECK(zk_create(&ctx, c, "no-slash", NULL, ZOO_EPHEMERAL, NULL, 0) == ZBADARGUMENTS);
    CHECK(zk_exists(&ctx, c, "", 0, NULL) == ZBADARGUMENTS);

    /* the thread runs while the loop runs the coroutines */
    memset(&tr, 0, sizeof tr);
    pthread_create(&th, NULL, thread_main, &tr);
    for (i = 0; i < N_CALLERS; i++)
        task_spawn(caller, (void *)(intptr_t)i);
    for (i = 0; i < N_WATCHERS; i++)
        task_spawn(watcher, (void *)(intptr_t)i);
    task_spawn(gone_waiter, NULL);
    task_spawn(deleter, NULL);
    for (i = 0; i < N_LATE; i++)
        task_spawn(late_caller, (void *)(intptr_t)(300 + i));
    while (callers_done < N_CALLERS || watchers_done < N_WATCHERS + 2 || late_done < N_LATE)
        loop_once();
    pthread_join(th, NULL);

    printf("calls: %d coroutines, at most %d calls in flight at once\n", N_CALLERS,
           most_in_flight);
    CHECK(callers_bad == 0);
    CHECK(watchers_bad == 0);
    CHECK(gone_rc == LL_OK);
    CHECK(tr.bad == 0);
    CHECK(tr.watch_rc == LL_OK && tr.wakeups == 1);
    printf("deadline: %d of %d late creates on coroutines, %d of %d on the thread, "
           "answered after their deadline\n", late_timeouts, late_issued,
           tr.late_timeouts, tr.late_issued);
    CHECK(late_timeouts >= LATE_WANT && late_bad == 0);
    CHECK(tr.late_timeouts >= 1);

    /* A later call's answer comes after every earlier one: every late
     * create has been answered (and its record freed) by now. */
    CHECK(count_children(&ctx, c, late_dir) == late_issued + tr.late_issued);
    CHECK(count_children(&ctx, c, calls_dir) == 0);
    CHECK(coro_count() == 0);
    zk_put(c);

    /* close: the session's ephemeral nodes go with it. zk_close() waits
     * for the server's answer to the close; should that answer be late
     * (the library waits 1.5 s for it), the session's expiry removes them
     * anyway: look for three session timeouts. */
    zk_close();
    ctx_init(&ctx, 0);
    c = session(&ctx);
    t0 = now_ms();
    while ((left = count_children(&ctx, c, late_dir)) != 0 && now_ms() - t0 < 12000)
        sleep_us(100000);
    printf("close: the closed session's nodes were gone %lld ms after zk_close()\n",
           (long long)(now_ms() - t0));
    CHECK(left == 0);
    CHECK(zk_delete_tree(&ctx, c, root, 1) == LL_OK);
    CHECK(zk_exists(&ctx, c, root, 0, NULL) == ZNONODE);
    zk_put(c);
    zk_close();
    loop_free();

    printf("test_zk_client: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
