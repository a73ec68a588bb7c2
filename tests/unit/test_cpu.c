/* test_cpu.c - util/cpu.c's instruction-set answers agree with the
 * compiler's own detector (__builtin_cpu_supports reads cpuid and xgetbv
 * through libgcc, written independently of ours), and the kernels that
 * have a 512-bit form choose it exactly when the answer says so. */
#include "ops/attn_kernels.h"
#include "quant/quant.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"
#include "test.h"
#include "util/cpu.h"

TEST(x86_features_match_the_compiler)
{
    sl_cpu_features f;
    sl_cpu_detect(&f);
#if defined(__x86_64__)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("bmi2");
    CHECK_EQ_INT(f.avx2, avx2);
    CHECK_EQ_INT(f.avx512f, avx2 && __builtin_cpu_supports("avx512f"));
    CHECK_EQ_INT(f.avx512bw, avx2 && __builtin_cpu_supports("avx512f") &&
                                 __builtin_cpu_supports("avx512bw"));
    CHECK_EQ_INT(f.avx512vnni, f.avx512bw && __builtin_cpu_supports("avx512vnni"));
    CHECK_EQ_INT(f.fma_avx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    CHECK(!f.neon && !f.dotprod && !f.i8mm);
    printf("   avx2 %d, avx512f %d, avx512bw %d, avx512vnni %d\n", f.avx2, f.avx512f, f.avx512bw,
           f.avx512vnni);
#else
    CHECK(!f.avx2 && !f.avx512f && !f.avx512bw && !f.avx512vnni && !f.fma_avx2);
#endif
    CHECK(!f.avx512vnni || f.avx512bw);
    CHECK(!f.avx512bw || f.avx512f);
    CHECK(!f.avx512f || f.avx2);
    CHECK(!f.avx2 || f.fma_avx2);
}

TEST(wide_kernels_follow_the_answer)
{
    sl_cpu_features f;
    sl_cpu_detect(&f);
    sl_vec_dot_n_fn forms[2];
#if defined(__x86_64__)
    CHECK_EQ_INT(sl_vec_dot_n_q6_K_forms_avx2(forms), f.avx512bw ? 2 : 1);
    for (int o = 0; o < 2; o++) {
        const sl_rp_order order = o ? SL_RP_GEMV : SL_RP_GEMM;
        sl_vec_dot_rows8_fn r8[3];
        const int nf = sl_vec_dot_rows8_q4_K_rp_forms_avx2(order, r8);
        CHECK_EQ_INT(nf, f.avx512vnni ? 3 : f.avx512bw ? 2 : 1);
        if (f.avx2) CHECK(sl_vec_dot_rows8_q4_K_rp_isa(order, SL_ISA_AVX2) == r8[nf - 1]);
    }
    CHECK_EQ_INT(sl_attn_kernels_avx512() != NULL, f.avx512f);
    if (sl_quant_isa() == SL_ISA_AVX2)
        CHECK_EQ_INT(sl_attn_kernels_get() == sl_attn_kernels_avx512(), f.avx512f);
#else
    CHECK_EQ_INT(sl_vec_dot_n_q6_K_forms_avx2(forms), 0);
    sl_vec_dot_rows8_fn r8[3];
    CHECK_EQ_INT(sl_vec_dot_rows8_q4_K_rp_forms_avx2(SL_RP_GEMV, r8), 0);
    CHECK(sl_attn_kernels_avx512() == NULL);
#endif
}

int main(void)
{
    RUN(x86_features_match_the_compiler);
    RUN(wide_kernels_follow_the_answer);
    return TEST_REPORT();
}
