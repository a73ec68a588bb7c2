/* value_ranges.c - the loader's sane ranges (see value_ranges.h). */
#include "model/value_ranges.h"

#include <math.h>

#include "ops/ops.h"

const sl_f32_range SL_RANGE_EPS = {1e-12f, 0.01f, false};
const sl_f32_range SL_RANGE_SOFTCAP = {1.0f, 10000.0f, true};
const sl_f32_range SL_RANGE_ROPE_BASE = {2.0f, 1e11f, false};
const sl_f32_range SL_RANGE_ROPE_FACTOR = {1.0f, 1024.0f, false};
const sl_f32_range SL_RANGE_YARN_LOG_MUL = {0.0f, 1.0f, false};
const sl_f32_range SL_RANGE_EXPERT_SCALE = {0.01f, 100.0f, true};
const sl_f32_range SL_RANGE_CLAMP = {0.0f, 1e6f, false};

bool sl_in_range(const sl_f32_range *r, double v)
{
    return (r->zero_off && v == 0.0) || (v >= (double)r->lo && v <= (double)r->hi);
}

int sl_check_range(const sl_f32_range *r, const char *key, double v, sl_err *err)
{
    if (sl_in_range(r, v)) return SL_OK;
    return sl_err_set(err, SL_EFORMAT, "metadata '%s' = %g is out of range [%g, %g]%s", key, v,
                      (double)r->lo, (double)r->hi, r->zero_off ? " (or 0: off)" : "");
}

/* Checks t's values when it is a placed f32 tensor (not a view). */
static int check_tensor(const sl_tensor *t, sl_err *err)
{
    if (!t->info || !t->data || t->type != SL_TYPE_F32 || t->view_of) return SL_OK;
    const float *x = t->data;
    const int64_t n = (int64_t)(t->nbytes / sizeof(float));
    const int64_t bad = sl_first_beyond(x, n, SL_SMALL_TENSOR_MAX);
    if (bad < 0) return SL_OK;
    return sl_err_set(err, SL_EFORMAT, "tensor '%s' holds %g at entry %lld, outside "
                      "(-%g, %g): the file is damaged", t->name, (double)x[bad], (long long)bad,
                      (double)SL_SMALL_TENSOR_MAX, (double)SL_SMALL_TENSOR_MAX);
}

int sl_check_small_tensors(const sl_model *m, sl_err *err)
{
    int rc;
    if ((rc = check_tensor(&m->output_norm, err))) return rc;
    if ((rc = check_tensor(&m->hc_head_base, err))) return rc;
    if ((rc = check_tensor(&m->hc_head_scale, err))) return rc;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (int r = 0; r < SL_LT_COUNT; r++) {
            const sl_lt_role *role = sl_layer_role((sl_ltensor)r);
            if (role->reads != SL_READS_NOTHING || role->routed) continue;
            if ((rc = check_tensor(&m->layers[il].t[r], err))) return rc;
        }
    return SL_OK;
}
