/* registry.c — every strategy, found by name.
 *
 * The table is built from locks/locks.def, the list the build reads too:
 * adding a strategy is its file under locks/ plus one LOCK line there,
 * and nothing here changes. The order of the .def is the order of
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
#include "locks.def"
#undef LOCK

static const struct lock_ops *const registry[] = {
#define LOCK(file, symbol) &symbol,
#include "locks.def"
#undef LOCK
};
#undef LOCK_SHARED

#define NLOCKS (int)(sizeof registry / sizeof registry[0])

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

void lock_ctx_free(struct lock_ctx *ctx)
{
    int i;

    for (i = 0; i < NLOCKS; i++)
        if (registry[i]->ctx_free)
            registry[i]->ctx_free(ctx);
}
