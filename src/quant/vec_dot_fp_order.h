/* vec_dot_fp_order.h - the F16 / BF16 dot kernels in each of the two
 * float orders of llama.cpp's CPU backend (ops/matmul_order.h picks one
 * per matrix). */
#ifndef SL_QUANT_VEC_DOT_FP_ORDER_H
#define SL_QUANT_VEC_DOT_FP_ORDER_H

#include "quant/quant.h"

/* The two float orders llama.cpp's CPU backend gives F16 / BF16 products
 * (ops/matmul_order.h says which matrix takes which): tinyBLAS's (its
 * batched MUL_MAT of a 2-d weight) and ggml_vec_dot_*'s (one activation
 * row, MUL_MAT_ID's experts, shapes tinyBLAS refuses). */
typedef enum sl_fp_order {
    SL_FP_TINYBLAS = 0,
    SL_FP_VECDOT = 1,
} sl_fp_order;

/* The F16 or BF16 dot kernel (activations of the weight's own type) in
 * order o: for isa (NULL when it cannot run here), or this process's
 * (falling back to the scalar twin). NULL for other types. The traits'
 * vec_dot is the tinyBLAS order for F16, the vec_dot order for BF16. */
sl_vec_dot_fn sl_vec_dot_fp_order_isa(sl_type t, sl_fp_order o, sl_isa isa);
sl_vec_dot_fn sl_vec_dot_fp_order(sl_type t, sl_fp_order o);

/* Internal to src/quant. */
/* The scalar set (both orders of both types) and the AVX2 twins of the two
 * kernels that are not the traits' (NULL when not built or other pairs). */
sl_vec_dot_fn sl_vec_dot_fp_order_ref(sl_type t, sl_fp_order o);
sl_vec_dot_fn sl_vec_dot_fp_order_avx2(sl_type t, sl_fp_order o);

#endif
