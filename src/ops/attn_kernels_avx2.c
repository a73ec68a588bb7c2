/* attn_kernels_avx2.c - attention inner loops with AVX2, FMA and F16C.
 * Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them. */
#include "ops/attn_kernels.h"
#include "ops/vexp_avx2.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

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
static void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* K rows [ic, ic + 8) of an f16 cache, columns [d, d + 8), into the
 * transposed tile kt[d][t]. */
static void load_k8x8_f16(const sl_attn_block *b, int ic, int t, int d, float *kt)
{
    __m256 r[8];
    for (int i = 0; i < 8; i++) {
        const uint16_t *kh = (const uint16_t *)((const uint8_t *)b->k + (size_t)(ic + t + i) * b->k_stride);
        r[i] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kh + d)));
    }
    transpose8(r);
    for (int j = 0; j < 8; j++) _mm256_storeu_ps(kt + (size_t)(d + j) * SL_ATTN_TILE + t, r[j]);
}

static void load_tile(const sl_attn_block *b, int ic, int t_lo, int kv, int f16, float *kt,
                      float *vt)
{
    const int T = SL_ATTN_TILE, dk = b->dk, dv = b->dv;
    /* whole eights of positions and key dims by register transposes (a
     * window's first tile takes the scalar path) */
    const int t8 = f16 && dk % 8 == 0 && t_lo == 0 ? kv - kv % 8 : 0;
    for (int t = 0; t < t8; t += 8)
        for (int d = 0; d < dk; d += 8) load_k8x8_f16(b, ic, t, d, kt);
    for (int t = 0; t < t_lo; t++) /* outside the window: zeros, never read as weights */
        for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = 0.0f;
    for (int t = t_lo; t < kv; t++) {
        const uint8_t *kr = (const uint8_t *)b->k + (size_t)(ic + t) * b->k_stride;
        const uint8_t *vr = (const uint8_t *)b->v + (size_t)(ic + t) * b->v_stride;
        if (f16) {
            const uint16_t *kh = (const uint16_t *)kr, *vh = (const uint16_t *)vr;
            if (t >= t8)
                for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = _cvtsh_ss(kh[d]);
            int d = 0;
            for (; d + 8 <= dv; d += 8)
                _mm256_storeu_ps(vt + (size_t)t * dv + d,
                                 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vh + d))));
            for (; d < dv; d++) vt[(size_t)t * dv + d] = _cvtsh_ss(vh[d]);
        } else {
            const float *kf = (const float *)kr;
            for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = kf[d];
            memcpy(vt + (size_t)t * dv, vr, (size_t)dv * sizeof(float));
        }
    }
    for (int t = kv; t < T; t++)
        for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = 0.0f;
}

static void attend(const sl_attn_block *b, int f16)
{
    enum { T = SL_ATTN_TILE, NV = SL_ATTN_TILE / 8 };
    const int dk = b->dk, dv = b->dv;
    float *kt = b->scratch, *vt = kt + (size_t)T * dk, *sc = vt + (size_t)T * dv;
    float *acc = sc + T, *mx = acc + (size_t)b->n_q * dv, *sum = mx + b->n_q;
    for (int r = 0; r < b->n_q; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        memset(acc + (size_t)r * dv, 0, (size_t)dv * sizeof(float));
    }
    const __m256 scale = _mm256_set1_ps(b->scale), ninf = _mm256_set1_ps(-INFINITY);
    /* tiles stay aligned to position 0, as the reference's are to its cells */
    for (int ic = b->pos_lo - b->pos_lo % T; ic < b->n_pos; ic += T) {
        const int kv = b->n_pos - ic < T ? b->n_pos - ic : T;
        const int t_lo = b->pos_lo > ic ? b->pos_lo - ic : 0; /* earlier: outside the window */
        load_tile(b, ic, t_lo, kv, f16, kt, vt);
        /* the tile's lanes outside [t_lo, kv) take no weight */
        __m256 outside[NV];
        for (int v = 0; v < NV; v++) {
            const __m256 lane = _mm256_add_ps(_mm256_set1_ps((float)(8 * v)),
                                              _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7));
            outside[v] = _mm256_or_ps(_mm256_cmp_ps(lane, _mm256_set1_ps((float)kv), _CMP_GE_OQ),
                                      _mm256_cmp_ps(lane, _mm256_set1_ps((float)t_lo), _CMP_LT_OQ));
        }
        for (int r = 0; r < b->n_q; r++) {
            const float *q = b->q + (size_t)r * b->q_stride;
            __m256 s[NV];
            for (int v = 0; v < NV; v++) s[v] = _mm256_setzero_ps();
            for (int d = 0; d < dk; d++) {
                const __m256 qd = _mm256_set1_ps(q[d]);
                for (int v = 0; v < NV; v++)
                    s[v] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kt + (size_t)d * T + 8 * v), s[v]);
            }
            __m256 vmax = ninf;
            for (int v = 0; v < NV; v++) {
                s[v] = _mm256_blendv_ps(_mm256_mul_ps(s[v], scale), ninf, outside[v]);
                vmax = _mm256_max_ps(vmax, s[v]);
            }
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
            const float tmax = _mm_cvtss_f32(m4);
            float *a = acc + (size_t)r * dv;
            const float m_new = fmaxf(mx[r], tmax);
            if (m_new > mx[r]) {
                const float ms = expf(mx[r] - m_new);
                for (int d = 0; d < dv; d++) a[d] *= ms;
                sum[r] *= ms;
            }
            mx[r] = m_new;
            const __m256 mv = _mm256_set1_ps(m_new);
            double tsum = 0.0;
            for (int v = 0; v < NV; v++) {
                const __m256 p = sl_vexp8(_mm256_sub_ps(s[v], mv));
                _mm256_storeu_ps(sc + 8 * v, p);
                tsum += (double)hsum(p);
            }
            sum[r] = (float)((double)sum[r] + tsum);
            int d = 0;
            for (; d + 8 <= dv; d += 8) {
                __m256 o = _mm256_loadu_ps(a + d);
                for (int t = t_lo; t < kv; t++)
                    o = _mm256_fmadd_ps(_mm256_set1_ps(sc[t]), _mm256_loadu_ps(vt + (size_t)t * dv + d), o);
                _mm256_storeu_ps(a + d, o);
            }
            for (; d < dv; d++) {
                float o = a[d];
                for (int t = t_lo; t < kv; t++) o = fmaf(sc[t], vt[(size_t)t * dv + d], o);
                a[d] = o;
            }
        }
    }
    if (b->sinks) sl_attn_sinks_ref(b, acc, mx, sum);
    for (int r = 0; r < b->n_q; r++) {
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        float *o = b->out + (size_t)r * b->out_stride;
        for (int d = 0; d < dv; d++) o[d] = acc[(size_t)r * dv + d] * inv;
    }
}

static void attend_f16(const sl_attn_block *b) { attend(b, 1); }
static void attend_f32(const sl_attn_block *b) { attend(b, 0); }

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

static void mad_f16(uint16_t *y, const uint16_t *x, float v, int n)
{
    const __m256 vv = _mm256_set1_ps(v);
    int i = 0;
    for (; i + 8 <= n; i += 8) store_h8(y + i, _mm256_fmadd_ps(load_h8(x + i), vv, load_h8(y + i)));
    for (; i < n; i++) y[i] = _cvtss_sh(fmaf(_cvtsh_ss(x[i]), v, _cvtsh_ss(y[i])), 0);
}

static void scale_f16(uint16_t *y, float v, int n)
{
    const __m256 vv = _mm256_set1_ps(v);
    int i = 0;
    for (; i + 8 <= n; i += 8) store_h8(y + i, _mm256_mul_ps(load_h8(y + i), vv));
    for (; i < n; i++) y[i] = _cvtss_sh(_cvtsh_ss(y[i]) * v, 0);
}

static float dot_f16f16(const uint16_t *x, const uint16_t *y, int n)
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

static const sl_attn_kernels avx2 = {dot_f16, axpy_f16, dot_f32,   axpy_f32,  attend_f16, attend_f32,
                                     mad_f32, scale_f32, mad_f16, scale_f16, dot_f16f16};

const sl_attn_kernels *sl_attn_kernels_avx2(void) { return &avx2; }
#endif
