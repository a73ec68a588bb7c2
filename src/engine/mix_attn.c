/* mix_attn.c - the attention mixer: causal softmax attention over the
 * layer's K/V cache, grouped-query (n_head / n_head_kv query heads per K/V
 * head), with optional q/k/v biases, q/k RMS norms (per head or over the
 * projection), rope, and an optional sigmoid output gate carried by the q
 * projection (qwen35moe: o * sigmoid(gate) per element before Wo).
 *
 *   q, k, v = xb Wq, xb Wk, xb Wv (+ biases) -> q/k norm -> rope
 *   -> append k, v to the cache (f16, f32, q8_0 or q4_0: kv_rows.h) at each
 *      token's position (a sliding-window layer's mirrored ring: kv_ring.h)
 *   -> per (token, head): softmax(q . K[0..pos] * scale) . V -> attn_out
 *   -> out = attn_out Wo
 *
 * Work is split over (token block, K/V head) pairs; each token's rows are
 * computed with the same arithmetic whatever block and thread holds them,
 * so results do not depend on the thread count or the batch split. */
#include <math.h>
#include <string.h>

#include "engine/fwd_mm.h"
#include "engine/kv_ring.h"
#include "engine/kv_rows.h"
#include "engine/mixer.h"
#include "engine/session.h"
#include "util/checked.h"

static void attn_state_rows(const sl_layer_desc *d, size_t elem, uint64_t row_bytes[2])
{
    const sl_attn_desc *a = &d->attn;
    row_bytes[0] = (uint64_t)a->n_head_kv * (uint64_t)a->head_dim * elem;
    row_bytes[1] = (uint64_t)a->n_head_kv * (uint64_t)a->head_dim_v * elem;
}

static uint64_t attn_state_seq(const sl_layer_desc *d)
{
    (void)d;
    return 0;
}

/* K and V are stored head-major: each K/V head's rows together. */
static int attn_state_heads(const sl_layer_desc *d, int r)
{
    (void)r;
    return d->attn.n_head_kv;
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* A gated q projection holds, per head, head_dim query rows then as many
 * gate rows. Moves each token's gates to the kind scratch and packs its
 * queries to (n_head, head_dim), in place: every query moves to a lower
 * address than any not yet read. */
static void split_gate(sl_session *s, const sl_attn_desc *a, int n)
{
    const size_t hd = (size_t)a->head_dim, H = (size_t)a->n_head;
    for (size_t t = 0; t < (size_t)n; t++)
        for (size_t h = 0; h < H; h++) {
            const float *src = s->q + (t * H + h) * 2 * hd;
            memcpy(s->kind_scratch + (t * H + h) * hd, src + hd, hd * sizeof(float));
            memmove(s->q + (t * H + h) * hd, src, hd * sizeof(float));
        }
}

typedef struct attn_job {
    sl_session *s;
    const sl_attn_desc *a;
    const sl_layer_state *st;
    int n;
    int pos0;
    int blk;                /* tokens per work item (a query block) */
    const float *sinks; /* n_head sink logits, or NULL */
    int first;              /* the first position the batch attends to */
} attn_job;

/* The length of llama.cpp's view of a cache of n_ctx positions when n_pos
 * are used: both rounded up to 256, the used ones to at least 256, at
 * most the cache (llama_kv_cache::get_n_kv). A one-token decode whose view
 * reaches 512 is split into one chunk per thread there
 * (sl_session_params.decode_split). */
static int llama_view(int n_ctx, int n_pos)
{
    const int cap = (n_ctx + 255) / 256 * 256, used = (n_pos + 255) / 256 * 256;
    const int v = used > 256 ? used : 256;
    return v < cap ? v : cap;
}

/* Work item w = (block of blk tokens, K/V head): the query heads of that
 * group, for every token of the block, attend together, so each K/V tile
 * is read and converted once for all of them (sl_attn_attend_tokens). An
 * f16 or f32 cache of one type takes the tiled kernels for the rows whose
 * kind is SL_ROW_TILED (session.h: llama.cpp's choice by the size of the
 * micro-batch it would evaluate the row in, sl_session_set_prompt); the
 * other rows, and every row of a quantised or mixed cache, take the
 * position-by-position form token by token (llama.cpp's paths for the
 * same caches), a SL_ROW_LONE row over a cache view of 512+ split as
 * llama.cpp splits a one-token micro-batch over decode_split threads. */
static void attn_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    attn_job *j = ctx;
    sl_session *s = j->s;
    const sl_attn_desc *a = j->a;
    const int hd = a->head_dim, hdv = a->head_dim_v, H = a->n_head, HKV = a->n_head_kv;
    const int group = H / HKV;
    const sl_attn_kernels *kr = s->attn_k;
    const bool plain = s->type_k == s->type_v && !sl_kv_type_quantized(s->type_k);
    const int f16 = s->type_k != SL_KV_F32;
    /* a one-token micro-batch over an f16 / f32 cache of one type, not a ring */
    const bool split_ok = s->decode_split > 1 && plain && a->n_swa == 0 &&
                          j->st->ring_cap == 0 && j->first == 0;
    /* one K/V head's rows, each head's together (kv_ring.h) */
    sl_attn_block b = {
        .q_stride = (size_t)hd, .k_stride = sl_kv_head_bytes(j->st, 0),
        .v_stride = sl_kv_head_bytes(j->st, 1),
        .dk = hd, .dv = hdv, .n_q = group, .scale = a->scale, .out_stride = (size_t)hdv,
        .scratch = s->att + (size_t)tid * s->layout.att_floats,
        .q_tok = (size_t)H * hd, .out_tok = (size_t)H * hdv, .n_swa = a->n_swa,
    };
    const int k_type = (int)sl_kv_quant_type(s->type_k), v_type = (int)sl_kv_quant_type(s->type_v);
    const float *sinks = a->sinks ? j->sinks : NULL;
    const uint8_t *kind = s->row_kind + j->pos0;
    long long w0, w1;
    const long long n_blk = (j->n + j->blk - 1) / j->blk;
    sl_split_range(n_blk * HKV, chunk, n_chunks, &w0, &w1);
    for (long long w = w0; w < w1; w++) {
        const int t0 = (int)(w / HKV) * j->blk, kvh = (int)(w % HKV);
        const int nt = j->n - t0 < j->blk ? j->n - t0 : j->blk;
        b.n_pos = j->pos0 + t0 + 1; /* causal: itself and everything before */
        b.pos_lo = a->n_swa > 0 && b.n_pos > a->n_swa ? b.n_pos - a->n_swa : 0;
        b.sinks = sinks ? sinks + (size_t)kvh * group : NULL;
        b.q = s->q + (size_t)t0 * H * hd + (size_t)kvh * group * hd;
        b.k = sl_kv_head_base(j->st, 0, kvh, j->first);
        b.v = sl_kv_head_base(j->st, 1, kvh, j->first);
        b.out = s->attn_out + (size_t)t0 * H * hdv + (size_t)kvh * group * hdv;
        b.n_tok = nt;
        for (int i = 0; i < nt;) {
            sl_attn_block one = b;
            one.n_pos = b.n_pos + i;
            one.pos_lo = sl_attn_tok_lo(&b, i);
            one.q = b.q + (size_t)i * b.q_tok;
            one.out = b.out + (size_t)i * b.out_tok;
            if (plain && SL_ROW_ATTN_OF(kind[t0 + i]) == SL_ROW_TILED) { /* the run of tiled rows */
                int e = i + 1;
                while (e < nt && SL_ROW_ATTN_OF(kind[t0 + e]) == SL_ROW_TILED) e++;
                one.n_tok = e - i;
                sl_attn_attend_tokens(kr, &one, f16);
                i = e;
                continue;
            }
            if (split_ok && SL_ROW_ATTN_OF(kind[t0 + i]) == SL_ROW_LONE) { /* llama.cpp's view of the cache */
                const int view = llama_view(s->n_ctx, one.n_pos);
                if (view >= 512) {
                    one.split_n = s->decode_split;
                    one.split_len = (view + s->decode_split - 1) / s->decode_split;
                }
            }
            one.n_tok = 1;
            sl_attn_attend_seq(kr, &one, k_type, v_type);
            i++;
        }
    }
}

/* Appends one token's k (n_kv heads of hd values) and v (n_kv of hdv) at
 * position pos, in the session's K and V types, each head's part in its
 * own run (kv_ring.h); a ring's row twice (its mirror: a copy of the
 * bytes, so both are the same). The block types' blocks never straddle
 * two heads (session_layout.c), so storing head by head writes the bytes
 * a whole row's store would. */
static void kv_store(const sl_session *s, const sl_layer_state *st, int pos, const float *k,
                     int hd, const float *v, int hdv, int n_kv)
{
    const size_t kb = sl_kv_head_bytes(st, 0), vb = sl_kv_head_bytes(st, 1);
    for (int h = 0; h < n_kv; h++) {
        uint8_t *kr = sl_kv_head_row(st, 0, h, pos), *vr = sl_kv_head_row(st, 1, h, pos);
        sl_kv_row_store(s->type_k, k + (size_t)h * (size_t)hd, kr, hd);
        sl_kv_row_store(s->type_v, v + (size_t)h * (size_t)hdv, vr, hdv);
        if (st->ring_cap > 0) {
            memcpy(sl_kv_head_mirror(st, 0, h, pos), kr, kb);
            memcpy(sl_kv_head_mirror(st, 1, h, pos), vr, vb);
        }
    }
}

/* llama.cpp's attention rotation (its KV cache since 2026: attn_rot_k and
 * attn_rot_v in llama-kv-cache.cpp, LLAMA_ATTN_ROT_DISABLE turns it off
 * there): where the K cache is quantised and the head size a multiple of
 * 64, Q and K are rotated by the Walsh-Hadamard matrix of the largest power
 * of two dividing the head size, after the rope and before K is stored (the
 * scores keep their values; a channel's outlier spreads over the block
 * before quantisation); where V is quantised and its head size a multiple
 * of 64, V by the 64 x 64 one before it is stored, and the attention's
 * output back by the same after (sl_session_params.attn_rot_off: never).
 * Block size of the rotation, 0 for none.
 * (llama.cpp rotates only when every layer of a cache has one head size;
 * sluice decides per layer, the same on every model it runs.) */
static int rot_k_size(const sl_session *s, int hd)
{
    if (!s->attn_rot || !sl_kv_type_quantized(s->type_k) || hd % 64 != 0) return 0;
    int n = 64;
    while (hd % (2 * n) == 0) n *= 2;
    return n;
}

static int rot_v_size(const sl_session *s, int hdv)
{
    return s->attn_rot && sl_kv_type_quantized(s->type_v) && hdv % 64 == 0 ? 64 : 0;
}

/* The first position any token of a batch starting at pos0 attends to. */
static int batch_first_pos(const sl_attn_desc *a, int pos0)
{
    return a->n_swa > 0 && pos0 + 1 > a->n_swa ? pos0 + 1 - a->n_swa : 0;
}

/* A sliding window needs the n_swa - 1 positions before n still held:
 * from ring_lo on (any n when everything from 0 is there). */
static int attn_truncate_floor(const sl_layer_desc *d, const sl_layer_state *st)
{
    if (d->attn.n_swa <= 0 || st->ring_lo <= 0) return 0;
    return st->ring_lo + d->attn.n_swa - 1;
}

/* Tokens per work item for a batch of n: as many as the scratch holds
 * (sl_attn_block_tokens), fewer when that would leave fewer than two items
 * per thread. Any choice gives the same bits. */
static int query_block(const sl_session *s, const sl_attn_desc *a, int n)
{
    const int group = a->n_head / a->n_head_kv;
    int blk = sl_attn_block_tokens(a->head_dim, a->head_dim_v, group, s->layout.att_floats);
    const int want = 2 * sl_pool_size(s->pool);
    while (blk > 1 && (n + blk - 1) / blk * a->n_head_kv < want) blk /= 2;
    return blk;
}

static void attn_forward(sl_session *s, const sl_layer *L, int il, int n, float *out)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_attn_desc *a = &L->d.attn;
    const sl_layer_state *st = &s->layer_state[il];
    const int hd = a->head_dim;
    const int q_dim = a->n_head * hd, k_dim = a->n_head_kv * hd;
    const int v_dim = a->n_head_kv * a->head_dim_v;
    const int rk = rot_k_size(s, hd), rv = rot_v_size(s, a->head_dim_v);

    const sl_mat wq = sl_fwd_mat(&L->wq), wk = sl_fwd_mat(&L->wk), wv = sl_fwd_mat(&L->wv);
    const sl_mat *qkv[3] = {&wq, &wk, &wv};
    float *qkv_out[3] = {s->q, s->k, s->v};
    /* gemma4's full layers have no v projection: v is k's (before its norm) */
    sl_fwd_mm_shared(s, qkv, qkv_out, a->v_from_k ? 2 : 3, s->xb, n);
    if (a->v_from_k) memcpy(s->v, s->k, sizeof(float) * (size_t)n * (size_t)k_dim);
    if (a->gated) split_gate(s, a, n);
    sl_add_rows_bias(s->q, L->bq.data, n, (size_t)q_dim);
    sl_add_rows_bias(s->k, L->bk.data, n, (size_t)k_dim);
    sl_add_rows_bias(s->v, L->bv.data, n, (size_t)v_dim);

    for (int t = 0; t < n; t++) {
        float *q = s->q + (size_t)t * q_dim, *k = s->k + (size_t)t * k_dim;
        if (a->qk_norm == SL_QK_NORM_HEAD) {
            for (int h = 0; h < a->n_head; h++)
                sl_rmsnorm(q + h * hd, q + h * hd, L->q_norm.data, hd, hp->rms_eps);
            for (int h = 0; h < a->n_head_kv; h++)
                sl_rmsnorm(k + h * hd, k + h * hd, L->k_norm.data, hd, hp->rms_eps);
        } else if (a->qk_norm == SL_QK_NORM_FULL) {
            sl_rmsnorm(q, q, L->q_norm.data, q_dim, hp->rms_eps);
            sl_rmsnorm(k, k, L->k_norm.data, k_dim, hp->rms_eps);
        }
        if (a->v_norm) /* gemma4: each v head RMS-normed, no weight */
            for (int h = 0; h < a->n_head_kv; h++) {
                float *v = s->v + (size_t)t * v_dim + (size_t)h * a->head_dim_v;
                sl_rmsnorm_unit(v, v, a->head_dim_v, hp->rms_eps);
            }
        if (a->rope_ff) { /* gemma4's full layers: frequencies divided by rope_freqs */
            const float *ff = s->m->rope_freqs.data;
            sl_rope_apply_ff(&a->rope, ff, q, a->n_head, hd, s->n_past + t);
            sl_rope_apply_ff(&a->rope, ff, k, a->n_head_kv, hd, s->n_past + t);
        } else {
            sl_rope_apply(&a->rope, q, a->n_head, hd, s->n_past + t);
            sl_rope_apply(&a->rope, k, a->n_head_kv, hd, s->n_past + t);
        }
        if (rk) {
            sl_fwht_rows(q, q_dim / rk, rk);
            sl_fwht_rows(k, k_dim / rk, rk);
        }
        if (rv) sl_fwht_rows(s->v + (size_t)t * v_dim, v_dim / rv, rv);
        kv_store(s, st, s->n_past + t, k, hd, s->v + (size_t)t * v_dim, a->head_dim_v,
                 a->n_head_kv);
    }

    const int first = batch_first_pos(a, s->n_past);
    attn_job j = {s, a, st, n, s->n_past, query_block(s, a, n), L->sinks.data, first};
    const int items = (n + j.blk - 1) / j.blk * a->n_head_kv;
    sl_pool_run(s->pool, attn_worker, &j, items < 64 ? items : 64);
    if (rv) sl_fwht_rows(s->attn_out, (int64_t)n * a->n_head * a->head_dim_v / rv, rv);
    if (a->gated) {
        const size_t o_n = (size_t)n * (size_t)a->n_head * (size_t)a->head_dim_v;
        for (size_t i = 0; i < o_n; i++) s->attn_out[i] *= sigmoid(s->kind_scratch[i]);
    }

    sl_fwd_mm_tensor(s, &L->wo, s->attn_out, n, out);
    sl_add_rows_bias(out, L->bo.data, n, (size_t)s->m->hp.n_embd);
}

/* A gated attention's scratch: its gates, (B, n_head * head_dim). */
static bool attn_scratch_floats(const sl_model *m, const sl_layer_desc *d, uint64_t B,
                                uint64_t *floats)
{
    (void)m;
    const sl_attn_desc *a = &d->attn;
    *floats = 0;
    return !a->gated || (sl_mul_u64(B, (uint64_t)a->n_head, floats) &&
                         sl_mul_u64(*floats, (uint64_t)a->head_dim, floats));
}

const sl_mixer_ops sl_mixer_attn = {
    .name = "attention",
    .cache = SL_CACHE_KV,
    .state_rows = attn_state_rows,
    .state_seq = attn_state_seq,
    .state_heads = attn_state_heads,
    .forward = attn_forward,
    .truncatable = true,
    .truncate_floor = attn_truncate_floor,
    .scratch_floats = attn_scratch_floats,
};
