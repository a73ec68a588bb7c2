/* status.h - error reporting shared by every library module.
 *
 * Library code never prints and never exits. A function that can fail returns
 * an int: 0 on success, a negative SL_E* code on failure, and fills the
 * caller's sl_err with one sentence that names the problem (file, field,
 * byte offset, value seen, value expected). Only app/ decides what to do. */
#ifndef SL_UTIL_STATUS_H
#define SL_UTIL_STATUS_H

#include <stdarg.h>

#include "sluice.h" /* sl_err, SL_OK, the SL_E* codes and sl_err_set */

/* sl_err_set (fill an sl_err) is declared in sluice.h. */

/* Prepends "prefix: " to an existing message (adds context on the way up);
 * the result is escaped like sl_err_set's. */
int sl_err_prefix(sl_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Short name of a code, e.g. "I/O error". Never NULL. */
const char *sl_status_name(int code);

/* Always-on invariant check: prints file:line and aborts. For programming
 * errors only, never for bad input. */
#define SL_ASSERT(cond)                                                        \
    do {                                                                       \
        if (!(cond)) sl_assert_fail(#cond, __FILE__, __LINE__);                \
    } while (0)

void sl_assert_fail(const char *expr, const char *file, int line);

#endif
