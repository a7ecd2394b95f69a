/* loop.h — the instance's one event loop (libevent 2.1 underneath).
 *
 * One thread runs the loop; everything an instance does happens on it:
 * libmicrohttpd's connections, the coroutines that serve requests, the
 * backend clients' sockets and timers, the periodic tasks. Nothing on it
 * may block: a wait is a registration and a yield (wait.h), never a
 * sleeping thread (Redis's ae.c, nginx's event modules).
 *
 * A turn of the loop: the events that are ready (file descriptors, timers,
 * posts from other threads), then the jobs they made runnable (woken
 * coroutines, in the order they were woken), then the turn-end hooks (a
 * client writes out what its coroutines queued this turn: pipelining),
 * then the loop sleeps in epoll_wait() unless a job is still waiting. Any
 * piece of a turn (loop_timed()) longer than LOCKLAB_LOOP_WARN_MS (default
 * 100 ms) is counted and logged, at most once a second: something blocked
 * the loop.
 *
 * Other threads (ZooKeeper's completion thread) hand work to the loop with
 * loop_post(): a job on a locked list and a write to an eventfd.
 */
#ifndef LOCKLAB_LOOP_H
#define LOCKLAB_LOOP_H

#include <stdint.h>

struct event_base;
struct loop;

/* A job to run on the loop: embedded in whoever needs one, never
 * allocated by the loop. One job is on at most one list at a time. */
struct loop_job {
    void (*fn)(struct loop_job *job);
    struct loop_job *next;
};

/* Make this thread's loop: 0, or -1 (libevent could not start). */
int loop_init(void);
void loop_free(void);

/* This thread's loop, and its libevent base; NULL when it has none (a
 * tool's plain thread). */
struct loop       *loop_self(void);
struct event_base *loop_base(void);

/* Run turns until loop_stop(); loop_once() runs one (it sleeps until
 * something is ready when nothing is runnable). */
void loop_run(void);
void loop_once(void);
/* End loop_run() after the current turn. Any thread. */
void loop_stop(void);

/* Run job on this thread's loop in the current turn, after the events
 * (loop thread only). */
void loop_soon(struct loop_job *job);
/* Run job on loop l soon. Any thread. */
void loop_post(struct loop *l, struct loop_job *job);

/* fn(arg) at the end of every turn, before the loop sleeps (loop thread,
 * at start-up). */
void loop_at_turn_end(void (*fn)(void *arg), void *arg);

/* A piece of a turn that began at t0 (now_us()) is over: the jobs and
 * hooks of a turn, a coroutine resumed from an event, libmicrohttpd's
 * run. One longer than the warning is counted and logged (at most once a
 * second). */
void loop_timed(int64_t t0);

/* Turns so far, pieces longer than the warning, the longest in µs. */
struct loop_stats {
    uint64_t turns;
    uint64_t slow_turns;
    int64_t  longest_us;
};
void loop_stats(struct loop_stats *out);

#endif /* LOCKLAB_LOOP_H */
