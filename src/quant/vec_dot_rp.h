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

/* IQ4_XS x Q8_K in the order of llama.cpp's IQ panel gemm (iqp.cpp, in
 * node-llama-cpp 3.22.1's build, not the reference fixtures'): per (row,
 * token) the super-block's exact integer sum, one scalar FMA with d * y.d
 * per super-block, `acc = fma(float(I), d * y.d, acc)` from zero. Scalar,
 * the same bits on every machine; vec_dot contract. Never fails. */
void sl_vec_dot_iq4_xs_panel(int64_t n, float *s, const void *vx, const void *vy);

/* IQ4_NL x Q8_0 in the order of llama.cpp's tinyBLAS (llamafile sgemm's
 * tinyBLAS_Q0_AVX), which takes a batched MUL_MAT of an IQ4_NL weight ggml
 * does not repack (a 3-d weight, or rows % 8 != 0): lane l of each block
 * is the exact sum of elements 4l..4l+3, FMA'd with the blocks' scale
 * product into one set of 8 lanes (ggml_vec_dot_iq4_nl_q8_0 keeps two,
 * even and odd blocks), summed at the end. Scalar, the same bits on every
 * machine; vec_dot contract. Never fails. */
void sl_vec_dot_iq4_nl_tinyblas(int64_t n, float *s, const void *vx, const void *vy);

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
/* The AVX2 set's eight-row Q4_K forms for tests and benchmarks: out[0] the
 * 256-bit one, out[1] the one with 512-bit integer steps when this CPU has
 * AVX-512BW, else NULL, out[2] that one with VNNI's vpdpwssd when the CPU
 * also has AVX512-VNNI, else NULL. The set takes the last one present.
 * Returns how many are set (0 off x86). Same bits. */
int sl_vec_dot_rows8_q4_K_rp_forms_avx2(sl_rp_order order, sl_vec_dot_rows8_fn out[3]);
sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_ref(sl_type type);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_ref(sl_type type);
sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_avx2(sl_type type);
sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_avx2(sl_type type);

/* ---- the eight-row interleaved layout (x8) of the 32-element types ----
 *
 * llama.cpp keeps the matrices it repacks interleaved eight rows at a time,
 * so that its kernel reads memory front to back; sluice can store the same
 * matrices so too (sl_mat.layout == SL_MAT_X8, set where the weights are
 * loaded). Rows 8g..8g+7 ("group" g) occupy the bytes rows 8g..8g+7 held
 * before, 8 * row_bytes from data + 8 g row_bytes, as n/32 x8 blocks in
 * block order; x8 block i (8 * the block size, at group + 8 i bb) is
 *   8 scales, row 0 first (Q4_0 / IQ4_NL: f16 d, 2 bytes each; MXFP4: the
 *     E8M0 byte), then
 *   4 chunks of 32 bytes: chunk c is bytes 4c..4c+3 of the 16 nibble
 *     bytes of rows 0..7's block i, row 0 first
 * (so a 32-byte chunk holds, in 32-bit lane r, elements 4c..4c+3 of row r
 * in its low nibbles and 16+4c..16+4c+3 in its high ones). Only the layout
 * changes: the kernels below give the bits of the rp32 kernels above. */

/* Whether a matrix of `type` with `rows` rows can be stored x8: one of the
 * three types and rows % 8 == 0. */
bool sl_rp32_x8_applies(sl_type type, int64_t rows);

/* Rewrites `rows` rows (row_bytes apart, cols elements each) at data, in
 * place, from the plain layout into x8; tmp holds 8 * row_bytes bytes of
 * scratch. The caller checks sl_rp32_x8_applies; cols % 32 == 0 and
 * row_bytes == cols / 32 * the block size (the rows are contiguous). */
void sl_rp32_x8_interleave(sl_type type, void *data, int64_t rows, int64_t cols,
                           size_t row_bytes, void *tmp);

/* Elements [c0, c0 + nc) of row r of an x8 matrix at data (c0, nc
 * multiples of 32), copied out in the plain row layout (nc / 32 blocks) to
 * out: the inverse of the interleave for part of one row. */
void sl_rp32_x8_row(sl_type type, const void *data, int64_t r, int64_t c0, int64_t nc,
                    size_t row_bytes, void *out);

/* The eight rows of one x8 group at x (its first x8 block) against nt
 * activation rows, 1 <= nt <= SL_VEC_DOT_ROWS8_MAX: s[8 t + r] gets exactly
 * the bits of sl_vec_dot_rows8_b32_rp's row r and token t on the plain
 * layout. row_bytes is the matrix's (unused by the kernel: the group is
 * contiguous). NULL for other types or an isa that cannot run here. */
sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp_isa(sl_type type, sl_isa isa);
sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp(sl_type type);

/* The x8 kernel with the activations' block sums precomputed: the kernels
 * whose levels carry an offset (Q4_0: 8, MXFP4: 12; vec_dot_rp32x8_avx2.c)
 * otherwise sum each activation block again for every group of 8 rows.
 * ysum[t] is token t's table from sl_rp32_x8_offset_sums (n / 32 entries);
 * s, x, ys, nt and the bits are the x8 kernel's. */
typedef void (*sl_vec_dot_x8s_fn)(int64_t n, float *s, const void *x, const void *const *ys,
                                  const int32_t *const *ysum, int nt);

/* The precomputed-sums x8 kernel of type for this process's set, or NULL
 * when there is none (other types, non-AVX2 sets: use the x8 kernel). */
sl_vec_dot_x8s_fn sl_vec_dot_x8s_b32_rp(sl_type type);

/* Fills out[0 .. n/32) with offset * (the sum of the 32 levels) of each
 * Q8_0 block of the activation row y (n elements), offset the x8s kernel's
 * for type (Q4_0: 8, MXFP4: 12, else 0). Exact integers. */
void sl_rp32_x8_offset_sums(sl_type type, int64_t n, const void *y, int32_t *out);

/* Internal to src/quant. */
sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp_ref(sl_type type);
sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp_avx2(sl_type type);
sl_vec_dot_x8s_fn sl_vec_dot_x8s_b32_rp_avx2(sl_type type);

#endif
