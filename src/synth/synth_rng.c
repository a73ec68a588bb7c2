/* synth_rng.c - xoshiro256** / splitmix64 and normal draws (see synth_rng.h).
 * The generators follow their published definitions (Blackman & Vigna);
 * the constants below are the ones those definitions specify. */
#include "synth/synth_rng.h"

#include <math.h>

uint64_t sl_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sl_rng_seed(sl_rng *r, uint64_t key)
{
    uint64_t st = key;
    for (int i = 0; i < 4; i++) r->s[i] = sl_splitmix64(&st);
    /* splitmix64 is a bijection of its counter, so four consecutive outputs
     * cannot all be zero; keep the guard anyway since all-zero is fatal. */
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3])) r->s[0] = 1;
}

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

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sl_rng_next(sl_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sl_rng_uniform(sl_rng *r)
{
    return (double)(sl_rng_next(r) >> 11) * 0x1.0p-53;
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
