/* hybrid.h — what the composite locks show outside locks/: the fallback's
 * counters, in GET /stats (app/http.c). */
#ifndef LOCKLAB_HYBRID_H
#define LOCKLAB_HYBRID_H

#include <jansson.h>

/* {"held_on":{"redisson":N,"curator":N,"mysql-lock-table":N},
 *  "switched":N,"overlapped":N}: this instance's fallback acquisitions by
 * the layer that granted them, those that went past a layer that was down,
 * and those that began while this instance held the same product on
 * another layer (two holders at once). */
json_t *fallback_stats_json(void);
void    fallback_stats_reset(void);

#endif /* LOCKLAB_HYBRID_H */
