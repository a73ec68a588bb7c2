/* tok_gguf.c - reads the tokenizer.ggml.* metadata of a GGUF file into a
 * vocabulary description and builds the tokenizer from it.
 *
 * Knows the GGUF key names and value types of tokenizers, and nothing about
 * how tokenizers work (tokenizer.c and the encoders do). */
#include "tok/tok_internal.h"

#include <stdlib.h>
#include <string.h>

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

/* A string array under key, converted to sl_tok_str (pointers into g).
 * *n = 0 and *out = NULL if absent and !required. */
static int get_strings(const sl_gguf *g, const char *key, bool required, sl_tok_str **out,
                       uint32_t *n, sl_err *err)
{
    *out = NULL;
    *n = 0;
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv) {
        if (!required) return SL_OK;
        return sl_err_set(err, SL_EFORMAT, "the file has no %s", key);
    }
    const sl_gguf_array *a = sl_gguf_get_arr(g, key);
    if (!a || a->type != SL_GGUF_STRING)
        return sl_err_set(err, SL_EFORMAT, "%s at byte %llu is a %s, expected an array of strings",
                          key, (unsigned long long)kv->file_offset,
                          a ? "array of non-strings" : sl_gguf_vtype_name(kv->value.type));
    if (a->n > (uint64_t)INT32_MAX)
        return sl_err_set(err, SL_EFORMAT, "%s has %llu entries, more than a vocabulary can hold",
                          key, (unsigned long long)a->n);
    sl_tok_str *v = malloc((size_t)(a->n ? a->n : 1) * sizeof *v);
    if (!v) return sl_err_set(err, SL_ENOMEM, "out of memory reading %s", key);
    for (uint64_t i = 0; i < a->n; i++) {
        const sl_gguf_str *s = sl_gguf_arr_str(a, i);
        if (!s || s->len > (uint64_t)SIZE_MAX) {
            free(v);
            return sl_err_set(err, SL_EFORMAT, "%s[%llu] is not a string", key,
                              (unsigned long long)i);
        }
        v[i].ptr = s->ptr;
        v[i].len = (size_t)s->len;
    }
    *out = v;
    *n = (uint32_t)a->n;
    return SL_OK;
}

/* A per-token numeric array (scores or types) with at least n entries: a
 * shorter one is an error (llama.cpp refuses it too, "Index out of array
 * bounds"), entries past n are ignored (as llama.cpp ignores them). */
static int get_numbers(const sl_gguf *g, const char *key, uint32_t n, bool as_float,
                       void **out, sl_err *err)
{
    *out = NULL;
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv) return SL_OK;
    const sl_gguf_array *a = sl_gguf_get_arr(g, key);
    bool ok_type = a && (as_float ? (a->type == SL_GGUF_FLOAT32 || a->type == SL_GGUF_INT32)
                                  : a->type == SL_GGUF_INT32);
    if (!ok_type)
        return sl_err_set(err, SL_EFORMAT, "%s at byte %llu has type %s, expected an array of %s",
                          key, (unsigned long long)kv->file_offset,
                          a ? sl_gguf_vtype_name(a->type) : sl_gguf_vtype_name(kv->value.type),
                          as_float ? "float32" : "int32");
    if (a->n < n)
        return sl_err_set(err, SL_EFORMAT,
                          "%s has %llu entries, expected %u (one per token of " KEY_TOKENS ")",
                          key, (unsigned long long)a->n, n);
    if (as_float) {
        float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v) return sl_err_set(err, SL_ENOMEM, "out of memory reading %s", key);
        for (uint32_t i = 0; i < n; i++) {
            double d = 0;
            sl_gguf_arr_f64(a, i, &d);
            v[i] = (float)d;
        }
        *out = v;
    } else {
        int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v) return sl_err_set(err, SL_ENOMEM, "out of memory reading %s", key);
        for (uint32_t i = 0; i < n; i++) {
            int64_t x = 0;
            sl_gguf_arr_i64(a, i, &x);
            v[i] = (x >= INT32_MIN && x <= INT32_MAX) ? (int32_t)x : SL_TOK_TYPE_UNDEFINED;
        }
        *out = v;
    }
    return SL_OK;
}

/* An optional token id: -1 if absent; an error if present but not an
 * unsigned 32-bit integer. */
static int get_id(const sl_gguf *g, const char *key, int64_t *out, sl_err *err)
{
    *out = -1;
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv) return SL_OK;
    uint32_t v;
    if (!sl_gguf_get_u32(g, key, &v))
        return sl_err_set(err, SL_EFORMAT, "%s at byte %llu is a %s, expected a token id (uint32)",
                          key, (unsigned long long)kv->file_offset,
                          sl_gguf_vtype_name(kv->value.type));
    *out = v;
    return SL_OK;
}

static int get_flag(const sl_gguf *g, const char *key, int *out, sl_err *err)
{
    *out = -1;
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv) return SL_OK;
    bool b;
    if (!sl_gguf_get_bool(g, key, &b))
        return sl_err_set(err, SL_EFORMAT, "%s at byte %llu is a %s, expected a bool", key,
                          (unsigned long long)kv->file_offset, sl_gguf_vtype_name(kv->value.type));
    *out = b;
    return SL_OK;
}

int sl_tokenizer_load(sl_tokenizer **out, const sl_gguf *g, sl_err *err)
{
    int rc;
    sl_tok_spec spec;
    sl_tok_str *tokens = NULL, *merges = NULL;
    float *scores = NULL;
    int32_t *types = NULL;
    *out = NULL;
    sl_tok_spec_init(&spec);

    const sl_gguf_kv *kv = sl_gguf_find(g, KEY_MODEL);
    spec.model = sl_gguf_get_str(g, KEY_MODEL);
    if (!spec.model) {
        rc = kv ? sl_err_set(err, SL_EFORMAT, "%s at byte %llu is a %s, expected a string",
                             KEY_MODEL, (unsigned long long)kv->file_offset,
                             sl_gguf_vtype_name(kv->value.type))
                : sl_err_set(err, SL_EFORMAT, "the file has no tokenizer (%s is missing)",
                             KEY_MODEL);
        goto done;
    }
    spec.pre = sl_gguf_get_str(g, KEY_PRE);
    spec.name = sl_gguf_get_str(g, "general.name");

    if ((rc = get_strings(g, KEY_TOKENS, true, &tokens, &spec.n_tokens, err))) goto done;
    if (spec.n_tokens == 0) {
        rc = sl_err_set(err, SL_EFORMAT, "%s at byte %llu is an empty array: the vocabulary has "
                        "no tokens", KEY_TOKENS,
                        (unsigned long long)sl_gguf_find(g, KEY_TOKENS)->file_offset);
        goto done;
    }
    spec.tokens = tokens;
    if ((rc = get_numbers(g, KEY_SCORES, spec.n_tokens, true, (void **)&scores, err))) goto done;
    spec.scores = scores;
    if ((rc = get_numbers(g, KEY_TYPES, spec.n_tokens, false, (void **)&types, err))) goto done;
    spec.types = types;
    if (!strcmp(spec.model, "gpt2") || !strcmp(spec.model, "gemma4")) {
        /* Kimi K2's files may leave the merges out (llama.cpp accepts it:
         * every piece is then looked up whole or falls back to bytes) */
        bool need = !(spec.pre && !strcmp(spec.pre, "kimi-k2") && !strcmp(spec.model, "gpt2"));
        if ((rc = get_strings(g, KEY_MERGES, need, &merges, &spec.n_merges, err))) goto done;
        spec.merges = merges;
    }

    if ((rc = get_id(g, "tokenizer.ggml.bos_token_id", &spec.bos, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.eos_token_id", &spec.eos, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.eot_token_id", &spec.eot, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.eom_token_id", &spec.eom, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.fim_pad_token_id", &spec.fim_pad, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.fim_rep_token_id", &spec.fim_rep, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.fim_sep_token_id", &spec.fim_sep, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.unknown_token_id", &spec.unk, err))) goto done;
    if ((rc = get_id(g, "tokenizer.ggml.padding_token_id", &spec.pad, err))) goto done;
    if ((rc = get_flag(g, "tokenizer.ggml.add_bos_token", &spec.add_bos, err))) goto done;
    if ((rc = get_flag(g, "tokenizer.ggml.add_eos_token", &spec.add_eos, err))) goto done;
    if ((rc = get_flag(g, "tokenizer.ggml.add_space_prefix", &spec.add_space_prefix, err)))
        goto done;

    rc = sl_tokenizer_build(out, &spec, err);
done:
    free(tokens);
    free(merges);
    free(scores);
    free(types);
    return rc;
}
