/* expect: the failure counter and check macros of the test programs that
 * do not use cmocka. CHECK records a failure and goes on; EXPECT records
 * it and returns from the calling (void) function. Each prints file:line
 * and a printf-style message. */
#ifndef FS_TESTS_EXPECT_H
#define FS_TESTS_EXPECT_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                    \
            printf(__VA_ARGS__);                                                           \
            printf("\n");                                                                  \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

#define EXPECT(cond, ...)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            CHECK(0, __VA_ARGS__);                                                         \
            return;                                                                        \
        }                                                                                  \
    } while (0)

#endif
