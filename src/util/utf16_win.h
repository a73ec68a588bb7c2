/* utf16_win.h - UTF-8 <-> UTF-16 for the Windows platform files (the W
 * calls take UTF-16; sluice's strings are UTF-8 everywhere else). */
#ifndef SL_UTIL_UTF16_WIN_H
#define SL_UTIL_UTF16_WIN_H

#include <stddef.h>
#include <wchar.h>

/* A new NUL-terminated UTF-16 copy of the UTF-8 string s (the caller frees
 * it); NULL when s is not valid UTF-8 or memory runs out. */
wchar_t *sl_utf8_to_utf16(const char *s);

/* A new NUL-terminated UTF-8 copy of the UTF-16 string w; NULL on failure. */
char *sl_utf16_to_utf8(const wchar_t *w);

/* The system's text for a Win32 error code (GetLastError), UTF-8, without
 * the trailing line break, in buf (cap bytes); returns buf. */
const char *sl_win_error_text(unsigned long code, char *buf, size_t cap);

#endif
