/* escape.c - see escape.h. */
#include "util/escape.h"

#include <string.h>

size_t sl_utf8_seq_len(const unsigned char *s, size_t n)
{
    if (n == 0) return 0;
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c == 0xe0) len = 3, lo = 0xa0;              /* no overlongs */
    else if (c >= 0xe1 && c <= 0xec) len = 3;
    else if (c == 0xed) len = 3, hi = 0x9f;              /* no surrogates */
    else if (c >= 0xee && c <= 0xef) len = 3;
    else if (c == 0xf0) len = 4, lo = 0x90;              /* no overlongs */
    else if (c >= 0xf1 && c <= 0xf3) len = 4;
    else if (c == 0xf4) len = 4, hi = 0x8f;              /* <= U+10FFFF */
    else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return len;
}

/* Bytes at s[0..n) that go out unchanged (0: escape s[0]). */
static size_t keep_len(const unsigned char *s, size_t n)
{
    const unsigned c = s[0];
    if (c < 0x80) return (c >= 0x20 && c < 0x7f) ? 1 : 0;
    size_t len = sl_utf8_seq_len(s, n);
    if (len == 2 && c == 0xc2 && s[1] <= 0x9f) return 0; /* C1 control */
    return len;
}

size_t sl_escape(char *dst, size_t cap, const char *src, size_t n, size_t *consumed)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0, i = 0;
    if (cap == 0) {
        if (consumed) *consumed = 0;
        return 0;
    }
    while (i < n) {
        size_t k = keep_len(s + i, n - i);
        if (k) {
            if (o + k > cap - 1) break;
            memcpy(dst + o, s + i, k);
            o += k;
            i += k;
        } else {
            if (o + 4 > cap - 1) break;
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[s[i] >> 4];
            dst[o++] = hex[s[i] & 15];
            i++;
        }
    }
    dst[o] = '\0';
    if (consumed) *consumed = i;
    return o;
}

bool sl_escape_needed(const char *src, size_t n)
{
    const unsigned char *s = (const unsigned char *)src;
    for (size_t i = 0; i < n;) {
        size_t k = keep_len(s + i, n - i);
        if (!k) return true;
        i += k;
    }
    return false;
}
