/* check: the unit tests' tiny harness. CHECK counts and reports; each test
 * binary ends with check_done(), which prints "N passed, N failed" and
 * returns the exit code. */
#ifndef SHOAL_CHECK_H
#define SHOAL_CHECK_H

#include <stdio.h>

static int check_pass, check_fail;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond) {                                                            \
            check_pass++;                                                      \
        } else {                                                               \
            check_fail++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                      \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_pass, check_fail);
    return check_fail ? 1 : 0;
}

#endif
