/* status.c - error messages and the always-on assert. */
#include "util/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sl_err_set(sl_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int sl_err_prefix(sl_err *err, const char *fmt, ...)
{
    if (!err) return SL_OK;
    char joined[2 * SL_ERR_MSG_MAX + 2];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(joined, SL_ERR_MSG_MAX, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > SL_ERR_MSG_MAX - 1) n = SL_ERR_MSG_MAX - 1;
    joined[n++] = ':';
    joined[n++] = ' ';
    memcpy(joined + n, err->msg, SL_ERR_MSG_MAX);
    joined[sizeof joined - 1] = '\0';
    memcpy(err->msg, joined, SL_ERR_MSG_MAX - 1);
    err->msg[SL_ERR_MSG_MAX - 1] = '\0';
    return err->code;
}

const char *sl_status_name(int code)
{
    switch (code) {
    case SL_OK: return "ok";
    case SL_EIO: return "I/O error";
    case SL_EFORMAT: return "format error";
    case SL_ENOMEM: return "out of memory";
    case SL_EINVAL: return "invalid argument";
    case SL_EUNSUPPORTED: return "unsupported";
    default: return "unknown error";
    }
}

void sl_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "sluice: internal error: assertion '%s' failed at %s:%d\n",
            expr, file, line);
    abort();
}
