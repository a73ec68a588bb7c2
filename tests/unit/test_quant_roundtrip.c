/* test_quant_roundtrip.c - quantise then dequantise, with error bounds.
 *
 * Bounds come from the formats, not from the code under test:
 *  - Q8_0 / Q8_K: d = amax / 127, every element within d/2 of its
 *    reconstruction (Q8_0 stores d as f16 d', so the bound is
 *    max(d'/2, 127 |d - d'|): elements that would round past 127 with the
 *    smaller d' are clamped).
 *  - Every other type is compared with a textbook quantiser written here
 *    ("oracle"): per group, the plain min-max (affine types) or abs-max
 *    (symmetric and table types) scale, unrounded, nearest level. A
 *    searched scale must not do worse than that in total squared error
 *    (allowing a stated margin where the format rounds scales more
 *    coarsely than the oracle does); and no single element may be off by
 *    more than one step of the coarsest grid that spans the whole group.
 *  - Edge cases: all-zero blocks come back exactly zero; constant blocks
 *    come back within the scale rounding of the format; huge, tiny and
 *    negative-only data meet the same bounds as ordinary data.
 * Deterministic: data from a fixed-seed generator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant_internal.h"
#include "common/testutil.h"
#include "test.h"
#include "util/status.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static double urand(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static float grand(void) /* standard normal, Box-Muller */
{
    double u = urand(), v = urand();
    if (u < 1e-300) u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

typedef struct {
    sl_type t;
    int group;     /* elements per scale in the oracle */
    int levels;    /* 2^bits */
    int kind;      /* 0 affine (x = s*q + b), 1 symmetric, 2 iq4 table, 3 mxfp4 */
    double margin;      /* allowed SSE ratio to the oracle */
    double margin_fast; /* the same for sl_quantize_fast */
} fmt;

/* Margins: K-quants store sub-block scales in 4-6 bits against a super-block
 * f16 scale, which the oracle (f32 per-group scales) does not pay; Q2_K's
 * 4-bit scales and 2-bit levels pay most. Values chosen with headroom over
 * what the formats can reach; a packing bug gives ratios far above.
 * sl_quantize_fast keeps one candidate: the oracle's own grid, refitted by
 * (weighted) least squares, so it tracks the oracle; it gets 0.05 more. */
static const fmt fmts[] = {
    {SL_TYPE_Q4_0, 32, 16, 1, 1.02, 1.07},  {SL_TYPE_Q4_1, 32, 16, 0, 1.02, 1.07},
    {SL_TYPE_Q5_0, 32, 32, 1, 1.02, 1.07},  {SL_TYPE_Q5_1, 32, 32, 0, 1.02, 1.07},
    {SL_TYPE_Q2_K, 16, 4, 0, 1.15, 1.2},   {SL_TYPE_Q3_K, 16, 8, 1, 1.10, 1.15},
    {SL_TYPE_Q4_K, 32, 16, 0, 1.05, 1.1},  {SL_TYPE_Q5_K, 32, 32, 0, 1.05, 1.1},
    {SL_TYPE_Q6_K, 16, 64, 1, 1.05, 1.1},  {SL_TYPE_IQ4_NL, 32, 16, 2, 1.02, 1.07},
    {SL_TYPE_IQ4_XS, 32, 16, 2, 1.10, 1.15}, {SL_TYPE_MXFP4, 32, 16, 3, 1.0001, 1.05},
};

/* Squared error of the oracle on one group. Affine: K-quant mins are
 * stored as non-negative amounts subtracted, so for the K types the range
 * is widened to include 0 (as the format forces); Q4_1/Q5_1 store any m. */
static double oracle_sse(const fmt *f, const float *x, int n)
{
    double sse = 0.0;
    if (f->kind == 0) {
        bool kq = f->t != SL_TYPE_Q4_1 && f->t != SL_TYPE_Q5_1;
        float lo = x[0], hi = x[0];
        for (int i = 1; i < n; i++) { lo = fminf(lo, x[i]); hi = fmaxf(hi, x[i]); }
        if (kq) { lo = fminf(lo, 0.0f); hi = fmaxf(hi, 0.0f); }
        double step = (hi - lo) / (double)(f->levels - 1);
        for (int i = 0; i < n; i++) {
            double q = step > 0 ? nearbyint((x[i] - lo) / step) : 0.0;
            double e = lo + step * q - x[i];
            sse += e * e;
        }
    } else if (f->kind == 1) {
        float vmax = 0.0f;
        for (int i = 0; i < n; i++) if (fabsf(x[i]) > fabsf(vmax)) vmax = x[i];
        int nmax = f->levels / 2;
        double s = vmax / -(double)nmax;
        for (int i = 0; i < n; i++) {
            double q = s != 0 ? nearbyint(x[i] / s) : 0.0;
            if (q < -nmax) q = -nmax;
            if (q > nmax - 1) q = nmax - 1;
            double e = s * q - x[i];
            sse += e * e;
        }
    } else if (f->kind == 2) {
        static const int K[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                  1,    13,   25,  38,  53,  69,  89,  113};
        float vmax = 0.0f;
        for (int i = 0; i < n; i++) if (fabsf(x[i]) > fabsf(vmax)) vmax = x[i];
        double s = vmax / -127.0;
        for (int i = 0; i < n; i++) {
            double best = 1e300;
            for (int k = 0; k < 16; k++) {
                double e = s * K[k] - x[i];
                if (e * e < best) best = e * e;
            }
            sse += best;
        }
    } else {
        /* MXFP4: smallest power-of-two scale whose top level (6) covers
         * amax; levels 0, .5, 1, 1.5, 2, 3, 4, 6 times 2^(e-127) */
        static const double M[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
        float amax = 0.0f;
        for (int i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
        if (amax == 0.0f) return 0.0;
        double sc = ldexp(1.0, (int)ceil(log2(amax / 6.0)));
        if (sc * 6.0 < amax) sc *= 2;
        for (int i = 0; i < n; i++) {
            double best = 1e300;
            for (int k = 0; k < 8; k++) {
                double e = sc * M[k] - fabs(x[i]);
                if (e * e < best) best = e * e;
            }
            sse += best;
        }
    }
    return sse;
}

/* One full step of the coarsest grid spanning the block (max-magnitude
 * scale): an upper bound on any single element's error. */
static double step_bound(const fmt *f, const float *x, int n)
{
    float lo = 0.0f, hi = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
        amax = fmaxf(amax, fabsf(x[i]));
    }
    switch (f->kind) {
    case 0: return (hi - lo) / (f->levels - 1);
    case 1: return 2.0 * amax / (f->levels - 1);
    case 2: return amax * 24.0 / 127.0; /* widest table gap (23 .. 24) */
    default: return amax / 3.0;           /* gap 4..6 of a top level 6 = amax/3 at worst; */
    }
}

typedef struct {
    double sse, oracle, worst_ratio; /* worst_ratio: max |err| / step bound */
    int bad_zero;
} rt_result;

static bool g_fast; /* quantise with sl_quantize_fast instead of from_float */

static rt_result roundtrip(const fmt *f, const float *x, int n)
{
    const sl_type_traits *tr = sl_type_get(f->t);
    uint64_t nb = 0;
    SL_ASSERT(tr && sl_type_nbytes(f->t, (uint64_t)n, &nb));
    void *q = malloc(nb);
    float *y = malloc(sizeof(float) * (size_t)n);
    if (g_fast) SL_ASSERT(sl_quantize_fast(f->t, x, q, n));
    else tr->from_float(x, q, n);
    tr->to_float(q, y, n);
    rt_result r = {0};
    int bs = (int)tr->block_size;
    for (int b0 = 0; b0 < n; b0 += bs) {
        double bound = step_bound(f, x + b0, bs);
        for (int i = b0; i < b0 + bs; i++) {
            double e = fabs((double)y[i] - (double)x[i]);
            r.sse += e * e;
            if (!isfinite(y[i])) r.worst_ratio = INFINITY;
            if (bound > 0) r.worst_ratio = fmax(r.worst_ratio, e / bound);
            else if (e != 0) r.worst_ratio = INFINITY;
            if (x[i] == 0.0f && bound == 0.0 && y[i] != 0.0f) r.bad_zero++;
        }
    }
    for (int g = 0; g < n; g += f->group) r.oracle += oracle_sse(f, x + g, f->group);
    free(q);
    free(y);
    return r;
}

static void check_fmt_on(const fmt *f, const float *x, int n, const char *what)
{
    rt_result r = roundtrip(f, x, n);
    const char *nm = sl_type_name(f->t);
    double margin = g_fast ? f->margin_fast : f->margin;
    if (getenv("SL_TEST_VERBOSE"))
        fprintf(stderr, "%s%-7s %-9s ratio %.4f worst %.3f\n", g_fast ? "fast " : "", nm, what,
                r.sse / r.oracle, r.worst_ratio);
    CHECK_MSG(r.sse <= margin * r.oracle + 1e-30, "%s%s %s: sse %.6g > %.3g x oracle %.6g "
              "(ratio %.4f)", g_fast ? "fast " : "", nm, what, r.sse, margin, r.oracle,
              r.sse / r.oracle);
    CHECK_MSG(r.worst_ratio <= 1.0, "%s %s: an element is off by %.3f steps", nm, what,
              r.worst_ratio);
    CHECK_EQ_INT(r.bad_zero, 0);
}

#define N 4096

static void all_datasets(void)
{
    float *x = malloc(sizeof(float) * N);
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        const fmt *f = &fmts[k];
        for (int i = 0; i < N; i++) x[i] = grand();
        check_fmt_on(f, x, N, "gauss");
        /* huge: N(0, 3000^2) - still inside f16 scale range for all types */
        for (int i = 0; i < N; i++) x[i] = 3000.0f * grand();
        check_fmt_on(f, x, N, "huge");
        /* tiny: N(0, 0.01^2); K-quant super-block scales then sit near the
         * bottom of f16's normal range */
        for (int i = 0; i < N; i++) x[i] = 0.01f * grand();
        check_fmt_on(f, x, N, "tiny");
        /* negative only: -(1 + |N(0,1)|) */
        for (int i = 0; i < N; i++) x[i] = -1.0f - fabsf(grand());
        check_fmt_on(f, x, N, "negative");
        /* heavy tails: mostly small values with rare outliers */
        for (int i = 0; i < N; i++) x[i] = (urand() < 0.01 ? 20.0f : 1.0f) * grand();
        check_fmt_on(f, x, N, "outliers");
        /* uniform in [-1, 1] */
        for (int i = 0; i < N; i++) x[i] = (float)(2.0 * urand() - 1.0);
        check_fmt_on(f, x, N, "uniform");
    }
    free(x);
}

TEST(searched_formats)
{
    g_fast = false;
    all_datasets();
}

TEST(fast_formats)
{
    g_fast = true;
    all_datasets();
    g_fast = false;
}

TEST(zero_and_constant_blocks)
{
    float x[512], y[512];
    uint8_t q[512 * 4];
    static const sl_type all[] = {SL_TYPE_Q4_0,  SL_TYPE_Q4_1,   SL_TYPE_Q5_0,  SL_TYPE_Q5_1,
                                  SL_TYPE_Q8_0,  SL_TYPE_Q8_1,   SL_TYPE_Q2_K,  SL_TYPE_Q3_K,
                                  SL_TYPE_Q4_K,  SL_TYPE_Q5_K,   SL_TYPE_Q6_K,  SL_TYPE_Q8_K,
                                  SL_TYPE_IQ4_NL, SL_TYPE_IQ4_XS, SL_TYPE_MXFP4, SL_TYPE_F16,
                                  SL_TYPE_BF16};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        const sl_type_traits *tr = sl_type_get(all[k]);
        memset(x, 0, sizeof x);
        tr->from_float(x, q, 512);
        tr->to_float(q, y, 512);
        int nz = 0;
        for (int i = 0; i < 512; i++) nz += y[i] != 0.0f;
        CHECK_MSG(nz == 0, "%s: zero block gave %d non-zeros", tr->name, nz);
        /* Constant blocks. Each format can hit c exactly up to the f16
         * rounding of its scale (relative 2^-11, times at most 2 for a
         * scale product d * sc), except MXFP4, whose levels are powers of
         * two times {1, 1.5}: 3.0 = 1.5 * 2 is exact, 0.7 is 0.75 * 2^0
         * at best -> error 0.05 relative 1/14. */
        const float cs[] = {3.0f, -3.0f, 0.7f, -123.0f};
        for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
            for (int i = 0; i < 512; i++) x[i] = cs[c];
            tr->from_float(x, q, 512);
            tr->to_float(q, y, 512);
            double rel = all[k] == SL_TYPE_MXFP4 ? 0.072 : all[k] == SL_TYPE_BF16 ? 1.0 / 256 : 1.0 / 1024;
            if (all[k] == SL_TYPE_MXFP4 && (cs[c] == 3.0f || cs[c] == -3.0f)) rel = 0.0;
            int bad = 0;
            for (int i = 0; i < 512; i++)
                if (!(fabs((double)y[i] - cs[c]) <= rel * fabs(cs[c]))) bad++;
            CHECK_MSG(bad == 0, "%s: constant %g: %d elements off (y0 = %.9g)", tr->name,
                      (double)cs[c], bad, (double)y[0]);
        }
    }
}

/* Q8_0 and Q8_K: every element within half a step (see the header). */
TEST(q8_bounds)
{
    float x[1024], y[1024];
    sl_block_q8_0 b0[32];
    sl_block_q8_K bk[4];
    const float scales[] = {1.0f, 3e4f, 1e-3f, 1e-6f};
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        for (int i = 0; i < 1024; i++) x[i] = scales[s] * grand();
        sl_type_get(SL_TYPE_Q8_0)->from_float(x, b0, 1024);
        sl_type_get(SL_TYPE_Q8_0)->to_float(b0, y, 1024);
        int bad = 0;
        for (int b = 0; b < 32; b++) {
            float amax = 0.0f;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[32 * b + i]));
            double d = amax / 127.0;
            double dr = sl_fp16_to_f32(sl_f32_to_fp16((float)d));
            /* levels are x * 127 / amax rounded (within half a level of
             * the unrounded step d), reconstructed with the f16 step dr */
            double bound = (d / 2 + 127 * fabs(d - dr)) * (1 + 1e-6) + 1e-12 * amax;
            for (int i = 0; i < 32; i++)
                if (fabs((double)y[32 * b + i] - x[32 * b + i]) > bound) bad++;
        }
        CHECK_MSG(bad == 0, "q8_0 scale %g: %d elements beyond half a step", (double)scales[s], bad);

        sl_type_get(SL_TYPE_Q8_K)->from_float(x, bk, 1024);
        sl_type_get(SL_TYPE_Q8_K)->to_float(bk, y, 1024);
        bad = 0;
        for (int b = 0; b < 4; b++) {
            float amax = 0.0f;
            for (int i = 0; i < 256; i++) amax = fmaxf(amax, fabsf(x[256 * b + i]));
            double bound = amax / 127.0 / 2 * (1 + 1e-5);
            int bsum_bad = 0;
            for (int k = 0; k < 16; k++) {
                int sum = 0;
                for (int i = 0; i < 16; i++) sum += bk[b].qs[16 * k + i];
                bsum_bad += sum != bk[b].bsums[k];
            }
            CHECK_EQ_INT(bsum_bad, 0);
            for (int i = 0; i < 256; i++) {
                if (fabs((double)y[256 * b + i] - x[256 * b + i]) > bound) bad++;
                if (bk[b].qs[i] == -128) bad++; /* kernels rely on |q| <= 127 */
            }
        }
        CHECK_MSG(bad == 0, "q8_K scale %g: %d elements beyond half a step", (double)scales[s], bad);
    }
    /* Q8_1: s must be d * sum(q) with the unrounded d = amax / 127 (as
     * llama.cpp's x86 quantize_row_q8_1), stored in f16 */
    sl_block_q8_1 b1[32];
    for (int i = 0; i < 1024; i++) x[i] = grand();
    sl_type_get(SL_TYPE_Q8_1)->from_float(x, b1, 1024);
    int bad = 0;
    for (int b = 0; b < 32; b++) {
        int sum = 0;
        for (int i = 0; i < 32; i++) sum += b1[b].qs[i];
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[32 * b + i]));
        float want = amax / 127.0f * (float)sum;
        if (b1[b].s != sl_f32_to_fp16(want)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* Quality on N(0,1) data against the uniform-quantiser rule of thumb:
 * the RMS error of a grid of step D is about D / sqrt(12). With the group's
 * expected range (about 4.1 sigma for 32 normal samples, 3.5 for 16) the
 * min-max grids give: Q4_K 4.1/15/3.46 = 0.079, Q5_K 0.038, Q2_K (16 el.,
 * 3 steps) 3.5/3/3.46 = 0.34, Q6_K (abs-max of 16 samples ~ 1.77 sigma,
 * step 1.77/32) 0.016 -- searched scales must beat these; 0.02 leeway is
 * allowed on Q6_K since its scale codes are 8-bit against an f16 d. */
TEST(gaussian_quality)
{
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    void *q = malloc(N * 4);
    struct { sl_type t; double max_rel_rms; } want[] = {
        {SL_TYPE_Q2_K, 0.34}, {SL_TYPE_Q4_K, 0.079}, {SL_TYPE_Q5_K, 0.038},
        {SL_TYPE_Q6_K, 0.020}, {SL_TYPE_Q8_0, 0.01},
    };
    for (int i = 0; i < N; i++) x[i] = grand();
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const sl_type_traits *tr = sl_type_get(want[k].t);
        tr->from_float(x, q, N);
        tr->to_float(q, y, N);
        double rel = t_rel_rms(x, y, N);
        CHECK_MSG(rel <= want[k].max_rel_rms, "%s: relative RMS %.4f > %.4f", tr->name, rel,
                  want[k].max_rel_rms);
    }
    free(x);
    free(y);
    free(q);
}

TEST(deterministic)
{
    float *x = malloc(sizeof(float) * N);
    uint8_t *a = malloc(N * 2), *b = malloc(N * 2);
    for (int i = 0; i < N; i++) x[i] = grand();
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        const sl_type_traits *tr = sl_type_get(fmts[k].t);
        uint64_t nb = 0;
        sl_type_nbytes(fmts[k].t, N, &nb);
        memset(a, 0xAA, nb);
        memset(b, 0x55, nb);
        tr->from_float(x, a, N);
        tr->from_float(x, b, N);
        CHECK_MSG(memcmp(a, b, nb) == 0, "%s: two runs differ", tr->name);
    }
    free(x);
    free(a);
    free(b);
}

int main(void)
{
    RUN(searched_formats);
    RUN(fast_formats);
    RUN(zero_and_constant_blocks);
    RUN(q8_bounds);
    RUN(gaussian_quality);
    RUN(deterministic);
    return TEST_REPORT();
}
