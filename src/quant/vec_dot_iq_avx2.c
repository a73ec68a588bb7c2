/* vec_dot_iq_avx2.c - AVX2/FMA dot kernels (placeholder until written). */
#include "quant/quant_internal.h"

bool sl_vec_dot_fill_iq_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}
