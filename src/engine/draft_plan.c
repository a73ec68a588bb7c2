/* draft_plan.c - the memory a drafter will keep, before anything is
 * loaded (sl_draft_plan_bytes, sluice.h): the MTP block or the draft model
 * is read without its weights (describe_only) for its weights' bytes, and
 * each session it will run is laid out as sl_session_create lays it out. */
#include "engine/session_layout.h"
#include "model/model.h"
#include "sluice.h"
#include "util/pool.h"
#include "util/status.h"

int sl_draft_plan_bytes(const char *model_path, const char *draft_path, int n_ctx, int n_batch,
                        int n_seqs, sl_kv_type type_k, sl_kv_type type_v, uint64_t *out,
                        sl_err *err)
{
    *out = 0;
    if (n_ctx < 1 || n_batch < 1 || n_seqs < 1)
        return sl_err_set(err, SL_EINVAL, "drafter memory: context, batch and sessions must "
                          "be at least 1");
    sl_model_params p = sl_model_default_params();
    p.describe_only = true;
    p.nextn_block = draft_path ? 0 : 1;
    sl_model *m = NULL;
    int rc = sl_model_load(&m, draft_path ? draft_path : model_path, &p, err);
    if (rc) {
        sl_err_prefix(err, draft_path ? "draft model" : "the MTP block");
        return rc;
    }
    /* the MTP drafter's session takes a row more than the target's batch
     * (draft_mtp.c), and keeps B hidden rows, 2 B input rows, their
     * prepared copies and one row of logits beside it */
    const int B = draft_path ? n_batch : n_batch + 1;
    const int threads = sl_cpu_core_count();
    const sl_session_dims dims = {.n_batch = B, .n_ctx = n_ctx,
                                  .n_threads = threads > 0 ? threads : 1, .n_logit_rows = 1,
                                  .type_k = type_k, .type_v = type_v};
    sl_session_layout lay;
    rc = sl_session_layout_make(&lay, m, &dims, err);
    if (!rc) {
        const uint64_t E = (uint64_t)m->hp.n_embd, V = (uint64_t)m->hp.n_vocab;
        uint64_t own = draft_path ? (uint64_t)n_ctx * sizeof(int32_t) /* its tokens */
                                  : (uint64_t)B * (7 * E + 1) * sizeof(float) + (2 * E + V) * 4;
        *out = m->dense_bytes + m->expert_bytes + (uint64_t)n_seqs * (lay.arena_bytes + own);
    }
    sl_model_free(m);
    return rc;
}
