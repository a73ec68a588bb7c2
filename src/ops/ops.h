/* ops.h - the numeric operations of the forward pass, on f32 activations.
 *
 * Owns: normalisation, rotary embedding, softmax, activation functions and
 * the weight-matrix products (dispatching to the quant traits' kernels).
 * Must not know: models, tensor names, files, sessions. */
#ifndef SL_OPS_OPS_H
#define SL_OPS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"

/* A view of a row-major weight matrix: rows of `cols` elements of `type`,
 * row r at data + r * row_bytes. Does not own data. */
typedef struct sl_mat {
    sl_type type;
    int64_t rows;
    int64_t cols;
    size_t row_bytes;
    const void *data;
    int64_t n_experts;  /* an expert's slice of a stacked tensor of this many
                           experts (llama.cpp repacks those differently), 0: a
                           2-d matrix */
    int layout;         /* SL_MAT_ROWS (0, what a zeroed sl_mat says) or
                           SL_MAT_X8: rows interleaved eight at a time
                           (quant/vec_dot_rp.h), only ever for a matrix
                           that sl_mm_order_for gives SL_MM_RP_B32 */
    bool iq_panel;      /* IQ4_XS in the order of llama.cpp's IQ panel gemm
                           (quant/vec_dot_rp.h sl_vec_dot_iq4_xs_panel), which
                           node-llama-cpp 3.22.1's build takes for 2-d and
                           expert weights of rows % 8 == 0 and the reference
                           fixtures' build lacks; false: the plain kernel */
    bool f32_vtail;     /* f32: where llama.cpp's ggml_vec_dot_f32 multiplies
                           (not tinyBLAS), its leftover as node-llama-cpp
                           3.22.1's build rounds it (sl_dot_f32_untiled_vtail) */
} sl_mat;

/* sl_mat.layout values. */
enum { SL_MAT_ROWS = 0, SL_MAT_X8 = 1 };

/* out[i] = x[i] / rms(x) * w[i], rms over n with eps, in llama.cpp's
 * arithmetic (float squares summed in double, mean and scale in float).
 * out may alias x. */
void sl_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);

/* rows[r * width + i] += bias[i] for each of the n rows (a bias after a
 * matrix product); nothing when bias is NULL. */
void sl_add_rows_bias(float *rows, const float *bias, int64_t n, size_t width);

/* In-place softmax over n values, in llama.cpp's arithmetic (its
 * ggml_soft_max on AVX2: the exponentials of eights by its polynomial, the
 * tail by expf, summed per eight then in double, scaled by 1/sum). */
void sl_softmax(float *x, int64_t n);

/* x = silu(x) * g, elementwise (SwiGLU's combine step), in llama.cpp's
 * arithmetic (eights with its polynomial exponential, the tail with expf). */
void sl_swiglu(float *x, const float *g, int64_t n);

/* gpt-oss's clamped SwiGLU (llama.cpp's swiglu_oai): with a = min(x, 7)
 * and u = clamp(g, -7, 7), x = a / (1 + e^(-1.702 a)) * (u + 1). */
void sl_swiglu_oai(float *x, const float *g, int64_t n);

/* x = silu(x) = x / (1 + e^-x) elementwise over one row, in llama.cpp's
 * arithmetic (ggml_vec_silu_f32: eights with its polynomial exponential,
 * the tail with expf; the eights count from x[0]). */
void sl_silu(float *x, int64_t n);

/* The sigmoid gate of a shared expert, 1 / (1 + e^-g), rounded as
 * llama.cpp's graph computes it: ggml_sigmoid (qwen35moe), or with
 * silu_div as ggml_silu(g) / g = (g / (1 + e^-g)) / g (qwen2moe's graph),
 * which differs in the last bit for about a third of g (NaN at g = 0, as
 * there). */
float sl_shexp_gate(float g, bool silu_div);

/* x . y for a one-row f32 matrix, in llama.cpp's order for f32 matrices
 * it does not tile (rows not a multiple of 4: ggml_vec_dot_f32 on AVX2,
 * four 8-lane FMA chains over steps of 32, combined pairwise, the halves
 * added, two horizontal adds; the tail by FMA in order). */
float sl_dot_f32_untiled(const float *x, const float *y, int64_t n);

/* sl_dot_f32_untiled as node-llama-cpp 3.22.1's build of ggml_vec_dot_f32
 * computes it (llama.cpp 2026-09, model/llama_rev.h): the same 32-wide
 * part, but its compiler vectorised the leftover loop (n % 32 values):
 * eights, then a four, of products rounded and added in order, the last
 * one to three by FMA. Equal to sl_dot_f32_untiled when n % 32 < 4. */
float sl_dot_f32_untiled_vtail(const float *x, const float *y, int64_t n);

/* The AVX2 forms of sl_swiglu and of sl_softmax's exponentials and sum
 * (act_avx2.c; bit-identical to the scalar forms). Only on x86-64, only
 * called when the CPU has AVX2 and FMA. */
void sl_swiglu_avx2(float *x, const float *g, int64_t n);
void sl_silu_avx2(float *x, int64_t n);
double sl_softmax_sum_avx2(float *x, int64_t n, float max);
float sl_dot_f32_untiled_avx2(const float *x, const float *y, int64_t n);

/* Index of the first NaN or infinity among x[0..n), or -1 when all are
 * finite. Reads the bits, so it holds under any floating-point flags. */
int64_t sl_first_nonfinite(const float *x, int64_t n);

/* Index of the first value among x[0..n) whose magnitude is limit or more,
 * or that is NaN; -1 when none is (limit INFINITY: sl_first_nonfinite).
 * Reads the bits, as sl_first_nonfinite. */
int64_t sl_first_beyond(const float *x, int64_t n, float limit);

/* The largest magnitude a hidden state may hold, 2^64: the square of
 * anything larger overflows a float, and an RMS norm (squares in float,
 * as llama.cpp) then scales its whole row to zeros. A residual stream
 * this large is a damaged file, never a model's real activations. */
#define SL_HIDDEN_MAX 0x1p64f

/* Rotary embedding parameters shared by every head of a model. */
typedef struct sl_rope {
    int n_dims;        /* rotated dimensions per head (even) */
    int neox;          /* 0: rotate pairs (2i, 2i+1); 1: rotate (i, i + n_dims/2) */
    float freq_base;
    float freq_scale;  /* 1 unless linear/yarn scaling */
    float ext_factor;  /* yarn extrapolation mix (0 disables yarn) */
    float attn_factor; /* magnitude scale (1) */
    float beta_fast, beta_slow;
    int n_ctx_orig;    /* yarn: original training context */
    bool inverse;      /* rotate by -theta (ggml_rope_ext_back: deepseek4's de-rope) */
    int sections[4];   /* IMROPE (qwen35moe): rope.dimension_sections (t, h, w, e);
                        * all 0 for every other rope */
} sl_rope;

/* Rotates n_heads heads of head_dim values at x (head h at x + h*head_dim)
 * for position pos. Dimensions past n_dims are left untouched. With
 * sections (IMROPE) the text position is (pos, pos, pos, 0): a pair whose
 * sector falls to "e" rotates by angle 0 (sl_rope_pair_at_zero). */
void sl_rope_apply(const sl_rope *r, float *x, int n_heads, int head_dim, int64_t pos);

/* IMROPE (rope_sections.c): whether rotated pair `pair` (< n_dims / 2) takes
 * the fourth ("e") section's position, which is 0 for text, under the
 * interleaved rule of ggml's IMROPE: sector = pair mod (s0+s1+s2+s3); h when
 * sector % 3 == 1 and sector < 3 s1, w when % 3 == 2 and < 3 s2, t when
 * % 3 == 0 and < 3 s0, else e. False when r has no sections (sum 0). */
bool sl_rope_pair_at_zero(const sl_rope *r, int pair);

/* Bytes needed to hold `cols` activations quantised for a matrix of type t
 * (the traits' vec_dot_type), or cols floats when t has no integer kernel. */
size_t sl_matvec_act_bytes(sl_type t, int64_t cols);

/* Quantises the activation vector x (mat->cols values) into act, the form
 * sl_matvec_rows consumes. act must hold sl_matvec_act_bytes bytes. */
void sl_matvec_prepare(const sl_mat *mat, const float *x, void *act);

/* y[r] = dot(row r, x) for rows r in [r0, r1), from activations prepared by
 * sl_matvec_prepare. Each row is computed independently, so any split of
 * rows across threads gives bit-identical results. row_tmp: scratch of
 * mat->cols floats, used when the type has no integer kernel. */
void sl_matvec_rows(const sl_mat *mat, const void *act, float *y, int64_t r0, int64_t r1,
                    float *row_tmp);

/* True when mat's type has an integer/float dot kernel (activations are
 * then quantised to its vec_dot_type); false means the dequantise-a-row
 * fallback with f32 activations. */
bool sl_matvec_has_kernel(sl_type t);

/* The form activations take for matrices of type t: its vec_dot_type, or
 * SL_TYPE_F32 (plain floats) for the fallback. Matrices whose forms agree
 * can share one prepared activation row. */
sl_type sl_matvec_act_type(sl_type t);

/* Batched form: y[t * ldy + r] = dot(row r, acts[t]) for t in [0, n) and
 * rows r in [r0, r1). acts[t] was prepared by sl_matvec_prepare. Gives the
 * same bits as n calls of sl_matvec_rows. */
void sl_matmul_rows(const sl_mat *mat, const void *const *acts, int n, float *y, size_t ldy,
                    int64_t r0, int64_t r1, float *row_tmp);

/* The form of one activation row's product, as llama.cpp's CPU backend
 * chooses it by the micro-batch the row lies in (a bit set per row; 0:
 * the batched forms sl_matmul_rows takes):
 *   SL_MM_FORM_ONE   the micro-batch is this one row: ggml skips tinyBLAS
 *                    (llamafile_sgemm refuses n < 2), so an F32 / F16 /
 *                    BF16 matrix tinyBLAS would take (matmul_order.h)
 *                    goes through ggml_vec_dot_* instead;
 *   SL_MM_FORM_TAIL  the row is one of the last nrows % 4 of its
 *                    micro-batch (every row of a micro-batch of 1-3): a
 *                    repacked 2-d Q4_K matrix takes its gemv, not its gemm
 *                    (repack.cpp forward_mul_mat_one_chunk).
 * Other matrices have one order for every row. */
enum { SL_MM_FORM_ONE = 4, SL_MM_FORM_TAIL = 8 };

/* sl_matmul_rows with each activation row's form: form[t] (SL_MM_FORM_*
 * bits, other bits ignored) for t in [0, n), or NULL for all 0. Runs of
 * rows of one form go to the kernels of that form, so each (row, token)
 * value depends on its own form only. */
void sl_matmul_rows_form(const sl_mat *mat, const void *const *acts, const uint8_t *form, int n,
                         float *y, size_t ldy, int64_t r0, int64_t r1, float *row_tmp);

/* Dequantises row r of mat into out (mat->cols floats). */
void sl_mat_row_to_float(const sl_mat *mat, int64_t r, float *out);

/* ---- gemma4's operations (act_gelu.c, norm_unit.c, softcap.c, rope_ff.c) */

/* GELU (tanh form) of x as llama.cpp's CPU backend computes it: through an
 * f16 table (x rounded to f16, the result rounded to f16), 0 for
 * x <= -10, x for x >= 10. */
float sl_gelu_f16(float x);

/* x = gelu(x) * g elementwise (GeGLU's combine), gelu as sl_gelu_f16. */
void sl_geglu(float *x, const float *g, int64_t n);

/* out[i] = x[i] / rms(x): the RMS norm without a weight, in sl_rmsnorm's
 * arithmetic. out may alias x. */
void sl_rmsnorm_unit(float *out, const float *x, int64_t n, float eps);

/* Rotates each of n_rows consecutive blocks of n floats of x (n a power
 * of two) in place by the orthonormal Walsh-Hadamard matrix (Sylvester's
 * order, entries +-1/sqrt(n)), as llama.cpp's CPU backend computes its
 * attention rotations (ggml_compute_forward_fwht): every value times
 * 1/sqrtf(n) first, then the butterflies (u + v, u - v) of spans 1, 2, ...,
 * n/2, each rounded once. The rotation is its own inverse up to rounding. */
void sl_fwht_rows(float *x, int64_t n_rows, int n);

/* x = cap * tanh(x / cap) elementwise (a final logit softcap), cap > 0. */
void sl_softcap(float *x, int64_t n, float cap);

/* sl_rope_apply with pair i's frequency divided by ff[i] (i < n_dims / 2)
 * and no YaRN (r's ext_factor is ignored). */
void sl_rope_apply_ff(const sl_rope *r, const float *ff, float *x, int n_heads, int head_dim,
                      int64_t pos);

#endif
