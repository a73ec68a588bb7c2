/* session.h - internals of sl_session (see include/sluice.h for the API).
 *
 * Owns: the KV cache, every scratch buffer of the forward pass, the logits,
 * and the compute thread pool. All are allocated in sl_session_create, so
 * evaluation allocates nothing. Must not know: files, tokenizers, sampling. */
#ifndef SL_ENGINE_SESSION_H
#define SL_ENGINE_SESSION_H

#include "model/model.h"
#include "ops/ops.h"
#include "sluice.h"
#include "util/pool.h"

struct sl_session {
    sl_model *m;
    sl_pool *pool;
    sl_rope rope;
    int n_ctx;
    int n_past;
    int n_batch_max;
    sl_kv_type kv_type;
    bool all_logits;
    size_t kv_elem;      /* bytes per cached value: 2 (f16) or 4 (f32) */
    size_t kv_dim;       /* n_head_kv * head_dim */
    size_t kv_dim_v;     /* n_head_kv * head_dim_v */
    void *k_cache;       /* (n_layer, n_ctx, kv_dim) */
    void *v_cache;       /* (n_layer, n_ctx, kv_dim_v) */

    float *x;            /* (n_embd) residual stream */
    float *xb;           /* (n_embd) normalised input of a block */
    float *q;            /* (n_head * head_dim) */
    float *k;            /* (kv_dim) */
    float *v;            /* (kv_dim_v) */
    float *att;          /* (n_head, n_ctx) attention scores */
    float *attn_out;     /* (n_head * head_dim_v) */
    float *ffn_out;      /* (n_embd) */
    float *exp_out;      /* (n_embd) one expert's output */
    float *hb;           /* (max ff width) gate activations */
    float *hb2;          /* (max ff width) up activations */
    float *router;       /* (n_expert) router probabilities */
    int *topk_ids;       /* (n_expert_used) chosen experts, by rank */
    float *topk_w;       /* (n_expert_used) their weights */
    void *act;           /* quantised activations, widest matrix */
    float *row_tmp;      /* (nth, max cols) dequantised rows for fallbacks */
    size_t row_tmp_stride;
    float *logits;       /* (n_batch_max or 1, n_vocab) */
    int n_logits;        /* rows of logits valid after the last eval */
};

/* Runs the model on one token at position s->n_past (the caller advances
 * n_past). Writes logits to `logits` (n_vocab) when non-NULL. */
void sl_forward_token(sl_session *s, int32_t token, float *logits);

/* y = mat * x using the session's pool and scratch. */
void sl_session_matvec(sl_session *s, const sl_mat *mat, const float *x, float *y);

#endif
