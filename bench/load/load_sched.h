/* load_sched.h — when each request of an open-loop run is meant to leave.
 *
 * An open loop (ll-load --rate R) sends on a schedule fixed before the run,
 * whatever the answers do: request t is due at its intended time, and its
 * latency runs from then, so a server that stalls is charged for every
 * request that should have left meanwhile (coordinated omission is what a
 * closed loop commits instead). This is that schedule, apart from the
 * sockets, so that tests/test_load.c can check it.
 *
 * The run is one or more steps of `step_ns` each (the whole -d duration,
 * or unbounded when only -n bounds it); step k offers rate + k × step_rate
 * requests a second. Arrivals are evenly spaced within a step (request j
 * of a step of rate r is due j / r after the step began), or a Poisson
 * process (gaps drawn from an exponential law of mean 1 / r, from a
 * seeded generator: a run repeats exactly), restarted at each step's
 * beginning. A step of rate r over D seconds therefore holds exactly the
 * whole numbers j < r × D when evenly spaced. `limit` (-n) bounds the
 * requests of the whole run. Offsets are nanoseconds from the run's start.
 *
 *     struct sched s;
 *     sched_init(&s, 1000.0, 0.0, 1, 10 * NS, 0, SCHED_UNIFORM, 1);
 *     while (sched_next(&s, &at, &step)) … request due at start + at …
 */
#ifndef LOCKLAB_LOAD_SCHED_H
#define LOCKLAB_LOAD_SCHED_H

#include <stdbool.h>
#include <stdint.h>

enum sched_arrivals { SCHED_UNIFORM, SCHED_POISSON };

struct sched {
    /* settings */
    double   rate, step_rate;           /* requests a second: step k's is
                                         * rate + k × step_rate              */
    int      steps;                     /* 1 without --rate-step             */
    int64_t  step_ns;                   /* each step's length; INT64_MAX: none */
    uint64_t limit;                     /* requests in all; 0: no limit      */
    enum sched_arrivals arrivals;
    /* where it is */
    uint64_t issued;                    /* requests handed out               */
    int      step;                      /* the step of the next request      */
    uint64_t in_step;                   /* its index within that step        */
    double   poisson_ns;                /* Poisson: its offset within the step */
    uint64_t rng;                       /* splitmix64 state                  */
};

void sched_init(struct sched *s, double rate, double step_rate, int steps, int64_t step_ns,
                uint64_t limit, enum sched_arrivals arrivals, uint64_t seed);

/* The next request's offset from the run's start and its step: true, or
 * false once the schedule is over (every step run, or `limit` reached). */
bool sched_next(struct sched *s, int64_t *at_ns, int *step);

/* Step k's rate, and the offset by which the schedule is expected to end
 * (the progress line's time left): its steps' length, or sooner the
 * limit's requests at the rate. */
double  sched_rate(const struct sched *s, int step);
int64_t sched_end_ns(const struct sched *s);

#endif /* LOCKLAB_LOAD_SCHED_H */
