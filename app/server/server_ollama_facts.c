/* server_ollama_facts.c - what the Ollama API tells of the model file
 * (server_ollama.h: srv_ollama_facts): its header's metadata
 * (sl_model_meta_*), gathered once at start-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_ollama.h"

/* llama.cpp's llama_ftype names (general.file_type). */
static const char *ftype_name(uint32_t t)
{
    static const char *const names[] = {
        [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [7] = "Q8_0", [8] = "Q5_0",
        [9] = "Q5_1", [10] = "Q2_K", [11] = "Q3_K_S", [12] = "Q3_K_M", [13] = "Q3_K_L",
        [14] = "Q4_K_S", [15] = "Q4_K_M", [16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K",
        [19] = "IQ2_XXS", [20] = "IQ2_XS", [21] = "Q2_K_S", [22] = "IQ3_XS", [23] = "IQ3_XXS",
        [24] = "IQ1_S", [25] = "IQ4_NL", [26] = "IQ3_S", [27] = "IQ3_M", [28] = "IQ2_S",
        [29] = "IQ2_M", [30] = "IQ4_XS", [31] = "IQ1_M", [32] = "BF16", [36] = "TQ1_0",
        [37] = "TQ2_0", [38] = "MXFP4_MOE",
    };
    return t < sizeof names / sizeof names[0] && names[t] ? names[t] : "unknown";
}

/* A metadata value as JSON (scalars only; NULL for arrays). */
static json_t *kv_json(const sl_meta_value *v)
{
    switch (v->kind) {
    case SL_META_UINT:
        return json_integer(v->u > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v->u);
    case SL_META_INT:
        return json_integer((json_int_t)v->i);
    case SL_META_FLOAT:
        return json_real(v->f);
    case SL_META_BOOL:
        return json_boolean(v->b);
    case SL_META_STRING:
        return json_stringn(v->str, v->len); /* NULL: not UTF-8 */
    default:
        return NULL;
    }
}

/* The value of key when it is a string, else NULL. */
/* The value of key when it is an integer in [0, max] (of any width). */
static bool meta_uint(const sl_model *m, const char *key, uint64_t max, uint64_t *out)
{
    sl_meta_value v;
    if (!sl_model_meta_get(m, key, &v)) return false;
    if (v.kind == SL_META_INT && v.i >= 0) v.u = (uint64_t)v.i;
    else if (v.kind != SL_META_UINT) return false;
    if (v.u > max) return false;
    *out = v.u;
    return true;
}

static const char *meta_str(const sl_model *m, const char *key)
{
    sl_meta_value v;
    return sl_model_meta_get(m, key, &v) && v.kind == SL_META_STRING ? v.str : NULL;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

json_t *srv_ollama_facts(const sl_model *m, const char *path)
{
    if (!m || !path) return NULL;
    json_t *info = json_object();
    const uint64_t n_kv = sl_model_meta_count(m);
    for (uint64_t i = 0; info && i < n_kv; i++) {
        const char *key;
        sl_meta_value mv;
        sl_model_meta_at(m, i, &key, &mv);
        /* the template (and its named variants) go to "template", not here */
        if (!strncmp(key, "tokenizer.chat_template", 23)) continue;
        json_t *v = kv_json(&mv);
        if (v) json_object_set_new(info, key, v);
    }
    uint64_t n_params, size, n_tensors;
    sl_model_file_totals(m, &size, &n_tensors, &n_params);
    uint64_t given = 0, ft = 0;
    if (meta_uint(m, "general.parameter_count", UINT64_MAX, &given) && given) n_params = given;
    json_object_set_new(info, "general.parameter_count", json_integer((json_int_t)n_params));
    const bool has_ft = meta_uint(m, "general.file_type", UINT32_MAX, &ft);
    char psize[32];
    const double np = (double)n_params;
    if (np >= 1e9) snprintf(psize, sizeof psize, "%.1fB", np / 1e9);
    else if (np >= 1e6) snprintf(psize, sizeof psize, "%.1fM", np / 1e6);
    else if (np >= 1e3) snprintf(psize, sizeof psize, "%.1fK", np / 1e3);
    else snprintf(psize, sizeof psize, "%llu", (unsigned long long)n_params);
    /* a stable identity (not the file's sha256, which would mean reading
     * all of it): the name, size and header counts, four ways */
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const uint64_t counts[3] = {size, n_kv, n_tensors};
    char digest[65];
    for (int k = 0; k < 4; k++) {
        uint64_t h = fnv(0xcbf29ce484222325ULL + (uint64_t)k * 0x9e3779b97f4a7c15ULL, base,
                         strlen(base));
        h = fnv(h, counts, sizeof counts);
        snprintf(digest + 16 * k, 17, "%016llx", (unsigned long long)h);
    }
    const char *arch = meta_str(m, "general.architecture");
    const char *tmpl = meta_str(m, "tokenizer.chat_template");
    json_t *f = json_pack("{s:o, s:s, s:s, s:s, s:s, s:I}", "model_info", info, "family",
                          arch ? arch : "", "parameter_size", psize, "quantization_level",
                          has_ft ? ftype_name((uint32_t)ft) : "unknown", "digest", digest, "size",
                          (json_int_t)size);
    if (f && tmpl) {
        json_t *t = json_string(tmpl);
        if (t) json_object_set_new(f, "template", t);
    }
    return f;
}
