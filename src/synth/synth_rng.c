/* synth_rng.c - stream derivation and normal draws over util/rng (see synth_rng.h).
 * The generators follow their published definitions (Blackman & Vigna);
 * the constants below are the ones those definitions specify. */
#include "synth/synth_rng.h"

#include <math.h>

#include "quant/quant.h"
#include "synth/synth_gen.h"

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

float sl_rng_normal_fast_scale(float std)
{
    /* Each 16-bit lane is uniform on {0..65535}: mean 32767.5, variance
     * (65536^2 - 1) / 12. The sum of four has mean 131070 and variance
     * (65536^2 - 1) / 3, so z = (sum - 131070) / sqrt((65536^2 - 1) / 3). */
    const double inv_sd = 1.0 / sqrt((65536.0 * 65536.0 - 1.0) / 3.0);
    return (float)(inv_sd * std);
}

void sl_rng_fill_normal_scaled(sl_rng *r, float *dst, size_t n, float mean, float scale)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = sl_rng_next(r);
        int32_t sum = (int32_t)(x & 0xffff) + (int32_t)((x >> 16) & 0xffff) +
                      (int32_t)((x >> 32) & 0xffff) + (int32_t)(x >> 48);
        /* Two statements: the product is rounded before the add on every
         * compiler (no fused multiply-add), as in the AVX2 twin. */
        float p = (float)(sum - 131070) * scale;
        dst[i] = mean + p;
    }
}

void sl_rng_fill_normal_fast(sl_rng *r, float *dst, size_t n, float mean, float std)
{
    sl_rng_fill_normal_scaled(r, dst, n, mean, sl_rng_normal_fast_scale(std));
}

void sl_rng_fill_normal_rows(const uint64_t *keys, size_t nrows, float *dst, size_t n,
                             float mean, float std, bool simd)
{
    const float scale = sl_rng_normal_fast_scale(std);
    size_t k = 0;
    const int isa = sl_quant_isa();
    if (simd && n >= 8 && (isa == SL_ISA_AVX2 || isa == SL_ISA_NEON)) {
        for (; k + 4 <= nrows; k += 4) {
            sl_rng r[4];
            float *rows[4];
            for (int j = 0; j < 4; j++) {
                sl_rng_seed(&r[j], keys[k + j]);
                rows[j] = dst + (k + j) * n;
            }
            size_t m = isa == SL_ISA_AVX2 ? sl_rng_fill4_normal_avx2(r, rows, n, mean, scale)
                                          : sl_rng_fill4_normal_neon(r, rows, n, mean, scale);
            for (int j = 0; j < 4; j++) sl_rng_fill_normal_scaled(&r[j], rows[j] + m, n - m, mean, scale);
        }
    }
    for (; k < nrows; k++) {
        sl_rng r;
        sl_rng_seed(&r, keys[k]);
        sl_rng_fill_normal_scaled(&r, dst + k * n, n, mean, scale);
    }
}
