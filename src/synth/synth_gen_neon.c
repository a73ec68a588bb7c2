/* synth_gen_neon.c - four xoshiro256** streams in two pairs of NEON 64-bit
 * lanes, feeding the fast normal fill (see synth_gen.h): the aarch64 twin
 * of synth_gen_avx2.c, bit-identical to the scalar loop for the same
 * reasons (integer draws with x * 5 and x * 9 as shift and add, exact mod
 * 2^64; the centred Irwin-Hall sum an exact integer; one conversion, one
 * multiply and one add, each rounded as the scalar's, no fused form).
 * Must not know: tensors, rows, seeds, which CPU we run on. */
#include "synth/synth_gen.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define ROTL64(x, k) vorrq_u64(vshlq_n_u64((x), (k)), vshrq_n_u64((x), 64 - (k)))

/* one xoshiro256** step of two lanes: rotl(s1 * 5, 7) * 9 */
static inline uint64x2_t next2(uint64x2_t s[4])
{
    uint64x2_t a = vaddq_u64(vshlq_n_u64(s[1], 2), s[1]);
    a = ROTL64(a, 7);
    const uint64x2_t result = vaddq_u64(vshlq_n_u64(a, 3), a);
    const uint64x2_t t = vshlq_n_u64(s[1], 17);
    s[2] = veorq_u64(s[2], s[0]);
    s[3] = veorq_u64(s[3], s[1]);
    s[1] = veorq_u64(s[1], s[2]);
    s[0] = veorq_u64(s[0], s[3]);
    s[2] = veorq_u64(s[2], t);
    s[3] = ROTL64(s[3], 45);
    return result;
}

/* the sum of the four 16-bit fields of each lane (exact, < 2^18) */
static inline uint64x2_t field_sum(uint64x2_t x)
{
    return vpaddlq_u32(vpaddlq_u16(vreinterpretq_u16_u64(x)));
}

size_t sl_rng_fill4_normal_neon(sl_rng r[4], float *const dst[4], size_t n, float mean,
                                float scale)
{
    const size_t m = n & ~(size_t)7;
    if (!m) return 0;
    uint64x2_t p[2][4]; /* pair h holds streams 2h, 2h + 1 */
    for (int h = 0; h < 2; h++)
        for (int w = 0; w < 4; w++) {
            const uint64_t v[2] = {r[2 * h].s[w], r[2 * h + 1].s[w]};
            p[h][w] = vld1q_u64(v);
        }
    const float32x4_t vmean = vdupq_n_f32(mean), vscale = vdupq_n_f32(scale);
    for (size_t i = 0; i < m; i += 8) {
        int32_t d[4][8];
        for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++) {
                const uint64x2_t s = field_sum(next2(p[h]));
                d[2 * h][j] = (int32_t)vgetq_lane_u64(s, 0) - 131070;
                d[2 * h + 1][j] = (int32_t)vgetq_lane_u64(s, 1) - 131070;
            }
        for (int k = 0; k < 4; k++)
            for (int hh = 0; hh < 2; hh++) {
                const float32x4_t z = vcvtq_f32_s32(vld1q_s32(d[k] + 4 * hh));
                vst1q_f32(dst[k] + i + 4 * hh, vaddq_f32(vmean, vmulq_f32(z, vscale)));
            }
    }
    for (int h = 0; h < 2; h++)
        for (int w = 0; w < 4; w++) {
            r[2 * h].s[w] = vgetq_lane_u64(p[h][w], 0);
            r[2 * h + 1].s[w] = vgetq_lane_u64(p[h][w], 1);
        }
    return m;
}
#else
size_t sl_rng_fill4_normal_neon(sl_rng r[4], float *const dst[4], size_t n, float mean,
                                float scale)
{
    (void)r;
    (void)dst;
    (void)n;
    (void)mean;
    (void)scale;
    return 0;
}
#endif
