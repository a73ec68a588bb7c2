/* json_emit.c - see json_emit.h. */
#include "json_emit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/status.h"

void jw_init(jw_out *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

static void newline(jw_out *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
}

/* Separator and indentation before a value or a key. */
static void before_item(jw_out *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth == 0) return;
    bool inl = j->inline_[j->depth];
    if (!j->first[j->depth]) fputs(inl ? ", " : ",", j->f);
    j->first[j->depth] = false;
    if (!inl) newline(j);
}

static void open_c(jw_out *j, char c, bool inl)
{
    before_item(j);
    SL_ASSERT(j->depth + 1 < JW_MAX_DEPTH);
    fputc(c, j->f);
    j->depth++;
    j->first[j->depth] = true;
    /* a container inside an inline one stays inline */
    j->inline_[j->depth] = inl || j->inline_[j->depth - 1];
}

static void close_c(jw_out *j, char c)
{
    SL_ASSERT(j->depth > 0);
    bool empty = j->first[j->depth], inl = j->inline_[j->depth];
    j->depth--;
    if (!empty && !inl) newline(j);
    fputc(c, j->f);
}

void jw_obj_begin(jw_out *j) { open_c(j, '{', false); }
void jw_obj_begin_inline(jw_out *j) { open_c(j, '{', true); }
void jw_obj_end(jw_out *j) { close_c(j, '}'); }
void jw_arr_begin(jw_out *j) { open_c(j, '[', false); }
void jw_arr_begin_inline(jw_out *j) { open_c(j, '[', true); }
void jw_arr_end(jw_out *j) { close_c(j, ']'); }

/* Writes s[0..n) as a JSON string literal that is valid JSON and safe on a
 * terminal whatever the bytes are: '"' and '\' backslash-escaped; LF, CR
 * and TAB as \n, \r, \t; the other C0 controls, DEL and the C1 controls
 * U+0080..U+009F as \u00XX; each byte that is not part of well-formed UTF-8
 * (util/escape.h's sl_utf8_seq_len) as \ufffd, the replacement character, so
 * a reader cannot tell which invalid byte it was; valid printable UTF-8
 * unchanged. */
static void put_escaped(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            default: fprintf(f, "\\u%04x", c);
            }
            i++;
        } else {
            size_t l = sl_utf8_seq_len(p + i, n - i);
            if (l == 0) {
                fputs("\\ufffd", f);
                i++;
            } else if (l == 2 && c == 0xc2 && p[i + 1] <= 0x9f) {
                fprintf(f, "\\u%04x", (unsigned)p[i + 1]); /* C1 control */
                i += 2;
            } else {
                fwrite(p + i, 1, l, f);
                i += l;
            }
        }
    }
    fputc('"', f);
}

void jw_key(jw_out *j, const char *key)
{
    before_item(j);
    put_escaped(j->f, key, strlen(key));
    fputs(": ", j->f);
    j->after_key = true;
}

void jw_strn(jw_out *j, const char *s, size_t n)
{
    before_item(j);
    put_escaped(j->f, s, n);
}

void jw_str(jw_out *j, const char *s)
{
    if (!s) {
        jw_null(j);
        return;
    }
    jw_strn(j, s, strlen(s));
}

void jw_u64(jw_out *j, uint64_t v)
{
    before_item(j);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void jw_i64(jw_out *j, int64_t v)
{
    before_item(j);
    fprintf(j->f, "%lld", (long long)v);
}

void jw_f32(jw_out *j, float v)
{
    if (!isfinite(v)) {
        jw_null(j);
        return;
    }
    char b[48];
    for (int p = 6; p <= 9; p++) {
        snprintf(b, sizeof b, "%.*g", p, (double)v);
        if (strtof(b, NULL) == v) break;
    }
    before_item(j);
    fputs(b, j->f);
}

void jw_f64(jw_out *j, double v)
{
    if (!isfinite(v)) {
        jw_null(j);
        return;
    }
    char b[48];
    for (int p = 6; p <= 17; p++) {
        snprintf(b, sizeof b, "%.*g", p, v);
        if (strtod(b, NULL) == v) break;
    }
    before_item(j);
    fputs(b, j->f);
}

void jw_bool(jw_out *j, bool v)
{
    before_item(j);
    fputs(v ? "true" : "false", j->f);
}

void jw_null(jw_out *j)
{
    before_item(j);
    fputs("null", j->f);
}

void jw_done(jw_out *j)
{
    SL_ASSERT(j->depth == 0);
    fputc('\n', j->f);
}
