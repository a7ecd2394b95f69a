/* slow_resolver.h — a resolver as slow as a DNS server that answers late,
 * for the tests that a host name never blocks the loop.
 *
 * The test program defines getaddrinfo() itself (this header, included by
 * one file of the program), so every call of the libraries it links
 * (hiredis, libmariadb) comes here first: a look-up of a name, not of a
 * numeric address, made on a coroutine takes SLOW_LOOKUP_US and is
 * counted in slow_lookups, then the C library's own answers. A name looked
 * up on the loop then shows twice: in the count, and as a slow piece of a
 * turn (loop_stats().slow_turns, LOCKLAB_LOOP_WARN_MS, 100 ms by default).
 * Look-ups outside a coroutine (at start, in config_parse()) pass at once.
 */
#ifndef LOCKLAB_TESTS_SLOW_RESOLVER_H
#define LOCKLAB_TESTS_SLOW_RESOLVER_H

#include "../core/wait.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <unistd.h>

#define SLOW_LOOKUP_US 150000

static int slow_lookups;

static int is_numeric(const char *node)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, node, buf) == 1 || inet_pton(AF_INET6, node, buf) == 1;
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    static int (*real)(const char *, const char *, const struct addrinfo *,
                       struct addrinfo **);

    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "getaddrinfo");
    if (node != NULL && task_on_loop() && !is_numeric(node)) {
        slow_lookups++;
        usleep(SLOW_LOOKUP_US);
    }
    return real(node, service, hints, res);
}

#endif /* LOCKLAB_TESTS_SLOW_RESOLVER_H */
