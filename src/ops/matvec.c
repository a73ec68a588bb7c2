/* matvec.c - weight matrix times activation vector, one row at a time.
 *
 * Quantised weights use the traits' integer dot kernel against activations
 * quantised once per vector (Q8_0 / Q8_K as the weight type asks). Types
 * without a kernel fall back to dequantising the row and a float dot. */
#include <string.h>

#include "ops/ops.h"
#include "quant/vec_dot_rp.h"
#include "util/status.h"

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

void sl_matvec_rows(const sl_mat *mat, const void *act, float *y, int64_t r0, int64_t r1,
                    float *row_tmp)
{
    sl_matmul_rows(mat, &act, 1, y, 0, r0, r1, row_tmp); /* a batch of one */
}
