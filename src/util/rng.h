/* rng.h - the project's random numbers: xoshiro256** seeded by splitmix64,
 * shared by the sampler and the synthetic-model generator.
 *
 * Owns the generator state and the mapping from its bits to a double in
 * [0, 1). Knows nothing about logits or tokens. Written here (not rand(),
 * not <random>) so that one seed gives the same stream on every platform,
 * compiler and libc: the whole pipeline is integer arithmetic until the
 * final 53-bit-to-double conversion, which is exact. */
#ifndef SL_UTIL_RNG_H
#define SL_UTIL_RNG_H

#include <stdint.h>

typedef struct sl_rng {
    uint64_t s[4]; /* xoshiro256** state; never all zero after seeding */
} sl_rng;

/* One step of splitmix64: advances *state and returns the mixed output.
 * Exposed because seeding uses it and tests check it against the published
 * reference values. */
uint64_t sl_splitmix64(uint64_t *state);

/* Seeds r from a 64-bit seed: the four state words are four consecutive
 * splitmix64 outputs starting from `seed` (any seed is valid, 0 included). */
void sl_rng_seed(sl_rng *r, uint64_t seed);

/* Next 64 random bits (xoshiro256**). */
uint64_t sl_rng_next(sl_rng *r);

/* Uniform double in [0, 1): the top 53 bits of sl_rng_next times 2^-53,
 * which is exact, so the value is identical on every platform. */
double sl_rng_uniform(sl_rng *r);

#endif
