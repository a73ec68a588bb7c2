/* vec_dot_rp32_ref.c - scalar Q4_0 / IQ4_NL / MXFP4 x Q8_0 kernels in the
 * order of llama.cpp's repacked 8x8 gemm and gemv (vec_dot_rp.h): per
 * (row, token) an exact integer sum per 32-element block and one fmaf per
 * block, in block order. The AVX2 twins (vec_dot_rp32_avx2.c) and the NEON
 * ones (vec_dot_rp32_neon*.c) give the same bits; the dispatch between the
 * sets lives here too.
 * Must not know: threads, matrices, which CPU we run on. */
#include <math.h>

#include "quant/quant_internal.h"
#include "quant/quant_neon.h"
#include "quant/vec_dot_rp.h"

/* The signed levels of block i of a row of `type` and its weight scale. */
static float block_levels(sl_type type, const void *vx, int64_t i, int8_t v[SL_QK])
{
    const uint8_t *qs;
    const int8_t *table;
    float d;
    if (type == SL_TYPE_Q4_0) {
        const sl_block_q4_0 *b = (const sl_block_q4_0 *)vx + i;
        for (int j = 0; j < SL_QK / 2; j++) {
            v[j] = (int8_t)((b->qs[j] & 0x0F) - 8);
            v[j + SL_QK / 2] = (int8_t)((b->qs[j] >> 4) - 8);
        }
        return sl_h2f(b->d);
    }
    if (type == SL_TYPE_IQ4_NL) {
        const sl_block_iq4_nl *b = (const sl_block_iq4_nl *)vx + i;
        qs = b->qs;
        table = sl_iq4nl_values;
        d = sl_h2f(b->d);
    } else {
        const sl_block_mxfp4 *b = (const sl_block_mxfp4 *)vx + i;
        qs = b->qs;
        table = sl_mxfp4_values;
        d = sl_e8m0_half(b->e);
    }
    for (int j = 0; j < SL_QK / 2; j++) {
        v[j] = table[qs[j] & 0x0F];
        v[j + SL_QK / 2] = table[qs[j] >> 4];
    }
    return d;
}

static void rp32(sl_type type, int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    float acc[SL_VEC_DOT_RP_MAX] = {0};
    int8_t v[SL_QK];
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const float dx = block_levels(type, vx, i, v);
        for (int t = 0; t < nt; t++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
            int I = 0;
            for (int j = 0; j < SL_QK; j++) I += v[j] * y->qs[j];
            acc[t] = fmaf((float)I, dx * sl_h2f(y->d), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = acc[t];
}

static void rp32_q4_0(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    rp32(SL_TYPE_Q4_0, n, s, vx, ys, nt);
}

static void rp32_iq4_nl(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    rp32(SL_TYPE_IQ4_NL, n, s, vx, ys, nt);
}

static void rp32_mxfp4(int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    rp32(SL_TYPE_MXFP4, n, s, vx, ys, nt);
}

static void rows8(sl_type type, int64_t n, float *s, const void *x, size_t row_bytes,
                  const void *const *ys, int nt)
{
    float v[SL_VEC_DOT_ROWS8_MAX];
    for (int r = 0; r < 8; r++) {
        rp32(type, n, v, (const uint8_t *)x + (size_t)r * row_bytes, ys, nt);
        for (int t = 0; t < nt; t++) s[8 * t + r] = v[t];
    }
}

static void rows8_q4_0(int64_t n, float *s, const void *x, size_t rb, const void *const *ys, int nt)
{
    rows8(SL_TYPE_Q4_0, n, s, x, rb, ys, nt);
}

static void rows8_iq4_nl(int64_t n, float *s, const void *x, size_t rb, const void *const *ys,
                         int nt)
{
    rows8(SL_TYPE_IQ4_NL, n, s, x, rb, ys, nt);
}

static void rows8_mxfp4(int64_t n, float *s, const void *x, size_t rb, const void *const *ys,
                        int nt)
{
    rows8(SL_TYPE_MXFP4, n, s, x, rb, ys, nt);
}

sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_ref(sl_type type)
{
    switch (type) {
    case SL_TYPE_Q4_0: return rp32_q4_0;
    case SL_TYPE_IQ4_NL: return rp32_iq4_nl;
    case SL_TYPE_MXFP4: return rp32_mxfp4;
    default: return NULL;
    }
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_ref(sl_type type)
{
    switch (type) {
    case SL_TYPE_Q4_0: return rows8_q4_0;
    case SL_TYPE_IQ4_NL: return rows8_iq4_nl;
    case SL_TYPE_MXFP4: return rows8_mxfp4;
    default: return NULL;
    }
}

/* the AVX2 set exists and runs here exactly when the type's plain AVX2
 * kernel does */
static bool avx2_runs(sl_type type)
{
    return sl_quant_vec_dot_isa((uint32_t)type, SL_ISA_AVX2) != NULL;
}

/* the NEON kernels of type when the NEON set runs here (the SDOT forms when
 * the set was chosen with them); false otherwise */
static bool neon_kernels(sl_type type, sl_rp32_neon *k)
{
    return sl_quant_vec_dot_isa((uint32_t)type, SL_ISA_NEON) != NULL &&
           sl_rp32_neon_get(type, sl_quant_neon_dotprod(), k);
}

sl_vec_dot_n_fn sl_vec_dot_n_b32_rp_isa(sl_type type, sl_isa isa)
{
    sl_rp32_neon k;
    if (isa == SL_ISA_NEON) return neon_kernels(type, &k) ? k.n : NULL;
    if (isa == SL_ISA_SCALAR) return sl_vec_dot_n_b32_rp_ref(type);
    if (isa == SL_ISA_AVX2 && sl_vec_dot_n_b32_rp_ref(type) && avx2_runs(type))
        return sl_vec_dot_n_b32_rp_avx2(type);
    return NULL;
}

sl_vec_dot_n_fn sl_vec_dot_n_b32_rp(sl_type type)
{
    sl_vec_dot_n_fn f = sl_vec_dot_n_b32_rp_isa(type, sl_quant_isa());
    return f ? f : sl_vec_dot_n_b32_rp_ref(type);
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp_isa(sl_type type, sl_isa isa)
{
    sl_rp32_neon k;
    if (isa == SL_ISA_NEON) return neon_kernels(type, &k) ? k.rows8 : NULL;
    if (isa == SL_ISA_SCALAR) return sl_vec_dot_rows8_b32_rp_ref(type);
    if (isa == SL_ISA_AVX2 && sl_vec_dot_rows8_b32_rp_ref(type) && avx2_runs(type))
        return sl_vec_dot_rows8_b32_rp_avx2(type);
    return NULL;
}

sl_vec_dot_rows8_fn sl_vec_dot_rows8_b32_rp(sl_type type)
{
    sl_vec_dot_rows8_fn f = sl_vec_dot_rows8_b32_rp_isa(type, sl_quant_isa());
    return f ? f : sl_vec_dot_rows8_b32_rp_ref(type);
}
