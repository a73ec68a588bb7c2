/* draft.h - drafters for speculative decoding: given the tokens so far (the
 * prompt and the reply), propose the next few. A proposal is only a guess:
 * the generator (generate.c) evaluates it with the target model and keeps
 * the drafted tokens that the model's own choice confirms, so a drafter
 * changes how fast a reply comes, never what it says. */
#ifndef SL_ENGINE_DRAFT_H
#define SL_ENGINE_DRAFT_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

typedef enum sl_draft_kind {
    SL_DRAFT_NONE = 0,
    SL_DRAFT_NGRAM,      /* prompt lookup (llama.cpp's --spec-type ngram-simple) */
    SL_DRAFT_SRC,        /* a drafter with state of its own (sl_draft_src below) */
} sl_draft_kind;

/* A drafter that keeps state across replies (sluice.h's sl_draft_src):
 * the MTP block (draft_mtp.c) and the draft model (draft_model.c). propose
 * is sl_draft_propose's contract for it, with the target session holding
 * hist[0 .. n - 1) evaluated and hist[n - 1] the token taken after them. */
struct sl_draft_src {
    const char *name;
    int (*propose)(sl_draft_src *d, const int32_t *hist, int n, int32_t *out, int max);
    void (*destroy)(sl_draft_src *d);
    /* Optional (NULL: the drafter always keeps up). sl_draft_follow's
     * contract for it. */
    void (*follow)(sl_draft_src *d, bool on, const int32_t *hist, int n);
};

/* How far back a drafter that stopped following catches up when it
 * follows again (SL_DRAFT_CATCHUP) and for a proposal while it does not
 * (SL_DRAFT_PROBE_BACK: a probe should cost about a step): the positions
 * before stay as they were (its guesses may then be worse, never wrong). */
#define SL_DRAFT_CATCHUP 32
#define SL_DRAFT_PROBE_BACK 8

/* One drafter behind a function: writes up to max proposed tokens after
 * hist[0..n) to out and returns how many (0: no guess). Reads hist only;
 * allocates nothing. */
typedef struct sl_drafter {
    sl_draft_kind kind;
    int ngram_max;       /* NGRAM: the longest suffix looked up (>= 1) */
    int ngram_min;       /* NGRAM: the shortest (1 <= ngram_min <= ngram_max) */
    sl_draft_src *src;   /* SRC: the drafter (borrowed) */
} sl_drafter;

/* The MTP drafter's logits (n_vocab) of its last guess, for tests that
 * check its forward pass against an independent one (draft_mtp.c). */
const float *sl_draft_mtp_logits(const sl_draft_src *d);

int sl_draft_propose(const sl_drafter *d, const int32_t *hist, int n, int32_t *out, int max);

/* on false: the drafter need not keep up with the target's batches while
 * nothing is drafted (the MTP block then computes no cache rows); a
 * proposal still works, catching up at most SL_DRAFT_PROBE_BACK positions
 * back. on true: catch up now (SL_DRAFT_CATCHUP back) and keep up again; the target
 * session holds hist[0 .. n - 1) evaluated, hist[n - 1] taken after them;
 * hist NULL: keep up from the next batch on, catching up nothing now.
 * Drafters with nothing to keep up with ignore it. Cannot fail: a
 * catch-up that fails leaves the guesses worse. */
void sl_draft_follow(const sl_drafter *d, bool on, const int32_t *hist, int n);

/* Prompt lookup: for g from ngram_max down to ngram_min, the last g tokens
 * of hist are searched for earlier in hist, the latest occurrence first;
 * the max tokens that followed the first match found are the proposal,
 * continued past the end of hist as the match continued (a text repeating
 * with period p goes on repeating). 0 when no suffix recurs, else max. */
int sl_draft_ngram(const int32_t *hist, int n, int ngram_min, int ngram_max, int32_t *out,
                   int max);

#endif
