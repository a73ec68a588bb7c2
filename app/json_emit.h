/* json_emit.h - writing a JSON document for app/ (inspect --json) in the
 * order its parts come, on jansson (util/json.h): the calls build a tree,
 * jw_done serialises it with sl_json_dump_text (indented, shortest
 * numbers, every non-ASCII or control character escaped, so the output is
 * terminal-safe) and writes it.
 *
 * Owns: the open containers and the pending key, so callers only say what
 * comes next. Strings may hold any bytes: invalid UTF-8 becomes U+FFFD.
 * Non-finite numbers become null. Nesting deeper than JW_MAX_DEPTH, a value
 * in an object without a key, and unbalanced ends are programming errors
 * (asserted). Names start with jw_: jansson's are json_*. */
#ifndef SL_APP_JSON_EMIT_H
#define SL_APP_JSON_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/json.h"

#define JW_MAX_DEPTH 32

typedef struct jw_out {
    FILE *f;
    int depth;                     /* open containers */
    json_t *stack[JW_MAX_DEPTH];   /* stack[0]: the document once it exists */
    char *key;                     /* pending key (owned), NULL if none */
    size_t key_len;
    json_t *root;
    bool oom;                      /* a value could not be made: jw_done fails */
} jw_out;

void jw_init(jw_out *j, FILE *f);

/* Containers. The _inline variants are kept for the callers' sake: the
 * serialiser puts every container of scalars on one line. Call jw_key
 * before any value inside objects. */
void jw_obj_begin(jw_out *j);
void jw_obj_begin_inline(jw_out *j);
void jw_obj_end(jw_out *j);
void jw_arr_begin(jw_out *j);
void jw_arr_begin_inline(jw_out *j);
void jw_arr_end(jw_out *j);
void jw_key(jw_out *j, const char *key);
void jw_keyn(jw_out *j, const char *key, size_t n);

void jw_str(jw_out *j, const char *s);
void jw_strn(jw_out *j, const char *s, size_t n);
void jw_u64(jw_out *j, uint64_t v);
void jw_i64(jw_out *j, int64_t v);
/* Shortest decimal that reads back as the same float (single) or double. */
void jw_f32(jw_out *j, float v);
void jw_f64(jw_out *j, double v);
void jw_bool(jw_out *j, bool v);
void jw_null(jw_out *j);

/* Serialises the document, writes it with a newline and frees the tree.
 * Returns false when memory ran out on the way (nothing is written) or
 * the write failed. */
bool jw_done(jw_out *j);

#endif
