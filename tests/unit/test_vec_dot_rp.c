/* test_vec_dot_rp.c - the Q4_K kernels in the order of llama.cpp's repacked
 * gemm / gemv (quant/vec_dot_rp.h) and the rule that picks them
 * (ops/matmul_order.h, ops/matmul.c).
 *
 * Oracle: the formula of vec_dot_rp.h written out here from the block
 * layout (quant_blocks.h: d, dmin, 12 bytes of 6-bit scales and mins, 128
 * bytes of nibbles; Q8_K: d, 256 levels, 16 sums of 16), decoded by this
 * file's own code: exact integer sums per 64-element chunk (gemm) or per
 * super-block (gemv), two fmaf chains, A - M. The kernels must give its
 * bits exactly (memcmp), in both kernel sets, for every token count, on
 * random bytes with finite scales, quantised Gaussian rows, zeros, the
 * largest and subnormal f16 scales; the eight-row kernels likewise. One row built by hand checks the
 * formula's value itself; and the two orders are shown to be different
 * functions (else the bit tests could not tell them apart). Last, the
 * matmul rule: which matrices take which kernel, batch by batch. */
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

static uint64_t g_rng = 0xD1B54A32D192ED03ull;

static uint32_t rnd32(void) { return t_rng_u32(&g_rng); }
static float grand(void) { return t_rng_gauss(&g_rng); }

enum { FILL_RANDOM, FILL_GAUSS, FILL_ZERO, FILL_HUGE_SCALE, FILL_DENORMAL_SCALE };

/* nb Q4_K blocks: random bytes with f16 d, dmin in [2^-8, 2^4) of either
 * sign (HUGE: 65504; DENORMAL: subnormals), a quantised Gaussian row, or
 * zeros. */
static void fill_q4k(sl_block_q4_K *b, int nb, int mode)
{
    if (mode == FILL_GAUSS) {
        float *x = malloc(sizeof(float) * SL_QK_K * (size_t)nb);
        for (int i = 0; i < SL_QK_K * nb; i++) x[i] = grand();
        sl_quantize_fast(SL_TYPE_Q4_K, x, b, SL_QK_K * nb);
        free(x);
        return;
    }
    if (mode == FILL_ZERO) {
        memset(b, 0, sizeof *b * (size_t)nb);
        return;
    }
    uint8_t *p = (uint8_t *)b;
    for (size_t i = 0; i < sizeof *b * (size_t)nb; i++) p[i] = (uint8_t)rnd32();
    for (int i = 0; i < nb; i++) {
        uint16_t h[2];
        for (int k = 0; k < 2; k++) {
            if (mode == FILL_HUGE_SCALE) h[k] = 0x7BFF;
            else if (mode == FILL_DENORMAL_SCALE) h[k] = (uint16_t)(1 + rnd32() % 0x3FF);
            else h[k] = (uint16_t)(((7 + rnd32() % 12) << 10) | (rnd32() & 0x3FF));
            h[k] |= (uint16_t)((rnd32() & 1) << 15);
        }
        b[i].d = h[0];
        b[i].dmin = h[1];
    }
}

static void make_act(sl_block_q8_K *y, int n, float scale, bool zeros)
{
    t_make_act(&g_rng, SL_TYPE_Q8_K, y, n, scale, zeros);
}

/* scale and min of sub-block k from the 12 bytes (quant_blocks.h): k < 4:
 * low 6 bits of bytes k and k + 4; else the nibbles of byte k + 4 with the
 * top two bits of bytes k - 4 and k as bits 4..5 */
static void scale_min(const uint8_t s[12], int k, int *sc, int *m)
{
    if (k < 4) {
        *sc = s[k] & 63;
        *m = s[k + 4] & 63;
    } else {
        *sc = (s[k + 4] & 0x0F) | (s[k - 4] >> 6) << 4;
        *m = (s[k + 4] >> 4) | (s[k] >> 6) << 4;
    }
}

/* level j (0..255) of a block: 64-element chunk c = j / 64 holds bytes
 * qs[32c..32c+32): low nibbles for its first 32 elements, high for the rest */
static int level(const sl_block_q4_K *b, int j)
{
    int c = j / 64, l = j % 64;
    uint8_t q = b->qs[32 * c + l % 32];
    return l < 32 ? (q & 0x0F) : (q >> 4);
}

static float oracle(const sl_block_q4_K *x, const sl_block_q8_K *y, int nb, sl_rp_order order)
{
    float A = 0.0f, M = 0.0f;
    for (int i = 0; i < nb; i++) {
        const float pd = sl_fp16_to_f32(x[i].d) * y[i].d;
        const float pm = sl_fp16_to_f32(x[i].dmin) * y[i].d;
        long long I = 0, J = 0;
        for (int k = 0; k < 8; k++) {
            int sc, m;
            scale_min(x[i].scales, k, &sc, &m);
            long long dot = 0;
            for (int e = 32 * k; e < 32 * k + 32; e++) dot += level(&x[i], e) * y[i].qs[e];
            I += sc * dot;
            J += m * (long long)(y[i].bsums[2 * k] + y[i].bsums[2 * k + 1]);
            if (order == SL_RP_GEMM && k % 2 == 1) { /* end of a 64-element chunk */
                A = fmaf((float)I, pd, A);
                M = fmaf((float)J, pm, M);
                I = J = 0;
            }
        }
        if (order == SL_RP_GEMV) {
            A = fmaf((float)I, pd, A);
            M = fmaf((float)J, pm, M);
        }
    }
    return A - M;
}

static const sl_rp_order orders[2] = {SL_RP_GEMM, SL_RP_GEMV};

/* every kernel set, every nt, against the oracle; returns comparisons */
static int check_row(int nb, int mode, float act_scale)
{
    enum { NA = SL_VEC_DOT_RP_MAX + 1 };
    const int n = SL_QK_K * nb;
    sl_block_q4_K *x = malloc(sizeof *x * (size_t)nb);
    sl_block_q8_K *y = malloc(sizeof *y * (size_t)nb * NA);
    const void *ys[NA];
    fill_q4k(x, nb, mode);
    for (int t = 0; t < NA; t++) {
        make_act(y + (size_t)t * nb, n, act_scale * (float)(1 + t % 3), t == 4);
        ys[t] = y + (size_t)t * nb;
    }
    int compared = 0;
    for (int o = 0; o < 2; o++) {
        float want[NA];
        for (int t = 0; t < NA; t++) want[t] = oracle(x, y + (size_t)t * nb, nb, orders[o]);
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            sl_vec_dot_n_fn f = sl_vec_dot_n_q4_K_rp_isa(orders[o], (sl_isa)isa);
            if (!f) continue;
            for (int nt = 1; nt <= SL_VEC_DOT_RP_MAX; nt++)
                for (int off = 0; off + nt <= NA; off += nt) {
                    float got[SL_VEC_DOT_RP_MAX];
                    f(n, got, x, ys + off, nt);
                    for (int t = 0; t < nt; t++) {
                        CHECK_MSG(memcmp(&got[t], &want[off + t], 4) == 0,
                                  "%s %s mode %d nb %d nt %d t %d: %.9g, formula %.9g",
                                  o ? "gemv" : "gemm", sl_isa_name((sl_isa)isa), mode, nb, nt,
                                  off + t, (double)got[t], (double)want[off + t]);
                        compared++;
                    }
                }
        }
    }
    free(x);
    free(y);
    return compared;
}

TEST(kernels_match_formula)
{
    int compared = 0;
    for (int rep = 0; rep < 6; rep++) {
        compared += check_row(1 + (int)(rnd32() % 8), FILL_RANDOM, 1.0f);
        compared += check_row(4, FILL_GAUSS, 1.0f);
    }
    compared += check_row(2, FILL_ZERO, 1.0f);
    compared += check_row(2, FILL_HUGE_SCALE, 1e-3f);
    compared += check_row(2, FILL_DENORMAL_SCALE, 1e-25f);
    compared += check_row(3, FILL_RANDOM, 1e4f);
    CHECK(compared > 0);
}

/* The eight-row kernels: s[8 t + r] must be the formula's bits for row r
 * and token t, for both orders, every kernel set and every nt, rows laid
 * out with a stride that is not the row size (a slice of a wider row). */
TEST(rows8_match_formula)
{
    enum { NB = 3, STRIDE_B = NB + 1, NA = SL_VEC_DOT_ROWS8_MAX };
    static const int modes[] = {FILL_RANDOM, FILL_GAUSS, FILL_HUGE_SCALE, FILL_DENORMAL_SCALE};
    int compared = 0;
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
        sl_block_q4_K *x = malloc(sizeof *x * STRIDE_B * 8);
        sl_block_q8_K *y = malloc(sizeof *y * NB * NA);
        const void *ys[NA];
        fill_q4k(x, STRIDE_B * 8, modes[mi]);
        const float act = modes[mi] == FILL_HUGE_SCALE       ? 1e-3f
                          : modes[mi] == FILL_DENORMAL_SCALE ? 1e-25f
                                                             : 1.0f;
        for (int t = 0; t < NA; t++) {
            make_act(y + (size_t)t * NB, SL_QK_K * NB, act * (float)(1 + t), t == 2 && mi == 0);
            ys[t] = y + (size_t)t * NB;
        }
        for (int o = 0; o < 2; o++)
            for (int isa = 0; isa < SL_ISA_COUNT + 3; isa++) {
                /* past the sets: the AVX2 set's 256- and 512-bit forms and the
                 * 512-bit one with VNNI, each by name */
                sl_vec_dot_rows8_fn forms[3] = {NULL, NULL, NULL};
                if (isa >= SL_ISA_COUNT) sl_vec_dot_rows8_q4_K_rp_forms_avx2(orders[o], forms);
                sl_vec_dot_rows8_fn f = isa < SL_ISA_COUNT
                                            ? sl_vec_dot_rows8_q4_K_rp_isa(orders[o], (sl_isa)isa)
                                            : forms[isa - SL_ISA_COUNT];
                if (!f) continue;
                const char *name = isa < SL_ISA_COUNT        ? sl_isa_name((sl_isa)isa)
                                   : isa == SL_ISA_COUNT     ? "avx2 n256"
                                   : isa == SL_ISA_COUNT + 1 ? "avx2 n512"
                                                             : "avx2 n512 vnni";
                for (int nt = 1; nt <= NA; nt++) {
                    float got[8 * NA];
                    f(SL_QK_K * NB, got, x, sizeof *x * STRIDE_B, ys, nt);
                    for (int t = 0; t < nt; t++)
                        for (int r = 0; r < 8; r++) {
                            float want = oracle(x + r * STRIDE_B, y + (size_t)t * NB, NB, orders[o]);
                            CHECK_MSG(memcmp(&got[8 * t + r], &want, 4) == 0,
                                      "rows8 %s %s mode %d nt %d: row %d token %d %.9g, formula %.9g",
                                      o ? "gemv" : "gemm", name, modes[mi], nt, r,
                                      t, (double)got[8 * t + r], (double)want);
                            compared++;
                        }
                }
            }
        free(x);
        free(y);
    }
    CHECK(compared > 0);
}

TEST(avx2_present_where_built)
{
    /* where the Q4_K AVX2 kernel runs, its repacked-order twins must too */
    for (int o = 0; o < 2; o++) {
        CHECK(sl_vec_dot_n_q4_K_rp_isa(orders[o], SL_ISA_SCALAR) != NULL);
        bool avx2 = sl_quant_vec_dot_isa(SL_TYPE_Q4_K, SL_ISA_AVX2) != NULL;
        CHECK((sl_vec_dot_n_q4_K_rp_isa(orders[o], SL_ISA_AVX2) != NULL) == avx2);
        CHECK(sl_vec_dot_n_q4_K_rp_isa(orders[o], (sl_isa)7) == NULL);
        CHECK(sl_vec_dot_n_q4_K_rp(orders[o]) != NULL);
        CHECK(sl_vec_dot_rows8_q4_K_rp_isa(orders[o], SL_ISA_SCALAR) != NULL);
        CHECK((sl_vec_dot_rows8_q4_K_rp_isa(orders[o], SL_ISA_AVX2) != NULL) == avx2);
        /* NEON: both kernels where the NEON set runs (aarch64) */
        const bool neon = sl_quant_vec_dot_isa(SL_TYPE_Q4_K, SL_ISA_NEON) != NULL;
        CHECK((sl_vec_dot_n_q4_K_rp_isa(orders[o], SL_ISA_NEON) != NULL) == neon);
        CHECK((sl_vec_dot_rows8_q4_K_rp_isa(orders[o], SL_ISA_NEON) != NULL) == neon);
        CHECK(sl_vec_dot_rows8_q4_K_rp(orders[o]) != NULL);
    }
}

/* One super-block: d = 1, dmin = 0.5, every scale 2, every min 1, every
 * level 3; activations all 2 with d = 0.25 (bsums 16 * 2 = 32). Per 64-
 * element chunk I = 2 * 64 * 3 * 2 = 768 and J = 1 * 2 * (32 + 32) = 128;
 * per super-block 3072 and 512. Both orders: A = 3072 * 0.25 = 768, M =
 * 512 * 0.5 * 0.25 = 64, result 704, exact in float either way. */
TEST(hand_built_row)
{
    sl_block_q4_K x;
    x.d = 0x3C00;    /* 1.0 */
    x.dmin = 0x3800; /* 0.5 */
    for (int k = 0; k < 4; k++) {
        x.scales[k] = 2;     /* scales 0..3, no high bits */
        x.scales[k + 4] = 1; /* mins 0..3 */
        x.scales[k + 8] = 0x12; /* scale 4 + k: 2 (low nibble), min: 1 */
    }
    memset(x.qs, 0x33, sizeof x.qs);
    sl_block_q8_K y;
    y.d = 0.25f;
    memset(y.qs, 2, sizeof y.qs);
    for (int k = 0; k < 16; k++) y.bsums[k] = 32;
    const void *ys[1] = {&y};
    for (int o = 0; o < 2; o++)
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            sl_vec_dot_n_fn f = sl_vec_dot_n_q4_K_rp_isa(orders[o], (sl_isa)isa);
            if (!f) continue;
            float s = 0.0f;
            f(SL_QK_K, &s, &x, ys, 1);
            CHECK_MSG(s == 704.0f, "order %d %s: %.9g, want 704", o, sl_isa_name((sl_isa)isa),
                      (double)s);
        }
}

/* The orders are different functions of the same bytes: on Gaussian rows
 * of 8 super-blocks the gemm order, the gemv order and the plain kernel
 * each disagree with the others somewhere (they agree to float rounding). */
TEST(orders_differ)
{
    enum { NB = 8, ROWS = 64 };
    sl_block_q4_K *x = malloc(sizeof *x * NB * ROWS);
    sl_block_q8_K y[NB];
    fill_q4k(x, NB * ROWS, FILL_GAUSS);
    make_act(y, SL_QK_K * NB, 1.0f, false);
    const void *ys[1] = {y};
    int d_gg = 0, d_gp = 0, d_vp = 0;
    for (int r = 0; r < ROWS; r++) {
        float a, b, c;
        sl_vec_dot_n_q4_K_rp(SL_RP_GEMM)(SL_QK_K * NB, &a, x + r * NB, ys, 1);
        sl_vec_dot_n_q4_K_rp(SL_RP_GEMV)(SL_QK_K * NB, &b, x + r * NB, ys, 1);
        sl_type_get(SL_TYPE_Q4_K)->vec_dot(SL_QK_K * NB, &c, x + r * NB, y);
        d_gg += a != b;
        d_gp += a != c;
        d_vp += b != c;
        CHECK_MSG(fabsf(a - c) <= 1e-4f * (fabsf(c) + 1.0f), "row %d: %g vs %g", r, (double)a,
                  (double)c);
    }
    CHECK_MSG(d_gg > 0 && d_gp > 0 && d_vp > 0, "differences gemm/gemv %d gemm/plain %d gemv/plain %d",
              d_gg, d_gp, d_vp);
    free(x);
}

TEST(order_rule)
{
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 256, 0) == SL_MM_RP_GEMM);
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 8, 0) == SL_MM_RP_GEMM);
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 256, 8) == SL_MM_RP_GEMV);
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 256, 2) == SL_MM_RP_GEMV);
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 256, 1) == SL_MM_PLAIN); /* n_dims 2 in ggml */
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 64, SL_MM_BATCHED_3D) == SL_MM_PLAIN); /* MUL_MAT, 3-d */
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 260, 0) == SL_MM_PLAIN);
    CHECK(sl_mm_order_for(SL_TYPE_Q4_K, 12, 8) == SL_MM_PLAIN);
    static const sl_type others[] = {SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q5_K, SL_TYPE_Q6_K,
                                     SL_TYPE_Q8_0, SL_TYPE_F32}; /* Q4_0: test_vecdot_rp32.c */
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        CHECK(sl_mm_order_for(others[i], 256, 0) == SL_MM_PLAIN);
        CHECK(sl_mm_order_for(others[i], 256, 8) == SL_MM_PLAIN);
    }
}

/* sl_matmul_rows: a Q4_K matrix of 16 rows takes one repacked order for
 * every batch size and row range (rows 3..10 through the eight-row kernel,
 * 11..14 through the multi-token one): the gemv's while sl_mat does not say
 * whether it is an expert (ops/matmul.c); one of 12 rows the traits'
 * kernel. */
static void check_matmul(int64_t rows, int64_t n_experts, int n, sl_vec_dot_fn plain,
                         sl_vec_dot_n_fn rp)
{
    enum { NB = 3 };
    const int64_t cols = SL_QK_K * NB;
    sl_block_q4_K *w = malloc(sizeof *w * NB * (size_t)rows);
    fill_q4k(w, NB * (int)rows, FILL_GAUSS);
    sl_mat m = {.type = SL_TYPE_Q4_K, .rows = rows, .cols = cols, .row_bytes = sizeof *w * NB,
                .data = w, .n_experts = n_experts};
    sl_block_q8_K *y = malloc(sizeof *y * NB * (size_t)n);
    const void **acts = malloc(sizeof(void *) * (size_t)n);
    float *xf = malloc(sizeof(float) * (size_t)cols);
    for (int t = 0; t < n; t++) {
        for (int64_t i = 0; i < cols; i++) xf[i] = grand();
        sl_matvec_prepare(&m, xf, y + (size_t)t * NB);
        acts[t] = y + (size_t)t * NB;
    }
    float *out = malloc(sizeof(float) * (size_t)(rows * n));
    const int64_t r0 = 3, r1 = rows - 1; /* a range that starts mid-block */
    sl_matmul_rows(&m, acts, n, out, (size_t)rows, r0, r1, xf);
    for (int t = 0; t < n; t++)
        for (int64_t r = r0; r < r1; r++) {
            float want;
            if (rp) rp(cols, &want, w + r * NB, acts + t, 1);
            else plain(cols, &want, w + r * NB, acts[t]);
            CHECK_MSG(memcmp(&out[t * rows + r], &want, 4) == 0,
                      "rows %lld n %d: token %d row %lld %.9g, kernel %.9g", (long long)rows, n, t,
                      (long long)r, (double)out[t * rows + r], (double)want);
        }
    free(w);
    free(y);
    free(acts);
    free(xf);
    free(out);
}

TEST(matmul_follows_rule)
{
    static const int ns[] = {1, 2, 3, 4, 7, 8, 9, 13};
    for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
        /* a 2-d weight: the gemm order; an expert of 8: the gemv order; of a
         * one-expert tensor (2-d to the reference), or rows % 8 != 0: plain */
        check_matmul(16, 0, ns[j], NULL, sl_vec_dot_n_q4_K_rp(SL_RP_GEMM));
        check_matmul(16, 8, ns[j], NULL, sl_vec_dot_n_q4_K_rp(SL_RP_GEMV));
        check_matmul(16, 1, ns[j], sl_type_get(SL_TYPE_Q4_K)->vec_dot, NULL);
        check_matmul(12, 0, ns[j], sl_type_get(SL_TYPE_Q4_K)->vec_dot, NULL);
    }
}

int main(void)
{
    RUN(kernels_match_formula);
    RUN(rows8_match_formula);
    RUN(avx2_present_where_built);
    RUN(hand_built_row);
    RUN(orders_differ);
    RUN(order_rule);
    RUN(matmul_follows_rule);
    return TEST_REPORT();
}
