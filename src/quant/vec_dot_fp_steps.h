/* vec_dot_fp_steps.h - the two loops the scalar F16 / BF16 dot kernels
 * follow (vec_dot_fp_ref.c, vec_dot_fp_order_ref.c), in scalar form:
 *   sl_fp_steps32, ggml_vec_dot_f16 and ggml_vec_dot_bf16 (AVX2): four
 *     8-lane sums over steps of 32 (sum j takes elements 32 i + 8 j + l),
 *     folded lane by lane as (s0 + s2) + (s1 + s3); the kernels differ in
 *     how a product joins its sum and in how the folded lanes are reduced;
 *   sl_fp_lanes8, tinyBLAS: one 8-lane FMA chain in steps of 8, the lanes
 *     summed by sl_hsum8, the tail by FMA in order.
 * Must not know: instruction sets. */
#ifndef SL_QUANT_VEC_DOT_FP_STEPS_H
#define SL_QUANT_VEC_DOT_FP_STEPS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "quant/quant_internal.h"
#include "util/hsum.h"

/* bfloat16 -> float (exact: the top half of the float's bits). */
static inline float sl_bf2f(uint16_t v) { return sl_bits2f((uint32_t)v << 16); }

/* Sums the products x[e] y[e] of the first n rounded down to 32 elements,
 * each value converted by cv, into the eight folded lanes t; fused: each
 * product joins its sum by one FMA (ggml_vec_dot_f16), else it is rounded
 * to float and added (ggml_vec_dot_bf16). Returns the number of elements
 * summed: the caller adds the tail from there. */
static inline int64_t sl_fp_steps32(int64_t n, const uint16_t *x, const uint16_t *y,
                                    float (*cv)(uint16_t), bool fused, float t[8])
{
    float c[4][8] = {{0}};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) {
                const int64_t e = i + 8 * j + l;
                c[j][l] = fused ? fmaf(cv(x[e]), cv(y[e]), c[j][l]) : cv(x[e]) * cv(y[e]) + c[j][l];
            }
    for (int l = 0; l < 8; l++) t[l] = (c[0][l] + c[2][l]) + (c[1][l] + c[3][l]);
    return i;
}

/* The dot product of x and y (n values, each converted by cv) in
 * tinyBLAS's order (above). */
static inline float sl_fp_lanes8(int64_t n, const uint16_t *x, const uint16_t *y,
                                 float (*cv)(uint16_t))
{
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] = fmaf(cv(x[i + l]), cv(y[i + l]), lane[l]);
    float sum = sl_hsum8(lane);
    for (; i < n; i++) sum = fmaf(cv(x[i]), cv(y[i]), sum);
    return sum;
}

#endif
