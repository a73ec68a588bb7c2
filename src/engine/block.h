/* block.h - a layer's blocks that architectures' block files share with
 * the forward pass (forward.c). */
#ifndef SL_ENGINE_BLOCK_H
#define SL_ENGINE_BLOCK_H

#include "engine/session.h"

/* The run-time guard on a step's output (forward.c). sl_check_hidden
 * fails (SL_EFORMAT, one line naming the position and the layer) when a
 * value of the n rows of width w at x, the first at position pos0, is NaN,
 * infinite or beyond SL_HIDDEN_MAX (ops.h); sl_check_logits when a logit
 * is NaN or infinite. Either means a damaged file: finite, sane weights
 * never produce one. Costs one pass over the values. */
int sl_check_hidden(const float *x, int n, int64_t w, int pos0, int layer, sl_err *err);
int sl_check_logits(const float *x, int n, int64_t w, int pos0, sl_err *err);

/* The routed experts of layer L for the batch's n tokens: routes them
 * (engine/router.c), runs each chosen expert on s->xb (resident or
 * streamed) and writes each token's weighted sum (top-k rank order) plus
 * any shared expert into s->ffn_out (n, n_embd). Fails only when a
 * streamed expert cannot be read. (forward.c) */
int sl_moe_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);

/* One gemma4 layer (SL_NORM_SANDWICH) on the batch's residual stream s->x:
 * attention between attn_norm and post_attention_norm, the dense GeGLU MLP
 * and (on routed layers) the experts with their own pre/post norms, their
 * sum post-normed and added, then the layer scalar. Fails only when a
 * streamed expert cannot be read. (block_gemma4.c) */
int sl_block_sandwich(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);

/* The part of sl_block_sandwich after the attention: s->tmp (n, n_embd)
 * holds the mixer's output of the n rows; post_attention_norm of it is
 * added to s->x, then the MLP, experts and layer scalar as above. The
 * multi-session step (forward_multi.c) runs the members' mixers, then this
 * once over all their rows. (block_gemma4.c) */
int sl_block_sandwich_after_mixer(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);

/* The FFN block of layer L (pre-norm layers) on the n rows of the residual
 * stream s->x: ffn_norm, dense SwiGLU or the routed experts, added to
 * s->x. Fails only when a streamed expert cannot be read. (forward.c) */
int sl_ffn_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);

#endif
