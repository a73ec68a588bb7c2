/* mla_indexer.c - glm-dsa's lightning indexer (ARCHS.md section 5) as
 * llama.cpp computes it, and the attention over its selection.
 *
 * Per token of a full layer:
 *   iq = Wiq_b qr as ih heads of di, ik = LayerNorm(Wik x) (eps 0) * w + b,
 *   both [rope | nope] with NORM rope on the first n_rot dims, both through
 *   the orthonormal Hadamard transform of size di (ggml's fast
 *   Walsh-Hadamard: scaled by 1/sqrt(di) first, then butterflies of span
 *   1, 2, 4, ...); ik is cached (f16 or f32 as the session's cache);
 *   w = (Wproj x) / sqrt(di ih);
 *   I(t, s) = sum_h w_h relu(iq_h . ik_s) over the visible s <= t, the
 *   dot in ggml_vec_dot_f32's order, the sum an FMA chain over heads;
 *   the selection is the top_k positions of highest I (equal scores as
 *   ggml_top_k's heap leaves them), all of them when fewer are visible.
 * Each token is one thread's work, so the selection never depends on the
 * thread count or the batch split. The indexer scores only choose keys:
 * their rounding matters only at an exact tie. */
#include "families/glm_dsa/mla_indexer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fwd_mm.h"
#include "engine/session.h"
#include "ops/ops.h"
#include "ops/vexp.h"
#include "quant/quant.h"
#include "util/hsum.h"
#include "util/pool.h"

static size_t sel_ints(const sl_mla_desc *a) { return 1 + 2 * (size_t)a->idx_top_k; }

int *sl_mla_sel(const sl_session *s, const sl_mla_desc *a, int t)
{
    return (int *)s->v + (size_t)t * sel_ints(a);
}

float *sl_mla_idx_keys(const sl_session *s, const sl_mla_desc *a, int n)
{
    return s->v + (size_t)n * sel_ints(a);
}

float *sl_mla_idx_weights(const sl_session *s, const sl_mla_desc *a, int n)
{
    return sl_mla_idx_keys(s, a, n) + (size_t)n * (size_t)a->idx_dim;
}

/* ggml_norm without its eps (glm-dsa never sets it): the mean from a
 * double sum, the variance from squares summed in eights (AVX2's order)
 * into a double, then the weight and the bias as two steps. */
static void layer_norm(float *x, const float *w, const float *bias, int n)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)x[i];
    const float mean = (float)sum / (float)n;
    double var = 0.0;
    int i = 0;
    for (; i + 7 < n; i += 8) {
        float sq[8];
        for (int j = 0; j < 8; j++) {
            x[i + j] = x[i + j] - mean;
            sq[j] = x[i + j] * x[i + j];
        }
        var += (double)sl_hsum8(sq);
    }
    for (; i < n; i++) {
        x[i] = x[i] - mean;
        var += (double)(x[i] * x[i]);
    }
    const float scale = 1.0f / sqrtf((float)(var / n));
    for (int j = 0; j < n; j++) x[j] *= scale;
    for (int j = 0; j < n; j++) x[j] *= w[j];
    for (int j = 0; j < n; j++) x[j] += bias[j];
}

/* The orthonormal Hadamard transform of n (a power of two) values. */
static void hadamard(float *x, int n)
{
    const float scale = 1.0f / sqrtf((float)n);
    for (int j = 0; j < n; j++) x[j] *= scale;
    for (int len = 1; len < n; len <<= 1)
        for (int i = 0; i < n; i += 2 * len)
            for (int j = i; j < i + len; j++) {
                const float u = x[j], v = x[j + len];
                x[j] = u + v;
                x[j + len] = u - v;
            }
}

/* The kept set as llama.cpp's ggml_top_k keeps it: std::partial_sort with
 * "greater" over the positions in order, which in GCC's libstdc++ is a heap
 * select: a heap of the first k entries whose root scores lowest, and each
 * later entry scoring strictly above the root takes its place. Equal scores
 * (several keys at exactly 0 are common: relu) thus fall where that heap's
 * moves put them, so its steps are followed exactly: the hole moved down
 * to a leaf along the child that does not score above its sibling, then the
 * value moved up while its parent scores above it. */
static void heap_adjust(int *pos, float *sc, int hole, int len, int vpos, float vsc)
{
    const int top = hole;
    int child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (sc[child] > sc[child - 1]) child--;
        pos[hole] = pos[child], sc[hole] = sc[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        pos[hole] = pos[child - 1], sc[hole] = sc[child - 1];
        hole = child - 1;
    }
    int parent = (hole - 1) / 2;
    while (hole > top && sc[parent] > vsc) {
        pos[hole] = pos[parent], sc[hole] = sc[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    pos[hole] = vpos, sc[hole] = vsc;
}

static void heap_make(int *pos, float *sc, int len)
{
    if (len < 2) return;
    for (int parent = (len - 2) / 2;; parent--) {
        heap_adjust(pos, sc, parent, len, pos[parent], sc[parent]);
        if (parent == 0) return;
    }
}

static int cmp_int(const void *a, const void *b);

void sl_mla_sel_push(int *pos, float *sc, int *cnt, int k, int p, float score)
{
    if (*cnt < k) {
        pos[*cnt] = p, sc[(*cnt)++] = score;
        if (*cnt == k) heap_make(pos, sc, k);
    } else if (score > sc[0]) {
        heap_adjust(pos, sc, 0, k, p, score);
    }
}

void sl_mla_sel_finish(int *pos, int cnt) { qsort(pos, (size_t)cnt, sizeof(int), cmp_int); }

static int cmp_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

float sl_mla_idx_score(const float *q, const float *w, const float *k, int ih, int di)
{
    float score = 0.0f;
    for (int h = 0; h < ih; h++) {
        const float qk = sl_dot_f32_untiled(q + (size_t)h * di, k, di);
        score = fmaf(qk > 0.0f ? qk : 0.0f, w[h], score);
    }
    return score;
}

typedef struct score_job {
    sl_session *s;
    const sl_mla_desc *a;
    const sl_layer_state *st;
    const float *iq, *w;
    int n;
} score_job;

static void score_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    score_job *j = ctx;
    sl_session *s = j->s;
    const sl_mla_desc *a = j->a;
    const int di = a->idx_dim, ih = a->idx_n_head, kt = a->idx_top_k;
    float *kf = s->att + (size_t)tid * s->layout.att_floats;
    long long t0, t1;
    sl_split_range(j->n, chunk, n_chunks, &t0, &t1);
    for (long long t = t0; t < t1; t++) {
        const int p_last = s->n_past + (int)t;
        const float *q = j->iq + (size_t)t * (size_t)ih * (size_t)di;
        const float *w = j->w + (size_t)t * (size_t)ih;
        int *sel = sl_mla_sel(s, a, (int)t), *pos = sel + 1;
        float *sc = (float *)(pos + kt);
        int cnt = 0;
        for (int p = 0; p <= p_last; p++) {
            const uint8_t *row = j->st->rows[1] + (size_t)p * j->st->row_bytes[1];
            if (s->kv_elem == 2)
                for (int d = 0; d < di; d++) kf[d] = sl_fp16_to_f32(((const uint16_t *)row)[d]);
            else
                memcpy(kf, row, sizeof(float) * (size_t)di);
            sl_mla_sel_push(pos, sc, &cnt, kt, p, sl_mla_idx_score(q, w, kf, ih, di));
        }
        sl_mla_sel_finish(pos, cnt);
        sel[0] = cnt;
    }
}

void sl_mla_indexer_run(sl_session *s, const sl_layer *L, int il, int n, const float *qr)
{
    const sl_mla_desc *a = &L->d.mla;
    const sl_layer_state *st = &s->layer_state[il];
    const int di = a->idx_dim, ih = a->idx_n_head;
    float *ik = sl_mla_idx_keys(s, a, n), *w = sl_mla_idx_weights(s, a, n);
    float *iq = s->attn_out;
    sl_fwd_mm_tensor(s, &L->idx_q_b, qr, n, iq);
    const float wscale = 1.0f / sqrtf((float)(di * ih));
    for (int t = 0; t < n; t++) {
        const int pos = s->n_past + t;
        float *k = ik + (size_t)t * di, *q = iq + (size_t)t * ih * di;
        layer_norm(k, L->idx_k_norm.data, L->idx_k_norm_b.data, di);
        sl_rope_apply(&a->rope, k, 1, di, pos);
        hadamard(k, di);
        uint8_t *dst = st->rows[1] + (size_t)pos * st->row_bytes[1];
        if (s->kv_elem == 2)
            for (int d = 0; d < di; d++) ((uint16_t *)dst)[d] = sl_f32_to_fp16(k[d]);
        else
            memcpy(dst, k, sizeof(float) * (size_t)di);
        sl_rope_apply(&a->rope, q, ih, di, pos);
        for (int h = 0; h < ih; h++) hadamard(q + (size_t)h * di, di);
        for (int h = 0; h < ih; h++) w[(size_t)t * ih + h] *= wscale;
    }
    score_job j = {s, a, st, iq, w, n};
    sl_pool_run(s->pool, score_worker, &j, n < 64 ? n : 64);
}

static float load_elem(const void *row, int i, bool f16)
{
    return f16 ? sl_fp16_to_f32(((const uint16_t *)row)[i]) : ((const float *)row)[i];
}

void sl_mla_attend_sparse(const sl_attn_block *b, bool f16, const int *pos, int n_sel)
{
    const int T = SL_ATTN_TILE, dk = b->dk, dv = b->dv;
    float *kt = b->scratch, *vt = kt + (size_t)T * dk, *sc = vt + (size_t)T * dv;
    float *acc = sc + T, *mx = acc + (size_t)b->n_q * dv, *sum = mx + b->n_q;
    for (int r = 0; r < b->n_q; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        for (int d = 0; d < dv; d++) acc[(size_t)r * dv + d] = 0.0f;
    }
    int i0 = 0;
    while (i0 < n_sel) {
        const int ic = pos[i0] - pos[i0] % T; /* the tile of the next selected key */
        int i1 = i0;
        while (i1 < n_sel && pos[i1] < ic + T) i1++;
        for (int i = i0; i < i1; i++) {
            const int t = pos[i] - ic;
            const uint8_t *kr = (const uint8_t *)b->k + (size_t)pos[i] * b->k_stride;
            const uint8_t *vr = (const uint8_t *)b->v + (size_t)pos[i] * b->v_stride;
            for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = load_elem(kr, d, f16);
            for (int d = 0; d < dv; d++) vt[(size_t)t * dv + d] = load_elem(vr, d, f16);
        }
        for (int r = 0; r < b->n_q; r++) {
            const float *q = b->q + (size_t)r * b->q_stride;
            for (int t = 0; t < T; t++) sc[t] = -INFINITY;
            float tmax = -INFINITY;
            for (int i = i0; i < i1; i++) {
                const int t = pos[i] - ic;
                float s = 0.0f;
                for (int d = 0; d < dk; d++) s = fmaf(q[d], kt[(size_t)d * T + t], s);
                sc[t] = s * b->scale;
                tmax = fmaxf(tmax, sc[t]);
            }
            float *ar = acc + (size_t)r * dv;
            sl_attn_tile_softmax(sc, T, tmax, &mx[r], &sum[r], ar, dv);
            for (int d = 0; d < dv; d++) {
                float v = ar[d];
                for (int i = i0; i < i1; i++) {
                    const int t = pos[i] - ic;
                    v = fmaf(sc[t], vt[(size_t)t * dv + d], v);
                }
                ar[d] = v;
            }
        }
        i0 = i1;
    }
    for (int r = 0; r < b->n_q; r++) {
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        float *o = b->out + (size_t)r * b->out_stride;
        for (int d = 0; d < dv; d++) o[d] = acc[(size_t)r * dv + d] * inv;
    }
}
