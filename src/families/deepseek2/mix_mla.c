/* mix_mla.c - multi-head latent attention (deepseek2: DeepSeek-V3 / R1,
 * Kimi K2), in the absorbed form llama.cpp computes (ARCHS.md section 3):
 *
 *   q  = Wq_b rms(Wq_a xb)   (or Wq xb)        per head [q_nope | q_pe]
 *   kv = Wkv_a xb                              [c (kv_lora) | k_pe (rope)]
 *   k_pe, q_pe: NORM rope (YaRN; its magnitude cancelled, the scale carries it)
 *   c = rms(c, kv_a_norm); the cache row of the position is [c | k_pe]
 *   q~_h = Wk_b[h] q_nope_h                    (kv_lora values per head)
 *   o~_h = softmax([q~_h | q_pe_h] . rows * scale) . c-parts of the rows
 *   o_h  = Wv_b[h] o~_h;  out = Wo [o_0 .. o_H-1]
 *
 * The cache is the latent and the roped key only, (kv_lora + rope) values
 * per position: decode never expands it to per-head keys and values. The
 * attention is llama.cpp's tiled flash attention over one K/V head that
 * every query head reads (the attention kernels of mix_attn.c); the
 * per-head products are one pool job per group of heads, each output
 * value one dot product by one thread, so neither the thread count nor
 * the batch split changes a bit.
 *
 * Scratch (sized by the layer's attention twin, see family_deepseek2.c):
 * the q latent in ffn_out, the raw q in attn_out, kv in k, the absorbed q
 * in q; the attention's latent outputs in attn_out, Wv_b's in q. */
#include <string.h>

#include "engine/fwd_mm.h"
#include "ops/matmul_order.h"
#include "engine/mixer.h"
#include "families/glm_dsa/mla_indexer.h"
#include "engine/session.h"
#include "quant/quant.h"

static void mla_state_rows(const sl_layer_desc *d, size_t elem, uint64_t row_bytes[2])
{
    row_bytes[0] = ((uint64_t)d->mla.kv_lora + (uint64_t)d->mla.n_rot) * elem;
    /* the values are the first kv_lora of each key row; the second stream
     * is a full glm-dsa layer's indexer key */
    const bool idx = d->mla.idx_top_k > 0 && d->mla.idx_full;
    row_bytes[1] = idx ? (uint64_t)d->mla.idx_dim * elem : 0;
}

static uint64_t mla_state_seq(const sl_layer_desc *d)
{
    (void)d;
    return 0;
}

/* Head h's matrix of a stacked per-head tensor [cols, rows, n_head]: a plain
 * 3-d MUL_MAT in the reference over a permuted view (not a routed expert's
 * order, never repacked; F32 through ggml_vec_dot_f32, ops/matmul_order.h). */
static sl_mat head_mat(const sl_tensor *t, int h)
{
    sl_mat m = sl_fwd_mat(t);
    m.data = (const uint8_t *)t->data + (size_t)h * (size_t)m.rows * m.row_bytes;
    m.n_experts = SL_MM_BATCHED_3D;
    m.iq_panel = false; /* a 3-d MUL_MAT: not the panel's (2-d weights only) */
    return m;
}

/* The most heads of one per-head product job (their matrices' views are
 * on the stack). */
#define MLA_HEADS_PER_JOB 128

/* y_h(n, rows) = W[h] x_h for every head h: token t's input of head h is
 * x + t * ldx + h * xoff, its output goes to y + t * ldy + h * yoff. Heads
 * go in groups whose prepared inputs fit the session's activation rows. */
static void per_head_products(sl_session *s, const sl_tensor *w, int H, float *x, size_t ldx,
                              size_t xoff, float *y, size_t ldy, size_t yoff, int n)
{
    const sl_mat m0 = head_mat(w, 0);
    const size_t stride = sl_fwd_act_stride(m0.type, m0.cols);
    const size_t act_cap = (size_t)s->layout.bytes[SL_SB_act];
    const size_t ptr_cap = (size_t)s->layout.bytes[SL_SB_acts] / sizeof(void *);
    int per = (int)(act_cap / ((size_t)n * stride));
    if ((size_t)per > ptr_cap / (size_t)n) per = (int)(ptr_cap / (size_t)n);
    if (per > s->layout.mm_cap) per = s->layout.mm_cap;
    if (per > H) per = H;
    if (per > MLA_HEADS_PER_JOB) per = MLA_HEADS_PER_JOB;
    SL_ASSERT(per >= 1);
    sl_mat mats[MLA_HEADS_PER_JOB];
    for (int h0 = 0; h0 < H; h0 += per) {
        const int cnt = h0 + per <= H ? per : H - h0;
        sl_mm_item *it = s->mm_items;
        for (int j = 0; j < cnt; j++) {
            const size_t off = (size_t)j * (size_t)n;
            mats[j] = head_mat(w, h0 + j);
            sl_prep p = {&mats[j], x + (size_t)(h0 + j) * xoff, ldx, NULL, NULL, n,
                         s->act + off * stride, stride, (size_t)n * stride,
                         s->acts + off, false};
            sl_fwd_prepare(s, &p);
            it[j] = (sl_mm_item){&mats[j], s->acts + off, n,
                                 y + (size_t)(h0 + j) * yoff, ldy, sl_fwd_form(s, n)};
        }
        sl_fwd_mm_run(s, it, cnt);
    }
}

typedef struct mla_job {
    sl_session *s;
    const sl_mla_desc *a;
    const sl_layer_state *st;
    int n, pos0, groups, per;
} mla_job;

/* Work item = (token, group of query heads): the heads of a group share
 * each converted tile of the one K/V head. */
static void mla_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    mla_job *j = ctx;
    sl_session *s = j->s;
    const sl_mla_desc *a = j->a;
    const int dk = a->kv_lora + a->n_rot, dv = a->kv_lora, H = a->n_head;
    const sl_attn_kernels *kr = s->attn_k;
    void (*attend)(const sl_attn_block *) = s->kv_elem == 2 ? kr->attend_f16 : kr->attend_f32;
    /* each row as llama.cpp's micro-batch of it would (session.h, mix_attn.c) */
    const uint8_t *kind = s->row_kind + j->pos0;
    const int row_type = s->kv_elem == 2 ? SL_TYPE_F16 : SL_TYPE_F32;
    sl_attn_block b = {
        .q_stride = (size_t)dk, .k = j->st->rows[0], .v = j->st->rows[0],
        .k_stride = j->st->row_bytes[0], .v_stride = j->st->row_bytes[0], .dk = dk, .dv = dv,
        .scale = a->scale, .out_stride = (size_t)dv,
        .scratch = s->att + (size_t)tid * s->layout.att_floats,
    };
    long long w0, w1;
    sl_split_range((long long)j->n * j->groups, chunk, n_chunks, &w0, &w1);
    for (long long w = w0; w < w1; w++) {
        const int t = (int)(w / j->groups), h0 = (int)(w % j->groups) * j->per;
        const bool by_pos = SL_ROW_ATTN_OF(kind[t]) != SL_ROW_TILED;
        b.n_q = h0 + j->per <= H ? j->per : H - h0;
        b.n_pos = j->pos0 + t + 1;
        b.q = s->q + ((size_t)t * H + (size_t)h0) * (size_t)dk;
        b.out = s->attn_out + ((size_t)t * H + (size_t)h0) * (size_t)dv;
        if (a->idx_top_k > 0) {
            const int *sel = sl_mla_sel(s, a, t);
            if (by_pos) {
                b.sel = sel + 1;
                b.n_sel = sel[0];
                sl_attn_attend_seq(kr, &b, row_type, row_type);
                b.sel = NULL;
            } else {
                sl_mla_attend_sparse(&b, s->kv_elem == 2, sel + 1, sel[0]);
            }
        } else if (by_pos) {
            sl_attn_attend_seq(kr, &b, row_type, row_type);
        } else {
            attend(&b);
        }
    }
}

/* The position's cache row: [c (kv_lora) | k_pe (n_rot)]. */
static void row_store(const sl_session *s, const sl_layer_state *st, int pos, const float *kv,
                      size_t w)
{
    uint8_t *dst = st->rows[0] + (size_t)pos * st->row_bytes[0];
    if (s->kv_elem == 2)
        for (size_t i = 0; i < w; i++) ((uint16_t *)dst)[i] = sl_f32_to_fp16(kv[i]);
    else
        memcpy(dst, kv, w * sizeof(float));
}

static void mla_forward(sl_session *s, const sl_layer *L, int il, int n, float *out)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_mla_desc *a = &L->d.mla;
    const sl_layer_state *st = &s->layer_state[il];
    const int H = a->n_head, r = a->kv_lora, rot = a->n_rot, hd = a->head_dim;
    const int nope = hd - rot, dk = r + rot, dv = a->head_dim_v;
    const size_t qd = (size_t)H * (size_t)hd;
    float *qraw = s->attn_out, *kv = s->k;

    /* projections: q (through its latent) and the KV latent with k_pe */
    const sl_mat wkv = sl_fwd_mat(&L->wkv_a);
    if (a->q_lora > 0) {
        /* a full glm-dsa layer's indexer keys and head weights read the
         * block input too */
        const bool idx = a->idx_top_k > 0 && a->idx_full;
        const sl_mat wqa = sl_fwd_mat(&L->wq_a);
        const sl_mat wik = idx ? sl_fwd_mat(&L->idx_k) : wqa;
        const sl_mat wip = idx ? sl_fwd_mat(&L->idx_proj) : wqa;
        const sl_mat *mats[4] = {&wqa, &wkv, &wik, &wip};
        float *ys[4] = {s->ffn_out, kv, idx ? sl_mla_idx_keys(s, a, n) : NULL,
                        idx ? sl_mla_idx_weights(s, a, n) : NULL};
        sl_fwd_mm_shared(s, mats, ys, idx ? 4 : 2, s->xb, n);
        const int ql = a->q_lora;
        for (int t = 0; t < n; t++) {
            float *c = s->ffn_out + (size_t)t * (size_t)ql;
            sl_rmsnorm(c, c, L->q_a_norm.data, ql, hp->rms_eps);
        }
        if (idx) sl_mla_indexer_run(s, L, il, n, s->ffn_out);
        sl_fwd_mm_tensor(s, &L->wq_b, s->ffn_out, n, qraw);
    } else {
        const sl_mat wq = sl_fwd_mat(&L->wq);
        const sl_mat *mats[2] = {&wq, &wkv};
        float *ys[2] = {qraw, kv};
        sl_fwd_mm_shared(s, mats, ys, 2, s->xb, n);
    }

    for (int t = 0; t < n; t++) {
        const int pos = s->n_past + t;
        float *kt = kv + (size_t)t * (size_t)dk;
        sl_rope_apply(&a->rope, kt + r, 1, rot, pos);
        sl_rmsnorm(kt, kt, L->kv_a_norm.data, r, hp->rms_eps);
        row_store(s, st, pos, kt, (size_t)dk);
        sl_rope_apply(&a->rope, qraw + (size_t)t * qd + nope, H, hd, pos);
    }

    /* absorb: each head's q_nope into latent space, next to its q_pe */
    const size_t qrow = (size_t)H * (size_t)dk;
    per_head_products(s, &L->wk_b, H, qraw, qd, (size_t)hd, s->q, qrow, (size_t)dk, n);
    for (int t = 0; t < n; t++)
        for (int h = 0; h < H; h++)
            memcpy(s->q + (size_t)t * qrow + (size_t)h * dk + r,
                   qraw + (size_t)t * qd + (size_t)h * hd + nope, sizeof(float) * (size_t)rot);

    /* attention over the latent rows; query heads in up to 4 groups per
     * token so a single token's heads still spread over threads */
    const int groups = H < 4 ? H : 4, per = (H + groups - 1) / groups;
    mla_job j = {s, a, st, n, s->n_past, (H + per - 1) / per, per};
    const int items = n * j.groups;
    sl_pool_run(s->pool, mla_worker, &j, items < 64 ? items : 64);

    /* each head's latent output through its value up-projection, then Wo */
    const size_t orow = (size_t)H * (size_t)r, vrow = (size_t)H * (size_t)dv;
    per_head_products(s, &L->wv_b, H, s->attn_out, orow, (size_t)r, s->q, vrow, (size_t)dv, n);
    sl_fwd_mm_tensor(s, &L->wo, s->q, n, out);
}

const sl_mixer_ops sl_mixer_mla = {
    .name = "mla",
    .cache = SL_CACHE_K_PLAIN,
    .cache_rows = "the latent and its roped key (and glm-dsa's indexer keys)",
    .state_rows = mla_state_rows,
    .state_seq = mla_state_seq,
    .forward = mla_forward,
    .truncatable = true,
};
