/* draft_figures.h - what a reply's drafting did, as --stats prints it and
 * --stats-json writes it: the counts of sl_gen_draft_stats and the figures
 * derived from them, computed in one place so that both say the same. */
#ifndef SL_APP_DRAFT_FIGURES_H
#define SL_APP_DRAFT_FIGURES_H

#include "sluice.h"

typedef struct draft_figures {
    double acceptance;        /* accepted / drafted (0: nothing drafted) */
    double tokens_per_verify; /* tokens a verify step took (0: none) */
    int n_positions;          /* positions drafted at least once */
    double held_at[SL_GEN_MAX_DRAFT]; /* share held at position i + 1 */
    double plain_step_s;      /* mean timed plain step (0: none) */
    double verify_step_s;     /* mean timed verify step (0: none) */
    double verify_tokens;     /* tokens a timed verify step took (0: none) */
    double gain;              /* the timed steps' tokens a second over the plain
                                 steps' (0: not both measured) */
} draft_figures;

/* The figures of d. Pure arithmetic. */
void draft_figures_of(const sl_gen_draft_stats *d, draft_figures *f);

/* Adds reply r's counts and times to sum (a chat's turns): counts and
 * times add up, the reason drafting was off is kept. */
void draft_stats_add(sl_gen_draft_stats *sum, const sl_gen_draft_stats *r);

#endif
