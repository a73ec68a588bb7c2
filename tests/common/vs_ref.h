/* vs_ref.h - an engine run compared with an independent reference pass,
 * for the tests whose reference (ref_mla.c, ref_ds4.c ...) reports each
 * position's routing margin: the comparison stops at the first near-tie,
 * where float order alone may pick other experts. */
#ifndef SL_TESTS_VS_REF_H
#define SL_TESTS_VS_REF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/testutil.h"

/* A reference pass over the model at path: fills *logits (n x *n_vocab
 * floats, malloc'ed: the caller frees, also on failure) and margin[0..n)
 * (each position's routing margin) for tokens ids[0..n); 0, or -1 after
 * printing why. */
typedef int (*t_ref_pass)(const char *path, const int32_t *ids, int n, float **logits,
                          int *n_vocab, float *margin);

/* Runs the engine as r says (t_batched_logits) and the reference pass ref
 * over r->path and r->ids, and returns max |engine - reference| over the
 * positions before the first margin below near_tie, relative to the
 * reference's largest |logit| there (absolute when that is 0); *compared
 * receives how many positions that was. -1 when either run fails (or
 * memory runs out); *compared is then left alone. */
double t_vs_reference(const t_logits_run *r, t_ref_pass ref, float near_tie, int *compared);

/* Defines `static int FN(...)`, a t_ref_pass over the reference whose type
 * and functions are named R: R *R_load(path, errbuf, errcap),
 * R_n_vocab(R *), R_forward(R *, ids, n, logits, margin) and R_free(R *)
 * (ref_mla.h's ref_ds, ref_ds4.h's ref_ds4). */
#define T_REF_PASS(FN, R)                                                                     \
    static int FN(const char *path, const int32_t *ids, int n, float **logits, int *n_vocab,  \
                  float *margin)                                                              \
    {                                                                                         \
        char eb[256];                                                                         \
        R *ref = R##_load(path, eb, sizeof eb);                                               \
        if (!ref) {                                                                           \
            fprintf(stderr, "  %s\n", eb);                                                    \
            return -1;                                                                        \
        }                                                                                     \
        *n_vocab = R##_n_vocab(ref);                                                          \
        *logits = malloc(sizeof(float) * (size_t)*n_vocab * (size_t)n);                       \
        const int rc = *logits ? R##_forward(ref, ids, n, *logits, margin) : -1;              \
        R##_free(ref);                                                                        \
        return rc;                                                                            \
    }

#endif
