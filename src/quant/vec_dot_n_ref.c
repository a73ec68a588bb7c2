/* vec_dot_n_ref.c - scalar multi-token dot kernels: one weight row against
 * up to SL_VEC_DOT_N_MAX activation rows (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * IQ4_NL, MXFP4 x Q8_0; Q2_K .. Q6_K, IQ4_XS x Q8_K).
 *
 * Owns: the blocking of vec_dot_legacy_ref.c, vec_dot_k_ref.c and
 * vec_dot_iq_ref.c over tokens. A weight block is unpacked into int8
 * levels (and its scales decoded) once, then each token's sums are taken
 * exactly as the single
 * kernel takes them: the same integer sums, the same float expression per
 * block, accumulated in the same block order, so s[t] has the single
 * kernel's bits. Keep each per-token expression written as in the single
 * kernel (float contraction is decided per expression).
 * Must not know: instruction sets, threads, matrices. */
#include <math.h>

#include "quant/quant_internal.h"
#include "quant/quant_neon.h"
#include "quant/vec_dot_k_lanes.h"
#include "quant/vec_dot_rp.h"
#include "util/hsum.h"

#define NMAX SL_VEC_DOT_N_MAX

static inline int dot_i8(const int8_t *q, const int8_t *a, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) s += q[i] * a[i];
    return s;
}

/* ---- 32-element types against Q8_0 ------------------------------------ */

/* The scalar Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 kernels accumulate in the AVX2
 * kernels' lanes (vec_dot_legacy_ref.c); their multi-token forms run those
 * token by token, so the two are bit-identical by construction. Filled
 * from the single-token table in sl_vec_dot_n_fill_ref. */
static sl_vec_dot_fn legacy_one[SL_TYPE_COUNT];

#define LEGACY_N(name, type)                                                                   \
    static void name(int64_t n, float *s, const void *vx, const void *const *ys, int nt)      \
    {                                                                                          \
        for (int t = 0; t < nt; t++) legacy_one[type](n, &s[t], vx, ys[t]);                   \
    }
LEGACY_N(vec_dot_n_q8_0, SL_TYPE_Q8_0)
LEGACY_N(vec_dot_n_q4_0, SL_TYPE_Q4_0)
LEGACY_N(vec_dot_n_q5_0, SL_TYPE_Q5_0)
LEGACY_N(vec_dot_n_q4_1, SL_TYPE_Q4_1)
LEGACY_N(vec_dot_n_q5_1, SL_TYPE_Q5_1)
#undef LEGACY_N

static inline void lookup32(const int8_t table[16], const uint8_t qs[16], int8_t v[32])
{
    for (int j = 0; j < 16; j++) {
        v[j] = table[qs[j] & 0x0F];
        v[j + 16] = table[qs[j] >> 4];
    }
}

/* IQ4_NL / MXFP4: the single kernels (vec_dot_iq_ref.c, lanes in the AVX2
 * order) token by token, so s[t] has their bits by construction */
static void vec_dot_n_iq4_nl(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    for (int t = 0; t < nt; t++) legacy_one[SL_TYPE_IQ4_NL](n, &s[t], vx, ys[t]);
}

static void vec_dot_n_mxfp4(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    for (int t = 0; t < nt; t++) legacy_one[SL_TYPE_MXFP4](n, &s[t], vx, ys[t]);
}

/* ---- K-quants against Q8_K -------------------------------------------- */

static void vec_dot_n_q2_K(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q2_K *x = vx;
    float acc[NMAX][8] = {{0}};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16], mn[16];
        for (int k = 0; k < 16; k++) {
            sc[k] = x[i].scales[k] & 0x0F;
            mn[k] = x[i].scales[k] >> 4;
        }
        sl_k_levels_q2_K(&x[i], q);
        const float xd = sl_h2f(x[i].d), xdmin = sl_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++)
            sl_k_step_q2_K(q, sc, mn, xd, xdmin, (const sl_block_q8_K *)ys[t] + i, acc[t]);
    }
    for (int t = 0; t < nt; t++) s[t] = sl_k_hsum8(acc[t]);
}

static void vec_dot_n_q3_K(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q3_K *x = vx;
    float acc[NMAX][8] = {{0}};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        sl_k_scales_q3_K(x[i].scales, sc);
        sl_k_levels_q3_K(&x[i], q);
        const float xd = sl_h2f(x[i].d);
        for (int t = 0; t < nt; t++)
            sl_k_step_q3_K(q, sc, xd, (const sl_block_q8_K *)ys[t] + i, acc[t]);
    }
    for (int t = 0; t < nt; t++) s[t] = sl_k_hsum8(acc[t]);
}

static inline void k4_decode_scales(const uint8_t scales[12], uint8_t sc[8], uint8_t m[8])
{
    for (int k = 0; k < 8; k++) sl_k4_scale_min(scales, k, &sc[k], &m[k]);
}

static void vec_dot_n_q4_K(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q4_K *x = vx;
    float acc[NMAX][8] = {{0}}, accm[NMAX][4] = {{0}};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        sl_k_levels_q4_K(&x[i], q);
        const float xd = sl_h2f(x[i].d), xdmin = sl_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++)
            sl_k_step_q4_K(q, sc, m, xd, xdmin, (const sl_block_q8_K *)ys[t] + i, acc[t], accm[t]);
    }
    for (int t = 0; t < nt; t++) s[t] = sl_k_hsum8(acc[t]) + sl_k_hsum4(accm[t]);
}

/* Q4_K in the reference's repacked orders (vec_dot_rp.h): per 64-element
 * chunk c (gemm order) or per super-block (gemv order) the exact integer
 * sums I (levels) and J (offsets), two fmaf chains. The AVX2 twins give the
 * same bits: integers are exact and fmaf rounds once, as the FMA
 * instruction does. */
static inline void q4k_rp(int64_t n, float *s, const void *vx, const void *const *ys, int nt,
                          int per_chunk)
{
    const sl_block_q4_K *x = vx;
    float A[NMAX] = {0}, M[NMAX] = {0};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                q[64 * c + l] = (int8_t)(x[i].qs[32 * c + l] & 0x0F);
                q[64 * c + 32 + l] = (int8_t)(x[i].qs[32 * c + l] >> 4);
            }
        uint8_t sc[8], m[8];
        k4_decode_scales(x[i].scales, sc, m);
        const float xd = sl_h2f(x[i].d), xdmin = sl_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            const float pd = xd * y->d, pm = xdmin * y->d;
            int I = 0, J = 0;
            for (int c = 0; c < 4; c++) {
                for (int k = 2 * c; k < 2 * c + 2; k++) {
                    I += sc[k] * dot_i8(q + 32 * k, y->qs + 32 * k, 32);
                    J += m[k] * (y->bsums[2 * k] + y->bsums[2 * k + 1]);
                }
                if (per_chunk) {
                    A[t] = fmaf((float)I, pd, A[t]);
                    M[t] = fmaf((float)J, pm, M[t]);
                    I = J = 0;
                }
            }
            if (!per_chunk) {
                A[t] = fmaf((float)I, pd, A[t]);
                M[t] = fmaf((float)J, pm, M[t]);
            }
        }
    }
    for (int t = 0; t < nt; t++) s[t] = A[t] - M[t];
}

static void vec_dot_n_q4_K_rp64(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    q4k_rp(n, s, vx, ys, nt, 1);
}

static void vec_dot_n_q4_K_rp256(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    q4k_rp(n, s, vx, ys, nt, 0);
}

sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp_ref(sl_rp_order order)
{
    return order == SL_RP_GEMM ? vec_dot_n_q4_K_rp64 : vec_dot_n_q4_K_rp256;
}

static void rows8(int64_t n, float *s, const void *x, size_t row_bytes, const void *const *ys,
                  int nt, int per_chunk)
{
    float v[NMAX];
    for (int r = 0; r < 8; r++) {
        q4k_rp(n, v, (const uint8_t *)x + (size_t)r * row_bytes, ys, nt, per_chunk);
        for (int t = 0; t < nt; t++) s[8 * t + r] = v[t];
    }
}

static void rows8_q4_K_rp64(int64_t n, float *s, const void *x, size_t row_bytes,
                            const void *const *ys, int nt)
{
    rows8(n, s, x, row_bytes, ys, nt, 1);
}

static void rows8_q4_K_rp256(int64_t n, float *s, const void *x, size_t row_bytes,
                             const void *const *ys, int nt)
{
    rows8(n, s, x, row_bytes, ys, nt, 0);
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_q4_K_rp_isa(sl_rp_order order, sl_isa isa)
{
    if (isa == SL_ISA_SCALAR) return order == SL_RP_GEMM ? rows8_q4_K_rp64 : rows8_q4_K_rp256;
    if (isa == SL_ISA_AVX2 && sl_quant_vec_dot_isa(SL_TYPE_Q4_K, SL_ISA_AVX2))
        return sl_vec_dot_rows8_q4_K_rp_avx2(order);
    sl_rp32_neon k; /* the NEON set: the SDOT form when it was chosen with it */
    if (isa == SL_ISA_NEON && sl_quant_vec_dot_isa(SL_TYPE_Q4_K, SL_ISA_NEON) &&
        sl_rp_q4k_neon_get(order, sl_quant_neon_dotprod(), &k))
        return k.rows8;
    return NULL;
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_q4_K_rp(sl_rp_order order)
{
    sl_vec_dot_rows8_fn f = sl_vec_dot_rows8_q4_K_rp_isa(order, sl_quant_isa());
    return f ? f : sl_vec_dot_rows8_q4_K_rp_isa(order, SL_ISA_SCALAR);
}

sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp_isa(sl_rp_order order, sl_isa isa)
{
    if (isa == SL_ISA_SCALAR) return sl_vec_dot_n_q4_K_rp_ref(order);
    /* the AVX2 set exists and runs here exactly when its Q4_K kernel does */
    if (isa == SL_ISA_AVX2 && sl_quant_vec_dot_isa(SL_TYPE_Q4_K, SL_ISA_AVX2))
        return sl_vec_dot_n_q4_K_rp_avx2(order);
    sl_rp32_neon k;
    if (isa == SL_ISA_NEON && sl_quant_vec_dot_isa(SL_TYPE_Q4_K, SL_ISA_NEON) &&
        sl_rp_q4k_neon_get(order, sl_quant_neon_dotprod(), &k))
        return k.n;
    return NULL;
}

sl_vec_dot_n_fn sl_vec_dot_n_q4_K_rp(sl_rp_order order)
{
    sl_vec_dot_n_fn f = sl_vec_dot_n_q4_K_rp_isa(order, sl_quant_isa());
    return f ? f : sl_vec_dot_n_q4_K_rp_ref(order);
}

static void vec_dot_n_q5_K(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q5_K *x = vx;
    float acc[NMAX][8] = {{0}}, summs[NMAX] = {0};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[8], m[8];
        sl_k_scales_q4_K(x[i].scales, sc, m);
        sl_k_levels_q5_K(&x[i], q);
        const float xd = sl_h2f(x[i].d), xdmin = sl_h2f(x[i].dmin);
        for (int t = 0; t < nt; t++)
            sl_k_step_q5_K(q, sc, m, xd, xdmin, (const sl_block_q8_K *)ys[t] + i, acc[t],
                           &summs[t]);
    }
    for (int t = 0; t < nt; t++) s[t] = sl_k_hsum8(acc[t]) + summs[t];
}

static void vec_dot_n_q6_K(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_q6_K *x = vx;
    float acc[NMAX][8] = {{0}};
    int8_t q[SL_QK_K];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        int sc[16];
        for (int k = 0; k < 16; k++) sc[k] = x[i].scales[k];
        sl_k_levels_q6_K(&x[i], q);
        const float xd = sl_h2f(x[i].d);
        for (int t = 0; t < nt; t++)
            sl_k_step_q6_K(q, sc, xd, (const sl_block_q8_K *)ys[t] + i, acc[t]);
    }
    for (int t = 0; t < nt; t++) s[t] = sl_k_hsum8(acc[t]);
}

static void vec_dot_n_iq4_xs(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const sl_block_iq4_xs *x = vx;
    float lane[NMAX][8] = {{0}};
    int8_t v[SL_QK_K];
    int ls[8];
    for (int64_t i = 0; i < n / SL_QK_K; i++) {
        for (int k = 0; k < 8; k++) {
            ls[k] = ((x[i].scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) |
                    ((x[i].scales_h >> (2 * k)) & 3) << 4;
            lookup32(sl_iq4nl_values, x[i].qs + 16 * k, v + 32 * k);
        }
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_K *y = (const sl_block_q8_K *)ys[t] + i;
            for (int l = 0; l < 8; l++) {
                int sumi = 0;
                for (int k = 0; k < 8; k++)
                    sumi += (ls[k] - 32) * dot_i8(v + 32 * k + 4 * l, y->qs + 32 * k + 4 * l, 4);
                lane[t][l] = fmaf(sl_h2f(x[i].d) * y->d, (float)sumi, lane[t][l]);
            }
        }
    }
    for (int t = 0; t < nt; t++) s[t] = sl_hsum8(lane[t]);
}

void sl_vec_dot_n_fill_ref(sl_quant_kernels *k)
{
    static const sl_type legacy[] = {SL_TYPE_Q4_0, SL_TYPE_Q4_1, SL_TYPE_Q5_0, SL_TYPE_Q5_1,
                                     SL_TYPE_Q8_0, SL_TYPE_IQ4_NL, SL_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        legacy_one[legacy[i]] = k->vec_dot[legacy[i]]; /* filled before (quant.c) */
    k->vec_dot_n[SL_TYPE_Q4_0] = vec_dot_n_q4_0;
    k->vec_dot_n[SL_TYPE_Q8_0] = vec_dot_n_q8_0;
    k->vec_dot_n[SL_TYPE_IQ4_NL] = vec_dot_n_iq4_nl;
    k->vec_dot_n[SL_TYPE_MXFP4] = vec_dot_n_mxfp4;
    k->vec_dot_n[SL_TYPE_IQ4_XS] = vec_dot_n_iq4_xs;
    k->vec_dot_n[SL_TYPE_Q5_0] = vec_dot_n_q5_0;
    /* Q4_1 / Q5_1 pair with Q8_1 now: their multi-token kernels are set by
     * vec_dot_legacy_*.c; these Q8_0 forms are out of the table */
    (void)vec_dot_n_q4_1;
    (void)vec_dot_n_q5_1;
    k->vec_dot_n[SL_TYPE_Q4_K] = vec_dot_n_q4_K;
    k->vec_dot_n[SL_TYPE_Q5_K] = vec_dot_n_q5_K;
    k->vec_dot_n[SL_TYPE_Q6_K] = vec_dot_n_q6_K;
    k->vec_dot_n[SL_TYPE_Q2_K] = vec_dot_n_q2_K;
    k->vec_dot_n[SL_TYPE_Q3_K] = vec_dot_n_q3_K;
    for (int t = 0; t < SL_TYPE_COUNT; t++)
        if (k->vec_dot_n[t]) k->vec_dot_n_max[t] = NMAX;
}
