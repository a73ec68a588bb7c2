/* ref_mla.h - the test oracle for deepseek2 (MLA) and glm4moe: a plain
 * reference forward pass written from ../shared/ARCHS.md sections 0, 3 and
 * 4 alone.
 *
 * It dequantises every weight to f32 up front and runs textbook loops in
 * double on one thread, one token at a time, with an f32 cache. MLA is
 * computed in its expanded form (each head's keys and values decompressed
 * from the cached latent by attn_k_b / attn_v_b), not the absorbed one the
 * engine uses: the two are equal in exact arithmetic, so agreement checks
 * the absorption too. Products with a quantised weight see their input
 * rounded through that weight's activation type; f32 weights see none.
 * (A quantised attn_v_b rounds the attention's latent output, which exists
 * only after the softmax: with one, the values take the absorbed order.)
 * Nothing is shared with the engine but the GGUF reader and the
 * dequantisers. */
#ifndef SL_TESTS_REF_MLA_H
#define SL_TESTS_REF_MLA_H

#include <stdint.h>

typedef struct ref_ds ref_ds;

/* Loads a deepseek2 or glm4moe GGUF (the main layers; MTP blocks are not
 * read). On failure returns NULL with a sentence in errbuf. */
ref_ds *ref_ds_load(const char *path, char *errbuf, int errcap);
void ref_ds_free(ref_ds *m);
int ref_ds_n_vocab(const ref_ds *m);

/* Runs tokens[0..n) from position 0 and writes every position's logits
 * (n * n_vocab floats). margin (optional) receives per position the
 * smallest gap between the last chosen and the first rejected expert's
 * selection score over the routed layers (a near-tie any rounding may
 * flip). Returns 0, or -1 on a bad token id or out of memory. */
int ref_ds_forward(ref_ds *m, const int32_t *tokens, int n, float *logits, float *margin);

#endif
