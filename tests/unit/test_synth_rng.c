/* test_synth_rng.c - the generator's random numbers.
 *
 * Reference outputs are the published ones for the two algorithms (also
 * reproduced with an independent Python transcription of Blackman & Vigna's
 * definitions): splitmix64 from state 0 yields 0xe220a8397b1dcdaf,
 * 0x6e789e6aa1b965f4, 0x06c45d188009454f; xoshiro256** from state
 * {1, 2, 3, 4} yields 11520, 0, 1509978240, 1215971899390074240. The first
 * xoshiro output by hand: rotl(s[1] * 5, 7) * 9 = rotl(10, 7) * 9 =
 * 1280 * 9 = 11520. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_rng.h"
#include "test.h"

TEST(splitmix64_reference)
{
    uint64_t st = 0;
    CHECK(sl_splitmix64(&st) == 0xe220a8397b1dcdafull);
    CHECK(sl_splitmix64(&st) == 0x6e789e6aa1b965f4ull);
    CHECK(sl_splitmix64(&st) == 0x06c45d188009454full);
}

TEST(xoshiro256ss_reference)
{
    sl_rng r = {{1, 2, 3, 4}};
    CHECK(sl_rng_next(&r) == 11520ull);
    CHECK(sl_rng_next(&r) == 0ull);
    CHECK(sl_rng_next(&r) == 1509978240ull);
    CHECK(sl_rng_next(&r) == 1215971899390074240ull);
}

TEST(seeding_and_derivation)
{
    /* Seeding = four splitmix64 outputs from the key: key 0 gives the
     * splitmix64 reference sequence as the state. */
    sl_rng r;
    sl_rng_seed(&r, 0);
    CHECK(r.s[0] == 0xe220a8397b1dcdafull && r.s[1] == 0x6e789e6aa1b965f4ull);
    /* Derived keys: a pure function; every salt matters, in order. */
    uint64_t k = sl_rng_derive(1, 2, 3);
    CHECK(k == sl_rng_derive(1, 2, 3));
    CHECK(k != sl_rng_derive(1, 3, 2));
    CHECK(k != sl_rng_derive(2, 2, 3));
    CHECK(k != sl_rng_derive(1, 2, 4));
    CHECK(sl_rng_derive(0, 0, 0) != 0);
    /* FNV-1a 64: offset basis for "", and "a" = (basis ^ 0x61) * prime
     * = 0xaf63dc4c8601ec8c (the published FNV-1a test vector). */
    CHECK(sl_rng_hash_str("") == 0xcbf29ce484222325ull);
    CHECK(sl_rng_hash_str("a") == 0xaf63dc4c8601ec8cull);
}

TEST(uniform_range_and_mean)
{
    sl_rng r;
    sl_rng_seed(&r, 7);
    double s = 0, lo = 1, hi = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = sl_rng_uniform(&r);
        s += u;
        if (u < lo) lo = u;
        if (u > hi) hi = u;
    }
    CHECK(lo >= 0 && hi < 1);
    /* mean 1/2, sd of the mean sqrt(1/12 / n) = 0.00065; allow 5 sd */
    CHECK_NEAR(s / n, 0.5, 0.0033);
}

static void moments(const float *x, int n, double *m, double *var, double *kurt, double *amax)
{
    double s = 0, s2 = 0, s4 = 0;
    *amax = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *m = s / n;
    for (int i = 0; i < n; i++) {
        double d = x[i] - *m;
        s2 += d * d;
        s4 += d * d * d * d;
        if (fabs(x[i]) > *amax) *amax = fabs(x[i]);
    }
    *var = s2 / n;
    *kurt = s4 / n / (*var * *var);
}

TEST(fast_normal_moments)
{
    /* Irwin-Hall with 4 terms, standardised: mean 0, variance 1, kurtosis
     * 3 - 6/(5*4) = 2.7 (excess kurtosis of a sum of k uniforms is
     * -6/(5k)), support +-sqrt(12) = 3.464. n = 10^6: sd of the mean 0.001,
     * of the variance ~0.0014, of the kurtosis ~0.004. */
    const int n = 1000000;
    float *x = malloc(n * sizeof *x);
    CHECK(x != NULL);
    if (!x) return;
    sl_rng r;
    sl_rng_seed(&r, 99);
    sl_rng_fill_normal_fast(&r, x, n, 0.0f, 1.0f);
    double m, v, k, amax;
    moments(x, n, &m, &v, &k, &amax);
    CHECK_NEAR(m, 0.0, 0.005);
    CHECK_NEAR(v, 1.0, 0.007);
    CHECK_NEAR(k, 2.7, 0.03);
    CHECK(amax <= 3.4642);
    CHECK(amax > 3.0); /* the tails are reached */
    /* mean and std parameters: 1 + 0.1 z */
    sl_rng_seed(&r, 99);
    sl_rng_fill_normal_fast(&r, x, n, 1.0f, 0.1f);
    moments(x, n, &m, &v, &k, &amax);
    CHECK_NEAR(m, 1.0, 0.0005);
    CHECK_NEAR(sqrt(v), 0.1, 0.0005);
    free(x);
}

TEST(box_muller_normal)
{
    /* Standard normal: mean 0, variance 1, kurtosis 3, and
     * P(|z| < 1) = erf(1/sqrt 2) = 0.682689. n = 200000: sd of that
     * fraction sqrt(p(1-p)/n) = 0.00104; allow 5 sd. */
    const int n = 200000;
    float *x = malloc(n * sizeof *x);
    CHECK(x != NULL);
    if (!x) return;
    sl_rng r;
    sl_rng_seed(&r, 3);
    int within = 0;
    for (int i = 0; i < n; i++) {
        x[i] = (float)sl_rng_normal(&r);
        within += fabsf(x[i]) < 1.0f;
    }
    double m, v, k, amax;
    moments(x, n, &m, &v, &k, &amax);
    CHECK_NEAR(m, 0.0, 0.012);
    CHECK_NEAR(v, 1.0, 0.016);
    CHECK_NEAR(k, 3.0, 0.1);
    CHECK_NEAR((double)within / n, 0.682689, 0.0052);
    free(x);
}

TEST(streams_are_independent)
{
    /* Rows seeded from neighbouring row indices must not be correlated:
     * the correlation of two independent 4096-long rows has sd 1/64. */
    enum { N = 4096 };
    static float a[N], b[N];
    sl_rng r;
    double worst = 0;
    for (uint64_t row = 0; row < 16; row++) {
        sl_rng_seed(&r, sl_rng_derive(1, 77, row));
        sl_rng_fill_normal_fast(&r, a, N, 0, 1);
        sl_rng_seed(&r, sl_rng_derive(1, 77, row + 1));
        sl_rng_fill_normal_fast(&r, b, N, 0, 1);
        double s = 0;
        for (int i = 0; i < N; i++) s += (double)a[i] * b[i];
        if (fabs(s / N) > worst) worst = fabs(s / N);
    }
    CHECK_MSG(worst < 5.0 / 64, "worst row correlation %g", worst);
}

/* The multi-row fill (four streams per vector on AVX2 machines) against
 * one stream per row through the scalar loop: bit-identical for every row
 * count (the vector path takes rows four at a time) and row length (eight
 * draws per vector step, the rest scalar), and with the vector path off. */
TEST(rows_fill_matches_one_stream_per_row)
{
    static const size_t lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 33, 256, 777, 2048};
    enum { MAXR = 9, MAXN = 2048 };
    float *a = malloc(sizeof(float) * MAXR * MAXN), *b = malloc(sizeof(float) * MAXR * MAXN);
    float *c = malloc(sizeof(float) * MAXR * MAXN);
    CHECK(a && b && c);
    if (!a || !b || !c) goto out;
    uint64_t keys[MAXR];
    int bad = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = lens[li];
        for (size_t nrows = 1; nrows <= MAXR; nrows++) {
            for (size_t k = 0; k < nrows; k++) keys[k] = sl_rng_derive(5, n, k);
            /* std 0.03 and mean 1: the multiply and the add both round */
            for (size_t k = 0; k < nrows; k++) {
                sl_rng r;
                sl_rng_seed(&r, keys[k]);
                sl_rng_fill_normal_fast(&r, a + k * n, n, 1.0f, 0.03f);
            }
            sl_rng_fill_normal_rows(keys, nrows, b, n, 1.0f, 0.03f, true);
            sl_rng_fill_normal_rows(keys, nrows, c, n, 1.0f, 0.03f, false);
            if (n && memcmp(a, b, n * nrows * sizeof(float))) bad++;
            if (n && memcmp(a, c, n * nrows * sizeof(float))) bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
out:
    free(a);
    free(b);
    free(c);
}

/* The first value of the stream of key 0, derived by hand from the
 * published reference outputs: seeding takes four splitmix64 outputs from
 * state 0, so s[1] = 0x6e789e6aa1b965f4; the first xoshiro256** output is
 * rotl(s[1] * 5, 7) * 9 (mod 2^64); its four 16-bit fields summed, minus
 * 131070, times the float scale 1/sqrt((65536^2 - 1)/3) * std, plus mean.
 * Computed here with this file's own arithmetic for every path. */
TEST(rows_fill_first_value_by_hand)
{
    uint64_t s1 = 0x6e789e6aa1b965f4ull;
    uint64_t a = s1 * 5;
    a = (a << 7) | (a >> 57);
    uint64_t x = a * 9;
    int32_t sum = (int32_t)(x & 0xffff) + (int32_t)((x >> 16) & 0xffff) +
                  (int32_t)((x >> 32) & 0xffff) + (int32_t)(x >> 48);
    float scale = (float)(0.5 / sqrt((65536.0 * 65536.0 - 1.0) / 3.0)); /* std 0.5 */
    float prod = (float)(sum - 131070) * scale;
    float want = 0.25f + prod;
    uint64_t keys[5] = {0, 0, 0, 0, 0};
    float got[5 * 24];
    for (int simd = 0; simd < 2; simd++) {
        sl_rng_fill_normal_rows(keys, 5, got, 24, 0.25f, 0.5f, simd);
        for (int k = 0; k < 5; k++)
            CHECK_MSG(got[24 * k] == want, "simd %d row %d: %.9g, by hand %.9g", simd, k,
                      (double)got[24 * k], (double)want);
    }
}

int main(void)
{
    RUN(splitmix64_reference);
    RUN(xoshiro256ss_reference);
    RUN(seeding_and_derivation);
    RUN(uniform_range_and_mean);
    RUN(fast_normal_moments);
    RUN(box_muller_normal);
    RUN(streams_are_independent);
    RUN(rows_fill_matches_one_stream_per_row);
    RUN(rows_fill_first_value_by_hand);
    return TEST_REPORT();
}
