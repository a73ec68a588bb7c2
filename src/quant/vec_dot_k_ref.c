/* vec_dot_k_ref.c - scalar reference dot kernels of the K-quants (Q2_K ..
 * Q6_K) against Q8_K activations.
 *
 * Owns: the scalar form of each dot product, bit for bit the AVX2 twin's
 * (vec_dot_k_avx2.c, which follows llama.cpp's x86 kernels): the same exact
 * int32 lanes per super-block, the same FMAs (fmaf) in the same order, the
 * same horizontal sums. Offsets (mins, the -32 of Q6_K) go through the
 * activation block's bsums where the AVX2 kernel takes them so.
 * Must not know: instruction sets, threads, matrices. */
#include "quant/quant_internal.h"
#include "quant/vec_dot_k_lanes.h"

/* Each kernel unpacks a super-block's levels into int8 as the AVX2 kernel
 * feeds them to maddubs, then computes that kernel's eight integer lanes
 * and float steps (vec_dot_k_lanes.h), so the two give the same bits. */

static void vec_dot_q2_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q2_K *x = vx;
    const sl_block_q8_K *y = vy;
    float acc[8] = {0};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16], mn[16];
        for (int k = 0; k < 16; k++) {
            sc[k] = x[i].scales[k] & 0x0F;
            mn[k] = x[i].scales[k] >> 4;
        }
        sl_k_levels_q2_K(&x[i], q);
        sl_k_step_q2_K(q, sc, mn, sl_h2f(x[i].d), sl_h2f(x[i].dmin), &y[i], acc);
    }
    *s = sl_k_hsum8(acc);
}

static void vec_dot_q3_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q3_K *x = vx;
    const sl_block_q8_K *y = vy;
    float acc[8] = {0};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        sl_k_scales_q3_K(x[i].scales, sc);
        sl_k_levels_q3_K(&x[i], q);
        sl_k_step_q3_K(q, sc, sl_h2f(x[i].d), &y[i], acc);
    }
    *s = sl_k_hsum8(acc);
}

static void vec_dot_q4_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_K *x = vx;
    const sl_block_q8_K *y = vy;
    float acc[8] = {0}, accm[4] = {0};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        sl_k_levels_q4_K(&x[i], q);
        sl_k_step_q4_K(q, sc, m, sl_h2f(x[i].d), sl_h2f(x[i].dmin), &y[i], acc, accm);
    }
    *s = sl_k_hsum8(acc) + sl_k_hsum4(accm);
}

static void vec_dot_q5_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_K *x = vx;
    const sl_block_q8_K *y = vy;
    float acc[8] = {0}, summs = 0.0f;
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        sl_k_levels_q5_K(&x[i], q);
        sl_k_step_q5_K(q, sc, m, sl_h2f(x[i].d), sl_h2f(x[i].dmin), &y[i], acc, &summs);
    }
    *s = sl_k_hsum8(acc) + summs;
}

static void vec_dot_q6_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q6_K *x = vx;
    const sl_block_q8_K *y = vy;
    float acc[8] = {0};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        for (int k = 0; k < 16; k++) sc[k] = x[i].scales[k];
        sl_k_levels_q6_K(&x[i], q);
        sl_k_step_q6_K(q, sc, sl_h2f(x[i].d), &y[i], acc);
    }
    *s = sl_k_hsum8(acc);
}

void sl_vec_dot_fill_k_ref(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_Q2_K] = vec_dot_q2_K_q8_K;
    k->vec_dot[SL_TYPE_Q3_K] = vec_dot_q3_K_q8_K;
    k->vec_dot[SL_TYPE_Q4_K] = vec_dot_q4_K_q8_K;
    k->vec_dot[SL_TYPE_Q5_K] = vec_dot_q5_K_q8_K;
    k->vec_dot[SL_TYPE_Q6_K] = vec_dot_q6_K_q8_K;
    k->from_float[SL_TYPE_Q8_K] = sl_quant_q8_K_ref;
}
