/* vec_dot_legacy_ref.c - scalar reference dot kernels of the 32-element
 * types, all against Q8_0 activations. Q4_1 and Q5_1 carry an offset m per
 * block: sum (d q_i + m) a_i = d * sum q_i a_i + m * sum a_i, the second sum
 * taken from the activation quants as we go (not from Q8_1's f16 s, which
 * overflows for large activations; see quant_blocks.h).
 *
 * Owns: the textbook integer-sum-per-block form every SIMD twin must match.
 * Must not know: instruction sets, threads, matrices. */
#include "quant/quant_internal.h"

static uint32_t qh_word(const uint8_t qh[4])
{
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
           (uint32_t)qh[3] << 24;
}

static void vec_dot_q4_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int si = 0;
        for (int j = 0; j < 16; j++) {
            si += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
            si += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        }
        sum += sl_h2f(x[i].d) * sl_h2f(y[i].d) * (float)si;
    }
    *s = sum;
}

static void vec_dot_q4_1_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_1 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int si = 0, sa = 0;
        for (int j = 0; j < 16; j++) {
            si += (x[i].qs[j] & 0x0F) * y[i].qs[j];
            si += (x[i].qs[j] >> 4) * y[i].qs[j + 16];
            sa += y[i].qs[j] + y[i].qs[j + 16];
        }
        float dy = sl_h2f(y[i].d);
        sum += sl_h2f(x[i].d) * dy * (float)si + sl_h2f(x[i].m) * dy * (float)sa;
    }
    *s = sum;
}

static void vec_dot_q5_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        uint32_t qh = qh_word(x[i].qh);
        int si = 0;
        for (int j = 0; j < 16; j++) {
            int lo = ((x[i].qs[j] & 0x0F) | (int)((qh >> j) & 1u) << 4) - 16;
            int hi = ((x[i].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4) - 16;
            si += lo * y[i].qs[j] + hi * y[i].qs[j + 16];
        }
        sum += sl_h2f(x[i].d) * sl_h2f(y[i].d) * (float)si;
    }
    *s = sum;
}

static void vec_dot_q5_1_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_1 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        uint32_t qh = qh_word(x[i].qh);
        int si = 0, sa = 0;
        for (int j = 0; j < 16; j++) {
            int lo = (x[i].qs[j] & 0x0F) | (int)((qh >> j) & 1u) << 4;
            int hi = (x[i].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
            si += lo * y[i].qs[j] + hi * y[i].qs[j + 16];
            sa += y[i].qs[j] + y[i].qs[j + 16];
        }
        float dy = sl_h2f(y[i].d);
        sum += sl_h2f(x[i].d) * dy * (float)si + sl_h2f(x[i].m) * dy * (float)sa;
    }
    *s = sum;
}

static void vec_dot_q8_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q8_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int si = 0;
        for (int j = 0; j < SL_QK; j++) si += x[i].qs[j] * y[i].qs[j];
        sum += sl_h2f(x[i].d) * sl_h2f(y[i].d) * (float)si;
    }
    *s = sum;
}

void sl_vec_dot_fill_legacy_ref(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_Q4_0] = vec_dot_q4_0_q8_0;
    k->vec_dot[SL_TYPE_Q4_1] = vec_dot_q4_1_q8_0;
    k->vec_dot[SL_TYPE_Q5_0] = vec_dot_q5_0_q8_0;
    k->vec_dot[SL_TYPE_Q5_1] = vec_dot_q5_1_q8_0;
    k->vec_dot[SL_TYPE_Q8_0] = vec_dot_q8_0_q8_0;
    k->from_float[SL_TYPE_Q8_0] = sl_quant_q8_0_ref;
    k->from_float[SL_TYPE_Q8_1] = sl_quant_q8_1_ref;
}
