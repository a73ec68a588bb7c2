/* tok_utf8.c - UTF-8 helpers for the tokenizer: validation, sanitizing,
 * the GPT-2 byte-level table, and the small growable-buffer helpers the
 * encoders share. Knows bytes and code points, nothing about vocabularies. */
#include "tok/tok_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

size_t sl_tok_utf8_valid_len(const unsigned char *s, size_t n)
{
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) { need = 3; lo = 0xA0; }
    else if (c == 0xED) { need = 3; hi = 0x9F; }          /* no surrogates */
    else if (c >= 0xE1 && c <= 0xEF) need = 3;
    else if (c == 0xF0) { need = 4; lo = 0x90; }          /* no overlongs */
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else if (c == 0xF4) { need = 4; hi = 0x8F; }          /* <= U+10FFFF */
    else return 0;
    if (n < need) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < need; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return need;
}

bool sl_tok_reserve(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < n) {
        if (c > SIZE_MAX / 2 / sz) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * sz);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

size_t sl_tok_utf8_sanitize(const char *text, size_t len, char **buf, size_t *cap)
{
    /* Worst case every byte becomes the 3-byte U+FFFD. */
    if (len > SIZE_MAX / 3 - 1) return (size_t)-1;
    if (!sl_tok_reserve((void **)buf, cap, 3 * len + 1, 1)) return (size_t)-1;
    const unsigned char *s = (const unsigned char *)text;
    char *o = *buf;
    size_t i = 0, w = 0;
    while (i < len) {
        size_t k = sl_tok_utf8_valid_len(s + i, len - i);
        if (k == 0) {
            o[w++] = (char)0xEF;
            o[w++] = (char)0xBF;
            o[w++] = (char)0xBD;
            i++;
        } else {
            memcpy(o + w, s + i, k);
            w += k;
            i += k;
        }
    }
    o[w] = '\0';
    return w;
}

size_t sl_tok_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0) return 0;
    unsigned c = s[0];
    size_t k;
    uint32_t v;
    if (c < 0x80) { *cp = c; return 1; }
    if ((c & 0xE0) == 0xC0) { k = 2; v = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { k = 3; v = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { k = 4; v = c & 0x07; }
    else return 0;
    if (n < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return k;
}

/* GPT-2's bytes_to_unicode: the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ
 * stand for themselves; the other 68 bytes, in increasing order, take the
 * code points 256, 257, ... so that every byte has a visible stand-in. */
static sl_tok_bytemap_entry g_b2u[256];
static int16_t g_u2b[256 + 68];
static pthread_once_t g_table_once = PTHREAD_ONCE_INIT;

static bool byte_is_printable(int b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static void build_tables(void)
{
    int n = 0;
    for (int i = 0; i < 256 + 68; i++) g_u2b[i] = -1;
    for (int b = 0; b < 256; b++) {
        uint32_t cp = byte_is_printable(b) ? (uint32_t)b : (uint32_t)(256 + n++);
        g_u2b[cp] = (int16_t)b;
        if (cp < 0x80) {
            g_b2u[b].len = 1;
            g_b2u[b].s[0] = (char)cp;
        } else {
            g_b2u[b].len = 2;
            g_b2u[b].s[0] = (char)(0xC0 | (cp >> 6));
            g_b2u[b].s[1] = (char)(0x80 | (cp & 0x3F));
        }
    }
}

const sl_tok_bytemap_entry *sl_tok_byte_to_unicode(void)
{
    pthread_once(&g_table_once, build_tables);
    return g_b2u;
}

int sl_tok_unicode_to_byte(uint32_t cp)
{
    sl_tok_byte_to_unicode();
    if (cp >= 256 + 68) return -1;
    return g_u2b[cp];
}

int sl_tok_ids_push(sl_tok_ids *v, int32_t id)
{
    if (!sl_tok_reserve((void **)&v->ids, &v->cap, v->n + 1, sizeof *v->ids)) return SL_ENOMEM;
    v->ids[v->n++] = id;
    return SL_OK;
}

void sl_tok_ids_free(sl_tok_ids *v)
{
    if (!v) return;
    free(v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

int sl_tok_spans_push(sl_tok_spans *s, size_t off, size_t len)
{
    if (!sl_tok_reserve((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) return SL_ENOMEM;
    s->v[s->n].off = off;
    s->v[s->n].len = len;
    s->n++;
    return SL_OK;
}

void sl_tok_spans_free(sl_tok_spans *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

void sl_tok_scratch_free(sl_tok_scratch *s)
{
    free(s->text);
    free(s->word);
    free(s->sym);
    free(s->heap.v);
    sl_tok_spans_free(&s->spans);
    memset(s, 0, sizeof *s);
}
