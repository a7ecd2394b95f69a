/* sync.h — the synchronizers: what comes after a mutex (seed 000 §3.9.3–
 * 3.9.7, §4.6.2–4.6.7), each speaking its Java library's own protocol on the
 * library's own keys or znodes, so that a Java service using Redisson or
 * Curator on the same name cooperates with locklab.
 *
 * A primitive of one backend is a table, struct sync_ops, one per file
 * under sync/, listed once in sync/sync.def (read by sync/registry.c and by
 * CMake, as locks/locks.def is). A table names its operations (struct
 * sync_op): GET /sync/<primitive>/<operation>?name=&backend=… runs one,
 * the seeds' GET /test/read, /test/write, /test/semaphore, /test/latch and
 * /test/countdown run fixed ones. app/request.c checks a request against the
 * operation's parameter list and fills struct sync_args; app/http.c borrows
 * a worker slot and calls sync_run(), which calls the operation. The
 * operation writes what it was granted into the JSON answer (permit id,
 * lease, count before and after, the wall-clock times at which it asked,
 * was granted and gave back — released_at_ms is taken just before the
 * release is sent, so [granted_at_ms, released_at_ms] lies within the real
 * hold and overlaps of these intervals are overlaps of holds) and returns
 * an ll_status (lock.h): every wait
 * ends at ctx->deadline_ms, the request's wait_ms, with LL_TIMEOUT (503).
 *
 * Identity. Each request is its own holder, as each Java thread is: a
 * Redisson lock field is "<instance uuid>:<n>" with n unique in the process
 * (sync_thread_id()), so a lock the seeds' demo leaves behind with a lease
 * is never re-entered by a later request that happens to get the same
 * worker slot, and a Curator recipe creates fresh protected nodes per
 * request. Holds do not outlive their request, except where the library's
 * own object does: a Redisson lock left with its lease (the seeds' demo),
 * a permit of RPermitExpirableSemaphore (released by its id), a member of a
 * double barrier (an ephemeral node named by ?member=, left by /leave).
 */
#ifndef LOCKLAB_SYNC_H
#define LOCKLAB_SYNC_H

#include "../locks/lock.h"

#include <jansson.h>
#include <stdint.h>

#define SYNC_NAME_MAX   64   /* a name: [A-Za-z0-9_.:-], not "." or ".."  */
#define SYNC_MAX_NAMES  8    /* ?names=a,b,c of a multilock               */

/* The seeds' fixed demonstrations (seed 000 §3.9.5–3.9.7). */
enum sync_demo {
    SYNC_DEMO_NONE, SYNC_DEMO_READ, SYNC_DEMO_WRITE, SYNC_DEMO_SEMAPHORE,
    SYNC_DEMO_LATCH, SYNC_DEMO_COUNTDOWN
};

struct sync_ops;
struct sync_op;

/* One operation's arguments, checked by app/request.c. An absent number is
 * -1 (the operation's default, or 400 where it needs one), an absent delta
 * or value LLONG_MIN, an absent hold_ms or lease_ms -1. */
struct sync_args {
    const struct sync_ops *ops;
    const struct sync_op  *op;
    enum sync_demo demo;
    const char *name;                       /* ?name=                       */
    char        names[SYNC_MAX_NAMES][SYNC_NAME_MAX + 1];
    int         nnames;                     /* ?names=a,b,c                 */
    int         wait_ms;                    /* bound of every wait          */
    int         hold_ms;                    /* work done while holding      */
    int         lease_ms;                   /* -1: the operation's default  */
    int         unlock;                     /* give back before answering   */
    long long   permits, qty, count, members, delta, version, value;
    const char *member, *permit;            /* ?member=, ?permit=           */
};

struct sync_op {
    const char *name;       /* "read", "acquire", "await" …                   */
    const char *params;     /* the parameters it takes besides name and
                             * backend, space-separated: "wait_ms hold_ms"  */
    const char *summary;    /* one line for GET /sync                         */
    int (*run)(struct lock_ctx *ctx, const struct sync_args *a, json_t *out);
};

struct sync_ops {
    const char *primitive;  /* the route's word: "rwlock", "semaphore" …      */
    const char *backend;    /* "redisson" or "curator"                        */
    const char *library;    /* the Java class it speaks for                   */
    const char *where;      /* the keys or znodes of ?name=, for other clients */
    const char *summary;    /* what it does (seed section)                    */
    const char *flaw;       /* what it still gets wrong, or NULL              */
    unsigned    props;      /* LOCK_* bits of lock.h                          */
    const char *invariant;  /* what bench/compare --scenario sync checks      */
    const char *ceiling;    /* the ll-limits key it is measured against       */
    /* What bench/compare --scenario sync loads, and ll-limits runs serially
     * for the ceiling: "<operation>?<query>" on /sync/<primitive>/ (name and
     * backend added), or NULL when a stream of callers makes no sense for
     * it (a double barrier never empties under one). */
    const char *bench;
    /* How ll-report checks the invariant from the answers (the intervals
     * [granted_at_ms, released_at_ms] and the values they name):
     * "holders<=N", "rw" (no reader or writer beside a writer),
     * "distinct:<field>" (no value answered twice), or "" (none). */
    const char *bench_check;
    const struct sync_op *ops;          /* ends with { NULL }                 */
    /* Clear everything of `name` (POST /sync/reset): keys or znodes. */
    int (*reset)(struct lock_ctx *ctx, const char *name);
};

/* ---------------------------------------------------------------- registry */

/* sync/registry.c: the tables of sync/sync.def, in its order. */
const struct sync_ops *const *sync_all(int *count);
/* The table of (primitive, backend); backend NULL: the first of that
 * primitive in the registry (Redisson's before Curator's). */
const struct sync_ops *sync_find(const char *primitive, const char *backend);
const struct sync_op  *sync_op_find(const struct sync_ops *ops, const char *op);
/* The operation ops->bench names, or NULL (none, or not one of its own). */
const struct sync_op *sync_bench_op(const struct sync_ops *ops);
/* Does operation op take parameter `param`? */
int sync_op_takes(const struct sync_op *op, const char *param);
/* Is table[0..n) valid: primitive, backend, library, summary, ceiling and at
 * least one operation each, no (primitive, backend) twice, no operation
 * twice within a table? 0, or -1 with the reason. main() refuses -1. */
int sync_table_check(const struct sync_ops *const *table, int n, char *err, int len);
/* sync_table_check() of the registry itself. */
int sync_check_registry(char *err, int len);
/* Is s a valid ?name= (SYNC_NAME_MAX bytes of [A-Za-z0-9_.:-], not "." or
 * "..", which ZooKeeper refuses as path components)? */
int sync_name_valid(const char *s);

/* ---------------------------------------------------------------- running */

/* The seeds' demonstration's table, operation and fixed arguments into a
 * (whose wait_ms, hold_ms, lease_ms and unlock the caller has set). */
void sync_demo_args(enum sync_demo demo, struct sync_args *a);

/* Run a->op on ctx, whose deadline is set. Fills out with the common fields
 * (primitive, backend, library, name, operation, asked_at_ms …) and the
 * operation's own; returns its ll_status. */
int sync_run(struct lock_ctx *ctx, const struct sync_args *a, json_t *out);

/* A holder id unique in this process: the "thread id" of a request. */
unsigned long long sync_thread_id(void);

/* Wall-clock milliseconds (CLOCK_REALTIME): the times in answers, which
 * tests compare across instances, as the seeds print currentTimeMillis(). */
int64_t sync_wall_ms(void);

#endif /* LOCKLAB_SYNC_H */
