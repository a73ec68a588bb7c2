/* json.c - see json.h. */
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/status.h"

int sl_json_depth(const char *text, size_t len)
{
    int depth = 0, max = 0;
    int in_str = 0, esc = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (esc) esc = 0;
            else if (c == '\\') esc = 1;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max) max = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return max;
}

/* Whether the backslash at text[i] starts an escape (an even number of
 * backslashes before it). */
static bool escape_starts(const char *text, size_t i)
{
    size_t run = 0;
    while (run < i && text[i - 1 - run] == '\\') run++;
    return run % 2 == 0;
}

/* C strings cannot hold U+0000, yet a model's byte token 0 reaches clients
 * as "\u0000" in an answer, which they send back in the next turn: each
 * such escape becomes "\ufffd" (the replacement character, same length),
 * in a copy (*copy, malloc'd; NULL when there is none to replace). */
static int nul_escapes_to_replacement(const char *text, size_t len, char **copy)
{
    *copy = NULL;
    for (size_t i = 0; i + 6 <= len; i++) {
        if (text[i] != '\\' || memcmp(text + i + 1, "u0000", 5) || !escape_starts(text, i))
            continue;
        if (!*copy) {
            *copy = malloc(len);
            if (!*copy) return SL_ENOMEM;
            memcpy(*copy, text, len);
        }
        memcpy(*copy + i + 1, "ufffd", 5);
        i += 5;
    }
    return SL_OK;
}

int sl_json_parse(const char *text, size_t len, int max_depth, json_t **out, sl_err *err)
{
    *out = NULL;
    int depth = sl_json_depth(text, len);
    if (depth > max_depth)
        return sl_err_set(err, SL_EFORMAT, "the JSON nests %d arrays/objects deep; at most %d "
                          "are accepted", depth, max_depth);
    char *copy = NULL;
    if (nul_escapes_to_replacement(text, len, &copy) != SL_OK)
        return sl_err_set(err, SL_ENOMEM, "out of memory reading %zu bytes of JSON", len);
    json_error_t je;
    json_t *v = json_loadb(copy ? copy : text, len, JSON_REJECT_DUPLICATES, &je);
    free(copy);
    if (!v) {
        int code = json_error_code(&je) == json_error_out_of_memory ? SL_ENOMEM : SL_EFORMAT;
        return sl_err_set(err, code, "malformed JSON at line %d, column %d: %s", je.line,
                          je.column, je.text);
    }
    *out = v;
    return SL_OK;
}

json_t *sl_json_string_lossy(const char *s, size_t n)
{
    /* at most 3 bytes (U+FFFD) per input byte */
    char *buf = malloc(n * 3 + 1);
    if (!buf) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t l = p[i] < 0x80 ? 1 : sl_utf8_seq_len(p + i, n - i);
        if (l == 0) {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(buf + o, p + i, l);
            o += l;
            i += l;
        }
    }
    json_t *v = json_stringn(buf, o);
    free(buf);
    return v;
}

json_t *sl_json_real_f32(float v)
{
    if (!isfinite(v)) return json_null();
    char b[48];
    for (int p = 1; p <= 9; p++) {
        snprintf(b, sizeof b, "%.*g", p, (double)v);
        if (strtof(b, NULL) == v) break;
    }
    /* the double nearest that decimal prints as it (at most 9 digits) */
    return json_real(strtod(b, NULL));
}

/* A growing output buffer; fails sticky. */
typedef struct outbuf {
    char *p;
    size_t n, cap;
    bool oom;
} outbuf;

static void put(outbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void puts_(outbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A scalar as jansson writes it: strings with every non-ASCII character
 * escaped (and DEL, which jansson leaves raw), reals at the smallest
 * precision that reads back as the same double. */
static void put_scalar(outbuf *b, const json_t *v)
{
    char *t = NULL;
    if (json_is_real(v)) {
        double d = json_real_value(v);
        for (int p = 1; p <= 17; p++) {
            free(t);
            t = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(p));
            if (!t || strtod(t, NULL) == d) break;
        }
    } else {
        t = json_dumps(v, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
    }
    if (!t) {
        b->oom = true;
        return;
    }
    for (const char *s = t; *s; s++) {
        if (*s == 0x7f) puts_(b, "\\u007F");
        else put(b, s, 1);
    }
    free(t);
}

static bool is_container(const json_t *v) { return json_is_object(v) || json_is_array(v); }

/* Whether every member of container v is a scalar. */
static bool flat(const json_t *v)
{
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v)) {
        json_array_foreach(v, i, e) if (is_container(e)) return false;
    } else {
        json_object_foreach((json_t *)v, k, e) if (is_container(e)) return false;
    }
    return true;
}

static void newline(outbuf *b, int depth)
{
    put(b, "\n", 1);
    for (int i = 0; i < depth; i++) put(b, "  ", 2);
}

static void put_value(outbuf *b, const json_t *v, bool pretty, int depth);

static void put_key(outbuf *b, const char *k, size_t kl, bool pretty)
{
    json_t *ks = json_stringn_nocheck(k, kl); /* jansson keys are valid UTF-8 */
    if (!ks) {
        b->oom = true;
        return;
    }
    put_scalar(b, ks);
    json_decref(ks);
    puts_(b, pretty ? ": " : ":");
}

static void put_value(outbuf *b, const json_t *v, bool pretty, int depth)
{
    if (!is_container(v)) {
        put_scalar(b, v);
        return;
    }
    const bool arr = json_is_array(v);
    const size_t n = arr ? json_array_size(v) : json_object_size(v);
    puts_(b, arr ? "[" : "{");
    const bool one_line = !pretty || flat(v);
    size_t i = 0;
    if (arr) {
        size_t idx;
        json_t *e;
        json_array_foreach(v, idx, e) {
            if (i++) puts_(b, one_line && pretty ? ", " : ",");
            if (!one_line) newline(b, depth + 1);
            put_value(b, e, pretty, depth + 1);
        }
    } else {
        const char *k;
        size_t kl;
        json_t *e;
        json_object_keylen_foreach((json_t *)v, k, kl, e) {
            if (i++) puts_(b, one_line && pretty ? ", " : ",");
            if (!one_line) newline(b, depth + 1);
            put_key(b, k, kl, pretty);
            put_value(b, e, pretty, depth + 1);
        }
    }
    if (!one_line && n) newline(b, depth);
    puts_(b, arr ? "]" : "}");
}

char *sl_json_dump_text(const json_t *v, bool pretty)
{
    outbuf b = {0};
    put_value(&b, v, pretty, 0);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
