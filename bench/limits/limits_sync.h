/* limits_sync.h — ll-limits' ceilings of the synchronizers (limits_sync.c). */
#ifndef LOCKLAB_LIMITS_SYNC_H
#define LOCKLAB_LIMITS_SYNC_H

#include <jansson.h>

struct config;

/* Measure, into ceilings, every synchronizer ceiling that `only` asks for
 * (a --only list; "sync" is all of them; NULL none), each the best of
 * `trials` runs of seconds/trials after a warm-up run, on the servers cfg
 * names (limits.c's configuration of the product, slot 0 its own). */
void limits_sync(json_t *ceilings, const char *only, double seconds, int trials,
                 const struct config *cfg);

#endif /* LOCKLAB_LIMITS_SYNC_H */
