/* synth_rng.c - stream derivation and normal draws over util/rng (see synth_rng.h).
 * The generators follow their published definitions (Blackman & Vigna);
 * the constants below are the ones those definitions specify. */
#include "synth/synth_rng.h"

#include <math.h>

uint64_t sl_rng_derive(uint64_t seed, uint64_t salt_a, uint64_t salt_b)
{
    /* Chain splitmix64 finalisations so each salt is mixed before the next
     * is added: (seed, a, b) and (seed, b, a) give unrelated keys. */
    uint64_t st = seed;
    uint64_t k = sl_splitmix64(&st);
    st = k ^ salt_a;
    k = sl_splitmix64(&st);
    st = k ^ salt_b;
    return sl_splitmix64(&st);
}

uint64_t sl_rng_hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

double sl_rng_normal(sl_rng *r)
{
    /* u1 in (0, 1] so log(u1) is finite. */
    double u1 = ((double)(sl_rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = sl_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void sl_rng_fill_normal_fast(sl_rng *r, float *dst, size_t n, float mean, float std)
{
    /* Each 16-bit lane is uniform on {0..65535}: mean 32767.5, variance
     * (65536^2 - 1) / 12. The sum of four has mean 131070 and variance
     * (65536^2 - 1) / 3, so z = (sum - 131070) / sqrt((65536^2 - 1) / 3). */
    const double inv_sd = 1.0 / sqrt((65536.0 * 65536.0 - 1.0) / 3.0);
    const float scale = (float)(inv_sd * std);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = sl_rng_next(r);
        int32_t sum = (int32_t)(x & 0xffff) + (int32_t)((x >> 16) & 0xffff) +
                      (int32_t)((x >> 32) & 0xffff) + (int32_t)(x >> 48);
        dst[i] = mean + (float)(sum - 131070) * scale;
    }
}
