/* test_core.c — the ground floor's loop, coroutines and waits, on their own.
 *
 * Each case runs coroutines on a loop of this thread until they are all
 * done, and checks what they saw: the order of wake-ups, that a mutex held
 * across waits excludes, that a deadline ends a wait and a signal beats it,
 * that a socket wakes its reader, that a thread's wake reaches a coroutine,
 * that a thread's wake still on its way when its task ends touches nothing
 * (under ASan a use after free would abort), that a frame reaching past a
 * coroutine's stack faults in its guard even with memory mapped below the
 * guard (a death test, in a child), and that the same calls block a plain
 * thread as they park a coroutine.
 * Timing margins: deadlines are tens of milliseconds apart and only their
 * order is checked, never how long anything took.
 */
#include "check.h"
#include "../core/coro.h"
#include "../core/loop.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int done;                /* coroutines of the case that finished */

/* Run the loop until `want` coroutines have finished. */
static void run_until(int want)
{
    while (done < want)
        loop_once();
}

/* ---------------------------------------------------------------- coroutines */

static int trace[16], ntrace;

static void pingpong(void *arg)
{
    int id = *(int *)arg;

    trace[ntrace++] = id;
    coro_yield();
    trace[ntrace++] = id + 10;
}

static void test_coro(void)
{
    int a = 1, b = 2;
    struct coro *x = coro_new(pingpong, &a), *y = coro_new(pingpong, &b);

    CHECK(coro_count() == 2);
    CHECK(coro_resume(x) == 1 && coro_resume(y) == 1);
    CHECK(coro_resume(y) == 0 && coro_resume(x) == 0);
    CHECK(ntrace == 4 && trace[0] == 1 && trace[1] == 2 && trace[2] == 12 && trace[3] == 11);
    CHECK(coro_count() == 0);
    CHECK(coro_self() == NULL);
}

/* Deep enough to need most of a page per frame, in every coroutine. */
static int deep(int n)
{
    volatile char pad[512];

    pad[0] = (char)n;
    return n == 0 ? pad[0] : deep(n - 1) + 1;
}

static void deep_one(void *arg)
{
    *(int *)arg = deep(64);
    done++;
}

static void test_many(void)
{
    static int out[500];
    int i, ok = 1;

    done = 0;
    for (i = 0; i < 500; i++)
        task_spawn(deep_one, &out[i]);
    run_until(500);
    for (i = 0; i < 500; i++)
        ok &= out[i] == 64;
    CHECK(ok);
    CHECK(coro_count() == 0);
}

/* ---------------------------------------------------------------- sleeps */

static int woke[8], nwoke;

struct sleeper { int id; int ms; };

static void sleeper(void *arg)
{
    struct sleeper *s = arg;

    wait_until(now_us() + s->ms * 1000);
    woke[nwoke++] = s->id;
    done++;
}

static void test_sleep(void)
{
    static struct sleeper s[3] = { { 0, 60 }, { 1, 20 }, { 2, 40 } };
    int i;

    done = nwoke = 0;
    for (i = 0; i < 3; i++)
        task_spawn(sleeper, &s[i]);
    run_until(3);
    CHECK(nwoke == 3 && woke[0] == 1 && woke[1] == 2 && woke[2] == 0);
}

/* ---------------------------------------------------------------- mutex, cond */

static struct wait_mutex mu = WAIT_MUTEX_INIT;
static int inside, overlap, total;

static void worker(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < 20; i++) {
        CHECK(wait_mutex_lock(&mu, WAIT_FOREVER));
        if (inside++)
            overlap++;
        wait_until(now_us() + 100);     /* hold it across a wait */
        total++;
        inside--;
        wait_mutex_unlock(&mu);
    }
    done++;
}

static void test_mutex(void)
{
    int i;

    done = 0;
    for (i = 0; i < 10; i++)
        task_spawn(worker, NULL);
    run_until(10);
    CHECK(overlap == 0 && total == 200);
}

static struct wait_cond cv = WAIT_COND_INIT;
static int got_signal[2];

static void timed_waiter(void *arg)
{
    int i = *(int *)arg;

    /* 0 waits 30 ms and is never signalled; 1 waits 10 s and is. */
    got_signal[i] = wait_cond_wait(&cv, NULL, now_us() + (i == 0 ? 30000 : 10000000));
    done++;
}

static void signaller(void *arg)
{
    (void)arg;
    wait_until(now_us() + 80000);       /* after 0's deadline */
    CHECK(wait_cond_signal(&cv) == 1);  /* only 1 is left */
    CHECK(wait_cond_signal(&cv) == 0);
    done++;
}

static void test_cond(void)
{
    static int ids[2] = { 0, 1 };

    done = 0;
    task_spawn(timed_waiter, &ids[0]);
    task_spawn(timed_waiter, &ids[1]);
    task_spawn(signaller, NULL);
    run_until(3);
    CHECK(got_signal[0] == 0 && got_signal[1] == 1);
    CHECK(wait_cond_waiters(&cv) == 0);
}

/* ---------------------------------------------------------------- sockets */

static int sp[2];
static char got[8];
static int timed_out_read;

static void reader(void *arg)
{
    (void)arg;
    /* Nothing comes within 20 ms: a time-out. */
    timed_out_read = wait_fd(sp[0], WAIT_READ, now_us() + 20000) == 0;
    CHECK(wait_fd(sp[0], WAIT_READ, WAIT_FOREVER) == WAIT_READ);
    CHECK(read(sp[0], got, sizeof got) == 4);
    done++;
}

static void writer(void *arg)
{
    (void)arg;
    wait_until(now_us() + 60000);
    CHECK(wait_fd(sp[1], WAIT_WRITE, WAIT_FOREVER) == WAIT_WRITE);
    CHECK(write(sp[1], "ping", 4) == 4);
    done++;
}

static void test_fd(void)
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
    done = 0;
    task_spawn(reader, NULL);
    task_spawn(writer, NULL);
    run_until(2);
    CHECK(timed_out_read && memcmp(got, "ping", 4) == 0);
    close(sp[0]);
    close(sp[1]);
}

/* ---------------------------------------------------------------- threads */

static struct wait_cond tcv = WAIT_COND_INIT;
static pthread_mutex_t tmu = PTHREAD_MUTEX_INITIALIZER;
static int flag, coro_saw;

static void *poster(void *arg)
{
    (void)arg;
    sleep_us(30000);
    pthread_mutex_lock(&tmu);
    flag = 1;
    pthread_mutex_unlock(&tmu);
    wait_cond_broadcast(&tcv);
    return NULL;
}

static void flag_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tmu);
    while (!flag)
        if (!wait_cond_wait(&tcv, &tmu, now_us() + 10000000))
            break;
    coro_saw = flag;
    pthread_mutex_unlock(&tmu);
    done++;
}

/* A coroutine woken from another thread (a completion thread's post). */
static void test_cross_thread(void)
{
    pthread_t th;

    done = 0;
    task_spawn(flag_waiter, NULL);
    loop_once();                /* let it park first */
    CHECK(pthread_create(&th, NULL, poster, NULL) == 0);
    run_until(1);
    pthread_join(th, NULL);
    CHECK(coro_saw == 1);
}

/* A wake posted from another thread while the task's park timer is due:
 * the timer resumes the task and it ends in the same turn, before the
 * loop runs the post (posts run among the turn's jobs, after its events).
 * The post must then find nothing freed (ASan: heap-use-after-free on
 * the task) and must not wake the next task made in its place. */
static struct task *late_target;
static int late_woken;

static void *late_waker(void *arg)
{
    (void)arg;
    task_wake(late_target);
    return NULL;
}

static void late_parker(void *arg)
{
    (void)arg;
    late_target = task_self();
    late_woken = task_park(now_us() + 20000);
    done++;
}

static void late_next(void *arg)
{
    /* The next task, maybe in the chunk the first one had: no permit. */
    *(int *)arg = task_park(now_us() + 30000);
    done++;
}

static void test_post_outlives_task(void)
{
    pthread_t th;
    int next_woken = -1;

    done = 0;
    task_spawn(late_parker, NULL);
    loop_once();                        /* it parks, its timer armed */
    CHECK(late_target != NULL && done == 0);
    CHECK(pthread_create(&th, NULL, late_waker, NULL) == 0);
    pthread_join(th, NULL);             /* the post is on the loop's list */
    usleep(40000);                      /* ... and the timer is due too */
    task_spawn(late_next, &next_woken);
    run_until(2);
    CHECK(late_woken == 0);             /* its timer resumed it, not the post */
    CHECK(next_woken == 0);             /* the post woke nobody else */
    CHECK(coro_count() == 0);
}

/* ---------------------------------------------------------------- the guard */

/* A frame that reaches GUARD_PAST bytes below the bottom of its
 * coroutine's stack must fault in the guard, not write into whatever is
 * mapped below it (another stack, in a pool of them): one page of guard,
 * as before, let a frame larger than a page step over it (the biggest of
 * ours, db_pipe_repeat()'s, is 6 KiB). The child maps memory of its own
 * right below the guard so that a write past it would land, and counts a
 * SIGSEGV as caught (exit 42); an exit 0 means the frame wrote past the
 * guard unseen. */
#define GUARD_PAST (8 * 1024)

/* The mapping of /proc/self/maps that holds addr: its start and end, and
 * whether it is writable; 0 if found. */
static int mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, int *rw)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char perms[8];
    unsigned long a, b;
    int found = 0;

    while (f && !found && fscanf(f, "%lx-%lx %7s %*[^\n]", &a, &b, perms) == 3)
        if (addr >= a && addr < b) {
            *lo = a, *hi = b, *rw = perms[0] == 'r' && perms[1] == 'w';
            found = 1;
        }
    if (f)
        fclose(f);
    return found ? 0 : -1;
}

/* Memory right below the guard under the stack whose lowest byte is lo:
 * 0 when something writable is mapped there (made here if need be). */
static int map_below_guard(uintptr_t lo)
{
    uintptr_t glo, ghi, nlo, nhi;
    int rw;
    void *p;

    if (mapping_of(lo - 1, &glo, &ghi, &rw) != 0 || rw)
        return -1;                      /* no guard under the stack */
    if (mapping_of(glo - 1, &nlo, &nhi, &rw) == 0)
        return rw ? 0 : -1;
    p = mmap((void *)(glo - 64 * 1024), 64 * 1024, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    return p == (void *)(glo - 64 * 1024) ? 0 : -1;
}

static void on_guard(int sig)
{
    (void)sig;
    _exit(42);
}

static void overflow(void *arg)
{
    volatile char here = 0;
    uintptr_t lo, hi;
    int rw;

    (void)arg;
    if (mapping_of((uintptr_t)&here, &lo, &hi, &rw) != 0 || map_below_guard(lo) != 0)
        _exit(3);                       /* cannot set the case up */
    {
        size_t n = (size_t)((uintptr_t)&here - (lo - GUARD_PAST));
        volatile char deep[n];          /* a frame GUARD_PAST below the stack */

        deep[0] = 1;
        if (deep[0] != 1)
            _exit(4);
    }
    _exit(0);                           /* it wrote past the guard unseen */
}

static void test_guard(void)
{
    pid_t pid = fork();
    int status = 0;

    if (pid == 0) {
        static char alt[64 * 1024];
        stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
        struct sigaction sa;

        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_guard;
        sa.sa_flags = SA_ONSTACK;
        sigaltstack(&ss, NULL);
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        task_spawn(overflow, NULL);
        for (;;)
            loop_once();
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    printf("   a frame %d KiB past the stack: %s %d\n", GUARD_PAST / 1024,
           WIFEXITED(status) ? "exit" : "signal",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 42) ||
          (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV));
}

/* The same calls in a plain thread block it. */
static void *thread_waits(void *arg)
{
    int *ok = arg;
    int64_t t0 = now_us();

    *ok = wait_cond_wait(&cv, NULL, t0 + 20000) == 0;
    wait_until(now_us() + 1000);
    *ok &= task_on_loop() == 0;
    return NULL;
}

static void test_thread_mode(void)
{
    pthread_t th;
    int ok = 0;

    CHECK(pthread_create(&th, NULL, thread_waits, &ok) == 0);
    pthread_join(th, NULL);
    CHECK(ok == 1);
}

int main(void)
{
    CHECK(loop_init() == 0);
    test_coro();
    test_many();
    test_sleep();
    test_mutex();
    test_cond();
    test_fd();
    test_cross_thread();
    test_post_outlives_task();
    test_guard();
    test_thread_mode();
    loop_free();
    printf("core: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
