/* json_emit.h - a small streaming JSON writer for app/ (inspect --json); its
 * names start with jw_ so that they do not collide with jansson's (json_null,
 * ...), the JSON library of util/json.h.
 *
 * Owns: commas, indentation and string escaping, so callers only say what
 * comes next. Strings are emitted as valid JSON whatever bytes they hold:
 * control characters become \uXXXX and invalid UTF-8 becomes U+FFFD.
 * Non-finite numbers become null. Nesting deeper than JW_MAX_DEPTH is a
 * programming error (asserted). */
#ifndef SL_APP_JSON_EMIT_H
#define SL_APP_JSON_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 32

typedef struct jw_out {
    FILE *f;
    int depth;
    bool first[JW_MAX_DEPTH];  /* no element yet at this level */
    bool inline_[JW_MAX_DEPTH]; /* this container is written on one line */
    bool after_key;
} jw_out;

void jw_init(jw_out *j, FILE *f);

/* Containers. The _inline variants keep the container on one line (short
 * arrays such as shapes). Call jw_key before any value inside objects. */
void jw_obj_begin(jw_out *j);
void jw_obj_begin_inline(jw_out *j);
void jw_obj_end(jw_out *j);
void jw_arr_begin(jw_out *j);
void jw_arr_begin_inline(jw_out *j);
void jw_arr_end(jw_out *j);
void jw_key(jw_out *j, const char *key);

void jw_str(jw_out *j, const char *s);
void jw_strn(jw_out *j, const char *s, size_t n);
void jw_u64(jw_out *j, uint64_t v);
void jw_i64(jw_out *j, int64_t v);
/* Shortest decimal that reads back as the same float (single) or double. */
void jw_f32(jw_out *j, float v);
void jw_f64(jw_out *j, double v);
void jw_bool(jw_out *j, bool v);
void jw_null(jw_out *j);

/* Finishes the document with a newline. */
void jw_done(jw_out *j);

#endif
