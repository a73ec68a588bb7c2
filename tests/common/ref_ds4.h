/* ref_ds4.h - the test oracle for deepseek4 (DeepSeek-V4): a plain
 * reference forward pass written from ../shared/ARCHS.md section 9 (and
 * section 0's rope and YaRN) alone.
 *
 * Every weight is dequantised to f32 up front; textbook loops in double on
 * one thread, one token at a time, every position's keys and compressor
 * rows kept in f32 (no ring, no state slots: the history itself). The
 * Hadamard rotations are left out (orthonormal on both sides of every dot
 * product: no-ops in exact arithmetic), so agreement also checks that the
 * engine's are. Products with a quantised weight see their input rounded
 * through that weight's activation type. Nothing is shared with the engine
 * but the GGUF reader and the dequantisers. */
#ifndef SL_TESTS_REF_DS4_H
#define SL_TESTS_REF_DS4_H

#include <stdint.h>

typedef struct ref_ds4 ref_ds4;

/* Loads a deepseek4 GGUF. On failure returns NULL with a sentence in
 * errbuf. */
ref_ds4 *ref_ds4_load(const char *path, char *errbuf, int errcap);
void ref_ds4_free(ref_ds4 *m);
int ref_ds4_n_vocab(const ref_ds4 *m);

/* Runs tokens[0..n) from position 0 and writes every position's logits
 * (n * n_vocab floats). margin (optional) receives per position the
 * smallest gap, over every choice the position makes (routed experts,
 * the indexer's blocks), between the last one kept and the first one
 * left: a near-tie any rounding may flip. Returns 0, or -1 on a bad token
 * id or out of memory. */
int ref_ds4_forward(ref_ds4 *m, const int32_t *tokens, int n, float *logits, float *margin);

#endif
