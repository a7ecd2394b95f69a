/* zk_herd.c — one EPHEMERAL znode per product, every waiter watching it:
 * the herd effect (羊群效应) of seed 000 §4.4.2.
 *
 * Node: /locklab/herd/<product>, as zk-ephemeral's (zk_ephemeral.c, whose
 * methods these are). Acquire creates it; a waiter that meets NODEEXISTS
 * sets an exists() watch on that one node and sleeps until an event on it,
 * instead of spinning. When the holder deletes the node, ZooKeeper
 * notifies every session that watches it and each instance wakes every
 * waiter of its own (zk_wait_gone counts each a wake-up, GET /stats
 * `wakeups`): all of them create again, one wins, and the others set
 * their watch again and sleep. Each release so wakes every waiter, where
 * zk-sequential's waiters each watch their predecessor and one wakes
 * (wake-ups per release ≈ 1): with W waiters a release costs W wake-ups
 * and W − 1 failed creates, the traffic the seeds warn of ("zookeeper
 * 需要通知1000个客户端,这会阻塞其他的操作"). Still exact: the create
 * excludes. No order either: whoever's create lands first wins.
 */
#include "zk_private.h"

static const struct zk_ephemeral herd = { "/locklab/herd", 1 };

const struct lock_ops lock_zk_herd = {
    .name     = "zk-herd",
    .family   = "zookeeper",
    .summary  = "one EPHEMERAL znode per product, every waiter watching it with exists() "
                "(seed 000 §4.4.2, 羊群效应)",
    .flaw     = "each release wakes every waiter (the herd): wake-ups and failed creates per "
                "sale grow with the waiters; no order, not reentrant",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE,
    .ceiling  = LOCK_CEIL_SERIAL_ZK,
    ZK_EPHEMERAL_METHODS(&herd),
    .compare_skip = "every release wakes every waiter: at the seeds' 100 connections it sold "
                    "50/s and timed some purchases out, so their 5000 would take it ~100 s "
                    "(bench/lesson zk-herd shows the herd in seconds)",
};
