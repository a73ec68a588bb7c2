/* test_vecdot_rp32x8.c - the eight-row interleaved (x8) layout of Q4_0 /
 * IQ4_NL / MXFP4 matrices and its kernels (quant/vec_dot_rp.h).
 *
 * Oracles written here: the layout's byte positions as vec_dot_rp.h
 * states them (scale of row r of block i at 8 i bb + r sb; nibble byte j of
 * that block at 8 i bb + 8 sb + 32 (j / 4) + 4 r + j % 4), and the
 * reference's per-(row, token) formula on the plain rows (exact block sum
 * I, acc = fmaf(I, dx * dy, acc) in block order, with this file's own
 * level tables). Asserted: the interleave puts every byte there and the
 * row reader inverts it; every x8 kernel set gives the formula's bits for
 * every token count; sl_matmul_rows on the x8 form gives the bits of the
 * plain form for every row range (aligned or cut mid-group, as the
 * threads' shares are), token count and a split of the rows into shares;
 * sl_mat_row_to_float reads an x8 row as the plain one; and the matrices
 * that cannot be x8 (rows % 8 != 0, other types) are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rand_blocks.h"
#include "ops/matmul_order.h"
#include "ops/ops.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"
#include "test.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;

static const sl_type types[3] = {SL_TYPE_Q4_0, SL_TYPE_IQ4_NL, SL_TYPE_MXFP4};
static const char *const names[3] = {"q4_0", "iq4_nl", "mxfp4"};
static const int iq4nl_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};
static const int mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static size_t bbytes(int k) { return k == 2 ? 17 : 18; }
static size_t sbytes(int k) { return k == 2 ? 1 : 2; }

enum { FILL_RANDOM = T_FILL_RANDOM, FILL_GAUSS = T_FILL_GAUSS, FILL_HUGE = T_FILL_HUGE_SCALE,
       FILL_TINY = T_FILL_TINY_SCALE };

/* nb plain blocks of type k (tests/common/rand_blocks.h) */
static void fill(int k, uint8_t *b, int nb, int mode) { t_fill_rp32(&g_rng, types[k], b, nb, mode); }

static void make_act(sl_block_q8_0 *y, int n, float scale)
{
    t_make_act(&g_rng, SL_TYPE_Q8_0, y, n, scale, false);
}

/* the formula on plain row bytes */
static float oracle(int k, const uint8_t *x, const sl_block_q8_0 *y, int nb)
{
    float acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t *p = x + (size_t)i * bbytes(k);
        long long I = 0;
        for (int j = 0; j < SL_QK; j++) {
            const uint8_t q = p[sbytes(k) + j % 16];
            const int nib = j < 16 ? (q & 0x0F) : (q >> 4);
            const int v = k == 0 ? nib - 8 : k == 1 ? iq4nl_levels[nib] : mxfp4_levels[nib];
            I += v * y[i].qs[j];
        }
        float dx;
        if (k == 2) {
            dx = ldexpf(1.0f, (int)p[0] - 128);
        } else {
            uint16_t h;
            memcpy(&h, p, 2);
            dx = sl_fp16_to_f32(h);
        }
        acc = fmaf((float)I, dx * sl_fp16_to_f32(y[i].d), acc);
    }
    return acc;
}

TEST(layout_positions_and_row_reader)
{
    enum { NB = 3, ROWS = 16 };
    for (int k = 0; k < 3; k++) {
        const size_t bb = bbytes(k), sb = sbytes(k), rb = bb * NB;
        uint8_t *plain = malloc(rb * ROWS), *x8 = malloc(rb * ROWS), *tmp = malloc(rb * 8);
        fill(k, plain, NB * ROWS, FILL_RANDOM);
        memcpy(x8, plain, rb * ROWS);
        sl_rp32_x8_interleave(types[k], x8, ROWS, SL_QK * NB, rb, tmp);
        int bad = 0;
        for (int r = 0; r < ROWS; r++)
            for (int i = 0; i < NB; i++) {
                const uint8_t *src = plain + (size_t)r * rb + (size_t)i * bb;
                const uint8_t *blk = x8 + (size_t)(r / 8) * 8 * rb + (size_t)i * 8 * bb;
                bad += memcmp(blk + (size_t)(r % 8) * sb, src, sb) != 0;
                for (int j = 0; j < 16; j++)
                    bad += blk[8 * sb + 32 * (size_t)(j / 4) + 4 * (size_t)(r % 8) + (size_t)(j % 4)] !=
                           src[sb + (size_t)j];
            }
        CHECK_MSG(bad == 0, "%s: %d bytes out of place", names[k], bad);
        uint8_t row[3 * 18];
        for (int r = 0; r < ROWS; r++) {
            sl_rp32_x8_row(types[k], x8, r, 0, SL_QK * NB, rb, row);
            CHECK_MSG(memcmp(row, plain + (size_t)r * rb, rb) == 0, "%s row %d read back wrong",
                      names[k], r);
            sl_rp32_x8_row(types[k], x8, r, SL_QK, SL_QK * 2, rb, row); /* blocks 1..2 */
            CHECK_MSG(memcmp(row, plain + (size_t)r * rb + bb, 2 * bb) == 0,
                      "%s row %d blocks 1..2 read back wrong", names[k], r);
        }
        free(plain);
        free(x8);
        free(tmp);
    }
}

TEST(applies)
{
    for (int k = 0; k < 3; k++) {
        CHECK(sl_rp32_x8_applies(types[k], 8));
        CHECK(sl_rp32_x8_applies(types[k], 2880));
        CHECK(!sl_rp32_x8_applies(types[k], 61));
        CHECK(!sl_rp32_x8_applies(types[k], 4));
        CHECK(!sl_rp32_x8_applies(types[k], 0));
    }
    CHECK(!sl_rp32_x8_applies(SL_TYPE_Q4_K, 256));
    CHECK(!sl_rp32_x8_applies(SL_TYPE_Q8_0, 256));
    CHECK(!sl_rp32_x8_applies(SL_TYPE_IQ4_XS, 256));
}

/* Eight plain rows of NB blocks of type k filled in mode (their x8 form
 * beside) and NA tokens' activations scaled for the mode: the inputs of the
 * kernel tests. */
enum { FX_NB = 9, FX_NA = SL_VEC_DOT_ROWS8_MAX };
typedef struct x8_fixture {
    size_t rb; /* bytes of one plain row */
    uint8_t *plain, *x8;
    sl_block_q8_0 *y; /* token t's blocks at y + t * FX_NB */
    const void *ys[FX_NA];
} x8_fixture;

/* Builds fx for type k and fill mode; 0, or -1 when memory runs out. */
static int fixture_make(x8_fixture *fx, int k, int mode)
{
    fx->rb = bbytes(k) * FX_NB;
    fx->plain = malloc(fx->rb * 8);
    fx->x8 = malloc(fx->rb * 8);
    fx->y = malloc(sizeof *fx->y * FX_NB * FX_NA);
    uint8_t *tmp = malloc(fx->rb * 8);
    if (!fx->plain || !fx->x8 || !fx->y || !tmp) {
        free(tmp);
        return -1;
    }
    fill(k, fx->plain, FX_NB * 8, mode);
    memcpy(fx->x8, fx->plain, fx->rb * 8);
    sl_rp32_x8_interleave(types[k], fx->x8, 8, SL_QK * FX_NB, fx->rb, tmp);
    free(tmp);
    const float act = mode == FILL_HUGE ? 1e-3f : mode == FILL_TINY ? 1e-20f : 1.0f;
    for (int t = 0; t < FX_NA; t++) {
        make_act(fx->y + (size_t)t * FX_NB, SL_QK * FX_NB, act * (float)(1 + t));
        fx->ys[t] = fx->y + (size_t)t * FX_NB;
    }
    return 0;
}

static void fixture_free(x8_fixture *fx)
{
    free(fx->plain);
    free(fx->x8);
    free(fx->y);
}

/* every kernel set against the formula, nt = 1..4, four fills */
TEST(x8_kernels_give_the_formula)
{
    enum { NB = FX_NB, NA = FX_NA };
    static const int modes[] = {FILL_RANDOM, FILL_GAUSS, FILL_HUGE, FILL_TINY};
    for (int k = 0; k < 3; k++) {
        int compared = 0;
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            x8_fixture fx;
            const int made = fixture_make(&fx, k, modes[mi]);
            CHECK(made == 0);
            const size_t rb = fx.rb;
            for (int isa = 0; made == 0 && isa < SL_ISA_COUNT; isa++) {
                sl_vec_dot_rows8_fn f = sl_vec_dot_x8_b32_rp_isa(types[k], (sl_isa)isa);
                if (!f) continue;
                for (int nt = 1; nt <= NA; nt++) {
                    float got[8 * NA];
                    f(SL_QK * NB, got, fx.x8, rb, fx.ys, nt);
                    for (int t = 0; t < nt; t++)
                        for (int r = 0; r < 8; r++) {
                            const float want =
                                oracle(k, fx.plain + (size_t)r * rb, fx.y + (size_t)t * NB, NB);
                            CHECK_MSG(memcmp(&got[8 * t + r], &want, 4) == 0,
                                      "x8 %s %s mode %d nt %d row %d token %d: %.9g, formula %.9g",
                                      names[k], sl_isa_name((sl_isa)isa), modes[mi], nt, r, t,
                                      (double)got[8 * t + r], (double)want);
                            compared++;
                        }
                }
            }
            fixture_free(&fx);
        }
        CHECK_MSG(compared >= 4 * 80, "%s: %d comparisons", names[k], compared);
    }
    CHECK(sl_vec_dot_x8_b32_rp_isa(SL_TYPE_Q4_K, SL_ISA_SCALAR) == NULL);
    CHECK(sl_vec_dot_x8_b32_rp(SL_TYPE_Q8_0) == NULL);
}

/* the precomputed-sums x8 kernel (where the set has one) against the
 * formula for every nt, fed by sl_rp32_x8_offset_sums; and those sums
 * against offset * the levels summed here */
TEST(x8_sums_kernel_gives_the_formula)
{
    enum { NB = FX_NB, NA = FX_NA };
    static const int modes[] = {FILL_RANDOM, FILL_GAUSS, FILL_HUGE, FILL_TINY};
    static const int offsets[3] = {8, 0, 12};
    for (int k = 0; k < 3; k++) {
        const sl_vec_dot_x8s_fn f = sl_vec_dot_x8s_b32_rp(types[k]);
        if (k == 1) CHECK(f == NULL); /* IQ4_NL has no offset to sum */
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            x8_fixture fx;
            const int made = fixture_make(&fx, k, modes[mi]);
            CHECK(made == 0);
            const size_t rb = fx.rb;
            int32_t sums[NA][NB];
            const int32_t *sp[NA];
            for (int t = 0; made == 0 && t < NA; t++) {
                sl_rp32_x8_offset_sums(types[k], SL_QK * NB, fx.ys[t], sums[t]);
                sp[t] = sums[t];
                for (int i = 0; i < NB; i++) {
                    int want = 0;
                    for (int j = 0; j < SL_QK; j++) want += fx.y[(size_t)t * NB + (size_t)i].qs[j];
                    CHECK_MSG(sums[t][i] == offsets[k] * want, "%s sums token %d block %d: %d, want %d",
                              names[k], t, i, (int)sums[t][i], offsets[k] * want);
                }
            }
            for (int nt = 1; made == 0 && f && nt <= NA; nt++) {
                float got[8 * NA];
                f(SL_QK * NB, got, fx.x8, fx.ys, sp, nt);
                for (int t = 0; t < nt; t++)
                    for (int r = 0; r < 8; r++) {
                        const float want =
                            oracle(k, fx.plain + (size_t)r * rb, fx.y + (size_t)t * NB, NB);
                        CHECK_MSG(memcmp(&got[8 * t + r], &want, 4) == 0,
                                  "x8s %s mode %d nt %d row %d token %d: %.9g, formula %.9g",
                                  names[k], modes[mi], nt, r, t, (double)got[8 * t + r], (double)want);
                    }
            }
            fixture_free(&fx);
        }
    }
    CHECK(sl_vec_dot_x8s_b32_rp(SL_TYPE_Q4_K) == NULL);
}

/* sl_matmul_rows on the x8 form against the plain form of the same rows:
 * the same bits for each range (cut mid-group or not), token count and
 * split of the rows into shares; and each value the formula's. */
static void check_matmul(int k, int64_t rows, int64_t n_experts)
{
    enum { NB = 6, NMAX = 9 };
    const int64_t cols = SL_QK * NB;
    const size_t rb = bbytes(k) * NB;
    uint8_t *plain = malloc(rb * (size_t)rows), *x8 = malloc(rb * (size_t)rows),
            *tmp = malloc(rb * 8);
    fill(k, plain, NB * (int)rows, FILL_GAUSS);
    memcpy(x8, plain, rb * (size_t)rows);
    sl_rp32_x8_interleave(types[k], x8, rows, cols, rb, tmp);
    sl_mat mp = {.type = types[k], .rows = rows, .cols = cols, .row_bytes = rb, .data = plain,
                 .n_experts = n_experts};
    sl_mat mx = mp;
    mx.data = x8;
    mx.layout = SL_MAT_X8;
    sl_block_q8_0 *y = malloc(sizeof *y * NB * NMAX);
    const void *acts[NMAX];
    for (int t = 0; t < NMAX; t++) {
        make_act(y + (size_t)t * NB, (int)cols, 1.0f + (float)t);
        acts[t] = y + (size_t)t * NB;
    }
    float *a = malloc(sizeof(float) * (size_t)rows * NMAX);
    float *b = malloc(sizeof(float) * (size_t)rows * NMAX);
    float *row_tmp = malloc(sizeof(float) * (size_t)cols);
    static const int ns[] = {1, 2, 4, 5, 9};
    const int64_t ranges[][2] = {{0, rows}, {3, rows - 2}, {8, 16}, {5, 7}, {9, rows}, {0, 13}};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++) {
            const int n = ns[ni];
            const int64_t r0 = ranges[ri][0], r1 = ranges[ri][1];
            memset(a, 0, sizeof(float) * (size_t)rows * NMAX);
            memset(b, 0xFF, sizeof(float) * (size_t)rows * NMAX);
            sl_matmul_rows(&mp, acts, n, a, (size_t)rows, r0, r1, row_tmp);
            memset(b, 0, sizeof(float) * (size_t)rows * NMAX);
            sl_matmul_rows(&mx, acts, n, b, (size_t)rows, r0, r1, row_tmp);
            CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)rows * (size_t)n) == 0,
                      "%s rows %lld (experts %lld) n=%d range %lld..%lld: x8 differs from plain",
                      names[k], (long long)rows, (long long)n_experts, n, (long long)r0,
                      (long long)r1);
            for (int t = 0; t < n; t++)
                for (int64_t r = r0; r < r1; r++) {
                    const float want = oracle(k, plain + (size_t)r * rb, y + (size_t)t * NB, NB);
                    CHECK_MSG(memcmp(&b[(size_t)t * (size_t)rows + (size_t)r], &want, 4) == 0,
                              "%s row %lld token %d: not the formula", names[k], (long long)r, t);
                }
        }
    /* shares of the rows as a pool of 1..5 threads would cut them */
    for (int shares = 1; shares <= 5; shares++) {
        const int n = 5;
        sl_matmul_rows(&mp, acts, n, a, (size_t)rows, 0, rows, row_tmp);
        memset(b, 0, sizeof(float) * (size_t)rows * NMAX);
        for (int c = 0; c < shares; c++)
            sl_matmul_rows(&mx, acts, n, b, (size_t)rows, rows * c / shares,
                           rows * (c + 1) / shares, row_tmp);
        CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)rows * (size_t)n) == 0,
                  "%s: %d shares of x8 differ from the plain whole", names[k], shares);
    }
    /* a row read back as floats */
    float *fa = malloc(sizeof(float) * (size_t)cols), *fb = malloc(sizeof(float) * (size_t)cols);
    for (int64_t r = 0; r < rows; r += 7) {
        sl_mat_row_to_float(&mp, r, fa);
        sl_mat_row_to_float(&mx, r, fb);
        CHECK_MSG(memcmp(fa, fb, sizeof(float) * (size_t)cols) == 0,
                  "%s row %lld: sl_mat_row_to_float of x8 differs", names[k], (long long)r);
    }
    free(fa);
    free(fb);
    free(plain);
    free(x8);
    free(tmp);
    free(y);
    free(a);
    free(b);
    free(row_tmp);
}

TEST(matmul_x8_equals_plain)
{
    for (int k = 0; k < 3; k++) {
        CHECK(sl_mm_order_for(types[k], 40, 0) == SL_MM_RP_B32);
        check_matmul(k, 40, 0);  /* a 2-d weight */
        check_matmul(k, 24, 16); /* an expert of a 16-expert tensor */
    }
}

/* Rows % 8 != 0 falls back to the plain kernels: refused for x8 and given
 * the plain order, so nothing is interleaved there. */
TEST(odd_rows_fall_back)
{
    for (int k = 0; k < 3; k++) {
        CHECK(!sl_rp32_x8_applies(types[k], 61));
        CHECK(sl_mm_order_for(types[k], 61, 0) == SL_MM_PLAIN);
    }
}

int main(void)
{
    RUN(layout_positions_and_row_reader);
    RUN(applies);
    RUN(x8_kernels_give_the_formula);
    RUN(x8_sums_kernel_gives_the_formula);
    RUN(matmul_x8_equals_plain);
    RUN(odd_rows_fall_back);
    return TEST_REPORT();
}
