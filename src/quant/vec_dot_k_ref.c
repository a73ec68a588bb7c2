/* vec_dot_k_ref.c - scalar reference dot kernels of the K-quants (Q2_K ..
 * Q6_K) against Q8_K activations.
 *
 * Owns: the integer form of each dot product. Per super-block everything is
 * an exact int32 sum (bounds noted per kernel); floats enter only at the
 * super-block scales. Offsets (mins, the -32 of Q6_K) are applied through
 * the activation block's bsums.
 * Must not know: instruction sets, threads, matrices. */
#include "quant/quant_internal.h"

/* |sum| <= 16 sub-blocks * 15 * (16 * 3 * 127) + 16 * 15 * 2032: < 2^31 */
static void vec_dot_q2_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q2_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sumi = 0, summ = 0;
        for (int k = 0; k < 16; k++) summ += (x[i].scales[k] >> 4) * y[i].bsums[k];
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                for (int half = 0; half < 2; half++) {
                    int sub = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        sub += ((x[i].qs[32 * h + l] >> (2 * j)) & 3) *
                               y[i].qs[128 * h + 32 * j + l];
                    sumi += (x[i].scales[8 * h + 2 * j + half] & 0x0F) * sub;
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
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int8_t sc[16];
        sl_q3k_scales(x[i].scales, sc);
        int sumi = 0;
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                for (int half = 0; half < 2; half++) {
                    int sub = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int v = (x[i].qs[32 * h + l] >> (2 * j)) & 3;
                        if (!((x[i].hmask[l] >> (4 * h + j)) & 1)) v -= 4;
                        sub += v * y[i].qs[128 * h + 32 * j + l];
                    }
                    sumi += sc[8 * h + 2 * j + half] * sub;
                }
        sum += y[i].d * sl_h2f(x[i].d) * (float)sumi;
    }
    *s = sum;
}

static void vec_dot_q4_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q4_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sumi = 0, summ = 0;
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            sl_k4_scale_min(x[i].scales, 2 * c, &sc0, &m0);
            sl_k4_scale_min(x[i].scales, 2 * c + 1, &sc1, &m1);
            const uint8_t *q = x[i].qs + 32 * c;
            const int8_t *a = y[i].qs + 64 * c;
            int lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                lo += (q[l] & 0x0F) * a[l];
                hi += (q[l] >> 4) * a[32 + l];
            }
            sumi += sc0 * lo + sc1 * hi;
            summ += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) +
                    m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
        }
        sum += y[i].d * (sl_h2f(x[i].d) * (float)sumi - sl_h2f(x[i].dmin) * (float)summ);
    }
    *s = sum;
}

static void vec_dot_q5_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q5_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sumi = 0, summ = 0;
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            sl_k4_scale_min(x[i].scales, 2 * c, &sc0, &m0);
            sl_k4_scale_min(x[i].scales, 2 * c + 1, &sc1, &m1);
            const uint8_t *q = x[i].qs + 32 * c;
            const int8_t *a = y[i].qs + 64 * c;
            int lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                lo += ((q[l] & 0x0F) | ((x[i].qh[l] >> (2 * c)) & 1) << 4) * a[l];
                hi += ((q[l] >> 4) | ((x[i].qh[l] >> (2 * c + 1)) & 1) << 4) * a[32 + l];
            }
            sumi += sc0 * lo + sc1 * hi;
            summ += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) +
                    m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
        }
        sum += y[i].d * (sl_h2f(x[i].d) * (float)sumi - sl_h2f(x[i].dmin) * (float)summ);
    }
    *s = sum;
}

static void vec_dot_q6_K_q8_K(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_block_q6_K *x = vx;
    const sl_block_q8_K *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sumi = 0;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h, *a = y[i].qs + 128 * h;
            int sub[8] = {0};
            for (int l = 0; l < 32; l++) {
                int q0 = ((ql[l] & 0x0F) | ((qh[l] >> 0) & 3) << 4) - 32;
                int q1 = ((ql[l + 32] & 0x0F) | ((qh[l] >> 2) & 3) << 4) - 32;
                int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                sub[l / 16] += q0 * a[l];
                sub[2 + l / 16] += q1 * a[l + 32];
                sub[4 + l / 16] += q2 * a[l + 64];
                sub[6 + l / 16] += q3 * a[l + 96];
            }
            for (int k = 0; k < 8; k++) sumi += sc[k] * sub[k];
        }
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
