/* rng.c - xoshiro256** (Blackman & Vigna) and splitmix64, from their
 * published definitions. */
#include "util/rng.h"

uint64_t sl_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sl_rng_seed(sl_rng *r, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < 4; i++) r->s[i] = sl_splitmix64(&st);
    /* splitmix64 is a bijection of its counter, so four consecutive outputs
     * cannot all be zero; keep the guard anyway for a hand-set state. */
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3])) r->s[0] = 1;
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sl_rng_next(sl_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
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
