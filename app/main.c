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
#include "config.h"
#include "http.h"
#include "pool.h"
#include "stats.h"
#include "../locks/lock.h"

#include <mysql.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

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
    rc = config_parse(&cfg, argc, argv, err, sizeof err);
    if (rc == 1) {
        fputs(config_usage, stdout);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "locklab: %s\n", err);
        return 2;
    }

    /* Block the stop signals in every thread; main collects them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (mysql_library_init(0, NULL, NULL) != 0) {
        fprintf(stderr, "locklab: cannot initialise the MariaDB client library\n");
        return 1;
    }
    stats_init(nlocks);
    pool_init(&cfg);
    if (http_start(&cfg) != 0)
        return 1;
    fprintf(stderr, "locklab: %s listening on %s:%d%s%s (id %s, default lock %s, %d slots)\n",
            cfg.name, cfg.listen, cfg.port, cfg.unix_path ? " and " : "",
            cfg.unix_path ? cfg.unix_path : "", cfg.instance_id, cfg.lock, cfg.threads);

    sigwait(&sigs, &sig);
    fprintf(stderr, "locklab: %s stopping on signal %d\n", cfg.name, sig);
    http_stop();
    pool_free();
    mysql_library_end();
    return 0;
}
