/* mla_indexer.h - glm-dsa's lightning indexer and the sparse attention it
 * drives (ARCHS.md section 5), for the MLA mixer (mix_mla.c).
 *
 * Scratch, all in the session's attention buffers sized by the layer's
 * attention twin (family_glm_dsa.c): the indexer queries in attn_out; in
 * v, per batch of n tokens, the selections (sl_mla_sel), then the indexer
 * keys (n x di) and head weights (n x ih) of the batch. The selections
 * stay there for the shared layers after a full one. */
#ifndef SL_ENGINE_MLA_INDEXER_H
#define SL_ENGINE_MLA_INDEXER_H

#include "engine/mixer.h"
#include "ops/attn_kernels.h"

/* Token t's selection among the batch's n: [count | positions (top_k,
 * ascending) | their scores (top_k)]. */
int *sl_mla_sel(const sl_session *s, const sl_mla_desc *a, int t);

/* The batch's indexer key rows (n x di) and head weights (n x ih), where
 * the layer's input products put them. */
float *sl_mla_idx_keys(const sl_session *s, const sl_mla_desc *a, int n);
float *sl_mla_idx_weights(const sl_session *s, const sl_mla_desc *a, int n);

/* One step of the top-k selection: position p of the given score offered
 * to the kept set pos / sc (k entries of room, *cnt kept), as ggml_top_k
 * keeps it (equal scores included); positions are offered in increasing
 * order. sl_mla_sel_finish sorts the kept positions ascending. */
void sl_mla_sel_push(int *pos, float *sc, int *cnt, int k, int p, float score);
void sl_mla_sel_finish(int *pos, int cnt);

/* The lightning indexer's score of one key row k (di floats) for a token's
 * queries q (ih x di) and head weights w (ih): sum over heads, in head
 * order, of relu(q_h . k) * w_h, each added by one fma (llama.cpp's order;
 * glm-dsa's and deepseek4's indexers both). */
float sl_mla_idx_score(const float *q, const float *w, const float *k, int ih, int di);

/* A full layer's indexer for the batch's n tokens at s->n_past ...: from the
 * projected keys and weights (sl_mla_idx_keys / _weights, raw) and the
 * normalised q latents qr (n x q_lora), caches each position's key in the
 * layer's second row stream and fills every token's selection. Cannot
 * fail. */
void sl_mla_indexer_run(sl_session *s, const sl_layer *L, int il, int n, const float *qr);

/* softmax(q . K * scale) . V over the selected positions only, in the
 * arithmetic of the tiled attention kernel (attn_kernels.h: tiles of 64
 * aligned to position 0, the unselected keys of a tile weighing exactly
 * 0, tiles without a selected key skipped), so it equals that kernel
 * with llama.cpp's top-k mask. f16 or f32 cache. */
void sl_mla_attend_sparse(const sl_attn_block *b, bool f16, const int *pos, int n_sel);

#endif
