/* test_matmul_form.c - the one-row forms of a matrix product
 * (sl_matmul_rows_form, ops.h SL_MM_FORM_*): llama.cpp multiplies a
 * micro-batch of one row, and the last nrows % 4 rows of a repacked Q4_K
 * product, by other kernels than a batch, in another float order.
 *
 * Oracles written here from llama.cpp's AVX2 code as plain C, not from
 * sluice's kernels:
 *   - Q4_K repacked (2-d, rows % 8 == 0) against Q8_K: its gemm keeps two
 *     FMA chains stepped once per 64-element chunk, its gemv (a row with
 *     SL_MM_FORM_TAIL) once per 256-element super-block; A - M at the end.
 *   - F32 (2-d, rows % 4 == 0, cols % 8 == 0): tinyBLAS (the batch) runs one
 *     8-lane FMA chain over the columns and sums the lanes as
 *     ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)); ggml_vec_dot_f32 (a row
 *     with SL_MM_FORM_ONE) four 8-lane chains over 32-column steps, added
 *     as (c0+c2) + (c1+c3), its lanes as ((l0+l4) + (l1+l5)) + ((l2+l6) +
 *     (l3+l7)).
 *   - IQ4_NL not repacked (a 3-d weight's slices, rows % 8 != 0) against
 *     Q8_0: tinyBLAS's quantised gemm (the batch) keeps one 8-lane chain,
 *     lane l of block i FMA'ing (d_x * d_y) * (exact sum of elements
 *     4l..4l+3); ggml_vec_dot_iq4_nl_q8_0 (a row with SL_MM_FORM_ONE) two,
 *     even and odd blocks, added lane by lane; both sum the lanes as
 *     ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
 * Every (row, token) must have the oracle's bits for its own form, in a
 * batch that mixes forms, over a row range that starts and ends inside an
 * eight-row group; matrices whose order does not depend on the form (an
 * expert's, rows % 8 != 0, other types) ignore it. Forms and orders are
 * shown to differ on these inputs, else the test could not tell them
 * apart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rand_blocks.h"
#include "ops/matmul_order.h"
#include "ops/ops.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_fp_order.h"
#include "test.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static float grand(void) { return t_rng_gauss(&g_rng); }

/* ---- Q4_K ---------------------------------------------------------------- */

/* sub-block k's 6-bit scale and min from the 12 packed bytes */
static void q4k_scale_min(const uint8_t s[12], int k, int *sc, int *mn)
{
    if (k < 4) {
        *sc = s[k] & 63;
        *mn = s[k + 4] & 63;
    } else {
        *sc = (s[k + 4] & 0x0F) | (s[k - 4] >> 6) << 4;
        *mn = (s[k + 4] >> 4) | (s[k] >> 6) << 4;
    }
}

/* level j of a super-block: 64-element chunk j / 64 in bytes 32 (j / 64)..,
 * low nibbles for its first 32 elements, high for the next 32 */
static int q4k_level(const sl_block_q4_K *b, int j)
{
    const uint8_t q = b->qs[32 * (j / 64) + j % 32];
    return j % 64 < 32 ? (q & 0x0F) : (q >> 4);
}

/* llama.cpp's repacked Q4_K x Q8_K for one (row, token): gemv = false the
 * gemm's steps (per 64 elements), true the gemv's (per super-block) */
static float q4k_repacked(const sl_block_q4_K *x, const sl_block_q8_K *y, int nb, bool gemv)
{
    float acc = 0.0f, acc_min = 0.0f;
    for (int i = 0; i < nb; i++) {
        const float dd = sl_fp16_to_f32(x[i].d) * y[i].d;
        const float dm = sl_fp16_to_f32(x[i].dmin) * y[i].d;
        long long isum = 0, imin = 0;
        for (int k = 0; k < 8; k++) {
            int sc, mn;
            q4k_scale_min(x[i].scales, k, &sc, &mn);
            long long dot = 0;
            for (int j = 32 * k; j < 32 * k + 32; j++) dot += q4k_level(&x[i], j) * y[i].qs[j];
            isum += sc * dot;
            imin += mn * (long long)(y[i].bsums[2 * k] + y[i].bsums[2 * k + 1]);
            if (!gemv && k % 2 == 1) {
                acc = fmaf((float)isum, dd, acc);
                acc_min = fmaf((float)imin, dm, acc_min);
                isum = imin = 0;
            }
        }
        if (gemv) {
            acc = fmaf((float)isum, dd, acc);
            acc_min = fmaf((float)imin, dm, acc_min);
        }
    }
    return acc - acc_min;
}

/* ---- F32 ----------------------------------------------------------------- */

/* tinyBLAS (AVX2) for one (row, column): one 8-lane FMA chain, then
 * hsum: the halves added lane by lane, then (0+2) + (1+3) */
static float f32_tinyblas(const float *a, const float *b, int n)
{
    float l[8] = {0};
    for (int i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++) l[j] = fmaf(a[i + j], b[i + j], l[j]);
    float u[4];
    for (int j = 0; j < 4; j++) u[j] = l[j + 4] + l[j];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* ggml_vec_dot_f32 (AVX2, n % 32 == 0): four 8-lane chains, chain j over
 * elements 32 s + 8 j + lane; reduced c0 += c2, c1 += c3, c0 += c1; the
 * halves added lane by lane, then two horizontal adds: (0+1) + (2+3) */
static float f32_vec_dot(const float *a, const float *b, int n)
{
    float c[4][8] = {{0}};
    for (int i = 0; i < n; i += 32)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 8; k++)
                c[j][k] = fmaf(a[i + 8 * j + k], b[i + 8 * j + k], c[j][k]);
    for (int k = 0; k < 8; k++) {
        c[0][k] = c[0][k] + c[2][k];
        c[1][k] = c[1][k] + c[3][k];
    }
    for (int k = 0; k < 8; k++) c[0][k] = c[0][k] + c[1][k];
    float u[4];
    for (int j = 0; j < 4; j++) u[j] = c[0][j] + c[0][j + 4];
    return (u[0] + u[1]) + (u[2] + u[3]);
}

/* ---- the products ------------------------------------------------------- */

enum { NT = 9 };
/* a batch mixing the forms: batched rows, a repacked tail, one-row rows */
static const uint8_t forms[NT] = {0, 0, SL_MM_FORM_TAIL, 0, SL_MM_FORM_ONE | SL_MM_FORM_TAIL,
                                  SL_MM_FORM_TAIL, 0, SL_MM_FORM_ONE, 0};

/* NT random activation rows of cols values prepared for m's products
 * (malloc'ed: the caller frees), each one's start in acts. */
static uint8_t *random_acts(const sl_mat *m, int64_t cols, const void *acts[NT])
{
    const size_t ab = sl_matvec_act_bytes(m->type, cols);
    uint8_t *act = malloc(ab * NT);
    float *xf = malloc(sizeof(float) * (size_t)cols);
    for (int t = 0; t < NT; t++) {
        for (int64_t i = 0; i < cols; i++) xf[i] = grand();
        sl_matvec_prepare(m, xf, act + ab * (size_t)t);
        acts[t] = act + ab * (size_t)t;
    }
    free(xf);
    return act;
}

/* A Q4_K matrix (rows x 3 super-blocks, n_experts) times NT tokens with the
 * forms above, rows [r0, r1): each value against the oracle, gemv when
 * want_gemv(form). Returns how many (row, token) pairs took the gemv
 * order and differ from the gemm one, so the caller can tell the check
 * had teeth. */
static int check_q4k(int64_t rows, int64_t n_experts, int mode)
{
    enum { NB = 3 };
    const int64_t cols = SL_QK_K * NB;
    float *xf = malloc(sizeof(float) * (size_t)(cols * (rows > NT ? rows : NT)));
    sl_block_q4_K *w = malloc(sizeof *w * NB * (size_t)rows);
    for (int64_t i = 0; i < cols * rows; i++) xf[i] = grand();
    sl_quantize_fast(SL_TYPE_Q4_K, xf, w, cols * rows);
    sl_mat m = {.type = SL_TYPE_Q4_K, .rows = rows, .cols = cols, .row_bytes = sizeof *w * NB,
                .data = w, .n_experts = n_experts};
    sl_block_q8_K y[NT][NB];
    const void *acts[NT];
    for (int t = 0; t < NT; t++) {
        for (int64_t i = 0; i < cols; i++) xf[i] = grand() * (float)(1 + t % 3);
        sl_matvec_prepare(&m, xf, y[t]);
        acts[t] = y[t];
    }
    float out[NT * 16];
    const int64_t r0 = 3, r1 = rows - 2; /* inside the first and last groups */
    sl_matmul_rows_form(&m, acts, forms, NT, out, (size_t)rows, r0, r1, xf);
    int teeth = 0;
    for (int t = 0; t < NT; t++)
        for (int64_t r = r0; r < r1; r++) {
            float want;
            const bool repacked = rows % 8 == 0 && n_experts != 1;
            if (!repacked) sl_type_get(SL_TYPE_Q4_K)->vec_dot(cols, &want, w + r * NB, y[t]);
            else {
                /* a 2-d matrix: the gemv for its tail rows; an expert's:
                 * the gemv for every row (MUL_MAT_ID) */
                const bool gemv = n_experts > 1 || (forms[t] & SL_MM_FORM_TAIL);
                want = q4k_repacked(w + r * NB, y[t], NB, gemv);
                if (gemv && n_experts == 0) teeth += want != q4k_repacked(w + r * NB, y[t], NB, false);
            }
            CHECK_MSG(memcmp(&out[t * rows + r], &want, 4) == 0,
                      "q4_K rows %lld experts %lld mode %d: token %d (form %d) row %lld %.9g, "
                      "llama.cpp's order %.9g", (long long)rows, (long long)n_experts, mode, t,
                      forms[t], (long long)r, (double)out[t * rows + r], (double)want);
        }
    /* the forms NULL: every token batched (the gemm for a 2-d matrix) */
    sl_matmul_rows_form(&m, acts, NULL, NT, out, (size_t)rows, r0, r1, xf);
    float ref[NT * 16];
    sl_matmul_rows(&m, acts, NT, ref, (size_t)rows, r0, r1, xf);
    for (int t = 0; t < NT; t++)
        for (int64_t r = r0; r < r1; r++)
            CHECK(memcmp(&out[t * rows + r], &ref[t * rows + r], 4) == 0);
    free(xf);
    free(w);
    return teeth;
}

TEST(q4k_tail_rows_take_the_gemv)
{
    int teeth = 0;
    for (int rep = 0; rep < 4; rep++) teeth += check_q4k(16, 0, rep);
    CHECK_MSG(teeth > 0, "the gemv and gemm orders never differed: the test has no teeth");
    check_q4k(16, 8, 0); /* an expert: the gemv whatever the form */
    check_q4k(16, 1, 0); /* one expert (2-d to ggml, not repacked): plain */
    check_q4k(12, 0, 0); /* rows % 8 != 0: not repacked, plain */
}

/* An F32 matrix rows x cols times NT tokens with the forms above. */
static int check_f32(int64_t rows, int64_t cols, int64_t n_experts)
{
    float *w = malloc(sizeof(float) * (size_t)(rows * cols));
    float *x = malloc(sizeof(float) * (size_t)(NT * cols));
    for (int64_t i = 0; i < rows * cols; i++) w[i] = grand();
    for (int64_t i = 0; i < NT * cols; i++) x[i] = grand();
    sl_mat m = {.type = SL_TYPE_F32, .rows = rows, .cols = cols,
                .row_bytes = sizeof(float) * (size_t)cols, .data = w, .n_experts = n_experts};
    const void *acts[NT];
    for (int t = 0; t < NT; t++) acts[t] = x + t * cols;
    float *out = malloc(sizeof(float) * (size_t)(NT * rows));
    float *tmp = malloc(sizeof(float) * (size_t)cols);
    const int64_t r0 = 1, r1 = rows - 1;
    sl_matmul_rows_form(&m, acts, forms, NT, out, (size_t)rows, r0, r1, tmp);
    const bool tiny = n_experts == 0 && rows % 4 == 0 && cols % 8 == 0;
    int teeth = 0;
    for (int t = 0; t < NT; t++)
        for (int64_t r = r0; r < r1; r++) {
            const float *a = w + r * cols, *b = x + t * cols;
            const bool one = !tiny || (forms[t] & SL_MM_FORM_ONE);
            const float want = one ? f32_vec_dot(a, b, (int)cols) : f32_tinyblas(a, b, (int)cols);
            if (tiny && one) teeth += want != f32_tinyblas(a, b, (int)cols);
            CHECK_MSG(memcmp(&out[t * rows + r], &want, 4) == 0,
                      "f32 %lld x %lld experts %lld: token %d (form %d) row %lld %.9g, "
                      "llama.cpp's order %.9g", (long long)rows, (long long)cols,
                      (long long)n_experts, t, forms[t], (long long)r,
                      (double)out[t * rows + r], (double)want);
        }
    free(w);
    free(x);
    free(out);
    free(tmp);
    return teeth;
}

TEST(f32_one_row_takes_vec_dot)
{
    int teeth = 0;
    for (int rep = 0; rep < 3; rep++) teeth += check_f32(12, 256, 0);
    teeth += check_f32(8, 1024, 0);
    CHECK_MSG(teeth > 0, "tinyBLAS and ggml_vec_dot_f32 never differed: the test has no teeth");
    check_f32(12, 256, 4); /* an expert: ggml_vec_dot_f32 for every row */
    check_f32(10, 256, 0); /* rows % 4 != 0: tinyBLAS refuses it */
}

/* F16 / BF16: the one-row form takes the vec_dot order, a batched row the
 * tinyBLAS one (vec_dot_fp_order.h; their bits are test_vec_dot_fp's). */
TEST(fp16_one_row_takes_vec_dot)
{
    static const sl_type types[] = {SL_TYPE_F16, SL_TYPE_BF16};
    enum { ROWS = 8, COLS = 256 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const sl_type ty = types[ti];
        const sl_type_traits *tr = sl_type_get(ty);
        float *wf = malloc(sizeof(float) * ROWS * COLS);
        uint8_t *w = malloc(tr->type_size * ROWS * COLS);
        for (int i = 0; i < ROWS * COLS; i++) wf[i] = grand();
        tr->from_float(wf, w, ROWS * COLS);
        sl_mat m = {.type = ty, .rows = ROWS, .cols = COLS, .row_bytes = tr->type_size * COLS,
                    .data = w};
        const void *acts[NT];
        uint8_t *act = random_acts(&m, COLS, acts);
        float out[NT * ROWS];
        sl_matmul_rows_form(&m, acts, forms, NT, out, ROWS, 0, ROWS, wf);
        const sl_vec_dot_fn vd = sl_vec_dot_fp_order(ty, SL_FP_VECDOT);
        const sl_vec_dot_fn tb = sl_vec_dot_fp_order(ty, SL_FP_TINYBLAS);
        CHECK(vd && tb);
        for (int t = 0; vd && tb && t < NT; t++)
            for (int r = 0; r < ROWS; r++) {
                float want;
                ((forms[t] & SL_MM_FORM_ONE) ? vd : tb)(COLS, &want,
                                                        w + tr->type_size * COLS * (size_t)r,
                                                        acts[t]);
                CHECK_MSG(memcmp(&out[t * ROWS + r], &want, 4) == 0,
                          "%s token %d (form %d) row %d: %.9g, want %.9g", tr->name, t,
                          forms[t], r, (double)out[t * ROWS + r], (double)want);
            }
        free(wf);
        free(w);
        free(act);
    }
}

/* IQ4_NL x Q8_0 in llama.cpp's two orders (header): chains 1 (tinyBLAS) or
 * 2 (ggml_vec_dot_iq4_nl_q8_0, block i into chain i % 2). */
static float iq4nl_order(const sl_block_iq4_nl *x, const sl_block_q8_0 *y, int nb, int chains)
{
    static const int8_t k_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};
    float lane[2][8] = {{0}};
    for (int i = 0; i < nb; i++) {
        int8_t v[32];
        for (int j = 0; j < 16; j++) {
            v[j] = k_values[x[i].qs[j] & 15];
            v[j + 16] = k_values[x[i].qs[j] >> 4];
        }
        const float d = sl_h2f(x[i].d) * sl_h2f(y[i].d);
        for (int l = 0; l < 8; l++) {
            int p = 0;
            for (int j = 4 * l; j < 4 * l + 4; j++) p += v[j] * y[i].qs[j];
            lane[i % chains][l] = fmaf(d, (float)p, lane[i % chains][l]);
        }
    }
    float u[8];
    for (int l = 0; l < 8; l++) u[l] = chains == 2 ? lane[0][l] + lane[1][l] : lane[0][l];
    return ((u[0] + u[4]) + (u[2] + u[6])) + ((u[1] + u[5]) + (u[3] + u[7]));
}

/* rows x 256 IQ4_NL cut as n_experts says, NT tokens with the forms above:
 * returns how often the two orders differ on a batched row (the teeth). */
static int check_iq4nl(int64_t rows, int64_t n_experts, bool tinyblas)
{
    enum { COLS = 256, NB = COLS / 32 };
    const sl_type ty = SL_TYPE_IQ4_NL;
    float *wf = malloc(sizeof(float) * (size_t)rows * COLS);
    const size_t rb = sizeof(sl_block_iq4_nl) * NB;
    uint8_t *w = malloc(rb * (size_t)rows);
    for (int64_t i = 0; i < rows * COLS; i++) wf[i] = grand();
    sl_quantize_fast(ty, wf, w, rows * COLS);
    sl_mat m = {.type = ty, .rows = rows, .cols = COLS, .row_bytes = rb, .data = w,
                .n_experts = n_experts};
    const void *acts[NT];
    uint8_t *act = random_acts(&m, COLS, acts);
    float *out = malloc(sizeof(float) * (size_t)(NT * rows));
    sl_matmul_rows_form(&m, acts, forms, NT, out, (size_t)rows, 0, rows, wf);
    int teeth = 0;
    for (int t = 0; t < NT; t++)
        for (int64_t r = 0; r < rows; r++) {
            const sl_block_iq4_nl *x = (const sl_block_iq4_nl *)(w + rb * (size_t)r);
            const sl_block_q8_0 *y = acts[t];
            const bool batched = tinyblas && !(forms[t] & SL_MM_FORM_ONE);
            const float want = iq4nl_order(x, y, NB, batched ? 1 : 2);
            if (batched) teeth += want != iq4nl_order(x, y, NB, 2);
            CHECK_MSG(memcmp(&out[t * rows + r], &want, 4) == 0,
                      "iq4_nl %lld rows, experts %lld: token %d (form %d) row %lld %.9g, "
                      "llama.cpp's order %.9g", (long long)rows, (long long)n_experts, t,
                      forms[t], (long long)r, (double)out[t * rows + r], (double)want);
        }
    free(wf);
    free(w);
    free(act);
    free(out);
    return teeth;
}

TEST(iq4nl_batched_takes_tinyblas)
{
    int teeth = 0;
    for (int rep = 0; rep < 4; rep++) teeth += check_iq4nl(12, SL_MM_BATCHED_3D, true);
    teeth += check_iq4nl(12, 0, true); /* 2-d, rows % 8 != 0: not repacked */
    CHECK_MSG(teeth > 0, "tinyBLAS and ggml_vec_dot_iq4_nl_q8_0 never differed: no teeth");
    check_iq4nl(12, 4, false); /* an expert: ggml_vec_dot for every row */
}

/* Types with one order for every row ignore the forms. */
TEST(other_types_ignore_forms)
{
    enum { ROWS = 8, COLS = 256 };
    const sl_type ty = SL_TYPE_Q8_0;
    const sl_type_traits *tr = sl_type_get(ty);
    float *wf = malloc(sizeof(float) * ROWS * COLS);
    const size_t rb = (size_t)COLS / tr->block_size * tr->type_size;
    uint8_t *w = malloc(rb * ROWS);
    for (int i = 0; i < ROWS * COLS; i++) wf[i] = grand();
    sl_quantize_fast(ty, wf, w, ROWS * COLS);
    sl_mat m = {.type = ty, .rows = ROWS, .cols = COLS, .row_bytes = rb, .data = w};
    const void *acts[NT];
    uint8_t *act = random_acts(&m, COLS, acts);
    float a[NT * ROWS], b[NT * ROWS];
    sl_matmul_rows_form(&m, acts, forms, NT, a, ROWS, 0, ROWS, wf);
    sl_matmul_rows(&m, acts, NT, b, ROWS, 0, ROWS, wf);
    CHECK(memcmp(a, b, sizeof a) == 0);
    free(wf);
    free(w);
    free(act);
}

int main(void)
{
    RUN(q4k_tail_rows_take_the_gemv);
    RUN(f32_one_row_takes_vec_dot);
    RUN(fp16_one_row_takes_vec_dot);
    RUN(other_types_ignore_forms);
    RUN(iq4nl_batched_takes_tinyblas);
    return TEST_REPORT();
}
