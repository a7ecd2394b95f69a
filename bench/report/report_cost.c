/* report_cost.c — where the time goes. bench/compare reads /proc and each
 * instance's /stats before and after a run (cost_snapshot); `ll-report
 * cost` turns the two snapshots into the run's NN.cost.json, and
 * derive_cost() turns that into CPU time and context switches per request
 * for results.json. The snapshot's format is described below.
 */
#define _GNU_SOURCE            /* sched_getaffinity, CPU_COUNT, sysconf under -std=c11 */

#include "report_private.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---------------------------------------------------------------- snapshots */

/* bench/compare's cost_snapshot, taken before and after a run, is lines of
 *     GROUP TICKS               user + system CPU ticks of the group
 *     thread GROUP ID SWITCHES  context switches of one thread (an instance
 *                               counts all its threads under its URL)
 *     machine BUSY IDLE         /proc/stat's ticks of the whole machine
 *     time SECONDS              the wall clock, $EPOCHREALTIME
 * and NN.cost.json is the difference: the seconds between the two, the
 * machine's busy and idle seconds, and each group's CPU seconds and
 * context switches. A thread's switches are its counter's growth, or its
 * whole count when it was born during the run; one that ended during the
 * run is missed. */
struct snapshot {
    double machine_busy, machine_idle, time;
    double ticks[NCOST_GROUPS];
    int    seen[NCOST_GROUPS];                /* the group has a line */
    long long switches[NCOST_GROUPS];         /* after: growth over the run */
    struct thread_count { char id[256]; long long n; } *threads;
    size_t nthreads, cap;
};

static int cost_group(const char *name)
{
    size_t g;
    for (g = 0; g < NCOST_GROUPS; g++)
        if (strcmp(cost_groups[g][0], name) == 0)
            return (int)g;
    return -1;
}

static int thread_cmp(const void *a, const void *b)
{
    return strcmp(((const struct thread_count *)a)->id, ((const struct thread_count *)b)->id);
}

/* Read one snapshot. With `was` (the snapshot before), each thread line
 * adds its growth since then to its group instead of being kept. */
static void snapshot_read(const char *path, struct snapshot *s, const struct snapshot *was)
{
    char line[512], what[32], group[32], id[256];
    FILE *f = fopen(path, "r");
    double a, b;
    long long n;
    int g;

    if (f == NULL)
        die("%s: %s", path, strerror(errno));
    memset(s, 0, sizeof *s);
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "thread %31s %255s %lld", group, id, &n) == 3) {
            if ((g = cost_group(group)) < 0)
                die("%s: unknown group in: %s", path, line);
            if (was) {
                struct thread_count key, *before;
                snprintf(key.id, sizeof key.id, "%s", id);
                before = bsearch(&key, was->threads, was->nthreads, sizeof key, thread_cmp);
                if (n - (before ? before->n : 0) > 0)
                    s->switches[g] += n - (before ? before->n : 0);
                continue;
            }
            if (s->nthreads == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 256;
                s->threads = realloc(s->threads, s->cap * sizeof *s->threads);
                if (s->threads == NULL)
                    abort();                  /* out of memory */
            }
            snprintf(s->threads[s->nthreads].id, sizeof s->threads[0].id, "%s", id);
            s->threads[s->nthreads++].n = n;
        } else if (sscanf(line, "machine %lf %lf", &a, &b) == 2) {
            s->machine_busy = a;
            s->machine_idle = b;
        } else if (sscanf(line, "time %lf", &a) == 1) {
            s->time = a;
        } else if (sscanf(line, "%31s %lf", what, &a) == 2 && (g = cost_group(what)) >= 0) {
            s->ticks[g] = a;
            s->seen[g] = 1;
        } else if (line[strspn(line, " \t\r\n")] != '\0') {
            die("%s: not a snapshot line: %s", path, line);
        }
    }
    fclose(f);
    if (s->threads)
        qsort(s->threads, s->nthreads, sizeof *s->threads, thread_cmp);
}

/* The CPUs this process may run on, as nproc(1) counts them. */
static int cpus_online(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

int cmd_cost(const char *before_path, const char *after_path)
{
    static struct snapshot before, after;
    double hz = (double)sysconf(_SC_CLK_TCK);
    const char *sep = "";
    size_t g;

    snapshot_read(before_path, &before, NULL);
    snapshot_read(after_path, &after, &before);
    printf("{\"seconds\":%.3f,\"cpus\":%d,\"machine\":{\"busy_s\":%.2f,\"idle_s\":%.2f},"
           "\"groups\":{", after.time - before.time, cpus_online(),
           (after.machine_busy - before.machine_busy) / hz,
           (after.machine_idle - before.machine_idle) / hz);
    for (g = 0; g < NCOST_GROUPS; g++) {
        if (!after.seen[g])
            continue;
        printf("%s\"%s\":{\"cpu_s\":%.2f,\"switches\":%lld}", sep, cost_groups[g][0],
               (after.ticks[g] - before.ticks[g]) / hz, after.switches[g]);
        sep = ",";
    }
    printf("}}\n");
    free(before.threads);
    free(after.threads);
    return 0;
}
