/* report_cost.c — where the time goes. bench/compare reads /proc and each
 * instance's /stats before and after a run and leaves the difference in
 * the run's NN.cost.json; derive_cost() turns that into CPU time and
 * context switches per request for results.json.
 */
#include "report_private.h"

#include <string.h>

/* ---------------------------------------------------------------- groups */

/* The array's length is the header's NCOST_GROUPS, or the two
 * declarations conflict. */
const char *const cost_groups[][2] = {
    { "app", "app" }, { "nginx", "nginx" }, { "mysql", "MariaDB" },
    { "redis", "Redis" }, { "zookeeper", "ZooKeeper" },
};

/* A run's cost per request from RAW/NN.cost.json: CPU microseconds per
 * answered request of each group, of the rest of the machine (the load
 * generator above all) and in all, the context switches per request of
 * each group, and how busy the machine was. NULL without a measurement. */
json_t *derive_cost(const json_t *cost, long long n)
{
    const json_t *groups = json_object_get(cost, "groups");
    const json_t *machine = json_object_get(cost, "machine");
    double busy = jnum(machine, "busy_s"), sum = 0, rest;
    json_t *us, *sw;
    size_t i;

    if (!json_is_object(groups) || n <= 0)
        return NULL;
    us = json_object();
    sw = json_object();
    for (i = 0; i < NCOST_GROUPS; i++) {
        const json_t *g = json_object_get(groups, cost_groups[i][0]);
        double cpu = jnum(g, "cpu_s");
        sum += cpu;
        json_object_set_new(us, cost_groups[i][0], json_real(harness_per_request_us(cpu, n)));
        json_object_set_new(sw, cost_groups[i][0],
                            json_real(harness_per_request((double)jint(g, "switches"), n)));
    }
    rest = busy - sum;                  /* ticks are 10 ms: never below 0 */
    json_object_set_new(us, "rest", json_real(harness_per_request_us(rest > 0 ? rest : 0, n)));
    json_object_set_new(us, "total", json_real(harness_per_request_us(busy, n)));
    return json_pack("{s:f,s:i,s:I,s:f,s:o,s:o}", "seconds", jnum(cost, "seconds"),
                     "cpus", (int)jint(cost, "cpus"), "requests", (json_int_t)n,
                     "busy", harness_busy_share(busy, jnum(machine, "idle_s")),
                     "cpu_us_per_request", us, "switches_per_request", sw);
}
