/* ref_gemma4.h - the test oracle for gemma4 (Gemma 4, the MoE form): a plain
 * reference forward pass written from ../shared/ARCHS.md section 6 alone.
 *
 * Like ref_qwen35.h it dequantises every weight to f32 up front and runs
 * textbook loops on one thread, one token at a time, with an f32 KV cache
 * and attention in double. It shares nothing with the engine but the GGUF
 * reader and the dequantisers. Products with a quantised weight see their
 * input rounded through that weight's activation type; f32 weights see no
 * rounding. GELU is the tanh form on the input rounded to f16, its result
 * rounded to f16 (the rule ARCHS.md states for llama.cpp's CPU backend). */
#ifndef SL_TESTS_REF_GEMMA4_H
#define SL_TESTS_REF_GEMMA4_H

#include <stdint.h>

typedef struct ref_g4 ref_g4;

/* Loads a gemma4 GGUF from path. On failure returns NULL and writes a
 * sentence into errbuf (missing key or tensor, wrong shape, unreadable
 * type, per-layer embeddings or KV-shared layers, which it does not
 * implement). The caller frees the model with ref_g4_free. */
ref_g4 *ref_g4_load(const char *path, char *errbuf, int errcap);
void ref_g4_free(ref_g4 *m);
int ref_g4_n_vocab(const ref_g4 *m);
/* 1 if layer l is a sliding-window layer, 0 if full attention. */
int ref_g4_layer_slides(const ref_g4 *m, int l);
/* The sliding window (attention.sliding_window). */
int ref_g4_window(const ref_g4 *m);

/* Runs tokens[0..n) from position 0, token by token, and writes the logits
 * of every position into logits (n * n_vocab floats). margin, if non-NULL,
 * receives per position the smallest router-probability gap between the
 * last chosen and the best rejected expert over all routed layers (a
 * near-tie any rounding may flip; +inf without experts). Returns 0, or -1
 * on a token id out of range or out of memory. */
int ref_g4_forward(ref_g4 *m, const int32_t *tokens, int n, float *logits, float *margin);

#endif
