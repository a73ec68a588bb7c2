/* hsum.h - the sum of eight floats in the order of the AVX2 horizontal add
 * llama.cpp (and sluice's AVX2 kernels) use: the halves added lane by lane,
 * then lanes 0+2 and 1+3, then those two. The scalar twins of the kernels
 * sum their eight lanes with it so they keep the SIMD kernels' bits. */
#ifndef SL_UTIL_HSUM_H
#define SL_UTIL_HSUM_H

static inline float sl_hsum8(const float p[8])
{
    const float a0 = p[0] + p[4], a1 = p[1] + p[5], a2 = p[2] + p[6], a3 = p[3] + p[7];
    return (a0 + a2) + (a1 + a3);
}

#endif
