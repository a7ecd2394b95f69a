/* coro.h — stackful coroutines: straight-line code that can pause.
 *
 * A coroutine runs a function on a stack of its own and gives the CPU back
 * with coro_yield(), to whoever resumed it; coro_resume() carries on from
 * where it stopped. That is all this file does: who resumes whom, and when,
 * is the wait layer's business (wait.h), and nothing here knows of file
 * descriptors, timers or the loop. A strategy's acquire, read, write,
 * release stay one function that reads top to bottom, as in the seeds'
 * Java, while the thread underneath serves everyone else (OpenResty's
 * cosockets, MariaDB's own non-blocking client work the same way).
 *
 * Rules. coro_resume() is called from the thread's main context only (the
 * loop's callbacks), never from inside a coroutine: a coroutine that wants
 * another to run wakes it through the wait layer, which resumes it from
 * the loop. A coroutine belongs to the thread that made it. A function
 * that returns ends its coroutine; its stack goes back to a small pool.
 *
 * Stacks are mmap()ed with a guard below them (64 KiB, more than any frame
 * of ours), so an overflow faults instead of corrupting a neighbour;
 * untouched pages cost no memory. On
 * x86-64 the switch is a few instructions of our own (callee-saved
 * registers and the stack pointer: no signal mask, so no system call);
 * elsewhere it is ucontext. Under AddressSanitizer every switch is
 * announced (__sanitizer_start_switch_fiber), so ASan keeps working.
 */
#ifndef LOCKLAB_CORO_H
#define LOCKLAB_CORO_H

#include <stddef.h>

struct coro;

typedef void (*coro_fn)(void *arg);

/* A new coroutine that will run fn(arg) at its first coro_resume(). */
struct coro *coro_new(coro_fn fn, void *arg);

/* Run co until it yields or returns. Returns 1 if it is still alive (it
 * yielded), 0 if it returned — and then it is freed. Main context only. */
int coro_resume(struct coro *co);

/* Give the CPU back to whoever resumed the running coroutine. */
void coro_yield(void);

/* The running coroutine, or NULL in a thread's main context. */
struct coro *coro_self(void);

/* Per-coroutine pointer for the wait layer (its struct task). */
void  coro_set_data(struct coro *co, void *data);
void *coro_data(const struct coro *co);

/* Unmap the stacks this thread keeps for its next coroutines: a thread
 * whose coroutines have all ended calls it before it exits. */
void coro_pool_free(void);

/* Coroutines alive on this thread, and the stack size each gets. */
int    coro_count(void);
size_t coro_stack_size(void);

#endif /* LOCKLAB_CORO_H */
