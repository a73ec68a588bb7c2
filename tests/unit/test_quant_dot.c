/* test_quant_dot.c - dot kernels: SIMD against the scalar reference, and
 * the reference against dequantise-then-dot.
 *
 * Oracle for the reference kernels: dequantise the weight row and the
 * activation row with to_float (tested by hand-built blocks in
 * test_quant_dequant.c) and sum the products in double. The integer
 * kernels are exact per block; they differ from the oracle only by float
 * rounding of the per-block scale products and the float accumulation, so
 * the tolerance is relative to S = sum |x_i * y_i|: 1e-5 * S (a wrong
 * element or nibble moves the result by about S / n, >= 1e-3 * S here
 * with n <= 1024).
 *
 * SIMD vs reference: same integer sums, different float accumulation
 * order: 1e-5 * S as well; the K-quant pairs are bit-identical (memcmp). Blocks are random bytes (every bit pattern of
 * quants, scales chosen finite), blocks quantised from Gaussian data,
 * all-zero blocks, extreme f16 scales and denormal-range values.
 * The activation quantisers' SIMD twins must produce identical bytes. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "quant/quant_internal.h"
#include "test.h"
#include "util/status.h"

static uint64_t g_rng = 0x243F6A8885A308D3ull;

static uint32_t rnd32(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 32);
}

static double urand(void)
{
    return (rnd32() + 0.5) / 4294967296.0;
}

static float grand(void)
{
    return (float)(sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand()));
}

/* the weight types with integer kernels and where their f16 scales are */
typedef struct {
    sl_type t;
    int nscale;      /* f16 fields per block */
    int off[2];      /* their byte offsets */
} wtype;

static const wtype wtypes[] = {
    {SL_TYPE_Q4_0, 1, {0}},      {SL_TYPE_Q4_1, 2, {0, 2}},   {SL_TYPE_Q5_0, 1, {0}},
    {SL_TYPE_Q5_1, 2, {0, 2}},   {SL_TYPE_Q8_0, 1, {0}},      {SL_TYPE_Q2_K, 2, {80, 82}},
    {SL_TYPE_Q3_K, 1, {108}},    {SL_TYPE_Q4_K, 2, {0, 2}},   {SL_TYPE_Q5_K, 2, {0, 2}},
    {SL_TYPE_Q6_K, 1, {208}},    {SL_TYPE_IQ4_NL, 1, {0}},    {SL_TYPE_IQ4_XS, 1, {0}},
    {SL_TYPE_MXFP4, 0, {0}},
};
#define NW (sizeof wtypes / sizeof wtypes[0])

enum { FILL_RANDOM, FILL_GAUSS, FILL_ZERO, FILL_HUGE_SCALE, FILL_DENORMAL_SCALE };

/* Fills nb blocks of weight type w. Scales: FILL_RANDOM uses f16 values in
 * [2^-8, 2^4) of either sign; HUGE uses 65504 (the largest f16); DENORMAL
 * uses f16 subnormals (0x0001..0x03FF). MXFP4's e: 120..135, or 230
 * (2^102: 12 * 2^102 still dequantises to a finite float) / 0..1 for the
 * extreme fills. */
static void fill_weights(const wtype *w, void *dst, int n, int mode)
{
    const sl_type_traits *tr = sl_type_get(w->t);
    int nb = n / (int)tr->block_size;
    uint8_t *p = dst;
    if (mode == FILL_GAUSS) {
        float *x = malloc(sizeof(float) * (size_t)n);
        for (int i = 0; i < n; i++) x[i] = grand();
        tr->from_float(x, dst, n);
        free(x);
        return;
    }
    if (mode == FILL_ZERO) {
        memset(dst, 0, (size_t)nb * tr->type_size);
        return;
    }
    for (size_t i = 0; i < (size_t)nb * tr->type_size; i++) p[i] = (uint8_t)rnd32();
    for (int b = 0; b < nb; b++) {
        uint8_t *blk = p + (size_t)b * tr->type_size;
        if (w->t == SL_TYPE_MXFP4) {
            blk[0] = mode == FILL_HUGE_SCALE ? 230 : mode == FILL_DENORMAL_SCALE ? (uint8_t)(rnd32() % 2)
                                                                                 : (uint8_t)(120 + rnd32() % 16);
            continue;
        }
        for (int k = 0; k < w->nscale; k++) {
            uint16_t h;
            if (mode == FILL_HUGE_SCALE) h = 0x7BFF;
            else if (mode == FILL_DENORMAL_SCALE) h = (uint16_t)(1 + rnd32() % 0x3FF);
            else h = (uint16_t)(((7 + rnd32() % 12) << 10) | (rnd32() & 0x3FF)); /* e 7..18 */
            h |= (uint16_t)((rnd32() & 1) << 15);
            memcpy(blk + w->off[k], &h, 2);
        }
    }
}

/* Activation row: quantised by the scalar reference quantiser from floats
 * of the given magnitude (F32 types use the floats directly). */
static void make_act(sl_type at, float scale, float *xf, void *dst, int n)
{
    for (int i = 0; i < n; i++) xf[i] = scale * grand();
    if (at == SL_TYPE_F32) memcpy(dst, xf, sizeof(float) * (size_t)n);
    else sl_quant_from_float_isa(at, SL_ISA_SCALAR)(xf, dst, n);
}

/* sum x_i*y_i in double and sum |x_i*y_i| over dequantised rows */
/* Q4_1 / Q5_1 against Q8_1 take their offset term as m * s, with s the
 * activation block's stored f16 sum (d * sum qs rounded), as the
 * reference defines the product: the dequantised dot's m * d * sum qs is
 * replaced by that, block by block (weight blocks start with f16 d, m;
 * Q8_1 blocks with f16 d, s, then 32 levels). */
static double q8_1_offset_fix(sl_type wt, const void *w, const void *a, int n)
{
    const size_t wb = wt == SL_TYPE_Q4_1 ? 20 : 24;
    double fix = 0.0;
    for (int b = 0; b < n / 32; b++) {
        const uint8_t *pw = (const uint8_t *)w + (size_t)b * wb, *pa = (const uint8_t *)a + (size_t)b * 36;
        uint16_t m, d, s;
        memcpy(&m, pw + 2, 2);
        memcpy(&d, pa, 2);
        memcpy(&s, pa + 2, 2);
        int sum = 0;
        for (int i = 0; i < 32; i++) sum += (int8_t)pa[4 + i];
        fix += (double)sl_fp16_to_f32(m) *
               ((double)sl_fp16_to_f32(s) - (double)sl_fp16_to_f32(d) * (double)sum);
    }
    return fix;
}

static void oracle(sl_type wt, const void *w, sl_type at, const void *a, int n, double *dot,
                   double *mag)
{
    float *xw = malloc(sizeof(float) * (size_t)n), *xa = malloc(sizeof(float) * (size_t)n);
    sl_type_get(wt)->to_float(w, xw, n);
    sl_type_get(at)->to_float(a, xa, n);
    *dot = 0;
    *mag = 0;
    for (int i = 0; i < n; i++) {
        double p = (double)xw[i] * (double)xa[i];
        *dot += p;
        *mag += fabs(p);
    }
    if (at == SL_TYPE_Q8_1 && (wt == SL_TYPE_Q4_1 || wt == SL_TYPE_Q5_1)) *dot += q8_1_offset_fix(wt, w, a, n);
    free(xw);
    free(xa);
}

static bool have_avx2(void)
{
    return sl_quant_vec_dot_isa(SL_TYPE_Q8_0, SL_ISA_AVX2) != NULL;
}

static void check_type(const wtype *w, int n, int mode, float act_scale, const char *what)
{
    const sl_type_traits *tr = sl_type_get(w->t);
    sl_type at = tr->vec_dot_type;
    uint64_t wb = 0, ab = 0;
    SL_ASSERT(sl_type_nbytes(w->t, (uint64_t)n, &wb) && sl_type_nbytes(at, (uint64_t)n, &ab));
    void *wq = malloc(wb), *aq = malloc(ab);
    float *xf = malloc(sizeof(float) * (size_t)n);
    fill_weights(w, wq, n, mode);
    make_act(at, act_scale, xf, aq, n);
    double want, mag;
    oracle(w->t, wq, at, aq, n, &want, &mag);
    float ref = NAN, simd = NAN;
    sl_quant_vec_dot_isa(w->t, SL_ISA_SCALAR)(n, &ref, wq, aq);
    CHECK_MSG(fabs(ref - want) <= 1e-5 * mag + 1e-44, "%s %s n=%d: ref %.9g oracle %.9g (S %.3g)",
              tr->name, what, n, (double)ref, want, mag);
    if (have_avx2()) {
        sl_quant_vec_dot_isa(w->t, SL_ISA_AVX2)(n, &simd, wq, aq);
        CHECK_MSG(fabs(simd - ref) <= 1e-5 * mag + 1e-44,
                  "%s %s n=%d: avx2 %.9g ref %.9g (S %.3g)", tr->name, what, n, (double)simd,
                  (double)ref, mag);
    }
    free(wq);
    free(aq);
    free(xf);
}

TEST(random_blocks)
{
    for (size_t k = 0; k < NW; k++)
        for (int rep = 0; rep < 20; rep++) {
            int n = 256 * (1 + (int)(rnd32() % 4)); /* 1..4 super-blocks, odd block counts too */
            if (sl_type_get(wtypes[k].t)->block_size == 32) n = 32 * (1 + (int)(rnd32() % 32));
            check_type(&wtypes[k], n, FILL_RANDOM, 1.0f, "random");
        }
}

TEST(gaussian_blocks)
{
    for (size_t k = 0; k < NW; k++)
        for (int rep = 0; rep < 5; rep++) check_type(&wtypes[k], 1024, FILL_GAUSS, 1.0f, "gauss");
}

TEST(zero_blocks)
{
    for (size_t k = 0; k < NW; k++) {
        const sl_type_traits *tr = sl_type_get(wtypes[k].t);
        uint64_t wb = 0, ab = 0;
        sl_type_nbytes(wtypes[k].t, 512, &wb);
        sl_type_nbytes(tr->vec_dot_type, 512, &ab);
        void *wq = calloc(1, wb), *aq = malloc(ab);
        float xf[512];
        make_act(tr->vec_dot_type, 1.0f, xf, aq, 512);
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            sl_vec_dot_fn f = sl_quant_vec_dot_isa(wtypes[k].t, (sl_isa)isa);
            if (!f) continue;
            float s = 1.0f;
            f(512, &s, wq, aq);
            CHECK_MSG(s == 0.0f, "%s %s: zero weights gave %g", tr->name, sl_isa_name((sl_isa)isa),
                      (double)s);
        }
        /* zero activations too */
        fill_weights(&wtypes[k], wq, 512, FILL_RANDOM);
        memset(xf, 0, sizeof xf);
        sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)(xf, aq, 512);
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            sl_vec_dot_fn f = sl_quant_vec_dot_isa(wtypes[k].t, (sl_isa)isa);
            if (!f) continue;
            float s = 1.0f;
            f(512, &s, wq, aq);
            CHECK_MSG(s == 0.0f, "%s %s: zero activations gave %g", tr->name,
                      sl_isa_name((sl_isa)isa), (double)s);
        }
        free(wq);
        free(aq);
    }
}

TEST(extreme_scales)
{
    for (size_t k = 0; k < NW; k++) {
        /* the largest f16 scales with small activations: large but finite */
        check_type(&wtypes[k], 512, FILL_HUGE_SCALE, 1e-3f, "huge-scale");
        /* f16 subnormal weight scales with tiny activations: products of
         * scales fall in float's subnormal range */
        check_type(&wtypes[k], 512, FILL_DENORMAL_SCALE, 1e-25f, "denormal");
        /* activations of 1e4: finite, except where the reference's Q8_1
         * pairing (Q4_1, Q5_1) stores a block's sum as f16, which
         * overflows there (as in llama.cpp); those take 1e2 */
        const bool q8_1 = sl_type_get(wtypes[k].t)->vec_dot_type == SL_TYPE_Q8_1;
        check_type(&wtypes[k], 512, FILL_RANDOM, q8_1 ? 1e2f : 1e4f, "big-act");
    }
}

/* The K-quant kernels: the scalar twin gives the AVX2 kernel's bits
 * exactly (same int32 lanes, same FMAs in the same order, same lane sums;
 * the AVX2 kernels follow llama.cpp's x86 ones), on every fill and
 * activation magnitude, for 1..5 super-blocks. */
TEST(k_quants_scalar_bits_equal_avx2)
{
    if (!have_avx2()) return;
    static const sl_type kt[] = {SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q4_K, SL_TYPE_Q5_K,
                                 SL_TYPE_Q6_K};
    static const struct {
        int mode;
        float act;
    } cases[] = {{FILL_RANDOM, 1.0f},       {FILL_GAUSS, 1.0f},
                 {FILL_ZERO, 1.0f},         {FILL_HUGE_SCALE, 1e-3f},
                 {FILL_DENORMAL_SCALE, 1e-25f}, {FILL_RANDOM, 1e4f}};
    int compared = 0;
    for (size_t k = 0; k < NW; k++) {
        bool is_k = false;
        for (size_t j = 0; j < sizeof kt / sizeof kt[0]; j++) is_k |= wtypes[k].t == kt[j];
        if (!is_k) continue;
        const sl_type_traits *tr = sl_type_get(wtypes[k].t);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int rep = 0; rep < 8; rep++) {
                const int n = 256 * (1 + rep % 5);
                uint64_t wb = 0, ab = 0;
                SL_ASSERT(sl_type_nbytes(wtypes[k].t, (uint64_t)n, &wb) &&
                          sl_type_nbytes(SL_TYPE_Q8_K, (uint64_t)n, &ab));
                void *wq = malloc(wb), *aq = malloc(ab);
                float *xf = malloc(sizeof(float) * (size_t)n);
                fill_weights(&wtypes[k], wq, n, cases[c].mode);
                make_act(SL_TYPE_Q8_K, cases[c].act, xf, aq, n);
                float r = 0.0f, v = 1.0f;
                sl_quant_vec_dot_isa(wtypes[k].t, SL_ISA_SCALAR)(n, &r, wq, aq);
                sl_quant_vec_dot_isa(wtypes[k].t, SL_ISA_AVX2)(n, &v, wq, aq);
                CHECK_MSG(memcmp(&r, &v, sizeof r) == 0, "%s case %zu n=%d: scalar %.9g avx2 %.9g",
                          tr->name, c, n, (double)r, (double)v);
                compared++;
                free(wq);
                free(aq);
                free(xf);
            }
    }
    CHECK(compared == 5 * 6 * 8);
}

TEST(float_kernels)
{
    static const sl_type ft[] = {SL_TYPE_F32, SL_TYPE_F16, SL_TYPE_BF16};
    static const int ns[] = {1, 7, 31, 32, 33, 77, 256, 1000};
    for (size_t k = 0; k < 3; k++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            int n = ns[j];
            float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
            uint8_t *w = malloc(4 * (size_t)n);
            for (int i = 0; i < n; i++) {
                x[i] = grand() * (i % 5 == 0 ? 1e-6f : 1.0f); /* some f16 subnormals */
                y[i] = grand();
            }
            const sl_type_traits *tr = sl_type_get(ft[k]);
            tr->from_float(x, w, n);
            /* the activations in the weight type's vec_dot_type (f16 and
             * bf16 weights take activations rounded to their own type) */
            uint8_t *a = malloc(4 * (size_t)n);
            sl_type_get(tr->vec_dot_type)->from_float(y, a, n);
            double want, mag;
            oracle(ft[k], w, tr->vec_dot_type, a, n, &want, &mag);
            float ref, simd;
            sl_quant_vec_dot_isa(ft[k], SL_ISA_SCALAR)(n, &ref, w, a);
            /* float sums of n terms: relative error <= n * 2^-24 of S */
            double tol = (n + 2) * 6e-8 * mag + 1e-44;
            CHECK_MSG(fabs(ref - want) <= tol, "%s n=%d: ref %.9g want %.9g", tr->name, n,
                      (double)ref, want);
            if (have_avx2()) {
                sl_quant_vec_dot_isa(ft[k], SL_ISA_AVX2)(n, &simd, w, a);
                CHECK_MSG(fabs(simd - want) <= tol, "%s n=%d: avx2 %.9g want %.9g", tr->name,
                          n, (double)simd, want);
                /* both follow llama.cpp's order: the same bits */
                CHECK_MSG(simd == ref, "%s n=%d: avx2 %.9g != scalar %.9g", tr->name, n,
                          (double)simd, (double)ref);
            }
            free(a);
            free(x);
            free(y);
            free(w);
        }
}

TEST(activation_quantisers_identical)
{
    if (!have_avx2()) return;
    static const sl_type at[] = {SL_TYPE_Q8_0, SL_TYPE_Q8_1, SL_TYPE_Q8_K};
    static const float mags[] = {1.0f, 1e-3f, 1e6f, 1e-20f, 1e-39f, 1e-44f, 0.0f, 3e38f};
    enum { N = 1024 };
    float x[N];
    uint8_t a[N * 2], b[N * 2];
    for (size_t k = 0; k < 3; k++)
        for (size_t m = 0; m < sizeof mags / sizeof mags[0]; m++) {
            for (int i = 0; i < N; i++) {
                x[i] = mags[m] * grand();
                if (i % 97 == 3) x[i] = 0.0f;
                if (m == 0 && i % 61 == 0) x[i] = (float)((int)(grand() * 4)) * 0.5f; /* ties */
            }
            uint64_t nb = 0;
            sl_type_nbytes(at[k], N, &nb);
            memset(a, 0x11, sizeof a);
            memset(b, 0x22, sizeof b);
            sl_quant_from_float_isa(at[k], SL_ISA_SCALAR)(x, a, N);
            sl_quant_from_float_isa(at[k], SL_ISA_AVX2)(x, b, N);
            CHECK_MSG(memcmp(a, b, nb) == 0, "%s magnitude %g: scalar and avx2 bytes differ",
                      sl_type_name(at[k]), (double)mags[m]);
        }
}

/* Levels exactly halfway between two integers must round to even in both
 * quantisers: x = amax * (k + 0.5) / 127 is not exact in float, so build
 * blocks whose scale is a power of two instead: amax = 127 * 2^-3 gives
 * d = 2^-3 exactly (Q8_K) and x = 2.5 * d -> level 2, 3.5 * d -> 4. */
TEST(q8_K_ties_to_even)
{
    float x[256];
    for (int i = 0; i < 256; i++) x[i] = 0.0f;
    x[0] = 127.0f / 8;
    x[1] = 2.5f / 8;
    x[2] = 3.5f / 8;
    x[3] = -2.5f / 8;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        sl_from_float_fn f = sl_quant_from_float_isa(SL_TYPE_Q8_K, (sl_isa)isa);
        if (!f) continue;
        sl_block_q8_K b;
        f(x, &b, 256);
        CHECK(b.d == 0.125f);
        CHECK_EQ_INT(b.qs[0], 127);
        CHECK_EQ_INT(b.qs[1], 2);
        CHECK_EQ_INT(b.qs[2], 4);
        CHECK_EQ_INT(b.qs[3], -2);
        CHECK_EQ_INT(b.bsums[0], 127 + 2 + 4 - 2);
    }
}

TEST(dispatch_matches_table)
{
    sl_isa isa = sl_quant_isa();
    const char *env = getenv("SLUICE_NO_SIMD");
    if (env && env[0] && strcmp(env, "0") != 0) CHECK(isa == SL_ISA_SCALAR);
    else if (have_avx2()) CHECK(isa == SL_ISA_AVX2);
    for (size_t k = 0; k < NW; k++) {
        const sl_type_traits *tr = sl_type_get(wtypes[k].t);
        CHECK(tr->vec_dot == sl_quant_vec_dot_isa(wtypes[k].t, isa));
    }
    CHECK(sl_quant_vec_dot_isa(SL_TYPE_Q4_K, (sl_isa)7) == NULL);
    CHECK(sl_quant_vec_dot_isa(999, SL_ISA_SCALAR) == NULL);
}

/* SLUICE_NO_SIMD=1 must select the scalar kernels: run this binary again
 * with the variable set and ask it which set it chose. */
TEST(no_simd_env_forces_scalar)
{
    pid_t pid = fork();
    if (pid < 0 && errno == ENOSYS) { /* Windows: scripts/run-windows.sh runs it again */
        printf("   (no fork here: the runner repeats this binary with SLUICE_NO_SIMD=1)\n");
        return;
    }
    if (pid == 0) {
        setenv("SLUICE_NO_SIMD", "1", 1);
        execl("/proc/self/exe", "test_quant_dot", "--print-isa", (char *)NULL);
        _exit(100);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
#if defined(__aarch64__)
    /* under qemu-user without binfmt_misc the host cannot exec an aarch64
     * binary (the child's execl fails); nothing to ask then */
    if (WIFEXITED(st) && WEXITSTATUS(st) == 100) {
        printf("   (cannot re-exec this binary here, emulated?: skipped)\n");
        return;
    }
#endif
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 10 + SL_ISA_SCALAR);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--print-isa") == 0) return 10 + (int)sl_quant_isa();
    RUN(random_blocks);
    RUN(gaussian_blocks);
    RUN(zero_blocks);
    RUN(extreme_scales);
    RUN(k_quants_scalar_bits_equal_avx2);
    RUN(float_kernels);
    RUN(activation_quantisers_identical);
    RUN(q8_K_ties_to_even);
    RUN(dispatch_matches_table);
    RUN(no_simd_env_forces_scalar);
    return TEST_REPORT();
}
