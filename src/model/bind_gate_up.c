/* bind_gate_up.c - the routed experts' gate and up projections of any
 * family: split (ffn_gate_exps, ffn_up_exps) or fused (ffn_gate_up_exps
 * {E, 2F, X}: rows [0, F) of each expert gate, [F, 2F) up), the fused form
 * seen as two views so the compute and the streamer see gate and up. */
#include <string.h>

#include "model/model_internal.h"

bool sl_has_gate_exps(const sl_model *m, int il)
{
    char nm[160];
    return sl_gguf_find_tensor(m->gguf, sl_tensor_name(nm, sizeof nm, il, SL_T_FFN_GATE_EXPS)) ||
           sl_gguf_find_tensor(m->gguf, sl_tensor_name(nm, sizeof nm, il,
                                                        "ffn_gate_up_exps.weight"));
}

int sl_bind_gate_up_exps(sl_binder *b, int il, uint64_t E, uint64_t F, uint64_t X,
                         bool *fused)
{
    sl_layer *L = &b->m->layers[il];
    int rc;
    *fused = false;
    if ((rc = sl_bind_role(b, il, SL_LT_GATE_UP_EXPS, false, 3, E, 2 * F, X))) return rc;
    if (!L->gate_up_exps.info) {
        if ((rc = sl_bind_role(b, il, SL_LT_GATE_EXPS, true, 3, E, F, X))) return rc;
        return sl_bind_role(b, il, SL_LT_UP_EXPS, true, 3, E, F, X);
    }
    const sl_tensor *fu = &L->gate_up_exps;
    for (int k = 0; k < 2; k++) {
        sl_tensor *t = k == 0 ? &L->gate_exps : &L->up_exps;
        *t = *fu;
        t->ne[1] = F;
        t->nbytes = fu->nbytes / 2;
        t->view_of = SL_LT_GATE_UP_EXPS + 1;
        t->view_offset = (uint64_t)k * F * fu->row_bytes;
        t->expert_bytes = 2 * F * fu->row_bytes;
    }
    *fused = true;
    return SL_OK;
}
