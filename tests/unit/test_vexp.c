/* test_vexp.c - the reference's polynomial exponential (ops/vexp.h) and
 * the activations built on it: close to exp() everywhere, exact at the
 * edges, and the AVX2 forms (act_avx2.c) bit-identical to the lane form. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vexp.h"
#include "quant/quant.h"
#include "test.h"

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

TEST(vexpf_is_exp_to_float_precision)
{
    double worst = 0.0;
    for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
        const double want = exp((double)x), got = sl_vexpf(x);
        const double rel = fabs(got - want) / want;
        if (rel > worst) worst = rel;
    }
    CHECK_MSG(worst < 4e-7, "largest relative error %g", worst);
    CHECK(sl_vexpf(0.0f) == 1.0f);
    CHECK(sl_vexpf(-INFINITY) == 0.0f);
    CHECK(sl_vexpf(-200.0f) == 0.0f);
    CHECK(isinf(sl_vexpf(200.0f)) && sl_vexpf(200.0f) > 0.0f);
    /* subnormal results, past the fast path's range */
    CHECK(sl_vexpf(-90.0f) > 0.0f && fabs(sl_vexpf(-90.0f) / exp(-90.0) - 1.0) < 1e-5);
}

/* silu(x) * g as the lane form computes it: eights by sl_vexpf, the tail by expf */
static void swiglu_lanes(float *x, const float *g, int n)
{
    const int n8 = n - n % 8;
    for (int i = 0; i < n; i++) {
        const float e = i < n8 ? sl_vexpf(0.0f - x[i]) : expf(-x[i]);
        x[i] = x[i] / (1.0f + e) * g[i];
    }
}

TEST(swiglu_matches_the_lane_form_and_silu)
{
    unsigned seed = 5;
    for (int n = 1; n <= 41; n++) {
        float x[41], g[41], want[41], got[41];
        for (int i = 0; i < n; i++) {
            x[i] = frand(&seed) * 12.0f;
            g[i] = frand(&seed) * 3.0f;
        }
        memcpy(want, x, sizeof(float) * (size_t)n);
        swiglu_lanes(want, g, n);
        memcpy(got, x, sizeof(float) * (size_t)n);
        sl_swiglu(got, g, n);
        for (int i = 0; i < n; i++) {
            const double silu = (double)x[i] / (1.0 + exp(-(double)x[i])) * g[i];
            CHECK_MSG(fabs(got[i] - silu) <= 1e-5 * (fabs(silu) + 1e-3), "n=%d i=%d", n, i);
            CHECK_MSG(got[i] == want[i], "n=%d i=%d: %.9g vs lane form %.9g", n, i,
                      (double)got[i], (double)want[i]);
        }
    }
}

TEST(silu_matches_the_lane_form)
{
    unsigned seed = 3;
    for (int n = 1; n <= 27; n++) {
        float x[27], got[27];
        for (int i = 0; i < n; i++) got[i] = x[i] = frand(&seed) * 10.0f;
        sl_silu(got, n);
        const int n8 = n - n % 8;
        for (int i = 0; i < n; i++) {
            const float want = x[i] / (1.0f + (i < n8 ? sl_vexpf(0.0f - x[i]) : expf(-x[i])));
            CHECK_MSG(got[i] == want, "n=%d i=%d", n, i);
            CHECK(fabs(got[i] - x[i] / (1.0 + exp(-(double)x[i]))) <= 1e-5 * (fabs(x[i]) + 1e-3));
        }
    }
}

TEST(softmax_sums_in_eights_and_is_a_distribution)
{
    unsigned seed = 9;
    for (int n = 1; n <= 35; n++) {
        float x[35], want[35];
        for (int i = 0; i < n; i++) x[i] = frand(&seed) * 8.0f;
        float mx = x[0];
        for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
        double sum = 0.0;
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            float p[8];
            for (int j = 0; j < 8; j++) want[i + j] = p[j] = sl_vexpf(x[i + j] - mx);
            sum += (double)(((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7])));
        }
        for (; i < n; i++) sum += (double)(want[i] = expf(x[i] - mx));
        const float inv = (float)(1.0 / sum);
        double total = 0.0;
        sl_softmax(x, n);
        for (i = 0; i < n; i++) {
            CHECK_MSG(x[i] == want[i] * inv, "n=%d i=%d", n, i);
            total += x[i];
        }
        CHECK_MSG(fabs(total - 1.0) < 1e-6, "n=%d sums to %.9f", n, total);
    }
}

int main(void)
{
    printf("   (kernels: %s)\n", sl_isa_name(sl_quant_isa()));
    RUN(vexpf_is_exp_to_float_precision);
    RUN(swiglu_matches_the_lane_form_and_silu);
    RUN(silu_matches_the_lane_form);
    RUN(softmax_sums_in_eights_and_is_a_distribution);
    return TEST_REPORT();
}
