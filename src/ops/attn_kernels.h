/* attn_kernels.h - the inner loops of attention over an f16 or f32 KV
 * cache: q . k and out += a * v, with scalar reference versions and AVX2
 * (F16C) versions chosen at run time with the quant kernels' ISA. */
#ifndef SL_OPS_ATTN_KERNELS_H
#define SL_OPS_ATTN_KERNELS_H

#include <stdint.h>

typedef struct sl_attn_kernels {
    float (*dot_f16)(const float *q, const uint16_t *k, int n);
    void (*axpy_f16)(float *out, float a, const uint16_t *v, int n);
    float (*dot_f32)(const float *q, const float *k, int n);
    void (*axpy_f32)(float *out, float a, const float *v, int n);
} sl_attn_kernels;

/* The kernels for this CPU (AVX2+F16C when the quant dispatch chose AVX2,
 * else scalar). Static; never NULL. */
const sl_attn_kernels *sl_attn_kernels_get(void);

/* The scalar reference set, for tests. */
const sl_attn_kernels *sl_attn_kernels_ref(void);

/* AVX2 set, or NULL when not compiled in (attn_kernels_avx2.c). */
const sl_attn_kernels *sl_attn_kernels_avx2(void);

#endif
