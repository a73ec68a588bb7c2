/* quant_fast.c - the fast quantisers behind sl_quantize_fast (scalar twins).
 *
 * Owns: the algorithm of the bulk quantisers a model writer uses for Q4_K,
 * Q5_K, Q6_K and Q4_0, written so that an 8-lane vector version
 * (quant_fast_avx2.c) can follow it operation for operation and produce
 * IDENTICAL bytes. Every float sum has a fixed layout: "lane u" below is
 * element u of an 8-float vector, partial sums are kept per lane in element
 * order, then folded with tree8 = ((p0 op p1) op (p2 op p3)) op ((p4 op p5)
 * op (p6 op p7)), the order of the vector code's transposed reductions.
 * Products are rounded before they are added (no fused multiply-add: the
 * portable build has none, and every product here is its own statement).
 * min/max follow the SSE rule (a < b ? a : b), so NaN and -0 resolve alike.
 *
 * Method (one candidate scale, then the stored-scale levels):
 *   K types: w = rms(super-block) + |x| (importance weights).
 *   Q4_K/Q5_K, per 32-element group: [lo, hi] = [min(x, 0), max(x, 0)];
 *     levels l = round(nmax / (hi - lo) * (x - lo)) clamped to [0, nmax];
 *     weighted least squares x ~ s * l + b for that l (b <= 0, s >= 0; a
 *     solution outside that falls back to s = range / nmax, b = lo); then
 *     d = max s / 63 and dmin = max(-b) / 63 as f16, 6-bit codes by
 *     rounding, levels re-derived against the stored d * code.
 *   Q6_K, per 16-element group: v = the value of largest magnitude (ties:
 *     the positive one); l = round(-32 / v * x) in [-32, 31]; s = weighted
 *     least squares for that l; d = (s of largest magnitude) / -128 as f16,
 *     8-bit codes by rounding, levels against the stored d * code.
 *   Q4_0, per 32-element block: like Q6_K with nmax 8, unit weights, the
 *     scale stored directly as f16.
 *   F16: the plain conversion (round to nearest even), listed here so the
 *     AVX2 set can use F16C for it.
 * Compared with the full-effort quantisers (quant_k_quantize.c) this drops
 * the candidate search and the code +-1 refinement and evaluates no error;
 * test_quant_roundtrip bounds its error against a textbook quantiser.
 * Must not know: files, models, which CPU we run on (quant.c picks). */
#include <math.h>

#include "quant/quant_internal.h"

static inline float mn(float a, float b)
{
    return a < b ? a : b;
}

static inline float mx(float a, float b)
{
    return a > b ? a : b;
}

static float tree8_add(const float p[8])
{
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

static float tree8_min(const float p[8])
{
    return mn(mn(mn(p[0], p[1]), mn(p[2], p[3])), mn(mn(p[4], p[5]), mn(p[6], p[7])));
}

static float tree8_max(const float p[8])
{
    return mx(mx(mx(p[0], p[1]), mx(p[2], p[3])), mx(mx(p[4], p[5]), mx(p[6], p[7])));
}

/* rms of a 256-element super-block: element i is summed into partial i % 32
 * (four vectors of lanes), the four folded as (a + b) + (c + d), then tree8. */
static float sb_rms(const float *x)
{
    float p[32];
    for (int u = 0; u < 32; u++) p[u] = x[u] * x[u];
    for (int i = 32; i < SL_QK_K; i += 32)
        for (int u = 0; u < 32; u++) {
            float q = x[i + u] * x[i + u];
            p[u] = p[u] + q;
        }
    float r[8];
    for (int u = 0; u < 8; u++) r[u] = (p[u] + p[u + 8]) + (p[u + 16] + p[u + 24]);
    return sqrtf(tree8_add(r) / 256.0f);
}

/* ---- Q4_K / Q5_K -------------------------------------------------------- */

/* One super-block: 8 groups of 32, levels in [0, nmax], codes in [0, 63]. */
static void affine_sb(const float *x, int nmax, uint16_t *dh, uint16_t *dminh, uint8_t sc[8],
                      uint8_t mc[8], uint8_t L[SL_QK_K])
{
    const float av = sb_rms(x);
    const float fn = (float)nmax;
    float S[8], M[8];
    for (int j = 0; j < 8; j++) {
        const float *g = x + 32 * j;
        float psw[8], psx[8], pmn[8], pmx[8];
        for (int k = 0; k < 32; k += 8)
            for (int u = 0; u < 8; u++) {
                float v = g[k + u];
                float w = av + fabsf(v);
                float wx = w * v;
                if (k == 0) {
                    psw[u] = w, psx[u] = wx, pmn[u] = v, pmx[u] = v;
                } else {
                    psw[u] = psw[u] + w;
                    psx[u] = psx[u] + wx;
                    pmn[u] = mn(pmn[u], v);
                    pmx[u] = mx(pmx[u], v);
                }
            }
        float sw = tree8_add(psw), sx = tree8_add(psx);
        float lo = mn(tree8_min(pmn), 0.0f), hi = mx(tree8_max(pmx), 0.0f);
        float range = hi - lo;
        float is = fn / range;
        float psl[8], psl2[8], psxl[8];
        for (int k = 0; k < 32; k += 8)
            for (int u = 0; u < 8; u++) {
                float v = g[k + u];
                float w = av + fabsf(v);
                float wx = w * v;
                float t = v - lo;
                t = is * t;
                float l = (float)sl_round_clamp(t, 0, nmax);
                float wl = w * l;
                float wl2 = wl * l;
                float wxl = wx * l;
                if (k == 0) {
                    psl[u] = wl, psl2[u] = wl2, psxl[u] = wxl;
                } else {
                    psl[u] = psl[u] + wl;
                    psl2[u] = psl2[u] + wl2;
                    psxl[u] = psxl[u] + wxl;
                }
            }
        float sl = tree8_add(psl), sl2 = tree8_add(psl2), sxl = tree8_add(psxl);
        /* least squares for x ~ s * l + b */
        float a1 = sw * sl2, a2 = sl * sl;
        float det = a1 - a2;
        float n1 = sw * sxl, n2 = sx * sl;
        float m1 = sl2 * sx, m2 = sl * sxl;
        float s = det > 0.0f ? (n1 - n2) / det : 0.0f;
        float b = det > 0.0f ? (m1 - m2) / det : sx / sw;
        if (b > 0.0f) { /* the format stores b <= 0 */
            b = 0.0f;
            s = sl2 > 0.0f ? sxl / sl2 : 0.0f;
        }
        if (!(s >= 0.0f && b <= 0.0f)) { /* inverted levels or NaN: the plain grid */
            s = range / fn;
            b = lo;
        }
        if (!(hi > lo)) { /* constant zero group */
            s = 0.0f;
            b = lo;
        }
        S[j] = s;
        M[j] = -b;
    }
    float ps[8], pm[8];
    for (int j = 0; j < 8; j++) {
        ps[j] = mx(S[j], 0.0f);
        pm[j] = mx(M[j], 0.0f);
    }
    *dh = sl_f32_to_fp16(tree8_max(ps) / 63.0f);
    *dminh = sl_f32_to_fp16(tree8_max(pm) / 63.0f);
    float d = sl_h2f(*dh), dmin = sl_h2f(*dminh);
    float id = d > 0.0f ? 1.0f / d : 0.0f, idmin = dmin > 0.0f ? 1.0f / dmin : 0.0f;
    for (int j = 0; j < 8; j++) {
        int c = sl_round_clamp(S[j] * id, 0, 63), m = sl_round_clamp(M[j] * idmin, 0, 63);
        sc[j] = (uint8_t)c;
        mc[j] = (uint8_t)m;
        float ds = d * (float)c, dm = dmin * (float)m;
        float ids = ds > 0.0f ? 1.0f / ds : 0.0f;
        for (int i = 0; i < 32; i++) {
            float t = x[32 * j + i] + dm;
            L[32 * j + i] = (uint8_t)sl_round_clamp(t * ids, 0, nmax);
        }
    }
}

static void q4_K_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q4_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        uint8_t L[SL_QK_K], sc[8], mc[8];
        affine_sb(src, 15, &b->d, &b->dmin, sc, mc, L);
        sl_k_pack_q4_K(L, sc, mc, b);
    }
}

static void q5_K_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q5_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        uint8_t L[SL_QK_K], sc[8], mc[8];
        affine_sb(src, 31, &b->d, &b->dmin, sc, mc, L);
        sl_k_pack_q5_K(L, sc, mc, b);
    }
}

/* ---- Q6_K and Q4_0 (symmetric) ------------------------------------------ */

/* The value of largest magnitude from the group's min and max (ties: the
 * positive one). */
static inline float signed_amax(float lo, float hi)
{
    float nlo = -lo;
    return hi >= nlo ? hi : lo;
}

/* One 16-element Q6_K group (two vectors of lanes): the least-squares scale
 * of its levels l = round(-32 / v * x); av is the weights' rms part. */
static float q6_group_scale(const float *g, float av)
{
    float pmn[8], pmx[8];
    for (int u = 0; u < 8; u++) {
        pmn[u] = mn(g[u], g[8 + u]);
        pmx[u] = mx(g[u], g[8 + u]);
    }
    float vm = signed_amax(tree8_min(pmn), tree8_max(pmx));
    float is = -32.0f / vm;
    float pxl[8], pll[8];
    for (int k = 0; k < 16; k += 8)
        for (int u = 0; u < 8; u++) {
            float v = g[k + u];
            float w = av + fabsf(v);
            float wx = w * v;
            float l = (float)sl_round_clamp(is * v, -32, 31);
            float wxl = wx * l;
            float wl = w * l;
            float wll = wl * l;
            if (k == 0) {
                pxl[u] = wxl, pll[u] = wll;
            } else {
                pxl[u] = pxl[u] + wxl;
                pll[u] = pll[u] + wll;
            }
        }
    float sxl = tree8_add(pxl), sll = tree8_add(pll);
    float s = sll > 0.0f ? sxl / sll : 0.0f;
    return fabsf(vm) > 0.0f ? s : 0.0f;
}

static void q6_K_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q6_K *b = dst;
    for (int64_t i = 0; i < n / SL_QK_K; i++, b++, src += SL_QK_K) {
        const float *x = src;
        const float av = sb_rms(x);
        float S[16];
        for (int j = 0; j < 16; j++) S[j] = q6_group_scale(x + 16 * j, av);
        /* lanes u and u + 8 folded first (groups 0-7 and 8-15 are two
         * vectors), zero folded in so no -0 or NaN reaches the trees */
        float pp[8], pn[8];
        for (int u = 0; u < 8; u++) {
            pp[u] = mx(mx(S[u], 0.0f), mx(S[u + 8], 0.0f));
            pn[u] = mn(mn(S[u], 0.0f), mn(S[u + 8], 0.0f));
        }
        float vm = signed_amax(tree8_min(pn), tree8_max(pp));
        b->d = sl_f32_to_fp16(vm / -128.0f);
        float d = sl_h2f(b->d);
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        int8_t L[SL_QK_K], sc[16];
        for (int j = 0; j < 16; j++) {
            int c = sl_round_clamp(S[j] * id, -128, 127);
            sc[j] = (int8_t)c;
            float ds = d * (float)c;
            float ids = ds != 0.0f ? 1.0f / ds : 0.0f;
            for (int k = 0; k < 16; k++)
                L[16 * j + k] = (int8_t)sl_round_clamp(x[16 * j + k] * ids, -32, 31);
        }
        sl_k_pack_q6_K(L, sc, b);
    }
}

static void q4_0_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, src += SL_QK) {
        const float *x = src;
        float pmn[8], pmx[8];
        for (int k = 0; k < 32; k += 8)
            for (int u = 0; u < 8; u++) {
                float v = x[k + u];
                pmn[u] = k ? mn(pmn[u], v) : v;
                pmx[u] = k ? mx(pmx[u], v) : v;
            }
        float vm = signed_amax(tree8_min(pmn), tree8_max(pmx));
        float is = -8.0f / vm;
        float pxl[8], pll[8];
        for (int k = 0; k < 32; k += 8)
            for (int u = 0; u < 8; u++) {
                float v = x[k + u];
                float l = (float)sl_round_clamp(is * v, -8, 7);
                float xl = v * l;
                float ll = l * l;
                pxl[u] = k ? pxl[u] + xl : xl;
                pll[u] = k ? pll[u] + ll : ll;
            }
        float sxl = tree8_add(pxl), sll = tree8_add(pll);
        float s = sll > 0.0f ? sxl / sll : 0.0f;
        /* s == s: a NaN (from NaN input) would reach the stored scale with
         * a payload that depends on operand order; store 0 instead */
        if (!(fabsf(vm) > 0.0f) || !(s == s)) s = 0.0f;
        b->d = sl_f32_to_fp16(s);
        float d = sl_h2f(b->d);
        float id = d != 0.0f && fabsf(d) < INFINITY ? 1.0f / d : 0.0f;
        uint8_t q[SL_QK];
        for (int j = 0; j < SL_QK; j++) q[j] = (uint8_t)(sl_round_clamp(x[j] * id, -8, 7) + 8);
        for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
    }
}

void sl_quant_fast_fill_ref(sl_quant_kernels *k)
{
    k->quantize_fast[SL_TYPE_F16] = sl_f16_from_float_row;
    k->quantize_fast[SL_TYPE_Q4_0] = q4_0_fast;
    k->quantize_fast[SL_TYPE_Q4_K] = q4_K_fast;
    k->quantize_fast[SL_TYPE_Q5_K] = q5_K_fast;
    k->quantize_fast[SL_TYPE_Q6_K] = q6_K_fast;
    k->quantize_fast[SL_TYPE_Q8_0] = sl_quant_q8_0_weights; /* every ISA: scalar */
}
