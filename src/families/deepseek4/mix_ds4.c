/* mix_ds4.c - deepseek4's attention (ARCHS.md section 9, steps 4-6), as
 * llama.cpp computes it:
 *
 *   qr = rms(Wq_a u, q_a_norm); q_i = rms(Wq_b qr)_i (per head, no weight)
 *   k  = rms(Wkv u, kv_a_norm)             one D-vector: key and value
 *   NORM rope on the last n_rot dims of q_i and k at p (layer's base)
 *   compressor (ratio r): a_j = Wck u_j, g_j = Wcg u_j + ape[j mod r]; a
 *     block's row: per channel softmax over its entries of g . a (ratio 4:
 *     the previous block's first halves and its own second halves), rms
 *     with compressor_norm, rope at the block's first position (compress
 *     base, YaRN), cached; the indexer keys the same way with di
 *   indexer (ratio 4): score(p, b) = sum_h w_h relu(iq_h . ik_b), the top_k
 *     visible blocks
 *   o_i = softmax over [window keys | visible or chosen blocks] with the
 *     head's sink, of q_i . K / sqrt(D), times the same rows
 *   de-rope o_i at p; z_g = Wo_a[g] o_group; out = Wo_b [z_0 .. z_G-1]
 *
 * State per layer (sl_layer_state): rows[1] the compressed rows packed by
 * block (D values, then di indexer values on ratio-4 layers; f16 or f32 as
 * the session's cache), rows[0] nothing; seq, fixed per sequence: the
 * compressor's f32 rows of the blocks in progress (8 positions on ratio-4
 * layers: the previous block and this one; 128 on ratio-128 layers), then
 * the raw keys of the last n_swa positions before the batch (a ring, slot
 * p mod n_swa, values of the cache's type in room sized for f32). A batch
 * attends its own keys from the scratch where it projected them (rounded
 * as the cache rounds them) and the earlier window from the ring, then
 * leaves its last n_swa keys in the ring. Like any recurrent state it
 * rewinds only to its snapshot. The
 * attention is llama.cpp's tiled flash attention over the concatenation
 * of its raw cells and the compressed rows after them (key_src): tiles of
 * 64 cells, keys outside the visible set weigh nothing and tiles without
 * one are skipped. Work per (token, group of heads) in the pool. */
#include <math.h>
#include <string.h>

#include "families/deepseek4/ds4.h"
#include "engine/fwd_mm.h"
#include "engine/mixer.h"
#include "engine/session.h"
#include "families/glm_dsa/mla_indexer.h"
#include "ops/matmul_order.h"
#include "ops/vexp.h"
#include "util/hsum.h"
#include "util/pool.h"

/* Bytes of one compressed block's cached rows (values of elem bytes). */
static uint64_t block_bytes(const sl_ds4_desc *a, size_t elem)
{
    return ((uint64_t)a->head_dim + (uint64_t)a->idx_dim) * elem;
}

static void ds4_state_rows(const sl_layer_desc *d, size_t elem, uint64_t row_bytes[2])
{
    const sl_ds4_desc *a = &d->ds4;
    row_bytes[0] = 0; /* the raw window is a ring in the sequence state */
    /* the blocks packed: a position's share, rounded up */
    row_bytes[1] = a->ratio ? (block_bytes(a, elem) + (uint64_t)a->ratio - 1) / (uint64_t)a->ratio
                            : 0;
}

/* Floats of the compressor state: rows of a and g for each position of
 * the blocks in progress. */
static uint64_t comp_floats(const sl_ds4_desc *a)
{
    const uint64_t D = (uint64_t)a->head_dim, di = (uint64_t)a->idx_dim;
    if (a->ratio == 4) return 2 * 8 * (2 * D) + 2 * 8 * (2 * di);
    if (a->ratio == 128) return 2 * 128 * D;
    return 0;
}

/* The ring of the window's raw keys after them: n_swa rows of D. */
static float *ring_of(const sl_layer_state *st, const sl_ds4_desc *a)
{
    return st->seq + comp_floats(a);
}

static uint64_t ds4_state_seq(const sl_layer_desc *d)
{
    const sl_ds4_desc *a = &d->ds4;
    return (comp_floats(a) + (uint64_t)a->n_swa * (uint64_t)a->head_dim) * sizeof(float);
}

void sl_ds4_scratch_layout(const sl_model *m, uint64_t B, sl_ds4_scratch *o)
{
    memset(o, 0, sizeof *o);
    const sl_hparams *hp = &m->hp;
    if (hp->n_hc <= 0) return;
    const uint64_t E = (uint64_t)hp->n_embd, hc = (uint64_t)hp->n_hc;
    const uint64_t D = (uint64_t)hp->head_dim, di = (uint64_t)hp->idx_dim;
    const uint64_t ih = (uint64_t)hp->idx_n_head, H = (uint64_t)hp->n_head;
    const uint64_t G = (uint64_t)hp->o_groups, R = (uint64_t)hp->o_lora;
    uint64_t off = 0;
#define TAKE(field, floats) (o->field = off, off += (floats))
    TAKE(x, B * hc * E);
    TAKE(res, B * hc * E);
    TAKE(flat, B * hc * E);
    TAKE(mix, B * (2 + hc) * hc);
    TAKE(pre, B * hc);
    TAKE(post, B * hc);
    TAKE(comb, B * hc * hc);
    TAKE(qr, B * (uint64_t)hp->q_lora);
    TAKE(ca, B * 2 * D);
    TAKE(cg, B * 2 * D);
    TAKE(ia, B * 2 * di);
    TAKE(ig, B * 2 * di);
    TAKE(iq, B * ih * di);
    TAKE(iw, B * ih);
    TAKE(sel, B * (1 + (uint64_t)hp->idx_top_k));
    TAKE(gin, B * H * D / G);
    TAKE(gout, B * R);
    TAKE(oa, B * G * R);
#undef TAKE
    o->total = off;
}

bool sl_ds4_scratch_floats(const sl_model *m, uint64_t B, uint64_t *floats)
{
    sl_ds4_scratch sc;
    sl_ds4_scratch_layout(m, B, &sc);
    *floats = sc.total;
    return true;
}

static bool ds4_scratch_floats(const sl_model *m, const sl_layer_desc *d, uint64_t B,
                               uint64_t *floats)
{
    (void)d;
    return sl_ds4_scratch_floats(m, B, floats);
}

/* ---- small pieces ------------------------------------------------------ */

/* The orthonormal Hadamard transform, blockwise over n values in blocks
 * of h (ggml's fast Walsh-Hadamard: scaled first, then butterflies). */
static void hadamard(float *x, int n, int h)
{
    const float scale = 1.0f / sqrtf((float)h);
    for (int o = 0; o < n; o += h) {
        float *y = x + o;
        for (int j = 0; j < h; j++) y[j] *= scale;
        for (int len = 1; len < h; len <<= 1)
            for (int i = 0; i < h; i += 2 * len)
                for (int j = i; j < i + len; j++) {
                    const float u = y[j], v = y[j + len];
                    y[j] = u + v;
                    y[j + len] = u - v;
                }
    }
}

static void store_row(void *dst, const float *x, int n, size_t elem)
{
    if (elem == 2)
        for (int i = 0; i < n; i++) ((uint16_t *)dst)[i] = sl_f32_to_fp16(x[i]);
    else
        memcpy(dst, x, sizeof(float) * (size_t)n);
}

static void load_row(float *out, const void *src, int n, size_t elem)
{
    if (elem == 2)
        for (int i = 0; i < n; i++) out[i] = sl_fp16_to_f32(((const uint16_t *)src)[i]);
    else
        memcpy(out, src, sizeof(float) * (size_t)n);
}

/* Block b's cached rows: the compressed key (D values) then, on ratio-4
 * layers, the indexer key (di). */
static uint8_t *block_row(const sl_layer_state *st, const sl_ds4_desc *a, size_t elem, int b)
{
    return st->rows[1] + (size_t)b * (size_t)block_bytes(a, elem);
}

/* The softmax-pooled channels of one block: for each e < w, the entries
 * (val[j][e], score[j][e]) for j < cnt (stride ld), softmax over the
 * scores (ggml_soft_max), the products summed in double (ggml_sum_rows). */
static void pool_block(const float *const *vals, const float *const *scores, int cnt, int w,
                       float *out, float *tmp)
{
    for (int e = 0; e < w; e++) {
        for (int j = 0; j < cnt; j++) tmp[j] = scores[j] ? scores[j][e] : -INFINITY;
        sl_softmax(tmp, cnt);
        double sum = 0.0;
        for (int j = 0; j < cnt; j++) sum += (double)(vals[j] ? vals[j][e] * tmp[j] : 0.0f * tmp[j]);
        out[e] = (float)sum;
    }
}

/* One compressor (the attention's or the indexer's) for the batch's
 * tokens: their a and g rows (n, c w; g with ape added here) into the
 * state, and each block completed by a token pooled, normed, roped at its
 * first position, rotated when h > 0 and cached at column col of the
 * block's cached row. w is D or di. */
typedef struct comp_args {
    int ratio, w, h;
    const sl_tensor *ape, *norm;
    float *a_rows, *g_rows;  /* (n, c w) */
    float *state;            /* a then g: (slots, c w) each */
    size_t col;              /* values before this key in the block's row */
} comp_args;

static void compress(sl_session *s, const sl_layer *L, const sl_layer_state *st,
                     const comp_args *c, int n)
{
    const sl_ds4_desc *a = &L->d.ds4;
    const int r = c->ratio, w = c->w, cw = r == 4 ? 2 * w : w, slots = r == 4 ? 8 : 128;
    float *sa = c->state, *sg = c->state + (size_t)slots * (size_t)cw;
    const sl_mat ape = sl_fwd_mat(c->ape);
    float apev[2 * SL_DS4_MAX_HEAD], out[SL_DS4_MAX_HEAD], tmp[8];
    for (int t = 0; t < n; t++) {
        const int p = s->n_past + t, slot = p % slots;
        float *ga = c->a_rows + (size_t)t * (size_t)cw, *gg = c->g_rows + (size_t)t * (size_t)cw;
        sl_mat_row_to_float(&ape, p % r, apev);
        for (int i = 0; i < cw; i++) gg[i] = gg[i] + apev[i];
        memcpy(sa + (size_t)slot * (size_t)cw, ga, sizeof(float) * (size_t)cw);
        memcpy(sg + (size_t)slot * (size_t)cw, gg, sizeof(float) * (size_t)cw);
        if ((p + 1) % r != 0) continue;
        const int b = p / r;
        const float *vals[8], *scs[8];
        float *row = out;
        if (r == 128) {
            /* handled column by column below: 128 entries */
            for (int e = 0; e < w; e++) {
                float sc[128];
                for (int j = 0; j < 128; j++) sc[j] = sg[(size_t)j * (size_t)cw + e];
                sl_softmax(sc, 128);
                double sum = 0.0;
                for (int j = 0; j < 128; j++) sum += (double)(sa[(size_t)j * (size_t)cw + e] * sc[j]);
                row[e] = (float)sum;
            }
        } else {
            for (int j = 0; j < 4; j++) { /* the previous block's first halves */
                const int pj = (b - 1) * 4 + j;
                vals[j] = b > 0 ? sa + (size_t)(pj % 8) * (size_t)cw : NULL;
                scs[j] = b > 0 ? sg + (size_t)(pj % 8) * (size_t)cw : NULL;
            }
            for (int j = 0; j < 4; j++) { /* its own second halves */
                const int pj = b * 4 + j;
                vals[4 + j] = sa + (size_t)(pj % 8) * (size_t)cw + w;
                scs[4 + j] = sg + (size_t)(pj % 8) * (size_t)cw + w;
            }
            pool_block(vals, scs, 8, w, row, tmp);
        }
        sl_rmsnorm(row, row, c->norm->data, w, s->m->hp.rms_eps);
        sl_rope_apply(&a->comp_rope, row + (w - a->n_rot), 1, a->n_rot, (int64_t)b * r);
        if (c->h > 0) hadamard(row, w, c->h);
        store_row(block_row(st, a, s->kv_elem, b) + c->col * s->kv_elem, row, w, s->kv_elem);
    }
}

/* ---- the indexer ------------------------------------------------------- */

typedef struct idx_job {
    sl_session *s;
    const sl_ds4_desc *a;
    const sl_layer_state *st;
    const float *iq, *iw;
    int *sel;
    int n;
} idx_job;

static void idx_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    idx_job *j = ctx;
    sl_session *s = j->s;
    const sl_ds4_desc *a = j->a;
    const int di = a->idx_dim, ih = a->idx_n_head, kt = a->idx_top_k;
    float *kf = s->att + (size_t)tid * s->layout.att_floats;
    long long t0, t1;
    sl_split_range(j->n, chunk, n_chunks, &t0, &t1);
    for (long long t = t0; t < t1; t++) {
        const int p = s->n_past + (int)t, n_vis = (p + 1) / 4;
        const float *q = j->iq + (size_t)t * (size_t)ih * (size_t)di;
        const float *w = j->iw + (size_t)t * (size_t)ih;
        int *sel = j->sel + (size_t)t * (size_t)(1 + kt), *pos = sel + 1;
        float *sc = kf + di; /* the kept scores (sized at load: mix_ds4_check) */
        int cnt = 0;
        for (int b = 0; b < n_vis; b++) {
            load_row(kf, block_row(j->st, a, s->kv_elem, b) + (size_t)a->head_dim * s->kv_elem,
                     di, s->kv_elem);
            sl_mla_sel_push(pos, sc, &cnt, kt, b, sl_mla_idx_score(q, w, kf, ih, di));
        }
        sl_mla_sel_finish(pos, cnt);
        sel[0] = cnt;
    }
}

/* ---- attention --------------------------------------------------------- */

/* The keys a token attends, in cell order: the window's raw rows (cell =
 * position), then its compressed blocks (cell = comp_cell + block: all
 * visible ones, or the indexer's choice). llama.cpp's raw cache is a ring
 * of pad256(min(n_ctx, n_swa + n_ubatch)) cells followed by the
 * compressed rows; its cells are the positions until the ring wraps,
 * which a context of at most that size never does (then the tiles below
 * group the keys as its do: the bits are the reference's). Beyond, only
 * tiles that straddle the ring's end would group differently (float
 * rounding), and the result never depends on the batch size. */
typedef struct key_src {
    const uint8_t *ring;  /* position q < pos0's row: slot q mod n_swa, elem bytes each */
    const float *batch;   /* position q >= pos0's: batch row q - pos0 (f32) */
    size_t ring_stride;
    int n_swa, pos0;
    int lo, p;            /* the window [lo, p] */
    int comp_cell;        /* cell of block 0: a multiple of the tile */
    const uint8_t *comp;  /* block b's row at comp + b * comp_stride */
    size_t comp_stride;
    size_t batch_stride;  /* floats between batch rows (D) */
    const int *blocks;    /* the chosen blocks (ascending), NULL: 0 .. n_blocks - 1 */
    int n_blocks;
} key_src;

static int key_count(const key_src *k) { return k->p - k->lo + 1 + k->n_blocks; }

/* Key i's cell and row; *f32 says whether the row holds floats (else the
 * cache's values). */
static const uint8_t *key_at(const key_src *k, int i, int *cell, bool *f32)
{
    const int n_raw = k->p - k->lo + 1;
    if (i < n_raw) {
        const int q = k->lo + i;
        *cell = q;
        *f32 = q >= k->pos0;
        if (*f32) return (const uint8_t *)(k->batch + (size_t)(q - k->pos0) * k->batch_stride);
        return k->ring + (size_t)(q % k->n_swa) * k->ring_stride;
    }
    *f32 = false;
    const int b = k->blocks ? k->blocks[i - n_raw] : i - n_raw;
    *cell = k->comp_cell + b;
    return k->comp + (size_t)b * k->comp_stride;
}

typedef struct attn_job {
    sl_session *s;
    const sl_layer *L;
    const sl_layer_state *st;
    const int *sel;
    int n, per, groups;
} attn_job;

static float elem_at(const uint8_t *row, int d, size_t elem)
{
    return elem == 2 ? sl_fp16_to_f32(((const uint16_t *)row)[d]) : ((const float *)row)[d];
}

/* The tiled flash attention over the keys of ks, K = V, for query rows
 * q[0..nq) (stride D), with sinks; outputs out (stride D). Scratch:
 * sl_attn_scratch_floats(D, D, nq). */
static void attend(const sl_ds4_desc *a, const key_src *ks, const float *q, int nq,
                   const float *sinks, float *out, float *scratch, size_t elem)
{
    const int T = SL_ATTN_TILE, D = a->head_dim, nk = key_count(ks);
    float *kt = scratch, *sc = kt + (size_t)T * D;
    float *acc = sc + T + (size_t)T * D, *mx = acc + (size_t)nq * D, *sum = mx + nq;
    int cells[SL_ATTN_TILE];
    for (int r = 0; r < nq; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        for (int d = 0; d < D; d++) acc[(size_t)r * D + d] = 0.0f;
    }
    int i0 = 0;
    while (i0 < nk) {
        int c0;
        bool f0;
        key_at(ks, i0, &c0, &f0);
        const int ic = c0 - c0 % T;
        int i1 = i0, m = 0;
        for (; i1 < nk; i1++) {
            int c;
            bool f32;
            const uint8_t *row = key_at(ks, i1, &c, &f32);
            if (c >= ic + T) break;
            const int t = c - ic;
            cells[m++] = t;
            for (int d = 0; d < D; d++) kt[(size_t)t * D + d] = elem_at(row, d, f32 ? 4 : elem);
        }
        for (int r = 0; r < nq; r++) {
            const float *qr = q + (size_t)r * D;
            for (int t = 0; t < T; t++) sc[t] = -INFINITY;
            float tmax = -INFINITY;
            for (int i = 0; i < m; i++) {
                const int t = cells[i];
                float sv = 0.0f;
                for (int d = 0; d < D; d++) sv = fmaf(qr[d], kt[(size_t)t * D + d], sv);
                sc[t] = sv * a->scale;
                tmax = fmaxf(tmax, sc[t]);
            }
            float *ar = acc + (size_t)r * D;
            sl_attn_tile_softmax(sc, T, tmax, &mx[r], &sum[r], ar, D);
            for (int d = 0; d < D; d++) {
                float v = ar[d];
                for (int i = 0; i < m; i++) v = fmaf(sc[cells[i]], kt[(size_t)cells[i] * D + d], v);
                ar[d] = v;
            }
        }
        i0 = i1;
    }
    for (int r = 0; r < nq; r++) { /* the sinks, as sl_attn_sinks_tiled */
        const float sk = sinks[r];
        float ms = 1.0f, vs = 1.0f;
        if (sk > mx[r]) {
            ms = expf(mx[r] - sk);
            for (int d = 0; d < D; d++) acc[(size_t)r * D + d] *= ms;
        } else {
            vs = expf(sk - mx[r]);
        }
        sum[r] = fmaf(sum[r], ms, vs);
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        for (int d = 0; d < D; d++) out[(size_t)r * D + d] = acc[(size_t)r * D + d] * inv;
    }
}

/* The same attention as llama.cpp's one-chunk flash attention computes it
 * (its path for a micro-batch under SL_ATTN_QTILE tokens; the order of
 * sl_attn_attend_seq): key by key in cell order, the query rounded to f16
 * and ggml_vec_dot_f16 against an f16 row (a batch row rounded to f16
 * first), the running maximum rescaling an f16 accumulator, the row added
 * with its weight, the sum S x ms + w in two roundings; an f32 cache in
 * f32 throughout. Then the sinks and one division. Scratch as attend's. */
static void attend_seq(const sl_attn_kernels *kr, const sl_ds4_desc *a, const key_src *ks,
                       const float *q, int nq, const float *sinks, float *out, float *scratch,
                       size_t elem)
{
    const int D = a->head_dim, nk = key_count(ks);
    const bool h = elem == 2;
    float *qc = scratch, *acc = qc + (size_t)nq * D, *mx = acc + (size_t)nq * D;
    float *sum = mx + nq, *row = sum + nq;
    for (int r = 0; r < nq; r++) {
        const float *qr = q + (size_t)r * D;
        float *c = qc + (size_t)r * D;
        if (h)
            for (int d = 0; d < D; d++) ((uint16_t *)c)[d] = sl_f32_to_fp16(qr[d]);
        else memcpy(c, qr, (size_t)D * sizeof(float));
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        memset(acc + (size_t)r * D, 0, (size_t)D * sizeof(float));
    }
    for (int i = 0; i < nk; i++) {
        int cell;
        bool f32;
        const uint8_t *kp = key_at(ks, i, &cell, &f32);
        if (h && f32) {
            for (int d = 0; d < D; d++) ((uint16_t *)row)[d] = sl_f32_to_fp16(((const float *)kp)[d]);
            kp = (const uint8_t *)row;
        }
        for (int r = 0; r < nq; r++) {
            const float *c = qc + (size_t)r * D;
            const float sv = (h ? kr->dot_f16f16((const uint16_t *)c, (const uint16_t *)kp, D)
                                : sl_dot_f32_untiled(c, (const float *)kp, D)) * a->scale;
            float *ar = acc + (size_t)r * D;
            float ms = 1.0f, vs = 1.0f;
            if (sv > mx[r]) {
                ms = expf(mx[r] - sv);
                mx[r] = sv;
                if (h) kr->scale_f16((uint16_t *)ar, ms, D);
                else kr->scale_f32(ar, ms, D);
            } else {
                vs = expf(sv - mx[r]);
            }
            if (h) kr->mad_f16((uint16_t *)ar, (const uint16_t *)kp, vs, D);
            else kr->mad_f32(ar, (const float *)kp, vs, D);
            sum[r] = sum[r] * ms + vs;
        }
    }
    for (int r = 0; r < nq; r++) {
        float *ar = acc + (size_t)r * D;
        if (h) {
            for (int d = 0; d < D; d++) row[d] = sl_fp16_to_f32(((const uint16_t *)ar)[d]);
            memcpy(ar, row, (size_t)D * sizeof(float));
        }
        const float sk = sinks[r];
        float ms = 1.0f, vs = 1.0f;
        if (sk > mx[r]) {
            ms = expf(mx[r] - sk);
            for (int d = 0; d < D; d++) ar[d] *= ms;
        } else {
            vs = expf(sk - mx[r]);
        }
        sum[r] = sum[r] * ms + vs;
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        for (int d = 0; d < D; d++) out[(size_t)r * D + d] = ar[d] * inv;
    }
}

/* The key source of batch token t. */
static key_src token_keys(const attn_job *j, int t)
{
    const sl_session *s = j->s;
    const sl_ds4_desc *a = &j->L->d.ds4;
    const int p = s->n_past + t;
    const int lo = p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
    const int comp_cell = (s->n_ctx + SL_ATTN_TILE - 1) / SL_ATTN_TILE * SL_ATTN_TILE;
    key_src k = {(const uint8_t *)ring_of(j->st, a), s->k, (size_t)a->head_dim * s->kv_elem,
                 a->n_swa, s->n_past, lo, p, comp_cell, j->st->rows[1],
                 (size_t)block_bytes(a, s->kv_elem), (size_t)a->head_dim, NULL, 0};
    if (a->ratio == 128) {
        k.n_blocks = (p + 1) / 128;
    } else if (a->ratio == 4) {
        const int *sel = j->sel + (size_t)t * (size_t)(1 + a->idx_top_k);
        k.blocks = sel + 1;
        k.n_blocks = sel[0];
    }
    return k;
}

static void attn_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    attn_job *j = ctx;
    sl_session *s = j->s;
    const sl_ds4_desc *a = &j->L->d.ds4;
    const int H = a->n_head, D = a->head_dim;
    float *scratch = s->att + (size_t)tid * s->layout.att_floats;
    const uint8_t *kind = s->row_kind + s->n_past; /* each row's kernel, as mix_attn.c */
    long long w0, w1;
    sl_split_range((long long)j->n * j->groups, chunk, n_chunks, &w0, &w1);
    for (long long w = w0; w < w1; w++) {
        const int t = (int)(w / j->groups), h0 = (int)(w % j->groups) * j->per;
        const int nq = h0 + j->per <= H ? j->per : H - h0;
        const key_src ks = token_keys(j, t);
        const float *sinks = (const float *)j->L->sinks.data + h0;
        const float *q = s->q + ((size_t)t * H + (size_t)h0) * (size_t)D;
        float *o = s->attn_out + ((size_t)t * H + (size_t)h0) * (size_t)D;
        if (SL_ROW_ATTN_OF(kind[t]) != SL_ROW_TILED) attend_seq(s->attn_k, a, &ks, q, nq, sinks, o, scratch, s->kv_elem);
        else attend(a, &ks, q, nq, sinks, o, scratch, s->kv_elem);
    }
}

/* ---- the mixer --------------------------------------------------------- */

static void ds4_forward(sl_session *s, const sl_layer *L, int il, int n, float *out)
{
    const sl_hparams *hp = &s->m->hp;
    const sl_ds4_desc *a = &L->d.ds4;
    const sl_layer_state *st = &s->layer_state[il];
    sl_ds4_scratch sc;
    sl_ds4_scratch_layout(s->m, (uint64_t)s->n_batch_max, &sc);
    const int H = a->n_head, D = a->head_dim, ql = a->q_lora, nope = D - a->n_rot;
    const size_t qd = (size_t)H * (size_t)D;
    float *qr = sl_ds4_at(s, sc.qr), *kv = s->k;
    const int r = a->ratio;

    /* the products of the block input */
    const sl_mat wqa = sl_fwd_mat(&L->wq_a), wkv = sl_fwd_mat(&L->wkv);
    {
        const sl_mat *mats[2] = {&wqa, &wkv};
        float *ys[2] = {qr, kv};
        sl_fwd_mm_shared(s, mats, ys, 2, s->xb, n);
    }
    float *ca = sl_ds4_at(s, sc.ca), *cg = sl_ds4_at(s, sc.cg);
    float *ia = sl_ds4_at(s, sc.ia), *ig = sl_ds4_at(s, sc.ig), *iw = sl_ds4_at(s, sc.iw);
    if (r) {
        const sl_mat ck = sl_fwd_mat(&L->comp_kv), cgm = sl_fwd_mat(&L->comp_gate);
        if (r == 4) {
            const sl_mat ik = sl_fwd_mat(&L->idx_comp_kv), igm = sl_fwd_mat(&L->idx_comp_gate);
            const sl_mat *mats[4] = {&ck, &cgm, &ik, &igm};
            float *ys[4] = {ca, cg, ia, ig};
            sl_fwd_mm_shared(s, mats, ys, 4, s->xb, n);
            sl_fwd_mm_tensor(s, &L->idx_proj, s->xb, n, iw);
        } else {
            const sl_mat *mats[2] = {&ck, &cgm};
            float *ys[2] = {ca, cg};
            sl_fwd_mm_shared(s, mats, ys, 2, s->xb, n);
        }
    }
    for (int t = 0; t < n; t++)
        sl_rmsnorm(qr + (size_t)t * ql, qr + (size_t)t * ql, L->q_a_norm.data, ql, hp->rms_eps);
    sl_fwd_mm_tensor(s, &L->wq_b, qr, n, s->q);

    for (int t = 0; t < n; t++) {
        const int pos = s->n_past + t;
        float *q = s->q + (size_t)t * qd, *k = kv + (size_t)t * D;
        for (int h = 0; h < H; h++)
            sl_rmsnorm_unit(q + (size_t)h * D, q + (size_t)h * D, D, hp->rms_eps);
        sl_rope_apply(&a->rope, q + nope, H, D, pos);
        sl_rmsnorm(k, k, L->kv_a_norm.data, D, hp->rms_eps);
        sl_rope_apply(&a->rope, k + nope, 1, D, pos);
        if (a->hadamard) {
            hadamard(q, (int)qd, a->hadamard);
            hadamard(k, D, a->hadamard);
        }
        if (s->kv_elem == 2) /* read back as the cache holds it */
            for (int d = 0; d < D; d++) k[d] = sl_fp16_to_f32(sl_f32_to_fp16(k[d]));
    }

    /* the compressors: blocks completed by the batch's tokens */
    if (r) {
        comp_args c = {r, D, a->hadamard, &L->comp_ape, &L->comp_norm, ca, cg, st->seq, 0};
        compress(s, L, st, &c, n);
    }
    int *sel = (int *)sl_ds4_at(s, sc.sel);
    if (r == 4) {
        const int di = a->idx_dim;
        comp_args c = {4, di, a->idx_hadamard, &L->idx_comp_ape, &L->idx_comp_norm, ia, ig,
                       st->seq + 2 * 8 * 2 * (size_t)D, (size_t)D};
        compress(s, L, st, &c, n);
        /* the indexer's queries and weights */
        float *iq = sl_ds4_at(s, sc.iq);
        sl_fwd_mm_tensor(s, &L->idx_q_b, qr, n, iq);
        const int ih = a->idx_n_head;
        const float wscale = 1.0f / sqrtf((float)(di * ih));
        for (int t = 0; t < n; t++) {
            const int pos = s->n_past + t;
            float *q = iq + (size_t)t * ih * di;
            sl_rope_apply(&a->comp_rope, q + (di - a->n_rot), ih, di, pos);
            hadamard(q, ih * di, a->idx_hadamard);
            for (int h = 0; h < ih; h++) iw[(size_t)t * ih + h] *= wscale;
        }
        idx_job ij = {s, a, st, iq, iw, sel, n};
        sl_pool_run(s->pool, idx_worker, &ij, n < 64 ? n : 64);
    }

    /* attention: items of (token, group of heads) */
    const int groups = H < 4 ? H : 4, per = (H + groups - 1) / groups;
    attn_job j = {s, L, st, sel, n, per, (H + per - 1) / per};
    const int items = n * j.groups;
    sl_pool_run(s->pool, attn_worker, &j, items < 64 ? items : 64);

    /* the batch's last n_swa keys into the ring, for the batches after */
    float *ring = ring_of(st, a);
    const int first = n > a->n_swa ? n - a->n_swa : 0;
    for (int t = first; t < n; t++)
        store_row((uint8_t *)ring + (size_t)((s->n_past + t) % a->n_swa) * D * s->kv_elem,
                  kv + (size_t)t * D, D, s->kv_elem);

    /* de-rope, then the grouped low-rank output */
    sl_rope back = a->rope;
    back.inverse = true;
    for (int t = 0; t < n; t++) {
        float *o = s->attn_out + (size_t)t * qd;
        if (a->hadamard) hadamard(o, (int)qd, a->hadamard);
        sl_rope_apply(&back, o + nope, H, D, s->n_past + t);
    }
    const int G = a->o_groups, R = a->o_lora, gw = H * D / G;
    float *gin = sl_ds4_at(s, sc.gin), *gout = sl_ds4_at(s, sc.gout), *oa = sl_ds4_at(s, sc.oa);
    sl_mat woa = sl_fwd_mat(&L->wo_a);
    for (int g = 0; g < G; g++) {
        for (int t = 0; t < n; t++)
            memcpy(gin + (size_t)t * gw, s->attn_out + (size_t)t * qd + (size_t)g * gw,
                   sizeof(float) * (size_t)gw);
        sl_mat m = woa;
        m.rows = R;
        /* llama.cpp's wo_a is 3-d {gw, R, G}: no repacked form, no IQ panel */
        m.n_experts = SL_MM_BATCHED_3D;
        m.iq_panel = false;
        m.data = (const uint8_t *)L->wo_a.data + (size_t)g * (size_t)R * woa.row_bytes;
        const sl_mat *mats[1] = {&m};
        float *ys[1] = {gout};
        sl_fwd_mm_shared(s, mats, ys, 1, gin, n);
        for (int t = 0; t < n; t++)
            memcpy(oa + (size_t)t * G * R + (size_t)g * R, gout + (size_t)t * R,
                   sizeof(float) * (size_t)R);
    }
    sl_fwd_mm_tensor(s, &L->wo_b, oa, n, out);
}

const sl_mixer_ops sl_mixer_ds4 = {
    .name = "ds4",
    .cache = SL_CACHE_K_PLAIN,
    .cache_rows = "the raw window's keys and the compressed blocks",
    .state_rows = ds4_state_rows,
    .state_seq = ds4_state_seq,
    .forward = ds4_forward,
    .truncatable = false,
    .scratch_floats = ds4_scratch_floats,
};
