/* wait.c — tasks and the waits built on them (see wait.h).
 *
 * A coroutine's task is resumed by whoever turns its `parked` flag from 1
 * to 0, and only by them: a wake (through the loop's job list), its park
 * timer, or the socket event it waits on. Whichever comes second finds the
 * flag 0 and leaves a permit instead, so a task is never resumed twice for
 * one park. A wake from another thread is posted to the task's loop first.
 *
 * A posted wake never outlives its task. The post is a job embedded in the
 * task, so while one is on its way (`posted`, set by the waking thread
 * before it posts) the task is not freed: a coroutine that ends meanwhile
 * — its park timer resumed it in the same turn, before the loop ran the
 * post — leaves its task `ended`, and the post, when it runs, frees it
 * instead of waking it. The waker only ever touches a live task (wait.h:
 * t must exist when task_wake() is called), and the loop thread alone
 * reads `ended` and frees, so nothing freed is touched and no later task
 * made in the same memory is woken by an old post. The cost: a task's
 * memory lives until its last post has run, at most a turn longer.
 *
 * A thread's task is a mutex, a condition variable and the permit.
 */
#include "wait.h"
#include "coro.h"
#include "loop.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <poll.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct task {
    struct coro    *co;         /* NULL: a plain thread */
    struct loop    *loop;
    void          (*fn)(void *);
    void           *arg;

    /* A coroutine's. */
    int             parked;     /* in task_park(), to be resumed     */
    int             timed_out;  /* its park timer resumed it         */
    struct event    timer;      /* the park's deadline               */
    struct loop_job run;        /* resume it from the loop's jobs    */
    struct loop_job post;       /* a wake from another thread        */
    atomic_int      posted;     /* `post` is on its way              */
    int             ended;      /* its coroutine returned while a post
                                 * was on its way: the post frees it  */

    /* Both kinds. */
    int             permit;

    /* A thread's. */
    pthread_mutex_t mu;
    pthread_cond_t  cv;
};

static __thread struct task *thread_task;
static pthread_key_t thread_key;       /* frees a thread's task at its exit */
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;

static void thread_task_free(void *arg)
{
    struct task *t = arg;

    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void thread_key_make(void)
{
    pthread_key_create(&thread_key, thread_task_free);
}

/* ---------------------------------------------------------------- running */

/* Resume t's coroutine, time the slice, and free t when it has ended,
 * unless a wake posted from another thread is still on its way to it:
 * then that post frees it (on_post()). */
static void task_resume(struct task *t)
{
    int64_t t0 = now_us();

    if (!coro_resume(t->co)) {
        event_del(&t->timer);
        if (atomic_load(&t->posted))
            t->ended = 1;
        else
            free(t);
    }
    loop_timed(t0);
}

static void on_run(struct loop_job *job)
{
    task_resume((struct task *)((char *)job - offsetof(struct task, run)));
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct task *t = arg;

    (void)fd, (void)what;
    if (!t->parked)
        return;
    t->parked = 0;
    t->timed_out = 1;
    task_resume(t);
}

static void coro_main(void *arg)
{
    struct task *t = arg;

    t->fn(t->arg);
}

static struct task *task_new(void (*fn)(void *), void *arg)
{
    struct task *t = xcalloc(1, sizeof *t);

    t->loop = loop_self();
    t->fn = fn;
    t->arg = arg;
    t->co = coro_new(coro_main, t);
    coro_set_data(t->co, t);
    t->run.fn = on_run;
    evtimer_assign(&t->timer, loop_base(), on_timer, t);
    return t;
}

struct task *task_spawn(void (*fn)(void *), void *arg)
{
    struct task *t = task_new(fn, arg);

    loop_soon(&t->run);
    return t;
}

void task_start(void (*fn)(void *), void *arg)
{
    struct task *t = task_new(fn, arg);

    if (coro_self() != NULL)
        loop_soon(&t->run);     /* a coroutine cannot resume another */
    else
        task_resume(t);
}

struct background {
    void (*fn)(void *);
    void  *arg;
};

static void *background_thread(void *arg)
{
    struct background b = *(struct background *)arg;

    free(arg);
    b.fn(b.arg);
    return NULL;
}

void task_background(const char *name, void (*fn)(void *), void *arg)
{
    struct background *b;
    pthread_attr_t attr;
    pthread_t th;
    int rc;

    if (loop_self() != NULL) {
        task_spawn(fn, arg);
        return;
    }
    b = xmalloc(sizeof *b);
    b->fn = fn;
    b->arg = arg;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, background_thread, b);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        fprintf(stderr, "locklab: cannot start the %s thread: %s\n", name, strerror(rc));
        abort();
    }
    pthread_setname_np(th, name);
}

/* ---------------------------------------------------------------- self */

struct task *task_self(void)
{
    struct coro *co = coro_self();
    struct task *t;

    if (co != NULL)
        return coro_data(co);
    if ((t = thread_task) == NULL) {
        pthread_condattr_t attr;

        t = xcalloc(1, sizeof *t);
        pthread_mutex_init(&t->mu, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&t->cv, &attr);
        pthread_condattr_destroy(&attr);
        thread_task = t;        /* kept for the thread's life */
        pthread_once(&thread_once, thread_key_make);
        pthread_setspecific(thread_key, t);
    }
    return t;
}

int task_on_loop(void)
{
    return coro_self() != NULL;
}

/* ---------------------------------------------------------------- park, wake */

static struct timespec abs_ts(int64_t us)
{
    return (struct timespec){ us / 1000000, (us % 1000000) * 1000 };
}

static int thread_park(struct task *t, int64_t deadline_us)
{
    struct timespec ts = abs_ts(deadline_us);
    int got;

    pthread_mutex_lock(&t->mu);
    while (!t->permit) {
        if (deadline_us == WAIT_FOREVER)
            pthread_cond_wait(&t->cv, &t->mu);
        else if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT)
            break;
    }
    got = t->permit;
    t->permit = 0;
    pthread_mutex_unlock(&t->mu);
    return got;
}

int task_park(int64_t deadline_us)
{
    struct task *t = task_self();

    if (t->co == NULL) {
        if (loop_running())
            loop_blocked("a park");
        return thread_park(t, deadline_us);
    }
    if (t->permit) {
        t->permit = 0;
        return 1;
    }
    if (deadline_us != WAIT_FOREVER) {
        int64_t left = deadline_us - now_us();
        struct timeval tv;

        if (left <= 0)
            return 0;
        tv.tv_sec = left / 1000000;
        tv.tv_usec = left % 1000000;
        evtimer_add(&t->timer, &tv);
    }
    t->parked = 1;
    t->timed_out = 0;
    coro_yield();
    if (t->timed_out)
        return 0;
    t->permit = 0;              /* the wake that resumed us */
    return 1;
}

/* On t's own loop thread. A wake from a task or a callback queues t for
 * the next turn; `now` resumes it at once, for a caller that runs among
 * the turn's jobs outside any coroutine (as a timer resumes it). */
static void wake_here(struct task *t, int now)
{
    if (!t->parked) {
        t->permit = 1;
        return;
    }
    t->parked = 0;
    event_del(&t->timer);
    if (now)
        task_resume(t);
    else
        loop_soon(&t->run);
}

/* A wake from another thread: the task resumes now, not a turn later
 * behind everything queued since; or, if it ended while the wake was on
 * its way, it is freed now. */
static void on_post(struct loop_job *job)
{
    struct task *t = (struct task *)((char *)job - offsetof(struct task, post));

    if (t->ended) {
        free(t);
        return;
    }
    atomic_store(&t->posted, 0);
    wake_here(t, 1);
}

void task_wake(struct task *t)
{
    if (t->co == NULL) {
        pthread_mutex_lock(&t->mu);
        t->permit = 1;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        return;
    }
    if (loop_self() == t->loop) {
        wake_here(t, 0);
        return;
    }
    /* From another thread: one post at a time carries the wake. */
    if (atomic_exchange(&t->posted, 1) == 0) {
        t->post.fn = on_post;
        loop_post(t->loop, &t->post);
    }
}

/* ---------------------------------------------------------------- conditions */

struct wait_waiter {
    struct task        *task;
    struct wait_waiter *prev, *next;
    int                 signalled;
};

void wait_cond_init(struct wait_cond *c)
{
    pthread_mutex_init(&c->mu, NULL);
    c->head = c->tail = NULL;
}

static void unlink_waiter(struct wait_cond *c, struct wait_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        c->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        c->tail = w->prev;
    w->prev = w->next = NULL;
}

int wait_cond_wait(struct wait_cond *c, pthread_mutex_t *mu, int64_t deadline_us)
{
    struct wait_waiter w = { task_self(), NULL, NULL, 0 };
    int got;

    pthread_mutex_lock(&c->mu);
    w.prev = c->tail;
    if (c->tail)
        c->tail->next = &w;
    else
        c->head = &w;
    c->tail = &w;
    pthread_mutex_unlock(&c->mu);
    if (mu)
        pthread_mutex_unlock(mu);

    for (;;) {
        int woken = task_park(deadline_us);

        pthread_mutex_lock(&c->mu);
        got = w.signalled;
        if (!got && !woken)
            unlink_waiter(c, &w);       /* the deadline: leave the list */
        pthread_mutex_unlock(&c->mu);
        if (got || !woken)
            break;
        /* A permit left by an earlier wake: not ours, park again. */
    }
    if (mu)
        pthread_mutex_lock(mu);
    return got;
}

int wait_cond_signal(struct wait_cond *c)
{
    struct wait_waiter *w;
    struct task *t = NULL;

    pthread_mutex_lock(&c->mu);
    if ((w = c->head) != NULL) {
        unlink_waiter(c, w);
        w->signalled = 1;
        t = w->task;
    }
    /* The wake happens under the list's mutex: once it is released, the
     * waiter may return and its frame (w) be gone, but not its task. */
    if (t)
        task_wake(t);
    pthread_mutex_unlock(&c->mu);
    return t != NULL;
}

int wait_cond_broadcast(struct wait_cond *c)
{
    int n = 0;

    while (wait_cond_signal(c))
        n++;
    return n;
}

int wait_cond_waiters(struct wait_cond *c)
{
    struct wait_waiter *w;
    int n = 0;

    pthread_mutex_lock(&c->mu);
    for (w = c->head; w; w = w->next)
        n++;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---------------------------------------------------------------- mutexes */

int wait_mutex_lock(struct wait_mutex *m, int64_t deadline_us)
{
    pthread_mutex_lock(&m->mu);
    while (m->held)
        if (!wait_cond_wait(&m->free, &m->mu, deadline_us) && m->held) {
            pthread_mutex_unlock(&m->mu);
            return 0;
        }
    m->held = 1;
    pthread_mutex_unlock(&m->mu);
    return 1;
}

void wait_mutex_unlock(struct wait_mutex *m)
{
    pthread_mutex_lock(&m->mu);
    m->held = 0;
    pthread_mutex_unlock(&m->mu);
    wait_cond_signal(&m->free);
}

/* ---------------------------------------------------------------- sockets, time */

struct fd_wait {
    struct task *task;
    int          fired;
    short        what;
};

static void on_fd(evutil_socket_t fd, short what, void *arg)
{
    struct fd_wait *fw = arg;
    struct task *t = fw->task;

    (void)fd;
    fw->fired = 1;
    fw->what = what;
    if (!t->parked) {           /* already on its way back: it will see */
        t->permit = 1;
        return;
    }
    t->parked = 0;
    event_del(&t->timer);
    task_resume(t);
}

static int thread_fd(int fd, int events, int64_t deadline_us)
{
    struct pollfd p = { fd, (short)((events & WAIT_READ ? POLLIN : 0) |
                                    (events & WAIT_WRITE ? POLLOUT : 0)), 0 };
    int n;

    for (;;) {
        int ms = -1;

        if (deadline_us != WAIT_FOREVER) {
            int64_t left = deadline_us - now_us();
            if (left <= 0)
                return 0;
            ms = (int)((left + 999) / 1000);
        }
        n = poll(&p, 1, ms);
        if (n > 0)
            break;
        if (n < 0 && errno != EINTR)
            return events;      /* let the caller's read or write say why */
    }
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
        return events;
    return (p.revents & POLLIN ? WAIT_READ : 0) | (p.revents & POLLOUT ? WAIT_WRITE : 0);
}

int wait_fd(int fd, int events, int64_t deadline_us)
{
    struct task *t = task_self();
    struct fd_wait fw = { t, 0, 0 };
    struct event ev;
    struct timeval tv, *tvp = NULL;

    if (t->co == NULL) {
        if (loop_running())
            loop_blocked("a socket wait");
        return thread_fd(fd, events, deadline_us);
    }
    if (deadline_us != WAIT_FOREVER) {
        int64_t left = deadline_us - now_us();
        if (left <= 0)
            return 0;
        tv.tv_sec = left / 1000000;
        tv.tv_usec = left % 1000000;
        tvp = &tv;
    }
    event_assign(&ev, loop_base(), fd,
                 (short)((events & WAIT_READ ? EV_READ : 0) | (events & WAIT_WRITE ? EV_WRITE : 0)),
                 on_fd, &fw);
    event_add(&ev, tvp);
    while (!fw.fired)
        task_park(WAIT_FOREVER);
    event_del(&ev);
    if (fw.what & EV_TIMEOUT)
        return 0;
    return (fw.what & EV_READ ? WAIT_READ : 0) | (fw.what & EV_WRITE ? WAIT_WRITE : 0);
}

void wait_until(int64_t deadline_us)
{
    struct task *t = task_self();

    if (t->co == NULL) {
        struct timespec ts = abs_ts(deadline_us);

        if (loop_running())
            loop_blocked("a sleep");
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        return;
    }
    while (now_us() < deadline_us)
        task_park(deadline_us);
}

void sleep_us(int64_t us)
{
    if (us > 0)
        wait_until(now_us() + us);
}
