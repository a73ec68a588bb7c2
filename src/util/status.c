/* status.c - error messages (stored escaped, see util/escape.h) and the
 * always-on assert. */
#include "util/status.h"

#include "util/escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of text[0..n) without a UTF-8 sequence that vsnprintf's truncation
 * cut short at the end (so it is not shown as "\xNN" escapes). */
static size_t trim_cut_sequence(const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned c = s[n - back];
        if ((c & 0xc0) == 0x80) continue; /* a continuation byte: look further back */
        size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return want > back ? n - back : n;
    }
    return n;
}

/* Formats into a scratch buffer, then stores it in err->msg escaped (see
 * util/escape.h): a message quoting a file's bytes cannot carry terminal
 * control sequences. Formatting into scratch also makes err->msg itself a
 * valid argument. */
static void store_message(sl_err *err, const char *fmt, va_list ap)
{
    char raw[SL_ERR_MSG_MAX];
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len >= sizeof raw) len = trim_cut_sequence(raw, sizeof raw - 1);
    sl_escape(err->msg, sizeof err->msg, raw, len, NULL);
}

int sl_err_set(sl_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        store_message(err, fmt, ap);
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
    if (n > SL_ERR_MSG_MAX - 1) n = (int)trim_cut_sequence(joined, SL_ERR_MSG_MAX - 1);
    joined[n++] = ':';
    joined[n++] = ' ';
    size_t old = strnlen(err->msg, SL_ERR_MSG_MAX - 1);
    memcpy(joined + n, err->msg, old);
    size_t len = (size_t)n + old;
    /* the old message is escaped already, and escaping is idempotent */
    if (len > SL_ERR_MSG_MAX - 1) len = trim_cut_sequence(joined, SL_ERR_MSG_MAX - 1);
    sl_escape(err->msg, sizeof err->msg, joined, len, NULL);
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
