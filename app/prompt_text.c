/* prompt_text.c - see prompt_text.h. */
#include "prompt_text.h"

#include <stdlib.h>

/* The byte of "\xAB" when A and B read whole as a base-16 number (strtol's
 * rules, so a sign or leading space counts, as in llama.cpp), else -1. */
static int hex_pair(char a, char b)
{
    const char pair[3] = {a, b, 0};
    char *end = NULL;
    const long v = strtol(pair, &end, 16);
    return end == pair + 2 ? (int)(unsigned char)(char)v : -1;
}

size_t prompt_unescape(char *s, size_t len)
{
    size_t out = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 == len) {
            s[out++] = s[i];
            continue;
        }
        const char c = s[++i];
        int byte = -1;
        switch (c) {
        case 'n': byte = '\n'; break;
        case 'r': byte = '\r'; break;
        case 't': byte = '\t'; break;
        case '\'':
        case '"':
        case '\\': byte = (unsigned char)c; break;
        case 'x':
            if (i + 2 < len && (byte = hex_pair(s[i + 1], s[i + 2])) >= 0) i += 2;
            break;
        default: break;
        }
        if (byte >= 0) {
            s[out++] = (char)byte;
        } else { /* not an escape: both characters stay */
            s[out++] = '\\';
            s[out++] = c;
        }
    }
    return out;
}

size_t prompt_file_len(const char *s, size_t len)
{
    return len > 0 && s[len - 1] == '\n' ? len - 1 : len;
}
