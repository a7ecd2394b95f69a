/* main.c — locklab: one HTTP server whose /check/lock sells one unit of
 * MariaDB stock under a lock strategy chosen per request.
 *
 * Startup never waits for a backend: MariaDB, Redis and ZooKeeper are
 * connected lazily by the worker slots and reconnected after failures, so
 * an instance started before its databases answers 503 naming them until
 * they come up. A strategy registry with a name twice (locks/locks.def)
 * stops it before anything starts.
 *
 * The main thread runs the instance's one event loop (core/loop.h): the
 * HTTP connections, every request's coroutine, the backend clients and the
 * background tasks all live on it. SIGINT or SIGTERM starts the shutdown
 * as a task of the loop, which ends the loop when it is done.
 */
#include "http.h"
#include "metrics.h"
#include "pool.h"
#include "rtt.h"
#include "stats.h"
#include "../core/config.h"
#include "../core/loop.h"
#include "../core/wait.h"
#include "../locks/lock.h"
#include "../sync/sync.h"

#include <errno.h>
#include <event2/event.h>
#include <mysql.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* Every HTTP connection is a descriptor, and so is every backend
 * connection of every worker slot: raise the soft limit on open files to
 * the hard one (the default 1024 would refuse connections long before
 * --max-connections), and say what came of it. */
static void raise_nofile(const struct config *cfg)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)cfg->max_connections + 256 + (rlim_t)cfg->threads * 24;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        fprintf(stderr, "locklab: cannot read the open-file limit: %s\n", strerror(errno));
        return;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "locklab: cannot raise the open-file limit from %llu to %llu: %s\n",
                    (unsigned long long)was, (unsigned long long)rl.rlim_max, strerror(errno));
            rl.rlim_cur = was;
        }
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
        fprintf(stderr, "locklab: %s: only %llu open files allowed, and --max-connections %d "
                "with %d slots may need %llu: connections will be refused early\n",
                cfg->name, (unsigned long long)rl.rlim_cur, cfg->max_connections,
                cfg->threads, (unsigned long long)want);
}

/* The shutdown, on the loop: no new requests, the ones in flight
 * answered, the background tasks ended, every slot's locks and
 * connections given back; then the loop ends. */
static void shutdown_task(void *arg)
{
    (void)arg;
    http_quiesce();
    rtt_stop();
    lock_families_stop();
    metrics_stop();
    pool_free();
    loop_stop();
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    static int stopping;
    const struct config *cfg = arg;

    (void)what;
    if (stopping++)
        return;
    fprintf(stderr, "locklab: %s stopping on signal %d\n", cfg->name, (int)sig);
    task_spawn(shutdown_task, NULL);
}

int main(int argc, char **argv)
{
    static struct config cfg;
    char err[256];
    const struct lock_ops *const *locks;
    struct event *on_int, *on_term;
    int rc, nlocks;

    /* A registry with a name twice would serve one of the two: refuse it. */
    locks = lock_all(&nlocks);
    if (lock_table_check(locks, nlocks, err, sizeof err) != 0) {
        fprintf(stderr, "locklab: %s\n", err);
        return 2;
    }
    if (sync_check_registry(err, sizeof err) != 0) {
        fprintf(stderr, "locklab: %s\n", err);
        return 2;
    }
    rc = config_parse(&cfg, argc, argv, err, sizeof err);
    if (rc == 1) {
        fputs(config_usage, stdout);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "locklab: %s\n", err);
        return 2;
    }
    if (lock_find(cfg.lock) == NULL) {
        fprintf(stderr, "locklab: --lock: unknown strategy '%s' (GET /locks lists them)\n",
                cfg.lock);
        return 2;
    }

    signal(SIGPIPE, SIG_IGN);
    if (loop_init() != 0) {
        fprintf(stderr, "locklab: cannot start the event loop (libevent)\n");
        return 1;
    }

    raise_nofile(&cfg);
    if (cfg.admin_token == NULL)
        fprintf(stderr, "locklab: %s: no --admin-token: POST /stock/reset and /stats/reset "
                "are open to anyone who reaches this port\n", cfg.name);
    if (cfg.allow_faults)
        fprintf(stderr, "locklab: %s: --allow-faults: the fault switches (?hold_ms, ?crash, …) are "
                "accepted from anyone who reaches this port\n", cfg.name);
    if (mysql_library_init(0, NULL, NULL) != 0) {
        fprintf(stderr, "locklab: cannot initialise the MariaDB client library\n");
        return 1;
    }
    stats_init(nlocks);
    pool_init(&cfg);
    metrics_start(&cfg);                /* GET /metrics's stock reader */
    if (http_start(&cfg) != 0)
        return 1;
    lock_families_start(&cfg);          /* their background tasks (the Redis stock's consumer) */
    rtt_start(&cfg);                    /* the backends' round trips, timed each second */
    fprintf(stderr, "locklab: %s listening on %s:%d%s%s (id %s, default lock %s, %d slots)\n",
            cfg.name, cfg.listen, cfg.port, cfg.unix_path ? " and " : "",
            cfg.unix_path ? cfg.unix_path : "", cfg.instance_id, cfg.lock, cfg.threads);

    /* libevent turns the stop signals into events of the loop, whichever
     * thread the kernel delivers them to (ZooKeeper's own threads too). */
    on_int = evsignal_new(loop_base(), SIGINT, on_signal, &cfg);
    on_term = evsignal_new(loop_base(), SIGTERM, on_signal, &cfg);
    event_add(on_int, NULL);
    event_add(on_term, NULL);
    loop_run();

    event_free(on_int);
    event_free(on_term);
    http_stop();
    mysql_library_end();
    loop_free();
    return 0;
}
