/* vec_dot_iq_ref.c - scalar reference dot kernels of the table types:
 * IQ4_NL and MXFP4 against Q8_0 activations, IQ4_XS against Q8_K.
 *
 * Owns: the integer form (table values are small integers; the scales are
 * applied per block). Must not know: instruction sets, threads, matrices. */
#include <math.h>

#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"
#include "util/hsum.h"

/* table values of 16 packed nibbles, in the Q4_0 element order */
static inline void lookup32(const int8_t table[16], const uint8_t qs[16], int8_t v[32])
{
    for (int j = 0; j < 16; j++) {
        v[j] = table[qs[j] & 0x0F];
        v[j + 16] = table[qs[j] >> 4];
    }
}

static inline int dot32(const int8_t *v, const int8_t *a)
{
    int s = 0;
    for (int i = 0; i < 32; i++) s += v[i] * a[i];
    return s;
}

/* IQ4_NL / MXFP4 in the AVX2 kernels' order (vec_dot_iq_avx2.c, llama.cpp's
 * x86 one): lane l of block i is the exact sum of elements 4l..4l+3, FMA'd
 * with the block's scale product into the even- or odd-block lanes by i's
 * parity; the two sets added lane by lane and summed by sl_hsum8. */
static inline void lanes2_fma(float lane[2][8], int64_t i, float d, const int8_t *v,
                              const int8_t *a)
{
    for (int l = 0; l < 8; l++) {
        int p = 0;
        for (int j = 4 * l; j < 4 * l + 4; j++) p += v[j] * a[j];
        lane[i & 1][l] = fmaf(d, (float)p, lane[i & 1][l]);
    }
}

static inline float lanes2_sum(float lane[2][8])
{
    float t[8];
    for (int l = 0; l < 8; l++) t[l] = lane[0][l] + lane[1][l];
    return sl_hsum8(t);
}

/* IQ4_NL x Q8_0 into the lanes: block i into set i % sets (2: the AVX2
 * vec_dot's even and odd blocks; 1: tinyBLAS's one chain). */
static void iq4_nl_lanes(int64_t n, const void *vx, const void *vy, int sets, float lane[2][8])
{
    const sl_block_iq4_nl *x = vx;
    const sl_block_q8_0 *y = vy;
    int8_t v[32];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        lookup32(sl_iq4nl_values, x[i].qs, v);
        lanes2_fma(lane, i % sets, sl_h2f(x[i].d) * sl_h2f(y[i].d), v, y[i].qs);
    }
}

static void vec_dot_iq4_nl_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    float lane[2][8] = {{0}};
    iq4_nl_lanes(n, vx, vy, 2, lane);
    *s = lanes2_sum(lane);
}

void sl_vec_dot_iq4_nl_tinyblas(int64_t n, float *s, const void *vx, const void *vy)
{
    float lane[2][8] = {{0}};
    iq4_nl_lanes(n, vx, vy, 1, lane);
    *s = sl_hsum8(lane[0]);
}

static void vec_dot_mxfp4_q8_0(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_mxfp4 *x = vx;
    const sl_block_q8_0 *y = vy;
    float lane[2][8] = {{0}};
    int8_t v[32];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        lookup32(sl_mxfp4_values, x[i].qs, v);
        lanes2_fma(lane, i, sl_e8m0_half(x[i].e) * sl_h2f(y[i].d), v, y[i].qs);
    }
    *s = lanes2_sum(lane);
}

/* The scale (ls - 32) of sub-block k of an IQ4_XS super-block. */
static inline int iq4_xs_scale(const sl_block_iq4_xs *x, int k)
{
    return (((x->scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) | ((x->scales_h >> (2 * k)) & 3) << 4) -
           32;
}

/* IQ4_XS in llama.cpp's AVX2 order (ggml_vec_dot_iq4_xs_q8_K, the
 * reference fixtures' build): lane l of a super-block is the exact sum over
 * its eight sub-blocks of the scale times elements 4l..4l+3; one FMA per
 * lane with d * y.d, the lanes summed by sl_hsum8 at the end. */
static void vec_dot_iq4_xs_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_iq4_xs *x = vx;
    const sl_block_q8_K *y = vy;
    float lane[8] = {0};
    int8_t v[32];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sumi[8] = {0};
        for (int k = 0; k < 8; k++) {
            const int ls = iq4_xs_scale(&x[i], k);
            const int8_t *a = y[i].qs + 32 * k;
            lookup32(sl_iq4nl_values, x[i].qs + 16 * k, v);
            for (int l = 0; l < 8; l++) {
                int p = 0;
                for (int j = 4 * l; j < 4 * l + 4; j++) p += v[j] * a[j];
                sumi[l] += ls * p;
            }
        }
        const float d = sl_h2f(x[i].d) * y[i].d;
        for (int l = 0; l < 8; l++) lane[l] = fmaf(d, (float)sumi[l], lane[l]);
    }
    *s = sl_hsum8(lane);
}

void sl_vec_dot_iq4_xs_panel(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_iq4_xs *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    int8_t v[32];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sumi = 0;
        for (int k = 0; k < 8; k++) {
            lookup32(sl_iq4nl_values, x[i].qs + 16 * k, v);
            sumi += iq4_xs_scale(&x[i], k) * dot32(v, y[i].qs + 32 * k);
        }
        sum = fmaf(sl_h2f(x[i].d) * y[i].d, (float)sumi, sum);
    }
    *s = sum;
}

void sl_vec_dot_fill_iq_ref(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_IQ4_NL] = vec_dot_iq4_nl_q8_0;
    k->vec_dot[SL_TYPE_MXFP4] = vec_dot_mxfp4_q8_0;
    k->vec_dot[SL_TYPE_IQ4_XS] = vec_dot_iq4_xs_q8_K;
}
