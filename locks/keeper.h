/* keeper.h — the lease keeper: one worker that keeps every slot's lease of
 * one kind alive, the way Redisson's lock watchdog and etcd's Go client
 * keep theirs (locks/keeper.c).
 *
 * A holder's lease is short, so that a holder that dies loses it soon,
 * and renewed for as long as it is held, so that a slow holder does not.
 * A family that leases (redis_watchdog.c for the hash and string locks,
 * etcd_session.c for the sessions) defines one struct keeper with its
 * `renew` hook, and its slots hold, release or let linger what the keeper
 * renews. The keeper keeps a table indexed by slot (a slot holds at most
 * one lease of a kind at a time), sleeps until the earliest renewal is due
 * and renews one lease at a time without its mutex held, so a holder never
 * waits for a renewal in flight.
 *
 * Lease honesty: a renewal that goes unanswered is not a renewal. Each
 * entry keeps the end of the last lease its backend confirmed, from the
 * hold and then from every renewal the hook says was confirmed, and the
 * holder's check hands it to the write (ctx->lease_until_us), which
 * refuses once it may have passed (app/sale.c). A renewal that finds the
 * lease gone marks the entry lost: it is never renewed again, and the
 * check answers LL_LOST.
 */
#ifndef LOCKLAB_KEEPER_H
#define LOCKLAB_KEEPER_H

#include "../core/config.h"
#include "../core/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What a renewal found. */
enum keep_answer {
    KEEP_CONFIRMED,             /* renewed: the lease runs to *until_us      */
    KEEP_GONE,                  /* expired, taken or revoked: never again    */
    KEEP_RETRY,                 /* no answer: try again *retry_ms later      */
};

/* What a slot's entry is. */
enum keep_state {
    KEEP_NONE,                  /* nothing kept (released, lapsed, never)    */
    KEEP_HELD,                  /* kept; its lease confirmed to until_us     */
    KEEP_LOST,                  /* a renewal found it gone                   */
};

struct keeper;

/* Renew the lease `what` names: the bytes keeper_hold() stored, copied
 * when the renewal fell due. Called on the keeper's task alone, without its
 * mutex; sent_us is when the renewal is sent, from which a confirmed lease
 * runs (less lock_drift_us()). */
typedef enum keep_answer keeper_renew_fn(const void *what, int64_t sent_us,
                                         int64_t *until_us, int *retry_ms);

/* One slot's entry; the keeper's own. */
struct keep_entry {
    int      live;              /* being kept                                */
    int      lost;              /* a renewal found the lease gone            */
    unsigned gen;               /* bumped at every hold: a renewal of an
                                 * older lease is dropped                    */
    int      period_ms;         /* between renewals                          */
    int64_t  until_us;          /* the last confirmed lease ends             */
    int64_t  next_ms;           /* the next renewal is due (monotonic)       */
    int64_t  stop_ms;           /* kept until then (lingering), else MAX     */
};

struct keeper {
    const char      *name;      /* its task's                                */
    size_t           size;      /* of what an entry renews                   */
    keeper_renew_fn *renew;
    /* Optional: what the hook needs before the first renewal (its own
     * connection), made once, before the keeper's task starts. */
    void           (*start)(const struct config *cfg);
    /* The rest is keeper.c's. */
    pthread_mutex_t  init_mu;
    atomic_int       ready;
    pthread_mutex_t  mu;        /* the entries, asleep_until                 */
    struct wait_cond cv;        /* the keeper sleeps on it                   */
    int              n;
    struct keep_entry *e;
    unsigned char   *what;      /* n × size                                  */
    int64_t          asleep_until;  /* ms: the keeper sleeps until; MAX: none */
};

#define KEEPER_INIT(name, size, renew, start) \
    { (name), (size), (renew), (start), PTHREAD_MUTEX_INITIALIZER, 0, \
      PTHREAD_MUTEX_INITIALIZER, WAIT_COND_INIT, 0, NULL, NULL, INT64_MAX }

/* Make k's table (cfg->threads slots) and start its task, once: every
 * call but the first returns at once. Every function below needs it done. */
void keeper_init(struct keeper *k, const struct config *cfg);

/* Keep slot's lease `what` (k->size bytes) alive from now, its last
 * confirmed end until_us (the acquire's or grant's), a renewal every
 * period_ms, until keeper_release(). */
void keeper_hold(struct keeper *k, int slot, const void *what, int64_t until_us,
                 int period_ms);

/* Stop keeping slot's lease (a renewal in flight is dropped). */
void keeper_release(struct keeper *k, int slot);

/* Keep slot's lease for ms more, then let it lapse. */
void keeper_linger(struct keeper *k, int slot, int ms);

/* Keep slot's lease again until keeper_release(), if it is kept, not lost
 * and confirmed for min_left_us more: 1, else 0 (the caller holds anew). */
int  keeper_resume(struct keeper *k, int slot, int64_t min_left_us);

/* Slot's entry; with KEEP_HELD, the end of its last confirmed lease. */
enum keep_state keeper_state(struct keeper *k, int slot, int64_t *until_us);

#endif /* LOCKLAB_KEEPER_H */
