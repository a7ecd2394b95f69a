/* util.h — the few helpers every file uses.
 *
 * Out of memory is fatal (antirez's smallchat): a long-running server that
 * tries to recover from malloc() failure only makes every caller worse, so
 * xmalloc() and friends print a line and abort. Time is monotonic
 * milliseconds unless a name says otherwise.
 */
#ifndef LOCKLAB_UTIL_H
#define LOCKLAB_UTIL_H

#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);

int64_t now_ms(void);            /* CLOCK_MONOTONIC, milliseconds */
int64_t now_us(void);            /* CLOCK_MONOTONIC, microseconds */

/* A per-thread xorshift generator: cheap jitter without a shared lock. */
uint64_t rand64(void);
/* Uniform in [lo, hi]. */
int64_t  rand_range(int64_t lo, int64_t hi);

/* Copy at most size-1 bytes and always terminate. Returns strlen(src). */
size_t strlcopy(char *dst, const char *src, size_t size);

/* FNV-1a of a string: which stripe or room a key falls in. */
uint32_t str_hash(const char *s);

/* Is s 1 to max characters of [A-Za-z0-9_-] (a product code, an order
 * number, a user)? */
int word_valid(const char *s, size_t max);

/* Parse all of s as a decimal integer in [min, max]. 0 on success. */
int parse_int(const char *s, long long min, long long max, long long *out);

/* Has the peer of this idle client socket closed it? One non-blocking
 * peek: end-of-file or a reset means closed; unread bytes (pub/sub
 * messages) or nothing yet mean open. A restarted server leaves every old
 * connection at end-of-file, so this spares the next request a 503. */
int fd_peer_closed(int fd);

/* A random RFC 4122 version-4 UUID, 36 chars + NUL. */
void uuid4(char out[37]);

#endif /* LOCKLAB_UTIL_H */
