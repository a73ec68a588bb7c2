/* testutil.h - small helpers shared by test binaries. */
#ifndef SL_TESTS_TESTUTIL_H
#define SL_TESTS_TESTUTIL_H

#include <stddef.h>

/* A fresh private directory for this test binary's files (created once,
 * under $TMPDIR or /tmp). Never NULL. */
const char *t_tmpdir(void);

/* Writes "<t_tmpdir()>/<name>" into buf and returns buf. */
char *t_path(char *buf, size_t cap, const char *name);

/* sqrt(sum (x - y)^2 / sum x^2) over n values, in double: the relative RMS
 * error of y as a copy of x (0 when x is all zero and y equals it). */
double t_rel_rms(const float *x, const float *y, int n);

#endif
