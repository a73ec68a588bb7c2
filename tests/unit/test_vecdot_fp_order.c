/* test_vecdot_fp_order.c - the F16 / BF16 kernels of llama.cpp's two float
 * orders (quant.h sl_fp_order) and the rule that picks one per matrix
 * (ops/matmul_order.h sl_mm_fp_order_for, applied by sl_matmul_rows).
 *
 * Oracles written here from the orders' descriptions (llama.cpp's
 * ggml_vec_dot_f16 on AVX2: four 8-lane FMA sums over steps of 32, reduced
 * (s0+s2)+(s1+s3), halves added, (t0+t1)+(t2+t3), the tail in double;
 * ggml_vec_dot_bf16 the same with rounded products added and the last
 * pairing (t0+t2)+(t1+t3);
 * tinyBLAS: one 8-lane FMA chain, lanes summed (l+h), then (0+2, 1+3),
 * then the last two, the tail by FMA). Asserted: every kernel set gives
 * the oracle's bits for lengths with and without tails; the two orders do
 * differ on long rows; the rule's choice for 2-d weights, experts and the
 * shapes tinyBLAS refuses; and sl_matmul_rows computes each matrix in the
 * rule's order, F32 ones too (ggml_vec_dot_f32 for experts and refused
 * shapes). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/rand_blocks.h"
#include "ops/matmul_order.h"
#include "ops/ops.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_fp_order.h"
#include "test.h"

static uint64_t g_rng = 0xD1B54A32D192ED03ull;

static float grand(void) { return t_rng_gauss(&g_rng); }

static float val(sl_type t, uint16_t v)
{
    if (t == SL_TYPE_F16) return sl_fp16_to_f32(v);
    const uint32_t b = (uint32_t)v << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint16_t enc(sl_type t, float f)
{
    if (t == SL_TYPE_F16) return sl_f32_to_fp16(f);
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)((b + 0x7FFF + ((b >> 16) & 1)) >> 16); /* nearest even */
}

/* F16: ggml_vec_dot_f16 (FMA; hadd pairing); BF16: ggml_vec_dot_bf16 on
 * AVX2 (products rounded, then added; lanes summed as tinyBLAS does) */
static float oracle_vecdot(sl_type t, const uint16_t *x, const uint16_t *y, int n)
{
    const bool f16 = t == SL_TYPE_F16;
    float c[4][8];
    memset(c, 0, sizeof c);
    int i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) {
                const float a = val(t, x[i + 8 * j + l]), b = val(t, y[i + 8 * j + l]);
                c[j][l] = f16 ? fmaf(a, b, c[j][l]) : a * b + c[j][l];
            }
    float r[8], h[4];
    for (int l = 0; l < 8; l++) r[l] = (c[0][l] + c[2][l]) + (c[1][l] + c[3][l]);
    for (int l = 0; l < 4; l++) h[l] = r[l] + r[l + 4];
    double s = (double)(f16 ? (h[0] + h[1]) + (h[2] + h[3]) : (h[0] + h[2]) + (h[1] + h[3]));
    for (; i < n; i++) s += (double)(val(t, x[i]) * val(t, y[i]));
    return (float)s;
}

static float oracle_tinyblas(sl_type t, const uint16_t *x, const uint16_t *y, int n)
{
    float c[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) c[l] = fmaf(val(t, x[i + l]), val(t, y[i + l]), c[l]);
    float h[4];
    for (int l = 0; l < 4; l++) h[l] = c[l] + c[l + 4];
    float s = (h[0] + h[2]) + (h[1] + h[3]);
    for (; i < n; i++) s = fmaf(val(t, x[i]), val(t, y[i]), s);
    return s;
}

static void fill(sl_type t, uint16_t *v, int n, float scale)
{
    for (int i = 0; i < n; i++) v[i] = enc(t, scale * grand());
}

TEST(kernels_match_oracles)
{
    static const sl_type types[2] = {SL_TYPE_F16, SL_TYPE_BF16};
    static const int lens[] = {8, 31, 32, 64, 100, 256, 1000, 2880};
    for (int k = 0; k < 2; k++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int n = lens[li];
            uint16_t *x = malloc(2 * (size_t)n), *y = malloc(2 * (size_t)n);
            fill(types[k], x, n, 1.0f);
            fill(types[k], y, n, 3.0f);
            const float want[2] = {oracle_tinyblas(types[k], x, y, n),
                                   oracle_vecdot(types[k], x, y, n)};
            int sets = 0;
            for (int isa = 0; isa < SL_ISA_COUNT; isa++)
                for (int o = 0; o < 2; o++) {
                    sl_vec_dot_fn f = sl_vec_dot_fp_order_isa(types[k], (sl_fp_order)o, (sl_isa)isa);
                    if (!f) continue;
                    float got;
                    f(n, &got, x, y);
                    CHECK_MSG(memcmp(&got, &want[o], 4) == 0,
                              "%s %s order %d n=%d: %.9g, oracle %.9g", sl_type_get(types[k])->name,
                              sl_isa_name((sl_isa)isa), o, n, (double)got, (double)want[o]);
                    sets++;
                }
            CHECK(sets >= 2); /* the scalar set's two orders at least */
            free(x);
            free(y);
        }
    CHECK(sl_vec_dot_fp_order(SL_TYPE_Q8_0, SL_FP_VECDOT) == NULL);
    CHECK(sl_vec_dot_fp_order_isa(SL_TYPE_F32, SL_FP_TINYBLAS, SL_ISA_SCALAR) == NULL);
}

/* the orders are different functions (else the tests could not tell
 * them apart), equal to rounding */
TEST(orders_differ)
{
    enum { N = 2048, ROWS = 32 };
    static const sl_type types[2] = {SL_TYPE_F16, SL_TYPE_BF16};
    for (int k = 0; k < 2; k++) {
        int differ = 0;
        uint16_t x[N], y[N];
        for (int r = 0; r < ROWS; r++) {
            fill(types[k], x, N, 1.0f);
            fill(types[k], y, N, 1.0f);
            float a, b;
            sl_vec_dot_fp_order(types[k], SL_FP_TINYBLAS)(N, &a, x, y);
            sl_vec_dot_fp_order(types[k], SL_FP_VECDOT)(N, &b, x, y);
            differ += a != b;
            CHECK(fabsf(a - b) <= 1e-3f * (fabsf(a) + 1.0f));
        }
        CHECK_MSG(differ > 0, "%s: the orders never differ", sl_type_get(types[k])->name);
    }
}

TEST(rule)
{
    CHECK(sl_mm_fp_order_for(256, 512, 0) == SL_FP_TINYBLAS); /* 2-d, tinyBLAS's shapes */
    CHECK(sl_mm_fp_order_for(4, 8, 0) == SL_FP_TINYBLAS);
    CHECK(sl_mm_fp_order_for(256, 512, 8) == SL_FP_VECDOT);   /* MUL_MAT_ID */
    CHECK(sl_mm_fp_order_for(256, 512, 1) == SL_FP_VECDOT);   /* one-expert tensor: still _ID */
    CHECK(sl_mm_fp_order_for(258, 512, 0) == SL_FP_VECDOT);   /* rows % 4 != 0 */
    CHECK(sl_mm_fp_order_for(256, 500, 0) == SL_FP_VECDOT);   /* cols % 8 != 0 */
}

/* sl_matmul_rows takes the rule's order per matrix, for 1 and 5 tokens */
TEST(matmul_follows_rule)
{
    enum { COLS = 96, NT = 5 };
    static const sl_type types[2] = {SL_TYPE_F16, SL_TYPE_BF16};
    static const struct { int64_t rows, n_experts; } shapes[] = {{8, 0}, {8, 4}, {6, 0}, {12, 1}};
    for (int k = 0; k < 2; k++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int64_t rows = shapes[si].rows;
            uint16_t *w = malloc(2 * (size_t)(rows * COLS));
            uint16_t a[NT][COLS];
            fill(types[k], w, (int)(rows * COLS), 1.0f);
            const void *acts[NT];
            for (int t = 0; t < NT; t++) {
                fill(types[k], a[t], COLS, 2.0f);
                acts[t] = a[t];
            }
            sl_mat m = {.type = types[k], .rows = rows, .cols = COLS, .row_bytes = 2 * COLS,
                        .data = w, .n_experts = shapes[si].n_experts};
            const bool tiny = shapes[si].n_experts == 0 && rows % 4 == 0;
            float y[NT * 12], row_tmp[COLS];
            for (int n = 1; n <= NT; n += NT - 1) {
                sl_matmul_rows(&m, acts, n, y, (size_t)rows, 0, rows, row_tmp);
                for (int t = 0; t < n; t++)
                    for (int64_t r = 0; r < rows; r++) {
                        const uint16_t *x = w + r * COLS;
                        const float want = tiny ? oracle_tinyblas(types[k], x, a[t], COLS)
                                                : oracle_vecdot(types[k], x, a[t], COLS);
                        CHECK_MSG(memcmp(&y[(size_t)t * (size_t)rows + (size_t)r], &want, 4) == 0,
                                  "%s rows %lld experts %lld n=%d: row %lld token %d not in the %s order",
                                  sl_type_get(types[k])->name, (long long)rows,
                                  (long long)shapes[si].n_experts, n, (long long)r, t,
                                  tiny ? "tinyBLAS" : "vec_dot");
                    }
            }
            free(w);
        }
}

/* F32 (vec_dot_type F32): tinyBLAS's order as above; ggml_vec_dot_f32 on
 * AVX2: four 8-lane FMA sums over steps of 32, reduced (s0+s2)+(s1+s3),
 * halves added, (t0+t1)+(t2+t3) in float, the tail by FMA in order */
static float oracle_f32(bool tiny, const float *x, const float *y, int n)
{
    int i = 0;
    float s;
    if (tiny) {
        float c[8] = {0}, h[4];
        for (; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; l++) c[l] = fmaf(x[i + l], y[i + l], c[l]);
        for (int l = 0; l < 4; l++) h[l] = c[l] + c[l + 4];
        s = (h[0] + h[2]) + (h[1] + h[3]);
    } else {
        float c[4][8] = {{0}}, r[8], h[4];
        for (; i + 32 <= n; i += 32)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 8; l++) c[j][l] = fmaf(x[i + 8 * j + l], y[i + 8 * j + l], c[j][l]);
        for (int l = 0; l < 8; l++) r[l] = (c[0][l] + c[2][l]) + (c[1][l] + c[3][l]);
        for (int l = 0; l < 4; l++) h[l] = r[l] + r[l + 4];
        s = (h[0] + h[1]) + (h[2] + h[3]);
    }
    for (; i < n; i++) s = fmaf(x[i], y[i], s);
    return s;
}

/* F32 matrices by the same rule: MUL_MAT_ID's experts (the one-expert
 * tensor of dense1-f32, [256 -> 512]; gemma4-l6-f32's 8 experts of
 * [128 -> 128]) and the shapes tinyBLAS refuses in ggml_vec_dot_f32's
 * order, 2-d weights of rows % 4 == 0 and cols % 8 == 0 in tinyBLAS's;
 * the two orders told apart on these rows */
TEST(f32_matmul_follows_rule)
{
    enum { NT = 5, RMAX = 512, CMAX = 256 };
    static const struct { int64_t rows, cols, n_experts; } shapes[] = {
        {512, 256, 1}, {128, 128, 8}, {256, 256, 0}, {6, 256, 0}, {8, 100, 0}, {8, 100, 4}};
    float *w = malloc(sizeof(float) * RMAX * CMAX), *y = malloc(sizeof(float) * NT * RMAX);
    float a[NT][CMAX], row_tmp[CMAX];
    int differ = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t rows = shapes[si].rows, cols = shapes[si].cols;
        for (int64_t i = 0; i < rows * cols; i++) w[i] = grand();
        const void *acts[NT];
        for (int t = 0; t < NT; t++) {
            for (int64_t i = 0; i < cols; i++) a[t][i] = 2.0f * grand();
            acts[t] = a[t];
        }
        sl_mat m = {.type = SL_TYPE_F32, .rows = rows, .cols = cols,
                    .row_bytes = sizeof(float) * (size_t)cols, .data = w,
                    .n_experts = shapes[si].n_experts};
        const bool tiny = shapes[si].n_experts == 0 && rows % 4 == 0 && cols % 8 == 0;
        for (int n = 1; n <= NT; n += NT - 1) {
            sl_matmul_rows(&m, acts, n, y, (size_t)rows, 0, rows, row_tmp);
            for (int t = 0; t < n; t++)
                for (int64_t r = 0; r < rows; r++) {
                    const float *x = w + r * cols;
                    const float want = oracle_f32(tiny, x, a[t], (int)cols);
                    differ += memcmp(&want, &(float){oracle_f32(!tiny, x, a[t], (int)cols)}, 4) != 0;
                    CHECK_MSG(memcmp(&y[(size_t)t * (size_t)rows + (size_t)r], &want, 4) == 0,
                              "f32 rows %lld cols %lld experts %lld n=%d: row %lld token %d not in "
                              "the %s order",
                              (long long)rows, (long long)cols, (long long)shapes[si].n_experts, n,
                              (long long)r, t, tiny ? "tinyBLAS" : "vec_dot");
                }
        }
    }
    CHECK_MSG(differ > 100, "the two f32 orders differ on only %d rows", differ);
    free(w);
    free(y);
}

int main(void)
{
    RUN(kernels_match_oracles);
    RUN(orders_differ);
    RUN(rule);
    RUN(matmul_follows_rule);
    RUN(f32_matmul_follows_rule);
    return TEST_REPORT();
}
