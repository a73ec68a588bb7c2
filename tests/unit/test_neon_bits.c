/* test_neon_bits.c - the NEON kernel set (aarch64) gives its scalar twins'
 * bits: every dot kernel the set has (K-quants, Q8_0, F32, F16, BF16; the
 * legacy Q4_0 / Q5_0 / Q4_1 / Q5_1 in their own test) on
 * random rows of several lengths and magnitudes and on edge-case blocks
 * (random bytes with sane scales: every level pattern, extreme levels,
 * zero scales, the largest activations), and the activation quantisers
 * Q8_K and Q8_0 byte for byte on random rows and on zeros, tiny and huge
 * values, infinities and NaNs. The expected values are the scalar
 * kernels' (the reference order every kernel set follows); the dots are
 * also checked against a double-precision dot of the dequantised rows;
 * the multi-token kernels give the scalar single kernel's bits per token.
 * The table types (IQ4_NL, MXFP4, IQ4_XS) are checked in the SIMD set of
 * either machine against their orders written out here (the AVX2 kernels'
 * lane orders), so NEON and AVX2
 * are shown to give the same bits.
 * Elsewhere (x86) the NEON set does not exist: the tests check that the
 * dispatch says so, and that the kernel-set name matches the ISA. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attn_kernels.h"
#include "ops/attn_kernels_neon.h"
#include "ops/ops.h"
#include "ops/vexp.h"
#include "quant/quant.h"
#include "quant/quant_internal.h"
#include "quant/quant_neon.h"
#include "quant/vec_dot_rp.h"
#include "synth/synth_gen.h"
#include "synth/synth_rng.h"
#include "test.h"
#include "util/cpu.h"
#if defined(__aarch64__)
#include "ops/vexp_neon.h"
#endif

static uint32_t rnd(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static float frand(uint32_t *s) { return (float)(rnd(s) & 0xffffff) / 8388608.0f - 1.0f; }

static const sl_type k_types[] = {SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q4_K, SL_TYPE_Q5_K,
                                  SL_TYPE_Q6_K, SL_TYPE_Q8_0, SL_TYPE_F32,  SL_TYPE_F16,
                                  SL_TYPE_BF16};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

static bool have_neon(void) { return sl_quant_vec_dot_isa(SL_TYPE_Q4_K, SL_ISA_NEON) != NULL; }

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* the dot of the two kernels on the quantised rows; both must agree bit
 * for bit, and with a double dot of the dequantised rows */
static void compare_dot(sl_type t, const void *wq, const void *aq, int n, const char *what)
{
    float want, got;
    sl_quant_vec_dot_isa(t, SL_ISA_SCALAR)(n, &want, wq, aq);
    sl_quant_vec_dot_isa(t, SL_ISA_NEON)(n, &got, wq, aq);
    CHECK_MSG(same_bits(got, want), "%s n=%d %s: neon %.9g, scalar %.9g", sl_type_name(t), n,
              what, (double)got, (double)want);
    const sl_type_traits *tr = sl_type_get(t), *at = sl_type_get(tr->vec_dot_type);
    float *wd = malloc(sizeof(float) * (size_t)n), *ad = malloc(sizeof(float) * (size_t)n);
    tr->to_float(wq, wd, n);
    at->to_float(aq, ad, n);
    double d = 0.0, mag = 0.0;
    for (int i = 0; i < n; i++) {
        d += (double)wd[i] * ad[i];
        mag += fabs((double)wd[i] * ad[i]);
    }
    CHECK_MSG(fabs(want - d) <= 1e-4 * mag + 1e-6, "%s n=%d %s: %.9g vs double %.9g",
              sl_type_name(t), n, what, (double)want, d);
    free(wd);
    free(ad);
}

TEST(neon_presence_matches_platform)
{
#if defined(__aarch64__)
    CHECK(have_neon());
    CHECK(sl_quant_isa() == SL_ISA_NEON || getenv("SLUICE_NO_SIMD"));
    const char *ks = sl_quant_kernel_set();
    CHECK(strcmp(ks, "neon") == 0 || strcmp(ks, "neon+dotprod") == 0 ||
          (getenv("SLUICE_NO_SIMD") && strcmp(ks, "ref") == 0));
    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    printf("   kernel set: %s (cpu: neon %d, dotprod %d, i8mm %d)\n", ks, cpu.neon, cpu.dotprod,
           cpu.i8mm);
    CHECK(cpu.neon);
    /* the set is named by what the CPU answered (qemu -cpu max: dotprod
     * and i8mm; cortex-a53: neither) */
    CHECK(getenv("SLUICE_NO_SIMD") || (strcmp(ks, "neon+dotprod") == 0) == cpu.dotprod);
    CHECK(!cpu.i8mm || cpu.dotprod); /* ARMv8.6 has both */
#else
    CHECK(!have_neon());
    CHECK(sl_quant_vec_dot_isa(SL_TYPE_F32, SL_ISA_NEON) == NULL);
    CHECK(strcmp(sl_quant_kernel_set(), "neon") != 0);
#endif
}

TEST(neon_dots_equal_scalar_on_random_rows)
{
    if (!have_neon()) {
        printf("   (no NEON kernels here: skipped)\n");
        return;
    }
    static const int lens[] = {256, 512, 1024, 4096, 264, 7};
    uint32_t seed = 0x5eed1234u;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const sl_type_traits *tr = sl_type_get(k_types[ti]);
        const sl_type_traits *at = sl_type_get(tr->vec_dot_type);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int n = lens[li];
            if (n % tr->block_size) continue; /* 264, 7: the float tails */
            for (int rep = 0; rep < 4; rep++) {
                const float scale = rep == 3 ? 3000.0f : rep == 2 ? 1e-3f : 1.0f;
                float *w = malloc(sizeof(float) * (size_t)n), *a = malloc(sizeof(float) * (size_t)n);
                for (int i = 0; i < n; i++) {
                    w[i] = frand(&seed) * scale;
                    a[i] = frand(&seed) * (i % 7 == 0 ? 9.0f : 1.0f);
                }
                uint8_t *wq = malloc((size_t)n * 4 + 64), *aq = malloc((size_t)n * 4 + 64);
                CHECK(sl_quantize_fast(k_types[ti], w, wq, n));
                sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)
                    ? sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)(a, aq, n)
                    : at->from_float(a, aq, n);
                compare_dot(k_types[ti], wq, aq, n, "random");
                free(w);
                free(a);
                free(wq);
                free(aq);
            }
        }
    }
}

/* Random bytes as weight blocks (every level and scale pattern), with the
 * f16 scales replaced by finite values; activations at the extremes. */
TEST(neon_dots_equal_scalar_on_edge_blocks)
{
    if (!have_neon()) {
        printf("   (no NEON kernels here: skipped)\n");
        return;
    }
    uint32_t seed = 99;
    const int n = 1024;
    for (size_t ti = 0; ti < 6; ti++) { /* the quantised types */
        const sl_type t = k_types[ti];
        const sl_type_traits *tr = sl_type_get(t);
        const size_t nb = (size_t)n / tr->block_size;
        uint8_t *wq = malloc(nb * tr->type_size), *aq = malloc(nb * 292 + 64);
        for (int rep = 0; rep < 6; rep++) {
            for (size_t i = 0; i < nb * tr->type_size; i++)
                wq[i] = rep == 1 ? 0xFF : rep == 2 ? 0x00 : (uint8_t)rnd(&seed);
            /* the f16 d (and dmin) of every block: finite, some zero */
            for (size_t b = 0; b < nb; b++) {
                uint8_t *blk = wq + b * tr->type_size;
                const uint16_t h = rep == 4 ? 0 : (uint16_t)(0x2000 + (rnd(&seed) & 0x1FFF));
                const uint16_t hm = rep == 5 ? 0x7BFF : (uint16_t)(0x2000 + (rnd(&seed) & 0x1FFF));
                switch (t) {
                case SL_TYPE_Q4_K:
                case SL_TYPE_Q5_K:
                case SL_TYPE_Q8_0:
                    memcpy(blk, &h, 2);
                    if (t != SL_TYPE_Q8_0) memcpy(blk + 2, &hm, 2);
                    break;
                case SL_TYPE_Q2_K:
                    memcpy(blk + 80, &h, 2);
                    memcpy(blk + 82, &hm, 2);
                    break;
                default: /* Q3_K, Q6_K: d last */
                    memcpy(blk + tr->type_size - 2, &h, 2);
                    break;
                }
            }
            float *a = malloc(sizeof(float) * (size_t)n);
            for (int i = 0; i < n; i++)
                a[i] = rep == 1 ? (i % 2 ? -1e30f : 1e30f) : rep == 2 ? 0.0f : frand(&seed) * 50.0f;
            sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)(a, aq, n);
            float want, got;
            sl_quant_vec_dot_isa(t, SL_ISA_SCALAR)(n, &want, wq, aq);
            sl_quant_vec_dot_isa(t, SL_ISA_NEON)(n, &got, wq, aq);
            CHECK_MSG(same_bits(got, want), "%s edge rep %d: neon %.9g, scalar %.9g", tr->name,
                      rep, (double)got, (double)want);
            free(a);
        }
        free(wq);
        free(aq);
    }
    /* float types: infinities, NaN, subnormal halves, the f16 extremes */
    static const uint16_t h16[] = {0x0000, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0xFBFF, 0x7C00,
                                   0x3C00, 0x7E00, 0x0400};
    uint16_t x[40], y[40];
    float fx[40], fy[40];
    for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < 40; i++) {
            x[i] = h16[rnd(&seed) % 10];
            y[i] = (uint16_t)rnd(&seed);
            fx[i] = sl_fp16_to_f32(x[i]);
            fy[i] = frand(&seed) * (rep % 3 == 0 ? 1e38f : 1.0f);
        }
        static const sl_type ft[] = {SL_TYPE_F32, SL_TYPE_F16, SL_TYPE_BF16};
        for (int k = 0; k < 3; k++) {
            const void *px = ft[k] == SL_TYPE_F32 ? (const void *)fx : x;
            const void *py = ft[k] == SL_TYPE_F32 ? (const void *)fy : y;
            for (int len = 1; len <= 40; len += 13) {
                float want, got;
                sl_quant_vec_dot_isa(ft[k], SL_ISA_SCALAR)(len, &want, px, py);
                sl_quant_vec_dot_isa(ft[k], SL_ISA_NEON)(len, &got, px, py);
                CHECK_MSG(same_bits(got, want) || (isnan(got) && isnan(want)),
                          "%s len %d rep %d: neon %.9g, scalar %.9g", sl_type_name(ft[k]), len,
                          rep, (double)got, (double)want);
            }
        }
    }
}

/* The multi-token kernels: s[t] for nt = 1..8 tokens equals the scalar
 * single-token kernel's dot of the row with token t, bit for bit. */
TEST(neon_multi_token_equals_scalar_single)
{
    if (!have_neon()) {
        printf("   (no NEON kernels here: skipped)\n");
        return;
    }
    static const sl_type mt[] = {SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q4_K,
                                 SL_TYPE_Q5_K, SL_TYPE_Q6_K, SL_TYPE_Q8_0};
    const int n = 768;
    uint32_t seed = 4242;
    for (size_t ti = 0; ti < sizeof mt / sizeof mt[0]; ti++) {
        const sl_type_traits *tr = sl_type_get(mt[ti]);
        int max = 0;
        sl_vec_dot_n_fn fn = sl_quant_vec_dot_n_isa(mt[ti], SL_ISA_NEON, &max);
        CHECK_MSG(fn != NULL && max == SL_VEC_DOT_N_MAX, "%s: no NEON multi-token kernel",
                  tr->name);
        if (!fn) continue;
        float w[768], a[768];
        uint8_t wq[768 * 2], aq[SL_VEC_DOT_N_MAX][768 * 2];
        const void *ys[SL_VEC_DOT_N_MAX];
        for (int i = 0; i < n; i++) w[i] = frand(&seed) * 2.0f;
        CHECK(sl_quantize_fast(mt[ti], w, wq, n));
        for (int t = 0; t < max; t++) {
            for (int i = 0; i < n; i++) a[i] = frand(&seed) * (t == 3 ? 1e4f : 1.0f);
            sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)(a, aq[t], n);
            ys[t] = aq[t];
        }
        for (int nt = 1; nt <= max; nt++) {
            float got[SL_VEC_DOT_N_MAX];
            fn(n, got, wq, ys, nt);
            for (int t = 0; t < nt; t++) {
                float want;
                sl_quant_vec_dot_isa(mt[ti], SL_ISA_SCALAR)(n, &want, wq, ys[t]);
                CHECK_MSG(same_bits(got[t], want), "%s nt=%d t=%d: neon %.9g, scalar %.9g",
                          tr->name, nt, t, (double)got[t], (double)want);
            }
        }
    }
}

TEST(neon_activation_quantisers_equal_scalar)
{
    if (!have_neon()) {
        printf("   (no NEON kernels here: skipped)\n");
        return;
    }
    static const sl_type at[] = {SL_TYPE_Q8_K, SL_TYPE_Q8_0};
    const int n = 1024;
    float *a = malloc(sizeof(float) * (size_t)n);
    uint8_t *want = malloc(2048), *got = malloc(2048);
    uint32_t seed = 7;
    for (int rep = 0; rep < 12; rep++) {
        for (int i = 0; i < n; i++) {
            float v = frand(&seed);
            switch (rep) {
            case 0: v *= 1.0f; break;
            case 1: v = 0.0f; break;
            case 2: v *= 1e-35f; break;                       /* below Q8_K's 1e-30 */
            case 3: v *= 3e38f; break;                        /* huge */
            case 4: v = (i % 37 == 0) ? INFINITY : v; break;  /* an infinity per block */
            case 5: v = (i % 41 == 0) ? NAN : v; break;       /* NaNs */
            case 6: v = (i % 2) ? -0.0f : 0.0f; break;
            case 7: v = (float)((int)(v * 127.0f)) + 0.5f; break; /* ties */
            case 8: v = (i % 64 == 5) ? -7.0f : v * 1e-3f; break; /* one large negative */
            default: v *= (float)(rep * 100); break;
            }
            a[i] = v;
        }
        for (int k = 0; k < 2; k++) {
            const sl_type_traits *tr = sl_type_get(at[k]);
            const size_t bytes = (size_t)n / tr->block_size * tr->type_size;
            memset(want, 0xA5, 2048);
            memset(got, 0xA5, 2048);
            sl_quant_from_float_isa(at[k], SL_ISA_SCALAR)(a, want, n);
            sl_from_float_fn f = sl_quant_from_float_isa(at[k], SL_ISA_NEON);
            CHECK(f != NULL);
            if (!f) continue;
            f(a, got, n);
            CHECK_MSG(memcmp(want, got, bytes) == 0, "%s rep %d: bytes differ", tr->name, rep);
            CHECK(memcmp(want + bytes, got + bytes, 16) == 0); /* nothing written past */
        }
    }
    free(a);
    free(want);
    free(got);
}

/* sl_vexp4 lane for lane sl_vexpf, over a sweep and the edges (both
 * special-case ranges, overflow, underflow to subnormals and zero, inf,
 * NaN, signed zeros); and the ops that use it (silu, swiglu, softmax) and
 * the untiled f32 dot as the scalar expressions give them. */
TEST(neon_vexp_and_activations_equal_scalar)
{
#if defined(__aarch64__)
    static const float edge[] = {0.0f,    -0.0f,  1.0f,    -1.0f,   88.0f,   88.8f,  -87.0f,
                                 -88.5f,  -100.0f, -103.9f, -104.0f, -110.0f, 126.5f, -126.5f,
                                 133.0f,  -133.0f, 150.0f, -150.0f, 200.0f,  -200.0f, INFINITY,
                                 -INFINITY, NAN,   1e-30f, -1e-30f, 3e38f,   -3e38f, 0.5f};
    const int ne = (int)(sizeof edge / sizeof edge[0]);
    uint32_t seed = 77;
    for (int rep = 0; rep < 2000; rep++) {
        float in[4], out[4];
        for (int l = 0; l < 4; l++)
            in[l] = rep < 8 ? edge[(4 * rep + l) % ne] : frand(&seed) * (rep % 2 ? 200.0f : 20.0f);
        vst1q_f32(out, sl_vexp4(vld1q_f32(in)));
        for (int l = 0; l < 4; l++) {
            const float want = sl_vexpf(in[l]);
            CHECK_MSG(same_bits(out[l], want), "vexp(%.9g): neon %.9g, scalar %.9g", (double)in[l],
                      (double)out[l], (double)want);
        }
    }
    enum { N = 203 }; /* eights and a tail */
    float x[N], g[N], got[N], want[N];
    for (int i = 0; i < N; i++) {
        x[i] = frand(&seed) * 30.0f;
        g[i] = frand(&seed) * 3.0f;
    }
    x[5] = -INFINITY;
    x[9] = 100.0f;
    const int n8 = N - N % 8;
    memcpy(got, x, sizeof x);
    sl_silu(got, N);
    for (int i = 0; i < N; i++)
        want[i] = x[i] / (1.0f + (i < n8 ? sl_vexpf(0.0f - x[i]) : expf(-x[i])));
    CHECK(memcmp(got, want, sizeof got) == 0);
    memcpy(got, x, sizeof x);
    sl_swiglu(got, g, N);
    for (int i = 0; i < N; i++)
        want[i] = x[i] / (1.0f + (i < n8 ? sl_vexpf(0.0f - x[i]) : expf(-x[i]))) * g[i];
    CHECK(memcmp(got, want, sizeof got) == 0);
    memcpy(got, x, sizeof x);
    sl_softmax(got, N);
    float mx = x[0];
    for (int i = 1; i < N; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n8; i += 8) {
        float p[8];
        for (int j = 0; j < 8; j++) want[i + j] = p[j] = sl_vexpf(x[i + j] - mx);
        const float a0 = p[0] + p[4], a1 = p[1] + p[5], a2 = p[2] + p[6], a3 = p[3] + p[7];
        sum += (double)((a0 + a2) + (a1 + a3));
    }
    for (int i = n8; i < N; i++) sum += (double)(want[i] = expf(x[i] - mx));
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < N; i++) want[i] *= inv;
    CHECK(memcmp(got, want, sizeof got) == 0);
    /* the untiled dot: four 8-lane FMA chains over steps of 32 */
    float a[4][8] = {{0}};
    int i = 0;
    for (; i + 32 <= N; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) a[j][l] = fmaf(x[i + 8 * j + l], g[i + 8 * j + l], a[j][l]);
    float sl[8], t0[4];
    for (int l = 0; l < 8; l++) sl[l] = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l]);
    for (int l = 0; l < 4; l++) t0[l] = sl[l] + sl[l + 4];
    float d = (t0[0] + t0[1]) + (t0[2] + t0[3]);
    for (; i < N; i++) d = fmaf(x[i], g[i], d);
    const float dot = sl_dot_f32_untiled(x, g, N);
    CHECK_MSG(same_bits(dot, d) || (isnan(dot) && isnan(d)), "untiled dot %.9g vs %.9g",
              (double)dot, (double)d);
#else
    printf("   (not aarch64: skipped)\n");
#endif
}

/* Blocked attention: the NEON attend equals the scalar one bit for bit, f16
 * and f32 caches, several head sizes (dv not a multiple of 4 too), windows
 * (pos_lo), partial last tiles and sinks. */
TEST(neon_attention_equals_scalar)
{
    const sl_attn_kernels *nk = sl_attn_kernels_neon(), *rk = sl_attn_kernels_ref();
#if defined(__aarch64__)
    CHECK(nk != NULL);
    CHECK(sl_quant_isa() != SL_ISA_NEON || sl_attn_kernels_get() == nk);
#else
    CHECK(nk == NULL);
#endif
    if (!nk) return;
    static const int shapes[][5] = {/* dk, dv, n_q, n_pos, pos_lo */
                                    {64, 64, 1, 1, 0},   {64, 64, 4, 200, 0}, {128, 128, 2, 64, 0},
                                    {32, 30, 3, 130, 0}, {16, 20, 2, 300, 100}, {8, 6, 1, 65, 64}};
    uint32_t seed = 31337;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int dk = shapes[si][0], dv = shapes[si][1], nq = shapes[si][2], np = shapes[si][3];
        for (int f16 = 0; f16 < 2; f16++)
            for (int sinks = 0; sinks < 2; sinks++) {
                const size_t es = f16 ? 2 : 4;
                uint8_t *k = malloc((size_t)np * dk * es), *v = malloc((size_t)np * dv * es);
                float *q = malloc(sizeof(float) * (size_t)nq * dk), sk[8];
                for (int i = 0; i < np * dk; i++) {
                    const float x = frand(&seed) * 2.0f;
                    if (f16) ((uint16_t *)k)[i] = sl_f32_to_fp16(x);
                    else ((float *)k)[i] = x;
                }
                for (int i = 0; i < np * dv; i++) {
                    const float x = frand(&seed);
                    if (f16) ((uint16_t *)v)[i] = sl_f32_to_fp16(x);
                    else ((float *)v)[i] = x;
                }
                for (int i = 0; i < nq * dk; i++) q[i] = frand(&seed) * 3.0f;
                for (int r = 0; r < nq; r++) sk[r] = frand(&seed) * 4.0f;
                const size_t scr = sl_attn_scratch_floats(dk, dv, nq);
                float *s1 = malloc(sizeof(float) * scr), *s2 = malloc(sizeof(float) * scr);
                float *o1 = calloc((size_t)nq * dv, sizeof(float)), *o2 = calloc((size_t)nq * dv, sizeof(float));
                for (size_t i = 0; i < scr; i++) s1[i] = s2[i] = NAN; /* stale scratch */
                sl_attn_block b = {.q = q, .q_stride = (size_t)dk, .k = k, .v = v,
                                   .k_stride = (size_t)dk * es, .v_stride = (size_t)dv * es,
                                   .dk = dk, .dv = dv, .n_q = nq, .n_pos = np,
                                   .scale = 1.0f / sqrtf((float)dk), .out = o1,
                                   .out_stride = (size_t)dv, .scratch = s1,
                                   .pos_lo = shapes[si][4], .sinks = sinks ? sk : NULL};
                (f16 ? rk->attend_f16 : rk->attend_f32)(&b);
                b.out = o2;
                b.scratch = s2;
                (f16 ? nk->attend_f16 : nk->attend_f32)(&b);
                CHECK_MSG(memcmp(o1, o2, sizeof(float) * (size_t)nq * dv) == 0,
                          "shape %zu f16 %d sinks %d: outputs differ", si, f16, sinks);
                free(k);
                free(v);
                free(q);
                free(s1);
                free(s2);
                free(o1);
                free(o2);
            }
    }
}

/* The generator's four-stream normal fill: rows and final states equal the
 * scalar sl_rng_fill_normal_scaled's, for lengths below, at and above a
 * multiple of 8. */
TEST(neon_generator_fill_equals_scalar)
{
    static const size_t lens[] = {7, 8, 64, 203};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const size_t n = lens[li];
        sl_rng r[4], w[4];
        float got[4][203], want[4][203];
        float *rows[4] = {got[0], got[1], got[2], got[3]};
        for (int k = 0; k < 4; k++) {
            sl_rng_seed(&r[k], 1000u + 17u * (unsigned)k + li);
            w[k] = r[k];
        }
        const size_t m = sl_rng_fill4_normal_neon(r, rows, n, 0.25f, 0.0137f);
#if defined(__aarch64__)
        CHECK_EQ_INT(m, n & ~(size_t)7);
#else
        CHECK_EQ_INT(m, 0);
#endif
        for (int k = 0; k < 4; k++) {
            sl_rng_fill_normal_scaled(&r[k], got[k] + m, n - m, 0.25f, 0.0137f);
            sl_rng_fill_normal_scaled(&w[k], want[k], n, 0.25f, 0.0137f);
            CHECK_MSG(memcmp(got[k], want[k], n * sizeof(float)) == 0, "n=%zu row %d differs", n, k);
            CHECK(memcmp(r[k].s, w[k].s, sizeof r[k].s) == 0);
        }
    }
}

/* The legacy 32-element types (Q4_0, Q5_0 against Q8_0; Q4_1, Q5_1 against
 * Q8_1): random bytes as weight blocks (every level and high-bit pattern),
 * all-0xFF and all-zero blocks, zero and largest f16 scales, negative
 * offsets m; activations random, zero and at the extremes (Q8_1's f16 sum
 * overflowing to infinity). The NEON single and multi-token kernels must
 * give the scalar single kernel's bits (or both NaN); on random quantised
 * rows the scalar kernel must also match a double dot of the dequantised
 * rows. */
TEST(neon_legacy_dots_equal_scalar)
{
    if (!have_neon()) {
        printf("   (no NEON kernels here: skipped)\n");
        return;
    }
    static const sl_type lt[] = {SL_TYPE_Q4_0, SL_TYPE_Q5_0, SL_TYPE_Q4_1, SL_TYPE_Q5_1};
    enum { N = 1024, NB = N / 32 };
    uint32_t seed = 777;
    static sl_quant_kernels forms[2];
    int n_forms = 0;
    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    CHECK(sl_vec_dot_fill_legacy_neon(&forms[n_forms++], false));
    if (cpu.dotprod) CHECK(sl_vec_dot_fill_legacy_neon(&forms[n_forms++], true));
    printf("   legacy forms checked: %s\n", n_forms == 2 ? "v8.0 and sdot" : "v8.0");
    for (size_t ti = 0; ti < sizeof lt / sizeof lt[0]; ti++) {
        const sl_type t = lt[ti];
        const sl_type_traits *tr = sl_type_get(t);
        const bool offset = t == SL_TYPE_Q4_1 || t == SL_TYPE_Q5_1;
        CHECK(tr->vec_dot_type == (offset ? SL_TYPE_Q8_1 : SL_TYPE_Q8_0));
        int max = 0;
        sl_vec_dot_n_fn fn = sl_quant_vec_dot_n_isa(t, SL_ISA_NEON, &max);
        CHECK_MSG(fn != NULL && max == SL_VEC_DOT_N_MAX, "%s: no NEON multi-token kernel",
                  tr->name);
        CHECK_MSG(sl_quant_vec_dot_isa(t, SL_ISA_NEON) != sl_quant_vec_dot_isa(t, SL_ISA_SCALAR),
                  "%s: NEON set still has the scalar kernel", tr->name);
        if (!fn) continue;
        uint8_t *wq = malloc(NB * tr->type_size);
        uint8_t *aq = malloc((size_t)SL_VEC_DOT_N_MAX * NB * 36);
        float *a = malloc(sizeof(float) * N);
        for (int rep = 0; rep < 8; rep++) {
            for (size_t i = 0; i < NB * tr->type_size; i++)
                wq[i] = rep == 1 ? 0xFF : rep == 2 ? 0x00 : (uint8_t)rnd(&seed);
            for (int b = 0; b < NB; b++) {
                uint8_t *blk = wq + (size_t)b * tr->type_size;
                const uint16_t h = rep == 4 ? 0 : rep == 5 ? 0x7BFF
                                                           : (uint16_t)(0x2000 + (rnd(&seed) & 0x1FFF));
                const uint16_t hm = rep == 4 ? 0 : (uint16_t)((0x2000 + (rnd(&seed) & 0x1FFF)) |
                                                              (rnd(&seed) & 0x8000));
                if (rep != 1) memcpy(blk, &h, 2);
                if (offset && rep != 1) memcpy(blk + 2, &hm, 2);
            }
            const void *ys[SL_VEC_DOT_N_MAX];
            for (int tok = 0; tok < SL_VEC_DOT_N_MAX; tok++) {
                for (int i = 0; i < N; i++)
                    a[i] = rep == 6 ? (i % 2 ? -1e30f : 1e30f)
                           : rep == 2 ? 0.0f
                           : rep == 7 ? 127.0f * (float)(tok + 1)
                                      : frand(&seed) * (tok == 3 ? 1e4f : 50.0f);
                uint8_t *dst = aq + (size_t)tok * NB * 36;
                sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)(a, dst, N);
                ys[tok] = dst;
            }
            float want[SL_VEC_DOT_N_MAX], got;
            for (int tok = 0; tok < max; tok++) {
                sl_quant_vec_dot_isa(t, SL_ISA_SCALAR)(N, &want[tok], wq, ys[tok]);
                sl_quant_vec_dot_isa(t, SL_ISA_NEON)(N, &got, wq, ys[tok]);
                CHECK_MSG(same_bits(got, want[tok]) || (isnan(got) && isnan(want[tok])),
                          "%s rep %d tok %d: neon %.9g, scalar %.9g", tr->name, rep, tok,
                          (double)got, (double)want[tok]);
            }
            for (int nt = 1; nt <= max; nt++) {
                float many[SL_VEC_DOT_N_MAX];
                fn(N, many, wq, ys, nt);
                for (int tok = 0; tok < nt; tok++)
                    CHECK_MSG(same_bits(many[tok], want[tok]) ||
                                  (isnan(many[tok]) && isnan(want[tok])),
                              "%s rep %d nt %d tok %d: neon %.9g, scalar %.9g", tr->name, rep,
                              nt, tok, (double)many[tok], (double)want[tok]);
            }
            /* both forms, whichever the dispatch chose: ARMv8.0 always,
             * SDOT where the CPU has it */
            for (int form = 0; form < n_forms; form++) {
                const sl_quant_kernels *kf = &forms[form];
                for (int tok = 0; tok < max; tok++) {
                    kf->vec_dot[t](N, &got, wq, ys[tok]);
                    CHECK_MSG(same_bits(got, want[tok]) || (isnan(got) && isnan(want[tok])),
                              "%s %s rep %d tok %d: %.9g, scalar %.9g", tr->name,
                              form ? "sdot" : "v8.0", rep, tok, (double)got, (double)want[tok]);
                }
                for (int nt = 1; nt <= SL_VEC_DOT_N_MAX; nt++) {
                    float many[SL_VEC_DOT_N_MAX];
                    kf->vec_dot_n[t](N, many, wq, ys, nt);
                    for (int tok = 0; tok < nt; tok++)
                        CHECK_MSG(same_bits(many[tok], want[tok]) ||
                                      (isnan(many[tok]) && isnan(want[tok])),
                                  "%s %s rep %d nt %d tok %d: %.9g, scalar %.9g", tr->name,
                                  form ? "sdot" : "v8.0", rep, nt, tok, (double)many[tok],
                                  (double)want[tok]);
                }
            }
        }
        /* quantised random rows: the double-dot check of compare_dot too */
        float *w = malloc(sizeof(float) * N);
        for (int i = 0; i < N; i++) {
            w[i] = frand(&seed) + (offset ? 0.5f : 0.0f);
            a[i] = frand(&seed);
        }
        tr->from_float(w, wq, N);
        sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)(a, aq, N);
        compare_dot(t, wq, aq, N, "random");
        free(w);
        free(wq);
        free(aq);
        free(a);
    }
}

/* ---- the table types ------------------------------------------------------
 * IQ4_NL / MXFP4 x Q8_0 in the AVX2 kernels' order (vec_dot_iq_avx2.c, the
 * order of llama.cpp's x86 build), written out: lane l of block i is the
 * exact integer dot of elements 4l..4l+3 (table values of the nibbles,
 * low nibbles first), FMA'd with dx * dy into the even or the odd set of
 * lanes by i's parity; the two sets added lane by lane, then summed
 * (halves, then 0+2 and 1+3, then those two). dx: the f16 d, or MXFP4's
 * 2^(e-128) for the doubled table. */
static float b32_lane_order(sl_type t, int n, const uint8_t *wq, const uint8_t *aq)
{
    const bool mx = t == SL_TYPE_MXFP4;
    const size_t ts = mx ? 17 : 18;
    const int8_t *tab = mx ? sl_mxfp4_values : sl_iq4nl_values;
    float lane[2][8] = {{0}};
    for (int i = 0; i < n / 32; i++) {
        const uint8_t *b = wq + (size_t)i * ts, *qs = b + ts - 16;
        uint16_t h;
        memcpy(&h, b, 2);
        const float dx = mx ? ldexpf(1.0f, (int)b[0] - 128) : sl_fp16_to_f32(h);
        const sl_block_q8_0 *y = (const sl_block_q8_0 *)aq + i;
        const float d = dx * sl_fp16_to_f32(y->d);
        for (int l = 0; l < 8; l++) {
            int p = 0;
            for (int j = 4 * l; j < 4 * l + 4; j++)
                p += (j < 16 ? tab[qs[j] & 15] : tab[qs[j - 16] >> 4]) * y->qs[j];
            lane[i & 1][l] = fmaf(d, (float)p, lane[i & 1][l]);
        }
    }
    float u[8];
    for (int l = 0; l < 8; l++) u[l] = lane[0][l] + lane[1][l];
    const float a0 = u[0] + u[4], a1 = u[1] + u[5], a2 = u[2] + u[6], a3 = u[3] + u[7];
    return (a0 + a2) + (a1 + a3);
}

/* IQ4_XS x Q8_K in llama.cpp's AVX2 order (ggml_vec_dot_iq4_xs_q8_K): per
 * super-block eight lanes, lane l the exact integer sum of (ls - 32) times
 * elements 4l..4l+3 of every sub-block, one fmaf per lane with d * y.d,
 * the lanes summed as the AVX2 hsum at the end. Written out here as well. */
static float xs_order(int n, const uint8_t *wq, const uint8_t *aq)
{
    float lane[8] = {0};
    for (int i = 0; i < n / 256; i++) {
        const uint8_t *b = wq + (size_t)i * 136;
        uint16_t h, sh;
        memcpy(&h, b, 2);
        memcpy(&sh, b + 2, 2);
        const sl_block_q8_K *y = (const sl_block_q8_K *)aq + i;
        int sumi[8] = {0};
        for (int k = 0; k < 8; k++) {
            const int ls = ((b[4 + k / 2] >> (4 * (k % 2))) & 15) | ((sh >> (2 * k)) & 3) << 4;
            const uint8_t *qs = b + 8 + 16 * k;
            for (int j = 0; j < 32; j++)
                sumi[j / 4] +=
                    (ls - 32) * (j < 16 ? sl_iq4nl_values[qs[j] & 15] : sl_iq4nl_values[qs[j - 16] >> 4]) *
                    y->qs[32 * k + j];
        }
        for (int l = 0; l < 8; l++) lane[l] = fmaf(sl_fp16_to_f32(h) * y->d, (float)sumi[l], lane[l]);
    }
    const float a0 = lane[0] + lane[4], a1 = lane[1] + lane[5], a2 = lane[2] + lane[6],
                a3 = lane[3] + lane[7];
    return (a0 + a2) + (a1 + a3);
}

static bool same_or_nan(float a, float b) { return same_bits(a, b) || (isnan(a) && isnan(b)); }

/* The SIMD set of this machine (NEON on aarch64, AVX2 on x86) against the
 * orders above, single- and multi-token (nt 1..8, every token its own
 * activations), on rows of 1, 3, 32 and 129 blocks (IQ4_XS: 1, 3, 16) of
 * random bytes with sane scales, all-0xFF and all-zero bytes, zero scales,
 * subnormal f16 scales, the largest scales (f16 65504; MXFP4 e from 0 and 1, float subnormals, to
 * 254), activations of +-1e30, zero, 127 * (t + 1) and random; then
 * quantised Gaussian-like rows, where the order is also within 1e-5 of a
 * double dot of the dequantised rows. The scalar kernels follow the same
 * orders, so they must equal them bit for bit too. */
TEST(table_type_dots_follow_their_orders)
{
    sl_isa isa = SL_ISA_NEON;
    if (!have_neon()) isa = SL_ISA_AVX2;
    if (!sl_quant_vec_dot_isa(SL_TYPE_IQ4_XS, isa)) {
        printf("   (no SIMD kernel set here: skipped)\n");
        return;
    }
    printf("   kernel set checked: %s\n", sl_isa_name(isa));
    static const sl_type tt[] = {SL_TYPE_IQ4_NL, SL_TYPE_MXFP4, SL_TYPE_IQ4_XS};
    enum { NMAXB = 129, NT = SL_VEC_DOT_N_MAX };
    uint32_t seed = 16016;
    for (size_t ti = 0; ti < 3; ti++) {
        const sl_type t = tt[ti];
        const bool xs = t == SL_TYPE_IQ4_XS, mx = t == SL_TYPE_MXFP4;
        const sl_type_traits *tr = sl_type_get(t);
        const sl_type_traits *at = sl_type_get(tr->vec_dot_type);
        CHECK(tr->vec_dot_type == (xs ? SL_TYPE_Q8_K : SL_TYPE_Q8_0));
        sl_vec_dot_fn one = sl_quant_vec_dot_isa(t, isa), ref = sl_quant_vec_dot_isa(t, SL_ISA_SCALAR);
        int max = 0;
        sl_vec_dot_n_fn many = sl_quant_vec_dot_n_isa(t, isa, &max);
        CHECK_MSG(one && one != ref, "%s: the %s set has no kernel of its own", tr->name,
                  sl_isa_name(isa));
        CHECK_MSG(many && max == NT, "%s: no %s multi-token kernel", tr->name, sl_isa_name(isa));
        if (!one || !many) continue;
        const int lens32[] = {32, 96, 1024, 32 * NMAXB}, lensxs[] = {256, 768, 4096};
        const int *lens = xs ? lensxs : lens32;
        const int nlen = xs ? 3 : 4;
        uint8_t *wq = malloc(NMAXB * 32 / tr->block_size * tr->type_size + 64);
        uint8_t *aq = malloc((size_t)NT * (NMAXB * 32 / at->block_size * at->type_size + 64));
        const size_t astride = NMAXB * 32 / at->block_size * at->type_size + 64;
        float *a = malloc(sizeof(float) * NMAXB * 32), *w = malloc(sizeof(float) * NMAXB * 32);
        for (int li = 0; li < nlen; li++) {
            const int n = lens[li];
            const size_t nb = (size_t)n / tr->block_size;
            for (int rep = 0; rep < 9; rep++) {
                if (rep < 8) {
                    for (size_t i = 0; i < nb * tr->type_size; i++)
                        wq[i] = rep == 1 ? 0xFF : rep == 2 ? 0x00 : (uint8_t)rnd(&seed);
                    for (size_t b = 0; b < nb; b++) {
                        uint8_t *blk = wq + b * tr->type_size;
                        if (rep == 1 || rep == 2) continue; /* the all-0xFF / zero bytes as they are */
                        if (mx) {
                            blk[0] = rep == 4 ? (uint8_t)(rnd(&seed) % 2)
                                     : rep == 5 ? (uint8_t)(rnd(&seed) % 2 ? 254 : rnd(&seed) % 255)
                                                : (uint8_t)(110 + rnd(&seed) % 30);
                        } else {
                            const uint16_t sign = (uint16_t)(rnd(&seed) & 0x8000);
                            const uint16_t h = rep == 4   ? 0
                                               : rep == 5 ? 0x7BFF
                                               : rep == 3 ? (uint16_t)((1 + rnd(&seed) % 0x3FF) | sign)
                                                          : (uint16_t)((0x2000 + (rnd(&seed) & 0x1FFF)) | sign);
                            memcpy(blk, &h, 2);
                        }
                    }
                } else { /* a quantised row */
                    for (int i = 0; i < n; i++) w[i] = frand(&seed) * (i % 13 == 0 ? 4.0f : 1.0f);
                    tr->from_float(w, wq, n);
                }
                const void *ys[NT];
                for (int tok = 0; tok < NT; tok++) {
                    for (int i = 0; i < n; i++)
                        a[i] = rep == 6 ? (i % 2 ? -1e30f : 1e30f)
                               : rep == 2 ? 0.0f
                               : rep == 7 ? 127.0f * (float)(tok + 1)
                                          : frand(&seed) * (tok == 3 ? 1e4f : 50.0f);
                    uint8_t *dst = aq + (size_t)tok * astride;
                    sl_quant_from_float_isa(tr->vec_dot_type, SL_ISA_SCALAR)(a, dst, n);
                    ys[tok] = dst;
                }
                float want[NT], got;
                for (int tok = 0; tok < NT; tok++) {
                    want[tok] = xs ? xs_order(n, wq, ys[tok]) : b32_lane_order(t, n, wq, ys[tok]);
                    one(n, &got, wq, ys[tok]);
                    CHECK_MSG(same_or_nan(got, want[tok]), "%s n=%d rep %d tok %d: %s %.9g, order %.9g",
                              tr->name, n, rep, tok, sl_isa_name(isa), (double)got, (double)want[tok]);
                    float r;
                    ref(n, &r, wq, ys[tok]);
                    CHECK_MSG(same_or_nan(r, want[tok]), "%s n=%d rep %d: scalar %.9g, order %.9g",
                              tr->name, n, rep, (double)r, (double)want[tok]);
                }
                for (int nt = 1; nt <= max; nt++) {
                    float s[NT];
                    many(n, s, wq, ys, nt);
                    for (int tok = 0; tok < nt; tok++)
                        CHECK_MSG(same_or_nan(s[tok], want[tok]),
                                  "%s n=%d rep %d nt %d tok %d: %s %.9g, order %.9g", tr->name, n,
                                  rep, nt, tok, sl_isa_name(isa), (double)s[tok], (double)want[tok]);
                }
                if (rep == 8 || rep == 0) { /* finite: the values themselves */
                    float *wd = malloc(sizeof(float) * (size_t)n), *ad = malloc(sizeof(float) * (size_t)n);
                    tr->to_float(wq, wd, n);
                    at->to_float(ys[0], ad, n);
                    double d = 0.0, mag = 0.0;
                    for (int i = 0; i < n; i++) {
                        d += (double)wd[i] * ad[i];
                        mag += fabs((double)wd[i] * ad[i]);
                    }
                    float r;
                    ref(n, &r, wq, ys[0]);
                    CHECK_MSG(fabs(want[0] - d) <= 1e-5 * mag + 1e-30, "%s n=%d rep %d: %.9g vs double %.9g",
                              tr->name, n, rep, (double)want[0], d);
                    CHECK_MSG(fabs(r - d) <= 1e-5 * mag + 1e-30, "%s n=%d rep %d: scalar %.9g vs double %.9g",
                              tr->name, n, rep, (double)r, d);
                    free(wd);
                    free(ad);
                }
            }
        }
        free(wq);
        free(aq);
        free(a);
        free(w);
    }
}

/* ---- the rp32 order (Q4_0 / IQ4_NL / MXFP4 x Q8_0, vec_dot_rp.h) ------------
 * Each NEON form (ARMv8.0, and SDOT where the CPU has it) of the
 * multi-token and eight-row kernels on the plain layout and of the
 * eight-row kernel on the x8 layout gives the scalar twins' bits
 * (vec_dot_rp32_ref.c, vec_dot_rp32x8_ref.c; those are checked against
 * the formula written out in test_vecdot_rp32x8.c) for every token count,
 * on 1, 3, 9 and 64 blocks, and on these fills: random bytes with sane
 * scales, all zero (weights and activations), the largest magnitudes
 * (f16 scales +-65504 or E8M0 254 / 255, activations +-127 / -128 with
 * the largest d: the products overflow to inf), the smallest scales (f16
 * subnormals, E8M0 0 / 1), every nibble 0xF, and NaN / inf scales. */
enum { RP_NT = SL_VEC_DOT_RP_MAX };

/* the bytes of 8 plain rows of nb blocks of type t (bb bytes each) and of
 * RP_NT activation rows, for fill mode m */
static void rp_fill(sl_type t, int nb, int m, uint8_t *rows, sl_block_q8_0 *y, uint32_t *seed)
{
    const bool mx = t == SL_TYPE_MXFP4;
    const size_t bb = mx ? 17 : 18;
    for (size_t i = 0; i < 8 * (size_t)nb * bb; i++)
        rows[i] = m == 1 ? 0 : m == 4 ? 0xFF : (uint8_t)rnd(seed);
    for (int b = 0; b < 8 * nb; b++) {
        uint8_t *p = rows + (size_t)b * bb;
        const uint32_t r = rnd(seed);
        if (mx) {
            p[0] = m == 1   ? 0
                   : m == 2 ? (uint8_t)(254 + (r & 1))
                   : m == 3 ? (uint8_t)(r & 1)
                   : m == 5 ? 0xFF
                            : (uint8_t)(110 + r % 30);
            continue;
        }
        uint16_t h = m == 1   ? 0
                     : m == 2 ? 0x7BFF
                     : m == 3 ? (uint16_t)(1 + r % 0x3FF)
                     : m == 5 ? (r & 2 ? 0x7C00 : 0x7E01)
                              : (uint16_t)(((8 + r % 10) << 10) | (r >> 8 & 0x3FF));
        if (m != 1) h |= (uint16_t)((r >> 20 & 1) << 15);
        memcpy(p, &h, 2);
    }
    for (int k = 0; k < RP_NT; k++)
        for (int b = 0; b < nb; b++) {
            sl_block_q8_0 *q = &y[(size_t)k * (size_t)nb + (size_t)b];
            const uint32_t r = rnd(seed);
            q->d = m == 1 ? 0 : m == 2 ? 0x7BFF : (uint16_t)(((6 + r % 10) << 10) | (r >> 8 & 0x3FF));
            for (int j = 0; j < SL_QK; j++)
                q->qs[j] = m == 1   ? 0
                           : m == 2 ? (int8_t)(j % 3 == 0 ? -128 : j % 3 == 1 ? 127 : -127)
                                    : (int8_t)rnd(seed);
        }
}

TEST(neon_rp32_kernels_equal_scalar)
{
    if (!have_neon()) {
        printf("   (no NEON kernels here: skipped)\n");
        return;
    }
    static const sl_type tt[] = {SL_TYPE_Q4_0, SL_TYPE_IQ4_NL, SL_TYPE_MXFP4};
    static const int nbs[] = {1, 3, 9, 64};
    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    const int n_forms = cpu.dotprod ? 2 : 1;
    uint32_t seed = 4242;
    long compared = 0;
    for (size_t ti = 0; ti < sizeof tt / sizeof tt[0]; ti++) {
        const sl_type t = tt[ti];
        const size_t bb = t == SL_TYPE_MXFP4 ? 17 : 18;
        /* the dispatch hands out the NEON kernels of the chosen form */
        sl_rp32_neon chosen;
        CHECK(sl_rp32_neon_get(t, sl_quant_neon_dotprod(), &chosen));
        CHECK(sl_vec_dot_n_b32_rp_isa(t, SL_ISA_NEON) == chosen.n);
        CHECK(sl_vec_dot_rows8_b32_rp_isa(t, SL_ISA_NEON) == chosen.rows8);
        CHECK(sl_vec_dot_x8_b32_rp_isa(t, SL_ISA_NEON) == chosen.x8);
        CHECK(getenv("SLUICE_NO_SIMD") || sl_vec_dot_x8_b32_rp(t) == chosen.x8);
        const sl_vec_dot_n_fn ref_n = sl_vec_dot_n_b32_rp_isa(t, SL_ISA_SCALAR);
        const sl_vec_dot_rows8_fn ref_r8 = sl_vec_dot_rows8_b32_rp_isa(t, SL_ISA_SCALAR);
        const sl_vec_dot_rows8_fn ref_x8 = sl_vec_dot_x8_b32_rp_isa(t, SL_ISA_SCALAR);
        for (size_t ni = 0; ni < sizeof nbs / sizeof nbs[0]; ni++)
            for (int m = 0; m < 6; m++) {
                const int nb = nbs[ni];
                const int64_t n = (int64_t)nb * SL_QK;
                const size_t rb = (size_t)nb * bb;
                uint8_t *rows = malloc(8 * rb), *x8 = malloc(8 * rb), *tmp = malloc(8 * rb);
                sl_block_q8_0 *y = malloc(sizeof *y * (size_t)nb * RP_NT);
                rp_fill(t, nb, m, rows, y, &seed);
                memcpy(x8, rows, 8 * rb);
                sl_rp32_x8_interleave(t, x8, 8, n, rb, tmp);
                const void *ys[RP_NT];
                for (int k = 0; k < RP_NT; k++) ys[k] = y + (size_t)k * (size_t)nb;
                /* the scalar twins: want[8 t + r] */
                float want[8 * RP_NT], one[RP_NT];
                for (int r = 0; r < 8; r++) {
                    ref_n(n, one, rows + (size_t)r * rb, ys, RP_NT);
                    for (int k = 0; k < RP_NT; k++) want[8 * k + r] = one[k];
                }
                float w8[8 * SL_VEC_DOT_ROWS8_MAX];
                ref_r8(n, w8, rows, rb, ys, SL_VEC_DOT_ROWS8_MAX);
                for (int i = 0; i < 8 * SL_VEC_DOT_ROWS8_MAX; i++)
                    CHECK(same_or_nan(w8[i], want[i]));
                ref_x8(n, w8, x8, rb, ys, SL_VEC_DOT_ROWS8_MAX);
                for (int i = 0; i < 8 * SL_VEC_DOT_ROWS8_MAX; i++)
                    CHECK(same_or_nan(w8[i], want[i]));
                for (int form = 0; form < n_forms; form++) {
                    sl_rp32_neon k;
                    CHECK(sl_rp32_neon_get(t, form == 1, &k));
                    const char *fn = form ? "sdot" : "v8.0";
                    for (int nt = 1; nt <= RP_NT; nt++) {
                        float got[8 * RP_NT];
                        for (int r = 0; r < 8; r++) {
                            k.n(n, one, rows + (size_t)r * rb, ys, nt);
                            for (int q = 0; q < nt; q++) {
                                CHECK_MSG(same_or_nan(one[q], want[8 * q + r]),
                                          "%s %s n nb %d fill %d nt %d row %d tok %d: %.9g, scalar %.9g",
                                          sl_type_name(t), fn, nb, m, nt, r, q, (double)one[q],
                                          (double)want[8 * q + r]);
                                compared++;
                            }
                        }
                        if (nt > SL_VEC_DOT_ROWS8_MAX) continue;
                        for (int lay = 0; lay < 2; lay++) {
                            memset(got, 0xA5, sizeof got);
                            if (lay == 0) k.rows8(n, got, rows, rb, ys, nt);
                            else k.x8(n, got, x8, rb, ys, nt);
                            for (int i = 0; i < 8 * nt; i++) {
                                CHECK_MSG(same_or_nan(got[i], want[i]),
                                          "%s %s %s nb %d fill %d nt %d row %d tok %d: %.9g, scalar %.9g",
                                          sl_type_name(t), fn, lay ? "x8" : "rows8", nb, m, nt,
                                          i % 8, i / 8, (double)got[i], (double)want[i]);
                                compared++;
                            }
                        }
                    }
                }
                free(rows);
                free(x8);
                free(tmp);
                free(y);
            }
    }
    printf("   rp32 forms checked: %s (%ld values)\n", n_forms == 2 ? "v8.0 and sdot" : "v8.0",
           compared);
    CHECK(compared > 0);
}

/* Q4_K in the repacked orders (gemm: per 64-element chunk, gemv: per
 * super-block): both NEON forms' multi-token and eight-row kernels give the
 * scalar twin's bits (vec_dot_n_ref.c; test_vec_dot_rp.c checks that one
 * against the formula) for every token count, on 1 and 3 super-blocks:
 * random bytes with sane d / dmin, all zero, every byte 0xFF (scales and
 * mins 63, every level 15) with the largest d, and quantised random rows
 * against activations of several magnitudes. */
TEST(neon_q4k_rp_kernels_equal_scalar)
{
    if (!have_neon()) {
        printf("   (no NEON kernels here: skipped)\n");
        return;
    }
    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    const int n_forms = cpu.dotprod ? 2 : 1;
    const size_t bx = sizeof(sl_block_q4_K), by = sizeof(sl_block_q8_K);
    uint32_t seed = 99;
    long compared = 0;
    for (int o = 0; o < 2; o++) {
        const sl_rp_order order = o ? SL_RP_GEMV : SL_RP_GEMM;
        const sl_vec_dot_n_fn ref = sl_vec_dot_n_q4_K_rp_isa(order, SL_ISA_SCALAR);
        sl_rp32_neon chosen;
        CHECK(sl_rp_q4k_neon_get(order, sl_quant_neon_dotprod(), &chosen));
        CHECK(sl_vec_dot_n_q4_K_rp_isa(order, SL_ISA_NEON) == chosen.n);
        CHECK(sl_vec_dot_rows8_q4_K_rp_isa(order, SL_ISA_NEON) == chosen.rows8);
        for (int nb = 1; nb <= 3; nb += 2)
            for (int m = 0; m < 4; m++) {
                const int64_t n = (int64_t)nb * SL_QK_K;
                const size_t rb = (size_t)nb * bx;
                uint8_t *rows = malloc(8 * rb), *ya = malloc((size_t)nb * by * RP_NT);
                float *f = malloc(sizeof(float) * (size_t)n);
                if (m == 3) {
                    for (int r = 0; r < 8; r++) {
                        for (int64_t j = 0; j < n; j++) f[j] = frand(&seed) + 0.3f;
                        sl_type_get(SL_TYPE_Q4_K)->from_float(f, rows + (size_t)r * rb, n);
                    }
                } else {
                    for (size_t j = 0; j < 8 * rb; j++)
                        rows[j] = m == 1 ? 0 : m == 2 ? 0xFF : (uint8_t)rnd(&seed);
                    for (int b = 0; b < 8 * nb; b++) {
                        sl_block_q4_K *blk = (sl_block_q4_K *)(rows + (size_t)b * bx);
                        blk->d = m == 1 ? 0 : m == 2 ? 0x7BFF : (uint16_t)(0x1C00 + (rnd(&seed) & 0x7FF));
                        blk->dmin = m == 1 ? 0 : m == 2 ? 0x7BFF : (uint16_t)(0x1800 + (rnd(&seed) & 0x7FF));
                    }
                }
                const void *ys[RP_NT];
                for (int k = 0; k < RP_NT; k++) {
                    for (int64_t j = 0; j < n; j++)
                        f[j] = m == 1 ? 0.0f : frand(&seed) * (k == 2 ? 1e4f : 3.0f);
                    sl_quant_from_float_isa(SL_TYPE_Q8_K, SL_ISA_SCALAR)(f, ya + (size_t)k * (size_t)nb * by, n);
                    ys[k] = ya + (size_t)k * (size_t)nb * by;
                }
                float want[8 * RP_NT], one[RP_NT];
                for (int r = 0; r < 8; r++) {
                    ref(n, one, rows + (size_t)r * rb, ys, RP_NT);
                    for (int k = 0; k < RP_NT; k++) want[8 * k + r] = one[k];
                }
                for (int form = 0; form < n_forms; form++) {
                    sl_rp32_neon kf;
                    CHECK(sl_rp_q4k_neon_get(order, form == 1, &kf));
                    CHECK(kf.x8 == NULL);
                    for (int nt = 1; nt <= RP_NT; nt++) {
                        for (int r = 0; r < 8; r++) {
                            kf.n(n, one, rows + (size_t)r * rb, ys, nt);
                            for (int q = 0; q < nt; q++, compared++)
                                CHECK_MSG(same_or_nan(one[q], want[8 * q + r]),
                                          "q4_K %s %s nb %d fill %d nt %d row %d tok %d: %.9g, scalar %.9g",
                                          o ? "gemv" : "gemm", form ? "sdot" : "v8.0", nb, m, nt, r,
                                          q, (double)one[q], (double)want[8 * q + r]);
                        }
                        if (nt > SL_VEC_DOT_ROWS8_MAX) continue;
                        float got[8 * SL_VEC_DOT_ROWS8_MAX];
                        kf.rows8(n, got, rows, rb, ys, nt);
                        for (int j = 0; j < 8 * nt; j++, compared++)
                            CHECK_MSG(same_or_nan(got[j], want[j]),
                                      "q4_K rows8 %s %s nb %d fill %d nt %d row %d tok %d: %.9g, scalar %.9g",
                                      o ? "gemv" : "gemm", form ? "sdot" : "v8.0", nb, m, nt, j % 8,
                                      j / 8, (double)got[j], (double)want[j]);
                    }
                }
                free(rows);
                free(ya);
                free(f);
            }
    }
    printf("   q4_K rp forms checked: %s (%ld values)\n", n_forms == 2 ? "v8.0 and sdot" : "v8.0",
           compared);
    CHECK(compared > 0);
}

int main(void)
{
    RUN(neon_presence_matches_platform);
    RUN(neon_dots_equal_scalar_on_random_rows);
    RUN(neon_dots_equal_scalar_on_edge_blocks);
    RUN(neon_multi_token_equals_scalar_single);
    RUN(neon_legacy_dots_equal_scalar);
    RUN(table_type_dots_follow_their_orders);
    RUN(neon_rp32_kernels_equal_scalar);
    RUN(neon_q4k_rp_kernels_equal_scalar);
    RUN(neon_activation_quantisers_equal_scalar);
    RUN(neon_vexp_and_activations_equal_scalar);
    RUN(neon_attention_equals_scalar);
    RUN(neon_generator_fill_equals_scalar);
    return TEST_REPORT();
}
