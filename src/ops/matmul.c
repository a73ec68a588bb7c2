/* matmul.c - a weight matrix times a batch of activation vectors.
 *
 * Rows outermost: a weight row is loaded once and multiplied with every
 * token of the batch while it sits in L1, so a micro-batch reads each
 * weight byte from memory once. Where the weight type has a multi-token
 * kernel (traits vec_dot_n), tokens go to it in groups of vec_dot_n_max,
 * so each weight block is also decoded once per group rather than once per
 * token; and rows go in blocks of ROW_BLOCK, each token group taken by
 * every row of the block in turn, so a large batch's activations (512
 * tokens of Q8_K: 1.2 MB) come from L1 for all but the first row, not
 * from L3 for each. Each (row, token) value has the bits of the
 * single-token vec_dot (vec_dot_n's contract), so neither batching nor
 * the order of the loops changes a bit.
 *
 * Kernel per matrix (ops/matmul_order.h): llama.cpp, the reference,
 * multiplies some Q4_K, Q4_0, IQ4_NL and MXFP4 matrices through its
 * repacked 8x8 gemm/gemv,
 * whose float order differs from its plain Q4_K dot kernel; those take the
 * kernels of quant/vec_dot_rp.h here, every other matrix the traits'
 * kernels. Per activation row, its form (ops.h SL_MM_FORM_*, the caller's:
 * the micro-batch llama.cpp evaluates the row in) picks between the
 * batched and the one-row orders where llama.cpp has two: a 2-d Q4_K
 * matrix's gemm or gemv, an F32 / F16 / BF16 matrix's tinyBLAS or vec_dot
 * order. Never the batch sluice happens to split into.
 *
 * Activations: quantised weights use the traits' integer dot kernel against
 * activations quantised once per vector (Q8_0 / Q8_K as the weight type
 * asks); types without a kernel fall back to dequantising the row and a
 * float dot. A matrix-vector product is a batch of one (sl_matvec_rows). */
#include <string.h>

#include "ops/matmul_order.h"
#include "ops/ops.h"
#include "quant/vec_dot_rp.h"
#include "util/status.h"

/* rows per block: 8 weight rows (9 KB of Q4_K at 2048 columns) and a
 * group of 8 activation rows (19 KB of Q8_K) fit in a 32 KB L1 */
#define ROW_BLOCK 8

static const sl_type_traits *act_traits(sl_type t)
{
    const sl_type_traits *tr = sl_type_get(t);
    if (!tr || !tr->vec_dot) return NULL;
    const sl_type_traits *at = sl_type_get(tr->vec_dot_type);
    if (!at) return NULL;
    if (tr->vec_dot_type != SL_TYPE_F32 && !at->from_float) return NULL;
    return at;
}

bool sl_matvec_has_kernel(sl_type t) { return act_traits(t) != NULL; }

sl_type sl_matvec_act_type(sl_type t)
{
    return act_traits(t) ? sl_type_get(t)->vec_dot_type : SL_TYPE_F32;
}

size_t sl_matvec_act_bytes(sl_type t, int64_t cols)
{
    const sl_type_traits *at = act_traits(t);
    if (!at) return (size_t)cols * sizeof(float);
    return (size_t)cols / at->block_size * at->type_size;
}

void sl_matvec_prepare(const sl_mat *mat, const float *x, void *act)
{
    const sl_type_traits *tr = sl_type_get(mat->type);
    const sl_type_traits *at = act_traits(mat->type);
    if (!at || tr->vec_dot_type == SL_TYPE_F32)
        memcpy(act, x, (size_t)mat->cols * sizeof(float));
    else
        at->from_float(x, act, mat->cols);
}

void sl_mat_row_to_float(const sl_mat *mat, int64_t r, float *out)
{
    const sl_type_traits *tr = sl_type_get(mat->type);
    SL_ASSERT(tr && tr->to_float);
    if (mat->layout == SL_MAT_X8) { /* block by block out of the interleaved group */
        uint8_t row[256];
        const int64_t per = (int64_t)(sizeof row / tr->type_size) * tr->block_size;
        for (int64_t c0 = 0; c0 < mat->cols; c0 += per) {
            const int64_t nc = mat->cols - c0 < per ? mat->cols - c0 : per;
            sl_rp32_x8_row(mat->type, mat->data, r, c0, nc, mat->row_bytes, row);
            tr->to_float(row, out + c0, nc);
        }
        return;
    }
    tr->to_float((const uint8_t *)mat->data + (size_t)r * mat->row_bytes, out, mat->cols);
}

sl_mm_order sl_mm_order_for(sl_type type, int64_t rows, int64_t n_experts)
{
    const bool b32 = type == SL_TYPE_Q4_0 || type == SL_TYPE_IQ4_NL || type == SL_TYPE_MXFP4;
    if ((type != SL_TYPE_Q4_K && !b32) || rows % 8 != 0) return SL_MM_PLAIN;
    if (n_experts == 1) return SL_MM_PLAIN; /* 2-d for ggml: not MUL_MAT_ID's repacked form */
    if (n_experts < 0) return SL_MM_PLAIN;  /* 3-d for ggml: not MUL_MAT's repacked form */
    if (b32) return SL_MM_RP_B32;
    return n_experts == 0 ? SL_MM_RP_GEMM /* a 2-d tensor: MUL_MAT */ : SL_MM_RP_GEMV;
}

sl_fp_order sl_mm_fp_order_for(int64_t rows, int64_t cols, int64_t n_experts)
{
    if (n_experts >= 1 || rows % 4 != 0 || cols % 8 != 0) return SL_FP_VECDOT;
    return SL_FP_TINYBLAS;
}

/* The repacked-order kernels: whole blocks of 8 rows through the rows8
 * kernel, tokens in groups of SL_VEC_DOT_ROWS8_MAX (the 8 rows stay in L1
 * across the groups); a shorter tail through the multi-token kernel. Both
 * give each (row, token) the same bits (vec_dot_rp.h), so the split never
 * shows. An x8 matrix (SL_MAT_X8) takes its groups that lie wholly in
 * [r0, r1) through the x8 kernel, reading the group front to back, and
 * the rows of a group cut by r0 or r1 one at a time, each copied back to
 * the plain layout in row_tmp first (same bits again). */
static void rows_one_by_one(const sl_mat *mat, sl_vec_dot_n_fn dot_n, const void *const *acts,
                            int n, float *y, size_t ldy, int64_t r0, int64_t r1, void *row_tmp)
{
    const bool x8 = mat->layout == SL_MAT_X8;
    float s[SL_VEC_DOT_RP_MAX];
    for (int64_t r = r0; r < r1; r++) {
        const void *row = (const uint8_t *)mat->data + (size_t)r * mat->row_bytes;
        if (x8) {
            SL_ASSERT(row_tmp);
            sl_rp32_x8_row(mat->type, mat->data, r, 0, mat->cols, mat->row_bytes, row_tmp);
            row = row_tmp;
        }
        for (int t0 = 0; t0 < n; t0 += SL_VEC_DOT_RP_MAX) {
            const int nt = n - t0 < SL_VEC_DOT_RP_MAX ? n - t0 : SL_VEC_DOT_RP_MAX;
            dot_n(mat->cols, s, row, acts + t0, nt);
            for (int k = 0; k < nt; k++) y[(size_t)(t0 + k) * ldy + (size_t)r] = s[k];
        }
    }
}

/* the largest row (in 32-element blocks) whose activation sums the x8
 * path tables on the stack (4 tokens x 2 KiB) */
#define X8_SUMS_MAX 512

static void repacked_rows(const sl_mat *mat, sl_mm_order order, const void *const *acts, int n,
                          float *y, size_t ldy, int64_t r0, int64_t r1, void *row_tmp)
{
    const uint8_t *w = mat->data;
    const sl_rp_order o = order == SL_MM_RP_GEMV ? SL_RP_GEMV : SL_RP_GEMM;
    const bool b32 = order == SL_MM_RP_B32;
    const bool x8 = b32 && mat->layout == SL_MAT_X8;
    SL_ASSERT(mat->layout == SL_MAT_ROWS || x8);
    const sl_vec_dot_rows8_fn r8 = x8    ? sl_vec_dot_x8_b32_rp(mat->type)
                                   : b32 ? sl_vec_dot_rows8_b32_rp(mat->type)
                                         : sl_vec_dot_rows8_q4_K_rp(o);
    const sl_vec_dot_n_fn dot_n = b32 ? sl_vec_dot_n_b32_rp(mat->type) : sl_vec_dot_n_q4_K_rp(o);
    SL_ASSERT(r8 && dot_n);
    /* x8: whole groups only, from the first group boundary at or after r0 */
    int64_t rb = x8 ? (r0 + 7) / 8 * 8 : r0;
    if (rb > r1) rb = r1;
    rows_one_by_one(mat, dot_n, acts, n, y, ldy, r0, rb, row_tmp);
    float s[8 * SL_VEC_DOT_ROWS8_MAX];
    /* x8 with at most one group of tokens: the activations' block sums
     * once here rather than once per group of rows (same integers, so the
     * same bits), when the set has such a kernel and the table fits */
    const sl_vec_dot_x8s_fn r8s = x8 && n <= SL_VEC_DOT_ROWS8_MAX && mat->cols / 32 <= X8_SUMS_MAX
                                      ? sl_vec_dot_x8s_b32_rp(mat->type)
                                      : NULL;
    if (r8s && rb + 8 <= r1) {
        int32_t sums[SL_VEC_DOT_ROWS8_MAX][X8_SUMS_MAX];
        const int32_t *sp[SL_VEC_DOT_ROWS8_MAX];
        for (int t = 0; t < n; t++) {
            sl_rp32_x8_offset_sums(mat->type, mat->cols, acts[t], sums[t]);
            sp[t] = sums[t];
        }
        for (; rb + 8 <= r1; rb += 8) {
            r8s(mat->cols, s, w + (size_t)rb * mat->row_bytes, acts, sp, n);
            for (int t = 0; t < n; t++)
                for (int k = 0; k < 8; k++)
                    y[(size_t)t * ldy + (size_t)rb + (size_t)k] = s[8 * t + k];
        }
    }
    for (; rb + 8 <= r1; rb += 8)
        for (int t0 = 0; t0 < n; t0 += SL_VEC_DOT_ROWS8_MAX) {
            const int nt = n - t0 < SL_VEC_DOT_ROWS8_MAX ? n - t0 : SL_VEC_DOT_ROWS8_MAX;
            r8(mat->cols, s, w + (size_t)rb * mat->row_bytes, mat->row_bytes, acts + t0, nt);
            for (int t = 0; t < nt; t++)
                for (int k = 0; k < 8; k++)
                    y[(size_t)(t0 + t) * ldy + (size_t)rb + (size_t)k] = s[8 * t + k];
        }
    rows_one_by_one(mat, dot_n, acts, n, y, ldy, rb, r1, row_tmp);
}

/* llama.cpp 2026-09 takes its IQ panel gemm (iqp.cpp) only for a product
 * over at least 8 tokens: GGML_IQP_MIN_BATCH for a 2-d weight,
 * GGML_IQP_MIN_BATCH_ID for each expert of a MUL_MAT_ID (the tokens routed
 * to it); fewer take the plain vec_dot. */
#define IQ_PANEL_MIN_BATCH 8

/* A batched MUL_MAT llama.cpp gives tinyBLAS's quantised gemm, in an order
 * the plain kernel does not share: an IQ4_NL weight ggml does not repack
 * (a 3-d weight's slices, a 2-d one of rows % 8 != 0); not MUL_MAT_ID's
 * experts, which go through ggml_vec_dot. */
static bool iq4_nl_tinyblas(const sl_mat *mat)
{
    if (mat->type != SL_TYPE_IQ4_NL) return false;
    if (mat->n_experts == SL_MM_BATCHED_3D) return true;
    return mat->n_experts == 0 && sl_mm_order_for(mat->type, mat->rows, 0) == SL_MM_PLAIN;
}

/* Each (row, token) of rows [r0, r1) by one dot kernel (vec_dot contract). */
static void rows_by_dot(const sl_mat *mat, sl_vec_dot_fn dot, const void *const *acts, int n,
                        float *y, size_t ldy, int64_t r0, int64_t r1)
{
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)mat->data + (size_t)r * mat->row_bytes;
        for (int t = 0; t < n; t++) dot(mat->cols, &y[(size_t)t * ldy + r], row, acts[t]);
    }
}

/* The products of n activation rows of one form: alt says the rows take
 * the one-row form (SL_MM_FORM_ONE or SL_MM_FORM_TAIL, whichever the
 * matrix heeds: form_mask). */
static void matmul_rows_as(const sl_mat *mat, const void *const *acts, int n, float *y,
                           size_t ldy, int64_t r0, int64_t r1, float *row_tmp, bool alt)
{
    const sl_type_traits *tr = sl_type_get(mat->type);
    const uint8_t *w = mat->data;
    /* the reference's order for this matrix: its repacked gemm for a 2-d
     * Q4_K weight (at every batch size), its gemv for an expert of a
     * many-expert tensor, its one 8x8 order for Q4_0 / IQ4_NL / MXFP4,
     * else the plain kernel (matmul_order.h) */
    if (mat->iq_panel && mat->type == SL_TYPE_IQ4_XS && n >= IQ_PANEL_MIN_BATCH) {
        /* llama.cpp 2026-09's IQ panel order, one (row, token) at a time */
        rows_by_dot(mat, sl_vec_dot_iq4_xs_panel, acts, n, y, ldy, r0, r1);
        return;
    }
    sl_mm_order order = sl_mm_order_for(mat->type, mat->rows, mat->n_experts);
    if (alt && order == SL_MM_RP_GEMM) order = SL_MM_RP_GEMV; /* the tail's gemv */
    if (order != SL_MM_PLAIN) {
        repacked_rows(mat, order, acts, n, y, ldy, r0, r1, row_tmp);
        return;
    }
    if (!alt && iq4_nl_tinyblas(mat)) { /* a one-row micro-batch never goes to tinyBLAS */
        rows_by_dot(mat, sl_vec_dot_iq4_nl_tinyblas, acts, n, y, ldy, r0, r1);
        return;
    }
    /* a one-row micro-batch never goes to tinyBLAS */
    const sl_fp_order fp =
        alt ? SL_FP_VECDOT : sl_mm_fp_order_for(mat->rows, mat->cols, mat->n_experts);
    if (mat->type == SL_TYPE_F32 && (mat->n_experts == SL_MM_BATCHED_3D || fp == SL_FP_VECDOT)) {
        /* what tinyBLAS does not take (one-row micro-batches, MUL_MAT_ID's
         * experts, rows % 4 or cols % 8 not 0, a 3-d weight's MUL_MAT over
         * permuted rows, whose F32 activations ggml hands on in place, not
         * contiguous): ggml_vec_dot_f32's four 8-lane chains */
        for (int64_t r = r0; r < r1; r++) {
            const float *row = (const float *)(w + (size_t)r * mat->row_bytes);
            for (int t = 0; t < n; t++)
                y[(size_t)t * ldy + r] = mat->f32_vtail
                                             ? sl_dot_f32_untiled_vtail(row, acts[t], mat->cols)
                                             : sl_dot_f32_untiled(row, acts[t], mat->cols);
        }
        return;
    }
    if (mat->type == SL_TYPE_F16 || mat->type == SL_TYPE_BF16) {
        /* the reference's float order for this matrix (matmul_order.h) */
        const sl_vec_dot_fn dot = sl_vec_dot_fp_order(mat->type, fp);
        SL_ASSERT(dot);
        rows_by_dot(mat, dot, acts, n, y, ldy, r0, r1);
        return;
    }
    if (sl_matvec_has_kernel(mat->type) && tr->vec_dot_n && n > 1) {
        const int g = tr->vec_dot_n_max;
        SL_ASSERT(g >= 1 && g <= SL_VEC_DOT_N_MAX);
        float s[SL_VEC_DOT_N_MAX];
        for (int64_t rb = r0; rb < r1; rb += ROW_BLOCK) {
            const int64_t re = r1 - rb < ROW_BLOCK ? r1 : rb + ROW_BLOCK;
            for (int t0 = 0; t0 < n; t0 += g) {
                const int nt = n - t0 < g ? n - t0 : g;
                for (int64_t r = rb; r < re; r++) {
                    tr->vec_dot_n(mat->cols, s, w + (size_t)r * mat->row_bytes, acts + t0, nt);
                    for (int k = 0; k < nt; k++) y[(size_t)(t0 + k) * ldy + r] = s[k];
                }
            }
        }
        return;
    }
    if (sl_matvec_has_kernel(mat->type)) {
        rows_by_dot(mat, tr->vec_dot, acts, n, y, ldy, r0, r1);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        sl_mat_row_to_float(mat, r, row_tmp);
        for (int t = 0; t < n; t++) {
            const float *x = acts[t];
            float acc = 0.0f;
            for (int64_t i = 0; i < mat->cols; i++) acc += row_tmp[i] * x[i];
            y[(size_t)t * ldy + r] = acc;
        }
    }
}

/* The SL_MM_FORM_* bit mat heeds: TAIL for a repacked 2-d Q4_K matrix
 * (gemm or gemv), ONE for an F32 / F16 / BF16 one tinyBLAS takes in
 * batches; 0 for every other matrix (one order for all rows). */
static uint8_t form_mask(const sl_mat *mat)
{
    if (mat->iq_panel && mat->type == SL_TYPE_IQ4_XS) return 0;
    if (sl_mm_order_for(mat->type, mat->rows, mat->n_experts) == SL_MM_RP_GEMM)
        return SL_MM_FORM_TAIL;
    const bool fp = mat->type == SL_TYPE_F32 || mat->type == SL_TYPE_F16 ||
                    mat->type == SL_TYPE_BF16;
    if (fp && sl_mm_fp_order_for(mat->rows, mat->cols, mat->n_experts) == SL_FP_TINYBLAS)
        return SL_MM_FORM_ONE;
    if (iq4_nl_tinyblas(mat)) return SL_MM_FORM_ONE;
    return 0;
}

void sl_matmul_rows_form(const sl_mat *mat, const void *const *acts, const uint8_t *form, int n,
                         float *y, size_t ldy, int64_t r0, int64_t r1, float *row_tmp)
{
    const uint8_t mask = form ? form_mask(mat) : 0;
    if (!mask) {
        matmul_rows_as(mat, acts, n, y, ldy, r0, r1, row_tmp, false);
        return;
    }
    for (int t0 = 0; t0 < n;) { /* each run of rows of one form */
        const bool alt = (form[t0] & mask) != 0;
        int t1 = t0 + 1;
        while (t1 < n && ((form[t1] & mask) != 0) == alt) t1++;
        matmul_rows_as(mat, acts + t0, t1 - t0, y + (size_t)t0 * ldy, ldy, r0, r1, row_tmp, alt);
        t0 = t1;
    }
}

void sl_matmul_rows(const sl_mat *mat, const void *const *acts, int n, float *y, size_t ldy,
                    int64_t r0, int64_t r1, float *row_tmp)
{
    matmul_rows_as(mat, acts, n, y, ldy, r0, r1, row_tmp, false);
}

void sl_matvec_rows(const sl_mat *mat, const void *act, float *y, int64_t r0, int64_t r1,
                    float *row_tmp)
{
    sl_matmul_rows(mat, &act, 1, y, 0, r0, r1, row_tmp); /* a batch of one */
}
