/* wait.h — every wait of locklab, in one small layer.
 *
 * Code that has to wait — for a socket to be readable, a lock to be free,
 * a watch to fire, a retry interval to pass — calls one of these and reads
 * on as if it had blocked. Who waits is a task: a coroutine on a loop
 * (coro.h, loop.h), which parks and lets the loop serve everyone else, or
 * a plain thread (a tool such as ll-limits, a library's own thread), which
 * blocks as before. The same code runs in both; only this file knows the
 * difference.
 *
 * The primitives:
 *   task_park / task_wake   sleep until woken or a deadline; the wake is a
 *                           permit (Java's LockSupport): one that comes
 *                           before the park is not lost
 *   wait_cond               a condition variable with a deadline, FIFO
 *   wait_mutex              a mutex with a deadline, for what a holder
 *                           keeps across waits (the mutex strategies)
 *   wait_fd                 a socket ready to read or write
 *   wait_until              sleep to a deadline
 *
 * Deadlines are monotonic microseconds (now_us()); WAIT_FOREVER has none.
 * The conditions may be shared with other threads (a completion thread
 * signals one): their lists are guarded by a mutex of their own.
 */
#ifndef LOCKLAB_WAIT_H
#define LOCKLAB_WAIT_H

#include <pthread.h>
#include <stdint.h>

#define WAIT_FOREVER INT64_MAX

struct task;

/* ---------------------------------------------------------------- tasks */

/* Run fn(arg) in a new coroutine on this thread's loop (loop thread only).
 * It starts in the current turn's jobs; it ends when fn returns. */
struct task *task_spawn(void (*fn)(void *arg), void *arg);

/* The same, but run at once, until its first wait or its end, when the
 * caller is the loop's main context (an event's callback); from a
 * coroutine it starts in the turn's jobs like task_spawn(). The task may
 * be gone when this returns: the caller learns its outcome from fn. */
void task_start(void (*fn)(void *arg), void *arg);

/* Run fn(arg) for as long as it runs, in the background: a coroutine on
 * the caller's loop when it has one (task_spawn), else a detached thread
 * named `name` (a tool, or a server not yet on its loop). fn waits only
 * through this layer, so it is the same code either way: the periodic
 * work that used to own a thread (a watchdog, a consumer) is one. */
void task_background(const char *name, void (*fn)(void *arg), void *arg);

/* The caller's task: its coroutine's, or its thread's. */
struct task *task_self(void);

/* Is the caller a coroutine on a loop (rather than a plain thread)? */
int task_on_loop(void);

/* Sleep until task_wake() or the deadline: 1 woken, 0 the deadline came.
 * A return is a hint: callers check what they wait for and park again. */
int task_park(int64_t deadline_us);

/* Wake t, or give it a permit if it is not parked. Any thread; t must
 * still exist (it is parked on something of the waker's, or about to). */
void task_wake(struct task *t);

/* ---------------------------------------------------------------- conditions */

struct wait_waiter;

struct wait_cond {
    pthread_mutex_t     mu;     /* guards the list only */
    struct wait_waiter *head, *tail;
};

#define WAIT_COND_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, NULL }

void wait_cond_init(struct wait_cond *c);

/* Wait for a signal on c until the deadline: 1 signalled, 0 the deadline.
 * `mu`, if not NULL, is held by the caller, released while waiting and
 * held again on return (pthread_cond_timedwait's contract). */
int  wait_cond_wait(struct wait_cond *c, pthread_mutex_t *mu, int64_t deadline_us);
/* Wake the longest waiter (returns 1), or nobody (0). */
int  wait_cond_signal(struct wait_cond *c);
/* Wake every waiter; returns how many. */
int  wait_cond_broadcast(struct wait_cond *c);
/* How many wait on c now. */
int  wait_cond_waiters(struct wait_cond *c);

/* ---------------------------------------------------------------- mutexes */

struct wait_mutex {
    pthread_mutex_t  mu;
    int              held;
    struct wait_cond free;
};

#define WAIT_MUTEX_INIT { PTHREAD_MUTEX_INITIALIZER, 0, WAIT_COND_INIT }

/* 1 taken, 0 not before the deadline. Not reentrant. */
int  wait_mutex_lock(struct wait_mutex *m, int64_t deadline_us);
void wait_mutex_unlock(struct wait_mutex *m);

/* ---------------------------------------------------------------- sockets, time */

#define WAIT_READ  1
#define WAIT_WRITE 2

/* Wait until fd is readable or writable as `events` asks: the events that
 * are ready (WAIT_READ | WAIT_WRITE), or 0 at the deadline. An error or a
 * hang-up on fd counts as ready: the next read or write tells which. */
int wait_fd(int fd, int events, int64_t deadline_us);

/* Sleep until the deadline; sleep_us() for us microseconds. */
void wait_until(int64_t deadline_us);
void sleep_us(int64_t us);

#endif /* LOCKLAB_WAIT_H */
