/* test_redis_client.c — clients/redis.c against real Redis servers, on
 * coroutines on a loop and from plain threads.
 *
 * On the stack's first Redis (LOCKLAB_REDIS of .run/stack.env):
 *   - many coroutines of one loop send their commands in the same turn:
 *     they share one connection (CLIENT ID answers the same to all), and
 *     every reply reaches the coroutine that asked (SET/GET of its own key,
 *     ECHO of its own text, a pipeline of three whose replies come in
 *     order), with the round trips counted in ctx->backend_ops;
 *   - a script through EVALSHA, and again after SCRIPT FLUSH (NOSCRIPT, then
 *     EVAL); an error reply as a status on ctx; REDIS_OWN and redis_pin()
 *     taking the slot's own connection on the loop;
 *   - the same calls from plain threads, each on its own connection.
 * On a redis-server of its own (started here on a free port, stopped and
 * killed here, so the stack's servers are never disturbed):
 *   - the server killed while the shared connection has commands in
 *     flight (SIGSTOP first, so no reply can come before the kill): every
 *     waiter fails with LL_UNAVAILABLE naming the server, and once the
 *     server is back the next command reconnects;
 *   - the server silent (SIGSTOP) past the command timeout: every waiter
 *     fails, the connection is replaced (a new CLIENT ID after SIGCONT);
 *   - a caller with a shorter timeout of its own gives up alone, and the
 *     reply meant for it is thrown away, not handed to the caller behind;
 *   - a plain thread's own connection: silent past the command timeout,
 *     killed, back: each command fails or reconnects as it should.
 *   - a server named by a host name (localhost) in the configuration: it
 *     is reached, and the name is never looked up on the loop (a resolver
 *     made slow, tests/slow_resolver.h: no look-up counted, no slow turn).
 *
 *     set -a; . .run/stack.env; set +a; build/tests/test_redis_client
 */
#include "check.h"
#include "slow_resolver.h"
#include "../clients/redis.h"
#include "../core/config.h"
#include "../core/ctx.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MANY 300            /* coroutines sending in one turn */

static struct config stack_cfg, own_cfg;

static void cfg_init(struct config *cfg, const char *host, int port)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->redis[0].host, sizeof cfg->redis[0].host, "%s", host);
    cfg->redis[0].port = port;
    cfg->nredis = 1;
    cfg->threads = MANY;
    snprintf(cfg->instance_id, sizeof cfg->instance_id, "test-redis-client");
}

static void ctx_init(struct lock_ctx *ctx, const struct config *cfg, int slot)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->slot = slot;
    ctx->cfg = cfg;
}

/* Run the loop until *done reaches want. */
static void run_until(const int *done, int want)
{
    while (*done < want)
        loop_once();
}

static long long client_id(struct lock_ctx *ctx, enum redis_via via)
{
    struct redis_pipe p;
    redisReply *r;
    long long id = -1;

    redis_pipe_init(&p, ctx, 0, REDIS_CMD_TIMEOUT_MS, via, "CLIENT ID");
    redis_pipe_add(&p, "CLIENT ID");
    if (redis_pipe_run(&p, &r) == LL_OK) {
        if (r->type == REDIS_REPLY_INTEGER)
            id = r->integer;
        freeReplyObject(r);
    }
    return id;
}

static int reply_is(redisReply *r, const char *s)
{
    int ok = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, s) == 0;

    if (r)
        freeReplyObject(r);
    return ok;
}

/* ---------------------------------------------------------------- many callers */

struct caller {
    struct lock_ctx ctx;
    int            *done;
    long long       id, incr;
    int             ok;                 /* every reply was its own */
};

/* What every caller does, on a coroutine or a thread. */
static void caller_run(struct caller *c)
{
    struct lock_ctx *ctx = &c->ctx;
    char key[64], val[64], echo[64];
    struct redis_pipe p;
    redisReply *r[3] = { NULL, NULL, NULL };

    snprintf(key, sizeof key, "test:redis-client:%d", ctx->slot);
    snprintf(val, sizeof val, "value-%d", ctx->slot);
    snprintf(echo, sizeof echo, "echo-%d", ctx->slot);
    c->id = client_id(ctx, REDIS_ANY);
    c->ok = reply_is(redis_cmd(ctx, 0, "ECHO %s", echo), echo);
    r[0] = redis_cmd(ctx, 0, "SET %s %s", key, val);
    c->ok &= r[0] && r[0]->type == REDIS_REPLY_STATUS;
    redis_replies_free(r, 1);
    c->ok &= reply_is(redis_cmd(ctx, 0, "GET %s", key), val);

    /* Three commands, one round trip, replies in order. */
    redis_pipe_init(&p, ctx, 0, REDIS_CMD_TIMEOUT_MS, REDIS_ANY, "pipeline");
    redis_pipe_add(&p, "INCR test:redis-client:counter");
    redis_pipe_add(&p, "ECHO %s", echo);
    redis_pipe_add(&p, "GET %s", key);
    if (redis_pipe_run(&p, r) == LL_OK) {
        c->ok &= r[0]->type == REDIS_REPLY_INTEGER;
        c->incr = r[0]->integer;
        c->ok &= r[1]->type == REDIS_REPLY_STRING && strcmp(r[1]->str, echo) == 0;
        c->ok &= r[2]->type == REDIS_REPLY_STRING && strcmp(r[2]->str, val) == 0;
        redis_replies_free(r, 3);
    } else {
        c->ok = 0;
    }
    (*c->done)++;
}

static void caller_co(void *arg)
{
    caller_run(arg);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* MANY coroutines in one turn, on one shared connection. */
static void test_loop_many(void)
{
    struct caller *c = xcalloc(MANY, sizeof *c);
    long long incr[MANY], first;
    int i, done = 0, same = 1, ok = 1, ops = 1;
    redisReply *r;
    struct lock_ctx setup;

    ctx_init(&setup, &stack_cfg, MANY);
    r = redis_cmd(&setup, 0, "DEL test:redis-client:counter");
    CHECK(r != NULL);
    redis_replies_free(&r, 1);
    redis_ctx_free(&setup);
    for (i = 0; i < MANY; i++) {
        ctx_init(&c[i].ctx, &stack_cfg, i);
        c[i].done = &done;
        task_spawn(caller_co, &c[i]);
    }
    run_until(&done, MANY);
    first = c[0].id;
    for (i = 0; i < MANY; i++) {
        same &= c[i].id == first;
        ok &= c[i].ok;
        incr[i] = c[i].incr;
        /* CLIENT ID, ECHO, SET, GET, the pipeline: a round trip each; the
         * connect is counted on whoever made it. */
        ops &= c[i].ctx.backend_ops == 5 || c[i].ctx.backend_ops == 6;
    }
    CHECK(first > 0);
    CHECK(same);                        /* one connection for all */
    CHECK(ok);                          /* every reply to its own caller */
    CHECK(ops);
    qsort(incr, MANY, sizeof incr[0], cmp_ll);
    for (i = 0; i < MANY; i++)
        ok &= incr[i] == i + 1;         /* each INCR answered once */
    CHECK(ok);
    for (i = 0; i < MANY; i++)
        redis_ctx_free(&c[i].ctx);
    free(c);
}

/* ---------------------------------------------------------------- scripts, errors, own */

struct one {
    struct lock_ctx ctx;
    int             done;
    void          (*fn)(struct one *);
};

static void one_co(void *arg)
{
    struct one *o = arg;

    o->fn(o);
    o->done = 1;
}

/* Run fn(o) as one coroutine on the loop, to its end. */
static void on_loop(struct one *o, void (*fn)(struct one *))
{
    o->fn = fn;
    o->done = 0;
    task_spawn(one_co, o);
    run_until(&o->done, 1);
}

static struct redis_script echo_script = { "return ARGV[1]", "" };

static void scripts(struct one *o)
{
    struct lock_ctx *ctx = &o->ctx;
    const char *argv[1] = { "first" };
    redisReply *r;
    unsigned ops;

    CHECK(reply_is(redis_eval(ctx, 0, &echo_script, 0, 1, argv), "first"));
    CHECK(echo_script.sha[0] != '\0');          /* loaded once, by SCRIPT LOAD */
    r = redis_cmd(ctx, 0, "SCRIPT FLUSH");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    redis_replies_free(&r, 1);
    argv[0] = "second";
    ops = ctx->backend_ops;
    CHECK(reply_is(redis_eval(ctx, 0, &echo_script, 0, 1, argv), "second"));
    CHECK(ctx->backend_ops == ops + 2);         /* EVALSHA: NOSCRIPT; then EVAL */
}

static void errors(struct one *o)
{
    struct lock_ctx *ctx = &o->ctx;
    redisReply *r;

    r = redis_cmd(ctx, 0, "SET test:redis-client:string x");
    redis_replies_free(&r, 1);
    r = redis_cmd(ctx, 0, "HGET test:redis-client:string f");
    CHECK(r && r->type == REDIS_REPLY_ERROR);
    if (r == NULL) {
        printf("  HGET: %s\n", ctx->errstr);
        return;
    }
    CHECK(redis_reply_error(ctx, 0, r, "test:redis-client:string") == LL_ERROR);
    CHECK(ctx->err == LL_ERROR && strstr(ctx->errstr, "another strategy") != NULL);
    CHECK(ctx->redis && ctx->redis->wrongtype);  /* a lock's try takes it as held */
    CHECK(ctx->backend && strncmp(ctx->backend, "redis ", 6) == 0);
}

static void own(struct one *o)
{
    struct lock_ctx *ctx = &o->ctx;
    long long shared = client_id(ctx, REDIS_ANY), mine = client_id(ctx, REDIS_OWN);

    CHECK(task_on_loop());
    CHECK(shared > 0 && mine > 0 && shared != mine);
    CHECK(redis_own_gen(ctx, 0) == 1);
    redis_pin(ctx, 1);
    CHECK(client_id(ctx, REDIS_ANY) == mine);   /* pinned: its own connection */
    redis_pin(ctx, 0);
    CHECK(client_id(ctx, REDIS_ANY) == shared);
}

static void test_loop_one(void)
{
    struct one o;

    ctx_init(&o.ctx, &stack_cfg, 0);
    on_loop(&o, scripts);
    on_loop(&o, errors);
    on_loop(&o, own);
    redis_ctx_free(&o.ctx);
}

/* ---------------------------------------------------------------- threads */

#define THREADS 4

static void *caller_thread(void *arg)
{
    struct caller *c = arg;
    long long again;

    caller_run(c);
    again = client_id(&c->ctx, REDIS_ANY);
    c->ok &= !task_on_loop() && again == c->id;     /* its own, kept */
    return NULL;
}

static void test_threads(void)
{
    struct caller c[THREADS];
    pthread_t th[THREADS];
    int i, k, done = 0, distinct = 1;

    memset(c, 0, sizeof c);
    for (i = 0; i < THREADS; i++) {
        ctx_init(&c[i].ctx, &stack_cfg, i);
        c[i].done = &done;
        CHECK(pthread_create(&th[i], NULL, caller_thread, &c[i]) == 0);
    }
    for (i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < THREADS; i++) {
        CHECK(c[i].ok);
        CHECK(c[i].ctx.backend_ops == 7);       /* connect + 5 + CLIENT ID again */
        for (k = 0; k < i; k++)
            distinct &= c[k].id != c[i].id;
    }
    CHECK(distinct);
    for (i = 0; i < THREADS; i++)
        redis_ctx_free(&c[i].ctx);
}

/* ---------------------------------------------------------------- a server of our own */

static pid_t server_pid;
static int server_port;
static char server_dir[64];

static void server_start(void)
{
    char port[16];
    int64_t until = now_ms() + 10000;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)server_port) };
    int s, up = 0;

    snprintf(port, sizeof port, "%d", server_port);
    if ((server_pid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);

        dup2(null, 1);
        dup2(null, 2);
        execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", server_dir,
               "--loglevel", "warning", (char *)NULL);
        _exit(127);
    }
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    while (!up && now_ms() < until) {       /* until it accepts */
        s = socket(AF_INET, SOCK_STREAM, 0);
        up = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
        close(s);
        if (!up)
            usleep(20000);
    }
    if (!up) {
        fprintf(stderr, "test_redis_client: redis-server on %d did not start\n", server_port);
        exit(2);
    }
}

static void server_kill(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
        server_pid = 0;
    }
}

static int free_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM, 0), port;

    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    bind(s, (struct sockaddr *)&a, sizeof a);
    getsockname(s, (struct sockaddr *)&a, &len);
    port = ntohs(a.sin_port);
    close(s);
    return port;
}

struct victim {
    struct lock_ctx ctx;
    int            *done;
    int             timeout_ms;
    int             rc;
    char            text[32];
};

static void victim_co(void *arg)
{
    struct victim *v = arg;
    struct redis_pipe p;
    redisReply *r;

    redis_pipe_init(&p, &v->ctx, 0, v->timeout_ms, REDIS_ANY, "ECHO");
    redis_pipe_add(&p, "ECHO %s", v->text);
    v->rc = redis_pipe_run(&p, &r);
    if (v->rc == LL_OK && !reply_is(r, v->text))
        v->rc = -1;                             /* somebody else's reply */
    (*v->done)++;
}

/* n victims, each ECHO its index, timeout_ms each; started this turn. */
static struct victim *victims(int n, int *done, int timeout_ms)
{
    struct victim *v = xcalloc((size_t)n, sizeof *v);
    int i;

    for (i = 0; i < n; i++) {
        ctx_init(&v[i].ctx, &own_cfg, i);
        v[i].done = done;
        v[i].timeout_ms = timeout_ms;
        snprintf(v[i].text, sizeof v[i].text, "victim-%d", i);
        task_spawn(victim_co, &v[i]);
    }
    return v;
}

static void victims_free(struct victim *v, int n)
{
    int i;

    for (i = 0; i < n; i++)
        redis_ctx_free(&v[i].ctx);
    free(v);
}

static int all_unavailable(const struct victim *v, int n)
{
    char name[96];
    int i, ok = 1;

    snprintf(name, sizeof name, "redis 127.0.0.1:%d", server_port);
    for (i = 0; i < n; i++) {
        int one = v[i].rc == LL_UNAVAILABLE && v[i].ctx.err == LL_UNAVAILABLE &&
                  strstr(v[i].ctx.errstr, name) != NULL;
        if (!one)
            printf("  victim %d: rc %d: %s\n", i, v[i].rc, v[i].ctx.errstr);
        ok &= one;
    }
    return ok;
}

static void ping(struct one *o)
{
    redisReply *r = redis_cmd(&o->ctx, 0, "PING");

    o->ctx.err = r && r->type == REDIS_REPLY_STATUS ? LL_OK : LL_ERROR;
    redis_replies_free(&r, 1);
}

static void shared_id(struct one *o)
{
    o->ctx.token = client_id(&o->ctx, REDIS_ANY);
}

/* The server killed with the shared connection's commands in flight. */
static void test_killed(void)
{
    struct one o;
    struct victim *v;
    int done = 0;

    ctx_init(&o.ctx, &own_cfg, 0);
    on_loop(&o, ping);
    CHECK(o.ctx.err == LL_OK);
    kill(server_pid, SIGSTOP);              /* no reply can come from now on */
    v = victims(50, &done, REDIS_CMD_TIMEOUT_MS);
    loop_once();                            /* their commands leave at the turn's end */
    CHECK(done == 0);
    server_kill();
    run_until(&done, 50);
    CHECK(all_unavailable(v, 50));
    victims_free(v, 50);
    server_start();
    on_loop(&o, ping);                      /* the next command reconnects */
    CHECK(o.ctx.err == LL_OK);
    redis_ctx_free(&o.ctx);
}

/* The server silent past the command timeout: every waiter fails, and the
 * connection is replaced. */
static void test_silent(void)
{
    struct one o;
    struct victim *v;
    long long before;
    int done = 0;

    ctx_init(&o.ctx, &own_cfg, 0);
    on_loop(&o, shared_id);
    before = o.ctx.token;
    CHECK(before > 0);
    kill(server_pid, SIGSTOP);
    v = victims(20, &done, REDIS_CMD_TIMEOUT_MS);
    run_until(&done, 20);                   /* a command timeout later */
    kill(server_pid, SIGCONT);
    CHECK(all_unavailable(v, 20));
    victims_free(v, 20);
    on_loop(&o, shared_id);
    CHECK(o.ctx.token > 0 && o.ctx.token != before);
    redis_ctx_free(&o.ctx);
}

/* A caller with a short timeout gives up alone; the reply meant for it is
 * not handed to the caller behind it. The one behind has the whole command
 * timeout (1 s) for the ~50 ms until SIGCONT: a margin no scheduler delay
 * on a loaded machine comes near. */
static void test_short_timeout(void)
{
    struct victim *quick, *patient;
    int done_quick = 0, done_patient = 0;

    kill(server_pid, SIGSTOP);
    quick = victims(1, &done_quick, 50);
    patient = victims(1, &done_patient, REDIS_CMD_TIMEOUT_MS);
    snprintf(patient->text, sizeof patient->text, "patient");
    run_until(&done_quick, 1);
    CHECK(quick->rc == LL_UNAVAILABLE && strstr(quick->ctx.errstr, "no reply within 50 ms"));
    CHECK(done_patient == 0);
    kill(server_pid, SIGCONT);
    run_until(&done_patient, 1);
    CHECK(patient->rc == LL_OK);            /* its own ECHO, not quick's */
    victims_free(quick, 1);
    victims_free(patient, 1);
}

/* A plain thread's own connection under the same faults, one after the
 * other: silent past the command timeout, then killed, then back. */
static int thread_ping(struct lock_ctx *ctx)
{
    redisReply *r = redis_cmd(ctx, 0, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;

    redis_replies_free(&r, 1);
    return ok;
}

static void *thread_faults(void *arg)
{
    struct lock_ctx ctx;
    int *ok = arg;
    unsigned gen;

    ctx_init(&ctx, &own_cfg, 0);
    *ok = thread_ping(&ctx) && !task_on_loop();
    gen = redis_own_gen(&ctx, 0);
    kill(server_pid, SIGSTOP);
    *ok &= !thread_ping(&ctx) && ctx.err == LL_UNAVAILABLE &&
           strstr(ctx.errstr, "no reply") != NULL;
    kill(server_pid, SIGCONT);
    *ok &= thread_ping(&ctx) && redis_own_gen(&ctx, 0) == gen + 1;  /* a new one */
    server_kill();
    *ok &= !thread_ping(&ctx) && ctx.err == LL_UNAVAILABLE;        /* refused */
    server_start();
    usleep((REDIS_RECONNECT_MS + 50) * 1000);   /* past a failed connect's hold-off */
    *ok &= thread_ping(&ctx);
    redis_ctx_free(&ctx);
    return NULL;
}

static void test_thread_faults(void)
{
    pthread_t th;
    int ok = 0;

    CHECK(pthread_create(&th, NULL, thread_faults, &ok) == 0);
    pthread_join(th, NULL);
    CHECK(ok);
}

static void cleanup(void)
{
    server_kill();
    if (server_dir[0])
        rmdir(server_dir);
}

/* ---------------------------------------------------------------- a host name */

/* The own server named "localhost" by --redis, parsed as the server
 * parses its flags (config_parse()): a coroutine's commands reach it, and
 * the name is resolved before the loop, never on it. */
static void test_host_name(void)
{
    static struct config named;         /* the loop's shared set names it */
    struct loop_stats before, after;
    struct one o;
    char list[32], err[256];

    snprintf(list, sizeof list, "localhost:%d", server_port);
    CHECK(config_parse(&named, 3, (char *[]){ "test", "--redis", list, NULL }, err,
                       sizeof err) == 0);
    CHECK(named.nredis == 1);
    printf("   --redis %s is %s:%d\n", list, named.redis[0].host, named.redis[0].port);
    ctx_init(&o.ctx, &named, 0);
    slow_lookups = 0;
    loop_stats(&before);
    on_loop(&o, ping);
    loop_stats(&after);
    CHECK(o.ctx.err == LL_OK);
    CHECK(slow_lookups == 0);                           /* none on the loop */
    CHECK(after.slow_turns == before.slow_turns);
    redis_ctx_free(&o.ctx);
}

int main(void)
{
    const char *list = getenv("LOCKLAB_REDIS");
    struct config parsed;

    if (list == NULL || *list == '\0') {
        fprintf(stderr, "test_redis_client: LOCKLAB_REDIS is not set: source .run/stack.env\n");
        return 2;
    }
    if (config_parse_servers(list, parsed.redis, CONFIG_MAX_SERVERS) < 1) {
        fprintf(stderr, "test_redis_client: cannot read LOCKLAB_REDIS=%s\n", list);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    cfg_init(&stack_cfg, parsed.redis[0].host, parsed.redis[0].port);
    snprintf(server_dir, sizeof server_dir, "/tmp/test-redis-client.XXXXXX");
    if (mkdtemp(server_dir) == NULL)
        return 2;
    atexit(cleanup);
    server_port = free_port();
    cfg_init(&own_cfg, "127.0.0.1", server_port);
    server_start();

    CHECK(loop_init() == 0);
    test_loop_many();
    test_loop_one();
    test_killed();
    test_silent();
    test_short_timeout();
    test_host_name();
    redis_loop_close();
    loop_free();

    test_threads();
    test_thread_faults();
    printf("redis client: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
