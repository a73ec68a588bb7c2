/* session.c - creating a session (KV cache, scratch, pool) and evaluating
 * batches of tokens. */
#include <stdlib.h>
#include <string.h>

#include "engine/session.h"
#include "engine/fwd_mm.h"
#include "util/checked.h"

sl_session_params sl_session_default_params(void)
{
    sl_session_params p = {.n_ctx = 0, .kv_type = SL_KV_F16, .all_logits = false,
                           .n_batch_max = 0};
    return p;
}

static int imax(int a, int b) { return a > b ? a : b; }

/* A run of allocations: whether all succeeded, and their bytes. */
typedef struct alloc_acc {
    bool ok;
    uint64_t bytes;
} alloc_acc;

/* Allocates n elements of size sz (zeroed), recording failure and size. */
static void *alloc_n(size_t n, size_t sz, alloc_acc *a)
{
    uint64_t bytes;
    if (!sl_mul_u64(n, sz, &bytes) || bytes > SIZE_MAX) {
        a->ok = false;
        return NULL;
    }
    void *p = calloc(1, bytes ? (size_t)bytes : 1);
    if (!p) a->ok = false;
    a->bytes += bytes;
    return p;
}

/* What the session's prepared activations need, from the model's matrices:
 * the widest input row (stride), the bytes per token of SwiGLU rows
 * prepared for a down projection (K rows of experts), and whether some MoE
 * layer's gate and up take different activation types (two input sets). */
typedef struct act_needs {
    size_t stride;
    size_t down_bytes_per_tok;
    int sets;
} act_needs;

static size_t mat_stride(const sl_tensor *t)
{
    return t->info && t->ne[1] > 1 ? sl_fwd_act_stride(t->type, (int64_t)t->ne[0]) : 0;
}

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

static act_needs model_act_needs(const sl_model *m)
{
    act_needs an = {zmax(mat_stride(&m->output), 64), 64, 1};
    const size_t K = (size_t)imax(m->hp.n_expert_used, 1);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        const sl_tensor *in[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up,
                                 &L->router, &L->gate_exps, &L->up_exps, &L->gate_shexp,
                                 &L->up_shexp};
        for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
            an.stride = zmax(an.stride, mat_stride(in[i]));
        an.down_bytes_per_tok = zmax(an.down_bytes_per_tok, mat_stride(&L->ffn_down));
        an.down_bytes_per_tok = zmax(an.down_bytes_per_tok, mat_stride(&L->down_shexp));
        an.down_bytes_per_tok = zmax(an.down_bytes_per_tok, K * mat_stride(&L->down_exps));
        if (L->gate_exps.info && L->up_exps.info &&
            sl_matvec_act_type(L->gate_exps.type) != sl_matvec_act_type(L->up_exps.type))
            an.sets = 2;
    }
    return an;
}

int sl_session_create(sl_session **out, sl_model *m, const sl_session_params *pp,
                      sl_err *err)
{
    *out = NULL;
    sl_session_params p = pp ? *pp : sl_session_default_params();
    const sl_hparams *hp = &m->hp;
    if (p.n_ctx <= 0) p.n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (p.n_ctx > (1 << 24))
        return sl_err_set(err, SL_EINVAL, "context size %d is too large", p.n_ctx);
    if (p.n_batch_max <= 0) p.n_batch_max = 512;

    sl_session *s = calloc(1, sizeof *s);
    if (!s) return sl_err_set(err, SL_ENOMEM, "out of memory");
    s->m = m;
    s->n_ctx = p.n_ctx;
    s->n_batch_max = p.n_batch_max;
    s->kv_type = p.kv_type;
    s->all_logits = p.all_logits;
    s->kv_elem = p.kv_type == SL_KV_F32 ? 4 : 2;
    s->kv_dim = (size_t)hp->n_head_kv * (size_t)hp->head_dim;
    s->kv_dim_v = (size_t)hp->n_head_kv * (size_t)hp->head_dim_v;

    s->attn_k = sl_attn_kernels_get();
    s->rope = (sl_rope){
        .n_dims = hp->rope_dim,
        .neox = m->arch->rope == SL_ROPE_NEOX,
        .freq_base = hp->rope_freq_base,
        .freq_scale = hp->rope_freq_scale,
        .ext_factor = hp->rope_scaling == SL_ROPE_SCALING_YARN ? 1.0f : 0.0f,
        .attn_factor = 1.0f,
        .beta_fast = 32.0f,
        .beta_slow = 1.0f,
        .n_ctx_orig = hp->rope_yarn_orig_ctx,
    };

    int nth = m->n_threads > 0 ? m->n_threads : sl_cpu_core_count();
    int rc = sl_pool_create(&s->pool, nth, err);
    if (rc) {
        free(s);
        return rc;
    }

    const int q_dim = hp->n_head * hp->head_dim;
    const int ff = imax(imax(hp->n_ff, hp->n_ff_exp), imax(hp->n_ff_shexp, 1));
    const int widest = imax(imax(hp->n_embd, q_dim), imax(ff, hp->n_head * hp->head_dim_v));
    const size_t B = (size_t)p.n_batch_max, E = (size_t)hp->n_embd;
    const size_t ctx = (size_t)s->n_ctx, layers = (size_t)hp->n_layer;
    const size_t X = (size_t)imax(hp->n_expert, 1), K = (size_t)imax(hp->n_expert_used, 1);
    alloc_acc ok = {true, 0};
    s->k_cache = alloc_n(layers * ctx * s->kv_dim, s->kv_elem, &ok);
    s->v_cache = alloc_n(layers * ctx * s->kv_dim_v, s->kv_elem, &ok);
    s->x = alloc_n(B * E, sizeof(float), &ok);
    s->xb = alloc_n(B * E, sizeof(float), &ok);
    s->q = alloc_n(B * (size_t)q_dim, sizeof(float), &ok);
    s->k = alloc_n(B * s->kv_dim, sizeof(float), &ok);
    s->v = alloc_n(B * s->kv_dim_v, sizeof(float), &ok);
    s->attn_out = alloc_n(B * (size_t)hp->n_head * (size_t)hp->head_dim_v, sizeof(float), &ok);
    s->ffn_out = alloc_n(B * E, sizeof(float), &ok);
    s->tmp = alloc_n(B * E, sizeof(float), &ok);
    /* SwiGLU floats per token: a dense or shared FFN's width, or K expert
     * widths (all of a layer's (token, rank) rows are computed at once) */
    const size_t ff_per_tok = imax(hp->n_ff, hp->n_ff_shexp) > (int)K * hp->n_ff_exp
                               ? (size_t)imax(hp->n_ff, hp->n_ff_shexp)
                               : K * (size_t)hp->n_ff_exp;
    s->hb = alloc_n(B * ff_per_tok, sizeof(float), &ok);
    s->hb2 = alloc_n(B * ff_per_tok, sizeof(float), &ok);
    s->att = alloc_n((size_t)nth * ctx, sizeof(float), &ok);
    s->router = alloc_n(B * X, sizeof(float), &ok);
    s->topk_ids = alloc_n(B * K, sizeof(int), &ok);
    s->topk_w = alloc_n(B * K, sizeof(float), &ok);
    s->exp_out = hp->n_expert ? alloc_n(B * K * E, sizeof(float), &ok) : NULL;
    s->moe_count = alloc_n(X + 1, sizeof(int), &ok);
    s->moe_cursor = alloc_n(X, sizeof(int), &ok);
    s->moe_slot = alloc_n(B * K, sizeof(int), &ok);
    s->moe_pos = alloc_n(B * K, sizeof(int), &ok);
    s->moe_rows = alloc_n(B * K, sizeof(int), &ok);
    s->moe_xw = alloc_n(X, sizeof(sl_expert_w), &ok);
    s->pf_x = alloc_n(E, sizeof(float), &ok);
    s->pf_logits = alloc_n(X, sizeof(float), &ok);
    s->pf_w = alloc_n(K, sizeof(float), &ok);
    s->pf_ids = alloc_n(K, sizeof(int), &ok);
    s->moe_acts_g = alloc_n(B * K, sizeof(void *), &ok);
    s->moe_acts_u = alloc_n(B * K, sizeof(void *), &ok);
    s->down_acts = alloc_n(B * K, sizeof(void *), &ok);
    act_needs an = model_act_needs(m);
    s->act_down = alloc_n(B, an.down_bytes_per_tok, &ok);
    s->act_stride = an.stride;
    s->acts = alloc_n((size_t)an.sets * B, sizeof(void *), &ok);
    s->act = alloc_n((size_t)an.sets * B, s->act_stride, &ok);
    s->mm_cap = 2 * (int)X + 4;
    s->mm_items = alloc_n((size_t)s->mm_cap, sizeof(sl_mm_item), &ok);
    s->mm_c0 = alloc_n((size_t)s->mm_cap + 1, sizeof(int), &ok);
    s->row_tmp_stride = (size_t)widest;
    s->row_tmp = alloc_n((size_t)nth * s->row_tmp_stride, sizeof(float), &ok);
    const size_t logit_rows = p.all_logits ? B : 1;
    s->logits = alloc_n(logit_rows * (size_t)hp->n_vocab, sizeof(float), &ok);
    const uint64_t kv_bytes = (uint64_t)(layers * ctx * (s->kv_dim + s->kv_dim_v) * s->kv_elem);
    s->scratch_bytes = ok.bytes - kv_bytes;
    if (!ok.ok) {
        sl_session_free(s);
        return sl_err_set(err, SL_ENOMEM, "cannot allocate the session (context %d tokens, "
                          "KV cache %.1f MiB)", p.n_ctx, (double)kv_bytes / (1 << 20));
    }
    *out = s;
    return SL_OK;
}

void sl_session_free(sl_session *s)
{
    if (!s) return;
    sl_pool_free(s->pool);
    void *bufs[] = {s->k_cache, s->v_cache, s->x,       s->xb,        s->q,
                    s->k,       s->v,       s->attn_out, s->ffn_out,  s->tmp,
                    s->hb,      s->hb2,     s->att,     s->router,    s->topk_ids,
                    s->topk_w,  s->exp_out, s->moe_count, s->moe_cursor, s->moe_slot,
                    s->moe_pos, s->moe_rows, s->moe_xw, s->pf_x, s->pf_logits, s->pf_w, s->pf_ids, (void *)s->moe_acts_g, (void *)s->moe_acts_u,
                    (void *)s->down_acts, s->act_down, (void *)s->acts, s->act,
                    s->mm_items, s->mm_c0, s->row_tmp, s->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(s);
}

int sl_session_eval(sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    if (n <= 0) return sl_err_set(err, SL_EINVAL, "empty batch");
    if (n > s->n_batch_max)
        return sl_err_set(err, SL_EINVAL, "batch of %d tokens exceeds the session's maximum %d",
                          n, s->n_batch_max);
    if (s->n_past + n > s->n_ctx)
        return sl_err_set(err, SL_EINVAL, "context is full: %d tokens cached + %d new > %d "
                          "(use a larger -c)", s->n_past, n, s->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->m->hp.n_vocab)
            return sl_err_set(err, SL_EINVAL, "token id %d at batch position %d is outside "
                              "the vocabulary [0, %d)", tokens[i], i, s->m->hp.n_vocab);
    s->n_logits = 0;
    int rc = sl_forward_batch(s, tokens, n, err);
    if (rc) return rc;
    s->n_past += n;
    return SL_OK;
}

const float *sl_session_logits(const sl_session *s)
{
    if (s->n_logits == 0) return NULL;
    return s->logits + (size_t)(s->n_logits - 1) * (size_t)s->m->hp.n_vocab;
}

const float *sl_session_logits_at(const sl_session *s, int i)
{
    if (i < 0 || i >= s->n_logits) return NULL;
    return s->logits + (size_t)i * (size_t)s->m->hp.n_vocab;
}

int sl_session_n_past(const sl_session *s) { return s->n_past; }
int sl_session_n_ctx(const sl_session *s) { return s->n_ctx; }

void sl_session_truncate(sl_session *s, int n)
{
    if (n >= 0 && n < s->n_past) s->n_past = n;
}
