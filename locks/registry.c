/* registry.c — every strategy, in the order the seeds teach them.
 *
 * Adding a strategy is a new file under locks/ plus one line here. The
 * order is the order of GET /locks, the README table and the comparison.
 */
#include "lock.h"

#include <string.h>

extern const struct lock_ops lock_none, lock_mutex;
extern const struct lock_ops lock_mysql_update, lock_mysql_batch, lock_mysql_for_update,
       lock_mysql_optimistic, lock_mysql_optimistic_recursive, lock_mysql_lock_table;
extern const struct lock_ops lock_redis_setnx, lock_redis_setnx_expire, lock_redis_getset,
       lock_redis_set_nx_ex, lock_redis_uuid, lock_redis_lua, lock_redis_reentrant,
       lock_redisson, lock_redisson_fair, lock_redlock;
extern const struct lock_ops lock_zk_ephemeral, lock_zk_sequential_poll,
       lock_zk_sequential, lock_curator;

static const struct lock_ops *const registry[] = {
    &lock_none,
    &lock_mutex,
    &lock_mysql_update,
    &lock_mysql_batch,
    &lock_mysql_for_update,
    &lock_mysql_optimistic,
    &lock_mysql_optimistic_recursive,
    &lock_mysql_lock_table,

    /* Redis (seed 000 §3, seeds 003, 004) */
    &lock_redis_setnx,
    &lock_redis_setnx_expire,
    &lock_redis_getset,
    &lock_redis_set_nx_ex,
    &lock_redis_uuid,
    &lock_redis_lua,
    &lock_redis_reentrant,
    &lock_redisson,
    &lock_redisson_fair,
    &lock_redlock,

    /* ZooKeeper (seed 000 §4) */
    &lock_zk_ephemeral,
    &lock_zk_sequential_poll,
    &lock_zk_sequential,
    &lock_curator,
};

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
