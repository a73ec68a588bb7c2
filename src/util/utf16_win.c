/* utf16_win.c - see utf16_win.h. */
#include "util/utf16_win.h"

#include <windows.h>

#include <stdio.h>
#include <stdlib.h>

wchar_t *sl_utf8_to_utf16(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    if (n <= 0) return NULL;
    wchar_t *w = malloc((size_t)n * sizeof *w);
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        free(w);
        return NULL;
    }
    return w;
}

char *sl_utf16_to_utf8(const wchar_t *w)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
    if (n <= 0) return NULL;
    char *s = malloc((size_t)n);
    if (s && WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL) != n) {
        free(s);
        return NULL;
    }
    return s;
}

const char *sl_win_error_text(unsigned long code, char *buf, size_t cap)
{
    if (cap == 0) return buf;
    wchar_t w[256];
    DWORD n = FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL,
                             (DWORD)code, 0, w, sizeof w / sizeof w[0], NULL);
    while (n > 0 && (w[n - 1] == L'\r' || w[n - 1] == L'\n' || w[n - 1] == L'.')) n--;
    int m = n ? WideCharToMultiByte(CP_UTF8, 0, w, (int)n, buf, (int)cap - 1, NULL, NULL) : 0;
    if (m <= 0) snprintf(buf, cap, "Windows error %lu", code);
    else buf[m] = '\0';
    return buf;
}
