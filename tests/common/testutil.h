/* testutil.h - small helpers shared by test binaries. */
#ifndef SL_TESTS_TESTUTIL_H
#define SL_TESTS_TESTUTIL_H

#include <stddef.h>

/* A fresh private directory for this test binary's files (created once,
 * under $TMPDIR or /tmp). Never NULL. */
const char *t_tmpdir(void);

/* Writes "<t_tmpdir()>/<name>" into buf and returns buf. */
char *t_path(char *buf, size_t cap, const char *name);

#endif
