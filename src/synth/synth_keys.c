/* synth_keys.c - see synth_keys.h. */
#include "synth/synth_keys.h"

#include "gguf/gguf.h"
#include "model/arch.h"

/* k's "ARCH.SUFFIX" in buf. */
static const char *key(char buf[128], const sl_synth_keys *k, const char *suffix)
{
    return sl_arch_key(buf, 128, k->arch, suffix);
}

void sl_synth_key_u32(sl_synth_keys *k, const char *suffix, uint32_t v)
{
    char b[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_u32(k->w, key(b, k, suffix), v);
}

void sl_synth_key_f32(sl_synth_keys *k, const char *suffix, float v)
{
    char b[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_f32(k->w, key(b, k, suffix), v);
}

void sl_synth_key_bool(sl_synth_keys *k, const char *suffix, bool v)
{
    char b[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_bool(k->w, key(b, k, suffix), v);
}

void sl_synth_key_str(sl_synth_keys *k, const char *suffix, const char *v)
{
    char b[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_str(k->w, key(b, k, suffix), v);
}

void sl_synth_key_i32s(sl_synth_keys *k, const char *suffix, const int32_t *v, uint64_t n)
{
    char b[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_arr_i32(k->w, key(b, k, suffix), v, n);
}

void sl_synth_key_value(sl_synth_keys *k, const char *suffix, const sl_gguf_value *v)
{
    char b[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_value(k->w, key(b, k, suffix), v);
}

void sl_synth_keys_general(sl_synth_keys *k, const char *name, sl_synth_type type)
{
    sl_gguf_writer *w = k->w;
    if (!k->rc) k->rc = sl_gguf_writer_set_str(w, "general.architecture", k->arch);
    if (!k->rc) k->rc = sl_gguf_writer_set_str(w, "general.name", name);
    if (!k->rc) k->rc = sl_gguf_writer_set_u32(w, "general.file_type", sl_synth_file_type(type));
    if (!k->rc) k->rc = sl_gguf_writer_set_u32(w, "general.quantization_version", 2);
    if (!k->rc) k->rc = sl_gguf_writer_set_u32(w, "general.alignment", SL_GGUF_DEFAULT_ALIGNMENT);
}

void sl_synth_keys_vocab(sl_synth_keys *k, const sl_synth_vocab *v, const char *pre)
{
    sl_gguf_writer *w = k->w;
    if (!k->rc) k->rc = sl_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (!k->rc) k->rc = sl_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    if (!k->rc)
        k->rc = sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens",
                                           (const char *const *)v->tokens, v->n_tokens);
    if (!k->rc)
        k->rc = sl_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", v->types, v->n_tokens);
    if (!k->rc)
        k->rc = sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
                                           (const char *const *)v->merges, v->n_merges);
    if (!k->rc)
        k->rc = sl_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos_id);
    if (!k->rc)
        k->rc = sl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos_id);
}
