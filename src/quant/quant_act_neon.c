/* quant_act_neon.c - the activation quantisers Q8_K and Q8_0 in NEON, bit
 * for bit their scalar twins (quant_k.c, quant_legacy.c).
 *
 * The twins' steps, lane by lane: the absolute maximum (a compare-select,
 * so a NaN never wins, as with fmaxf; the maximum is exact in any order),
 * the per-block scale in scalar C exactly as the twin writes it, x * id
 * rounded once, the clamp of sl_round_clamp (NaN -> the lower bound), and
 * the rounding to nearest even (FCVTNS equals the 1.5 * 2^23 trick on the
 * clamped range). Q8_K's bsums are exact int sums.
 * Must not know: dot kernels, which CPU we run on. */
#include <math.h>

#include "quant/quant_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

/* fmaxf(0, |x0|, ..., |x(n-1)|), n a multiple of 16 */
static float amax_abs(const float *x, int n)
{
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int j = 0; j < n; j += 4) {
        const float32x4_t a = vabsq_f32(vld1q_f32(x + j));
        m = vbslq_f32(vcgtq_f32(a, m), a, m);
    }
    return vmaxvq_f32(m); /* lanes are >= 0 and never NaN */
}

/* q[j] = sl_round_clamp(x[j] * id, -127, 127) for 16 elements */
static inline int8x16_t levels16(const float *x, float32x4_t id)
{
    const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
    int32x4_t r[4];
    for (int k = 0; k < 4; k++) {
        float32x4_t v = vmulq_f32(vld1q_f32(x + 4 * k), id);
        v = vbslq_f32(vcgeq_f32(v, lo), v, lo); /* NaN -> lo */
        v = vbslq_f32(vcleq_f32(v, hi), v, hi);
        r[k] = vcvtnq_s32_f32(v);
    }
    const int16x8_t h0 = vcombine_s16(vmovn_s32(r[0]), vmovn_s32(r[1]));
    const int16x8_t h1 = vcombine_s16(vmovn_s32(r[2]), vmovn_s32(r[3]));
    return vcombine_s8(vmovn_s16(h0), vmovn_s16(h1));
}

void sl_quant_q8_K_neon(const float *src, void *dst, int64_t n)
{
    sl_block_q8_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        float amax = amax_abs(src, SL_QK_K);
        if (!(amax >= 1e-30f)) amax = 0.0f;
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        b->d = amax > 0.0f ? 1.0f / id : 0.0f;
        const float32x4_t vid = vdupq_n_f32(id);
        for (int k = 0; k < SL_QK_K / 16; k++) {
            const int8x16_t q = levels16(src + 16 * k, vid);
            vst1q_s8(b->qs + 16 * k, q);
            b->bsums[k] = (int16_t)vaddlvq_s8(q);
        }
    }
}

void sl_quant_q8_0_neon(const float *src, void *dst, int64_t n)
{
    sl_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        const float amax = amax_abs(src, SL_QK);
        float d = amax / 127.0f;
        if (d > 65504.0f) d = 65504.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const float32x4_t vid = vdupq_n_f32(id);
        vst1q_s8(b->qs, levels16(src, vid));
        vst1q_s8(b->qs + 16, levels16(src + 16, vid));
        b->d = sl_f32_to_fp16(d);
    }
}

bool sl_vec_dot_fill_q8_neon(sl_quant_kernels *k, bool dotprod)
{
    (void)dotprod; /* the Q8_0 dot comes with the K-quant fill */
    k->from_float[SL_TYPE_Q8_0] = sl_quant_q8_0_neon;
    return true;
}
#else
bool sl_vec_dot_fill_q8_neon(sl_quant_kernels *k, bool dotprod)
{
    (void)k;
    (void)dotprod;
    return false;
}
#endif
