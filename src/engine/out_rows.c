/* out_rows.c - the rows of a batch whose logits are asked (out_rows.h). */
#include "engine/out_rows.h"

#include <string.h>

#include "engine/model_runtime.h"
#include "model/arch.h"
#include "ops/ops.h"

/* The form of the output row at position pos when llama.cpp's output rows
 * start at position out0: the output rows of pos's prompt micro-batch
 * (SL_LLAMA_UBATCH rows, as sl_session_row_kind cuts the prompt) are one
 * product batch (sl_session_mm_form). */
static int prompt_out_form(const sl_session *s, int pos, int out0)
{
    const int from = pos / SL_LLAMA_UBATCH * SL_LLAMA_UBATCH;
    const int end = from + SL_LLAMA_UBATCH < s->prompt_n ? from + SL_LLAMA_UBATCH : s->prompt_n;
    const int lo = out0 > from ? out0 : from;
    return sl_session_mm_form(s, end - lo, pos - lo);
}

void sl_out_rows_plan(sl_session *s, int n, sl_out_rows *o)
{
    const int keep = n < s->n_logit_rows ? n : s->n_logit_rows;
    const int p = s->prompt_n - 1 - s->n_past; /* the prompt's last row, if in the batch */
    /* out0: the position from which llama.cpp asks logits of the prompt */
    int first = n - keep, out0 = s->prompt_n - 1;
    bool suffix = true; /* llama.cpp's output rows are exactly rows [first, n) */
    if (s->all_logits) {
        const int f = s->out_from - s->n_past;
        first = f < 0 ? 0 : f > n ? n : f;
        out0 = s->out_from;
    } else if (p >= 0 && p < n) {
        if (p == n - 1) first = p;
        else suffix = false; /* rows past the prompt's end in one batch: keep them all */
    }
    o->first = first;
    o->form = NULL;
    if (s->mm_form && s->mm_form_n == n && s->prompt_n >= 0) {
        const uint8_t keep_bits = (uint8_t)~(SL_MM_FORM_ONE | SL_MM_FORM_TAIL);
        for (int r = first; r < n; r++) {
            const int pos = s->n_past + r;
            uint8_t f = s->mm_form[r];
            if (pos < s->prompt_n && pos >= out0)
                f = (uint8_t)((f & keep_bits) | prompt_out_form(s, pos, out0));
            s->form_buf[r - first] = f;
        }
        o->form = s->form_buf;
    }
    const sl_model *m = s->m;
    o->drop_in_layer = suffix && first > 0 && !m->arch->out_rows_at_head && !s->on_hidden &&
                       !m->rt->routing.trace && !m->rt->routing.knobs;
}

void sl_out_rows_move(sl_session *s, int to, int from, int rows)
{
    const size_t E = (size_t)s->m->hp.n_embd, bytes = (size_t)rows * E * sizeof(float);
    if (to == from || rows <= 0) return;
    memmove(s->x + (size_t)to * E, s->x + (size_t)from * E, bytes);
    memmove(s->tmp + (size_t)to * E, s->tmp + (size_t)from * E, bytes);
}
