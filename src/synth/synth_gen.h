/* synth_gen.h - the vector twin of the fast normal fill (internal to synth/).
 *
 * Owns: nothing but the declaration of the AVX2 routine that advances four
 * xoshiro256** streams side by side; synth_rng.c decides when to call it. */
#ifndef SL_SYNTH_SYNTH_GEN_H
#define SL_SYNTH_SYNTH_GEN_H

#include <stddef.h>

#include "util/rng.h"

/* Advances the four streams r[0..3] by m draws each, m = n rounded down to a
 * multiple of 8, writing row k's values to dst[k][0..m) exactly as
 * sl_rng_fill_normal_scaled(&r[k], dst[k], m, mean, scale) would; the states
 * are left where that call would leave them, so the caller finishes the
 * n - m tail with the scalar loop. Returns m, or 0 (touching nothing) when
 * the file was built for a target without AVX2; the caller must only call
 * it on a CPU that has AVX2. */
size_t sl_rng_fill4_normal_avx2(sl_rng r[4], float *const dst[4], size_t n, float mean,
                                float scale);

/* The same for aarch64 NEON (synth_gen_neon.c), bit for bit; 0 (touching
 * nothing) when built for another target. */
size_t sl_rng_fill4_normal_neon(sl_rng r[4], float *const dst[4], size_t n, float mean,
                                float scale);

#endif
