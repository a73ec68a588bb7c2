/* matmul.c - a weight matrix times a batch of activation vectors.
 *
 * Rows outermost: one weight row is loaded once and multiplied with every
 * token of the batch while it sits in L1, so a micro-batch reads each
 * weight byte from memory once. Where the weight type has a multi-token
 * kernel (traits vec_dot_n), tokens go to it in groups of vec_dot_n_max,
 * so each weight block is also decoded once per group rather than once per
 * token. Each (row, token) value has the bits of the single-token vec_dot
 * (vec_dot_n's contract), so batching never changes a bit. */
#include "ops/ops.h"
#include "util/status.h"

void sl_matmul_rows(const sl_mat *mat, const void *const *acts, int n, float *y, size_t ldy,
                    int64_t r0, int64_t r1, float *row_tmp)
{
    const sl_type_traits *tr = sl_type_get(mat->type);
    const uint8_t *w = mat->data;
    if (sl_matvec_has_kernel(mat->type) && tr->vec_dot_n && n > 1) {
        const int g = tr->vec_dot_n_max;
        SL_ASSERT(g >= 1 && g <= SL_VEC_DOT_N_MAX);
        float s[SL_VEC_DOT_N_MAX];
        for (int64_t r = r0; r < r1; r++) {
            const uint8_t *row = w + (size_t)r * mat->row_bytes;
            for (int t0 = 0; t0 < n; t0 += g) {
                const int nt = n - t0 < g ? n - t0 : g;
                tr->vec_dot_n(mat->cols, s, row, acts + t0, nt);
                for (int k = 0; k < nt; k++) y[(size_t)(t0 + k) * ldy + r] = s[k];
            }
        }
        return;
    }
    if (sl_matvec_has_kernel(mat->type)) {
        for (int64_t r = r0; r < r1; r++) {
            const uint8_t *row = w + (size_t)r * mat->row_bytes;
            for (int t = 0; t < n; t++) tr->vec_dot(mat->cols, &y[(size_t)t * ldy + r], row, acts[t]);
        }
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
