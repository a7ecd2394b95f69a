/* coro.c — stackful coroutines (see coro.h for the rules).
 *
 * The switch. On x86-64, ll_coro_switch(&save, to) pushes the six
 * callee-saved registers on the current stack, stores the stack pointer in
 * *save, loads `to` and pops the same six from there: every other register
 * is the caller's to lose by the System V ABI, and the return address is
 * already on the stack. A new coroutine's stack is laid out as if it had
 * switched away just before entering coro_entry(). Elsewhere, ucontext
 * does the same, at the price of a sigprocmask() system call a switch.
 *
 * The stacks. CORO_STACK bytes each (four times that under ASan, whose
 * frames are larger), with CORO_GUARD bytes of guard below: no access, so
 * an overflow faults there. One page of guard is not enough: a frame
 * larger than a page (db_pipe_repeat()'s is 6 KiB) can step over it and
 * write into whatever lies below, another coroutine's stack in the pool.
 * CORO_GUARD is larger than any frame of ours, and the build probes every
 * page of a large frame as it is made (-fstack-clash-protection), so a
 * frame that reaches below the stack touches the guard first. It costs
 * address space only. A returned coroutine's stack is kept for the next
 * one, up to CORO_POOL of them per thread.
 */
#include "coro.h"
#include "util.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#endif

#ifdef CORO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define CORO_STACK (1024 * 1024)
#else
#define CORO_STACK (256 * 1024)
#endif
#define CORO_POOL 256
#define CORO_GUARD (64 * 1024)          /* a multiple of any page size used */

#if !defined(__x86_64__)
#define CORO_UCONTEXT 1
#include <ucontext.h>
#endif

struct coro {
    void        *sp;            /* where its registers wait (x86-64)        */
#ifdef CORO_UCONTEXT
    ucontext_t   uc;
#endif
    coro_fn      fn;
    void        *arg;
    void        *data;          /* the wait layer's task                    */
    char        *map;           /* the mapping: the guard, then the stack   */
    size_t       map_len;
    int          done;
    struct coro *next_free;     /* in the pool                              */
#ifdef CORO_ASAN
    void        *fake_stack;    /* ASan's fake frames while switched out    */
#endif
};

/* Per thread: the running coroutine, the main context's saved state, the
 * pool of finished coroutines (with their stacks) and the count alive. */
static __thread struct coro *running;
static __thread void *main_sp;
#ifdef CORO_UCONTEXT
static __thread ucontext_t main_uc;
#endif
static __thread struct coro *pool;
static __thread int pooled, alive;
#ifdef CORO_ASAN
static __thread const void *main_bottom;
static __thread size_t main_size;
static __thread void *main_fake;
#endif

/* ---------------------------------------------------------------- the switch */

#ifndef CORO_UCONTEXT
void ll_coro_switch(void **save, void *to);
__asm__(
    ".text\n"
    ".globl ll_coro_switch\n"
    ".hidden ll_coro_switch\n"
    ".type ll_coro_switch,@function\n"
    "ll_coro_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size ll_coro_switch,.-ll_coro_switch\n"
    ".section .note.GNU-stack,\"\",@progbits\n"
    ".text\n");
#endif

static char *stack_base(const struct coro *co)
{
    return co->map + CORO_GUARD;
}

static size_t stack_len(const struct coro *co)
{
    return co->map_len - CORO_GUARD;
}

/* Leave the coroutine for the main context; `dying`: for good. */
static void to_main(struct coro *co, int dying)
{
#ifdef CORO_ASAN
    __sanitizer_start_switch_fiber(dying ? NULL : &co->fake_stack, main_bottom, main_size);
#else
    (void)dying;
#endif
#ifdef CORO_UCONTEXT
    swapcontext(&co->uc, &main_uc);
#else
    ll_coro_switch(&co->sp, main_sp);
#endif
#ifdef CORO_ASAN
    __sanitizer_finish_switch_fiber(co->fake_stack, NULL, NULL);
#endif
}

/* Every coroutine starts here, on its own stack. */
static void coro_entry(void)
{
    struct coro *co = running;

#ifdef CORO_ASAN
    __sanitizer_finish_switch_fiber(NULL, &main_bottom, &main_size);
#endif
    co->fn(co->arg);
    co->done = 1;
    to_main(co, 1);
    abort();                    /* a finished coroutine is never resumed */
}

/* ---------------------------------------------------------------- making them */

static struct coro *coro_alloc(void)
{
    struct coro *co = pool;

    if (co != NULL) {
        pool = co->next_free;
        pooled--;
#ifdef CORO_ASAN
        /* The last user's frames left their red zones poisoned. */
        __asan_unpoison_memory_region(stack_base(co), stack_len(co));
#endif
        return co;
    }
    co = xcalloc(1, sizeof *co);
    co->map_len = CORO_STACK + CORO_GUARD;
    co->map = mmap(NULL, co->map_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (co->map == MAP_FAILED) {
        fprintf(stderr, "locklab: cannot map a coroutine stack: out of memory\n");
        abort();
    }
    if (mprotect(co->map, CORO_GUARD, PROT_NONE) != 0) {
        fprintf(stderr, "locklab: cannot protect a coroutine stack's guard\n");
        abort();
    }
    return co;
}

static void coro_free(struct coro *co)
{
    if (pooled < CORO_POOL) {
        co->next_free = pool;
        pool = co;
        pooled++;
        return;
    }
    munmap(co->map, co->map_len);
    free(co);
}

void coro_pool_free(void)
{
    while (pool != NULL) {
        struct coro *co = pool;

        pool = co->next_free;
        munmap(co->map, co->map_len);
        free(co);
    }
    pooled = 0;
}

struct coro *coro_new(coro_fn fn, void *arg)
{
    struct coro *co = coro_alloc();

    co->fn = fn;
    co->arg = arg;
    co->data = NULL;
    co->done = 0;
    co->next_free = NULL;
#ifdef CORO_UCONTEXT
    getcontext(&co->uc);
    co->uc.uc_stack.ss_sp = stack_base(co);
    co->uc.uc_stack.ss_size = stack_len(co);
    co->uc.uc_link = NULL;
    makecontext(&co->uc, coro_entry, 0);
#else
    {
        /* As if it had switched away just before entering coro_entry():
         * six registers, then the entry as the return address, then a
         * null return address for coro_entry itself, which never returns.
         * At its entry the stack pointer is 8 past a 16-byte boundary,
         * as after a call. */
        uintptr_t top = ((uintptr_t)stack_base(co) + stack_len(co)) & ~(uintptr_t)15;
        void **sp = (void **)top;

        *--sp = NULL;
        *--sp = (void *)(uintptr_t)coro_entry;
        for (int i = 0; i < 6; i++)
            *--sp = NULL;
        co->sp = sp;
    }
#endif
    alive++;
    return co;
}

/* ---------------------------------------------------------------- running them */

int coro_resume(struct coro *co)
{
    assert(running == NULL);    /* from the main context only */
    assert(!co->done);
    running = co;
#ifdef CORO_ASAN
    __sanitizer_start_switch_fiber(&main_fake, stack_base(co), stack_len(co));
#endif
#ifdef CORO_UCONTEXT
    swapcontext(&main_uc, &co->uc);
#else
    ll_coro_switch(&main_sp, co->sp);
#endif
#ifdef CORO_ASAN
    __sanitizer_finish_switch_fiber(main_fake, NULL, NULL);
#endif
    running = NULL;
    if (!co->done)
        return 1;
    alive--;
    coro_free(co);
    return 0;
}

void coro_yield(void)
{
    struct coro *co = running;

    assert(co != NULL);         /* only a coroutine can yield */
    to_main(co, 0);
}

struct coro *coro_self(void)
{
    return running;
}

void coro_set_data(struct coro *co, void *data)
{
    co->data = data;
}

void *coro_data(const struct coro *co)
{
    return co->data;
}

int coro_count(void)
{
    return alive;
}

size_t coro_stack_size(void)
{
    return CORO_STACK;
}
