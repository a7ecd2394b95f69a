/* main.c — locklab: one HTTP server whose /check/lock sells one unit of
 * MariaDB stock under a lock strategy chosen per request.
 *
 * Startup never waits for a backend: MariaDB, Redis and ZooKeeper are
 * connected lazily by the worker slots and reconnected after failures, so
 * an instance started before its databases answers 503 naming them until
 * they come up. A strategy registry with a name twice (locks/locks.def)
 * stops it before anything starts. The main thread only waits for
 * SIGINT/SIGTERM.
 */
#include "http.h"
#include "metrics.h"
#include "pool.h"
#include "stats.h"
#include "../core/config.h"
#include "../locks/lock.h"
#include "../locks/redis_stock.h"
#include "../sync/sync.h"

#include <errno.h>
#include <mysql.h>
#include <pthread.h>
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

int main(int argc, char **argv)
{
    static struct config cfg;
    char err[256];
    sigset_t sigs;
    const struct lock_ops *const *locks;
    int rc, sig, nlocks;

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

    /* Block the stop signals in every thread; main collects them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    raise_nofile(&cfg);
    if (cfg.admin_token == NULL)
        fprintf(stderr, "locklab: %s: no --admin-token: POST /stock/reset and /stats/reset "
                "are open to anyone who reaches this port\n", cfg.name);
    if (cfg.allow_faults)
        fprintf(stderr, "locklab: %s: --allow-faults: ?hold_ms, ?crash and ?lose_answer are "
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
    redis_stock_consumer_start(&cfg);   /* applies the Redis stock's sales */
    fprintf(stderr, "locklab: %s listening on %s:%d%s%s (id %s, default lock %s, %d slots)\n",
            cfg.name, cfg.listen, cfg.port, cfg.unix_path ? " and " : "",
            cfg.unix_path ? cfg.unix_path : "", cfg.instance_id, cfg.lock, cfg.threads);

    sigwait(&sigs, &sig);
    fprintf(stderr, "locklab: %s stopping on signal %d\n", cfg.name, sig);
    http_stop();
    redis_stock_consumer_stop();
    metrics_stop();
    pool_free();
    mysql_library_end();
    return 0;
}
