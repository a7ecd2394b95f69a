/* registry.c — every synchronizer, found by primitive and backend.
 *
 * The table is built from sync/sync.def, the list the build reads too:
 * adding a primitive is its file under sync/ plus one SYNC line there. As
 * with the lock strategies (locks/registry.c), a table that names one
 * (primitive, backend) twice, or one operation twice, is refused by
 * sync_table_check(), which main() runs before anything starts.
 */
#include "sync.h"

#include <stdio.h>
#include <string.h>

#define SYNC(file, symbol) extern const struct sync_ops symbol;
#define SYNC_SHARED(file)
#include "sync.def"
#undef SYNC

static const struct sync_ops *const registry[] = {
#define SYNC(file, symbol) &symbol,
#include "sync.def"
#undef SYNC
};
#undef SYNC_SHARED

#define NSYNC (int)(sizeof registry / sizeof registry[0])

const struct sync_ops *const *sync_all(int *count)
{
    *count = NSYNC;
    return registry;
}

const struct sync_ops *sync_find(const char *primitive, const char *backend)
{
    int i;

    for (i = 0; i < NSYNC; i++)
        if (strcmp(registry[i]->primitive, primitive) == 0 &&
            (backend == NULL || strcmp(registry[i]->backend, backend) == 0))
            return registry[i];
    return NULL;
}

const struct sync_op *sync_op_find(const struct sync_ops *ops, const char *op)
{
    const struct sync_op *o;

    for (o = ops->ops; o->name; o++)
        if (strcmp(o->name, op) == 0)
            return o;
    return NULL;
}

const struct sync_op *sync_bench_op(const struct sync_ops *ops)
{
    char name[32];
    size_t n;

    if (ops->bench == NULL)
        return NULL;
    n = strcspn(ops->bench, "?");
    if (n >= sizeof name)
        return NULL;
    memcpy(name, ops->bench, n);
    name[n] = '\0';
    return sync_op_find(ops, name);
}

int sync_op_takes(const struct sync_op *op, const char *param)
{
    size_t n = strlen(param);
    const char *p = op->params;

    while (p && *p) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, param, n) == 0)
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int sync_table_check(const struct sync_ops *const *table, int n, char *err, int len)
{
    const struct sync_ops *t;
    const struct sync_op *o, *q;
    int i, k;

    for (i = 0; i < n; i++) {
        t = table[i];
        if (!t->primitive || !t->backend || !t->library || !t->summary || !t->ceiling ||
            !t->where || !t->invariant || !t->bench_check || !t->ops || !t->ops[0].name) {
            snprintf(err, (size_t)len, "synchronizer %d of the registry (%s) lacks a field "
                     "or has no operation", i, t->primitive ? t->primitive : "unnamed");
            return -1;
        }
        if (t->bench && sync_bench_op(t) == NULL) {
            snprintf(err, (size_t)len, "synchronizer %s/%s: its bench %s names none of its "
                     "operations", t->primitive, t->backend, t->bench);
            return -1;
        }
        for (k = 0; k < i; k++)
            if (strcmp(table[k]->primitive, t->primitive) == 0 &&
                strcmp(table[k]->backend, t->backend) == 0) {
                snprintf(err, (size_t)len, "two synchronizers are %s/%s (entries %d and %d)",
                         t->primitive, t->backend, k, i);
                return -1;
            }
        for (o = t->ops; o->name; o++) {
            if (o->run == NULL || o->summary == NULL) {
                snprintf(err, (size_t)len, "%s/%s: operation %s has no run or summary",
                         t->primitive, t->backend, o->name);
                return -1;
            }
            for (q = t->ops; q != o; q++)
                if (strcmp(q->name, o->name) == 0) {
                    snprintf(err, (size_t)len, "%s/%s: two operations are named %s",
                             t->primitive, t->backend, o->name);
                    return -1;
                }
        }
    }
    return 0;
}

int sync_check_registry(char *err, int len)
{
    return sync_table_check(registry, NSYNC, err, len);
}

int sync_name_valid(const char *s)
{
    size_t i, n = strlen(s);

    if (n == 0 || n > SYNC_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == ':'))
            return 0;
    }
    return 1;
}
