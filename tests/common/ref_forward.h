/* ref_forward.h - the test oracle: a plain reference forward pass.
 *
 * Dequantises every weight to f32 up front and runs textbook loops on one
 * thread with an f32 KV cache. It shares nothing with the engine but the
 * GGUF reader and the (separately tested) dequantisers, and decides every
 * architecture rule on its own, so a bug in the engine cannot hide in it. */
#ifndef SL_TESTS_REF_FORWARD_H
#define SL_TESTS_REF_FORWARD_H

#include <stdint.h>

typedef struct ref_model ref_model;

/* Loads path; on failure returns NULL and writes a message into errbuf. */
ref_model *ref_model_load(const char *path, char *errbuf, int errcap);
void ref_model_free(ref_model *m);
int ref_model_n_vocab(const ref_model *m);

/* Runs tokens[0..n) from position 0 and writes the logits of every
 * position into logits (n * n_vocab floats). If margin is non-NULL, it
 * receives per position the smallest router logit gap between the last
 * chosen and the first rejected expert over all MoE layers (+inf for dense
 * models): where it is tiny, the routing is a near-tie that any rounding
 * may flip. Returns 0, or -1 on bad ids. */
int ref_forward(ref_model *m, const int32_t *tokens, int n, float *logits, float *margin);

#endif
