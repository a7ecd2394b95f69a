/* curator_common.c — what the Curator synchronizers share: their paths
 * and their resets.
 *
 * Version followed: Apache Curator 5.4.0, Debian bookworm's
 * libcurator-recipes-java, which tests/CuratorSync.java is built against.
 *
 * Paths. Every synchronizer of ?name=N lives under /locklab/sync/<primitive>/N
 * (the shared count at /locklab/sync/shared-count/N and so on): give the
 * same path to the Java recipe's constructor to join it.
 *
 * Curator's LockInternals — the InterProcessMutex, the read-write lock's
 * drivers, protected sequential nodes — are not here: they are the ZooKeeper
 * lock strategies' own queue (locks/zk_queue.c: zk_curator_lock(),
 * zk_create_sequential()), written once for both.
 */
#include "sync_private.h"

#include <stdio.h>

void curator_path(char *buf, int len, const char *dir, const char *name)
{
    snprintf(buf, (size_t)len, "%s/%s/%s", CURATOR_ROOT, dir, name);
}

int curator_reset(struct lock_ctx *ctx, const char *dir, const char *name)
{
    char path[ZK_PATH_MAX];

    curator_path(path, sizeof path, dir, name);
    return zk_reset_tree(ctx, path, 1);
}
