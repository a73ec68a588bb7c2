/* attn_kernels_avx2.c - attention inner loops with AVX2, FMA and F16C.
 * Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them. */
#include "ops/attn_kernels.h"
#include "ops/attn_ahead.h"
#include "ops/attn_kernels512.h"
#include "ops/vexp_avx2.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

/* Register arrays indexed by constant-bound loops stay in registers only
 * when the loops are unrolled, which -O2 does not do by itself. */
#define UNROLL _Pragma("GCC unroll 8")

static float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static float dot_f16(const float *q, const uint16_t *k, int n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i)));
        __m256 k1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8)));
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), k0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), k1, acc1);
    }
    float acc = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) acc += q[i] * _cvtsh_ss(k[i]);
    return acc;
}

static void axpy_f16(float *out, float a, const uint16_t *v, int n)
{
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i)));
        _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, x, _mm256_loadu_ps(out + i)));
    }
    for (; i < n; i++) out[i] += a * _cvtsh_ss(v[i]);
}

static float dot_f32(const float *q, const float *k, int n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), acc1);
    }
    float acc = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) acc += q[i] * k[i];
    return acc;
}

static void axpy_f32(float *out, float a, const float *v, int n)
{
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(v + i),
                                                  _mm256_loadu_ps(out + i)));
    for (; i < n; i++) out[i] += a * v[i];
}

/* Transposes the 8 x 8 block r[0..8) in place: r[j] lane i <- r[i] lane j. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    UNROLL for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    UNROLL for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    UNROLL for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* K rows [ic, ic + 8) of an f16 cache, columns [d, d + 8), into the
 * transposed tile kt[d][t]. */
static void load_k8x8_f16(const sl_attn_block *b, int ic, int t, int d, float *kt)
{
    __m256 r[8];
    UNROLL for (int i = 0; i < 8; i++) {
        const uint16_t *kh = (const uint16_t *)((const uint8_t *)b->k + (size_t)(ic + t + i) * b->k_stride);
        r[i] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kh + d)));
    }
    transpose8(r);
    UNROLL for (int j = 0; j < 8; j++) _mm256_storeu_ps(kt + (size_t)(d + j) * SL_ATTN_TILE + t, r[j]);
}

/* The K tile, transposed to kt[d][t] as f32 (positions outside [t_lo, kv)
 * zero; they are masked before any use). V is read in place. */
static void load_k_tile(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, float *kt)
{
    const int T = SL_ATTN_TILE, dk = b->dk;
    /* whole eights of positions and key dims by register transposes (a
     * window's first tile takes the scalar path) */
    const int t8 = f16 && dk % 8 == 0 && t_lo == 0 ? kv - kv % 8 : 0;
    for (int t = 0; t < t8; t += 8)
        for (int d = 0; d < dk; d += 8) load_k8x8_f16(b, ic, t, d, kt);
    for (int t = 0; t < t_lo; t++)
        for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = 0.0f;
    for (int t = t_lo > t8 ? t_lo : t8; t < kv; t++) {
        const uint8_t *kr = (const uint8_t *)b->k + (size_t)(ic + t) * b->k_stride;
        if (f16) {
            const uint16_t *kh = (const uint16_t *)kr;
            for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = _cvtsh_ss(kh[d]);
        } else {
            const float *kf = (const float *)kr;
            for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = kf[d];
        }
    }
    for (int t = kv; t < T; t++)
        for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = 0.0f;
}

/* Raw scores q . k (one FMA chain over d per lane = position) of two query
 * rows against 32 positions [8 v0, 8 v0 + 32) of the transposed tile; each
 * K load serves both rows. */
static void scores_2x4(const float *kt, int dk, const float *qa, const float *qb, int v0,
                       float *sa, float *sb)
{
    enum { T = SL_ATTN_TILE };
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0,
           b3 = a0;
    const float *k = kt + 8 * v0;
    for (int d = 0; d < dk; d++, k += T) {
        const __m256 k0 = _mm256_loadu_ps(k), k1 = _mm256_loadu_ps(k + 8);
        const __m256 k2 = _mm256_loadu_ps(k + 16), k3 = _mm256_loadu_ps(k + 24);
        const __m256 x = _mm256_set1_ps(qa[d]), y = _mm256_set1_ps(qb[d]);
        a0 = _mm256_fmadd_ps(x, k0, a0);
        a1 = _mm256_fmadd_ps(x, k1, a1);
        a2 = _mm256_fmadd_ps(x, k2, a2);
        a3 = _mm256_fmadd_ps(x, k3, a3);
        b0 = _mm256_fmadd_ps(y, k0, b0);
        b1 = _mm256_fmadd_ps(y, k1, b1);
        b2 = _mm256_fmadd_ps(y, k2, b2);
        b3 = _mm256_fmadd_ps(y, k3, b3);
    }
    sa += 8 * v0, sb += 8 * v0;
    _mm256_storeu_ps(sa, a0), _mm256_storeu_ps(sa + 8, a1);
    _mm256_storeu_ps(sa + 16, a2), _mm256_storeu_ps(sa + 24, a3);
    _mm256_storeu_ps(sb, b0), _mm256_storeu_ps(sb + 8, b1);
    _mm256_storeu_ps(sb + 16, b2), _mm256_storeu_ps(sb + 24, b3);
}

/* The same for one row over all 64 positions (an odd group's last row). */
static void scores_1x8(const float *kt, int dk, const float *q, float *s_out)
{
    enum { T = SL_ATTN_TILE, NV = SL_ATTN_TILE / 8 };
    __m256 s[NV];
    for (int v = 0; v < NV; v++) s[v] = _mm256_setzero_ps();
    for (int d = 0; d < dk; d++) {
        const __m256 qd = _mm256_set1_ps(q[d]);
        for (int v = 0; v < NV; v++)
            s[v] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kt + (size_t)d * T + 8 * v), s[v]);
    }
    for (int v = 0; v < NV; v++) _mm256_storeu_ps(s_out + 8 * v, s[v]);
}

static __m256 load_v8(const void *row, int d, int f16)
{
    return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + d)))
               : _mm256_loadu_ps((const float *)row + d);
}

/* acc[r][d..d+8 C) of NR rows += sum over t in [t_lo, kv) of p[r][t] V[t],
 * one FMA chain over positions per lane, NR x C chains at once, each V
 * load serving every row. */
#define DEF_VACC(NAME, NR, C)                                                                   \
    static void NAME(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, const float *p, \
                     size_t rs, size_t ts, float *acc, int d, sl_attn_ahead *ahead)             \
    {                                                                                           \
        const int dv = b->dv;                                                                   \
        __m256 o[NR][C];                                                                        \
        UNROLL for (int r = 0; r < NR; r++)                                                     \
            UNROLL for (int c = 0; c < C; c++) o[r][c] = _mm256_loadu_ps(acc + (size_t)r * dv + d + 8 * c); \
        const uint8_t *vr = (const uint8_t *)b->v + (size_t)(ic + t_lo) * b->v_stride;         \
        for (int t = t_lo; t < kv; t++, vr += b->v_stride) {                                    \
            sl_attn_ask_one(ahead);                                                             \
            __m256 x[C];                                                                        \
            UNROLL for (int c = 0; c < C; c++) x[c] = load_v8(vr, d + 8 * c, f16);                     \
            UNROLL for (int r = 0; r < NR; r++) {                                                      \
                const __m256 w = _mm256_set1_ps(p[(size_t)r * rs + (size_t)t * ts]);            \
                UNROLL for (int c = 0; c < C; c++) o[r][c] = _mm256_fmadd_ps(w, x[c], o[r][c]);        \
            }                                                                                   \
        }                                                                                       \
        UNROLL for (int r = 0; r < NR; r++)                                                     \
            UNROLL for (int c = 0; c < C; c++) _mm256_storeu_ps(acc + (size_t)r * dv + d + 8 * c, o[r][c]); \
    }
DEF_VACC(vacc_4x2, 4, 2)
DEF_VACC(vacc_2x4, 2, 4)
DEF_VACC(vacc_1x8, 1, 8)
DEF_VACC(vacc_4x1, 4, 1)
DEF_VACC(vacc_2x1, 2, 1)
DEF_VACC(vacc_1x1, 1, 1)

/* The value step of one tile for nq rows whose accumulators start at acc
 * (dv apart) and whose weights are p[r rs + t ts]: whole eights of dims by
 * the blocked chains above, the dv % 8 tail one scalar chain per element. */
static void vacc_tile(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, const float *p,
                      size_t rs, size_t ts, int nq, float *acc, sl_attn_ahead *ahead)
{
    const int dv = b->dv, dv8 = dv - dv % 8;
    int r = 0;
    for (; r + 4 <= nq; r += 4) {
        float *a = acc + (size_t)r * dv;
        const float *pr = p + (size_t)r * rs;
        int d = 0;
        for (; d + 16 <= dv8; d += 16) vacc_4x2(b, ic, t_lo, kv, f16, pr, rs, ts, a, d, ahead);
        for (; d < dv8; d += 8) vacc_4x1(b, ic, t_lo, kv, f16, pr, rs, ts, a, d, ahead);
    }
    for (; r + 2 <= nq; r += 2) {
        float *a = acc + (size_t)r * dv;
        const float *pr = p + (size_t)r * rs;
        int d = 0;
        for (; d + 32 <= dv8; d += 32) vacc_2x4(b, ic, t_lo, kv, f16, pr, rs, ts, a, d, ahead);
        for (; d < dv8; d += 8) vacc_2x1(b, ic, t_lo, kv, f16, pr, rs, ts, a, d, ahead);
    }
    for (; r < nq; r++) {
        float *a = acc + (size_t)r * dv;
        const float *pr = p + (size_t)r * rs;
        int d = 0;
        for (; d + 64 <= dv8; d += 64) vacc_1x8(b, ic, t_lo, kv, f16, pr, rs, ts, a, d, ahead);
        for (; d < dv8; d += 8) vacc_1x1(b, ic, t_lo, kv, f16, pr, rs, ts, a, d, ahead);
    }
    for (int d = dv8; d < dv; d++)
        for (r = 0; r < nq; r++) {
            float o = acc[(size_t)r * dv + d];
            for (int t = t_lo; t < kv; t++) {
                const uint8_t *vr = (const uint8_t *)b->v + (size_t)(ic + t) * b->v_stride;
                const float x = f16 ? _cvtsh_ss(((const uint16_t *)vr)[d]) : ((const float *)vr)[d];
                o = fmaf(p[(size_t)r * rs + (size_t)t * ts], x, o);
            }
            acc[(size_t)r * dv + d] = o;
        }
}

/* Converts an f16 tile's V rows [t_lo, kv) once into room (T x dv floats:
 * the K tile's room, free once the scores are computed) when it fits
 * (dv <= dk), and points *vb at them (else *vb = *b). Returns whether the
 * value step reads f16: then at tile start *vic = ic, else *vic = 0. */
static int values_f32(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, float *room,
                      sl_attn_block *vb, int *vic)
{
    *vb = *b;
    *vic = ic;
    const int dv = b->dv;
    if (!f16 || dv > b->dk) return f16;
    for (int t = t_lo; t < kv; t++) {
        const uint16_t *vh = (const uint16_t *)((const uint8_t *)b->v + (size_t)(ic + t) * b->v_stride);
        float *o = room + (size_t)t * dv;
        int d = 0;
        for (; d + 8 <= dv; d += 8)
            _mm256_storeu_ps(o + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vh + d))));
        for (; d < dv; d++) o[d] = _cvtsh_ss(vh[d]);
    }
    vb->v = room, vb->v_stride = (size_t)dv * sizeof(float);
    *vic = 0;
    return 0;
}

/* One tile's softmax step for a row whose raw scores are in s[0..T): the
 * scale and mask, the tile maximum, the rescale of its accumulator and
 * sum, then s replaced by the weights e^(s - max) and their sum added. */
static void softmax_tile_row(const sl_attn_block *b, const __m256 *outside, float *s, float *a,
                             float *mx, float *sum)
{
    enum { NV = SL_ATTN_TILE / 8 };
    const __m256 scale = _mm256_set1_ps(b->scale), ninf = _mm256_set1_ps(-INFINITY);
    __m256 sv[NV];
    __m256 vmax = ninf;
    for (int v = 0; v < NV; v++) {
        sv[v] = _mm256_blendv_ps(_mm256_mul_ps(_mm256_loadu_ps(s + 8 * v), scale), ninf, outside[v]);
        vmax = _mm256_max_ps(vmax, sv[v]);
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float tmax = _mm_cvtss_f32(m4);
    const float m_new = fmaxf(*mx, tmax);
    if (m_new > *mx) {
        const float ms = expf(*mx - m_new);
        const __m256 msv = _mm256_set1_ps(ms);
        int d = 0;
        for (; d + 8 <= b->dv; d += 8) _mm256_storeu_ps(a + d, _mm256_mul_ps(_mm256_loadu_ps(a + d), msv));
        for (; d < b->dv; d++) a[d] *= ms;
        *sum *= ms;
    }
    *mx = m_new;
    const __m256 mv = _mm256_set1_ps(m_new);
    double tsum = 0.0;
    for (int v = 0; v < NV; v++) {
        const __m256 p = sl_vexp8(_mm256_sub_ps(sv[v], mv));
        _mm256_storeu_ps(s + 8 * v, p);
        tsum += (double)hsum(p);
    }
    *sum = (float)((double)*sum + tsum);
}

/* The query rows of the group together, for groups under eight rows: per
 * tile the K tile transposed once, the scores of two rows at a time (each
 * K load shared), each row's softmax step, then the values of four rows at
 * a time (each V load shared). Every row's arithmetic is the one-row
 * kernel's, step for step. */
static void attend_rows(const sl_attn_block *b, int f16)
{
    enum { T = SL_ATTN_TILE, NV = SL_ATTN_TILE / 8 };
    const int dk = b->dk, dv = b->dv, nq = b->n_q;
    if (nq > dv) { /* more rows than the score room holds: in slices of dv rows */
        for (int r0 = 0; r0 < nq; r0 += dv) {
            sl_attn_block s = *b;
            s.n_q = nq - r0 < dv ? nq - r0 : dv;
            s.q = b->q + (size_t)r0 * b->q_stride;
            s.out = b->out + (size_t)r0 * b->out_stride;
            s.sinks = b->sinks ? b->sinks + r0 : NULL;
            attend_rows(&s, f16);
        }
        return;
    }
    /* scratch: kt [dk][T], the rows' scores p [n_q][T] (in the V tile's
     * room, n_q <= dv), acc [n_q][dv], mx, sum */
    float *kt = b->scratch, *p = kt + (size_t)T * dk, *sc = p + (size_t)T * dv;
    float *acc = sc + T, *mx = acc + (size_t)nq * dv, *sum = mx + nq;
    for (int r = 0; r < nq; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        memset(acc + (size_t)r * dv, 0, (size_t)dv * sizeof(float));
    }
    /* tiles stay aligned to position 0, as the reference's are to its cells */
    for (int ic = b->pos_lo - b->pos_lo % T; ic < b->n_pos; ic += T) {
        const int kv = b->n_pos - ic < T ? b->n_pos - ic : T;
        const int t_lo = b->pos_lo > ic ? b->pos_lo - ic : 0; /* earlier: outside the window */
        load_k_tile(b, ic, t_lo, kv, f16, kt);
        /* the tile's lanes outside [t_lo, kv) take no weight */
        __m256 outside[NV];
        for (int v = 0; v < NV; v++) {
            const __m256 lane = _mm256_add_ps(_mm256_set1_ps((float)(8 * v)),
                                              _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7));
            outside[v] = _mm256_or_ps(_mm256_cmp_ps(lane, _mm256_set1_ps((float)kv), _CMP_GE_OQ),
                                      _mm256_cmp_ps(lane, _mm256_set1_ps((float)t_lo), _CMP_LT_OQ));
        }
        int r = 0;
        for (; r + 2 <= nq; r += 2) {
            const float *qa = b->q + (size_t)r * b->q_stride, *qb = qa + b->q_stride;
            float *sa = p + (size_t)r * T, *sb = sa + T;
            scores_2x4(kt, dk, qa, qb, 0, sa, sb);
            scores_2x4(kt, dk, qa, qb, 4, sa, sb);
        }
        if (r < nq) scores_1x8(kt, dk, b->q + (size_t)r * b->q_stride, p + (size_t)r * T);
        for (r = 0; r < nq; r++)
            softmax_tile_row(b, outside, p + (size_t)r * T, acc + (size_t)r * dv, mx + r, sum + r);
        sl_attn_block vb;
        int vic;
        const int v16 = values_f32(b, ic, t_lo, kv, f16, kt, &vb, &vic);
        /* the next tile's K rows asked for while the values compute */
        sl_attn_ahead ak = sl_attn_ahead_rows(b->k, b->k_stride, ic + T, b->n_pos);
        vacc_tile(&vb, vic, t_lo, kv, v16, p, T, 1, nq, acc, &ak);
    }
    if (b->sinks) sl_attn_sinks_ref(b, acc, mx, sum, b->sink_fma);
    for (int r = 0; r < nq; r++) {
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        float *o = b->out + (size_t)r * b->out_stride;
        for (int d = 0; d < dv; d++) o[d] = acc[(size_t)r * dv + d] * inv;
    }
}

/* Scores of eight query rows (the lanes) against eight positions t0..t0+8
 * of the converted K tile kf[t][dk]: lane r of S[i] is q_r . k_(t0+i), one
 * FMA chain over d, as the one-row kernel computes each. */
__attribute__((noinline)) static void scores_heads8(const float *qt, const float *kf, int dk,
                                                    int t0, __m256 S[8], sl_attn_ahead *ahead)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    const size_t n = (size_t)dk;
    const float *k0 = kf + (size_t)t0 * n, *k1 = k0 + n, *k2 = k1 + n, *k3 = k2 + n;
    const float *k4 = k3 + n, *k5 = k4 + n, *k6 = k5 + n, *k7 = k6 + n;
    for (size_t d = 0; d < n; d++) {
        sl_attn_ask_one(ahead);
        const __m256 q = _mm256_loadu_ps(qt + 8 * d);
        s0 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k0 + d), s0);
        s1 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k1 + d), s1);
        s2 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k2 + d), s2);
        s3 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k3 + d), s3);
        s4 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k4 + d), s4);
        s5 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k5 + d), s5);
        s6 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k6 + d), s6);
        s7 = _mm256_fmadd_ps(q, _mm256_broadcast_ss(k7 + d), s7);
    }
    S[0] = s0, S[1] = s1, S[2] = s2, S[3] = s3, S[4] = s4, S[5] = s5, S[6] = s6, S[7] = s7;
}

/* The K rows [t_lo, kv) of a tile as f32 rows kf[t][dk] (others zero). */
static void load_k_rows(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, float *kf)
{
    const int T = SL_ATTN_TILE, dk = b->dk;
    for (int t = 0; t < T; t++) {
        float *o = kf + (size_t)t * dk;
        if (t < t_lo || t >= kv) {
            memset(o, 0, (size_t)dk * sizeof(float));
            continue;
        }
        const uint8_t *kr = (const uint8_t *)b->k + (size_t)(ic + t) * b->k_stride;
        if (!f16) {
            memcpy(o, kr, (size_t)dk * sizeof(float));
            continue;
        }
        const uint16_t *kh = (const uint16_t *)kr;
        int d = 0;
        for (; d + 8 <= dk; d += 8)
            _mm256_storeu_ps(o + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kh + d))));
        for (; d < dk; d++) o[d] = _cvtsh_ss(kh[d]);
    }
}

/* The queries of nq rows transposed into qt [G][dk][8] (G groups of eight
 * rows, the last padded with zero queries), the rows' maxima at -inf, sums
 * and accumulators at zero. */
static void heads_init(const sl_attn_block *b, const float *q, float *qt, float *acc, float *mx,
                       float *sum)
{
    const int dk = b->dk, dv = b->dv, nq = b->n_q, G = (nq + 7) / 8;
    for (int g = 0; g < G; g++)
        for (int d = 0; d < dk; d++)
            for (int l = 0; l < 8; l++) {
                const int r = 8 * g + l;
                qt[((size_t)g * dk + d) * 8 + l] = r < nq ? q[(size_t)r * b->q_stride + d] : 0.0f;
            }
    for (int r = 0; r < nq; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        memset(acc + (size_t)r * dv, 0, (size_t)dv * sizeof(float));
    }
}

/* One tile's scores and softmax step for one token's rows against the
 * converted K rows kf[t][dk] (positions [t_lo, kv) of the tile its own;
 * wide: the pairs of sl_attn512_k_pairs): per eight rows the scores of
 * eight positions at a time (wide: 32 by the 512-bit step), each lane one
 * head's FMA chain over d; the tile maximum, the rescale of accumulators
 * and sums, the weights by the polynomial exponential into pw [G][T][8]
 * and their sums in eights then double, lane by lane in the one-row
 * kernel's order. */
static void heads_scores(const sl_attn_block *b, const float *kf, int t_lo, int kv,
                         const float *qt, float *pw, float *acc, float *mx, float *sum, int wide,
                         sl_attn_ahead *ahead)
{
    enum { T = SL_ATTN_TILE };
    const int dk = b->dk, dv = b->dv, nq = b->n_q, G = (nq + 7) / 8;
    const __m256 scale = _mm256_set1_ps(b->scale), ninf = _mm256_set1_ps(-INFINITY);
    for (int g = 0; g < G; g++) {
        const int nr = nq - 8 * g < 8 ? nq - 8 * g : 8;
        const float *q8 = qt + (size_t)g * dk * 8;
        float *p = pw + (size_t)g * T * 8;
        __m256 vmax = ninf;
        if (wide) {
            for (int t0 = 0; t0 < T; t0 += 32)
                if (t0 + 32 > t_lo && t0 < kv) sl_attn512_scores32(q8, kf, dk, t0, p, ahead);
            for (int t = 0; t < T; t++) {
                float *pt = p + (size_t)t * 8;
                const __m256 s = t < t_lo || t >= kv ? ninf : _mm256_mul_ps(_mm256_loadu_ps(pt), scale);
                vmax = _mm256_max_ps(vmax, s);
                _mm256_storeu_ps(pt, s);
            }
        } else {
            for (int t0 = 0; t0 < T; t0 += 8) {
                __m256 S[8];
                if (t0 + 8 <= t_lo || t0 >= kv) {
                    for (int i = 0; i < 8; i++) S[i] = ninf;
                } else {
                    scores_heads8(q8, kf, dk, t0, S, ahead);
                    for (int i = 0; i < 8; i++) {
                        const int t = t0 + i;
                        S[i] = t < t_lo || t >= kv ? ninf : _mm256_mul_ps(S[i], scale);
                    }
                }
                for (int i = 0; i < 8; i++) {
                    vmax = _mm256_max_ps(vmax, S[i]);
                    _mm256_storeu_ps(p + (size_t)(t0 + i) * 8, S[i]);
                }
            }
        }
        float tmax[8], mnew[8];
        _mm256_storeu_ps(tmax, vmax);
        for (int l = 0; l < nr; l++) {
            const int r = 8 * g + l;
            const float m_new = fmaxf(mx[r], tmax[l]);
            if (m_new > mx[r]) {
                const float ms = expf(mx[r] - m_new);
                float *a = acc + (size_t)r * dv;
                const __m256 msv = _mm256_set1_ps(ms);
                int d = 0;
                for (; d + 8 <= dv; d += 8)
                    _mm256_storeu_ps(a + d, _mm256_mul_ps(_mm256_loadu_ps(a + d), msv));
                for (; d < dv; d++) a[d] *= ms;
                sum[r] *= ms;
            }
            mx[r] = mnew[l] = m_new;
        }
        for (int l = nr; l < 8; l++) mnew[l] = 0.0f;
        const __m256 mv = _mm256_loadu_ps(mnew);
        __m256d ts_lo = _mm256_setzero_pd(), ts_hi = _mm256_setzero_pd();
        for (int t0 = 0; t0 < T; t0 += 8) {
            __m256 P[8];
            for (int i = 0; i < 8; i++) {
                float *pt = p + (size_t)(t0 + i) * 8;
                P[i] = sl_vexp8(_mm256_sub_ps(_mm256_loadu_ps(pt), mv));
                _mm256_storeu_ps(pt, P[i]);
            }
            /* hsum's order over the eight positions, per lane */
            const __m256 h = _mm256_add_ps(
                _mm256_add_ps(_mm256_add_ps(P[0], P[4]), _mm256_add_ps(P[2], P[6])),
                _mm256_add_ps(_mm256_add_ps(P[1], P[5]), _mm256_add_ps(P[3], P[7])));
            ts_lo = _mm256_add_pd(ts_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(h)));
            ts_hi = _mm256_add_pd(ts_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(h, 1)));
        }
        double ts[8];
        _mm256_storeu_pd(ts, ts_lo);
        _mm256_storeu_pd(ts + 4, ts_hi);
        for (int l = 0; l < nr; l++) {
            const int r = 8 * g + l;
            sum[r] = (float)((double)sum[r] + ts[l]);
        }
    }
}

/* One tile's value step for one token's rows over the tile's positions
 * [t_lo, kv), as vb / vic give them (values_f32): four rows at a time, or
 * (wide) each whole eight rows by the 512-bit step when dv allows. */
static void heads_values(const sl_attn_block *vb, int vic, int t_lo, int kv, int v16,
                         const float *pw, float *acc, int wide, sl_attn_ahead *ahead)
{
    const int nq = vb->n_q, G = (nq + 7) / 8, dv = vb->dv;
    for (int g = 0; g < G; g++) {
        const int nr = nq - 8 * g < 8 ? nq - 8 * g : 8;
        const float *p = pw + (size_t)g * SL_ATTN_TILE * 8;
        float *a = acc + (size_t)8 * g * dv;
        if (wide && nr == 8 && dv % 32 == 0)
            sl_attn512_values8((const uint8_t *)vb->v + (size_t)(vic + t_lo) * vb->v_stride,
                               vb->v_stride, v16, kv - t_lo, p + (size_t)t_lo * 8, dv, a, ahead);
        else
            vacc_tile(vb, vic, t_lo, kv, v16, p, 1, 8, nr, a, ahead);
    }
}

/* The sinks and the division by the sums, into out. */
static void heads_finish(const sl_attn_block *b, float *acc, const float *mx, float *sum,
                         float *out)
{
    if (b->sinks) sl_attn_sinks_ref(b, acc, mx, sum, b->sink_fma);
    for (int r = 0; r < b->n_q; r++) {
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        float *o = out + (size_t)r * b->out_stride;
        for (int d = 0; d < b->dv; d++) o[d] = acc[(size_t)r * b->dv + d] * inv;
    }
}

/* Groups of eight rows or more: the heads are the lanes. Per tile the K
 * rows converted once, each eight rows' scores and softmax step
 * (heads_scores), the V rows converted once into the K rows' room, then
 * the values of four rows at a time; wide: the K rows converted in pairs,
 * the 512-bit scores and value steps, the V rows read in place. Scratch:
 * kf [T][dk] in the K tile's room; the transposed queries [G][dk][8] and
 * weights [G][T][8] in the V tile's room, which the caller checked holds
 * them. */
static void attend_heads(const sl_attn_block *b, int f16, int wide)
{
    enum { T = SL_ATTN_TILE };
    const int dk = b->dk, dv = b->dv, nq = b->n_q, G = (nq + 7) / 8;
    float *kf = b->scratch, *qt = kf + (size_t)T * dk, *pw = qt + (size_t)G * dk * 8;
    float *acc = b->scratch + (size_t)T * (dk + dv + 1), *mx = acc + (size_t)nq * dv;
    float *sum = mx + nq;
    heads_init(b, b->q, qt, acc, mx, sum);
    for (int ic = b->pos_lo - b->pos_lo % T; ic < b->n_pos; ic += T) {
        const int kv = b->n_pos - ic < T ? b->n_pos - ic : T;
        const int t_lo = b->pos_lo > ic ? b->pos_lo - ic : 0;
        sl_attn_ahead ak = sl_attn_ahead_rows(b->k, b->k_stride, ic + T, b->n_pos);
        sl_attn_ahead av = sl_attn_ahead_rows(b->v, b->v_stride, ic + T, b->n_pos);
        if (wide)
            sl_attn512_k_pairs(b, ic, t_lo, kv, f16, kf);
        else
            load_k_rows(b, ic, t_lo, kv, f16, kf);
        heads_scores(b, kf, t_lo, kv, qt, pw, acc, mx, sum, wide, &ak);
        /* the values: an f16 tile converted once into the K rows' room
         * (wide: read in place, each V row once for all eight rows) */
        sl_attn_block vb = *b;
        int vic = ic, v16 = f16;
        if (!wide) v16 = values_f32(b, ic, t_lo, kv, f16, kf, &vb, &vic);
        heads_values(&vb, vic, t_lo, kv, v16, pw, acc, wide, &av);
    }
    heads_finish(b, acc, mx, sum, b->out);
}

/* A query block: n_tok consecutive tokens of a prompt, eight rows or more
 * each, against each K/V tile in turn (the flash-attention tiling: each
 * tile's K and V rows read and converted once for the whole block). Token
 * i covers the tiles of its own positions [lo_i, n_pos + i) and takes
 * exactly attend_heads's steps on each of them (its own mask, maximum,
 * sums, value chains), so its rows' bits are attend_heads's. Scratch: the
 * K tile kf [T][dk], then per token its transposed queries [G][dk][8],
 * weights [G][T][8], accumulators [n_q][dv], maxima and sums (the sizes
 * sl_attn_block_tokens allows for). */
static void attend_heads_tok(const sl_attn_block *b, int f16, int wide)
{
    enum { T = SL_ATTN_TILE };
    const int dk = b->dk, dv = b->dv, nq = b->n_q, G = (nq + 7) / 8, nt = b->n_tok;
    const size_t per = (size_t)G * 8 * ((size_t)dk + T) + (size_t)nq * ((size_t)dv + 2);
    float *kf = b->scratch, *st = kf + (size_t)T * dk;
#define TOK_QT(i) (st + (size_t)(i) * per)
#define TOK_PW(i) (TOK_QT(i) + (size_t)G * dk * 8)
#define TOK_ACC(i) (TOK_PW(i) + (size_t)G * T * 8)
#define TOK_MX(i) (TOK_ACC(i) + (size_t)nq * dv)
#define TOK_SUM(i) (TOK_MX(i) + nq)
    for (int i = 0; i < nt; i++)
        heads_init(b, b->q + (size_t)i * b->q_tok, TOK_QT(i), TOK_ACC(i), TOK_MX(i), TOK_SUM(i));
    const int lo0 = sl_attn_tok_lo(b, 0), n_end = b->n_pos + nt - 1;
    for (int ic = lo0 - lo0 % T; ic < n_end; ic += T) {
        /* the tokens whose positions meet this tile, and the union of
         * their ranges in it */
        int u_lo = T, u_kv = 0, first = -1, last = -1;
        for (int i = 0; i < nt; i++) {
            const int lo = sl_attn_tok_lo(b, i), np = b->n_pos + i;
            if (ic + T <= lo || ic >= np) continue;
            const int kv = np - ic < T ? np - ic : T, t_lo = lo > ic ? lo - ic : 0;
            if (first < 0) first = i;
            last = i;
            if (t_lo < u_lo) u_lo = t_lo;
            if (kv > u_kv) u_kv = kv;
        }
        if (first < 0) continue;
        sl_attn_ahead ak = sl_attn_ahead_rows(b->k, b->k_stride, ic + T, n_end);
        sl_attn_ahead av = sl_attn_ahead_rows(b->v, b->v_stride, ic + T, n_end);
        if (wide)
            sl_attn512_k_pairs(b, ic, u_lo, u_kv, f16, kf);
        else
            load_k_rows(b, ic, u_lo, u_kv, f16, kf);
        for (int i = first; i <= last; i++) {
            const int lo = sl_attn_tok_lo(b, i), np = b->n_pos + i;
            if (ic + T <= lo || ic >= np) continue;
            const int kv = np - ic < T ? np - ic : T, t_lo = lo > ic ? lo - ic : 0;
            heads_scores(b, kf, t_lo, kv, TOK_QT(i), TOK_PW(i), TOK_ACC(i), TOK_MX(i),
                         TOK_SUM(i), wide, &ak);
        }
        sl_attn_block vb;
        int vic;
        const int v16 = values_f32(b, ic, u_lo, u_kv, f16, kf, &vb, &vic);
        for (int i = first; i <= last; i++) {
            const int lo = sl_attn_tok_lo(b, i), np = b->n_pos + i;
            if (ic + T <= lo || ic >= np) continue;
            const int kv = np - ic < T ? np - ic : T, t_lo = lo > ic ? lo - ic : 0;
            heads_values(&vb, vic, t_lo, kv, v16, TOK_PW(i), TOK_ACC(i), wide, &av);
        }
    }
    for (int i = 0; i < nt; i++)
        heads_finish(b, TOK_ACC(i), TOK_MX(i), TOK_SUM(i), b->out + (size_t)i * b->out_tok);
#undef TOK_QT
#undef TOK_PW
#undef TOK_ACC
#undef TOK_MX
#undef TOK_SUM
}

/* Groups of eight rows or more take attend_heads, in slices of as many
 * rows as the scratch's V tile room holds (rows are independent); smaller
 * groups, or a room too small for eight rows, attend_rows. */
static void attend(const sl_attn_block *b, int f16, int wide)
{
    enum { T = SL_ATTN_TILE };
    const size_t room = (size_t)T * ((size_t)b->dv + 1);
    const size_t per8 = (size_t)8 * ((size_t)b->dk + T);
    const int max_rows = (int)(room / per8 > 1024 ? 8192 : 8 * (room / per8));
    if (b->n_q < 8 || max_rows < 8) {
        attend_rows(b, f16);
        return;
    }
    for (int r0 = 0; r0 < b->n_q; r0 += max_rows) {
        sl_attn_block s = *b;
        s.n_q = b->n_q - r0 < max_rows ? b->n_q - r0 : max_rows;
        s.q = b->q + (size_t)r0 * b->q_stride;
        s.out = b->out + (size_t)r0 * b->out_stride;
        s.sinks = b->sinks ? b->sinks + r0 : NULL;
        attend_heads(&s, f16, wide);
    }
}

static void attend_f16(const sl_attn_block *b) { attend(b, 1, 0); }
static void attend_f32(const sl_attn_block *b) { attend(b, 0, 0); }
static void attend_f16_512(const sl_attn_block *b) { attend(b, 1, 1); }
static void attend_f32_512(const sl_attn_block *b) { attend(b, 0, 1); }

/* A block of tokens: eight rows or more per token together (attend_heads_tok),
 * fewer token by token. */
static void attend_tok(const sl_attn_block *b, int f16, int wide)
{
    if (b->n_q < 8 || b->n_tok <= 1) {
        sl_attn_block one = *b;
        one.n_tok = 1;
        for (int i = 0; i < (b->n_tok > 1 ? b->n_tok : 1); i++) {
            one.n_pos = b->n_pos + i;
            one.pos_lo = sl_attn_tok_lo(b, i);
            one.q = b->q + (size_t)i * b->q_tok;
            one.out = b->out + (size_t)i * b->out_tok;
            attend(&one, f16, wide);
        }
        return;
    }
    attend_heads_tok(b, f16, wide);
}

static void attend_tok_f16(const sl_attn_block *b) { attend_tok(b, 1, 0); }
static void attend_tok_f32(const sl_attn_block *b) { attend_tok(b, 0, 0); }
static void attend_tok_f16_512(const sl_attn_block *b) { attend_tok(b, 1, 1); }
static void attend_tok_f32_512(const sl_attn_block *b) { attend_tok(b, 0, 1); }

static void mad_f32(float *y, const float *x, float v, int n)
{
    const __m256 vv = _mm256_set1_ps(v);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), vv, _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] = fmaf(x[i], v, y[i]);
}

static void scale_f32(float *y, float v, int n)
{
    const __m256 vv = _mm256_set1_ps(v);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vv));
    for (; i < n; i++) y[i] *= v;
}

static __m256 load_h8(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static void store_h8(uint16_t *p, __m256 x)
{
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((always_inline)) static inline void mad_f16(uint16_t *y, const uint16_t *x, float v, int n)
{
    const __m256 vv = _mm256_set1_ps(v);
    int i = 0;
    for (; i + 8 <= n; i += 8) store_h8(y + i, _mm256_fmadd_ps(load_h8(x + i), vv, load_h8(y + i)));
    for (; i < n; i++) y[i] = _cvtss_sh(fmaf(_cvtsh_ss(x[i]), v, _cvtsh_ss(y[i])), 0);
}

__attribute__((always_inline)) static inline void scale_f16(uint16_t *y, float v, int n)
{
    const __m256 vv = _mm256_set1_ps(v);
    int i = 0;
    for (; i + 8 <= n; i += 8) store_h8(y + i, _mm256_mul_ps(load_h8(y + i), vv));
    for (; i < n; i++) y[i] = _cvtss_sh(_cvtsh_ss(y[i]) * v, 0);
}

__attribute__((always_inline)) static inline float dot_f16f16(const uint16_t *x, const uint16_t *y, int n)
{
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    const int np = n - n % 32;
    for (int i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            acc[j] = _mm256_fmadd_ps(load_h8(x + i + 8 * j), load_h8(y + i + 8 * j), acc[j]);
    acc[0] = _mm256_add_ps(acc[0], acc[2]);
    acc[1] = _mm256_add_ps(acc[1], acc[3]);
    acc[0] = _mm256_add_ps(acc[0], acc[1]);
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(acc[0]), _mm256_extractf128_ps(acc[0], 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    double sum = (double)_mm_cvtss_f32(_mm_hadd_ps(t1, t1));
    for (int i = np; i < n; i++) sum += (double)(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
    return (float)sum;
}

/* Rows of a group whose scores one position computes together. */
#define SEQ_ROWS 8

/* seq_range_f16 (attn_kernels.h): the element loops above called
 * directly (inlined), a position's scores first for up to SEQ_ROWS rows so
 * their dot products overlap; each value computed as the loops compute it. */
static void seq_range_f16(const sl_attn_block *b, const float *qc, float *acc, float *mx,
                          float *sum, int lo, int hi)
{
    const int dk = b->dk, dv = b->dv, nq = b->n_q;
    const int n_ic = b->sel ? b->n_sel : hi - lo;
    float s[SEQ_ROWS];
    for (int i = 0; i < n_ic; i++) {
        const int ic = b->sel ? b->sel[i] : lo + i;
        const uint16_t *kp = (const uint16_t *)((const uint8_t *)b->k + (size_t)ic * b->k_stride);
        const uint16_t *vp = (const uint16_t *)((const uint8_t *)b->v + (size_t)ic * b->v_stride);
        for (int r0 = 0; r0 < nq; r0 += SEQ_ROWS) {
            const int nr = nq - r0 < SEQ_ROWS ? nq - r0 : SEQ_ROWS;
            for (int r = 0; r < nr; r++)
                s[r] = dot_f16f16(kp, (const uint16_t *)(qc + (size_t)(r0 + r) * dk), dk) * b->scale;
            for (int r = 0; r < nr; r++) {
                const int q = r0 + r;
                uint16_t *a = (uint16_t *)(acc + (size_t)q * dv);
                float ms = 1.0f, vs = 1.0f;
                if (s[r] > mx[q]) {
                    ms = expf(mx[q] - s[r]);
                    mx[q] = s[r];
                    scale_f16(a, ms, dv);
                } else {
                    vs = expf(s[r] - mx[q]);
                }
                mad_f16(a, vp, vs, dv);
                sum[q] = sum[q] * ms + vs; /* two roundings, as the loops */
            }
        }
    }
}

static void to_f16(const float *x, uint16_t *y, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) store_h8(y + i, _mm256_loadu_ps(x + i));
    for (; i < n; i++) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

static const sl_attn_kernels avx2 = {dot_f16,        axpy_f16,      dot_f32,   axpy_f32,
                                     attend_f16,     attend_f32,    mad_f32,   scale_f32,
                                     mad_f16,        scale_f16,     dot_f16f16, attend_tok_f16,
                                     attend_tok_f32, seq_range_f16, to_f16};

/* The AVX2 set with the grouped-query steps in 512-bit vectors. */
static const sl_attn_kernels avx512 = {dot_f16,        axpy_f16,       dot_f32,   axpy_f32,
                                       attend_f16_512, attend_f32_512, mad_f32,   scale_f32,
                                       mad_f16,        scale_f16,      dot_f16f16, attend_tok_f16_512,
                                       attend_tok_f32_512, seq_range_f16, to_f16};

const sl_attn_kernels *sl_attn_kernels_avx2(void) { return &avx2; }

const sl_attn_kernels *sl_attn_kernels_avx512(void) { return sl_attn512_usable() ? &avx512 : NULL; }
#endif
