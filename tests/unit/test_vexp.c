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

/* The shared expert's gate: ggml_sigmoid's 1 / (1 + e^-g), or qwen2moe's
 * graph's ggml_silu(g) / g, whose one-element rows take ggml_silu_f32
 * (g / (1 + expf(-g))) before the division. The two round apart often
 * enough that a model's output shows it (issue 34's sweep: generated
 * qwen2moe f32 files 3,390 and 11,169 base bytes from llama.cpp's). */
TEST(shexp_gate_rounds_as_the_graph_writes_it)
{
    unsigned seed = 17;
    int apart = 0, n = 0;
    for (int i = 0; i < 4000; i++) {
        volatile float g = frand(&seed) * 9.0f;
        if (g == 0.0f) continue;
        volatile float e = expf(-g), one = 1.0f + e, silu = g / one;
        const float want_div = silu / g, want_sig = 1.0f / one;
        const float got_div = sl_shexp_gate(g, true), got_sig = sl_shexp_gate(g, false);
        CHECK_MSG(got_div == want_div, "g=%.9g: %.9g vs silu(g)/g %.9g", (double)g,
                  (double)got_div, (double)want_div);
        CHECK_MSG(got_sig == want_sig, "g=%.9g: %.9g vs sigmoid %.9g", (double)g,
                  (double)got_sig, (double)want_sig);
        CHECK(fabs(got_div - 1.0 / (1.0 + exp(-(double)g))) < 3e-7);
        apart += got_div != got_sig;
        n++;
    }
    /* the flag matters: a good share of gates differ in the last bit */
    CHECK_MSG(apart > n / 10, "only %d of %d gates differ between the two forms", apart, n);
}

/* ggml_vec_dot_f32 as node-llama-cpp 3.22.1's build compiled it (read from
 * its libggml-cpu-haswell.so): 32 at a time in four 8-lane FMA chains,
 * reduced (0+2)+(1+3), halves, two horizontal adds; then the leftover loop
 * `sumf += x[i]*y[i]`, which its compiler vectorised: eights of rounded
 * products added one by one, then a four, then up to three by FMA. */
static float vec_dot_f32_node(const float *x, const float *y, int n)
{
    float a[4][8] = {{0}}, s[8], h[4];
    int i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) a[j][l] = fmaf(x[i + 8 * j + l], y[i + 8 * j + l], a[j][l]);
    for (int l = 0; l < 8; l++) s[l] = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l]);
    for (int l = 0; l < 4; l++) h[l] = s[l] + s[l + 4];
    float sum = (h[0] + h[1]) + (h[2] + h[3]);
    const int left = n - i, eights = left / 8, four = left % 8 >= 4;
    for (int g = 0; g < eights; g++, i += 8) {
        float p[8];
        for (int l = 0; l < 8; l++) p[l] = x[i + l] * y[i + l];
        for (int l = 0; l < 8; l++) sum = sum + p[l];
    }
    if (four) {
        float p[4];
        for (int l = 0; l < 4; l++) p[l] = x[i + l] * y[i + l];
        for (int l = 0; l < 4; l++) sum = sum + p[l];
        i += 4;
    }
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    return sum;
}

/* The 2026-09 dot against that twin at the delta rule's head sizes (16,
 * 48: n % 32 of 16) and every leftover length; the fixtures' form (all by
 * FMA) differs from it somewhere, so the twin tells the two apart. */
TEST(dot_f32_vtail_is_the_node_build_s_leftover)
{
    unsigned seed = 23;
    int apart = 0;
    for (int n = 1; n <= 100; n++) {
        float x[100], y[100];
        for (int rep = 0; rep < 8; rep++) {
            for (int i = 0; i < n; i++) {
                x[i] = frand(&seed) * 3.0f;
                y[i] = frand(&seed) * 3.0f;
            }
            const float want = vec_dot_f32_node(x, y, n);
            const float got = sl_dot_f32_untiled_vtail(x, y, n);
            CHECK_MSG(got == want, "n=%d: %.9g vs %.9g", n, (double)got, (double)want);
            const float fma_tail = sl_dot_f32_untiled(x, y, n);
            if (n % 32 < 4) CHECK_MSG(fma_tail == got, "n=%d: leftover under four differs", n);
            apart += fma_tail != got;
        }
    }
    CHECK_MSG(apart > 50, "only %d dots differ from the all-FMA leftover", apart);
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
    RUN(shexp_gate_rounds_as_the_graph_writes_it);
    RUN(dot_f32_vtail_is_the_node_build_s_leftover);
    RUN(softmax_sums_in_eights_and_is_a_distribution);
    return TEST_REPORT();
}
