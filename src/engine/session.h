/* session.h - internals of sl_session (see include/sluice.h for the API).
 *
 * Owns: the KV cache, every scratch buffer of the forward pass and the
 * logits, all allocated in sl_session_create, so evaluation allocates
 * nothing. The compute thread pool is the model's (shared by its sessions). Must not know: files, tokenizers, sampling. */
#ifndef SL_ENGINE_SESSION_H
#define SL_ENGINE_SESSION_H

#include "engine/mixer.h"
#include "engine/session_layout.h"
#include "model/model.h"
#include "ops/attn_kernels.h"
#include "ops/ops.h"
#include "sluice.h"
#include "util/pool.h"

struct sl_session {
    sl_model *m;
    sl_pool *pool;  /* the model's (m->rt->pool), not owned */
    const sl_attn_kernels *attn_k; /* attention inner loops for this CPU */
    int n_ctx;
    int n_past;
    int n_batch_max;
    bool all_logits;
    int n_logit_rows;    /* rows of logits kept from a batch's end (all_logits: n_batch_max) */
    int out_from;        /* all_logits: the first position whose logits are asked
                            (sl_session_set_outputs_from; engine/out_rows.h) */
    int logits_row0;     /* all_logits: the batch row of s->logits' row 0 */
    /* The cache types (kv_rows.h): attention layers' K and V rows; the
     * kinds without a V (mixer.h's SL_CACHE_K_PLAIN) keep type_k's values,
     * kv_elem bytes each: 4 for f32, else 2 (f16) */
    sl_kv_type type_k, type_v;
    size_t kv_elem;
    bool attn_rot;             /* quantised K / V rows stored rotated (mix_attn.c) */
    int decode_split;          /* sl_session_params.decode_split, resolved (mix_attn.c) */
    /* The attention kernel of each row, by the rule of sl_session_set_prompt
     * (sl_session_row_kind): prompt_n is the current reply's prompt extent
     * (-1: none given, every row tiled); row_kind[p] (n_ctx bytes, its own
     * allocation) the SL_ROW_* the row at position p took when it was
     * evaluated, so a kept prefix can be checked against another prompt. */
    int prompt_n;
    uint8_t *row_kind;
    /* The product forms (ops.h SL_MM_FORM_* bits) of the mm_form_n rows
     * whose activations the next products take, from row 0 of the batch:
     * the batch's row kinds (set by sl_session_batch_begin), or rows a
     * caller picked (the lm head's); fwd_mm.h hands them to the products
     * of exactly that many rows. form_buf: n_batch_max bytes (its own
     * allocation, after row_kind's) for forms gathered from elsewhere. */
    const uint8_t *mm_form;
    int mm_form_n;
    uint8_t *form_buf;
    int mm_heed;         /* the SL_MM_FORM_* bits the model's matrices heed (row kinds keep those) */
    /* Every buffer below lives in one arena sized by session_layout.c,
     * each followed by a guard zone checked after every batch. */
    sl_session_layout layout;
    uint8_t *arena;      /* aligned start of the buffers */
    void *arena_mem;     /* what was allocated (freed) */
    void *k_cache;       /* every layer's first state stream (K), back to back */
    void *v_cache;       /* every layer's second state stream (V) */
    struct sl_layer_state *layer_state; /* (n_layer) each layer's streams in them */
    float *seq_state;    /* every recurrent layer's sequence state, back to back */
    float *seq_snap;     /* a copy of it at position snap_pos (the end of the
                            last multi-token batch), to rewind to */
    int snap_pos;        /* -1: no snapshot */

    /* Activations of a micro-batch of B = n_batch_max tokens, row-major. */
    float *x;            /* (B, n_embd) residual stream */
    float *xb;           /* (B, n_embd) normalised input of a block */
    float *q;            /* (B, widest n_head * head_dim) */
    float *k;            /* (B, widest n_head_kv * head_dim) */
    float *v;            /* (B, widest n_head_kv * head_dim_v) */
    float *attn_out;     /* (B, n_head * head_dim_v) */
    float *kind_scratch; /* the mixers' and layer kinds' own scratch, as each
                            declares it (sl_mixer_ops.scratch_floats) */
    const int32_t *tokens; /* the batch's token ids during sl_forward_batch (hash routing) */
    float *ffn_out;      /* (B, n_embd) */
    float *tmp;          /* (B, n_embd) one projection's output before scatter */
    float *hb;           /* (H, ff) gate activations, then SwiGLU's output */
    float *hb2;          /* (H, ff) up activations; H = B * n_expert_used for
                          * experts (rows grouped by expert), B otherwise */
    float *att;          /* (nth, layout.att_floats) attention block scratch, per thread */
    float *router;       /* (B, n_expert) router probabilities */
    int *topk_ids;       /* (B, n_expert_used) chosen experts, by rank */
    float *topk_w;       /* (B, n_expert_used) their weights */
    float *exp_out;      /* (B * n_expert_used, n_embd) expert outputs, grouped rows */
    int *moe_count;      /* (n_expert + 1) tokens routed to each expert, then offsets */
    int *moe_cursor;     /* (n_expert) fill position while grouping; expert ids after */
    int *moe_slot;       /* (B * n_expert_used) grouped row -> token*K + rank */
    int *moe_pos;        /* (B * n_expert_used) token*K + rank -> grouped row */
    int *moe_rows;       /* (B * n_expert_used) grouped rows of the experts at hand */
    struct sl_expert_w *moe_xw; /* (n_expert) the experts being computed */
    float *pf_x;         /* (n_embd) the next layer's predicted FFN input */
    float *pf_logits;    /* (n_expert) its router's logits */
    float *pf_w;         /* (n_expert_used) scratch of the prediction's top-k */
    int *pf_ids;         /* (n_expert_used) the experts predicted */
    const void **moe_acts_g; /* (B * K) grouped row -> its token's activations for gate */
    const void **moe_acts_u; /* (B * K) the same for up */
    const void **down_acts;  /* (H) prepared SwiGLU outputs, by row of hb */
    uint8_t *act_down;   /* (H, down stride) the activations down_acts point into */
    const void **acts;   /* (2, B) pointers into act */
    uint8_t *act;        /* (sets, B, act_stride) quantised activations */
    size_t act_stride;
    struct sl_mm_item *mm_items; /* (mm_cap) room for the products of one job */
    int *mm_c0;          /* (mm_cap + 1) a job's first chunk of each product */
    int mm_cap;
    float *row_tmp;      /* (nth, max cols) dequantised rows for fallbacks */
    size_t row_tmp_stride;
    float *logits;       /* (B or 1, n_vocab) */
    int n_logits;        /* rows of logits valid after the last eval */
    /* --route-trace replayed per session (sl_session_set_route_step):
     * route_step >= 0 is the trace step of this session's next token and
     * advances with its batches, the trace's shared cursor untouched; -1
     * (the default): the shared cursor. route_rows: set only during a
     * multi-session step, on the batch session, the trace step of each row. */
    int64_t route_step;
    /* Called by sl_forward_batch after the layers, before the head, with
     * the batch's tokens and n rows of the final residual stream in s->x
     * (read only) at positions n_past ..: the MTP drafter's (draft_mtp.c),
     * which fills its block's cache. NULL: none. Fails as the drafter's
     * own forward pass does; the batch then fails. */
    int (*on_hidden)(void *ud, sl_session *s, const int32_t *tokens, int n, sl_err *err);
    void *on_hidden_ud;
    const int64_t *route_rows;
    /* The drafting policy of its replies (generate.c), kept across them so
     * that what one reply measured serves the next; made at the first
     * drafting reply, for the drafter spec_kind / spec_src (a new drafter
     * or maximum starts it afresh). Owned; NULL: none yet. */
    struct sl_spec_policy *spec;
    int spec_kind;
    const void *spec_src;
    uint64_t scratch_bytes; /* the arena but the KV cache (what the memory
                               plan reserves for a session) */
    /* The model's identity in saved state files (session_save.c), computed
     * at the first save or load. */
    bool model_id_set;
    uint64_t model_id;
    uint64_t model_bytes;
};

/* Runs the model on tokens[0..n) (n <= n_batch_max) at positions
 * s->n_past ... s->n_past + n - 1, appending to the KV cache; the caller
 * advances n_past. Logits: of the last min(n, n_logit_rows) tokens into
 * s->logits (every token's when all_logits). Fails only when a streamed expert cannot be
 * read; the KV cache past n_past is then garbage, which is harmless. */
int sl_forward_batch(sl_session *s, const int32_t *tokens, int n, sl_err *err);

/* The run-time guard on a step's output (forward.c). sl_check_hidden
 * fails (SL_EFORMAT, one line naming the position and the layer) when a
 * value of the n rows of width w at x, the first at position pos0, is NaN,
 * infinite or beyond SL_HIDDEN_MAX (ops.h); sl_check_logits when a logit
 * is NaN or infinite. Either means a damaged file: finite, sane weights
 * never produce one. Costs one pass over the values. */
int sl_check_hidden(const float *x, int n, int64_t w, int pos0, int layer, sl_err *err);
int sl_check_logits(const float *x, int n, int64_t w, int pos0, sl_err *err);

/* The bookkeeping around one batch of n tokens of s, shared by
 * sl_session_eval and sl_session_eval_multi. begin: no logits yet, the
 * batch's rows' kernels chosen (row_kind, by the prompt extent), and at
 * position 0 (a new sequence) recurrent states from zero and rings empty.
 * end (rc: the forward pass's result): rings forget the positions the
 * batch's rows replaced (also after a failure, since rows may have been
 * written); on success n_past advances by n and a multi-token batch leaves
 * the recurrent-state snapshot at its end. Cannot fail. */
void sl_session_batch_begin(sl_session *s, int n);
void sl_session_batch_end(sl_session *s, int n, int rc);

/* The attention kernel of a row (llama.cpp's CPU flash attention as it
 * runs a prompt in micro-batches of SL_LLAMA_UBATCH, then decodes one
 * token at a time): SL_ROW_TILED, the tiled kernels; SL_ROW_SEQ, the
 * one-chunk form (a micro-batch of fewer than SL_ATTN_QTILE queries);
 * SL_ROW_LONE, the one-chunk form of a micro-batch of one token, which
 * llama.cpp splits over its threads (only when decode_split > 1, else
 * SEQ). Quantised or mixed caches take the one-chunk form whatever the
 * kind. SL_ROW_UNKNOWN: restored from a file that did not say. */
enum { SL_ROW_TILED = 0, SL_ROW_SEQ = 1, SL_ROW_LONE = 2, SL_ROW_UNKNOWN = 255 };
/* A row's kind also carries the form of its matrix products (ops.h
 * SL_MM_FORM_ONE / SL_MM_FORM_TAIL: the micro-batch is this one row; the
 * row is one of its micro-batch's last nrows % 4); SL_ROW_ATTN masks the
 * attention kernel out of it. */
#define SL_ROW_ATTN 3
#define SL_ROW_ATTN_OF(k) ((k) & SL_ROW_ATTN)

/* The kind of the row at position pos of s when the reply's prompt has
 * n_prompt tokens from position 0 (< 0: none given, SL_ROW_TILED, the
 * batched product forms): a prompt row takes the kind of its micro-batch
 * in llama.cpp's cold evaluation, pos / 512 of size min(512, n_prompt -
 * 512 (pos / 512)), and the product forms of its place in it; a row at or
 * past n_prompt is generated, a micro-batch of one (SL_MM_FORM_ONE and
 * SL_MM_FORM_TAIL). */
int sl_session_row_kind(const sl_session *s, int n_prompt, int pos);

/* The product forms (ops.h SL_MM_FORM_*, only those s's model heeds) of
 * row `in` of a product batch of `size` rows, as llama.cpp's CPU backend
 * picks its kernels: one row skips tinyBLAS, the last size % 4 take the
 * repacked gemv. Pure. */
int sl_session_mm_form(const sl_session *s, int size, int in);

/* The checksum of saved session files (session_save.c): the hash of len
 * bytes at p, chained onto h (a file's chunks are hashed in order, each
 * onto the last). For the fuzzing harness (tests/fuzz/fuzz_session.c),
 * which re-seals mutated files so that the checks behind the checksums
 * are reached. */
uint64_t sl_session_file_hash(uint64_t h, const void *p, size_t len);

#endif
