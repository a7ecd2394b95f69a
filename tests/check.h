/* check.h — the C tests' one assertion.
 *
 * CHECK(cond) counts a pass, or prints the condition that failed with its
 * file and line and counts a failure; the test's main() prints the two
 * counts and exits non-zero when anything failed. One test program is one
 * file, so the counters are that file's own.
 */
#ifndef LOCKLAB_TESTS_CHECK_H
#define LOCKLAB_TESTS_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond) do {                                              \
        if (cond) passed++;                                           \
        else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)

#endif /* LOCKLAB_TESTS_CHECK_H */
