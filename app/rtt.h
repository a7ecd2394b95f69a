/* rtt.h — the round trip to each backend, as this instance measures it on
 * the connections it sells with (app/rtt.c says how): GET /stats shows it
 * under "rtt", GET /metrics as locklab_backend_rtt_seconds.
 */
#ifndef LOCKLAB_RTT_H
#define LOCKLAB_RTT_H

#include <jansson.h>

struct config;
struct metrics;

/* The probe: a background task of the instance's loop, once a second. */
void    rtt_start(const struct config *cfg);
/* Ends it (on the loop, before the slots are freed), waiting for a round
 * it is in the middle of. */
void    rtt_stop(void);

/* Forget every backend's samples (POST /stats/reset): the window then
 * holds only what came after, e.g. after the round trip was changed. */
void    rtt_reset(void);

/* {"interval_ms":1000,"window":10,"backends":[{"backend":"mysql","where":…,
 *   "last_ms":…,"min_ms":…,"median_ms":…,"samples":N,"failures":N,"error":…}, …]} */
json_t *rtt_json(void);
/* locklab_backend_rtt_seconds and _min_seconds{backend,where}, gauges. */
void    rtt_metrics(struct metrics *m);

#endif /* LOCKLAB_RTT_H */
