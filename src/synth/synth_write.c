/* synth_write.c - streams a generated model through the GGUF writer.
 *
 * Owns: the metadata of a generated model (hyperparameter keys, tokenizer,
 * chat template) and the producer/consumer pipeline that generates,
 * quantises and writes tensor data a chunk at a time. Must not know the
 * GGUF byte layout (gguf_writer does) or quantised block layouts (quant/).
 *
 * Pipeline: the data of all tensors, in file order, is cut into chunks of
 * about CHUNK_ELEMS elements (whole rows). Chunk number s goes into ring
 * slot s % n_slots. Worker threads take chunk numbers in increasing order,
 * wait until their slot is free, fill it; the calling thread writes slots
 * strictly in chunk order. Chunk contents depend only on (config, tensor,
 * rows), so the bytes written never depend on the thread count or timing.
 * Memory: n_slots output buffers plus one f32 scratch per worker (a batch
 * of rows, see BATCH_ELEMS), plus the GGUF writer's two 8 MiB buffers.
 *
 * No deadlock: a worker holding chunk s may fill its slot once chunk
 * s - n_slots is written (s < written + n_slots). The writer waits for chunk
 * w = written, the lowest unwritten one, whose worker never waits since
 * w < written + n_slots; and no other chunk maps to that slot inside the
 * window, so nothing can take it first. */
#include "synth/synth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "model/arch.h"
#include "synth/synth_vocab.h"
#include "util/checked.h"
#include "util/file.h"
#include "util/timer.h"

/* ~1 MB of f32 per chunk: large enough for efficient writes, small enough
 * that a few in flight cost nothing. */
#define CHUNK_ELEMS (1u << 18)

static uint64_t rows_per_chunk(const sl_synth_tensor *t)
{
    uint64_t r = CHUNK_ELEMS / t->ne[0];
    return r ? r : 1;
}

static uint64_t row_bytes(const sl_synth_tensor *t)
{
    uint64_t b = 0;
    SL_ASSERT(sl_type_nbytes(t->type, t->ne[0], &b));
    return b;
}

/* Converts n f32 values (whole rows) to t's type. */
static void encode(const sl_synth_tensor *t, const float *src, uint64_t n, void *dst)
{
    if (t->type == SL_TYPE_F32) {
        memcpy(dst, src, n * sizeof(float));
    } else {
        /* The fast variant (F16 included: F16C where the CPU has it): one
         * candidate scale per group. Synthetic weights gain nothing from a
         * finer search, and the full one would make a 30B-shaped model take
         * ~10x longer. Same bytes on every machine. */
        SL_ASSERT(sl_quantize_fast(t->type, src, dst, (int64_t)n));
    }
}

/* ---- metadata ---------------------------------------------------------- */

typedef struct kw {
    sl_gguf_writer *w;
    const char *arch;
    int rc;
} kw;

static void key_u32(kw *k, const char *suffix, uint32_t v)
{
    char key[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_u32(k->w, sl_arch_key(key, sizeof key, k->arch, suffix), v);
}

static void key_f32(kw *k, const char *suffix, float v)
{
    char key[128];
    if (!k->rc) k->rc = sl_gguf_writer_set_f32(k->w, sl_arch_key(key, sizeof key, k->arch, suffix), v);
}

/* qwen35moe's own keys (llama.cpp llama_model_qwen35moe::load_arch_hparams,
 * written as the converter's Qwen3NextModel / _Qwen35MRopeMixin do). */
static void write_hybrid_keys(kw *k, const sl_synth_config *c)
{
    char key[128];
    int32_t sections[4];
    sl_synth_rope_sections(c, sections);
    if (!k->rc)
        k->rc = sl_gguf_writer_set_arr_i32(
            k->w, sl_arch_key(key, sizeof key, k->arch, "rope.dimension_sections"), sections, 4);
    key_u32(k, "ssm.conv_kernel", c->ssm_conv_kernel);
    key_u32(k, "ssm.state_size", c->ssm_state);
    key_u32(k, "ssm.group_count", c->ssm_groups);
    key_u32(k, "ssm.time_step_rank", c->ssm_v_heads);
    key_u32(k, "ssm.inner_size", c->ssm_v_heads * c->ssm_state);
    key_u32(k, "full_attention_interval", c->full_attn_interval);
}

/* gemma4's own keys (llama.cpp llama_model_gemma4::load_arch_hparams, as
 * its converter writes them): per-layer K/V heads and the window pattern as
 * arrays, the sliding layers' head size and rope, the softcap. */
static void write_gemma4_keys(kw *k, const sl_synth_config *c)
{
    char key[128];
    int32_t kv[1024];
    uint8_t swa[1024];
    for (uint32_t l = 0; l < c->n_layer && l < 1024; l++) {
        swa[l] = sl_synth_gemma4_slides(c, l);
        kv[l] = (int32_t)(swa[l] ? c->n_head_kv_swa : c->n_head_kv);
    }
    if (!k->rc)
        k->rc = sl_gguf_writer_set_arr_i32(
            k->w, sl_arch_key(key, sizeof key, k->arch, SL_KEY_HEAD_COUNT_KV), kv, c->n_layer);
    sl_gguf_value pat = {.type = SL_GGUF_ARRAY};
    pat.v.arr = (sl_gguf_array){SL_GGUF_BOOL, c->n_layer, swa};
    if (!k->rc)
        k->rc = sl_gguf_writer_set_value(
            k->w, sl_arch_key(key, sizeof key, k->arch, "attention.sliding_window_pattern"), &pat);
    key_u32(k, "attention.key_length_swa", c->head_dim_swa);
    key_u32(k, "attention.value_length_swa", c->head_dim_swa);
    key_u32(k, "rope.dimension_count_swa", c->head_dim_swa);
    key_f32(k, "rope.freq_base_swa", 10000.0f);
    key_u32(k, "attention.sliding_window", c->n_swa);
    key_u32(k, "attention.shared_kv_layers", 0);
    key_u32(k, "embedding_length_per_layer_input", 0);
    key_f32(k, "final_logit_softcapping", 30.0f);
}

/* gpt-oss's own keys (llama.cpp's openai-moe loader, as its converter
 * writes them): the window (the pattern is the loader's default, period
 * 2, which the converter does not write either) and YaRN rope, factor 32
 * over an original context of 4096. */
static void write_gptoss_keys(kw *k, const sl_synth_config *c)
{
    char key[128];
    key_u32(k, "attention.sliding_window", c->n_swa);
    if (!k->rc)
        k->rc = sl_gguf_writer_set_str(
            k->w, sl_arch_key(key, sizeof key, k->arch, "rope.scaling.type"), "yarn");
    key_f32(k, "rope.scaling.factor", 32.0f);
    key_u32(k, "rope.scaling.original_context_length", 4096);
}

static int write_metadata(sl_gguf_writer *w, const sl_synth_config *c, const sl_synth_vocab *v,
                          sl_err *err)
{
    kw k = {w, c->arch, SL_OK};
    char name[128];
    snprintf(name, sizeof name, "sluice synthetic %s %s (seed %llu)",
             c->moe && !strcmp(c->arch, "llama") ? "mixtral" : c->arch, c->preset,
             (unsigned long long)c->seed);
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "general.architecture", c->arch);
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "general.name", name);
    if (!k.rc) k.rc = sl_gguf_writer_set_u32(w, "general.file_type", sl_synth_file_type(c->type));
    if (!k.rc) k.rc = sl_gguf_writer_set_u32(w, "general.quantization_version", 2);
    if (!k.rc) k.rc = sl_gguf_writer_set_u32(w, "general.alignment", SL_GGUF_DEFAULT_ALIGNMENT);

    /* llama.cpp sizes the experts of llama (Mixtral) and olmoe by
     * feed_forward_length, and those of qwen2moe/qwen3moe by
     * expert_feed_forward_length (their feed_forward_length is the dense
     * width of the original model); write both so either reading works. */
    bool ff_is_expert = c->moe && (!strcmp(c->arch, "llama") || !strcmp(c->arch, "olmoe"));
    key_u32(&k, SL_KEY_BLOCK_COUNT, c->n_layer);
    key_u32(&k, SL_KEY_CONTEXT_LENGTH, c->n_ctx);
    key_u32(&k, SL_KEY_EMBEDDING_LENGTH, c->n_embd);
    key_u32(&k, SL_KEY_FEED_FORWARD_LENGTH, ff_is_expert ? c->n_ff_exp : c->n_ff);
    key_u32(&k, SL_KEY_HEAD_COUNT, c->n_head);
    const bool gemma4 = !strcmp(c->arch, "gemma4");
    if (gemma4) write_gemma4_keys(&k, c);
    else key_u32(&k, SL_KEY_HEAD_COUNT_KV, c->n_head_kv);
    key_u32(&k, SL_KEY_KEY_LENGTH, c->head_dim);
    key_u32(&k, SL_KEY_VALUE_LENGTH, c->head_dim);
    key_f32(&k, SL_KEY_RMS_EPS, c->rms_eps);
    key_f32(&k, SL_KEY_ROPE_FREQ_BASE, c->rope_base);
    key_u32(&k, SL_KEY_ROPE_DIM, c->rope_dim ? c->rope_dim : c->head_dim);
    const bool hybrid = !strcmp(c->arch, "qwen35moe");
    if (hybrid) write_hybrid_keys(&k, c);
    if (!strcmp(c->arch, "gpt-oss")) write_gptoss_keys(&k, c);
    if (c->moe) {
        key_u32(&k, SL_KEY_EXPERT_COUNT, c->n_expert);
        key_u32(&k, SL_KEY_EXPERT_USED_COUNT, c->n_expert_used);
        key_u32(&k, SL_KEY_EXPERT_FF_LENGTH, c->n_ff_exp);
        if (c->shared_expert) key_u32(&k, SL_KEY_EXPERT_SHARED_FF_LENGTH, c->n_ff_shexp);
        /* Renormalising the top-k weights: Mixtral and Qwen3-MoE do,
         * Qwen2-MoE and OLMoE do not (model/arch.h, norm_topk_default). */
        /* qwen35moe: llama.cpp always renormalises and reads no key, and
         * its converter writes none; so neither do we. */
        const sl_arch *a = sl_arch_find(c->arch);
        char key[128];
        if (!k.rc && !hybrid)
            k.rc = sl_gguf_writer_set_bool(
                w, sl_arch_key(key, sizeof key, c->arch, SL_KEY_EXPERT_WEIGHTS_NORM),
                a ? a->norm_topk_default : false);
    }

    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (!k.rc) k.rc = sl_gguf_writer_set_str(w, "tokenizer.ggml.pre", SL_SYNTH_PRE_NAME);
    if (!k.rc)
        k.rc = sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens",
                                          (const char *const *)v->tokens, v->n_tokens);
    if (!k.rc)
        k.rc = sl_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", v->types, v->n_tokens);
    if (!k.rc)
        k.rc = sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
                                          (const char *const *)v->merges, v->n_merges);
    if (!k.rc) k.rc = sl_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos_id);
    if (!k.rc) k.rc = sl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos_id);
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

/* ---- the pipeline -------------------------------------------------------- */

enum { SLOT_FREE = 0, SLOT_BUSY, SLOT_READY };

typedef struct slot {
    uint8_t *buf;
    size_t nbytes;
    uint64_t seq;
    int state;
} slot;

typedef struct pipe {
    const sl_synth_config *c;
    const sl_synth_tensor *t;
    size_t nt;
    /* next chunk to hand out */
    size_t cur_t;
    uint64_t cur_row;
    uint64_t next_seq;
    uint64_t written;        /* chunks written so far */
    slot *slots;
    unsigned n_slots;
    bool abort;
    pthread_mutex_t mu;
    pthread_cond_t cv_ready; /* a slot became READY (writer waits) */
    pthread_cond_t cv_free;  /* a slot became FREE (workers wait) */
    size_t scratch_elems;
} pipe_t;

/* Hands out the next chunk; false when all are out. Caller holds mu (or is
 * the only thread). */
static bool next_chunk(pipe_t *p, size_t *ti, uint64_t *row0, uint64_t *nrows)
{
    if (p->cur_t >= p->nt) return false;
    const sl_synth_tensor *t = &p->t[p->cur_t];
    uint64_t rows = sl_synth_tensor_rows(t), rpc = rows_per_chunk(t);
    *ti = p->cur_t;
    *row0 = p->cur_row;
    *nrows = rows - p->cur_row < rpc ? rows - p->cur_row : rpc;
    p->cur_row += *nrows;
    if (p->cur_row == rows) {
        p->cur_t++;
        p->cur_row = 0;
    }
    return true;
}

/* Rows generated and encoded at a time inside a chunk: about 64 KB of f32,
 * so the values are still in L1/L2 when the quantiser reads them (a whole
 * 1 MB chunk would round-trip through L3), and a multiple of four rows
 * (the vector generator's batch). Rows are whole blocks, so encoding a
 * chunk in pieces gives the same bytes as encoding it at once. */
#define BATCH_ELEMS (1u << 14)

static uint64_t rows_per_batch(const sl_synth_tensor *t)
{
    uint64_t batch = (BATCH_ELEMS / t->ne[0]) & ~(uint64_t)3;
    return batch < 4 ? 4 : batch;
}

static size_t fill_chunk(const pipe_t *p, size_t ti, uint64_t row0, uint64_t nrows,
                         float *scratch, uint8_t *out)
{
    const sl_synth_tensor *t = &p->t[ti];
    const uint64_t rb = row_bytes(t);
    const uint64_t batch = rows_per_batch(t);
    for (uint64_t r = 0; r < nrows; r += batch) {
        uint64_t m = nrows - r < batch ? nrows - r : batch;
        sl_synth_gen_rows(p->c, t, row0 + r, m, scratch);
        encode(t, scratch, m * t->ne[0], out + r * rb);
    }
    return (size_t)(nrows * rb);
}

static void *worker_main(void *arg)
{
    pipe_t *p = arg;
    float *scratch = malloc(p->scratch_elems * sizeof(float));
    pthread_mutex_lock(&p->mu);
    if (!scratch) {
        p->abort = true; /* the writer reports it */
        pthread_cond_broadcast(&p->cv_ready);
        pthread_cond_broadcast(&p->cv_free);
    }
    for (;;) {
        size_t ti;
        uint64_t row0, nrows;
        if (p->abort || !next_chunk(p, &ti, &row0, &nrows)) break;
        uint64_t seq = p->next_seq++;
        slot *s = &p->slots[seq % p->n_slots];
        /* Wait for the window, not merely a free slot: otherwise chunk
         * seq + n_slots could take the slot before chunk seq does. */
        while (seq >= p->written + p->n_slots && !p->abort)
            pthread_cond_wait(&p->cv_free, &p->mu);
        if (p->abort) break;
        s->state = SLOT_BUSY;
        s->seq = seq;
        pthread_mutex_unlock(&p->mu);
        size_t nb = fill_chunk(p, ti, row0, nrows, scratch, s->buf);
        pthread_mutex_lock(&p->mu);
        s->nbytes = nb;
        s->state = SLOT_READY;
        pthread_cond_broadcast(&p->cv_ready);
    }
    pthread_mutex_unlock(&p->mu);
    free(scratch);
    return NULL;
}

typedef struct sink {
    sl_gguf_writer *w;
    uint64_t done, total;
    sl_synth_progress_fn progress;
    void *ud;
} sink;

static int sink_write(sink *k, const void *buf, size_t n, sl_err *err)
{
    int rc = sl_gguf_writer_write(k->w, buf, n, err);
    if (rc) return rc;
    k->done += n;
    if (k->progress && k->progress(k->ud, k->done, k->total))
        return sl_err_set(err, SL_EINVAL, "cancelled");
    return SL_OK;
}

static int run_inline(pipe_t *p, sink *k, sl_err *err)
{
    float *scratch = malloc(p->scratch_elems * sizeof(float));
    uint8_t *out = p->slots[0].buf;
    if (!scratch) return sl_err_set(err, SL_ENOMEM, "out of memory for the generator scratch");
    int rc = SL_OK;
    size_t ti;
    uint64_t row0, nrows;
    while (!rc && next_chunk(p, &ti, &row0, &nrows)) {
        size_t nb = fill_chunk(p, ti, row0, nrows, scratch, out);
        rc = sink_write(k, out, nb, err);
    }
    free(scratch);
    return rc;
}

static int run_threads(pipe_t *p, sink *k, uint64_t n_chunks, sl_err *err)
{
    unsigned nw = p->c->threads;
    pthread_t *th = calloc(nw, sizeof *th);
    if (!th) return sl_err_set(err, SL_ENOMEM, "out of memory for generator threads");
    unsigned started = 0;
    int rc = SL_OK;
    for (; started < nw; started++) {
        if (pthread_create(&th[started], NULL, worker_main, p)) {
            rc = sl_err_set(err, SL_ENOMEM, "cannot start generator thread %u", started);
            break;
        }
    }
    for (uint64_t seq = 0; !rc && seq < n_chunks; seq++) {
        slot *s = &p->slots[seq % p->n_slots];
        pthread_mutex_lock(&p->mu);
        while (!(s->state == SLOT_READY && s->seq == seq) && !p->abort)
            pthread_cond_wait(&p->cv_ready, &p->mu);
        bool aborted = p->abort;
        pthread_mutex_unlock(&p->mu);
        if (aborted) {
            rc = sl_err_set(err, SL_ENOMEM, "out of memory in a generator thread");
            break;
        }
        rc = sink_write(k, s->buf, s->nbytes, err);
        pthread_mutex_lock(&p->mu);
        s->state = SLOT_FREE;
        p->written = seq + 1;
        pthread_cond_broadcast(&p->cv_free);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->abort = true; /* normal end: workers found no more chunks anyway */
    pthread_cond_broadcast(&p->cv_free);
    pthread_cond_broadcast(&p->cv_ready);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    return rc;
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
    bool created = false;
    pipe_t p;
    memset(&p, 0, sizeof p);
    bool sync_init = false;
    bool direct = false;

    rc = sl_synth_plan_build(c, &ts, &nt, err);
    if (rc) goto out;

    /* Sizes, chunk counts, and that every type can be produced. */
    uint64_t total = 0, n_chunks = 0;
    size_t max_out = 0, max_in = 0, n_fallback = 0;
    for (size_t i = 0; i < nt; i++) {
        const sl_synth_tensor *t = &ts[i];
        const sl_type_traits *tr = sl_type_get(t->type);
        if (!tr || (t->type != SL_TYPE_F32 && t->type != SL_TYPE_F16 && !tr->from_float)) {
            rc = sl_err_set(err, SL_EUNSUPPORTED, "tensor '%s': no quantiser for type %s",
                            t->name, sl_type_name(t->type));
            goto out;
        }
        uint64_t rows = sl_synth_tensor_rows(t), rpc = rows_per_chunk(t), nb;
        if (!sl_mul_u64(rows, row_bytes(t), &nb) || !sl_add_u64(total, nb, &total)) {
            rc = sl_err_set(err, SL_EINVAL, "model size overflows");
            goto out;
        }
        n_chunks += (rows + rpc - 1) / rpc;
        if (rpc * row_bytes(t) > max_out) max_out = (size_t)(rpc * row_bytes(t));
        uint64_t in_rows = rpc < rows_per_batch(t) ? rpc : rows_per_batch(t);
        if (in_rows * t->ne[0] > max_in) max_in = (size_t)(in_rows * t->ne[0]);
        if (t->fell_back) n_fallback++;
    }

    rc = sl_synth_vocab_build(&vocab, c->n_vocab, err);
    if (rc) goto out;

    /* a device, FIFO or directory is never opened (and so never removed on
     * failure: as root, unlinking /dev/full would remove the device) */
    sl_file_id id;
    if ((rc = sl_file_identity(path, &id, err))) goto out;
    if (id.exists && !id.regular) {
        rc = sl_err_set(err, SL_EINVAL, "'%s' is a %s, not a regular file: a model is written to "
                        "a file", path, id.kind);
        goto out;
    }
    rc = sl_gguf_writer_open(&w, path, err);
    if (rc) goto out;
    created = true;
    /* Bypass the page cache where the file system allows: see
     * sl_gguf_writer_direct_io and docs/perf.md (mkmodel write speed). */
    direct = sl_gguf_writer_direct_io(w);
    rc = write_metadata(w, c, &vocab, err);
    if (rc) goto out;
    for (size_t i = 0; i < nt; i++) {
        rc = sl_gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne, err);
        if (rc) goto out;
    }
    sl_synth_vocab_free(&vocab); /* the writer copied it */

    p.c = c;
    p.t = ts;
    p.nt = nt;
    p.scratch_elems = max_in;
    p.n_slots = c->threads > 1 ? 2 * c->threads + 2 : 1;
    p.slots = calloc(p.n_slots, sizeof *p.slots);
    if (!p.slots) goto oom;
    for (unsigned i = 0; i < p.n_slots; i++) {
        p.slots[i].buf = malloc(max_out);
        if (!p.slots[i].buf) goto oom;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv_ready, NULL);
    pthread_cond_init(&p.cv_free, NULL);
    sync_init = true;

    sink k = {w, 0, total, progress, progress_ud};
    rc = c->threads > 1 ? run_threads(&p, &k, n_chunks, err) : run_inline(&p, &k, err);
    if (rc) goto out;
    rc = sl_gguf_writer_close(w, err);
    w = NULL;
    if (rc) goto out;

    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->n_tensors = nt;
        stats->n_fallback = n_fallback;
        stats->data_bytes = total;
        sl_file f;
        if (sl_file_open_read(&f, path, NULL) == SL_OK) {
            stats->file_bytes = f.size;
            sl_file_close(&f);
        }
        stats->seconds = sl_ns_to_s(sl_now_ns() - t0);
        stats->direct_io = direct;
    }
    goto out;

oom:
    rc = sl_err_set(err, SL_ENOMEM, "out of memory for generator buffers");
out:
    if (w) sl_gguf_writer_abort(w);
    if (rc && created) unlink(path); /* never leave a half-written model */
    if (sync_init) {
        pthread_mutex_destroy(&p.mu);
        pthread_cond_destroy(&p.cv_ready);
        pthread_cond_destroy(&p.cv_free);
    }
    if (p.slots)
        for (unsigned i = 0; i < p.n_slots; i++) free(p.slots[i].buf);
    free(p.slots);
    sl_synth_vocab_free(&vocab);
    free(ts);
    return rc;
}
