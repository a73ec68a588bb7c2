/* family_glm_dsa.c - GLM-5.x (glm-dsa) as ../shared/ARCHS.md section 5
 * gives llama.cpp's rules: deepseek2's MLA layers and routed FFN (sigmoid
 * scores when expert_gating_func is absent), plus DeepSeek's sparse
 * attention: a lightning indexer scores every visible key for each query
 * and the main attention reads only the top-k of them. "Full" layers
 * compute their own selection; "shared" layers (attention.indexer.types
 * false) reuse the last full layer's. The indexer keys of full layers are
 * cached, one vector per position, beside the latent (the layer's second
 * row stream). */
#include "model/model_internal.h"

#include <stdio.h>

/* GLM-5.2's indexer table, llama.cpp's default when the file has no
 * attention.indexer.types and context_length >= 2^20: layers 0-2 full,
 * then every fourth from layer 6. */
static bool glm52_full(int il) { return il < 3 || (il >= 6 && (il - 6) % 4 == 0); }

/* Whether layer il computes its own selection: the file's bool array, or
 * the default (all full before GLM-5.2's million-token context). */
static int indexer_full(const sl_binder *b, int il, bool *full)
{
    const sl_hparams *hp = &b->m->hp;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.indexer.types", b->m->arch->name);
    const sl_gguf_array *arr = sl_gguf_get_arr(b->m->gguf, key);
    if (!arr) {
        *full = hp->n_ctx_train < 1048576 ? true : glm52_full(il);
        return SL_OK;
    }
    int64_t v;
    if (arr->n < (uint64_t)hp->n_layer || !sl_gguf_arr_i64(arr, (uint64_t)il, &v) || v < 0 ||
        v > 1)
        return sl_err_set(b->err, SL_EFORMAT, "%s must be %d booleans (one per layer)", key,
                          hp->n_layer);
    *full = v != 0;
    return SL_OK;
}

static bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

int sl_family_glm_dsa_layer(sl_binder *b, int il)
{
    const sl_hparams *hp = &b->m->hp;
    const char *a = b->m->arch->name;
    const int ih = hp->idx_n_head, di = hp->idx_dim, kt = hp->idx_top_k;
    if (hp->q_lora == 0)
        return sl_err_set(b->err, SL_EFORMAT, "%s.attention.q_lora_rank is missing", a);
    if (ih == 0 || di == 0 || kt == 0)
        return sl_err_set(b->err, SL_EFORMAT, "%s: attention.indexer.head_count, key_length "
                          "and top_k are required", a);
    if (!is_pow2(di) || di < hp->rope_dim || kt > 65536 || ih > 1024)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "%s: indexer key_length %d must be a power "
                          "of two of at least rope.dimension_count %d, head_count %d at most "
                          "1024 and top_k %d at most 65536", a, di, hp->rope_dim, ih, kt);
    int rc;
    if ((rc = sl_bind_mla_layer(b, il, SL_SCORE_SIGMOID))) return rc;
    bool full = true;
    /* an MTP block (model_load.c, nextn_block) attends by dense MLA, no
     * indexer (ARCHS.md section 5) */
    if (b->blk0) return SL_OK;
    if ((rc = indexer_full(b, il, &full))) return rc;
    if (il == 0 && !full)
        return sl_err_set(b->err, SL_EFORMAT, "%s: layer 0 is a shared indexer layer, but no "
                          "full layer comes before it to share", a);
    const uint64_t E = (uint64_t)hp->n_embd, D = (uint64_t)di, IH = (uint64_t)ih;
    /* llama.cpp loads them as optional; a full layer needs them */
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_K_NORM, full, 1, D, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_K_NORM_B, full, 1, D, 0, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_PROJ, full, 2, E, IH, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_K, full, 2, E, D, 0))) return rc;
    if ((rc = sl_bind_role(b, il, SL_LT_IDX_Q_B, full, 2, (uint64_t)hp->q_lora, IH * D, 0)))
        return rc;

    sl_layer_desc *d = &b->m->layers[il].d;
    d->mla.idx_top_k = kt;
    d->mla.idx_n_head = ih;
    d->mla.idx_dim = di;
    d->mla.idx_full = full;
    /* the indexer's scratch lives in the attention twin's buffers: its
     * queries in the attention output rows (n_head x head_dim_v per
     * token), the selection, keys and head weights in the value rows */
    const int H = d->attn.n_head;
    int need = (ih * di + H - 1) / H;
    const int sel = 1 + 2 * kt + di + ih;
    if (sel > need) need = sel;
    if (need > d->attn.head_dim_v) d->attn.head_dim_v = need;
    return SL_OK;
}
