/* test.h - the project's minimal unit-test harness.
 *
 * A test file defines functions with TEST(name) and lists them in main with
 * RUN(name). CHECK* macros record a failure with file:line and continue; the
 * binary prints one line per test and a closing "N passed, N failed" line,
 * and exits non-zero if any check failed. tests/run.sh sums the binaries. */
#ifndef SL_TESTS_TEST_H
#define SL_TESTS_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int t_checks_failed_in_test;
static int t_passed, t_failed;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
                    #cond);                                                    \
            t_checks_failed_in_test++;                                         \
        }                                                                      \
    } while (0)

#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            t_checks_failed_in_test++;                                         \
        }                                                                      \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
    do {                                                                       \
        long long t_a_ = (long long)(a), t_b_ = (long long)(b);                \
        CHECK_MSG(t_a_ == t_b_, "%s = %lld, %s = %lld", #a, t_a_, #b, t_b_);   \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double t_a_ = (double)(a), t_b_ = (double)(b);                         \
        CHECK_MSG(fabs(t_a_ - t_b_) <= (tol), "%s = %.9g, %s = %.9g (tol %g)", \
                  #a, t_a_, #b, t_b_, (double)(tol));                          \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                        \
    do {                                                                       \
        const char *t_h_ = (hay);                                              \
        CHECK_MSG(t_h_ && strstr(t_h_, (needle)), "'%s' lacks '%s'",           \
                  t_h_ ? t_h_ : "(null)", (needle));                           \
    } while (0)

#define RUN(name)                                                              \
    do {                                                                       \
        t_checks_failed_in_test = 0;                                           \
        name();                                                                \
        if (t_checks_failed_in_test) {                                         \
            t_failed++;                                                        \
            printf("FAIL %s\n", #name);                                        \
        } else {                                                               \
            t_passed++;                                                        \
            printf("ok   %s\n", #name);                                        \
        }                                                                      \
        fflush(stdout);                                                        \
    } while (0)

#define TEST_REPORT()                                                          \
    (printf("%d passed, %d failed\n", t_passed, t_failed), t_failed ? 1 : 0)

#endif
