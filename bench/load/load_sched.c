/* load_sched.c — the open loop's schedule declared in load_sched.h.
 *
 * Evenly spaced: request j of a step is due at j × 1e9 / r ns into it,
 * computed from j each time (no sum of rounded gaps drifts). Poisson: the
 * offset within the step grows by −ln(u) × 1e9 / r for u uniform in
 * (0, 1], from splitmix64 (a 64-bit state, one multiply-xorshift round a
 * draw: plenty for spacing requests, and the same sequence for the same
 * seed). The first request of a step is due at its beginning either way.
 */
#include "load_sched.h"

#include <math.h>

#define SCHED_NS_PER_S 1e9

void sched_init(struct sched *s, double rate, double step_rate, int steps, int64_t step_ns,
                uint64_t limit, enum sched_arrivals arrivals, uint64_t seed)
{
    *s = (struct sched){ .rate = rate, .step_rate = step_rate, .steps = steps < 1 ? 1 : steps,
                         .step_ns = step_ns > 0 ? step_ns : INT64_MAX, .limit = limit,
                         .arrivals = arrivals, .rng = seed };
}

double sched_rate(const struct sched *s, int step)
{
    return s->rate + (double)step * s->step_rate;
}

static uint64_t sched_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A gap of the Poisson process at rate r, in ns. */
static double sched_gap_ns(struct sched *s, double r)
{
    double u = (double)((sched_splitmix(&s->rng) >> 11) + 1) * 0x1.0p-53;     /* (0, 1] */
    return -log(u) * SCHED_NS_PER_S / r;
}

/* The next request's offset within the current step. */
static double sched_offset(struct sched *s, double r)
{
    if (s->arrivals == SCHED_UNIFORM)
        return (double)s->in_step * SCHED_NS_PER_S / r;
    if (s->in_step > 0)
        s->poisson_ns += sched_gap_ns(s, r);
    return s->poisson_ns;
}

bool sched_next(struct sched *s, int64_t *at_ns, int *step)
{
    if (s->limit && s->issued >= s->limit)
        return false;
    while (s->step < s->steps) {
        double r = sched_rate(s, s->step), off = r > 0 ? sched_offset(s, r) : INFINITY;
        if (off < (double)s->step_ns) {
            *at_ns = (int64_t)off + (s->step_ns == INT64_MAX ? 0 : (int64_t)s->step * s->step_ns);
            *step = s->step;
            s->in_step++;
            s->issued++;
            return true;
        }
        s->step++;                      /* this step is over: the next one   */
        s->in_step = 0;
        s->poisson_ns = 0;
    }
    return false;
}

int64_t sched_end_ns(const struct sched *s)
{
    double end = s->step_ns == INT64_MAX ? INFINITY : (double)s->steps * (double)s->step_ns;
    if (s->limit && s->steps == 1 && s->rate > 0) {
        double by_limit = (double)s->limit * SCHED_NS_PER_S / s->rate;
        if (by_limit < end)
            end = by_limit;
    }
    return end < 9e18 ? (int64_t)end : INT64_MAX;
}
