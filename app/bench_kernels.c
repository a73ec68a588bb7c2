/* bench_kernels.c - `sluice bench --kernels`: prints matvec GB/s per weight
 * type next to the memory bandwidth measured on the same threads. */
#include <stdio.h>

#include "ops/kbench.h"
#include "quant/quant.h"
#include "util/pool.h"

int bench_kernels(int threads, int mb);

int bench_kernels(int threads, int mb)
{
    const int nth = threads > 0 ? threads : sl_cpu_core_count();
    sl_pool *pool;
    sl_err err;
    if (sl_pool_create(&pool, nth, &err)) {
        fprintf(stderr, "sluice bench: %s\n", err.msg);
        return 1;
    }
    const size_t bytes = (size_t)mb << 20;
    const double copy = sl_kbench_copy_gbs(pool, bytes, 5);
    const double read = sl_kbench_read_gbs(pool, bytes, 5);
    printf("threads %d, matrix %d MiB (larger than the caches)\n", nth, mb);
    printf("memory: STREAM copy %.2f GB/s (read+write), read sweep %.2f GB/s\n\n", copy, read);
    printf("| %-7s | %10s | %13s | %13s |\n", "type", "GB/s", "% of copy", "% of read");
    printf("| %-7s | %10s | %13s | %13s |\n", "-------", "---------:", "------------:",
           "------------:");
    static const sl_type types[] = {SL_TYPE_F32,  SL_TYPE_F16,  SL_TYPE_BF16, SL_TYPE_Q4_0,
                                    SL_TYPE_Q4_1, SL_TYPE_Q5_0, SL_TYPE_Q5_1, SL_TYPE_Q8_0,
                                    SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q4_K, SL_TYPE_Q5_K,
                                    SL_TYPE_Q6_K, SL_TYPE_IQ4_NL, SL_TYPE_IQ4_XS,
                                    SL_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        double g;
        if (sl_kbench_matvec_gbs(pool, types[i], bytes, 5, &g, &err)) {
            printf("| %-7s | %10s | %13s | %13s |\n", sl_type_name(types[i]), "n/a", "", "");
            continue;
        }
        printf("| %-7s | %10.2f | %12.0f%% | %12.0f%% |\n", sl_type_name(types[i]), g,
               100.0 * g / copy, 100.0 * g / read);
        fflush(stdout);
    }
    /* the eight-row interleaved layout resident Q4_0 / IQ4_NL / MXFP4
     * weights are kept in (the rows above are the plain layout, the form
     * of streamed experts) */
    static const sl_type x8_types[] = {SL_TYPE_Q4_0, SL_TYPE_IQ4_NL, SL_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof x8_types / sizeof x8_types[0]; i++) {
        double g;
        char name[16];
        snprintf(name, sizeof name, "%s x8", sl_type_name(x8_types[i]));
        if (sl_kbench_matvec_layout_gbs(pool, x8_types[i], true, bytes, 5, &g, &err)) {
            printf("| %-7s | %10s | %13s | %13s |\n", name, "n/a", "", "");
            continue;
        }
        printf("| %-7s | %10.2f | %12.0f%% | %12.0f%% |\n", name, g, 100.0 * g / copy,
               100.0 * g / read);
        fflush(stdout);
    }
    sl_pool_free(pool);
    return 0;
}
