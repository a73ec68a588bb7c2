/* attn_kernels.c - scalar attention inner loops and run-time choice. */
#include "ops/attn_kernels.h"
#include "ops/attn_kernels_neon.h"

#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vexp.h"
#include "util/hsum.h"
#include "quant/quant.h"

/* Floats one token of a query block keeps (attn_kernels_avx2.c's
 * attend_heads: transposed queries and weights per eight rows,
 * accumulators, maxima and sums), and the block's shared K tile. */
static size_t tok_state_floats(int dk, int dv, int n_q)
{
    const size_t g8 = 8 * (size_t)((n_q + 7) / 8);
    return g8 * ((size_t)dk + SL_ATTN_TILE) + (size_t)n_q * ((size_t)dv + 2);
}

/* Tokens of a block worth keeping together: at most ~256 KiB of token
 * state, so that a block stays in the L2 cache; 0 or 1: none. */
static int tok_cap(int dk, int dv, int n_q)
{
    const size_t n = 65536 / tok_state_floats(dk, dv, n_q);
    return n > SL_ATTN_QBLOCK ? SL_ATTN_QBLOCK : (int)n;
}

int sl_attn_block_tokens(int dk, int dv, int n_q, size_t scratch_floats)
{
    const size_t kt = (size_t)SL_ATTN_TILE * (size_t)dk;
    const size_t fit = scratch_floats > kt ? (scratch_floats - kt) / tok_state_floats(dk, dv, n_q) : 0;
    const int cap = tok_cap(dk, dv, n_q);
    const int n = fit < (size_t)cap ? (int)fit : cap;
    return n < 1 ? 1 : n;
}

int sl_attn_tok_lo(const sl_attn_block *b, int i)
{
    const int np = b->n_pos + i;
    if (i == 0 || b->n_swa <= 0 || np - b->n_swa <= b->pos_lo) return b->pos_lo;
    return np - b->n_swa;
}

void sl_attn_attend_tokens(const sl_attn_kernels *kr, const sl_attn_block *b, int f16)
{
    void (*tok)(const sl_attn_block *) = f16 ? kr->attend_tok_f16 : kr->attend_tok_f32;
    if (b->n_tok > 1 && tok) {
        tok(b);
        return;
    }
    void (*one)(const sl_attn_block *) = f16 ? kr->attend_f16 : kr->attend_f32;
    const int nt = b->n_tok > 1 ? b->n_tok : 1;
    for (int i = 0; i < nt; i++) {
        sl_attn_block t = *b;
        t.n_tok = 1;
        t.n_pos = b->n_pos + i;
        t.pos_lo = sl_attn_tok_lo(b, i);
        t.q = b->q + (size_t)i * b->q_tok;
        t.out = b->out + (size_t)i * b->out_tok;
        one(&t);
    }
}

size_t sl_attn_scratch_floats(int dk, int dv, int n_q)
{
    /* tiled: K tile [dk][TILE], V tile [TILE][dv], scores [TILE], and per
     * row its accumulator [dv], maximum and sum; by position: per row its
     * converted query [dk], accumulator [dv], maximum and sum, and one
     * dequantised value row [dv] */
    const size_t tiled = (size_t)SL_ATTN_TILE * ((size_t)dk + (size_t)dv + 1) +
                         (size_t)n_q * ((size_t)dv + 2);
    /* ... and, for a split decode, each row's combined state [dv + 2] */
    const size_t seq = (size_t)n_q * ((size_t)dk + 2 * (size_t)dv + 4) + (size_t)dv;
    const size_t m = tiled > seq ? tiled : seq;
    /* a query block: the K tile [TILE][dk] and each token's state */
    const int cap = tok_cap(dk, dv, n_q);
    if (cap < 2) return m;
    const size_t blk = (size_t)SL_ATTN_TILE * (size_t)dk + (size_t)cap * tok_state_floats(dk, dv, n_q);
    return m > blk ? m : blk;
}

static float load_elem(const void *row, int i, int f16)
{
    return f16 ? sl_fp16_to_f32(((const uint16_t *)row)[i]) : ((const float *)row)[i];
}

/* The sinks' step of either form: the larger of each row's maximum and
 * its sink rescales the other side; S x ms + vs in one rounding (fused,
 * the tiled form's) or two (the one-chunk form's: llama.cpp's build keeps
 * the product and the sum apart on that path). */
static void sinks_add(const sl_attn_block *b, float *acc, const float *mx, float *sum, bool fused)
{
    for (int r = 0; r < b->n_q; r++) {
        const float sk = b->sinks[r];
        float ms = 1.0f, vs = 1.0f;
        if (sk > mx[r]) {
            ms = expf(mx[r] - sk);
            for (int d = 0; d < b->dv; d++) acc[(size_t)r * b->dv + d] *= ms;
        } else {
            vs = expf(sk - mx[r]);
        }
        sum[r] = fused ? fmaf(sum[r], ms, vs) : sum[r] * ms + vs;
    }
}

void sl_attn_sinks_tiled(const sl_attn_block *b, float *acc, const float *mx, float *sum)
{
    sinks_add(b, acc, mx, sum, true);
}


void sl_attn_tile_softmax(float *sc, int T, float tmax, float *mx, float *sum, float *acc, int dv)
{
    const float m_new = fmaxf(*mx, tmax);
    if (m_new > *mx) {
        const float ms = expf(*mx - m_new);
        for (int d = 0; d < dv; d++) acc[d] *= ms;
        *sum *= ms;
    }
    *mx = m_new;
    double tsum = 0.0;
    for (int g = 0; g < T; g += 8) {
        for (int t = g; t < g + 8; t++) sc[t] = sl_vexpf(sc[t] - m_new);
        tsum += (double)sl_hsum8(sc + g);
    }
    *sum = (float)((double)*sum + tsum);
}

static void attend_ref(const sl_attn_block *b, int f16)
{
    const int T = SL_ATTN_TILE, dk = b->dk, dv = b->dv;
    float *kt = b->scratch, *vt = kt + (size_t)T * dk, *sc = vt + (size_t)T * dv;
    float *acc = sc + T, *mx = acc + (size_t)b->n_q * dv, *sum = mx + b->n_q;
    for (int r = 0; r < b->n_q; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        for (int d = 0; d < dv; d++) acc[(size_t)r * dv + d] = 0.0f;
    }
    /* tiles stay aligned to position 0, as the reference's are to its cells */
    for (int ic = b->pos_lo - b->pos_lo % T; ic < b->n_pos; ic += T) {
        const int kv = b->n_pos - ic < T ? b->n_pos - ic : T;
        const int t_lo = b->pos_lo > ic ? b->pos_lo - ic : 0; /* earlier: outside the window */
        for (int t = t_lo; t < kv; t++) {
            const uint8_t *kr = (const uint8_t *)b->k + (size_t)(ic + t) * b->k_stride;
            const uint8_t *vr = (const uint8_t *)b->v + (size_t)(ic + t) * b->v_stride;
            for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = load_elem(kr, d, f16);
            for (int d = 0; d < dv; d++) vt[(size_t)t * dv + d] = load_elem(vr, d, f16);
        }
        for (int r = 0; r < b->n_q; r++) {
            const float *q = b->q + (size_t)r * b->q_stride;
            float tmax = -INFINITY;
            for (int t = 0; t < T; t++) {
                if (t >= kv || t < t_lo) {
                    sc[t] = -INFINITY;
                    continue;
                }
                float s = 0.0f;
                for (int d = 0; d < dk; d++) s = fmaf(q[d], kt[(size_t)d * T + t], s);
                sc[t] = s * b->scale;
                tmax = fmaxf(tmax, sc[t]);
            }
            float *a = acc + (size_t)r * dv;
            sl_attn_tile_softmax(sc, T, tmax, &mx[r], &sum[r], a, dv);
            for (int d = 0; d < dv; d++) {
                float v = a[d];
                for (int t = t_lo; t < kv; t++) v = fmaf(sc[t], vt[(size_t)t * dv + d], v);
                a[d] = v;
            }
        }
    }
    if (b->sinks) sl_attn_sinks_tiled(b, acc, mx, sum);
    for (int r = 0; r < b->n_q; r++) {
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        float *o = b->out + (size_t)r * b->out_stride;
        for (int d = 0; d < dv; d++) o[d] = acc[(size_t)r * dv + d] * inv;
    }
}

static void attend_f16_ref(const sl_attn_block *b) { attend_ref(b, 1); }
static void attend_f32_ref(const sl_attn_block *b) { attend_ref(b, 0); }

static float dot_f16_ref(const float *q, const uint16_t *k, int n)
{
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += q[i] * sl_fp16_to_f32(k[i]);
    return acc;
}

static void axpy_f16_ref(float *out, float a, const uint16_t *v, int n)
{
    for (int i = 0; i < n; i++) out[i] += a * sl_fp16_to_f32(v[i]);
}

static float dot_f32_ref(const float *q, const float *k, int n)
{
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += q[i] * k[i];
    return acc;
}

static void axpy_f32_ref(float *out, float a, const float *v, int n)
{
    for (int i = 0; i < n; i++) out[i] += a * v[i];
}

static void mad_f32_ref(float *y, const float *x, float v, int n)
{
    for (int i = 0; i < n; i++) y[i] = fmaf(x[i], v, y[i]);
}

static void scale_f32_ref(float *y, float v, int n)
{
    for (int i = 0; i < n; i++) y[i] *= v;
}

static void mad_f16_ref(uint16_t *y, const uint16_t *x, float v, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = sl_f32_to_fp16(fmaf(sl_fp16_to_f32(x[i]), v, sl_fp16_to_f32(y[i])));
}

static void scale_f16_ref(uint16_t *y, float v, int n)
{
    for (int i = 0; i < n; i++) y[i] = sl_f32_to_fp16(sl_fp16_to_f32(y[i]) * v);
}

static float dot_f16f16_ref(const uint16_t *x, const uint16_t *y, int n)
{
    float acc[4][8] = {{0}};
    const int np = n - n % 32;
    for (int i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) {
                const int e = i + 8 * j + l;
                acc[j][l] = fmaf(sl_fp16_to_f32(x[e]), sl_fp16_to_f32(y[e]), acc[j][l]);
            }
    float h[4];
    for (int l = 0; l < 8; l++) {
        acc[0][l] += acc[2][l];
        acc[1][l] += acc[3][l];
    }
    for (int l = 0; l < 8; l++) acc[0][l] += acc[1][l];
    for (int l = 0; l < 4; l++) h[l] = acc[0][l] + acc[0][l + 4];
    double sum = (double)((h[0] + h[1]) + (h[2] + h[3]));
    for (int i = np; i < n; i++) sum += (double)(sl_fp16_to_f32(x[i]) * sl_fp16_to_f32(y[i]));
    return (float)sum;
}

static const sl_attn_kernels ref = {
    dot_f16_ref,  axpy_f16_ref,  dot_f32_ref, axpy_f32_ref,  attend_f16_ref, attend_f32_ref,
    mad_f32_ref,  scale_f32_ref, mad_f16_ref, scale_f16_ref, dot_f16f16_ref, NULL, NULL, NULL, NULL,
};

/* x a + y b as llama.cpp's build computes its partials' combination
 * (contracted: the first product fused, the second rounded; the other
 * fusion and none differ in a quarter to a half of the outputs,
 * bench/llama_fattn.c with FATTN_THREADS). */
static float split_combine(float x, float a, float y, float b) { return fmaf(x, a, y * b); }

/* The score of one query row (converted as K's dot product takes it)
 * against one cached key row. */
static float seq_score(const sl_attn_kernels *kr, const sl_type_traits *kt, int k_type,
                       const void *krow, const void *qc, int dk)
{
    float s;
    if (k_type == SL_TYPE_F32) return sl_dot_f32_untiled(krow, qc, dk);
    if (k_type == SL_TYPE_F16) return kr->dot_f16f16(krow, qc, dk);
    kt->vec_dot(dk, &s, krow, qc);
    return s;
}

/* Attends the block's rows over positions [lo, hi) (or sel) from a fresh
 * state: acc[n_q][dv] in f32 at the end, mx and sum per row. */
static void seq_range(const sl_attn_kernels *kr, const sl_attn_block *b, int k_type, int v_type,
                      const float *qc, float *acc, float *mx, float *sum, float *vrow, int lo,
                      int hi)
{
    const int dk = b->dk, dv = b->dv, nq = b->n_q;
    const bool v16 = v_type == SL_TYPE_F16, v32 = v_type == SL_TYPE_F32;
    const sl_type_traits *kt = sl_type_get((uint32_t)k_type);
    const sl_type_traits *vt = sl_type_get((uint32_t)v_type);
    for (int r = 0; r < nq; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        memset(acc + (size_t)r * dv, 0, (size_t)dv * sizeof(float)); /* f16 zeros too */
    }
    const int n_ic = b->sel ? b->n_sel : hi - lo;
    if (v16 && k_type == SL_TYPE_F16 && kr->seq_range_f16) {
        kr->seq_range_f16(b, qc, acc, mx, sum, lo, hi);
    } else for (int i = 0; i < n_ic; i++) {
        const int ic = b->sel ? b->sel[i] : lo + i;
        const uint8_t *kp = (const uint8_t *)b->k + (size_t)ic * b->k_stride;
        const uint8_t *vp = (const uint8_t *)b->v + (size_t)ic * b->v_stride;
        const float *vf = v32 ? (const float *)vp : vrow;
        if (!v16 && !v32) vt->to_float(vp, vrow, dv);
        for (int r = 0; r < nq; r++) {
            const float s = seq_score(kr, kt, k_type, kp, qc + (size_t)r * dk, dk) * b->scale;
            float *a = acc + (size_t)r * dv;
            float ms = 1.0f, vs = 1.0f;
            if (s > mx[r]) {
                ms = expf(mx[r] - s);
                mx[r] = s;
                if (v16) kr->scale_f16((uint16_t *)a, ms, dv);
                else kr->scale_f32(a, ms, dv);
            } else {
                vs = expf(s - mx[r]);
            }
            if (v16) kr->mad_f16((uint16_t *)a, (const uint16_t *)vp, vs, dv);
            else kr->mad_f32(a, vf, vs, dv);
            /* two roundings: llama.cpp's build does not contract S*ms + vs
             * into an FMA (bench/llama_fattn.c found the fused form off by an
             * ulp whenever a new maximum rescaled the sum) */
            sum[r] = sum[r] * ms + vs;
        }
    }
    if (v16) /* the f16 accumulators to f32, through the value row's room */
        for (int r = 0; r < nq; r++) {
            float *a = acc + (size_t)r * dv;
            for (int d = 0; d < dv; d++) vrow[d] = sl_fp16_to_f32(((const uint16_t *)a)[d]);
            memcpy(a, vrow, (size_t)dv * sizeof(float));
        }
}

void sl_attn_attend_seq(const sl_attn_kernels *kr, const sl_attn_block *b, int k_type,
                        int v_type)
{
    const int dk = b->dk, dv = b->dv, nq = b->n_q;
    const sl_type_traits *kt = sl_type_get((uint32_t)k_type);
    float *qc = b->scratch, *acc = qc + (size_t)nq * dk, *mx = acc + (size_t)nq * dv;
    float *sum = mx + nq, *vrow = sum + nq, *fin = vrow + dv, *fmx = fin + (size_t)nq * dv;
    float *fsum = fmx + nq;
    for (int r = 0; r < nq; r++) {
        const float *q = b->q + (size_t)r * b->q_stride;
        float *c = qc + (size_t)r * dk;
        if (k_type == SL_TYPE_F32) memcpy(c, q, (size_t)dk * sizeof(float));
        else if (k_type == SL_TYPE_F16 && kr->to_f16) kr->to_f16(q, (uint16_t *)c, dk);
        else if (k_type == SL_TYPE_F16)
            for (int d = 0; d < dk; d++) ((uint16_t *)c)[d] = sl_f32_to_fp16(q[d]);
        else sl_type_get(kt->vec_dot_type)->from_float(q, c, dk);
    }
    if (b->split_n <= 1 || b->sel) {
        seq_range(kr, b, k_type, v_type, qc, acc, mx, sum, vrow, b->pos_lo, b->n_pos);
        if (b->sinks) sinks_add(b, acc, mx, sum, false); /* one-chunk: two roundings */
    } else {
        for (int r = 0; r < nq; r++) {
            fmx[r] = -INFINITY;
            fsum[r] = 0.0f;
            memset(fin + (size_t)r * dv, 0, (size_t)dv * sizeof(float));
        }
        for (int c = 0; c < b->split_n; c++) {
            int lo = c * b->split_len, hi = lo + b->split_len;
            if (lo < b->pos_lo) lo = b->pos_lo;
            if (hi > b->n_pos) hi = b->n_pos;
            seq_range(kr, b, k_type, v_type, qc, acc, mx, sum, vrow, lo, hi > lo ? hi : lo);
            for (int r = 0; c == 0 && b->sinks && r < nq; r++) { /* the first chunk's */
                const float sk = b->sinks[r];
                float ms = 1.0f, vs = 1.0f;
                if (sk > mx[r]) {
                    ms = expf(mx[r] - sk);
                    mx[r] = sk;
                    for (int d = 0; d < dv; d++) acc[(size_t)r * dv + d] *= ms;
                } else {
                    vs = expf(sk - mx[r]);
                }
                sum[r] = sum[r] * ms + vs;
            }
            for (int r = 0; r < nq; r++) {
                if (sum[r] == 0.0f) continue;
                const float m = fmaxf(fmx[r], mx[r]);
                const float so = expf(fmx[r] - m), sn = expf(mx[r] - m);
                float *f = fin + (size_t)r * dv;
                const float *a = acc + (size_t)r * dv;
                for (int d = 0; d < dv; d++) f[d] = split_combine(f[d], so, a[d], sn);
                fsum[r] = split_combine(fsum[r], so, sum[r], sn);
                fmx[r] = m;
            }
        }
        memcpy(acc, fin, sizeof(float) * (size_t)nq * dv);
        memcpy(sum, fsum, sizeof(float) * (size_t)nq);
    }
    for (int r = 0; r < nq; r++) {
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        float *o = b->out + (size_t)r * b->out_stride;
        for (int d = 0; d < dv; d++) o[d] = acc[(size_t)r * dv + d] * inv;
    }
}

const sl_attn_kernels *sl_attn_kernels_ref(void) { return &ref; }

#if !defined(__x86_64__)
const sl_attn_kernels *sl_attn_kernels_avx2(void) { return NULL; }
const sl_attn_kernels *sl_attn_kernels_avx512(void) { return NULL; }
#endif

const sl_attn_kernels *sl_attn_kernels_get(void)
{
    const sl_attn_kernels *k = NULL;
    if (sl_quant_isa() == SL_ISA_AVX2) k = sl_attn_kernels_avx512();
    if (sl_quant_isa() == SL_ISA_AVX2 && !k) k = sl_attn_kernels_avx2();
    if (sl_quant_isa() == SL_ISA_NEON) k = sl_attn_kernels_neon();
    return k ? k : &ref;
}
