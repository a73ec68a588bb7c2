/* vs_ref.c - see vs_ref.h. */
#include "common/vs_ref.h"

#include <math.h>
#include <stdlib.h>

double t_vs_reference(const t_logits_run *r, t_ref_pass ref, float near_tie, int *compared)
{
    float *want = NULL, *margin = malloc(sizeof(float) * (size_t)r->n_tok);
    int V = 0;
    const int rc = margin ? ref(r->path, r->ids, r->n_tok, &want, &V, margin) : -1;
    float *got = t_batched_logits(r);
    double worst = -1;
    if (!rc && got && want) {
        int n = 0;
        while (n < r->n_tok && margin[n] >= near_tie) n++;
        double diff = 0, scale = 0;
        for (size_t i = 0; i < (size_t)V * n; i++) {
            diff = fmax(diff, fabs((double)got[i] - want[i]));
            scale = fmax(scale, fabs((double)want[i]));
        }
        *compared = n;
        worst = scale > 0 ? diff / scale : diff;
    }
    free(margin);
    free(want);
    free(got);
    return worst;
}
