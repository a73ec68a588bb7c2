/* attn_kernels.c - scalar attention inner loops and run-time choice. */
#include "ops/attn_kernels.h"
#include "ops/attn_kernels_neon.h"

#include <math.h>

#include "ops/vexp.h"
#include "util/hsum.h"
#include "quant/quant.h"

size_t sl_attn_scratch_floats(int dk, int dv, int n_q)
{
    /* K tile [dk][TILE], V tile [TILE][dv], scores [TILE], and per row its
     * accumulator [dv], maximum and sum */
    return (size_t)SL_ATTN_TILE * ((size_t)dk + (size_t)dv + 1) +
           (size_t)n_q * ((size_t)dv + 2);
}

static float load_elem(const void *row, int i, int f16)
{
    return f16 ? sl_fp16_to_f32(((const uint16_t *)row)[i]) : ((const float *)row)[i];
}

/* The sinks, after the last tile, as llama.cpp adds them: the larger of
 * the running maximum and the sink rescales the other side. */
void sl_attn_sinks_ref(const sl_attn_block *b, float *acc, const float *mx, float *sum)
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
        sum[r] = fmaf(sum[r], ms, vs);
    }
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
            const float m_new = fmaxf(mx[r], tmax);
            if (m_new > mx[r]) {
                const float ms = expf(mx[r] - m_new);
                for (int d = 0; d < dv; d++) a[d] *= ms;
                sum[r] *= ms;
            }
            mx[r] = m_new;
            double tsum = 0.0;
            for (int g = 0; g < T; g += 8) {
                for (int t = g; t < g + 8; t++) sc[t] = sl_vexpf(sc[t] - m_new);
                tsum += (double)sl_hsum8(sc + g);
            }
            sum[r] = (float)((double)sum[r] + tsum);
            for (int d = 0; d < dv; d++) {
                float v = a[d];
                for (int t = t_lo; t < kv; t++) v = fmaf(sc[t], vt[(size_t)t * dv + d], v);
                a[d] = v;
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

static const sl_attn_kernels ref = {dot_f16_ref,    axpy_f16_ref,   dot_f32_ref,
                                    axpy_f32_ref,   attend_f16_ref, attend_f32_ref};

const sl_attn_kernels *sl_attn_kernels_ref(void) { return &ref; }

#if !defined(__x86_64__)
const sl_attn_kernels *sl_attn_kernels_avx2(void) { return NULL; }
#endif

const sl_attn_kernels *sl_attn_kernels_get(void)
{
    const sl_attn_kernels *k = NULL;
    if (sl_quant_isa() == SL_ISA_AVX2) k = sl_attn_kernels_avx2();
    if (sl_quant_isa() == SL_ISA_NEON) k = sl_attn_kernels_neon();
    return k ? k : &ref;
}
