/* json_emit.h - a small streaming JSON writer for app/ (--json outputs).
 *
 * Owns: commas, indentation and string escaping, so callers only say what
 * comes next. Strings are emitted as valid JSON whatever bytes they hold:
 * control characters become \uXXXX and invalid UTF-8 becomes U+FFFD.
 * Non-finite numbers become null. Nesting deeper than JSON_MAX_DEPTH is a
 * programming error (asserted). */
#ifndef SL_APP_JSON_EMIT_H
#define SL_APP_JSON_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json_out {
    FILE *f;
    int depth;
    bool first[JSON_MAX_DEPTH];  /* no element yet at this level */
    bool inline_[JSON_MAX_DEPTH]; /* this container is written on one line */
    bool after_key;
} json_out;

void json_init(json_out *j, FILE *f);

/* Containers. The _inline variants keep the container on one line (short
 * arrays such as shapes). Call json_key before any value inside objects. */
void json_obj_begin(json_out *j);
void json_obj_begin_inline(json_out *j);
void json_obj_end(json_out *j);
void json_arr_begin(json_out *j);
void json_arr_begin_inline(json_out *j);
void json_arr_end(json_out *j);
void json_key(json_out *j, const char *key);

void json_str(json_out *j, const char *s);
void json_strn(json_out *j, const char *s, size_t n);
void json_u64(json_out *j, uint64_t v);
void json_i64(json_out *j, int64_t v);
/* Shortest decimal that reads back as the same float (single) or double. */
void json_f32(json_out *j, float v);
void json_f64(json_out *j, double v);
void json_bool(json_out *j, bool v);
void json_null(json_out *j);

/* Finishes the document with a newline. */
void json_done(json_out *j);

#endif
