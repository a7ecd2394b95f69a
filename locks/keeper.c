/* keeper.c — the lease keeper (keeper.h): a table of the slots' leases and
 * one task that renews them when they fall due.
 *
 * Why one worker rather than one per holder (the seeds' Timer per lock):
 * it serves every slot at the cost of one renewal per lease per period,
 * with nothing made per acquisition. It starts at the first keeper_init()
 * as a task_background(): a coroutine on the loop of the caller that first
 * needs it, or a thread of its own where there is none (a tool), and its
 * renewals wait through the wait layer, so the same code parks or blocks.
 * It sleeps on a wait_cond until the earliest renewal is due; a new hold
 * wakes it only when its first renewal is due before that, so the keeper
 * wakes about once a period, not at every sale. The table's mutex is held
 * for a few instructions at a time, never across a renewal: the keeper
 * copies what it renews, lets go, renews, and takes the answer only if the
 * entry still holds the same lease (its generation).
 */
#include "keeper.h"
#include "../core/util.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the task */

/* The first entry due for renewal now, or -1 with *first the earliest due
 * later (MAX: none). An entry that lingered long enough lapses here. Under
 * k->mu. */
static int keeper_due(struct keeper *k, int64_t now, int64_t *first)
{
    int i;

    *first = INT64_MAX;
    for (i = 0; i < k->n; i++) {
        struct keep_entry *e = &k->e[i];

        if (!e->live || e->lost)
            continue;
        if (now > e->stop_ms) {
            e->live = 0;
            continue;
        }
        if (e->next_ms <= now)
            return i;
        if (e->next_ms < *first)
            *first = e->next_ms;
    }
    return -1;
}

static void keeper_main(void *arg)
{
    struct keeper *k = arg;
    unsigned char *what = xmalloc(k->size);
    int due, retry_ms;
    unsigned gen;
    int64_t now, first, sent, until;
    enum keep_answer a;

    pthread_mutex_lock(&k->mu);
    for (;;) {
        now = now_ms();
        if ((due = keeper_due(k, now, &first)) < 0) {
            k->asleep_until = first;
            wait_cond_wait(&k->cv, &k->mu, first == INT64_MAX ? WAIT_FOREVER : first * 1000);
            continue;
        }
        k->asleep_until = now;          /* awake: holders need not signal */
        gen = k->e[due].gen;
        memcpy(what, k->what + (size_t)due * k->size, k->size);
        k->e[due].next_ms = now + k->e[due].period_ms;
        pthread_mutex_unlock(&k->mu);

        sent = now_us();
        until = 0;
        retry_ms = 0;
        a = k->renew(what, sent, &until, &retry_ms);

        pthread_mutex_lock(&k->mu);
        if (k->e[due].live && k->e[due].gen == gen) {
            if (a == KEEP_CONFIRMED)
                k->e[due].until_us = until;
            else if (a == KEEP_GONE)
                k->e[due].lost = 1;
            else
                k->e[due].next_ms = now_ms() + retry_ms;
        }
    }
}

void keeper_init(struct keeper *k, const struct config *cfg)
{
    if (atomic_load(&k->ready))
        return;
    pthread_mutex_lock(&k->init_mu);
    if (!atomic_load(&k->ready)) {
        k->n = cfg->threads;
        k->e = xcalloc((size_t)k->n, sizeof *k->e);
        k->what = xcalloc((size_t)k->n, k->size);
        if (k->start)
            k->start(cfg);
        atomic_store(&k->ready, 1);
        task_background(k->name, keeper_main, k);
    }
    pthread_mutex_unlock(&k->init_mu);
}

/* ---------------------------------------------------------------- the slots */

void keeper_hold(struct keeper *k, int slot, const void *what, int64_t until_us,
                 int period_ms)
{
    struct keep_entry *e = &k->e[slot];

    pthread_mutex_lock(&k->mu);
    memcpy(k->what + (size_t)slot * k->size, what, k->size);
    e->live = 1;
    e->lost = 0;
    e->gen++;
    e->period_ms = period_ms;
    e->until_us = until_us;
    e->next_ms = now_ms() + period_ms;
    e->stop_ms = INT64_MAX;
    /* Wake the keeper only if it would sleep past this renewal: it does
     * once a period, not at every sale (a context switch). */
    if (e->next_ms < k->asleep_until) {
        k->asleep_until = e->next_ms;
        wait_cond_signal(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
}

void keeper_release(struct keeper *k, int slot)
{
    pthread_mutex_lock(&k->mu);
    k->e[slot].live = 0;
    pthread_mutex_unlock(&k->mu);
}

void keeper_linger(struct keeper *k, int slot, int ms)
{
    pthread_mutex_lock(&k->mu);
    if (k->e[slot].live)
        k->e[slot].stop_ms = now_ms() + ms;
    pthread_mutex_unlock(&k->mu);
}

int keeper_resume(struct keeper *k, int slot, int64_t min_left_us)
{
    struct keep_entry *e = &k->e[slot];
    int ok;

    pthread_mutex_lock(&k->mu);
    ok = e->live && !e->lost && e->until_us - now_us() > min_left_us;
    if (ok)
        e->stop_ms = INT64_MAX;
    pthread_mutex_unlock(&k->mu);
    return ok;
}

enum keep_state keeper_state(struct keeper *k, int slot, int64_t *until_us)
{
    struct keep_entry *e = &k->e[slot];
    enum keep_state s;

    pthread_mutex_lock(&k->mu);
    s = !e->live ? KEEP_NONE : e->lost ? KEEP_LOST : KEEP_HELD;
    *until_us = e->until_us;
    pthread_mutex_unlock(&k->mu);
    return s;
}
