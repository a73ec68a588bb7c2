/* attn_kernels_neon.c - blocked attention over the f16 / f32 cache in NEON,
 * bit for bit the scalar attend (attn_kernels.c): the K tile transposed
 * the same way, each position's score one FMA chain over dk (four
 * positions per vector, so each lane is that chain), the tile maximum
 * (exact in any order; vmaxnm ignores a NaN like fmaxf), the exponentials
 * by sl_vexp4 with their sums in eights then double, the values one FMA
 * chain over positions for four dimensions at a time, the scalar tail
 * steps (rescale, sinks, division) unchanged.
 * Must not know: models, caches, threads. */
#include "ops/attn_kernels_neon.h"

#if defined(__aarch64__)
#include <math.h>

#include "ops/vexp_neon.h"
#include "quant/quant.h"

static float load_elem(const void *row, int i, int f16)
{
    return f16 ? sl_fp16_to_f32(((const uint16_t *)row)[i]) : ((const float *)row)[i];
}

static void attend_neon(const sl_attn_block *b, int f16)
{
    const int T = SL_ATTN_TILE, dk = b->dk, dv = b->dv;
    float *kt = b->scratch, *vt = kt + (size_t)T * dk, *sc = vt + (size_t)T * dv;
    float *acc = sc + T, *mx = acc + (size_t)b->n_q * dv, *sum = mx + b->n_q;
    for (int r = 0; r < b->n_q; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
        for (int d = 0; d < dv; d++) acc[(size_t)r * dv + d] = 0.0f;
    }
    const int dv4 = dv - dv % 4;
    for (int ic = b->pos_lo - b->pos_lo % T; ic < b->n_pos; ic += T) {
        const int kv = b->n_pos - ic < T ? b->n_pos - ic : T;
        const int t_lo = b->pos_lo > ic ? b->pos_lo - ic : 0;
        for (int t = t_lo; t < kv; t++) {
            const uint8_t *kr = (const uint8_t *)b->k + (size_t)(ic + t) * b->k_stride;
            const uint8_t *vr = (const uint8_t *)b->v + (size_t)(ic + t) * b->v_stride;
            for (int d = 0; d < dk; d++) kt[(size_t)d * T + t] = load_elem(kr, d, f16);
            for (int d = 0; d < dv; d++) vt[(size_t)t * dv + d] = load_elem(vr, d, f16);
        }
        for (int r = 0; r < b->n_q; r++) {
            const float *q = b->q + (size_t)r * b->q_stride;
            float32x4_t vmax = vdupq_n_f32(-INFINITY);
            const float32x4_t scale = vdupq_n_f32(b->scale), ninf = vdupq_n_f32(-INFINITY);
            for (int t0 = 0; t0 < T; t0 += 4) {
                float32x4_t s = vdupq_n_f32(0.0f);
                for (int d = 0; d < dk; d++)
                    s = vfmaq_f32(s, vdupq_n_f32(q[d]), vld1q_f32(kt + (size_t)d * T + t0));
                s = vmulq_f32(s, scale);
                /* positions outside [t_lo, kv) score -inf (their K tile
                 * entries are stale: never let them reach the maximum) */
                uint32_t keep[4];
                for (int l = 0; l < 4; l++)
                    keep[l] = (t0 + l >= t_lo && t0 + l < kv) ? 0xFFFFFFFFu : 0u;
                s = vbslq_f32(vld1q_u32(keep), s, ninf);
                vst1q_f32(sc + t0, s);
                vmax = vmaxnmq_f32(vmax, s);
            }
            const float tmax = vmaxnmvq_f32(vmax);
            float *a = acc + (size_t)r * dv;
            const float m_new = fmaxf(mx[r], tmax);
            if (m_new > mx[r]) {
                const float ms = expf(mx[r] - m_new);
                for (int d = 0; d < dv; d++) a[d] *= ms;
                sum[r] *= ms;
            }
            mx[r] = m_new;
            const float32x4_t mn = vdupq_n_f32(m_new);
            double tsum = 0.0;
            for (int g = 0; g < T; g += 8) {
                const float32x4_t lo = sl_vexp4(vsubq_f32(vld1q_f32(sc + g), mn));
                const float32x4_t hi = sl_vexp4(vsubq_f32(vld1q_f32(sc + g + 4), mn));
                vst1q_f32(sc + g, lo);
                vst1q_f32(sc + g + 4, hi);
                const float32x4_t ts = vaddq_f32(lo, hi);
                const float32x2_t u = vadd_f32(vget_low_f32(ts), vget_high_f32(ts));
                tsum += (double)(vget_lane_f32(u, 0) + vget_lane_f32(u, 1));
            }
            sum[r] = (float)((double)sum[r] + tsum);
            for (int d = 0; d < dv4; d += 4) {
                float32x4_t v = vld1q_f32(a + d);
                for (int t = t_lo; t < kv; t++)
                    v = vfmaq_f32(v, vdupq_n_f32(sc[t]), vld1q_f32(vt + (size_t)t * dv + d));
                vst1q_f32(a + d, v);
            }
            for (int d = dv4; d < dv; d++) {
                float v = a[d];
                for (int t = t_lo; t < kv; t++) v = fmaf(sc[t], vt[(size_t)t * dv + d], v);
                a[d] = v;
            }
        }
    }
    if (b->sinks) sl_attn_sinks_ref(b, acc, mx, sum, b->sink_fma);
    for (int r = 0; r < b->n_q; r++) {
        const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
        float *o = b->out + (size_t)r * b->out_stride;
        for (int d = 0; d < dv; d++) o[d] = acc[(size_t)r * dv + d] * inv;
    }
}

static void attend_f16_neon(const sl_attn_block *b) { attend_neon(b, 1); }
static void attend_f32_neon(const sl_attn_block *b) { attend_neon(b, 0); }

/* the single-row helpers are serial sums in the scalar set: taken from it */
static float dot_f16(const float *q, const uint16_t *k, int n)
{
    return sl_attn_kernels_ref()->dot_f16(q, k, n);
}
static void axpy_f16(float *out, float a, const uint16_t *v, int n)
{
    sl_attn_kernels_ref()->axpy_f16(out, a, v, n);
}
static float dot_f32(const float *q, const float *k, int n)
{
    return sl_attn_kernels_ref()->dot_f32(q, k, n);
}
static void axpy_f32(float *out, float a, const float *v, int n)
{
    sl_attn_kernels_ref()->axpy_f32(out, a, v, n);
}

/* The element loops of sl_attn_attend_seq (quantised or mixed caches): the
 * scalar forms, which define their bits (NEON forms are future work). */
static void mad_f32(float *y, const float *x, float v, int n)
{
    sl_attn_kernels_ref()->mad_f32(y, x, v, n);
}
static void scale_f32(float *y, float v, int n) { sl_attn_kernels_ref()->scale_f32(y, v, n); }
static void mad_f16(uint16_t *y, const uint16_t *x, float v, int n)
{
    sl_attn_kernels_ref()->mad_f16(y, x, v, n);
}
static void scale_f16(uint16_t *y, float v, int n) { sl_attn_kernels_ref()->scale_f16(y, v, n); }
static float dot_f16f16(const uint16_t *x, const uint16_t *y, int n)
{
    return sl_attn_kernels_ref()->dot_f16f16(x, y, n);
}

static const sl_attn_kernels neon_set = {dot_f16,  axpy_f16,        dot_f32,   axpy_f32,
                                         attend_f16_neon, attend_f32_neon, mad_f32, scale_f32,
                                         mad_f16,  scale_f16,       dot_f16f16,
                                         NULL,     NULL,            NULL,      NULL};

const sl_attn_kernels *sl_attn_kernels_neon(void) { return &neon_set; }
#else
const sl_attn_kernels *sl_attn_kernels_neon(void) { return NULL; }
#endif
