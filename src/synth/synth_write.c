/* synth_write.c - streams a generated model through the GGUF writer.
 *
 * Owns: the metadata of a generated model (hyperparameter keys, tokenizer,
 * chat template) and the file: written beside its name and renamed over
 * it when complete (gguf_writer.h), so a failure leaves nothing. Must
 * not know the GGUF byte layout (gguf_writer does) or quantised block
 * layouts (quant/).
 *
 * The data pipeline is synth_stream.c's, shared with synth_ds.c. */
#include "synth/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "model/arch.h"
#include "synth/synth_keys.h"
#include "synth/synth_stream.h"
#include "synth/synth_vocab.h"
#include "util/checked.h"
#include "util/file.h"
#include "util/timer.h"

/* ---- metadata ---------------------------------------------------------- */

/* qwen35moe's own keys (llama.cpp llama_model_qwen35moe::load_arch_hparams,
 * written as the converter's Qwen3NextModel / _Qwen35MRopeMixin do). */
static void write_hybrid_keys(sl_synth_keys *k, const sl_synth_config *c)
{
    int32_t sections[4];
    sl_synth_rope_sections(c, sections);
    sl_synth_key_i32s(k, "rope.dimension_sections", sections, 4);
    sl_synth_key_u32(k, "ssm.conv_kernel", c->ssm_conv_kernel);
    sl_synth_key_u32(k, "ssm.state_size", c->ssm_state);
    sl_synth_key_u32(k, "ssm.group_count", c->ssm_groups);
    sl_synth_key_u32(k, "ssm.time_step_rank", c->ssm_v_heads);
    sl_synth_key_u32(k, "ssm.inner_size", c->ssm_v_heads * c->ssm_state);
    sl_synth_key_u32(k, "full_attention_interval", c->full_attn_interval);
}

/* gemma4's own keys (llama.cpp llama_model_gemma4::load_arch_hparams, as
 * its converter writes them): per-layer K/V heads and the window pattern as
 * arrays, the sliding layers' head size and rope, the softcap. */
static void write_gemma4_keys(sl_synth_keys *k, const sl_synth_config *c)
{
    int32_t kv[1024];
    uint8_t swa[1024];
    for (uint32_t l = 0; l < c->n_layer && l < 1024; l++) {
        swa[l] = sl_synth_gemma4_slides(c, l);
        kv[l] = (int32_t)(swa[l] ? c->n_head_kv_swa : c->n_head_kv);
    }
    sl_synth_key_i32s(k, SL_KEY_HEAD_COUNT_KV, kv, c->n_layer);
    sl_gguf_value pat = {.type = SL_GGUF_ARRAY};
    pat.v.arr = (sl_gguf_array){SL_GGUF_BOOL, c->n_layer, swa};
    sl_synth_key_value(k, "attention.sliding_window_pattern", &pat);
    sl_synth_key_u32(k, "attention.key_length_swa", c->head_dim_swa);
    sl_synth_key_u32(k, "attention.value_length_swa", c->head_dim_swa);
    sl_synth_key_u32(k, "rope.dimension_count_swa", c->head_dim_swa);
    sl_synth_key_f32(k, "rope.freq_base_swa", 10000.0f);
    sl_synth_key_u32(k, "attention.sliding_window", c->n_swa);
    sl_synth_key_u32(k, "attention.shared_kv_layers", 0);
    sl_synth_key_u32(k, "embedding_length_per_layer_input", 0);
    sl_synth_key_f32(k, "final_logit_softcapping", 30.0f);
}

/* gpt-oss's own keys (llama.cpp's openai-moe loader, as its converter
 * writes them): the window (the pattern is the loader's default, period
 * 2, which the converter does not write either) and YaRN rope, factor 32
 * over an original context of 4096. */
static void write_gptoss_keys(sl_synth_keys *k, const sl_synth_config *c)
{
    sl_synth_key_u32(k, "attention.sliding_window", c->n_swa);
    sl_synth_key_str(k, "rope.scaling.type", "yarn");
    sl_synth_key_f32(k, "rope.scaling.factor", 32.0f);
    sl_synth_key_u32(k, "rope.scaling.original_context_length", 4096);
}

static int write_metadata(sl_gguf_writer *w, const sl_synth_config *c, const sl_synth_vocab *v,
                          sl_err *err)
{
    sl_synth_keys k = {w, c->arch, SL_OK};
    char name[128];
    snprintf(name, sizeof name, "sluice synthetic %s %s (seed %llu)",
             c->moe && !strcmp(c->arch, "llama") ? "mixtral" : c->arch, c->preset,
             (unsigned long long)c->seed);
    sl_synth_keys_general(&k, name, c->type);

    /* llama.cpp sizes the experts of llama (Mixtral) and olmoe by
     * feed_forward_length, and those of qwen2moe/qwen3moe by
     * expert_feed_forward_length (their feed_forward_length is the dense
     * width of the original model); write both so either reading works. */
    bool ff_is_expert = c->moe && (!strcmp(c->arch, "llama") || !strcmp(c->arch, "olmoe"));
    sl_synth_key_u32(&k, SL_KEY_BLOCK_COUNT, c->n_layer);
    sl_synth_key_u32(&k, SL_KEY_CONTEXT_LENGTH, c->n_ctx);
    sl_synth_key_u32(&k, SL_KEY_EMBEDDING_LENGTH, c->n_embd);
    sl_synth_key_u32(&k, SL_KEY_FEED_FORWARD_LENGTH, ff_is_expert ? c->n_ff_exp : c->n_ff);
    sl_synth_key_u32(&k, SL_KEY_HEAD_COUNT, c->n_head);
    const bool gemma4 = !strcmp(c->arch, "gemma4");
    if (gemma4) write_gemma4_keys(&k, c);
    else sl_synth_key_u32(&k, SL_KEY_HEAD_COUNT_KV, c->n_head_kv);
    sl_synth_key_u32(&k, SL_KEY_KEY_LENGTH, c->head_dim);
    sl_synth_key_u32(&k, SL_KEY_VALUE_LENGTH, c->head_dim);
    sl_synth_key_f32(&k, SL_KEY_RMS_EPS, c->rms_eps);
    sl_synth_key_f32(&k, SL_KEY_ROPE_FREQ_BASE, c->rope_base);
    sl_synth_key_u32(&k, SL_KEY_ROPE_DIM, c->rope_dim ? c->rope_dim : c->head_dim);
    const bool hybrid = !strcmp(c->arch, "qwen35moe");
    if (hybrid) write_hybrid_keys(&k, c);
    if (!strcmp(c->arch, "gpt-oss")) write_gptoss_keys(&k, c);
    if (c->moe) {
        sl_synth_key_u32(&k, SL_KEY_EXPERT_COUNT, c->n_expert);
        sl_synth_key_u32(&k, SL_KEY_EXPERT_USED_COUNT, c->n_expert_used);
        sl_synth_key_u32(&k, SL_KEY_EXPERT_FF_LENGTH, c->n_ff_exp);
        if (c->shared_expert) sl_synth_key_u32(&k, SL_KEY_EXPERT_SHARED_FF_LENGTH, c->n_ff_shexp);
        /* Renormalising the top-k weights: Mixtral and Qwen3-MoE do,
         * Qwen2-MoE and OLMoE do not (model/arch.h, norm_topk_default). */
        /* qwen35moe: llama.cpp always renormalises and reads no key, and
         * its converter writes none; so neither do we. */
        const sl_arch *a = sl_arch_find(c->arch);
        if (!hybrid) sl_synth_key_bool(&k, SL_KEY_EXPERT_WEIGHTS_NORM, a ? a->norm_topk_default : false);
    }

    sl_synth_keys_vocab(&k, v, SL_SYNTH_PRE_NAME);
    if (!k.rc)
        k.rc = sl_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->pad_id);
    if (!k.rc) k.rc = sl_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false);
    if (!k.rc) k.rc = sl_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "tokenizer.chat_template", sl_synth_chat_template());

    /* Provenance, so a benchmark can tell whether a cached model matches. */
    if (!k.rc) k.rc = sl_gguf_writer_set_u64(w, "sluice.synth.seed", c->seed);
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "sluice.synth.preset", c->preset);
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "sluice.synth.type", sl_synth_type_name(c->type));
    if (k.rc) return sl_err_set(err, k.rc, "cannot set model metadata (out of memory?)");
    return SL_OK;
}

int sl_synth_write(const sl_synth_config *c, const char *path,
                   sl_synth_progress_fn progress, void *progress_ud,
                   sl_synth_stats *stats, sl_err *err)
{
    uint64_t t0 = sl_now_ns();
    int rc = sl_synth_config_validate(c, err);
    if (rc) return rc;

    sl_synth_tensor *ts = NULL;
    size_t nt = 0;
    sl_synth_vocab vocab;
    memset(&vocab, 0, sizeof vocab);
    sl_gguf_writer *w = NULL;
    bool direct = false;

    rc = sl_synth_plan_build(c, &ts, &nt, err);
    if (rc) goto out;

    /* Sizes, chunk counts, and that every type can be produced. */
    sl_synth_stream_size sz;
    if ((rc = sl_synth_stream_measure(ts, nt, &sz, err))) goto out;

    rc = sl_synth_vocab_build(&vocab, c->n_vocab, err);
    if (rc) goto out;

    /* a device, FIFO, directory, a file other than a GGUF or an open input
     * is refused by the writer (util/out_file.h) */
    rc = sl_gguf_writer_open(&w, path, err);
    if (rc) goto out;
    /* Bypass the page cache where the file system allows: see
     * sl_gguf_writer_direct_io and docs/perf-log.md (mkmodel write speed). */
    direct = !c->holes && sl_gguf_writer_direct_io(w);
    rc = write_metadata(w, c, &vocab, err);
    if (rc) goto out;
    for (size_t i = 0; i < nt; i++) {
        rc = sl_gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne, err);
        if (rc) goto out;
    }
    sl_synth_vocab_free(&vocab); /* the writer copied it */

    rc = c->holes ? sl_gguf_writer_write_holes(w, err)
                  : sl_synth_stream_write(w, c, ts, nt, &sz, progress, progress_ud, err);
    if (rc) goto out;
    rc = sl_gguf_writer_close(w, err);
    w = NULL;
    if (rc) goto out;

    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->n_tensors = nt;
        stats->n_fallback = sz.n_fallback;
        stats->data_bytes = sz.data_bytes;
        sl_file f;
        if (sl_file_open_read(&f, path, NULL) == SL_OK) {
            stats->file_bytes = f.size;
            sl_file_close(&f);
        }
        stats->seconds = sl_ns_to_s(sl_now_ns() - t0);
        stats->direct_io = direct;
    }
out:
    if (w) sl_gguf_writer_abort(w);
    sl_synth_vocab_free(&vocab);
    free(ts);
    return rc;
}
