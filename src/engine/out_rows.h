/* out_rows.h - the rows of a batch whose logits are asked, and where
 * llama.cpp stops computing the others.
 *
 * llama.cpp computes logits only for the rows a batch asks them of (a
 * generation's prompt: its last row; llama-perplexity: each chunk's second
 * half), and drops the other rows with ggml_get_rows(inp_out_ids) either
 * past its last layer's mixer (most families: the last layer's FFN runs on
 * the asked rows only) or just before the output norm (qwen35moe, gpt-oss,
 * gemma4 and deepseek4 in the builds read: sl_arch.out_rows_at_head).
 * The rows that go on form a smaller micro-batch, so their products may
 * take other kernels (ops.h SL_MM_FORM_*) and an expert may see fewer
 * tokens (the IQ panel's 8-token threshold): the bits depend on it, and
 * sluice drops the same rows at the same place. */
#ifndef SL_ENGINE_OUT_ROWS_H
#define SL_ENGINE_OUT_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/session.h"

typedef struct {
    int first;           /* logits are kept for the batch's rows [first, n) */
    bool drop_in_layer;  /* the rows before first end past the last layer's
                            mixer (else they go through every layer) */
    const uint8_t *form; /* the product forms of rows first .. n - 1 as
                            llama.cpp's output rows (n - first bytes, in
                            s->form_buf), or NULL: the batch's own */
} sl_out_rows;

/* Which of the batch's n rows (from position s->n_past) keep logits, and
 * how they go on, from s's state: all_logits sessions keep rows from
 * position s->out_from; others keep the last n_logit_rows rows, or the
 * prompt's last row alone when the batch ends with it. Rows are dropped
 * inside the last layer only where llama.cpp does so for s's model and
 * nothing else reads every row's final state (a drafter's on_hidden, a
 * replayed route trace, the lossy routing knobs). Writes s->form_buf. */
void sl_out_rows_plan(sl_session *s, int n, sl_out_rows *o);

/* Moves `rows` rows from row `from` of the residual stream s->x and of
 * the mixer's output s->tmp to row `to` (to <= from), before the last
 * layer's part after the mixer runs on the rows that go on alone. */
void sl_out_rows_move(sl_session *s, int to, int from, int rows);

#endif
