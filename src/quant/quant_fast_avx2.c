/* quant_fast_avx2.c - AVX2 twins of the fast quantisers (quant_fast.c).
 *
 * Owns: the vector form of quant_fast.c's algorithm, producing IDENTICAL
 * bytes. Element work keeps lane u = element u of each 8-float vector, with
 * per-lane sums in element order as the scalar's partial arrays; the
 * per-group sums are then folded by a transposed reduction whose lane j is
 * group j's tree8 (see red8 below), so the per-group arithmetic (least
 * squares, codes, inverse scales) runs vertically, one group per lane,
 * with the same operations in the same order as the scalar loop. Multiply
 * and add are separate intrinsics (never fused); min/max are the SSE ones
 * the scalar imitates; every level is clamped in float, then rounded to
 * nearest-even (vcvtps2dq, as sl_round_clamp). Levels that enter sums are
 * converted int -> float (the scalar's (float)int: never -0).
 * Must not know: files, models, which CPU we run on (quant.c checks). */
#include <math.h>

#include "quant/quant_avx2.h"
#include "quant/quant_internal.h"

#ifdef SL_HAVE_AVX2_BUILD

#define GT _CMP_GT_OQ
#define GE _CMP_GE_OQ
#define LE _CMP_LE_OQ
#define LT _CMP_LT_OQ
#define NEQ _CMP_NEQ_UQ

static inline __m256 vclamp(__m256 v, float lo, float hi)
{
    /* max first: NaN in v gives lo, as sl_round_clamp */
    return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
}

/* round(clamp(v)) as a float; the int round trip keeps -0 out */
static inline __m256 vlevel(__m256 v, float lo, float hi)
{
    return _mm256_cvtepi32_ps(_mm256_cvtps_epi32(vclamp(v, lo, hi)));
}

static inline __m256 vabs(__m256 v)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

static inline __m256 lane(__m256 v, int j)
{
    return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(j));
}

static inline __m256 sel(__m256 mask, __m256 if_true, __m256 if_false)
{
    return _mm256_blendv_ps(if_false, if_true, mask);
}

/* Transposed reduction: lane j of the result is tree8 of a[j]'s lanes,
 * ((p0 op p1) op (p2 op p3)) op ((p4 op p5) op (p6 op p7)). Stage 1 pairs
 * neighbours (even op odd), stage 2 pairs those, stage 3 joins the halves. */
#define DEF_RED8(name, op)                                                                 \
    static inline __m256 name(const __m256 *a)                                             \
    {                                                                                      \
        __m256 h[4];                                                                       \
        for (int i = 0; i < 4; i++)                                                        \
            h[i] = op(_mm256_shuffle_ps(a[2 * i], a[2 * i + 1], 0x88),                     \
                      _mm256_shuffle_ps(a[2 * i], a[2 * i + 1], 0xDD));                    \
        __m256 g0 = op(_mm256_shuffle_ps(h[0], h[1], 0x88), _mm256_shuffle_ps(h[0], h[1], 0xDD)); \
        __m256 g1 = op(_mm256_shuffle_ps(h[2], h[3], 0x88), _mm256_shuffle_ps(h[2], h[3], 0xDD)); \
        return op(_mm256_permute2f128_ps(g0, g1, 0x20), _mm256_permute2f128_ps(g0, g1, 0x31)); \
    }

/* tree8 of one vector's lanes: swap neighbours, swap pairs, join halves */
#define DEF_TREE1(name, op, op128)                                                         \
    static inline float name(__m256 v)                                                     \
    {                                                                                      \
        __m256 h = op(v, _mm256_permute_ps(v, 0xB1));                                      \
        __m256 g = op(h, _mm256_permute_ps(h, 0x4E));                                      \
        return _mm_cvtss_f32(op128(_mm256_castps256_ps128(g), _mm256_extractf128_ps(g, 1))); \
    }

DEF_RED8(red8_add, _mm256_add_ps)
DEF_RED8(red8_min, _mm256_min_ps)
DEF_RED8(red8_max, _mm256_max_ps)
DEF_TREE1(tree1_add, _mm256_add_ps, _mm_add_ss)
DEF_TREE1(tree1_min, _mm256_min_ps, _mm_min_ss)
DEF_TREE1(tree1_max, _mm256_max_ps, _mm_max_ss)

static float sb_rms(const float *x)
{
    __m256 a[4];
    for (int k = 0; k < 4; k++) {
        __m256 v = _mm256_loadu_ps(x + 8 * k);
        a[k] = _mm256_mul_ps(v, v);
    }
    for (int i = 32; i < SL_QK_K; i += 32)
        for (int k = 0; k < 4; k++) {
            __m256 v = _mm256_loadu_ps(x + i + 8 * k);
            a[k] = _mm256_add_ps(a[k], _mm256_mul_ps(v, v));
        }
    __m256 r = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
    return sqrtf(tree1_add(r) / 256.0f);
}

static inline void store_codes(__m256 c, uint8_t out[8])
{
    int32_t t[8];
    _mm256_storeu_si256((__m256i *)t, _mm256_cvtps_epi32(c));
    for (int j = 0; j < 8; j++) out[j] = (uint8_t)t[j];
}

/* ---- Q4_K / Q5_K -------------------------------------------------------- */

/* av: sb_rms(x), computed by the caller one super-block ahead so that its
 * latency (a chain of adds, a divide, a square root) overlaps the previous
 * super-block's work instead of stalling this one. */
static void affine_sb(const float *x, float av_s, int nmax, uint16_t *dh, uint16_t *dminh,
                      uint8_t sc[8], uint8_t mc[8], uint8_t L[SL_QK_K])
{
    const __m256 zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
    const __m256 av = _mm256_set1_ps(av_s);
    const float fnmax = (float)nmax;
    const __m256 fn = _mm256_set1_ps(fnmax);
    __m256 asw[8], asx[8], amn[8], amx[8];
    for (int j = 0; j < 8; j++) {
        const float *g = x + 32 * j;
        __m256 v = _mm256_loadu_ps(g);
        __m256 w = _mm256_add_ps(av, vabs(v));
        __m256 sw = w, sx = _mm256_mul_ps(w, v), mnv = v, mxv = v;
        for (int k = 8; k < 32; k += 8) {
            v = _mm256_loadu_ps(g + k);
            w = _mm256_add_ps(av, vabs(v));
            sw = _mm256_add_ps(sw, w);
            sx = _mm256_add_ps(sx, _mm256_mul_ps(w, v));
            mnv = _mm256_min_ps(mnv, v);
            mxv = _mm256_max_ps(mxv, v);
        }
        asw[j] = sw, asx[j] = sx, amn[j] = mnv, amx[j] = mxv;
    }
    const __m256 SW = red8_add(asw), SX = red8_add(asx);
    const __m256 LO = _mm256_min_ps(red8_min(amn), zero), HI = _mm256_max_ps(red8_max(amx), zero);
    const __m256 RANGE = _mm256_sub_ps(HI, LO), IS = _mm256_div_ps(fn, RANGE);

    __m256 asl[8], asl2[8], asxl[8];
    for (int j = 0; j < 8; j++) {
        const float *g = x + 32 * j;
        const __m256 lo = lane(LO, j), is = lane(IS, j);
        __m256 sl = zero, sl2 = zero, sxl = zero;
        for (int k = 0; k < 32; k += 8) {
            __m256 v = _mm256_loadu_ps(g + k);
            __m256 w = _mm256_add_ps(av, vabs(v));
            __m256 wx = _mm256_mul_ps(w, v);
            __m256 l = vlevel(_mm256_mul_ps(is, _mm256_sub_ps(v, lo)), 0.0f, fnmax);
            __m256 wl = _mm256_mul_ps(w, l);
            __m256 wl2 = _mm256_mul_ps(wl, l);
            __m256 wxl = _mm256_mul_ps(wx, l);
            if (k == 0) {
                sl = wl, sl2 = wl2, sxl = wxl;
            } else {
                sl = _mm256_add_ps(sl, wl);
                sl2 = _mm256_add_ps(sl2, wl2);
                sxl = _mm256_add_ps(sxl, wxl);
            }
        }
        asl[j] = sl, asl2[j] = sl2, asxl[j] = sxl;
    }
    const __m256 SL = red8_add(asl), SL2 = red8_add(asl2), SXL = red8_add(asxl);

    /* least squares, one group per lane (quant_fast.c affine_sb) */
    __m256 det = _mm256_sub_ps(_mm256_mul_ps(SW, SL2), _mm256_mul_ps(SL, SL));
    __m256 num_s = _mm256_sub_ps(_mm256_mul_ps(SW, SXL), _mm256_mul_ps(SX, SL));
    __m256 num_b = _mm256_sub_ps(_mm256_mul_ps(SL2, SX), _mm256_mul_ps(SL, SXL));
    __m256 dpos = _mm256_cmp_ps(det, zero, GT);
    __m256 s = sel(dpos, _mm256_div_ps(num_s, det), zero);
    __m256 b = sel(dpos, _mm256_div_ps(num_b, det), _mm256_div_ps(SX, SW));
    __m256 bpos = _mm256_cmp_ps(b, zero, GT);
    __m256 s_b0 = sel(_mm256_cmp_ps(SL2, zero, GT), _mm256_div_ps(SXL, SL2), zero);
    s = sel(bpos, s_b0, s);
    b = sel(bpos, zero, b);
    __m256 ok = _mm256_and_ps(_mm256_cmp_ps(s, zero, GE), _mm256_cmp_ps(b, zero, LE));
    s = sel(ok, s, _mm256_div_ps(RANGE, fn));
    b = sel(ok, b, LO);
    __m256 live = _mm256_cmp_ps(HI, LO, GT);
    s = sel(live, s, zero);
    b = sel(live, b, LO);
    const __m256 M = _mm256_xor_ps(b, sign);

    *dh = sl_f32_to_fp16(tree1_max(_mm256_max_ps(s, zero)) / 63.0f);
    *dminh = sl_f32_to_fp16(tree1_max(_mm256_max_ps(M, zero)) / 63.0f);
    float d = sl_h2f(*dh), dmin = sl_h2f(*dminh);
    float id = d > 0.0f ? 1.0f / d : 0.0f, idmin = dmin > 0.0f ? 1.0f / dmin : 0.0f;
    __m256 C = vlevel(_mm256_mul_ps(s, _mm256_set1_ps(id)), 0.0f, 63.0f);
    __m256 MC = vlevel(_mm256_mul_ps(M, _mm256_set1_ps(idmin)), 0.0f, 63.0f);
    store_codes(C, sc);
    store_codes(MC, mc);
    __m256 DS = _mm256_mul_ps(_mm256_set1_ps(d), C), DM = _mm256_mul_ps(_mm256_set1_ps(dmin), MC);
    __m256 IDS = sel(_mm256_cmp_ps(DS, zero, GT), _mm256_div_ps(_mm256_set1_ps(1.0f), DS), zero);
    for (int j = 0; j < 8; j++) {
        const float *g = x + 32 * j;
        const __m256 dm = lane(DM, j), ids = lane(IDS, j);
        __m256 t[4];
        for (int k = 0; k < 4; k++)
            t[k] = vclamp(_mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(g + 8 * k), dm), ids), 0.0f,
                          fnmax);
        _mm256_storeu_si256((__m256i *)(L + 32 * j), sl_avx2_pack_i8(t[0], t[1], t[2], t[3]));
    }
}

static void q4_K_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q4_K *b = dst;
    const int64_t nb = n / SL_QK_K;
    float av = nb ? sb_rms(src) : 0.0f;
    for (int64_t i = 0; i < nb; i++, b++, src += SL_QK_K) {
        uint8_t L[SL_QK_K], sc[8], mc[8];
        float av_next = i + 1 < nb ? sb_rms(src + SL_QK_K) : 0.0f;
        affine_sb(src, av, 15, &b->d, &b->dmin, sc, mc, L);
        av = av_next;
        sl_k_pack_k4_scales(sc, mc, b->scales);
        for (int c = 0; c < 4; c++) {
            __m256i lo = sl_avx2_load256(L + 64 * c), hi = sl_avx2_load256(L + 64 * c + 32);
            _mm256_storeu_si256((__m256i *)(b->qs + 32 * c),
                                _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)));
        }
    }
}

static void q5_K_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q5_K *b = dst;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m1 = _mm256_set1_epi8(1);
    const int64_t nb = n / SL_QK_K;
    float av = nb ? sb_rms(src) : 0.0f;
    for (int64_t i = 0; i < nb; i++, b++, src += SL_QK_K) {
        uint8_t L[SL_QK_K], sc[8], mc[8];
        float av_next = i + 1 < nb ? sb_rms(src + SL_QK_K) : 0.0f;
        affine_sb(src, av, 31, &b->d, &b->dmin, sc, mc, L);
        av = av_next;
        sl_k_pack_k4_scales(sc, mc, b->scales);
        __m256i qh = _mm256_setzero_si256();
        /* bit 2c of qh[l]: bit 4 of level 64c + l; bit 2c + 1: of 64c + 32 + l */
#define Q5_CHUNK(c)                                                                        \
    do {                                                                                   \
        __m256i lo = sl_avx2_load256(L + 64 * (c)), hi = sl_avx2_load256(L + 64 * (c) + 32); \
        _mm256_storeu_si256((__m256i *)(b->qs + 32 * (c)),                                 \
                            _mm256_or_si256(_mm256_and_si256(lo, m4),                      \
                                            _mm256_slli_epi16(_mm256_and_si256(hi, m4), 4))); \
        __m256i blo = _mm256_and_si256(_mm256_srli_epi16(lo, 4), m1);                      \
        __m256i bhi = _mm256_and_si256(_mm256_srli_epi16(hi, 4), m1);                      \
        qh = _mm256_or_si256(qh, _mm256_slli_epi16(blo, 2 * (c)));                         \
        qh = _mm256_or_si256(qh, _mm256_slli_epi16(bhi, 2 * (c) + 1));                     \
    } while (0)
        Q5_CHUNK(0);
        Q5_CHUNK(1);
        Q5_CHUNK(2);
        Q5_CHUNK(3);
#undef Q5_CHUNK
        _mm256_storeu_si256((__m256i *)b->qh, qh);
    }
}

/* ---- Q6_K ------------------------------------------------------------------ */

/* value of largest magnitude per lane (ties: the positive one) */
static inline __m256 signed_amax(__m256 lo, __m256 hi)
{
    __m256 nlo = _mm256_xor_ps(lo, _mm256_set1_ps(-0.0f));
    return sel(_mm256_cmp_ps(hi, nlo, GE), hi, lo);
}

/* Scales of the eight 16-element groups at x (quant_fast.c q6_group_scale
 * with one group per lane). */
static __m256 q6_scales8(const float *x, __m256 av)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256 amn[8], amx[8];
    for (int j = 0; j < 8; j++) {
        __m256 v0 = _mm256_loadu_ps(x + 16 * j), v1 = _mm256_loadu_ps(x + 16 * j + 8);
        amn[j] = _mm256_min_ps(v0, v1);
        amx[j] = _mm256_max_ps(v0, v1);
    }
    const __m256 VM = signed_amax(red8_min(amn), red8_max(amx));
    const __m256 IS = _mm256_div_ps(_mm256_set1_ps(-32.0f), VM);
    __m256 axl[8], all[8];
    for (int j = 0; j < 8; j++) {
        const __m256 is = lane(IS, j);
        __m256 sxl = zero, sll = zero;
        for (int k = 0; k < 16; k += 8) {
            __m256 v = _mm256_loadu_ps(x + 16 * j + k);
            __m256 w = _mm256_add_ps(av, vabs(v));
            __m256 wx = _mm256_mul_ps(w, v);
            __m256 l = vlevel(_mm256_mul_ps(is, v), -32.0f, 31.0f);
            __m256 wxl = _mm256_mul_ps(wx, l);
            __m256 wl = _mm256_mul_ps(w, l);
            __m256 wll = _mm256_mul_ps(wl, l);
            if (k == 0) {
                sxl = wxl, sll = wll;
            } else {
                sxl = _mm256_add_ps(sxl, wxl);
                sll = _mm256_add_ps(sll, wll);
            }
        }
        axl[j] = sxl, all[j] = sll;
    }
    const __m256 SXL = red8_add(axl), SLL = red8_add(all);
    __m256 s = sel(_mm256_cmp_ps(SLL, zero, GT), _mm256_div_ps(SXL, SLL), zero);
    return sel(_mm256_cmp_ps(vabs(VM), zero, GT), s, zero);
}

static void q6_K_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q6_K *b = dst;
    const __m256 zero = _mm256_setzero_ps();
    const __m256i off = _mm256_set1_epi8(32), m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    const int64_t nb = n / SL_QK_K;
    float av_s = nb ? sb_rms(src) : 0.0f; /* one super-block ahead, see affine_sb */
    for (int64_t i = 0; i < nb; i++, b++, src += SL_QK_K) {
        const float *x = src;
        const __m256 av = _mm256_set1_ps(av_s);
        av_s = i + 1 < nb ? sb_rms(src + SL_QK_K) : 0.0f;
        const __m256 SA = q6_scales8(x, av), SB = q6_scales8(x + 128, av);
        __m256 pp = _mm256_max_ps(_mm256_max_ps(SA, zero), _mm256_max_ps(SB, zero));
        __m256 pn = _mm256_min_ps(_mm256_min_ps(SA, zero), _mm256_min_ps(SB, zero));
        float smin = tree1_min(pn), smax = tree1_max(pp);
        float nsmin = -smin;
        float vm = smax >= nsmin ? smax : smin;
        b->d = sl_f32_to_fp16(vm / -128.0f);
        float d = sl_h2f(b->d);
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        const __m256 vd = _mm256_set1_ps(d), vid = _mm256_set1_ps(id), one = _mm256_set1_ps(1.0f);
        int8_t L[SL_QK_K];
        for (int h = 0; h < 2; h++) {
            __m256 C = vlevel(_mm256_mul_ps(h ? SB : SA, vid), -128.0f, 127.0f);
            int32_t ci[8];
            _mm256_storeu_si256((__m256i *)ci, _mm256_cvtps_epi32(C));
            for (int j = 0; j < 8; j++) b->scales[8 * h + j] = (int8_t)ci[j];
            __m256 DS = _mm256_mul_ps(vd, C);
            __m256 IDS = sel(_mm256_cmp_ps(DS, zero, NEQ), _mm256_div_ps(one, DS), zero);
            for (int j = 0; j < 8; j += 2) {
                const float *g = x + 128 * h + 16 * j;
                __m256 i0 = lane(IDS, j), i1 = lane(IDS, j + 1);
                __m256 t0 = vclamp(_mm256_mul_ps(_mm256_loadu_ps(g), i0), -32.0f, 31.0f);
                __m256 t1 = vclamp(_mm256_mul_ps(_mm256_loadu_ps(g + 8), i0), -32.0f, 31.0f);
                __m256 t2 = vclamp(_mm256_mul_ps(_mm256_loadu_ps(g + 16), i1), -32.0f, 31.0f);
                __m256 t3 = vclamp(_mm256_mul_ps(_mm256_loadu_ps(g + 24), i1), -32.0f, 31.0f);
                _mm256_storeu_si256((__m256i *)(L + 128 * h + 16 * j),
                                    sl_avx2_pack_i8(t0, t1, t2, t3));
            }
        }
        for (int h = 0; h < 2; h++) {
            __m256i q0 = _mm256_add_epi8(sl_avx2_load256(L + 128 * h), off);
            __m256i q1 = _mm256_add_epi8(sl_avx2_load256(L + 128 * h + 32), off);
            __m256i q2 = _mm256_add_epi8(sl_avx2_load256(L + 128 * h + 64), off);
            __m256i q3 = _mm256_add_epi8(sl_avx2_load256(L + 128 * h + 96), off);
            _mm256_storeu_si256((__m256i *)(b->ql + 64 * h),
                                _mm256_or_si256(_mm256_and_si256(q0, m4),
                                                _mm256_slli_epi16(_mm256_and_si256(q2, m4), 4)));
            _mm256_storeu_si256((__m256i *)(b->ql + 64 * h + 32),
                                _mm256_or_si256(_mm256_and_si256(q1, m4),
                                                _mm256_slli_epi16(_mm256_and_si256(q3, m4), 4)));
            __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(q0, 4), m3);
            __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(q1, 4), m3);
            __m256i h2 = _mm256_and_si256(_mm256_srli_epi16(q2, 4), m3);
            __m256i h3 = _mm256_and_si256(_mm256_srli_epi16(q3, 4), m3);
            __m256i qh = _mm256_or_si256(_mm256_or_si256(h0, _mm256_slli_epi16(h1, 2)),
                                         _mm256_or_si256(_mm256_slli_epi16(h2, 4),
                                                         _mm256_slli_epi16(h3, 6)));
            _mm256_storeu_si256((__m256i *)(b->qh + 32 * h), qh);
        }
    }
}

/* ---- Q4_0 ------------------------------------------------------------------ */

/* Eight consecutive blocks (256 values), one block per lane for the
 * per-block arithmetic. */
static void q4_0_x8(const float *x, sl_block_q4_0 *b)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256 amn[8], amx[8];
    for (int j = 0; j < 8; j++) {
        const float *g = x + 32 * j;
        __m256 mnv = _mm256_loadu_ps(g), mxv = mnv;
        for (int k = 8; k < 32; k += 8) {
            __m256 v = _mm256_loadu_ps(g + k);
            mnv = _mm256_min_ps(mnv, v);
            mxv = _mm256_max_ps(mxv, v);
        }
        amn[j] = mnv, amx[j] = mxv;
    }
    const __m256 VM = signed_amax(red8_min(amn), red8_max(amx));
    const __m256 IS = _mm256_div_ps(_mm256_set1_ps(-8.0f), VM);
    __m256 axl[8], all[8];
    for (int j = 0; j < 8; j++) {
        const float *g = x + 32 * j;
        const __m256 is = lane(IS, j);
        __m256 sxl = zero, sll = zero;
        for (int k = 0; k < 32; k += 8) {
            __m256 v = _mm256_loadu_ps(g + k);
            __m256 l = vlevel(_mm256_mul_ps(is, v), -8.0f, 7.0f);
            __m256 xl = _mm256_mul_ps(v, l), ll = _mm256_mul_ps(l, l);
            if (k == 0) {
                sxl = xl, sll = ll;
            } else {
                sxl = _mm256_add_ps(sxl, xl);
                sll = _mm256_add_ps(sll, ll);
            }
        }
        axl[j] = sxl, all[j] = sll;
    }
    const __m256 SXL = red8_add(axl), SLL = red8_add(all);
    __m256 s = sel(_mm256_cmp_ps(SLL, zero, GT), _mm256_div_ps(SXL, SLL), zero);
    s = sel(_mm256_cmp_ps(vabs(VM), zero, GT), s, zero);
    s = sel(_mm256_cmp_ps(s, s, _CMP_ORD_Q), s, zero);
    /* f16 by F16C: the bits of sl_f32_to_fp16 (see f16_fast) */
    __m128i dh = _mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT);
    __m256 D = _mm256_cvtph_ps(dh);
    __m256 finite = _mm256_cmp_ps(vabs(D), _mm256_set1_ps(INFINITY), LT);
    __m256 use = _mm256_and_ps(_mm256_cmp_ps(D, zero, NEQ), finite);
    __m256 ID = sel(use, _mm256_div_ps(_mm256_set1_ps(1.0f), D), zero);
    uint16_t dv[8];
    _mm_storeu_si128((__m128i *)dv, dh);
    const __m256i eight = _mm256_set1_epi8(8);
    for (int j = 0; j < 8; j++) {
        const float *g = x + 32 * j;
        const __m256 id = lane(ID, j);
        __m256 t[4];
        for (int k = 0; k < 4; k++) t[k] = vclamp(_mm256_mul_ps(_mm256_loadu_ps(g + 8 * k), id), -8.0f, 7.0f);
        __m256i q = _mm256_add_epi8(sl_avx2_pack_i8(t[0], t[1], t[2], t[3]), eight);
        __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
        b[j].d = dv[j];
        _mm_storeu_si128((__m128i *)b[j].qs, _mm_or_si128(lo, _mm_slli_epi16(hi, 4)));
    }
}

static void q4_0_fast(const float *src, void *dst, int64_t n)
{
    sl_block_q4_0 *b = dst;
    int64_t nb = n / SL_QK, i = 0;
    for (; i + 8 <= nb; i += 8) q4_0_x8(src + SL_QK * i, b + i);
    if (i < nb) {
        /* blocks are independent: pad the last few with zeros */
        float pad[8 * SL_QK] = {0};
        sl_block_q4_0 out[8];
        memcpy(pad, src + SL_QK * i, sizeof(float) * SL_QK * (size_t)(nb - i));
        q4_0_x8(pad, out);
        memcpy(b + i, out, sizeof out[0] * (size_t)(nb - i));
    }
}

/* ---- F16 ------------------------------------------------------------------- */

/* F16C with round to nearest even gives sl_f32_to_fp16's bits for every
 * input: overflow to inf, subnormal results rounded exactly, NaN quieted
 * with the top payload bits kept. */
static void f16_fast(const float *src, void *dst, int64_t n)
{
    uint16_t *h = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) h[i] = sl_f32_to_fp16(src[i]);
}

bool sl_quant_fast_fill_avx2(sl_quant_kernels *k)
{
    k->quantize_fast[SL_TYPE_F16] = f16_fast;
    k->quantize_fast[SL_TYPE_Q4_0] = q4_0_fast;
    k->quantize_fast[SL_TYPE_Q4_K] = q4_K_fast;
    k->quantize_fast[SL_TYPE_Q5_K] = q5_K_fast;
    k->quantize_fast[SL_TYPE_Q6_K] = q6_K_fast;
    return true;
}

#else

bool sl_quant_fast_fill_avx2(sl_quant_kernels *k)
{
    (void)k;
    return false;
}

#endif
