/* zk_curator.c — Apache Curator's InterProcessMutex, spoken from C
 * (seed 000 §4.6.1), so that a Java service using Curator and locklab
 * exclude each other on the same product.
 *
 * Lock path: /locklab/locks/<product> — give the same path to
 * `new InterProcessMutex(client, "/locklab/locks/1001")`. The protocol,
 * as Curator's LockInternals / StandardLockInternalsDriver /
 * CreateBuilderImpl run it:
 *   - acquire creates an EPHEMERAL_SEQUENTIAL node in protected mode,
 *     named _c_<uuid>-lock-<10-digit sequence>, with a fresh random uuid
 *     per attempt; missing parents are created as CONTAINER nodes
 *     (creatingParentContainersIfNeeded), which the server reaps when empty;
 *   - the children are sorted by the text after the last "lock-" (all of
 *     them, whoever created them); the first holds the lock;
 *   - a waiter sets a getData() watch on the node just before its own and
 *     sleeps until it fires; if getData says NONODE the predecessor is
 *     already gone and we re-list at once (no watch is left behind);
 *   - after a connection loss during the create, our node is looked up by
 *     its _c_<uuid> prefix instead of being orphaned, and created again only
 *     if it is not there;
 *   - reentrant per thread: the same slot re-entering within a request only
 *     counts; the node is deleted when the count reaches zero;
 *   - giving up (deadline, lost session) deletes our node.
 * Our node's data is our holder token; Curator writes the client's IP
 * address there by default and never reads it.
 *
 * What it still gets wrong — what Curator itself documents: a lock is held
 * only as long as the session; a holder paused past the session timeout
 * (GC, partition) loses it without knowing until it next talks to
 * ZooKeeper. The `check` hook narrows that window before the UPDATE but
 * cannot close it. With ?fence=1 the write carries our node's czxid as its
 * fencing token (zk_check, locks/zk_hold.c), and the row refuses a token
 * older than one it has seen, so a late write of a paused holder is
 * refused once a later holder has written (tests/faults.sh); without it,
 * nothing stops that write.
 *
 * The queue itself — naming, sorting, the watch, finding our node after a
 * connection loss — is Curator's LockInternals in locks/zk_queue.c, which
 * the Curator synchronizers of sync/ take their mutex from too.
 */
#include "zk_private.h"

static const struct zk_queue curator_queue = {
    .root = "/locklab/locks", .wait = ZK_WATCH_DATA, .curator = 1, .reentrant = 1,
};

const struct lock_ops lock_curator = {
    .name     = "curator",
    .family   = "zookeeper",
    .summary  = "Curator InterProcessMutex's protocol on /locklab/locks/<product>: protected _c_<uuid>-lock- nodes, getData watch on the predecessor, reentrant",
    .flaw     = "held only as long as the session: a holder paused past the session timeout loses it unknowingly",
    .props    = LOCK_DISTRIBUTED | LOCK_REENTRANT | LOCK_AUTO_RELEASE | LOCK_FAIR | LOCK_EXACT | LOCK_FENCED,
    .fails    = FAULT_PAUSE | FAULT_PAUSE_LATE | FAULT_CPU | FAULT_ZK_EXPIRE,
    .ceiling  = LOCK_CEIL_SERIAL_ZK,
    .hold_rtts = 5, /* event out, list, exists, SELECT, UPDATE, delete in */
    ZK_QUEUE_METHODS(&curator_queue),
};
