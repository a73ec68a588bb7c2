/* rand_blocks.h - reproducible random inputs for the dot-kernel tests:
 * a 64-bit LCG whose state each test keeps (its own seed), Gaussian
 * values, weight blocks with chosen kinds of scales, and quantised
 * activations. The same state and calls give the same bytes on every
 * machine. */
#ifndef SL_TESTS_RAND_BLOCKS_H
#define SL_TESTS_RAND_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "quant/quant.h"

/* The next 32 random bits of the LCG at *state (Knuth's MMIX constants,
 * the high half of the new state). */
uint32_t t_rng_u32(uint64_t *state);

/* A standard normal value (Box-Muller over two t_rng_u32 draws). */
float t_rng_gauss(uint64_t *state);

/* What t_fill_rp32 writes. */
typedef enum {
    T_FILL_RANDOM,     /* random bytes, scales finite: f16 in [2^-8, 2^4) of either sign,
                          MXFP4's exponent byte 118..133 */
    T_FILL_GAUSS,      /* a standard normal row quantised by the type's quantiser */
    T_FILL_ZERO,       /* zero bytes */
    T_FILL_HUGE_SCALE, /* random levels, the largest scales (f16 65504; exponent 200..219) */
    T_FILL_TINY_SCALE, /* random levels, f16 subnormal scales (exponent byte 0..2) */
} t_fill;

/* Writes nb blocks of type t (Q4_0, IQ4_NL or MXFP4: a 2-byte f16 or 1-byte
 * E8M0 scale, then 16 bytes of nibbles) to b, as mode says. */
void t_fill_rp32(uint64_t *state, sl_type t, uint8_t *b, int nb, t_fill mode);

/* n activations scale * t_rng_gauss (zeros: all 0) quantised to y by the
 * scalar quantiser of type at (Q8_0, Q8_K: n a multiple of its block). */
void t_make_act(uint64_t *state, sl_type at, void *y, int n, float scale, bool zeros);

#endif
