/* retype.c - see retype.h. */
#include "common/retype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"

/* Matrices whose name contains match; vectors (norms, biases) stay f32. */
static bool retyped(const sl_gguf_tensor *t, const char *match)
{
    return t->n_dims >= 2 && strstr(t->name.ptr, match) != NULL;
}

/* Writes tensor t's data, converted to `type` when it is not t's own. */
static int copy_data(const sl_gguf *g, sl_gguf_writer *w, const sl_gguf_tensor *t, sl_type type,
                     sl_err *err)
{
    uint8_t *raw = malloc(t->nbytes ? t->nbytes : 1);
    int rc = raw ? sl_gguf_read_tensor(g, t, 0, raw, t->nbytes, err) : -1;
    if (!rc && type != t->type) {
        const sl_type_traits *from = sl_type_get(t->type), *to = sl_type_get(type);
        uint64_t out_bytes = 0;
        float *f = malloc(t->n_elements * sizeof(float));
        uint8_t *q = sl_type_nbytes(type, t->n_elements, &out_bytes) ? malloc(out_bytes) : NULL;
        if (f && q && from->to_float && to->from_float) {
            from->to_float(raw, f, (int64_t)t->n_elements);
            to->from_float(f, q, (int64_t)t->n_elements);
            rc = sl_gguf_writer_write(w, q, out_bytes, err);
        } else {
            rc = -1;
        }
        free(f);
        free(q);
    } else if (!rc) {
        rc = sl_gguf_writer_write(w, raw, t->nbytes, err);
    }
    free(raw);
    return rc;
}

int t_gguf_rewrite(const char *src, const char *dst, const char *what, t_tensor_step declare,
                   t_tensor_step write, void *ctx)
{
    sl_err err = {0};
    sl_gguf *g = NULL;
    sl_gguf_writer *w = NULL;
    int rc = sl_gguf_open(&g, src, &err);
    if (!rc) rc = sl_gguf_writer_open(&w, dst, &err);
    for (uint64_t i = 0; !rc && i < sl_gguf_kv_count(g); i++) {
        const sl_gguf_kv *kv = sl_gguf_kv_at(g, i);
        rc = sl_gguf_writer_set_value(w, kv->key.ptr, &kv->value);
    }
    const uint64_t nt = g ? sl_gguf_tensor_count(g) : 0;
    for (uint64_t i = 0; !rc && i < nt; i++) rc = declare(ctx, g, w, sl_gguf_tensor_at(g, i), &err);
    for (uint64_t i = 0; !rc && i < nt; i++) rc = write(ctx, g, w, sl_gguf_tensor_at(g, i), &err);
    if (!rc) {
        rc = sl_gguf_writer_close(w, &err);
        w = NULL;
    }
    if (w) sl_gguf_writer_abort(w);
    if (g) sl_gguf_close(g);
    if (rc) fprintf(stderr, "  %s %s -> %s: %s\n", what, src, dst, err.msg[0] ? err.msg : "failed");
    return rc ? -1 : 0;
}

/* What a retype changes: the type of the matrices whose name holds match. */
typedef struct {
    const char *match;
    sl_type type;
} retype_ctx;

static int retype_declare(void *ctx, const sl_gguf *g, sl_gguf_writer *w, const sl_gguf_tensor *t,
                          sl_err *err)
{
    const retype_ctx *c = ctx;
    return sl_gguf_writer_add_tensor(w, t->name.ptr, retyped(t, c->match) ? c->type : t->type,
                                     t->n_dims, t->ne, err);
}

static int retype_write(void *ctx, const sl_gguf *g, sl_gguf_writer *w, const sl_gguf_tensor *t,
                        sl_err *err)
{
    const retype_ctx *c = ctx;
    return copy_data(g, w, t, retyped(t, c->match) ? c->type : t->type, err);
}

int t_gguf_retype(const char *src, const char *dst, const char *match, sl_type type)
{
    retype_ctx c = {match, type};
    return t_gguf_rewrite(src, dst, "retype", retype_declare, retype_write, &c);
}
