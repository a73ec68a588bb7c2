/* draft_figures.c - see draft_figures.h. */
#include "draft_figures.h"

#include <string.h>

void draft_figures_of(const sl_gen_draft_stats *d, draft_figures *f)
{
    memset(f, 0, sizeof *f);
    if (d->drafted) f->acceptance = (double)d->accepted / (double)d->drafted;
    if (d->verify_steps)
        f->tokens_per_verify =
            (double)(d->verify_steps + d->accepted) / (double)d->verify_steps;
    int last = SL_GEN_MAX_DRAFT;
    while (last > 0 && d->drafted_at[last - 1] == 0) last--;
    f->n_positions = last;
    for (int i = 0; i < last; i++)
        f->held_at[i] = d->drafted_at[i]
                            ? (double)d->accepted_at[i] / (double)d->drafted_at[i] : 0.0;
    if (d->plain_timed) f->plain_step_s = d->plain_s / (double)d->plain_timed;
    if (d->verify_timed) {
        f->verify_step_s = d->verify_s / (double)d->verify_timed;
        f->verify_tokens = (double)d->verify_tokens_timed / (double)d->verify_timed;
    }
    /* the gain: the timed steps' tokens a second against the plain steps' */
    const double secs = d->plain_s + d->verify_s;
    const double toks = (double)d->plain_timed + (double)d->verify_tokens_timed;
    if (f->plain_step_s > 0 && secs > 0) f->gain = toks / secs * f->plain_step_s;
}

void draft_stats_add(sl_gen_draft_stats *sum, const sl_gen_draft_stats *r)
{
    sum->drafted += r->drafted;
    sum->accepted += r->accepted;
    sum->verify_steps += r->verify_steps;
    sum->steps += r->steps;
    for (int i = 0; i < SL_GEN_MAX_DRAFT; i++) {
        sum->drafted_at[i] += r->drafted_at[i];
        sum->accepted_at[i] += r->accepted_at[i];
    }
    sum->switched_off += r->switched_off;
    sum->probes += r->probes;
    sum->plain_timed += r->plain_timed;
    sum->plain_s += r->plain_s;
    sum->verify_timed += r->verify_timed;
    sum->verify_tokens_timed += r->verify_tokens_timed;
    sum->verify_s += r->verify_s;
    if (r->off) sum->off = r->off;
}
