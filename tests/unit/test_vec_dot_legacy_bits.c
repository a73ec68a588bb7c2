/* test_vec_dot_legacy_bits.c - the scalar dot kernels of the 32-element
 * types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 x Q8_0) give their AVX2 twins' bits:
 * both take the reference's lanes (exact integer sums of four products),
 * one FMA chain per lane over the blocks and the same final lane sum. The
 * weights are quantised from random rows of several lengths and scales;
 * the expected value is the AVX2 kernel's, the scalar one is under test
 * (and both are checked against a double-precision dot of the dequantised
 * rows, so neither can be wrong the same way unseen). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "test.h"

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Q4_1 / Q5_1 against Q8_1 take their offset term as m * s, with s the
 * activation block's stored f16 sum (d * sum qs rounded), as the
 * reference defines the product: the dequantised dot's m * d * sum qs is
 * replaced by that, block by block (weight blocks start with f16 d, m;
 * Q8_1 blocks with f16 d, s, then 32 levels). */
static double q8_1_offset_fix(sl_type wt, const void *w, const void *a, int n)
{
    const size_t wb = wt == SL_TYPE_Q4_1 ? 20 : 24;
    double fix = 0.0;
    for (int b = 0; b < n / 32; b++) {
        const uint8_t *pw = (const uint8_t *)w + (size_t)b * wb, *pa = (const uint8_t *)a + (size_t)b * 36;
        uint16_t m, d, s;
        memcpy(&m, pw + 2, 2);
        memcpy(&d, pa, 2);
        memcpy(&s, pa + 2, 2);
        int sum = 0;
        for (int i = 0; i < 32; i++) sum += (int8_t)pa[4 + i];
        fix += (double)sl_fp16_to_f32(m) *
               ((double)sl_fp16_to_f32(s) - (double)sl_fp16_to_f32(d) * (double)sum);
    }
    return fix;
}

TEST(legacy_scalar_bits_equal_avx2)
{
    if (!sl_quant_vec_dot_isa(SL_TYPE_Q8_0, SL_ISA_AVX2)) {
        printf("   (no AVX2 kernels here: skipped)\n");
        return;
    }
    static const sl_type types[] = {SL_TYPE_Q4_0, SL_TYPE_Q4_1, SL_TYPE_Q5_0, SL_TYPE_Q5_1,
                                    SL_TYPE_Q8_0};
    static const int lens[] = {32, 64, 256, 1024, 4096};
    unsigned seed = 17;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int rep = 0; rep < 4; rep++) {
                const int n = lens[li];
                const float scale = rep == 3 ? 300.0f : 1.0f;
                float *w = malloc(sizeof(float) * (size_t)n), *a = malloc(sizeof(float) * (size_t)n);
                for (int i = 0; i < n; i++) {
                    w[i] = frand(&seed) * scale;
                    a[i] = frand(&seed) * (i % 7 == 0 ? 9.0f : 1.0f);
                }
                const sl_type_traits *tr = sl_type_get(types[ti]);
                const sl_type_traits *at = sl_type_get(tr->vec_dot_type);
                uint8_t *wq = malloc((size_t)n * 2), *aq = malloc((size_t)n * 2);
                tr->from_float(w, wq, n);
                at->from_float(a, aq, n);
                float got, want;
                sl_quant_vec_dot_isa(types[ti], SL_ISA_SCALAR)(n, &got, wq, aq);
                sl_quant_vec_dot_isa(types[ti], SL_ISA_AVX2)(n, &want, wq, aq);
                CHECK_MSG(got == want, "%s n=%d rep %d: scalar %.9g, avx2 %.9g", tr->name, n, rep,
                          (double)got, (double)want);
                float *wd = malloc(sizeof(float) * (size_t)n), *ad = malloc(sizeof(float) * (size_t)n);
                tr->to_float(wq, wd, n);
                at->to_float(aq, ad, n);
                double d = 0.0, mag = 0.0;
                for (int i = 0; i < n; i++) {
                    d += (double)wd[i] * ad[i];
                    mag += fabs((double)wd[i] * ad[i]);
                }
                if (tr->vec_dot_type == SL_TYPE_Q8_1) d += q8_1_offset_fix(types[ti], wq, aq, n);
                CHECK_MSG(fabs(got - d) <= 1e-5 * mag + 1e-6, "%s n=%d: %.9g vs double %.9g",
                          tr->name, n, (double)got, d);
                free(w), free(a), free(wq), free(aq), free(wd), free(ad);
            }
}

int main(void)
{
    RUN(legacy_scalar_bits_equal_avx2);
    return TEST_REPORT();
}
