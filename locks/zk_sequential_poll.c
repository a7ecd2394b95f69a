/* zk_sequential_poll.c — a queue of EPHEMERAL_SEQUENTIAL znodes, polled
 * (seed 000 §4.4.1, "实现阻塞锁").
 *
 * Nodes: /locklab/seq-poll/<product>/x-<session>-<slot>.<attempt>-NNNNNNNNNN
 * (the parent is persistent). Every request creates its node once, then
 * lists the children every --retry-ms (jittered) until its node has the
 * smallest sequence number; release deletes it. The queue machinery —
 * naming, finding our node after a connection loss, leaving the queue on
 * every failure — is zk_queue.c.
 *
 * What it gets wrong, as the seeds found (19.2/s, slower than spinning):
 * nobody fights over a create any more, but every waiter still lists the
 * whole queue on every poll, so ZooKeeper reads per sale grow with the
 * queue length times the hold time. Not reentrant: ?reentry=2 is refused
 * with 400 (parameter "reentry"); allowed, it would queue a second node
 * behind our own first one and wait for itself until the deadline.
 */
#include "zk_private.h"

static const struct zk_queue poll_queue = {
    .root = "/locklab/seq-poll", .wait = ZK_POLL, .curator = 0, .reentrant = 0,
};

const struct lock_ops lock_zk_sequential_poll = {
    .name     = "zk-sequential-poll",
    .family   = "zookeeper",
    .summary  = "EPHEMERAL_SEQUENTIAL node per request; poll the children until ours is the smallest (seed 000 §4.4.1)",
    .flaw     = "every waiter re-lists the whole queue every --retry-ms: reads per sale grow with the queue; not reentrant",
    .props    = LOCK_DISTRIBUTED | LOCK_AUTO_RELEASE | LOCK_FAIR | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_ZK_EXPIRE,
    .ceiling  = LOCK_CEIL_SERIAL_ZK,
    ZK_QUEUE_METHODS(&poll_queue),
};
