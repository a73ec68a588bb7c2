/* server_ollama_facts.c - what the Ollama API tells of the model file
 * (server_ollama.h: srv_ollama_facts): its header's metadata, read once at
 * start-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
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
static json_t *kv_json(const sl_gguf_value *v)
{
    switch (v->type) {
    case SL_GGUF_UINT8:
    case SL_GGUF_UINT16:
    case SL_GGUF_UINT32:
    case SL_GGUF_UINT64:
        return json_integer(v->v.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v->v.u64);
    case SL_GGUF_INT8:
    case SL_GGUF_INT16:
    case SL_GGUF_INT32:
    case SL_GGUF_INT64:
        return json_integer((json_int_t)v->v.i64);
    case SL_GGUF_FLOAT32:
    case SL_GGUF_FLOAT64:
        return json_real(v->v.f64);
    case SL_GGUF_BOOL:
        return json_boolean(v->v.b);
    case SL_GGUF_STRING:
        return json_stringn(v->v.str.ptr, (size_t)v->v.str.len); /* NULL: not UTF-8 */
    default:
        return NULL;
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

json_t *srv_ollama_facts(const char *path)
{
    sl_gguf *g = NULL;
    sl_err err = {0};
    if (!path || sl_gguf_open(&g, path, &err)) return NULL;
    json_t *info = json_object();
    for (uint64_t i = 0; info && i < sl_gguf_kv_count(g); i++) {
        const sl_gguf_kv *kv = sl_gguf_kv_at(g, i);
        /* the template (and its named variants) go to "template", not here */
        if (!strncmp(kv->key.ptr, "tokenizer.chat_template", 23)) continue;
        json_t *v = kv_json(&kv->value);
        if (v) json_object_set_new(info, kv->key.ptr, v);
    }
    uint64_t n_params = 0, size = 0;
    for (uint64_t i = 0; i < sl_gguf_tensor_count(g); i++)
        n_params += sl_gguf_tensor_at(g, i)->n_elements;
    for (uint32_t i = 0; i < sl_gguf_file_count(g); i++) size += sl_gguf_file_size(g, i);
    uint64_t given = 0;
    if (sl_gguf_get_u64(g, "general.parameter_count", &given) && given) n_params = given;
    json_object_set_new(info, "general.parameter_count", json_integer((json_int_t)n_params));
    uint32_t ft = 0;
    const bool has_ft = sl_gguf_get_u32(g, "general.file_type", &ft);
    char psize[32];
    const double np = (double)n_params;
    if (np >= 1e9) snprintf(psize, sizeof psize, "%.1fB", np / 1e9);
    else if (np >= 1e6) snprintf(psize, sizeof psize, "%.1fM", np / 1e6);
    else if (np >= 1e3) snprintf(psize, sizeof psize, "%.1fK", np / 1e3);
    else snprintf(psize, sizeof psize, "%llu", (unsigned long long)n_params);
    /* a stable identity (not the file's sha256, which would mean reading
     * all of it): the name, size and header counts, four ways */
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const uint64_t counts[3] = {size, sl_gguf_kv_count(g), sl_gguf_tensor_count(g)};
    char digest[65];
    for (int k = 0; k < 4; k++) {
        uint64_t h = fnv(0xcbf29ce484222325ULL + (uint64_t)k * 0x9e3779b97f4a7c15ULL, base,
                         strlen(base));
        h = fnv(h, counts, sizeof counts);
        snprintf(digest + 16 * k, 17, "%016llx", (unsigned long long)h);
    }
    const char *arch = sl_gguf_get_str(g, "general.architecture");
    const char *tmpl = sl_gguf_get_str(g, "tokenizer.chat_template");
    json_t *f = json_pack("{s:o, s:s, s:s, s:s, s:s, s:I}", "model_info", info, "family",
                          arch ? arch : "", "parameter_size", psize, "quantization_level",
                          has_ft ? ftype_name(ft) : "unknown", "digest", digest, "size",
                          (json_int_t)size);
    if (f && tmpl) {
        json_t *t = json_string(tmpl);
        if (t) json_object_set_new(f, "template", t);
    }
    sl_gguf_close(g);
    return f;
}
