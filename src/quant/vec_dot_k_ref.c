/* vec_dot_k_ref.c - scalar reference dot kernels of the K-quants (Q2_K ..
 * Q6_K) against Q8_K activations.
 *
 * Owns: the integer form of each dot product. Per super-block everything is
 * an exact int32 sum (bounds noted per kernel); floats enter only at the
 * super-block scales. Offsets (mins, the -32 of Q6_K) are applied through
 * the activation block's bsums.
 * Must not know: instruction sets, threads, matrices. */
#include "quant/quant_internal.h"

/* Each kernel first unpacks a super-block's levels into int8 (the layout
 * walk of quant_k.c), then takes plain integer dot products per sub-block:
 * readable, and loops of that shape vectorise well in portable builds. */

/* sum over n of q[i] * a[i] */
static inline int dot_i8(const int8_t *q, const int8_t *a, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) s += q[i] * a[i];
    return s;
}

/* |sumi| <= 16 * 15 * (16 * 3 * 127), |summ| <= 16 * 15 * 2032: < 2^31 */
static void vec_dot_q2_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q2_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 32; l++)
                    q[128 * h + 32 * j + l] = (int8_t)((x[i].qs[32 * h + l] >> (2 * j)) & 3);
        int sumi = 0, summ = 0;
        for (int k = 0; k < 16; k++) {
            sumi += (x[i].scales[k] & 0x0F) * dot_i8(q + 16 * k, y[i].qs + 16 * k, 16);
            summ += (x[i].scales[k] >> 4) * y[i].bsums[k];
        }
        sum += y[i].d * (sl_h2f(x[i].d) * (float)sumi - sl_h2f(x[i].dmin) * (float)summ);
    }
    *s = sum;
}

static void vec_dot_q3_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q3_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int8_t sc[16];
        sl_q3k_scales(x[i].scales, sc);
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 32; l++) {
                    int v = (x[i].qs[32 * h + l] >> (2 * j)) & 3;
                    int hb = (x[i].hmask[l] >> (4 * h + j)) & 1;
                    q[128 * h + 32 * j + l] = (int8_t)(v - 4 + 4 * hb);
                }
        int sumi = 0;
        for (int k = 0; k < 16; k++) sumi += sc[k] * dot_i8(q + 16 * k, y[i].qs + 16 * k, 16);
        sum += y[i].d * sl_h2f(x[i].d) * (float)sumi;
    }
    *s = sum;
}

/* Q4_K and Q5_K share everything but the fifth bit. */
static float k4_superblock(const uint8_t scales[12], uint16_t d, uint16_t dmin, const int8_t *q,
                           const sl_block_q8_K *y)
{
    int sumi = 0, summ = 0;
    for (int k = 0; k < 8; k++) {
        uint8_t sc, m;
        sl_k4_scale_min(scales, k, &sc, &m);
        sumi += sc * dot_i8(q + 32 * k, y->qs + 32 * k, 32);
        summ += m * (y->bsums[2 * k] + y->bsums[2 * k + 1]);
    }
    return y->d * (sl_h2f(d) * (float)sumi - sl_h2f(dmin) * (float)summ);
}

static void vec_dot_q4_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                q[64 * c + l] = (int8_t)(x[i].qs[32 * c + l] & 0x0F);
                q[64 * c + 32 + l] = (int8_t)(x[i].qs[32 * c + l] >> 4);
            }
        sum += k4_superblock(x[i].scales, x[i].d, x[i].dmin, q, &y[i]);
    }
    *s = sum;
}

static void vec_dot_q5_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                int h0 = (x[i].qh[l] >> (2 * c)) & 1, h1 = (x[i].qh[l] >> (2 * c + 1)) & 1;
                q[64 * c + l] = (int8_t)((x[i].qs[32 * c + l] & 0x0F) | h0 << 4);
                q[64 * c + 32 + l] = (int8_t)((x[i].qs[32 * c + l] >> 4) | h1 << 4);
            }
        sum += k4_superblock(x[i].scales, x[i].d, x[i].dmin, q, &y[i]);
    }
    *s = sum;
}

static void vec_dot_q6_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q6_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            int8_t *o = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                o[l] = (int8_t)(((ql[l] & 0x0F) | ((qh[l] >> 0) & 3) << 4) - 32);
                o[l + 32] = (int8_t)(((ql[l + 32] & 0x0F) | ((qh[l] >> 2) & 3) << 4) - 32);
                o[l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
                o[l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
            }
        }
        int sumi = 0;
        for (int k = 0; k < 16; k++)
            sumi += x[i].scales[k] * dot_i8(q + 16 * k, y[i].qs + 16 * k, 16);
        sum += y[i].d * sl_h2f(x[i].d) * (float)sumi;
    }
    *s = sum;
}

void sl_vec_dot_fill_k_ref(sl_quant_kernels *k)
{
    k->vec_dot[SL_TYPE_Q2_K] = vec_dot_q2_K_q8_K;
    k->vec_dot[SL_TYPE_Q3_K] = vec_dot_q3_K_q8_K;
    k->vec_dot[SL_TYPE_Q4_K] = vec_dot_q4_K_q8_K;
    k->vec_dot[SL_TYPE_Q5_K] = vec_dot_q5_K_q8_K;
    k->vec_dot[SL_TYPE_Q6_K] = vec_dot_q6_K_q8_K;
    k->from_float[SL_TYPE_Q8_K] = sl_quant_q8_K_ref;
}
