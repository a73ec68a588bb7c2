/* test_quant_dot_n.c - multi-token dot kernels (traits vec_dot_n) and the
 * batched matrix product that uses them.
 *
 * The contract is bit-identity: vec_dot_n(n, s, x, ys, nt) must write, for
 * every t, exactly the float vec_dot(n, &s[t], x, ys[t]) of the same kernel
 * set writes (the engine compares logits across batch sizes with memcmp).
 * The oracle is therefore the single-token kernel, itself tested against
 * dequantise-then-dot in test_quant_dot.c; results are compared with
 * memcmp for every kernel set this CPU runs, every nt in 1..max, on random
 * bytes (finite f16 scales), quantised Gaussian rows, all-zero blocks,
 * extreme and subnormal scales, and activation magnitudes from 1e-25 to
 * 1e4. A few rows built by hand check the values themselves (derivations
 * next to them), and the SIMD set is compared with the scalar one to
 * float-rounding tolerance. Finally sl_matmul_rows must give the bits of
 * per-token sl_matvec_rows for batch sizes that are and are not multiples
 * of vec_dot_n_max; the whole binary runs again under SLUICE_NO_SIMD=1 so
 * the scalar dispatch path is covered too. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rand_blocks.h"
#include "ops/ops.h"
#include "quant/quant_internal.h"
#include "test.h"
#include "util/status.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd32(void) { return t_rng_u32(&g_rng); }
static float grand(void) { return t_rng_gauss(&g_rng); }

/* the weight types with multi-token kernels, and the byte offsets of
 * their f16 scales */
typedef struct {
    sl_type t;
    int nscale;
    int off[2];
} wtype;

static const wtype wtypes[] = {
    {SL_TYPE_Q4_0, 1, {0}},      {SL_TYPE_Q8_0, 1, {0}},    {SL_TYPE_Q2_K, 2, {80, 82}},
    {SL_TYPE_Q3_K, 1, {108}},    {SL_TYPE_Q4_K, 2, {0, 2}}, {SL_TYPE_Q5_K, 2, {0, 2}},
    {SL_TYPE_Q6_K, 1, {208}},    {SL_TYPE_IQ4_NL, 1, {0}},  {SL_TYPE_IQ4_XS, 1, {0}},
    {SL_TYPE_MXFP4, 0, {0}},     {SL_TYPE_Q4_1, 2, {0, 2}}, {SL_TYPE_Q5_0, 1, {0}},
    {SL_TYPE_Q5_1, 2, {0, 2}},
};
#define NW (sizeof wtypes / sizeof wtypes[0])

enum { FILL_RANDOM, FILL_GAUSS, FILL_ZERO, FILL_HUGE_SCALE, FILL_DENORMAL_SCALE };

/* nb blocks of weight type w: random bytes with f16 scales in [2^-8, 2^4)
 * of either sign (HUGE: 65504; DENORMAL: f16 subnormals; MXFP4's E8M0
 * likewise), or quantised Gaussian data, or zeros. */
static void fill_weights(const wtype *w, void *dst, int n, int mode)
{
    const sl_type_traits *tr = sl_type_get(w->t);
    int nb = n / (int)tr->block_size;
    uint8_t *p = dst;
    if (mode == FILL_GAUSS) {
        float *x = malloc(sizeof(float) * (size_t)n);
        for (int i = 0; i < n; i++) x[i] = grand();
        sl_quantize_fast(w->t, x, dst, n);
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
        if (w->t == SL_TYPE_MXFP4) { /* E8M0: 2^-8..2^7, 2^102, or subnormal */
            blk[0] = mode == FILL_HUGE_SCALE       ? 230
                     : mode == FILL_DENORMAL_SCALE ? (uint8_t)(rnd32() % 2)
                                                   : (uint8_t)(120 + rnd32() % 16);
            continue;
        }
        for (int k = 0; k < w->nscale; k++) {
            uint16_t h;
            if (mode == FILL_HUGE_SCALE) h = 0x7BFF;
            else if (mode == FILL_DENORMAL_SCALE) h = (uint16_t)(1 + rnd32() % 0x3FF);
            else h = (uint16_t)(((7 + rnd32() % 12) << 10) | (rnd32() & 0x3FF));
            h |= (uint16_t)((rnd32() & 1) << 15);
            memcpy(blk + w->off[k], &h, 2);
        }
    }
}

/* An activation row of type at: the scalar quantiser on Gaussian floats of
 * magnitude scale, or on zeros. */
static void make_act(sl_type at, float scale, void *dst, int n, bool zeros)
{
    t_make_act(&g_rng, at, dst, n, scale, zeros);
}

static bool have_avx2(void)
{
    return sl_quant_vec_dot_isa(SL_TYPE_Q8_0, SL_ISA_AVX2) != NULL;
}

/* One weight row against SL_VEC_DOT_N_MAX + 1 activation rows: for every
 * kernel set and every nt, vec_dot_n over rows [off, off + nt) must equal
 * the single kernel's bits. Returns the number of comparisons made. */
static int check_identity(const wtype *w, int n, int mode, float act_scale, const char *what)
{
    const sl_type_traits *tr = sl_type_get(w->t);
    const sl_type at = tr->vec_dot_type;
    enum { NA = SL_VEC_DOT_N_MAX + 1 };
    uint64_t wb = 0, ab = 0;
    SL_ASSERT(sl_type_nbytes(w->t, (uint64_t)n, &wb) && sl_type_nbytes(at, (uint64_t)n, &ab));
    uint8_t *wq = malloc(wb), *aq = malloc(ab * NA);
    const void *ys[NA];
    fill_weights(w, wq, n, mode);
    for (int t = 0; t < NA; t++) {
        make_act(at, act_scale * (float)(1 + t % 3), aq + ab * (size_t)t, n, t == 5);
        ys[t] = aq + ab * (size_t)t;
    }
    int compared = 0;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        int max = 0;
        sl_vec_dot_n_fn fn = sl_quant_vec_dot_n_isa(w->t, (sl_isa)isa, &max);
        sl_vec_dot_fn f1 = sl_quant_vec_dot_isa(w->t, (sl_isa)isa);
        if (!fn || !f1) continue;
        float want[NA];
        for (int t = 0; t < NA; t++) f1(n, &want[t], wq, ys[t]);
        for (int nt = 1; nt <= max; nt++)
            for (int off = 0; off + nt <= NA; off += (nt == max ? 1 : 3)) {
                float got[SL_VEC_DOT_N_MAX + 1];
                for (int t = 0; t <= SL_VEC_DOT_N_MAX; t++) got[t] = -7.0f;
                fn(n, got, wq, ys + off, nt);
                for (int t = 0; t < nt; t++) {
                    CHECK_MSG(memcmp(&got[t], &want[off + t], sizeof(float)) == 0,
                              "%s %s %s n=%d nt=%d row %d: vec_dot_n %.9g, vec_dot %.9g",
                              tr->name, sl_isa_name((sl_isa)isa), what, n, nt, off + t,
                              (double)got[t], (double)want[off + t]);
                    compared++;
                }
                CHECK_MSG(got[nt] == -7.0f, "%s nt=%d wrote past s[nt - 1]", tr->name, nt);
            }
    }
    free(wq);
    free(aq);
    return compared;
}

/* a row of n elements: 1..4 super-blocks, or 1..33 blocks of 32 (odd
 * counts take the kernels' single-block tail) */
static int rand_n(sl_type t)
{
    if (sl_type_get(t)->block_size == 32) return 32 * (1 + (int)(rnd32() % 33));
    return 256 * (1 + (int)(rnd32() % 4));
}

TEST(kernels_exist_where_promised)
{
    /* every type with an integer vec_dot: scalar twins always, AVX2 on
     * x86-64 */
    for (size_t k = 0; k < NW; k++) {
        int max = 0;
        CHECK_MSG(sl_quant_vec_dot_n_isa(wtypes[k].t, SL_ISA_SCALAR, &max) != NULL, "%s scalar",
                  sl_type_name(wtypes[k].t));
        CHECK(max >= 2 && max <= SL_VEC_DOT_N_MAX);
        if (have_avx2()) {
            CHECK_MSG(sl_quant_vec_dot_n_isa(wtypes[k].t, SL_ISA_AVX2, &max) != NULL, "%s avx2",
                      sl_type_name(wtypes[k].t));
            CHECK(max >= 2 && max <= SL_VEC_DOT_N_MAX);
        }
    }
    int max = 5;
    CHECK(sl_quant_vec_dot_n_isa(SL_TYPE_Q4_K, (sl_isa)7, &max) == NULL && max == 0);
    CHECK(sl_quant_vec_dot_n_isa(999, SL_ISA_SCALAR, NULL) == NULL);
    /* a type without one says so */
    CHECK(sl_type_get(SL_TYPE_F32)->vec_dot_n == NULL);
    CHECK(sl_type_get(SL_TYPE_F32)->vec_dot_n_max == 0);
}

TEST(dispatch_pairs_with_vec_dot)
{
    /* the traits' vec_dot_n comes from the set its vec_dot comes from */
    sl_isa isa = sl_quant_isa();
    const char *env = getenv("SLUICE_NO_SIMD");
    if (env && env[0] && strcmp(env, "0") != 0) CHECK(isa == SL_ISA_SCALAR);
    for (size_t k = 0; k < NW; k++) {
        const sl_type_traits *tr = sl_type_get(wtypes[k].t);
        int max = 0;
        CHECK(tr->vec_dot == sl_quant_vec_dot_isa(wtypes[k].t, isa));
        CHECK(tr->vec_dot_n == sl_quant_vec_dot_n_isa(wtypes[k].t, isa, &max));
        CHECK_EQ_INT(tr->vec_dot_n_max, max);
    }
}

TEST(random_blocks_identical)
{
    int compared = 0;
    for (size_t k = 0; k < NW; k++)
        for (int rep = 0; rep < 12; rep++)
            compared += check_identity(&wtypes[k], rand_n(wtypes[k].t), FILL_RANDOM, 1.0f,
                                       "random");
    CHECK(compared > 0);
}

TEST(gaussian_blocks_identical)
{
    for (size_t k = 0; k < NW; k++)
        for (int rep = 0; rep < 3; rep++)
            check_identity(&wtypes[k], 1024, FILL_GAUSS, 1.0f, "gauss");
}

TEST(edge_blocks_identical)
{
    for (size_t k = 0; k < NW; k++) {
        check_identity(&wtypes[k], 512, FILL_ZERO, 1.0f, "zero");
        check_identity(&wtypes[k], 512, FILL_HUGE_SCALE, 1e-3f, "huge-scale");
        check_identity(&wtypes[k], 512, FILL_HUGE_SCALE, 1e4f, "huge-scale-big-act");
        check_identity(&wtypes[k], 512, FILL_DENORMAL_SCALE, 1e-25f, "denormal");
        check_identity(&wtypes[k], 512, FILL_RANDOM, 1e4f, "big-act");
        /* the smallest row: one block */
        check_identity(&wtypes[k], (int)sl_type_get(wtypes[k].t)->block_size, FILL_RANDOM,
                       1.0f, "one-block");
    }
}

/* Both x86 forms of the Q6_K multi-token kernel (AVX2, and AVX-512BW
 * where this CPU has it: the one the AVX2 set then takes), whichever the
 * dispatch chose: every nt, every kind of block, the AVX2 set's single
 * kernel's bits. */
TEST(q6_K_x86_forms_identical)
{
    sl_vec_dot_n_fn forms[2];
    const int nf = sl_vec_dot_n_q6_K_forms_avx2(forms);
    const sl_vec_dot_fn f1 = sl_quant_vec_dot_isa(SL_TYPE_Q6_K, SL_ISA_AVX2);
    if (nf == 0 || !f1) {
        printf("  (no x86 Q6_K forms on this CPU: skipped)\n");
        return;
    }
    printf("  (%d x86 Q6_K form%s)\n", nf, nf > 1 ? "s: AVX2 and AVX-512BW" : ": AVX2");
    const wtype *w = NULL;
    for (size_t k = 0; k < NW; k++)
        if (wtypes[k].t == SL_TYPE_Q6_K) w = &wtypes[k];
    CHECK(w != NULL);
    if (!w) return;
    enum { NA = SL_VEC_DOT_N_MAX + 1, NMAX = 1024 };
    static const int modes[] = {FILL_RANDOM, FILL_GAUSS, FILL_ZERO, FILL_HUGE_SCALE,
                                FILL_DENORMAL_SCALE, FILL_RANDOM};
    static const float scales[] = {1.0f, 1.0f, 1.0f, 1e-3f, 1e-25f, 1e4f};
    int compared = 0;
    for (int rep = 0; rep < 24; rep++) {
        const int mi = rep % 6, n = rep < 6 ? NMAX : 256 * (1 + (int)(rnd32() % 4));
        uint64_t wb = 0, ab = 0;
        SL_ASSERT(sl_type_nbytes(SL_TYPE_Q6_K, (uint64_t)n, &wb) &&
                  sl_type_nbytes(SL_TYPE_Q8_K, (uint64_t)n, &ab));
        uint8_t *wq = malloc(wb), *aq = malloc(ab * NA);
        const void *ys[NA];
        fill_weights(w, wq, n, modes[mi]);
        for (int t = 0; t < NA; t++) {
            make_act(SL_TYPE_Q8_K, scales[mi] * (float)(1 + t % 3), aq + ab * (size_t)t, n, t == 5);
            ys[t] = aq + ab * (size_t)t;
        }
        float want[NA];
        for (int t = 0; t < NA; t++) f1(n, &want[t], wq, ys[t]);
        for (int f = 0; f < nf; f++)
            for (int nt = 1; nt <= SL_VEC_DOT_N_MAX; nt++)
                for (int off = 0; off + nt <= NA; off += 2) {
                    float got[NA + 1];
                    for (int t = 0; t <= NA; t++) got[t] = -7.0f;
                    forms[f](n, got, wq, ys + off, nt);
                    for (int t = 0; t < nt; t++) {
                        CHECK_MSG(memcmp(&got[t], &want[off + t], sizeof(float)) == 0,
                                  "q6_K form %d mode %d n=%d nt=%d row %d: %.9g, vec_dot %.9g", f,
                                  mi, n, nt, off + t, (double)got[t], (double)want[off + t]);
                        compared++;
                    }
                    CHECK_MSG(got[nt] == -7.0f, "q6_K form %d nt=%d wrote past s[nt - 1]", f, nt);
                }
        free(wq);
        free(aq);
    }
    CHECK(compared > 0);
}

TEST(simd_close_to_scalar)
{
    /* different kernel sets differ only in float accumulation order: the
     * test_quant_dot.c bound, 1e-5 of sum |x_i y_i| (here bounded above by
     * the product of the rows' L1 norms over the dequantised values) */
    if (!have_avx2()) return;
    for (size_t k = 0; k < NW; k++) {
        const sl_type_traits *tr = sl_type_get(wtypes[k].t);
        const int n = 1024;
        uint64_t wb = 0, ab = 0;
        sl_type_nbytes(wtypes[k].t, n, &wb);
        sl_type_nbytes(tr->vec_dot_type, n, &ab);
        uint8_t *wq = malloc(wb), *aq = malloc(ab * 4);
        float *xw = malloc(sizeof(float) * n), *xa = malloc(sizeof(float) * n);
        const void *ys[4];
        fill_weights(&wtypes[k], wq, n, FILL_GAUSS);
        tr->to_float(wq, xw, n);
        int max_r = 0, max_s = 0;
        sl_vec_dot_n_fn fr = sl_quant_vec_dot_n_isa(wtypes[k].t, SL_ISA_SCALAR, &max_r);
        sl_vec_dot_n_fn fs = sl_quant_vec_dot_n_isa(wtypes[k].t, SL_ISA_AVX2, &max_s);
        int nt = max_r < max_s ? max_r : max_s;
        if (nt > 4) nt = 4;
        float sr[4], ss[4];
        double mag[4];
        for (int t = 0; t < nt; t++) {
            make_act(tr->vec_dot_type, 1.0f, aq + ab * (size_t)t, n, false);
            ys[t] = aq + ab * (size_t)t;
            sl_type_get(tr->vec_dot_type)->to_float(ys[t], xa, n);
            mag[t] = 0;
            for (int i = 0; i < n; i++) mag[t] += fabs((double)xw[i] * xa[i]);
        }
        fr(n, sr, wq, ys, nt);
        fs(n, ss, wq, ys, nt);
        for (int t = 0; t < nt; t++)
            CHECK_MSG(fabs(sr[t] - ss[t]) <= 1e-5 * mag[t], "%s t=%d: scalar %.9g avx2 %.9g",
                      tr->name, t, (double)sr[t], (double)ss[t]);
        free(wq);
        free(aq);
        free(xw);
        free(xa);
    }
}

/* ---- rows built by hand --------------------------------------------------
 * Each case: one weight row of nb blocks whose every element has the same
 * known value (or a known pattern), activation rows whose quants are a
 * constant a_t = t - 3 (t = 0..7; -3..4, zero included) with a known
 * scale, so every dot product is a small exact float. */

static void q8K_const(sl_block_q8_K *b, float d, int a)
{
    b->d = d;
    for (int i = 0; i < SL_QK_K; i++) b->qs[i] = (int8_t)a;
    for (int k = 0; k < SL_QK_K / 16; k++) b->bsums[k] = (int16_t)(16 * a);
}

static void q8_0_const(sl_block_q8_0 *b, uint16_t d, int a)
{
    b->d = d;
    for (int i = 0; i < SL_QK; i++) b->qs[i] = (int8_t)a;
}

/* Runs every kernel set's vec_dot_n with nt = max (and 1) on rows ys and
 * checks s[t] == want[t] exactly. */
static void check_values(sl_type t, int n, const void *x, const void *const *ys, const float *want)
{
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        int max = 0;
        sl_vec_dot_n_fn fn = sl_quant_vec_dot_n_isa(t, (sl_isa)isa, &max);
        if (!fn) continue;
        for (int t0 = 0; t0 < 8; t0 += max) {
            float s[SL_VEC_DOT_N_MAX];
            int nt = 8 - t0 < max ? 8 - t0 : max;
            fn(n, s, x, ys + t0, nt);
            for (int k = 0; k < nt; k++)
                CHECK_MSG(s[k] == want[t0 + k], "%s %s t=%d: %.9g, want %.9g", sl_type_name(t),
                          sl_isa_name((sl_isa)isa), t0 + k, (double)s[k], (double)want[t0 + k]);
        }
    }
}

TEST(hand_built_k_quants)
{
    enum { NB = 2, N = NB * SL_QK_K };
    sl_block_q8_K acts[8][NB];
    const void *ys[8];
    float want[8];
    /* activations: d = 0.25, every quant a_t */
    for (int t = 0; t < 8; t++) {
        for (int b = 0; b < NB; b++) q8K_const(&acts[t][b], 0.25f, t - 3);
        ys[t] = acts[t];
    }

    /* Q4_K: d = 1 (f16 0x3C00), dmin = 0.5 (0x3800); all eight sub-block
     * scales 1 and mins 2 (bytes 0..3 = 1, 4..7 = 2 give k < 4; bytes
     * 8..11 = 0x21 give k >= 4: scale = low nibble 1, min = high nibble
     * 2, upper bits from bytes 0..7 are 0); every nibble 3. Each element:
     * 1 * 1 * 3 - 0.5 * 2 = 2; times 0.25 * a: 0.5 a; 512 elements: 256 a. */
    sl_block_q4_K q4[NB];
    for (int b = 0; b < NB; b++) {
        q4[b].d = 0x3C00;
        q4[b].dmin = 0x3800;
        for (int k = 0; k < 4; k++) {
            q4[b].scales[k] = 1;
            q4[b].scales[k + 4] = 2;
            q4[b].scales[k + 8] = 0x21;
        }
        memset(q4[b].qs, 0x33, sizeof q4[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = 256.0f * (float)(t - 3);
    check_values(SL_TYPE_Q4_K, N, q4, ys, want);

    /* Q5_K: the same with every fifth bit set (qh all 0xFF): level 19,
     * element 19 - 1 = 18; 18 * 0.25 a * 512 = 2304 a. */
    sl_block_q5_K q5[NB];
    for (int b = 0; b < NB; b++) {
        q5[b].d = 0x3C00;
        q5[b].dmin = 0x3800;
        memcpy(q5[b].scales, q4[b].scales, sizeof q5[b].scales);
        memset(q5[b].qh, 0xFF, sizeof q5[b].qh);
        memset(q5[b].qs, 0x33, sizeof q5[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = 2304.0f * (float)(t - 3);
    check_values(SL_TYPE_Q5_K, N, q5, ys, want);

    /* Q6_K: every 6-bit value 40 (low nibble 8 in both halves of each ql
     * byte: 0x88; high pair 2 in all four fields of each qh byte: 0xAA),
     * level 40 - 32 = 8; scales 3; d = 0.125 (0x3000). Element 0.125 * 3
     * * 8 = 3; times 0.25 a: 0.75 a; 512 elements: 384 a. */
    sl_block_q6_K q6[NB];
    for (int b = 0; b < NB; b++) {
        memset(q6[b].ql, 0x88, sizeof q6[b].ql);
        memset(q6[b].qh, 0xAA, sizeof q6[b].qh);
        memset(q6[b].scales, 3, sizeof q6[b].scales);
        q6[b].d = 0x3000;
    }
    for (int t = 0; t < 8; t++) want[t] = 384.0f * (float)(t - 3);
    check_values(SL_TYPE_Q6_K, N, q6, ys, want);

    /* Q2_K: each scale byte 0x12 (scale 2 in the low nibble, min 1 in
     * the high), every 2-bit level 3 (qs bytes 0xFF), d = 0.5 (0x3800),
     * dmin = 1 (0x3C00). Element 0.5 * 2 * 3 - 1 * 1 = 2; times 0.25 a:
     * 0.5 a; 512 elements: 256 a. */
    sl_block_q2_K q2[NB];
    for (int b = 0; b < NB; b++) {
        memset(q2[b].scales, 0x12, sizeof q2[b].scales);
        memset(q2[b].qs, 0xFF, sizeof q2[b].qs);
        q2[b].d = 0x3800;
        q2[b].dmin = 0x3C00;
    }
    for (int t = 0; t < 8; t++) want[t] = 256.0f * (float)(t - 3);
    check_values(SL_TYPE_Q2_K, N, q2, ys, want);

    /* Q3_K: every 6-bit scale 34 = 0b10'0010 (low nibble 2: bytes 0..7 =
     * 0x22; high pair 2 in all four fields of bytes 8..11: 0xAA), so sc -
     * 32 = 2; every level 2-bit 3 with its hmask bit set: 3 - 4 + 4 = 3;
     * d = 0.25 (0x3400). Element 0.25 * 2 * 3 = 1.5; times 0.25 a: 0.375 a;
     * 512 elements: 192 a. */
    sl_block_q3_K q3[NB];
    for (int b = 0; b < NB; b++) {
        memset(q3[b].hmask, 0xFF, sizeof q3[b].hmask);
        memset(q3[b].qs, 0xFF, sizeof q3[b].qs);
        memset(q3[b].scales, 0x22, 8);
        memset(q3[b].scales + 8, 0xAA, 4);
        q3[b].d = 0x3400;
    }
    for (int t = 0; t < 8; t++) want[t] = 192.0f * (float)(t - 3);
    check_values(SL_TYPE_Q3_K, N, q3, ys, want);

    /* IQ4_XS: every 6-bit sub-block scale 34 (low nibbles 2: scales_l
     * bytes 0x22; high pairs 2: scales_h 0xAAAA), so ls - 32 = 2; qs bytes
     * 0x98: elements 0..15 of each sub-block take table entry 8, 16..31
     * entry 9 (the IQ4_NL table of the GGUF spec, {-127, -104, -83, -65,
     * -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}): 1 and 13, 224
     * per sub-block; d = 0.25 (0x3400). Per sub-block 0.25 * 2 * 224 *
     * 0.25 a = 28 a; 16 sub-blocks: 448 a. */
    sl_block_iq4_xs xs[NB];
    for (int b = 0; b < NB; b++) {
        xs[b].d = 0x3400;
        xs[b].scales_h = 0xAAAA;
        memset(xs[b].scales_l, 0x22, sizeof xs[b].scales_l);
        memset(xs[b].qs, 0x98, sizeof xs[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = 448.0f * (float)(t - 3);
    check_values(SL_TYPE_IQ4_XS, N, xs, ys, want);
}

TEST(hand_built_legacy)
{
    enum { NB = 3, N = NB * SL_QK }; /* odd: the pairwise kernels' tail too */
    sl_block_q8_0 acts[8][NB];
    const void *ys[8];
    float want[8];
    /* activations: d = 2 (f16 0x4000), every quant a_t */
    for (int t = 0; t < 8; t++) {
        for (int b = 0; b < NB; b++) q8_0_const(&acts[t][b], 0x4000, t - 3);
        ys[t] = acts[t];
    }

    /* Q8_0: d = 0.5 (0x3800), quants i - 16 for i = 0..31, summing to
     * -16; per block 0.5 * 2 * (-16) * a = -16 a; three blocks: -48 a. */
    sl_block_q8_0 q8[NB];
    for (int b = 0; b < NB; b++) {
        q8[b].d = 0x3800;
        for (int i = 0; i < SL_QK; i++) q8[b].qs[i] = (int8_t)(i - 16);
    }
    for (int t = 0; t < 8; t++) want[t] = -48.0f * (float)(t - 3);
    check_values(SL_TYPE_Q8_0, N, q8, ys, want);

    /* Q4_0: d = 1 (0x3C00), each byte 0x9A: elements 0..15 take the low
     * nibble 10 - 8 = 2, elements 16..31 the high nibble 9 - 8 = 1; per
     * block 1 * 2 * (16 * 2 + 16 * 1) * a = 96 a; three blocks: 288 a. */
    sl_block_q4_0 q4[NB];
    for (int b = 0; b < NB; b++) {
        q4[b].d = 0x3C00;
        memset(q4[b].qs, 0x9A, sizeof q4[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = 288.0f * (float)(t - 3);
    check_values(SL_TYPE_Q4_0, N, q4, ys, want);

    /* IQ4_NL: d = 0.5 (0x3800), bytes 0x90: elements 0..15 table entry 0
     * = -127, elements 16..31 entry 9 = 13 (GGUF spec table, see above):
     * 16 * (-127 + 13) = -1824 per block; 0.5 * 2 * (-1824) a per block;
     * three blocks: -5472 a. */
    sl_block_iq4_nl nl[NB];
    for (int b = 0; b < NB; b++) {
        nl[b].d = 0x3800;
        memset(nl[b].qs, 0x90, sizeof nl[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = -5472.0f * (float)(t - 3);
    check_values(SL_TYPE_IQ4_NL, N, nl, ys, want);

    /* Q5_0: d = 1, bytes 0x31 and every fifth bit set (qh 0xFF): elements
     * 0..15 (1 | 16) - 16 = 1, 16..31 (3 | 16) - 16 = 3; 16 * 4 = 64 per
     * block; times 2 a: 128 a; three blocks: 384 a. */
    sl_block_q5_0 q50[NB];
    for (int b = 0; b < NB; b++) {
        q50[b].d = 0x3C00;
        memset(q50[b].qh, 0xFF, sizeof q50[b].qh);
        memset(q50[b].qs, 0x31, sizeof q50[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = 384.0f * (float)(t - 3);
    check_values(SL_TYPE_Q5_0, N, q50, ys, want);

    /* Q4_1: d = 0.5 (0x3800), m = 1 (0x3C00), bytes 0x31: elements 0..15
     * 0.5 * 1 + 1 = 1.5, 16..31 0.5 * 3 + 1 = 2.5; 16 * 4 = 64 per block;
     * times 2 a: 128 a; three blocks: 384 a. */
    sl_block_q4_1 q41[NB];
    for (int b = 0; b < NB; b++) {
        q41[b].d = 0x3800;
        q41[b].m = 0x3C00;
        memset(q41[b].qs, 0x31, sizeof q41[b].qs);
    }
    /* Q4_1 and Q5_1 take Q8_1 activations: the same levels and d, s = 2 *
     * 32 a (exact in f16) */
    sl_block_q8_1 acts1[8][NB];
    const void *ys1[8];
    for (int t = 0; t < 8; t++) {
        for (int b = 0; b < NB; b++) {
            acts1[t][b].d = 0x4000;
            acts1[t][b].s = sl_f32_to_fp16(64.0f * (float)(t - 3));
            memset(acts1[t][b].qs, (int8_t)(t - 3), sizeof acts1[t][b].qs);
        }
        ys1[t] = acts1[t];
    }
    check_values(SL_TYPE_Q4_1, N, q41, ys1, want);

    /* Q5_1: as Q4_1 with the fifth bit set for elements 0..15 only (qh
     * bytes FF FF 00 00, little-endian bits 0..15): 0.5 * 17 + 1 = 9.5 and
     * 2.5; 16 * 12 = 192 per block; times 2 a: 384 a; three blocks:
     * 1152 a. */
    sl_block_q5_1 q51[NB];
    for (int b = 0; b < NB; b++) {
        q51[b].d = 0x3800;
        q51[b].m = 0x3C00;
        q51[b].qh[0] = q51[b].qh[1] = 0xFF;
        q51[b].qh[2] = q51[b].qh[3] = 0x00;
        memset(q51[b].qs, 0x31, sizeof q51[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = 1152.0f * (float)(t - 3);
    check_values(SL_TYPE_Q5_1, N, q51, ys1, want);

    /* MXFP4: e = 128, a scale of 2^(128 - 127) = 2 on E2M1 values, i.e. 1
     * on their doubles; bytes 0xC5: low nibble 0b0101 (sign 0, exponent
     * 0b10, mantissa 1) = +3.0, doubled 6; high nibble 0b1100 (sign 1,
     * exponent 0b10, mantissa 0) = -2.0, doubled -4: 16 * (6 - 4) = 32
     * per block on the doubled scale; times y d = 2: 64 a; three blocks:
     * 192 a. */
    sl_block_mxfp4 fp4[NB];
    for (int b = 0; b < NB; b++) {
        fp4[b].e = 128;
        memset(fp4[b].qs, 0xC5, sizeof fp4[b].qs);
    }
    for (int t = 0; t < 8; t++) want[t] = 192.0f * (float)(t - 3);
    check_values(SL_TYPE_MXFP4, N, fp4, ys, want);
}

/* ---- the batched product ------------------------------------------------- */

/* sl_matmul_rows over n tokens and a row range must give the bits of
 * sl_matvec_rows token by token, whether the type has vec_dot_n or only
 * vec_dot (F32, F16). */
static void check_matmul(sl_type type, int64_t rows, int64_t cols, int n)
{
    const sl_type_traits *tr = sl_type_get(type);
    uint64_t rb = 0;
    SL_ASSERT(sl_type_nbytes(type, (uint64_t)cols, &rb));
    uint8_t *w = malloc(rb * (size_t)rows);
    float *xf = malloc(sizeof(float) * (size_t)cols);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < cols; i++) xf[i] = grand();
        sl_quantize_fast(type, xf, w + rb * (size_t)r, cols);
    }
    sl_mat m = {.type = type, .rows = rows, .cols = cols, .row_bytes = (size_t)rb, .data = w};
    const size_t ab = sl_matvec_act_bytes(type, cols);
    uint8_t *act = malloc(ab * (size_t)n);
    const void **acts = malloc(sizeof(void *) * (size_t)n);
    float *tmp = malloc(sizeof(float) * (size_t)cols);
    for (int t = 0; t < n; t++) {
        for (int64_t i = 0; i < cols; i++) xf[i] = grand() * (t % 4 == 2 ? 0.0f : 1.0f);
        sl_matvec_prepare(&m, xf, act + ab * (size_t)t);
        acts[t] = act + ab * (size_t)t;
    }
    const size_t ldy = (size_t)rows + 3;
    float *y1 = malloc(sizeof(float) * ldy * (size_t)n);
    float *y2 = malloc(sizeof(float) * ldy * (size_t)n);
    for (size_t i = 0; i < ldy * (size_t)n; i++) y1[i] = y2[i] = -1.0f;
    const int64_t r0 = rows > 2 ? 1 : 0, r1 = rows;
    for (int t = 0; t < n; t++)
        sl_matvec_rows(&m, acts[t], y1 + (size_t)t * ldy, r0, r1, tmp);
    sl_matmul_rows(&m, acts, n, y2, ldy, r0, r1, tmp);
    CHECK_MSG(memcmp(y1, y2, sizeof(float) * ldy * (size_t)n) == 0,
              "%s rows %lld..%lld n=%d: sl_matmul_rows differs from sl_matvec_rows", tr->name,
              (long long)r0, (long long)r1, n);
    free(w);
    free(xf);
    free(act);
    free(acts);
    free(tmp);
    free(y1);
    free(y2);
}

TEST(matmul_matches_matvec)
{
    static const sl_type types[] = {SL_TYPE_Q4_0,  SL_TYPE_Q8_0,   SL_TYPE_Q2_K,   SL_TYPE_Q3_K,
                                    SL_TYPE_Q4_K,  SL_TYPE_Q5_K,   SL_TYPE_Q6_K,   SL_TYPE_IQ4_NL,
                                    SL_TYPE_MXFP4, SL_TYPE_IQ4_XS, SL_TYPE_Q5_1,   SL_TYPE_F32,
                                    SL_TYPE_F16};
    static const int ns[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 17};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
            for (int rows = 7; rows <= 21; rows += 14) /* one partial row block, several */
                check_matmul(types[k], rows, 512, ns[j]);
}

/* Everything above again with SLUICE_NO_SIMD=1: the traits then hand out
 * the scalar pair (vec_dot, vec_dot_n), and the matmul test runs on it. */
TEST(whole_suite_under_no_simd)
{
    const char *env = getenv("SLUICE_NO_SIMD");
    if (env && env[0] && strcmp(env, "0") != 0) return; /* we are that child */
    pid_t pid = fork();
    if (pid < 0 && errno == ENOSYS) { /* Windows: scripts/run-windows.sh runs it again */
        printf("   (no fork here: the runner repeats this binary with SLUICE_NO_SIMD=1)\n");
        return;
    }
    if (pid == 0) {
        setenv("SLUICE_NO_SIMD", "1", 1);
        /* its "ok" lines and summary would be summed by tests/run.sh as
         * ours; failures still reach stderr */
        if (!freopen("/dev/null", "w", stdout)) _exit(101);
        execl("/proc/self/exe", "test_quant_dot_n", (char *)NULL);
        _exit(100);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
#if defined(__aarch64__)
    /* under qemu-user without binfmt_misc the child's execl fails; the
     * emulated runs cover SLUICE_NO_SIMD=1 by a run of their own */
    if (WIFEXITED(st) && WEXITSTATUS(st) == 100) {
        printf("   (cannot re-exec this binary here, emulated?: skipped)\n");
        return;
    }
#endif
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the SLUICE_NO_SIMD=1 run failed");
}

int main(void)
{
    RUN(kernels_exist_where_promised);
    RUN(dispatch_pairs_with_vec_dot);
    RUN(random_blocks_identical);
    RUN(gaussian_blocks_identical);
    RUN(edge_blocks_identical);
    RUN(q6_K_x86_forms_identical);
    RUN(simd_close_to_scalar);
    RUN(hand_built_k_quants);
    RUN(hand_built_legacy);
    RUN(matmul_matches_matvec);
    RUN(whole_suite_under_no_simd);
    return TEST_REPORT();
}
