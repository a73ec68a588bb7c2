/* vec_dot_rp.h - dot kernels in the orders of llama.cpp's repacked matrix
 * products (Q4_K; Q4_0, IQ4_NL, MXFP4 below), for the matrices the
 * reference repacks.
 *
 * On AVX2 machines llama.cpp stores a Q4_K weight matrix with a multiple of
 * 8 rows interleaved eight rows at a time (its q4_K_8x8 layout) and
 * multiplies it with its own gemm/gemv, whose float arithmetic differs from
 * its plain Q4_K dot kernel (the traits' vec_dot here). Per (row, token)
 * both compute two FMA chains over the row's blocks in order,
 *   A = fma(float(I), xd * yd, A)     I = sum_k sc_k * (q_k . a_k)
 *   M = fma(float(J), xdmin * yd, M)  J = sum_k m_k * bsums_k
 * with I, J exact integers, and return A - M. The gemm (batches of 4+
 * tokens of a 2-d weight) takes one step per 64-element chunk (k over its
 * two sub-blocks), the gemv (single tokens, and every row of an expert
 * tensor's MUL_MAT_ID) one per super-block (k over all eight). These
 * kernels compute exactly that, the same bits in the scalar and AVX2 sets.
 * Which matrices take which is ops/matmul.c's rule.
 * Must not know: threads, matrices, which CPU we run on. */
#ifndef SL_QUANT_VEC_DOT_RP_H
#define SL_QUANT_VEC_DOT_RP_H

#include <stddef.h>

#include "quant/quant.h"

typedef enum sl_rp_order {
    SL_RP_GEMM = 0, /* one FMA per 64-element chunk */
    SL_RP_GEMV = 1, /* one FMA per 256-element super-block */
} sl_rp_order;

/* The largest nt the kernels below take. */
#define SL_VEC_DOT_RP_MAX 8

/* The multi-token Q4_K x Q8_K kernel (vec_dot_n contract, 1 <= nt <=
 * SL_VEC_DOT_RP_MAX) of the given order for isa, or NULL when isa cannot
 * run here. */
sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp_isa(sl_rp_order order, sl_isa isa);

/* The one of the set this process uses (sl_quant_isa()). */
sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp(sl_rp_order order);

/* Eight consecutive weight rows (x, x + row_bytes, ...) against nt
 * activation rows ys[0..nt), 1 <= nt <= SL_VEC_DOT_ROWS8_MAX: s[8 t + r]
 * gets exactly the bits the vec_dot_n kernel of the same order gives for
 * row r and token t (the AVX2 one runs the chains as vector FMAs across
 * the rows, far cheaper than eight scalar chains). */
typedef void (*sl_vec_dot_rows8_fn)(int64_t n, float *s, const void *x, size_t row_bytes,
                                    const void *const *ys, int nt);
#define SL_VEC_DOT_ROWS8_MAX 4

/* The rows8 kernel of the order for isa (NULL when isa cannot run here),
 * and the one of this process's set. */
sl_vec_dot_rows8_fn sl_vec_dot_rows8_q4_K_rp_isa(sl_rp_order order, sl_isa isa);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_q4_K_rp(sl_rp_order order);

/* The 32-element types llama.cpp also repacks on AVX2 (rows % 8 == 0):
 * Q4_0 (q4_0_8x8), IQ4_NL (iq4_nl_8x8) and MXFP4 (mxfp4_8x8), all against
 * Q8_0 activations. Its repacked gemm and gemv compute the same thing per
 * (row, token): one FMA per 32-element block, in block order from zero,
 *   acc = fma(float(I_b), dx_b * dy_b, acc)   I_b = sum_j w_j a_j exact
 * with w_j the block's signed levels (Q4_0: q - 8; IQ4_NL: its table;
 * MXFP4: the doubled E2M1 table, dx_b = 2^(e-128)). So one order serves
 * every batch size. type: SL_TYPE_Q4_0, SL_TYPE_IQ4_NL or SL_TYPE_MXFP4;
 * any other type (or an isa that cannot run here) gives NULL. The
 * multi-token kernel takes 1 <= nt <= SL_VEC_DOT_RP_MAX, the eight-row one
 * 1 <= nt <= SL_VEC_DOT_ROWS8_MAX, with the contracts above. */
sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_isa(sl_type type, sl_isa isa);
sl_vec_dot_n_fn sl_vec_dot_n_b32_rp(sl_type type);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_isa(sl_type type, sl_isa isa);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp(sl_type type);

/* Internal to src/quant: each set's kernel (AVX2: NULL when not built). */
sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp_ref(sl_rp_order order);
sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp_avx2(sl_rp_order order);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_q4_K_rp_avx2(sl_rp_order order);
sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_ref(sl_type type);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_ref(sl_type type);
sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_avx2(sl_type type);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_avx2(sl_type type);

#endif
