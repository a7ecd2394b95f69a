/* report_md.c — report.md: the main table with its notes, where the time
 * goes, each run over time and by percentile (report_time.c), the ceilings
 * with their trials, the machine and the settings. The machine's and the
 * settings' keys are listed here, in the order both reports show them.
 */
#include "report_private.h"

#include <string.h>

/* ---------------------------------------------------------------- markdown */

const char *const machine_keys[][2] = {
    { "nproc", "cores" }, { "cpu", "CPU" }, { "kernel", "kernel" }, { "cpuidle", "CPU idle driver" },
    { "wake", "a thread's wake-up (ll-wake, before the run)" },
    { "mariadb_prio", "MariaDB's priority" }, { "load", "load average before" },
    { "mariadb", "MariaDB" }, { "redis", "Redis" }, { "zookeeper", "ZooKeeper" },
    { "etcd", "etcd" }, { "nginx", "nginx" }, { "wrk", "wrk" },
};

const char *const setting_keys[][2] = {
    { "scenario", "scenario" }, { "started", "started" }, { "stock", "initial stock" },
    { "requests", "requests per strategy" }, { "duration_s", "duration per strategy (s)" },
    { "connections", "concurrent connections" }, { "instances", "instances" },
    { "target", "load sent to" }, { "driver", "load generator" }, { "product", "product" },
    { "limits_seconds", "seconds per ceiling (ll-limits)" },
    { "limits_connections", "connections of the concurrent ceilings" },
    { "warmup_s", "warm-up before each run, not counted (s)" },
    { "redis_servers", "Redis servers (redlock's quorum: N/2 + 1)" },
    { "zk_servers", "ZooKeeper servers (1: standalone)" },
    { "etcd_servers", "etcd members (1: alone)" },
    { "storm_orders", "orders of each retry storm, each sent twice" },
    { "storm_stock", "initial stock of each retry storm" },
    { "products", "products the load was spread over (1001 onwards)" },
    { "stock_per_product", "initial stock of each product" },
};

const size_t nmachine_keys = sizeof machine_keys / sizeof machine_keys[0];
const size_t nsetting_keys = sizeof setting_keys / sizeof setting_keys[0];

void write_md(FILE *f, const json_t *res)
{
    const json_t *runs = json_object_get(res, "runs"), *run, *settings, *machine;
    size_t i;

    settings = json_object_get(res, "settings");
    machine = json_object_get(res, "machine");
    fprintf(f, "# locklab comparison — %s\n\n", jstr(settings, "scenario", "?"));
    fprintf(f, "Started %s. Initial stock %s; sold = the sales the instances counted; oversold = max(0, sold − stock); "
            "lost = sold − (stock − final); unknown = answers whose sale was sent and lost on "
            "the way back, each of which may have sold, so with u of them oversold and lost "
            "are shown as ranges up to their values for sold + u; "
            "efficiency = steady sold/s ÷ the ceiling of the "
            "strategy's protocol (ll-limits, same servers, no HTTP).\n\n",
            jstr(settings, "started", "?"), jstr(settings, "stock", "?"));
    fprintf(f, "| strategy | req/s | sold/s | steady/s | sold | final | oversold | lost | unknown "
            "| p50 ms | p99 ms | failed | ceiling/s | efficiency | seeds req/s* |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    json_array_foreach(runs, i, run) {
        struct row r;
        row_fill(&r, run);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                r.name, r.rps, r.sold_s, r.steady, r.sold, r.final, r.oversold, r.lost,
                r.unknown, r.p50, r.p99, r.errs, r.ceiling, r.eff, r.seed);
    }
    fputc('\n', f);
    print_seeds(f, res, FMT_MD);                         /* report_table.c */
    if (!strcmp(jstr(settings, "driver", ""), "wrk"))
        fprintf(f, "%s\n\n", wrk_note);
    fprintf(f, "%s\n\n", serial_note);
    print_bounds(f, res, FMT_MD);                        /* report_ceiling.c */
    print_concurrent(f, runs, FMT_MD);
    print_topology(f, res, FMT_MD);
    print_mixed(f, runs, FMT_MD);
    print_faults(f, runs, FMT_MD);
    print_front(f, res, FMT_MD);
    print_reconcile(f, runs, FMT_MD);
    print_storms(f, res, FMT_MD);
    print_grain(f, res, FMT_MD);
    print_cost(f, runs, FMT_MD);
    print_time(f, runs, FMT_MD);
    print_ceilings(f, res, FMT_MD);                      /* report_ceiling.c */
    fprintf(f, "## Machine\n\n");
    for (i = 0; i < sizeof machine_keys / sizeof machine_keys[0]; i++)
        fprintf(f, "- %s: %s\n", machine_keys[i][1], jstr(machine, machine_keys[i][0], "?"));
    fprintf(f, "\n## Settings\n\n");
    for (i = 0; i < sizeof setting_keys / sizeof setting_keys[0]; i++)
        if (json_object_get(settings, setting_keys[i][0]))
            fprintf(f, "- %s: %s\n", setting_keys[i][1], jstr(settings, setting_keys[i][0], ""));
}
