/* zk_sequential.c — a queue of EPHEMERAL_SEQUENTIAL znodes, each waiter
 * watching only its predecessor; reentrant per slot (seed 000 §4.4.2, §4.5;
 * seed 003).
 *
 * Nodes: /locklab/seq/<product>/x-<session>-<slot>.<attempt>-NNNNNNNNNN
 * (the parent is persistent). A request creates its node, lists the
 * children and, unless it is first, sets an exists() watch on the node just
 * before its own and sleeps on its own condition variable until that
 * node's event: one release wakes one waiter, not the whole queue (the
 * "羊群效应" of §4.4.2). If the predecessor is already gone when the watch
 * is set, exists() says so and we re-list at once — seed 003's waiter
 * slept forever on a node that could not come back. Re-entry by the same
 * slot within one request only counts (the seeds' ThreadLocal, §4.5);
 * the node is deleted when the count reaches zero. Naming and recovery
 * after a connection loss follow ZooKeeper's own C recipe (zoo_lock.c):
 * see zk_queue.c.
 *
 * What it still gets wrong: it speaks only to itself (a Curator client on
 * the same product would not see its nodes as a queue: see `curator`);
 * and an exists() on a predecessor that is already gone leaves a watch for
 * that node's creation behind in the client until the session ends — a
 * small leak Curator avoids by watching with getData(). A holder whose
 * session expires between the `check` hook and the UPDATE still writes,
 * unless the request asked for ?fence=1: then the write carries the node's
 * czxid (zk_check, locks/zk_hold.c) and the row refuses it once a later
 * holder has written (tests/faults.sh).
 */
#include "zk_private.h"

static const struct zk_queue seq_queue = {
    .root = "/locklab/seq", .wait = ZK_WATCH_EXISTS, .curator = 0, .reentrant = 1,
};

const struct lock_ops lock_zk_sequential = {
    .name     = "zk-sequential",
    .family   = "zookeeper",
    .summary  = "EPHEMERAL_SEQUENTIAL queue, each waiter watches only its predecessor, reentrant per slot (seed 000 §4.4.2, §4.5, seed 003)",
    .flaw     = "not Curator-compatible; exists() on a vanished predecessor leaks a watch until the session ends",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_FAIR | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_ZK_EXPIRE,
    .ceiling  = LOCK_CEIL_SERIAL_ZK,
    .hold_rtts = 5, /* event out, list, exists, SELECT, UPDATE, delete in */
    ZK_QUEUE_METHODS(&seq_queue),
};
