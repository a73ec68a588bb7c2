/* matmul_order.h - which dot kernel (and so which float order) a weight
 * matrix takes, following the reference's (llama.cpp's) AVX2 path.
 *
 * ggml's CPU backend repacks a Q4_K weight whose row count is a multiple of
 * 8 (repack.cpp, q4_K_8x8) when the op using it accepts the repacked form:
 * MUL_MAT of a 2-d tensor, or MUL_MAT_ID of a 3-d one (ggml_n_dims == 3, so
 * not an expert tensor of a one-expert file, whose n_dims is 2). A 2-d
 * weight then goes through the repacked gemm for batches (gemv for single
 * tokens and for the last nrows % 4 of a batch); an expert weight through
 * the repacked gemv for every row. The gemm and the gemv differ in float
 * order (vec_dot_rp.h); sluice takes the gemm's for a 2-d weight's rows
 * unless a row's form (ops.h SL_MM_FORM_TAIL, given by the micro-batch
 * llama.cpp would evaluate it in, not by sluice's batch) says gemv, so
 * that batch splits never change a bit. Q4_0, IQ4_NL and
 * MXFP4 are repacked by the same rule (q4_0_8x8, iq4_nl_8x8, mxfp4_8x8);
 * their gemm and gemv share one order. Every other weight (other types,
 * rows % 8 != 0) uses the plain dot kernel (traits), except that a batched
 * IQ4_NL product ggml does not repack goes to tinyBLAS, whose one FMA
 * chain ops/matmul.c takes (sl_vec_dot_iq4_nl_tinyblas). */
#ifndef SL_OPS_MATMUL_ORDER_H
#define SL_OPS_MATMUL_ORDER_H

#include <stdint.h>

#include "quant/quant.h"
#include "quant/vec_dot_fp_order.h"

typedef enum sl_mm_order {
    SL_MM_PLAIN = 0,   /* the traits' vec_dot / vec_dot_n */
    SL_MM_RP_GEMM = 1, /* Q4_K, the repacked gemm's order */
    SL_MM_RP_GEMV = 2, /* Q4_K, the repacked gemv's order */
    SL_MM_RP_B32 = 3,  /* Q4_0, IQ4_NL, MXFP4: the repacked 8x8 gemm/gemv's
                          order (one for both) */
} sl_mm_order;

/* n_experts for a slice of a weight that llama.cpp creates 3-d and
 * multiplies with a plain MUL_MAT (deepseek4's attn_output_a, {in, rank,
 * groups}, over a permuted view of the activations): ggml repacks a
 * MUL_MAT's weight only when it is 2-d, so such a slice takes the plain
 * kernel; an F32 one ggml_vec_dot_f32 (tinyBLAS wants contiguous F32
 * activations), an F16 / BF16 one tinyBLAS by sl_mm_fp_order_for's shape
 * rule (ggml converts the activations to a contiguous buffer first). */
#define SL_MM_BATCHED_3D (-1)

/* The order for a weight matrix of `type` with `rows` rows, cut from a
 * tensor of n_experts experts (0: a 2-d tensor, not an expert tensor;
 * SL_MM_BATCHED_3D: above). Pure; never fails. */
sl_mm_order sl_mm_order_for(sl_type type, int64_t rows, int64_t n_experts);


/* The float order of an F16 or BF16 matrix (rows x cols, cut from a tensor
 * of n_experts experts as above). llama.cpp hands a 2-d weight's batched
 * MUL_MAT to tinyBLAS (llamafile sgemm) when rows % 4 == 0 and
 * cols % 8 == 0, and everything else to ggml_vec_dot_*: MUL_MAT_ID's
 * experts (any n_experts >= 1), single activation rows, the shapes tinyBLAS
 * refuses. This gives the batched order: tinyBLAS's for such a 2-d weight,
 * the vec_dot order for the rest; a row whose form says it is a
 * micro-batch of its own (ops.h SL_MM_FORM_ONE) takes the vec_dot order
 * whatever this says (ops/matmul.c). Pure; never fails. */
sl_fp_order sl_mm_fp_order_for(int64_t rows, int64_t cols, int64_t n_experts);

#endif
