/* block.h - how a layer's mixer and FFN sit on the residual stream, as one
 * interface per kind.
 *
 * A layer's description names its kind (sl_layer_desc.norm): pre-norm
 * (x += mixer(norm(x)); x += ffn(norm(x))), gemma4's sandwich norms
 * (block_gemma4.c) or deepseek4's hyper-connection streams (block_ds4.c).
 * The forward pass calls one kind's operations per layer and names no
 * family; a new way of wiring a layer is a new row of the table in
 * block.c. The FFN halves call the routed experts (moe.c) or the dense
 * products (ffn.c). */
#ifndef SL_ENGINE_BLOCK_H
#define SL_ENGINE_BLOCK_H

#include "engine/out_rows.h"
#include "engine/session.h"

typedef struct sl_block_ops {
    const char *name;
    /* The whole layer on the batch's n rows of the residual stream.
     * NULL: attn_norm of s->x into s->xb, the mixer into s->tmp, then
     * after_mixer. Fails only when a streamed expert cannot be read. */
    int (*forward)(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);
    /* The part after the mixer, s->tmp holding the mixer's output of the n
     * rows: the multi-session step (forward_multi.c) runs its members'
     * mixers, then this once over all their rows. NULL: the kind runs
     * whole only and cannot join such a step. */
    int (*after_mixer)(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);
    /* When the residual stream is not the embedding rows themselves:
     * spread the batch's embedding rows (s->x, n rows) into it, and
     * collapse rows [first, first + cnt) back to one vector each, into
     * s->x rows 0 .. cnt - 1, before the output norm. NULL: nothing. */
    void (*embed)(sl_session *s, int n);
    void (*head)(sl_session *s, int first, int cnt);
    /* Floats of the session's kind_scratch the kind needs for micro-batches
     * of up to B tokens of model m (as sl_mixer_ops.scratch_floats); False
     * when the size overflows. NULL: none. */
    bool (*scratch_floats)(const sl_model *m, uint64_t B, uint64_t *floats);
} sl_block_ops;

/* The operations of a layer kind. */
const sl_block_ops *sl_block_of(sl_norm_place kind);

/* The kind whose residual stream the model's layers share (its first
 * layer's: a model does not mix stream shapes). */
const sl_block_ops *sl_block_stream(const sl_model *m);

/* Layer il on the batch's n rows, as its kind runs it. out (NULL: every
 * row goes on): past the mixer only rows [out->first, n) go on, moved to
 * rows 0 .. n - out->first - 1 of s->x, with out->form's product forms
 * (the last layer when llama.cpp drops the rows whose logits are not
 * asked there: out_rows.h). Fails only when a streamed expert cannot be
 * read. */
int sl_block_forward(sl_session *s, const sl_layer *L, int il, int n, const sl_out_rows *out,
                     sl_err *err);

/* The routed experts of layer L for the batch's n tokens: routes them
 * (engine/router.c), runs each chosen expert on s->xb (resident or
 * streamed) and writes each token's weighted sum (top-k rank order) plus
 * any shared expert into s->ffn_out (n, n_embd). Fails only when a
 * streamed expert cannot be read. (moe.c) */
int sl_moe_block(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);

/* gemma4's sandwich layer after its mixer: post_attention_norm of s->tmp
 * added to s->x, the dense GeGLU MLP and (on routed layers) the experts
 * with their own pre/post norms, their sum post-normed and added, then the
 * layer scalar. (block_gemma4.c) */
int sl_block_sandwich_after_mixer(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);

#endif
