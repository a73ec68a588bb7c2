/* test_attn_kernels.c - the AVX2 attention inner loops against their scalar
 * twins, on random rows of every length 1..80 (tails included). The
 * expected values come from plain double-precision loops over the same
 * f16-rounded inputs. */
#include <math.h>
#include <stdlib.h>

#include "ops/attn_kernels.h"
#include "quant/quant.h"
#include "test.h"

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void check_set(const sl_attn_kernels *k, const char *name)
{
    unsigned seed = 7;
    for (int n = 1; n <= 80; n++) {
        float q[80], kf[80], out[80], out32[80];
        uint16_t kh[80];
        double want_dot = 0.0, bound = 0.0;
        for (int i = 0; i < n; i++) {
            q[i] = frand(&seed) * 4.0f;
            kh[i] = sl_f32_to_fp16(frand(&seed) * 3.0f);
            kf[i] = sl_fp16_to_f32(kh[i]);
            want_dot += (double)q[i] * kf[i];
            bound += fabs((double)q[i] * kf[i]);
            out[i] = out32[i] = frand(&seed);
        }
        const double tol = 1e-6 * bound + 1e-7;
        CHECK_MSG(fabs(k->dot_f16(q, kh, n) - want_dot) <= tol, "%s dot_f16 n=%d", name, n);
        CHECK_MSG(fabs(k->dot_f32(q, kf, n) - want_dot) <= tol, "%s dot_f32 n=%d", name, n);
        const float a = 0.375f;
        float want[80];
        for (int i = 0; i < n; i++) want[i] = out[i] + a * kf[i];
        k->axpy_f16(out, a, kh, n);
        k->axpy_f32(out32, a, kf, n);
        for (int i = 0; i < n; i++) {
            CHECK_MSG(fabsf(out[i] - want[i]) <= 1e-6f, "%s axpy_f16 n=%d i=%d", name, n, i);
            CHECK_MSG(fabsf(out32[i] - want[i]) <= 1e-6f, "%s axpy_f32 n=%d i=%d", name, n, i);
        }
    }
}

TEST(reference_kernels_match_double_loops) { check_set(sl_attn_kernels_ref(), "ref"); }

TEST(avx2_kernels_match_double_loops)
{
    if (sl_quant_isa() != SL_ISA_AVX2 || !sl_attn_kernels_avx2()) {
        printf("   (no AVX2 on this CPU: skipped)\n");
        return;
    }
    check_set(sl_attn_kernels_avx2(), "avx2");
    CHECK(sl_attn_kernels_get() == sl_attn_kernels_avx2());
}

int main(void)
{
    RUN(reference_kernels_match_double_loops);
    RUN(avx2_kernels_match_double_loops);
    return TEST_REPORT();
}
