/* vec_dot_rp32x8_ref.c - the eight-row interleaved (x8) layout of Q4_0 /
 * IQ4_NL / MXFP4 matrices (vec_dot_rp.h): rewriting rows into it, reading
 * one row back out, and the scalar kernel over it, which gives the bits of
 * the rp32 kernels on the plain layout (per (row, token) the same exact
 * block sums and the same fmaf chain). The AVX2 twin is
 * vec_dot_rp32x8_avx2.c, the NEON ones vec_dot_rp32_neon*.c; the
 * dispatch between the sets lives here.
 * Must not know: threads, matrices beyond their bytes, which CPU. */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"
#include "quant/quant_neon.h"
#include "quant/vec_dot_rp.h"

/* bytes of one row's block, and of its scale (the part before the nibbles) */
static size_t blk_bytes(sl_type type)
{
    return type == SL_TYPE_MXFP4 ? sizeof(sl_block_mxfp4) : sizeof(sl_block_q4_0);
}

static size_t scale_bytes(sl_type type) { return type == SL_TYPE_MXFP4 ? 1 : 2; }

bool sl_rp32_x8_applies(sl_type type, int64_t rows)
{
    return (type == SL_TYPE_Q4_0 || type == SL_TYPE_IQ4_NL || type == SL_TYPE_MXFP4) &&
           rows > 0 && rows % 8 == 0;
}

/* x8 block from the eight plain blocks src[r] (row r's block) */
static void pack_block(size_t sb, const uint8_t *const src[8], uint8_t *dst)
{
    for (int r = 0; r < 8; r++) memcpy(dst + (size_t)r * sb, src[r], sb);
    uint8_t *q = dst + 8 * sb;
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 8; r++) memcpy(q + 32 * c + 4 * r, src[r] + sb + 4 * c, 4);
}

void sl_rp32_x8_interleave(sl_type type, void *data, int64_t rows, int64_t cols,
                           size_t row_bytes, void *tmp)
{
    const size_t bb = blk_bytes(type), sb = scale_bytes(type);
    const int64_t nb = cols / SL_QK;
    uint8_t *g = data;
    for (int64_t r0 = 0; r0 + 8 <= rows; r0 += 8, g += 8 * row_bytes) {
        memcpy(tmp, g, 8 * row_bytes);
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *src[8];
            for (int r = 0; r < 8; r++)
                src[r] = (const uint8_t *)tmp + (size_t)r * row_bytes + (size_t)i * bb;
            pack_block(sb, src, g + (size_t)i * 8 * bb);
        }
    }
}

void sl_rp32_x8_row(sl_type type, const void *data, int64_t r, int64_t c0, int64_t nc,
                    size_t row_bytes, void *out)
{
    const size_t bb = blk_bytes(type), sb = scale_bytes(type);
    const uint8_t *g = (const uint8_t *)data + (size_t)(r / 8) * 8 * row_bytes;
    const size_t k = (size_t)(r % 8);
    uint8_t *o = out;
    for (int64_t i = c0 / SL_QK; i < (c0 + nc) / SL_QK; i++, o += bb) {
        const uint8_t *p = g + (size_t)i * 8 * bb;
        memcpy(o, p + k * sb, sb);
        for (int c = 0; c < 4; c++) memcpy(o + sb + 4 * c, p + 8 * sb + 32 * c + 4 * k, 4);
    }
}

/* level of nibble v of `type` (Q4_0: v - 8; the others their tables) */
static int level(sl_type type, int v)
{
    if (type == SL_TYPE_Q4_0) return v - 8;
    return type == SL_TYPE_IQ4_NL ? sl_iq4nl_values[v] : sl_mxfp4_values[v];
}

static float scale_at(sl_type type, const uint8_t *p)
{
    if (type == SL_TYPE_MXFP4) return sl_e8m0_half(p[0]);
    uint16_t h;
    memcpy(&h, p, 2);
    return sl_h2f(h);
}

static void x8(sl_type type, int64_t n, float *s, const void *vx, const void *const *ys, int nt)
{
    const size_t bb = blk_bytes(type), sb = scale_bytes(type);
    float acc[8 * SL_VEC_DOT_ROWS8_MAX] = {0};
    for (int64_t i = 0; i < n / SL_QK; i++) {
        const uint8_t *p = (const uint8_t *)vx + (size_t)i * 8 * bb;
        const uint8_t *q = p + 8 * sb;
        for (int r = 0; r < 8; r++) {
            int8_t v[SL_QK];
            for (int c = 0; c < 4; c++)
                for (int j = 0; j < 4; j++) {
                    const uint8_t byte = q[32 * c + 4 * r + j];
                    v[4 * c + j] = (int8_t)level(type, byte & 0x0F);
                    v[16 + 4 * c + j] = (int8_t)level(type, byte >> 4);
                }
            const float dx = scale_at(type, p + (size_t)r * sb);
            for (int t = 0; t < nt; t++) {
                const sl_block_q8_0 *y = (const sl_block_q8_0 *)ys[t] + i;
                int I = 0;
                for (int j = 0; j < SL_QK; j++) I += v[j] * y->qs[j];
                acc[8 * t + r] = fmaf((float)I, dx * sl_h2f(y->d), acc[8 * t + r]);
            }
        }
    }
    memcpy(s, acc, sizeof(float) * 8 * (size_t)nt);
}

static void x8_q4_0(int64_t n, float *s, const void *x, size_t rb, const void *const *ys, int nt)
{
    (void)rb;
    x8(SL_TYPE_Q4_0, n, s, x, ys, nt);
}

static void x8_iq4_nl(int64_t n, float *s, const void *x, size_t rb, const void *const *ys, int nt)
{
    (void)rb;
    x8(SL_TYPE_IQ4_NL, n, s, x, ys, nt);
}

static void x8_mxfp4(int64_t n, float *s, const void *x, size_t rb, const void *const *ys, int nt)
{
    (void)rb;
    x8(SL_TYPE_MXFP4, n, s, x, ys, nt);
}

sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp_ref(sl_type type)
{
    switch (type) {
    case SL_TYPE_Q4_0: return x8_q4_0;
    case SL_TYPE_IQ4_NL: return x8_iq4_nl;
    case SL_TYPE_MXFP4: return x8_mxfp4;
    default: return NULL;
    }
}

sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp_isa(sl_type type, sl_isa isa)
{
    if (isa == SL_ISA_SCALAR) return sl_vec_dot_x8_b32_rp_ref(type);
    /* the AVX2 set exists exactly where the plain-layout rp32 one does */
    if (isa == SL_ISA_AVX2 && sl_vec_dot_rows8_b32_rp_isa(type, SL_ISA_AVX2))
        return sl_vec_dot_x8_b32_rp_avx2(type);
    sl_rp32_neon k;
    if (isa == SL_ISA_NEON && sl_quant_vec_dot_isa((uint32_t)type, SL_ISA_NEON) &&
        sl_rp32_neon_get(type, sl_quant_neon_dotprod(), &k))
        return k.x8;
    return NULL;
}

sl_vec_dot_rows8_fn sl_vec_dot_x8_b32_rp(sl_type type)
{
    sl_vec_dot_rows8_fn f = sl_vec_dot_x8_b32_rp_isa(type, sl_quant_isa());
    return f ? f : sl_vec_dot_x8_b32_rp_ref(type);
}

sl_vec_dot_x8s_fn sl_vec_dot_x8s_b32_rp(sl_type type)
{
    /* only the AVX2 set sums the activations per group (the scalar twin
     * and NEON fold the offset otherwise) */
    if (sl_quant_isa() != SL_ISA_AVX2 || !sl_vec_dot_x8_b32_rp_isa(type, SL_ISA_AVX2)) return NULL;
    return sl_vec_dot_x8s_b32_rp_avx2(type);
}

void sl_rp32_x8_offset_sums(sl_type type, int64_t n, const void *y, int32_t *out)
{
    const int32_t off = type == SL_TYPE_Q4_0 ? 8 : type == SL_TYPE_MXFP4 ? 12 : 0;
    const sl_block_q8_0 *b = y;
    for (int64_t i = 0; i < n / SL_QK; i++) {
        int32_t sum = 0;
        for (int j = 0; j < SL_QK; j++) sum += b[i].qs[j];
        out[i] = off * sum;
    }
}
