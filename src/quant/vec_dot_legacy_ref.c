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

/* Each kernel unpacks a block's 32 levels into int8 (the walk of
 * quant_legacy.c), then takes a plain integer dot product: readable, and
 * vectorisable in portable builds. */
static inline int dot32(const int8_t *q, const int8_t *a)
{
    int s = 0;
    for (int i = 0; i < SL_QK; i++) s += q[i] * a[i];
    return s;
}

static inline int sum32(const int8_t *a)
{
    int s = 0;
    for (int i = 0; i < SL_QK; i++) s += a[i];
    return s;
}

/* nibbles in the Q4_0 order (low nibbles first) minus off */
static inline void unpack4(const uint8_t qs[16], int off, int8_t q[SL_QK])
{
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((qs[j] & 0x0F) - off);
        q[j + 16] = (int8_t)((qs[j] >> 4) - off);
    }
}

/* five-bit levels (Q5_0 / Q5_1) minus off */
static inline void unpack5(const uint8_t qs[16], const uint8_t qh4[4], int off, int8_t q[SL_QK])
{
    uint32_t qh = qh_word(qh4);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((qs[j] & 0x0F) | (int)((qh >> j) & 1u) << 4) - off);
        q[j + 16] = (int8_t)(((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4) - off);
    }
}

static void vec_dot_q4_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack4(x[i].qs, 8, q);
        sum += sl_h2f(x[i].d) * sl_h2f(y[i].d) * (float)dot32(q, y[i].qs);
    }
    *s = sum;
}

static void vec_dot_q4_1_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_1 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack4(x[i].qs, 0, q);
        float dy = sl_h2f(y[i].d);
        sum += sl_h2f(x[i].d) * dy * (float)dot32(q, y[i].qs) +
               sl_h2f(x[i].m) * dy * (float)sum32(y[i].qs);
    }
    *s = sum;
}

static void vec_dot_q5_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack5(x[i].qs, x[i].qh, 16, q);
        sum += sl_h2f(x[i].d) * sl_h2f(y[i].d) * (float)dot32(q, y[i].qs);
    }
    *s = sum;
}

static void vec_dot_q5_1_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_1 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        unpack5(x[i].qs, x[i].qh, 0, q);
        float dy = sl_h2f(y[i].d);
        sum += sl_h2f(x[i].d) * dy * (float)dot32(q, y[i].qs) +
               sl_h2f(x[i].m) * dy * (float)sum32(y[i].qs);
    }
    *s = sum;
}

static void vec_dot_q8_0_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q8_0 *x = vx;
    const sl_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK; i++)
        sum += sl_h2f(x[i].d) * sl_h2f(y[i].d) * (float)dot32(x[i].qs, y[i].qs);
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
