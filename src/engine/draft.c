/* draft.c - see draft.h. */
#include "engine/draft.h"

#include <string.h>

int sl_draft_ngram(const int32_t *hist, int n, int ngram_min, int ngram_max, int32_t *out,
                   int max)
{
    if (!hist || max <= 0 || ngram_min < 1) return 0;
    for (int g = ngram_max; g >= ngram_min; g--) {
        if (g >= n) continue; /* the suffix needs an earlier place to recur */
        const int32_t *suf = hist + n - g;
        /* the match at i is followed by hist[i+g], which must exist before the suffix ends */
        for (int i = n - g - 1; i >= 0; i--) {
            if (hist[i] != suf[0] || memcmp(hist + i, suf, (size_t)g * sizeof *hist) != 0)
                continue;
            /* what followed, copied on past the history's end from the
             * proposal itself: a text repeating with period p goes on
             * repeating (the latest match is only p tokens back) */
            for (int j = 0; j < max; j++) {
                const int src = i + g + j;
                out[j] = src < n ? hist[src] : out[src - n];
            }
            return max;
        }
    }
    return 0;
}

void sl_draft_src_free(sl_draft_src *d)
{
    if (d) d->destroy(d);
}

int sl_draft_propose(const sl_drafter *d, const int32_t *hist, int n, int32_t *out, int max)
{
    switch (d->kind) {
    case SL_DRAFT_NGRAM:
        return sl_draft_ngram(hist, n, d->ngram_min, d->ngram_max, out, max);
    case SL_DRAFT_SRC:
        return d->src->propose(d->src, hist, n, out, max);
    case SL_DRAFT_NONE:
        break;
    }
    return 0;
}

void sl_draft_follow(const sl_drafter *d, bool on, const int32_t *hist, int n)
{
    if (d->kind == SL_DRAFT_SRC && d->src->follow) d->src->follow(d->src, on, hist, n);
}
