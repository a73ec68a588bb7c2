/* attn_kernels.c - scalar attention inner loops and run-time choice. */
#include "ops/attn_kernels.h"

#include "quant/quant.h"

static float dot_f16_ref(const float *q, const uint16_t *k, int n)
{
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += q[i] * sl_fp16_to_f32(k[i]);
    return acc;
}

static void axpy_f16_ref(float *out, float a, const uint16_t *v, int n)
{
    for (int i = 0; i < n; i++) out[i] += a * sl_fp16_to_f32(v[i]);
}

static float dot_f32_ref(const float *q, const float *k, int n)
{
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += q[i] * k[i];
    return acc;
}

static void axpy_f32_ref(float *out, float a, const float *v, int n)
{
    for (int i = 0; i < n; i++) out[i] += a * v[i];
}

static const sl_attn_kernels ref = {dot_f16_ref, axpy_f16_ref, dot_f32_ref, axpy_f32_ref};

const sl_attn_kernels *sl_attn_kernels_ref(void) { return &ref; }

#if !defined(__x86_64__)
const sl_attn_kernels *sl_attn_kernels_avx2(void) { return NULL; }
#endif

const sl_attn_kernels *sl_attn_kernels_get(void)
{
    const sl_attn_kernels *k = NULL;
    if (sl_quant_isa() == SL_ISA_AVX2) k = sl_attn_kernels_avx2();
    return k ? k : &ref;
}
