/* test_vecdot_rp32.c - the Q4_0 / IQ4_NL / MXFP4 kernels in the order of
 * llama.cpp's repacked 8x8 gemm and gemv (quant/vec_dot_rp.h) and the rule
 * that picks them (ops/matmul_order.h, ops/matmul.c).
 *
 * Oracle: the formula of vec_dot_rp.h written out here from the block
 * layouts (Q4_0 / IQ4_NL: f16 d then 16 bytes of nibbles, element j in the
 * low nibble of byte j, element j + 16 in its high nibble; MXFP4: an E8M0
 * exponent byte then the same nibbles; Q8_0: f16 d, 32 levels) with this
 * file's own tables: per block the exact integer sum I, then
 * acc = fmaf(I, dx * dy, acc) in block order. Every kernel set must give
 * its bits exactly (memcmp) for every token count, on random bytes, on
 * quantised Gaussian rows, zeros, the largest and subnormal scales; the
 * eight-row kernels likewise with a row stride wider than a row. A hand
 * built row checks the formula's value itself, the order is shown to
 * differ from the plain kernels', and sl_matmul_rows is checked to take
 * it for the matrices the reference repacks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rand_blocks.h"
#include "ops/matmul_order.h"
#include "ops/ops.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"
#include "test.h"
#include "util/status.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd32(void) { return t_rng_u32(&g_rng); }
static float grand(void) { return t_rng_gauss(&g_rng); }

static const sl_type types[3] = {SL_TYPE_Q4_0, SL_TYPE_IQ4_NL, SL_TYPE_MXFP4};
static const char *const names[3] = {"q4_0", "iq4_nl", "mxfp4"};

/* IQ4_NL's non-linear levels and MXFP4's E2M1 values doubled (so that they
 * are integers; its scale is then half of 2^(e-127)) */
static const int iq4nl_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};
static const int mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static size_t bbytes(int k) { return k == 2 ? 17 : 18; }

enum { FILL_RANDOM = T_FILL_RANDOM, FILL_GAUSS = T_FILL_GAUSS, FILL_ZERO = T_FILL_ZERO,
       FILL_HUGE_SCALE = T_FILL_HUGE_SCALE, FILL_TINY_SCALE = T_FILL_TINY_SCALE };

/* nb blocks of type k: random bytes with finite scales, a quantised
 * Gaussian row, zeros, the largest or subnormal scales
 * (tests/common/rand_blocks.h) */
static void fill(int k, uint8_t *b, int nb, int mode) { t_fill_rp32(&g_rng, types[k], b, nb, mode); }

static void make_act(sl_block_q8_0 *y, int n, float scale, bool zeros)
{
    t_make_act(&g_rng, SL_TYPE_Q8_0, y, n, scale, zeros);
}

static int level(int k, const uint8_t *p, int j)
{
    const uint8_t q = p[(k == 2 ? 1 : 2) + j % 16];
    const int nib = j < 16 ? (q & 0x0F) : (q >> 4);
    return k == 0 ? nib - 8 : k == 1 ? iq4nl_levels[nib] : mxfp4_levels[nib];
}

static float wscale(int k, const uint8_t *p)
{
    if (k == 2) return ldexpf(1.0f, (int)p[0] - 128);
    uint16_t h;
    memcpy(&h, p, 2);
    return sl_fp16_to_f32(h);
}

static float oracle(int k, const uint8_t *x, const sl_block_q8_0 *y, int nb)
{
    float acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t *p = x + (size_t)i * bbytes(k);
        long long I = 0;
        for (int j = 0; j < SL_QK; j++) I += level(k, p, j) * y[i].qs[j];
        acc = fmaf((float)I, wscale(k, p) * sl_fp16_to_f32(y[i].d), acc);
    }
    return acc;
}

static int check_row(int k, int nb, int mode, float act_scale)
{
    enum { NA = SL_VEC_DOT_RP_MAX + 1 };
    const int n = SL_QK * nb;
    uint8_t *x = malloc(bbytes(k) * (size_t)nb);
    sl_block_q8_0 *y = malloc(sizeof *y * (size_t)nb * NA);
    const void *ys[NA];
    fill(k, x, nb, mode);
    for (int t = 0; t < NA; t++) {
        make_act(y + (size_t)t * nb, n, act_scale * (float)(1 + t % 3), t == 4);
        ys[t] = y + (size_t)t * nb;
    }
    float want[NA];
    for (int t = 0; t < NA; t++) want[t] = oracle(k, x, y + (size_t)t * nb, nb);
    int compared = 0;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        sl_vec_dot_n_fn f = sl_vec_dot_n_b32_rp_isa(types[k], (sl_isa)isa);
        if (!f) continue;
        for (int nt = 1; nt <= SL_VEC_DOT_RP_MAX; nt++)
            for (int off = 0; off + nt <= NA; off += nt) {
                float got[SL_VEC_DOT_RP_MAX];
                f(n, got, x, ys + off, nt);
                for (int t = 0; t < nt; t++) {
                    CHECK_MSG(memcmp(&got[t], &want[off + t], 4) == 0,
                              "%s %s mode %d nb %d nt %d t %d: %.9g, formula %.9g", names[k],
                              sl_isa_name((sl_isa)isa), mode, nb, nt, off + t, (double)got[t],
                              (double)want[off + t]);
                    compared++;
                }
            }
    }
    free(x);
    free(y);
    return compared;
}

TEST(kernels_match_formula)
{
    for (int k = 0; k < 3; k++) {
        int compared = 0;
        for (int rep = 0; rep < 6; rep++) {
            compared += check_row(k, 1 + (int)(rnd32() % 40), FILL_RANDOM, 1.0f);
            compared += check_row(k, 16, FILL_GAUSS, 1.0f);
        }
        compared += check_row(k, 3, FILL_ZERO, 1.0f);
        compared += check_row(k, 5, FILL_HUGE_SCALE, 1e-3f);
        compared += check_row(k, 5, FILL_TINY_SCALE, 1e-20f);
        compared += check_row(k, 7, FILL_RANDOM, 1e4f);
        CHECK_MSG(compared >= 2 * 200, "%s: %d comparisons", names[k], compared);
    }
}

TEST(rows8_match_formula)
{
    enum { NB = 9, STRIDE_B = NB + 2, NA = SL_VEC_DOT_ROWS8_MAX };
    static const int modes[] = {FILL_RANDOM, FILL_GAUSS, FILL_HUGE_SCALE, FILL_TINY_SCALE};
    for (int k = 0; k < 3; k++) {
        int compared = 0;
        const size_t rb = bbytes(k) * STRIDE_B;
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            uint8_t *x = malloc(rb * 8);
            sl_block_q8_0 *y = malloc(sizeof *y * NB * NA);
            const void *ys[NA];
            fill(k, x, STRIDE_B * 8, modes[mi]);
            const float act = modes[mi] == FILL_HUGE_SCALE   ? 1e-3f
                              : modes[mi] == FILL_TINY_SCALE ? 1e-20f
                                                             : 1.0f;
            for (int t = 0; t < NA; t++) {
                make_act(y + (size_t)t * NB, SL_QK * NB, act * (float)(1 + t), t == 2 && mi == 0);
                ys[t] = y + (size_t)t * NB;
            }
            for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
                sl_vec_dot_rows8_fn f = sl_vec_dot_rows8_b32_rp_isa(types[k], (sl_isa)isa);
                if (!f) continue;
                for (int nt = 1; nt <= NA; nt++) {
                    float got[8 * NA];
                    f(SL_QK * NB, got, x, rb, ys, nt);
                    for (int t = 0; t < nt; t++)
                        for (int r = 0; r < 8; r++) {
                            float want = oracle(k, x + (size_t)r * rb, y + (size_t)t * NB, NB);
                            CHECK_MSG(memcmp(&got[8 * t + r], &want, 4) == 0,
                                      "rows8 %s %s mode %d nt %d: row %d token %d %.9g, formula %.9g",
                                      names[k], sl_isa_name((sl_isa)isa), modes[mi], nt, r, t,
                                      (double)got[8 * t + r], (double)want);
                            compared++;
                        }
                }
            }
            free(x);
            free(y);
        }
        CHECK_MSG(compared >= 4 * 80, "%s: %d comparisons", names[k], compared);
    }
}

TEST(sets_present_where_built)
{
    for (int k = 0; k < 3; k++) {
        const bool avx2 = sl_quant_vec_dot_isa(types[k], SL_ISA_AVX2) != NULL;
        CHECK(sl_vec_dot_n_b32_rp_isa(types[k], SL_ISA_SCALAR) != NULL);
        CHECK((sl_vec_dot_n_b32_rp_isa(types[k], SL_ISA_AVX2) != NULL) == avx2);
        CHECK(sl_vec_dot_rows8_b32_rp_isa(types[k], SL_ISA_SCALAR) != NULL);
        CHECK((sl_vec_dot_rows8_b32_rp_isa(types[k], SL_ISA_AVX2) != NULL) == avx2);
        /* NEON: every kernel of the order where the NEON set runs (aarch64) */
        const bool neon = sl_quant_vec_dot_isa(types[k], SL_ISA_NEON) != NULL;
        CHECK((sl_vec_dot_n_b32_rp_isa(types[k], SL_ISA_NEON) != NULL) == neon);
        CHECK((sl_vec_dot_rows8_b32_rp_isa(types[k], SL_ISA_NEON) != NULL) == neon);
        CHECK((sl_vec_dot_x8_b32_rp_isa(types[k], SL_ISA_NEON) != NULL) == neon);
        CHECK(sl_vec_dot_n_b32_rp(types[k]) != NULL);
        CHECK(sl_vec_dot_rows8_b32_rp(types[k]) != NULL);
    }
    /* other types have no such kernel */
    CHECK(sl_vec_dot_n_b32_rp_isa(SL_TYPE_Q8_0, SL_ISA_SCALAR) == NULL);
    CHECK(sl_vec_dot_rows8_b32_rp_isa(SL_TYPE_Q4_K, SL_ISA_AVX2) == NULL);
    CHECK(sl_vec_dot_n_b32_rp_isa(SL_TYPE_Q8_0, SL_ISA_NEON) == NULL);
    CHECK(sl_vec_dot_x8_b32_rp_isa(SL_TYPE_Q4_K, SL_ISA_NEON) == NULL);
}

/* Two Q4_0 blocks: d = 1 and 0.5, every nibble 9 (level 1) in the first,
 * 6 (level -2) in the second; activations all 3 with d = 0.25. Block sums
 * 96 and -192: 96 * 0.25 + (-192) * 0.125 = 24 - 24 = 0. Then an MXFP4
 * block of e = 129 (scale 2^(129-128) = 2) with every nibble 7 (6, doubled:
 * 12), activations 1 with d = 1: 32 * 12 * 2 = 768. */
TEST(hand_built_rows)
{
    uint8_t q[36];
    const uint16_t one = 0x3C00, half = 0x3800;
    memcpy(q, &one, 2);
    memset(q + 2, 0x99, 16);
    memcpy(q + 18, &half, 2);
    memset(q + 20, 0x66, 16);
    sl_block_q8_0 y[2];
    for (int i = 0; i < 2; i++) {
        y[i].d = 0x3400; /* 0.25 */
        memset(y[i].qs, 3, sizeof y[i].qs);
    }
    const void *ys[1] = {y};
    uint8_t m[17];
    m[0] = 129;
    memset(m + 1, 0x77, 16);
    sl_block_q8_0 ym;
    ym.d = 0x3C00;
    memset(ym.qs, 1, sizeof ym.qs);
    const void *yms[1] = {&ym};
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        sl_vec_dot_n_fn f = sl_vec_dot_n_b32_rp_isa(SL_TYPE_Q4_0, (sl_isa)isa);
        sl_vec_dot_n_fn g = sl_vec_dot_n_b32_rp_isa(SL_TYPE_MXFP4, (sl_isa)isa);
        if (!f || !g) continue;
        float s = 1.0f, sm = 0.0f;
        f(2 * SL_QK, &s, q, ys, 1);
        g(SL_QK, &sm, m, yms, 1);
        CHECK_MSG(s == 0.0f, "%s q4_0: %.9g, want 0", sl_isa_name((sl_isa)isa), (double)s);
        CHECK_MSG(sm == 768.0f, "%s mxfp4: %.9g, want 768", sl_isa_name((sl_isa)isa), (double)sm);
    }
}

/* The repacked order and the plain kernel are different functions of the
 * same bytes (else the bit tests could not tell them apart): on Gaussian
 * rows of 32 blocks they disagree somewhere, and agree to rounding. */
TEST(order_differs_from_plain)
{
    enum { NB = 32, ROWS = 64 };
    for (int k = 0; k < 3; k++) {
        uint8_t *x = malloc(bbytes(k) * NB * ROWS);
        sl_block_q8_0 y[NB];
        fill(k, x, NB * ROWS, FILL_GAUSS);
        make_act(y, SL_QK * NB, 1.0f, false);
        const void *ys[1] = {y};
        int differ = 0;
        for (int r = 0; r < ROWS; r++) {
            float a, c;
            const uint8_t *row = x + (size_t)r * NB * bbytes(k);
            sl_vec_dot_n_b32_rp(types[k])(SL_QK * NB, &a, row, ys, 1);
            sl_type_get(types[k])->vec_dot(SL_QK * NB, &c, row, y);
            differ += a != c;
            CHECK_MSG(fabsf(a - c) <= 1e-4f * (fabsf(c) + 1.0f), "%s row %d: %g vs %g", names[k], r,
                      (double)a, (double)c);
        }
        CHECK_MSG(differ > 0, "%s: the orders never differ", names[k]);
        free(x);
    }
}

TEST(order_rule)
{
    for (int k = 0; k < 3; k++) {
        CHECK(sl_mm_order_for(types[k], 256, 0) == SL_MM_RP_B32);  /* MUL_MAT, 2-d */
        CHECK(sl_mm_order_for(types[k], 8, 0) == SL_MM_RP_B32);
        CHECK(sl_mm_order_for(types[k], 256, 32) == SL_MM_RP_B32); /* MUL_MAT_ID, 3-d */
        CHECK(sl_mm_order_for(types[k], 256, 1) == SL_MM_PLAIN);   /* n_dims 2 in ggml */
        CHECK(sl_mm_order_for(types[k], 256, SL_MM_BATCHED_3D) == SL_MM_PLAIN); /* 3-d MUL_MAT */
        CHECK(sl_mm_order_for(types[k], 260, 0) == SL_MM_PLAIN);   /* rows % 8 != 0 */
        CHECK(sl_mm_order_for(types[k], 12, 8) == SL_MM_PLAIN);
    }
    static const sl_type plain[] = {SL_TYPE_Q4_1, SL_TYPE_Q5_0, SL_TYPE_Q5_1, SL_TYPE_Q8_0,
                                    SL_TYPE_IQ4_XS, SL_TYPE_F16, SL_TYPE_F32};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        CHECK(sl_mm_order_for(plain[i], 256, 0) == SL_MM_PLAIN);
        CHECK(sl_mm_order_for(plain[i], 256, 8) == SL_MM_PLAIN);
    }
}

/* sl_matmul_rows over a range starting mid-block (rows 3..rows-1: the
 * eight-row kernel for 3..10, the multi-token one for the rest) gives each
 * (row, token) the bits of the single-row kernel of the rule's order
 * (every row batched: no forms). */
static void check_matmul(int k, int64_t rows, int64_t n_experts, int n, bool rp)
{
    enum { NB = 5 };
    const int64_t cols = SL_QK * NB;
    const size_t rbytes = bbytes(k) * NB;
    uint8_t *w = malloc(rbytes * (size_t)rows);
    fill(k, w, NB * (int)rows, FILL_GAUSS);
    sl_mat m = {.type = types[k], .rows = rows, .cols = cols, .row_bytes = rbytes, .data = w,
                .n_experts = n_experts};
    sl_block_q8_0 *y = malloc(sizeof *y * NB * (size_t)n);
    const void **acts = malloc(sizeof(void *) * (size_t)n);
    float *xf = malloc(sizeof(float) * (size_t)cols);
    for (int t = 0; t < n; t++) {
        for (int64_t i = 0; i < cols; i++) xf[i] = grand();
        sl_matvec_prepare(&m, xf, y + (size_t)t * NB);
        acts[t] = y + (size_t)t * NB;
    }
    float *out = malloc(sizeof(float) * (size_t)(rows * n));
    const int64_t r0 = 3, r1 = rows - 1;
    sl_matmul_rows(&m, acts, n, out, (size_t)rows, r0, r1, xf);
    for (int t = 0; t < n; t++)
        for (int64_t r = r0; r < r1; r++) {
            float want;
            const uint8_t *row = w + (size_t)r * rbytes;
            if (rp) want = oracle(k, row, acts[t], NB);
            /* an IQ4_NL MUL_MAT ggml does not repack goes to tinyBLAS
             * (test_matmul_form holds that order to its own twin) */
            else if (types[k] == SL_TYPE_IQ4_NL && n_experts == 0)
                sl_vec_dot_iq4_nl_tinyblas(cols, &want, row, acts[t]);
            else sl_type_get(types[k])->vec_dot(cols, &want, row, acts[t]);
            CHECK_MSG(memcmp(&out[t * rows + r], &want, 4) == 0,
                      "%s rows %lld experts %lld n %d: token %d row %lld %.9g, want %.9g", names[k],
                      (long long)rows, (long long)n_experts, n, t, (long long)r,
                      (double)out[t * rows + r], (double)want);
        }
    free(w);
    free(y);
    free(acts);
    free(xf);
    free(out);
}

TEST(matmul_follows_rule)
{
    static const int ns[] = {1, 2, 3, 4, 5, 8, 9, 13};
    for (int k = 0; k < 3; k++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            check_matmul(k, 16, 0, ns[j], true);
            check_matmul(k, 24, 8, ns[j], true);
            check_matmul(k, 16, 1, ns[j], false);
            check_matmul(k, 12, 0, ns[j], false);
        }
}

int main(void)
{
    RUN(kernels_match_formula);
    RUN(rows8_match_formula);
    RUN(sets_present_where_built);
    RUN(hand_built_rows);
    RUN(order_differs_from_plain);
    RUN(order_rule);
    RUN(matmul_follows_rule);
    return TEST_REPORT();
}
