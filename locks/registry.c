/* registry.c — every strategy, found by name.
 *
 * The table is built from locks/locks.def, the list the build reads too:
 * adding a strategy is its file under locks/ plus one LOCK line there,
 * and nothing here changes; a family is one FAMILY line (struct
 * lock_family, lock.h). The order of the .def is the order of
 * GET /locks, the README table and the comparison.
 *
 * Two strategies of one name would make lock_find() answer for one of them
 * only. lock_table_check() refuses such a table (Redis's connTypeRegister()
 * refuses a second connection type of a name the same way), and main()
 * runs it over this table before anything starts.
 */
#include "lock.h"

#include <stdio.h>
#include <string.h>

#define LOCK(file, symbol) extern const struct lock_ops symbol;
#define LOCK_SHARED(file)
#define FAMILY(symbol) extern const struct lock_family symbol;
#include "locks.def"
#undef LOCK
#undef FAMILY
#define FAMILY(symbol)

static const struct lock_ops *const registry[] = {
#define LOCK(file, symbol) &symbol,
#include "locks.def"
#undef LOCK
};
#undef FAMILY

static const struct lock_family *const families[] = {
#define LOCK(file, symbol)
#define FAMILY(symbol) &symbol,
#include "locks.def"
#undef LOCK
#undef FAMILY
};
#undef LOCK_SHARED

#define NLOCKS (int)(sizeof registry / sizeof registry[0])
#define NFAMILIES (int)(sizeof families / sizeof families[0])

const struct lock_ops *lock_find(const char *name)
{
    int i;
    for (i = 0; i < NLOCKS; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

const struct lock_ops *const *lock_all(int *count)
{
    *count = NLOCKS;
    return registry;
}

int lock_index(const struct lock_ops *ops)
{
    int i;
    for (i = 0; i < NLOCKS; i++)
        if (registry[i] == ops)
            return i;
    return -1;
}

int lock_table_check(const struct lock_ops *const *table, int n, char *err, int len)
{
    const struct lock_ops *o;
    int i, k;

    for (i = 0; i < n; i++) {
        o = table[i];
        if (o->name == NULL || o->name[0] == '\0') {
            snprintf(err, (size_t)len, "strategy %d of the registry has no name", i);
            return -1;
        }
        if (o->family == NULL || o->summary == NULL || o->ceiling == NULL) {
            snprintf(err, (size_t)len, "strategy %s lacks its family, summary or ceiling",
                     o->name);
            return -1;
        }
        if (lock_family_find(o->family) == NULL) {
            snprintf(err, (size_t)len, "strategy %s names the family %s, which has no "
                     "FAMILY line in locks/locks.def", o->name, o->family);
            return -1;
        }
        if (o->fence_fails && o->fence == NULL) {
            snprintf(err, (size_t)len, "strategy %s lists faults it fails with ?fence=1, "
                     "but issues no token (fence_fails without fence)", o->name);
            return -1;
        }
        if (o->sell == NULL && (o->acquire == NULL || o->release == NULL)) {
            snprintf(err, (size_t)len, "strategy %s has neither sell nor acquire and release",
                     o->name);
            return -1;
        }
        for (k = 0; k < i; k++)
            if (strcmp(table[k]->name, o->name) == 0) {
                snprintf(err, (size_t)len, "two strategies are named %s (entries %d and %d "
                         "of the registry): rename one", o->name, k, i);
                return -1;
            }
    }
    return 0;
}

const struct lock_family *lock_family_find(const char *name)
{
    int i;
    for (i = 0; i < NFAMILIES; i++)
        if (strcmp(families[i]->name, name) == 0)
            return families[i];
    return NULL;
}

/* Each walk over the families calls one optional hook of each, in the
 * order of locks.def (stop in the reverse order of start). */
void lock_families_start(const struct config *cfg)
{
    int i;
    for (i = 0; i < NFAMILIES; i++)
        if (families[i]->start)
            families[i]->start(cfg);
}

void lock_families_stop(void)
{
    int i;
    for (i = NFAMILIES - 1; i >= 0; i--)
        if (families[i]->stop)
            families[i]->stop();
}

void lock_families_stats(struct json_t *body)
{
    int i;
    for (i = 0; i < NFAMILIES; i++)
        if (families[i]->stats_add)
            families[i]->stats_add(body);
}

void lock_families_stats_reset(void)
{
    int i;
    for (i = 0; i < NFAMILIES; i++)
        if (families[i]->stats_clear)
            families[i]->stats_clear();
}

void lock_ctx_free(struct lock_ctx *ctx)
{
    int i;
    for (i = 0; i < NFAMILIES; i++)
        if (families[i]->ctx_free)
            families[i]->ctx_free(ctx);
}
