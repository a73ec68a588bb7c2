/* quant_k_quantize.c - quantisers of the K-quant weight types (Q2_K .. Q6_K).
 *
 * Owns: choosing sub-block scales (and mins), quantising them against the
 * super-block's f16 scale, and packing levels into the layouts drawn in
 * quant_blocks.h. Method, for every type:
 *   1. importance weights w = rms(super-block) + |x| (sl_k_weights);
 *   2. per sub-block, a search over candidate scales with a least-squares
 *      refit (quant_fit.c);
 *   3. the super-block scale d (and dmin) = largest sub-block value divided
 *      by the largest code, stored as f16; sub-block codes = round(s / d);
 *   4. each sub-block tries its code +-1 (and min code +-1) against the
 *      stored d and keeps the one with least weighted error;
 *   5. levels re-derived against the final stored scales.
 * Deterministic: no randomness, fixed search order, ties keep the first.
 * Must not know: files, models, dot products. */
#include <math.h>

#include "quant/quant_fit.h"
#include "quant/quant_internal.h"

/* Search effort: 2 * ntry + 1 candidate scales per sub-block, and whether
 * step 4 (codes +-1) runs. The traits' from_float uses the full effort;
 * sl_quantize_fast a single candidate without step 4 (Q2_K, Q3_K; the
 * other K types have quant_fast.c). */
typedef struct k_effort {
    int ntry;
    bool refine;
} k_effort;

static const k_effort k_full = {8, true};
static const k_effort k_fast = {0, false};

/* Weighted squared error of x ~ ds * L - dm, L = round((x + dm) / ds) in
 * [0, nmax]; levels written to L if non-NULL. */
static float affine_err(const float *x, const float *w, int n, int nmax, float ds, float dm,
                        uint8_t *L)
{
    float id = ds > 0.0f ? 1.0f / ds : 0.0f;
    float pe[4] = {0}; /* four partial sums: see quant_fit.c */
    for (int i = 0; i < n; i += 4)
        for (int u = 0; u < 4; u++) {
            int l = sl_round_clamp((x[i + u] + dm) * id, 0, nmax);
            float e = ds * (float)l - dm - x[i + u];
            pe[u] += w[i + u] * e * e;
            if (L) L[i + u] = (uint8_t)l;
        }
    return (pe[0] + pe[1]) + (pe[2] + pe[3]);
}

/* Same for x ~ ds * L, L in [-nmax, nmax - 1]. */
static float sym_err(const float *x, const float *w, int n, int nmax, float ds, int8_t *L)
{
    float id = ds != 0.0f ? 1.0f / ds : 0.0f;
    float pe[4] = {0};
    for (int i = 0; i < n; i += 4)
        for (int u = 0; u < 4; u++) {
            int l = sl_round_clamp(x[i + u] * id, -nmax, nmax - 1);
            float e = ds * (float)l - x[i + u];
            pe[u] += w[i + u] * e * e;
            if (L) L[i + u] = (int8_t)l;
        }
    return (pe[0] + pe[1]) + (pe[2] + pe[3]);
}

/* Steps 2-5 for the affine types (x ~ d*sc*L - dmin*m). ns sub-blocks of
 * sub elements; codes in [0, cmax]; levels in [0, nmax]. Writes the f16
 * scales, the codes and the levels (one per element). */
static void affine_superblock(const float *x, int ns, int sub, int nmax, int cmax,
                              k_effort ef, uint16_t *dh, uint16_t *dminh, uint8_t *sc,
                              uint8_t *mc, uint8_t *L)
{
    float w[SL_QK_K], s[16], m[16];
    sl_k_weights(x, ns * sub, w);
    float smax = 0.0f, mmax = 0.0f;
    for (int j = 0; j < ns; j++) {
        float b;
        s[j] = sl_fit_affine(x + sub * j, w + sub * j, sub, nmax, ef.ntry, true, L + sub * j, &b);
        m[j] = -b;
        if (s[j] > smax) smax = s[j];
        if (m[j] > mmax) mmax = m[j];
    }
    *dh = sl_f32_to_fp16(smax / (float)cmax);
    *dminh = sl_f32_to_fp16(mmax / (float)cmax);
    float d = sl_h2f(*dh), dmin = sl_h2f(*dminh);
    float id = d > 0.0f ? 1.0f / d : 0.0f, idmin = dmin > 0.0f ? 1.0f / dmin : 0.0f;
    for (int j = 0; j < ns; j++) {
        const float *xs = x + sub * j, *ws = w + sub * j;
        int c0 = sl_round_clamp(s[j] * id, 0, cmax), m0 = sl_round_clamp(m[j] * idmin, 0, cmax);
        int bc = c0, bm = m0, r = ef.refine ? 1 : 0;
        float best = INFINITY;
        for (int dc = -r; dc <= r; dc++) {
            int c = c0 + dc;
            if (c < 0 || c > cmax) continue;
            for (int dmc = -r; dmc <= r; dmc++) {
                int mm = m0 + dmc;
                if (mm < 0 || mm > cmax) continue;
                float e = affine_err(xs, ws, sub, nmax, d * (float)c, dmin * (float)mm, NULL);
                if (e < best) { best = e; bc = c; bm = mm; }
            }
        }
        sc[j] = (uint8_t)bc;
        mc[j] = (uint8_t)bm;
        affine_err(xs, ws, sub, nmax, d * (float)bc, dmin * (float)bm, L + sub * j);
    }
}

/* Steps 2-5 for the symmetric types (x ~ d*sc*L). Codes in [cmin, cmax]
 * with cmin = -cmax - 1; levels in [-nmax, nmax - 1]. */
static void sym_superblock(const float *x, int ns, int sub, int nmax, int cmax, k_effort ef,
                           uint16_t *dh, int8_t *sc, int8_t *L)
{
    float w[SL_QK_K], s[16];
    sl_k_weights(x, ns * sub, w);
    float amax = 0.0f, vmax = 0.0f;
    for (int j = 0; j < ns; j++) {
        s[j] = sl_fit_sym(x + sub * j, w + sub * j, sub, nmax, ef.ntry, L + sub * j);
        if (fabsf(s[j]) > amax) { amax = fabsf(s[j]); vmax = s[j]; }
    }
    /* The scale of largest magnitude gets the code -(cmax + 1), the one
     * extra level on the negative side. */
    *dh = sl_f32_to_fp16(vmax / (float)(-(cmax + 1)));
    float d = sl_h2f(*dh);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < ns; j++) {
        const float *xs = x + sub * j, *ws = w + sub * j;
        int c0 = sl_round_clamp(s[j] * id, -cmax - 1, cmax), bc = c0, r = ef.refine ? 1 : 0;
        float best = INFINITY;
        for (int dc = -r; dc <= r; dc++) {
            int c = c0 + dc;
            if (c < -cmax - 1 || c > cmax) continue;
            float e = sym_err(xs, ws, sub, nmax, d * (float)c, NULL);
            if (e < best) { best = e; bc = c; }
        }
        sc[j] = (int8_t)bc;
        sym_err(xs, ws, sub, nmax, d * (float)bc, L + sub * j);
    }
}

static void q2_K_rows(const float *src, void *dst, int64_t n, k_effort ef)
{
    sl_block_q2_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        uint8_t L[SL_QK_K], sc[16], mc[16];
        affine_superblock(src, 16, 16, 3, 15, ef, &b->d, &b->dmin, sc, mc, L);
        for (int k = 0; k < 16; k++) b->scales[k] = (uint8_t)(sc[k] | mc[k] << 4);
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *q = L + 128 * h + l;
                b->qs[32 * h + l] = (uint8_t)(q[0] | q[32] << 2 | q[64] << 4 | q[96] << 6);
            }
    }
}

static void q3_K_rows(const float *src, void *dst, int64_t n, k_effort ef)
{
    sl_block_q3_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        int8_t L[SL_QK_K], sc[16];
        sym_superblock(src, 16, 16, 4, 31, ef, &b->d, sc, L);
        uint8_t u[16];
        for (int k = 0; k < 16; k++) u[k] = (uint8_t)(sc[k] + 32);
        for (int k = 0; k < 8; k++) b->scales[k] = (uint8_t)((u[k] & 0x0F) | (u[k + 8] & 0x0F) << 4);
        for (int k = 0; k < 4; k++)
            b->scales[8 + k] = (uint8_t)((u[k] >> 4) | (u[k + 4] >> 4) << 2 |
                                         (u[k + 8] >> 4) << 4 | (u[k + 12] >> 4) << 6);
        memset(b->hmask, 0, sizeof b->hmask);
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                uint8_t q = 0;
                for (int j = 0; j < 4; j++) {
                    int v = L[128 * h + 32 * j + l] + 4; /* 0..7 */
                    q |= (uint8_t)((v & 3) << (2 * j));
                    b->hmask[l] |= (uint8_t)((v >> 2) << (4 * h + j));
                }
                b->qs[32 * h + l] = q;
            }
    }
}

void sl_k_pack_k4_scales(const uint8_t sc[8], const uint8_t mc[8], uint8_t out[12])
{
    for (int k = 0; k < 4; k++) {
        out[k] = (uint8_t)(sc[k] | (sc[k + 4] >> 4) << 6);
        out[k + 4] = (uint8_t)(mc[k] | (mc[k + 4] >> 4) << 6);
        out[k + 8] = (uint8_t)((sc[k + 4] & 0x0F) | (mc[k + 4] & 0x0F) << 4);
    }
}

void sl_k_pack_q4_K(const uint8_t L[256], const uint8_t sc[8], const uint8_t mc[8], void *blk)
{
    sl_block_q4_K *b = blk;
    sl_k_pack_k4_scales(sc, mc, b->scales);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            b->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
}

void sl_k_pack_q5_K(const uint8_t L[256], const uint8_t sc[8], const uint8_t mc[8], void *blk)
{
    sl_block_q5_K *b = blk;
    sl_k_pack_k4_scales(sc, mc, b->scales);
    memset(b->qh, 0, sizeof b->qh);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            uint8_t lo = L[64 * c + l], hi = L[64 * c + 32 + l];
            b->qs[32 * c + l] = (uint8_t)((lo & 0x0F) | (hi & 0x0F) << 4);
            b->qh[l] |= (uint8_t)((lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
        }
}

void sl_k_pack_q6_K(const int8_t L[256], const int8_t sc[16], void *blk)
{
    sl_block_q6_K *b = blk;
    memcpy(b->scales, sc, 16);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const int8_t *q = L + 128 * h + l;
            int q0 = q[0] + 32, q1 = q[32] + 32, q2 = q[64] + 32, q3 = q[96] + 32;
            b->ql[64 * h + l] = (uint8_t)((q0 & 0x0F) | (q2 & 0x0F) << 4);
            b->ql[64 * h + l + 32] = (uint8_t)((q1 & 0x0F) | (q3 & 0x0F) << 4);
            b->qh[32 * h + l] =
                (uint8_t)((q0 >> 4) | (q1 >> 4) << 2 | (q2 >> 4) << 4 | (q3 >> 4) << 6);
        }
}

static void q4_K_rows(const float *src, void *dst, int64_t n, k_effort ef)
{
    sl_block_q4_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        uint8_t L[SL_QK_K], sc[8], mc[8];
        affine_superblock(src, 8, 32, 15, 63, ef, &b->d, &b->dmin, sc, mc, L);
        sl_k_pack_q4_K(L, sc, mc, b);
    }
}

static void q5_K_rows(const float *src, void *dst, int64_t n, k_effort ef)
{
    sl_block_q5_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        uint8_t L[SL_QK_K], sc[8], mc[8];
        affine_superblock(src, 8, 32, 31, 63, ef, &b->d, &b->dmin, sc, mc, L);
        sl_k_pack_q5_K(L, sc, mc, b);
    }
}

static void q6_K_rows(const float *src, void *dst, int64_t n, k_effort ef)
{
    sl_block_q6_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        int8_t L[SL_QK_K], sc[16];
        sym_superblock(src, 16, 16, 32, 127, ef, &b->d, sc, L);
        sl_k_pack_q6_K(L, sc, b);
    }
}

#define K_ENTRY(t)                                                                 \
    void sl_quant_##t(const float *src, void *dst, int64_t n)                      \
    {                                                                              \
        t##_rows(src, dst, n, k_full);                                             \
    }                                                                              \
    void sl_quant_##t##_fast(const float *src, void *dst, int64_t n)               \
    {                                                                              \
        t##_rows(src, dst, n, k_fast);                                             \
    }

/* Q4_K, Q5_K and Q6_K have their own bulk quantisers (quant_fast.c), so
 * only the full effort is exported for them. */
#define K_ENTRY_FULL(t)                                                            \
    void sl_quant_##t(const float *src, void *dst, int64_t n)                      \
    {                                                                              \
        t##_rows(src, dst, n, k_full);                                             \
    }

K_ENTRY(q2_K)
K_ENTRY(q3_K)
K_ENTRY_FULL(q4_K)
K_ENTRY_FULL(q5_K)
K_ENTRY_FULL(q6_K)
