/* synth_rng.h - the deterministic random numbers behind generated models.
 *
 * Owns: the key derivation that gives every (seed, tensor, row) its own
 * independent stream of the project's PRNG (util/rng.h), and the normal draws. Knows nothing about files, tensors or models: callers
 * pass plain 64-bit salts.
 *
 * Why one stream per row: a row's values then depend only on (seed, tensor
 * name, row index), never on how the work is cut into chunks or spread over
 * threads, so a model is byte-identical whatever the thread count. It also
 * means the same seed yields the same underlying weights at every tensor
 * type (an f32 and a q4_k file of one seed differ only by quantisation). */
#ifndef SL_SYNTH_SYNTH_RNG_H
#define SL_SYNTH_SYNTH_RNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/rng.h" /* sl_rng, sl_splitmix64, seed/next/uniform */

/* Derives the key of an independent stream from a seed and two salts
 * (e.g. a tensor-name hash and a row index). Pure function. */
uint64_t sl_rng_derive(uint64_t seed, uint64_t salt_a, uint64_t salt_b);

/* FNV-1a 64 of a NUL-terminated string: a stable salt for a name. */
uint64_t sl_rng_hash_str(const char *s);

/* Exact standard normal (Box-Muller). Each call consumes two uniforms and
 * returns one value (the sine half is dropped, so nothing is cached outside
 * the state). For test inputs, where speed does not matter. */
double sl_rng_normal(sl_rng *r);

/* Fills dst[0..n) with approximately standard normal values, scaled by std
 * and shifted by mean: the sum of four 16-bit uniforms taken from one 64-bit
 * draw (Irwin-Hall, n = 4), centred and scaled to unit variance. Mean 0 and
 * variance 1 exactly (up to the 16-bit grid), tails cut at +-sqrt(12) ~ 3.46
 * sigma, kurtosis 2.7 instead of 3. About 20x cheaper than Box-Muller, which
 * matters when a 30B-shaped model needs 10^10 draws. */
void sl_rng_fill_normal_fast(sl_rng *r, float *dst, size_t n, float mean, float std);

/* The float multiplier sl_rng_fill_normal_fast applies to the centred sum
 * for a given std (computed in double, rounded once). */
float sl_rng_normal_fast_scale(float std);

/* The loop of sl_rng_fill_normal_fast with the multiplier already known:
 * dst[i] = mean + (float)(sum_i - 131070) * scale, one draw of r per value. */
void sl_rng_fill_normal_scaled(sl_rng *r, float *dst, size_t n, float mean, float scale);

/* Fills nrows rows of n values (row k at dst + k * n), row k drawn from its
 * own stream seeded with keys[k]: row k is exactly what sl_rng_seed(keys[k])
 * followed by sl_rng_fill_normal_fast(n, mean, std) produces. With simd
 * true and a CPU that runs the project's AVX2 kernels (sl_quant_isa), four
 * streams advance at once in vector lanes; the values are bit-identical
 * either way (integer draws, then one float multiply and one add per value
 * in the same order), so a model never depends on the machine. */
void sl_rng_fill_normal_rows(const uint64_t *keys, size_t nrows, float *dst, size_t n,
                             float mean, float std, bool simd);

#endif
