/* json_emit.c - see json_emit.h. */
#include "json_emit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"

void jw_init(jw_out *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

/* Puts v (a new reference, or NULL: out of memory) where the document is. */
static void add(jw_out *j, json_t *v)
{
    if (!v) {
        j->oom = true;
        free(j->key);
        j->key = NULL;
        return;
    }
    if (j->depth == 0) {
        SL_ASSERT(!j->root);
        j->root = v;
        return;
    }
    json_t *top = j->stack[j->depth - 1];
    if (json_is_object(top)) {
        SL_ASSERT(j->key);
        /* a key that is not valid UTF-8 is shown with U+FFFD, like strings */
        json_t *ks = sl_json_string_lossy(j->key, j->key_len);
        if (!ks || json_object_setn_new(top, json_string_value(ks), json_string_length(ks), v))
            j->oom = true;
        json_decref(ks);
        free(j->key);
        j->key = NULL;
    } else if (json_array_append_new(top, v)) {
        j->oom = true;
    }
}

static void open_c(jw_out *j, json_t *c)
{
    SL_ASSERT(j->depth < JW_MAX_DEPTH);
    if (!c) {
        j->oom = true;
        c = json_array(); /* keep the nesting balanced; dropped at the end */
        if (!c) abort();
    }
    json_incref(c);
    add(j, c);
    j->stack[j->depth++] = c;
}

static void close_c(jw_out *j)
{
    SL_ASSERT(j->depth > 0);
    json_decref(j->stack[--j->depth]);
}

void jw_obj_begin(jw_out *j) { open_c(j, json_object()); }
void jw_obj_begin_inline(jw_out *j) { open_c(j, json_object()); }
void jw_obj_end(jw_out *j) { close_c(j); }
void jw_arr_begin(jw_out *j) { open_c(j, json_array()); }
void jw_arr_begin_inline(jw_out *j) { open_c(j, json_array()); }
void jw_arr_end(jw_out *j) { close_c(j); }

void jw_keyn(jw_out *j, const char *key, size_t n)
{
    SL_ASSERT(j->depth > 0 && json_is_object(j->stack[j->depth - 1]) && !j->key);
    j->key = malloc(n + 1);
    if (!j->key) {
        j->oom = true;
        return;
    }
    memcpy(j->key, key, n);
    j->key[n] = '\0';
    j->key_len = n;
}

void jw_key(jw_out *j, const char *key) { jw_keyn(j, key, strlen(key)); }

void jw_strn(jw_out *j, const char *s, size_t n) { add(j, sl_json_string_lossy(s, n)); }

void jw_str(jw_out *j, const char *s)
{
    if (!s) add(j, json_null());
    else jw_strn(j, s, strlen(s));
}

void jw_u64(jw_out *j, uint64_t v)
{
    /* jansson's integers are signed 64-bit: larger values as reals */
    add(j, v <= INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v));
}

void jw_i64(jw_out *j, int64_t v) { add(j, json_integer((json_int_t)v)); }
void jw_f32(jw_out *j, float v) { add(j, sl_json_real_f32(v)); }
void jw_f64(jw_out *j, double v) { add(j, isfinite(v) ? json_real(v) : json_null()); }
void jw_bool(jw_out *j, bool v) { add(j, json_boolean(v)); }
void jw_null(jw_out *j) { add(j, json_null()); }

bool jw_done(jw_out *j)
{
    SL_ASSERT(j->depth == 0);
    char *text = j->oom || !j->root ? NULL : sl_json_dump_text(j->root, true);
    json_decref(j->root);
    j->root = NULL;
    if (!text) return false;
    bool ok = fputs(text, j->f) >= 0 && fputc('\n', j->f) != EOF;
    free(text);
    return ok;
}
