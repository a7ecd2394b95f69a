/* wake.c — ll-wake: what it costs one thread to wake another on this
 * machine, on one CPU and across two.
 *
 *     ll-wake [--seconds S]
 *
 * Every lock hand-off is a chain of such wake-ups (docs/comparison.md,
 * "What the ratios depend on"), and what one costs is a property of the
 * machine more than of any lock: on a VM whose idle vCPUs halt, waking a
 * thread on the other vCPU is a trip through the hypervisor, several times
 * a switch on a CPU that is already running. bench/compare prints this
 * beside the CPU idle driver, so that a report's efficiencies can be read
 * against the machine they were measured on.
 *
 * Two threads bounce a byte over two pipes for S/2 seconds with both pinned
 * to the first CPU this process may use, then S/2 seconds with the echoing
 * thread on the second (S defaults to 1). Half a round trip is one
 * wake-up: a write, the other thread woken, its read. One line comes out,
 * for instance
 *
 *     2.5 us on one CPU, 19.9 us across two (pipe ping-pong)
 *
 * and only the first half of it when the process may run on one CPU only.
 * Measure on an otherwise idle machine: the idle CPUs' sleep is the point.
 */
#define _GNU_SOURCE
#include "../common/cli.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct pingpong {
    int to_echo[2];                 /* main writes [1], echo reads [0] */
    int to_main[2];                 /* echo writes [1], main reads [0] */
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Answer every byte until main closes its end. */
static void *echo(void *arg)
{
    struct pingpong *pp = arg;
    char c;

    while (read(pp->to_echo[0], &c, 1) == 1)
        if (write(pp->to_main[1], &c, 1) != 1)
            break;
    return NULL;
}

/* Microseconds a wake-up, main on cpu_main and echo on cpu_echo. */
static double wake_us(int cpu_main, int cpu_echo, double seconds)
{
    struct pingpong pp;
    pthread_attr_t attr;
    pthread_t tid;
    cpu_set_t set;
    double t0, t;
    long n = 0;
    char c = 'x';

    if (pipe(pp.to_echo) != 0 || pipe(pp.to_main) != 0)
        die_errno("pipe");
    CPU_ZERO(&set);
    CPU_SET(cpu_main, &set);
    if ((errno = pthread_setaffinity_np(pthread_self(), sizeof set, &set)) != 0)
        die_errno("pinning the main thread");
    CPU_ZERO(&set);                 /* the echo starts where it belongs */
    CPU_SET(cpu_echo, &set);
    if ((errno = pthread_attr_init(&attr)) != 0 ||
        (errno = pthread_attr_setaffinity_np(&attr, sizeof set, &set)) != 0 ||
        (errno = pthread_create(&tid, &attr, echo, &pp)) != 0)
        die_errno("starting the echoing thread");
    pthread_attr_destroy(&attr);
    t0 = t = now();
    while (t - t0 < seconds) {
        if (write(pp.to_echo[1], &c, 1) != 1 || read(pp.to_main[0], &c, 1) != 1)
            die_errno("ping-pong");
        if (++n % 64 == 0)
            t = now();
    }
    t = now();
    close(pp.to_echo[1]);           /* echo reads end of file and returns */
    pthread_join(tid, NULL);
    close(pp.to_echo[0]);
    close(pp.to_main[0]);
    close(pp.to_main[1]);
    return (t - t0) / n / 2 * 1e6;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    int cpus[2], n = 0, i;
    cpu_set_t set;

    cli_init("ll-wake", 1);
    if (argc == 3 && strcmp(argv[1], "--seconds") == 0) {
        if (cli_real(argv[2], &seconds) != 0 || !(seconds > 0 && seconds <= 60)) {
            fprintf(stderr, "ll-wake: --seconds wants a number in (0, 60], not '%s'\n", argv[2]);
            return 2;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: ll-wake [--seconds S]\n");
        return 2;
    }
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        die_errno("sched_getaffinity");
    for (i = 0; i < CPU_SETSIZE && n < 2; i++)
        if (CPU_ISSET(i, &set))
            cpus[n++] = i;
    if (n == 0) {
        errno = ESRCH;
        die_errno("no CPU to run on");
    }
    printf("%.1f us on one CPU", wake_us(cpus[0], cpus[0], seconds / 2));
    if (n == 2)
        printf(", %.1f us across two", wake_us(cpus[0], cpus[1], seconds / 2));
    printf(" (pipe ping-pong)\n");
    return 0;
}
