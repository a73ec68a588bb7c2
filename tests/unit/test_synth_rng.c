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

int main(void)
{
    RUN(splitmix64_reference);
    RUN(xoshiro256ss_reference);
    RUN(seeding_and_derivation);
    RUN(uniform_range_and_mean);
    RUN(fast_normal_moments);
    RUN(box_muller_normal);
    RUN(streams_are_independent);
    return TEST_REPORT();
}
