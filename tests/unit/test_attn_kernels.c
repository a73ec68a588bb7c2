/* test_attn_kernels.c - the AVX2 attention inner loops against their scalar
 * twins, on random rows of every length 1..80 (tails included), and the
 * blocked attention of the AVX2 set and of the AVX2 set with 512-bit steps
 * (where the CPU has AVX-512F) against the scalar kernels bit for bit. The
 * expected values come from plain double-precision loops over the same
 * f16-rounded inputs; the one-chunk form over an f16 cache against the
 * scalar element loops bit for bit. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attn_kernels.h"
#include "quant/quant.h"
#include "test.h"

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void check_set(const sl_attn_kernels *k, const char *name)
{
    unsigned seed = 7;
    for (int n = 1; n <= 80; n++) {
        float q[80], kf[80], out[80], out32[80];
        uint16_t kh[80];
        double want_dot = 0.0, bound = 0.0;
        for (int i = 0; i < n; i++) {
            q[i] = frand(&seed) * 4.0f;
            kh[i] = sl_f32_to_fp16(frand(&seed) * 3.0f);
            kf[i] = sl_fp16_to_f32(kh[i]);
            want_dot += (double)q[i] * kf[i];
            bound += fabs((double)q[i] * kf[i]);
            out[i] = out32[i] = frand(&seed);
        }
        const double tol = 1e-6 * bound + 1e-7;
        CHECK_MSG(fabs(k->dot_f16(q, kh, n) - want_dot) <= tol, "%s dot_f16 n=%d", name, n);
        CHECK_MSG(fabs(k->dot_f32(q, kf, n) - want_dot) <= tol, "%s dot_f32 n=%d", name, n);
        const float a = 0.375f;
        float want[80];
        for (int i = 0; i < n; i++) want[i] = out[i] + a * kf[i];
        k->axpy_f16(out, a, kh, n);
        k->axpy_f32(out32, a, kf, n);
        for (int i = 0; i < n; i++) {
            CHECK_MSG(fabsf(out[i] - want[i]) <= 1e-6f, "%s axpy_f16 n=%d i=%d", name, n, i);
            CHECK_MSG(fabsf(out32[i] - want[i]) <= 1e-6f, "%s axpy_f32 n=%d i=%d", name, n, i);
        }
    }
}

TEST(reference_kernels_match_double_loops) { check_set(sl_attn_kernels_ref(), "ref"); }

TEST(avx2_kernels_match_double_loops)
{
    if (sl_quant_isa() != SL_ISA_AVX2 || !sl_attn_kernels_avx2()) {
        printf("   (no AVX2 on this CPU: skipped)\n");
        return;
    }
    check_set(sl_attn_kernels_avx2(), "avx2");
    const sl_attn_kernels *wide = sl_attn_kernels_avx512();
    if (wide) check_set(wide, "avx512");
    else printf("   (no AVX-512F on this CPU: the 512-bit set skipped)\n");
    CHECK(sl_attn_kernels_get() == (wide ? wide : sl_attn_kernels_avx2()));
}

/* The SIMD sets this CPU runs: AVX2, and AVX2 with 512-bit steps. */
static int simd_sets(const sl_attn_kernels *sets[2], const char *names[2])
{
    int n = 0;
    if (sl_quant_isa() != SL_ISA_AVX2) return 0;
    if (sl_attn_kernels_avx2()) sets[n] = sl_attn_kernels_avx2(), names[n++] = "avx2";
    if (sl_attn_kernels_avx512()) sets[n] = sl_attn_kernels_avx512(), names[n++] = "avx512";
    return n;
}

/* Softmax attention in double over the same f16-rounded K/V: what a block
 * must approximate. */
static void attend_double(const sl_attn_block *b, const float *kf, const float *vf, double *out)
{
    for (int r = 0; r < b->n_q; r++) {
        const float *q = b->q + (size_t)r * b->q_stride;
        double mx = b->sinks ? b->sinks[r] : -INFINITY, sum = 0.0;
        double *sc = malloc(sizeof(double) * (size_t)b->n_pos);
        for (int p = 0; p < b->pos_lo; p++) sc[p] = -INFINITY;
        for (int p = b->pos_lo; p < b->n_pos; p++) {
            double d = 0.0;
            for (int i = 0; i < b->dk; i++) d += (double)q[i] * kf[(size_t)p * b->dk + i];
            sc[p] = d * b->scale;
            if (sc[p] > mx) mx = sc[p];
        }
        for (int p = 0; p < b->n_pos; p++) sum += (sc[p] = exp(sc[p] - mx));
        if (b->sinks) sum += exp(b->sinks[r] - mx);
        for (int i = 0; i < b->dv; i++) {
            double o = 0.0;
            for (int p = 0; p < b->n_pos; p++) o += sc[p] * vf[(size_t)p * b->dv + i];
            out[(size_t)r * b->dv + i] = o / sum;
        }
        free(sc);
    }
}

/* Blocks of several shapes (positions across tile boundaries, head sizes
 * with and without an 8-lane tail, one to 128 query rows, every branch of
 * the AVX2 grouping): the f16 and f32 forms of a kernel set agree with the
 * double loop, and the AVX2 set agrees with the scalar one bit for bit. */
TEST(attend_blocks_match_double_and_each_other)
{
    static const int shapes[][4] = {/* dk, dv, n_q, n_pos */
        {32, 32, 4, 1}, {32, 32, 4, 63}, {64, 64, 1, 64}, {64, 64, 2, 65}, {128, 128, 8, 130},
        {20, 12, 3, 70}, {8, 8, 1, 200}, {256, 256, 2, 129},
        /* groups of eight rows or more (the heads-as-lanes form): a padded
         * second group, two whole groups, head sizes off the eights with
         * dv < dk (V converted) and dv > dk (V read in place), the MLA
         * shape in slices of rows, and rooms too small for eight rows */
        {128, 128, 8, 1}, {64, 64, 12, 200}, {128, 128, 16, 300}, {40, 20, 9, 100},
        {24, 40, 8, 70}, {576, 512, 128, 70}, {128, 8, 8, 70}, {16, 4, 8, 70}, {64, 64, 7, 129},
        /* the 512-bit steps: head sizes off the sixteens (the pair tile's
         * tail) with dv a multiple of 32, one to three whole tiles and odd
         * ends (a pair half outside), and a group of eight at a depth
         * with a prefetch window past the tile */
        {40, 32, 8, 65}, {72, 96, 8, 191}, {128, 64, 24, 33}, {128, 128, 8, 333}};
    const sl_attn_kernels *ref = sl_attn_kernels_ref(), *sets[2];
    const char *names[2];
    const int n_sets = simd_sets(sets, names);
    unsigned seed = 11;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int dk = shapes[si][0], dv = shapes[si][1], nq = shapes[si][2], np = shapes[si][3];
        float *q = malloc(sizeof(float) * (size_t)nq * dk);
        uint16_t *kh = malloc(2 * (size_t)np * dk), *vh = malloc(2 * (size_t)np * dv);
        float *kf = malloc(4 * (size_t)np * dk), *vf = malloc(4 * (size_t)np * dv);
        for (int i = 0; i < nq * dk; i++) q[i] = frand(&seed) * 2.0f;
        for (int i = 0; i < np * dk; i++) kf[i] = sl_fp16_to_f32(kh[i] = sl_f32_to_fp16(frand(&seed)));
        for (int i = 0; i < np * dv; i++) vf[i] = sl_fp16_to_f32(vh[i] = sl_f32_to_fp16(frand(&seed)));
        const size_t nout = (size_t)nq * dv;
        float *o[4];
        for (int i = 0; i < 4; i++) o[i] = malloc(sizeof(float) * nout);
        double *want = malloc(sizeof(double) * nout);
        float *scratch = malloc(sizeof(float) * sl_attn_scratch_floats(dk, dv, nq));
        sl_attn_block b = {q, (size_t)dk, kh, vh, 2 * (size_t)dk, 2 * (size_t)dv, dk, dv, nq, np,
                           1.0f / sqrtf((float)dk), o[0], (size_t)dv, scratch, 0, NULL,
                           1, 0, 0, 0, NULL, 0, 0, 0, false};
        attend_double(&b, kf, vf, want);
        ref->attend_f16(&b);
        sl_attn_block b32 = b;
        b32.k = kf, b32.v = vf, b32.k_stride = 4 * (size_t)dk, b32.v_stride = 4 * (size_t)dv;
        b32.out = o[1];
        ref->attend_f32(&b32);
        for (size_t i = 0; i < nout; i++) {
            CHECK_MSG(fabs(o[0][i] - want[i]) <= 1e-5, "ref f16 shape %zu i=%zu: %g vs %g", si, i,
                      (double)o[0][i], want[i]);
            CHECK_MSG(o[1][i] == o[0][i], "ref f32 and f16 differ, shape %zu i=%zu", si, i);
        }
        for (int k = 0; k < n_sets; k++) {
            b.out = o[2];
            sets[k]->attend_f16(&b);
            b32.out = o[3];
            sets[k]->attend_f32(&b32);
            CHECK_MSG(!memcmp(o[2], o[0], sizeof(float) * nout), "%s f16 != ref, shape %zu",
                      names[k], si);
            CHECK_MSG(!memcmp(o[3], o[1], sizeof(float) * nout), "%s f32 != ref, shape %zu",
                      names[k], si);
        }
        /* a sliding window (positions before pos_lo unseen) and sink logits */
        float sinks[128];
        for (int i = 0; i < nq; i++) sinks[i] = frand(&seed) * 3.0f;
        b.pos_lo = np > 5 ? np - 5 - (int)si : 0;
        b.sinks = sinks;
        b.out = o[0];
        attend_double(&b, kf, vf, want);
        ref->attend_f16(&b);
        for (size_t i = 0; i < nout; i++)
            CHECK_MSG(fabs(o[0][i] - want[i]) <= 1e-5, "window+sinks shape %zu i=%zu: %g vs %g",
                      si, i, (double)o[0][i], want[i]);
        for (int k = 0; k < n_sets; k++) {
            b.out = o[2];
            sets[k]->attend_f16(&b);
            CHECK_MSG(!memcmp(o[2], o[0], sizeof(float) * nout), "%s window+sinks != ref, "
                      "shape %zu", names[k], si);
        }
        for (int i = 0; i < 4; i++) free(o[i]);
        free(q), free(kh), free(vh), free(kf), free(vf), free(want), free(scratch);
    }
}

/* A prompt's query blocks (sl_attn_attend_tokens): n_tok consecutive
 * tokens of each shape, starting at several depths, with and without a
 * sliding window and sinks, f16 and f32 caches whose rows hold two heads:
 * every token's rows equal, bit for bit, the scalar one-token kernel's
 * for that token alone (the expected values), for the AVX2 set's block
 * kernel and for the token-by-token fallback of the scalar set. */
TEST(query_blocks_equal_one_token_calls)
{
    static const int shapes[][3] = {/* dk, dv, n_q */
        {128, 128, 8}, {64, 64, 16}, {64, 64, 9}, {24, 40, 8}, {40, 20, 12}, {32, 32, 3},
        {40, 32, 8}, {72, 96, 16}};
    static const int starts[] = {1, 60, 130};
    static const int windows[] = {0, 7, 70};
    enum { MAXP = 260, HR = 2 }; /* positions; heads per cache row */
    const sl_attn_kernels *ref = sl_attn_kernels_ref(), *sets[2];
    const char *names[2];
    const int n_sets = simd_sets(sets, names);
    unsigned seed = 23;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int dk = shapes[si][0], dv = shapes[si][1], nq = shapes[si][2];
        const size_t sf = sl_attn_scratch_floats(dk, dv, nq);
        const int nt = sl_attn_block_tokens(dk, dv, nq, sf);
        CHECK_MSG(nt >= 1 && nt <= SL_ATTN_QBLOCK, "block tokens %d, shape %zu", nt, si);
        CHECK_MSG(sl_attn_block_tokens(dk, dv, nq, 0) == 1, "no room: one token, shape %zu", si);
        float *q = malloc(sizeof(float) * (size_t)nt * nq * dk);
        uint16_t *kh = malloc(2 * (size_t)MAXP * HR * dk), *vh = malloc(2 * (size_t)MAXP * HR * dv);
        float *kf = malloc(4 * (size_t)MAXP * HR * dk), *vf = malloc(4 * (size_t)MAXP * HR * dv);
        const size_t nout = (size_t)nt * nq * dv;
        float *want = malloc(sizeof(float) * nout), *got = malloc(sizeof(float) * nout);
        float *scratch = malloc(sizeof(float) * sf), sinks[16];
        for (int i = 0; i < nt * nq * dk; i++) q[i] = frand(&seed) * 2.0f;
        for (int i = 0; i < MAXP * HR * dk; i++) kf[i] = sl_fp16_to_f32(kh[i] = sl_f32_to_fp16(frand(&seed)));
        for (int i = 0; i < MAXP * HR * dv; i++) vf[i] = sl_fp16_to_f32(vh[i] = sl_f32_to_fp16(frand(&seed)));
        for (int i = 0; i < nq; i++) sinks[i] = frand(&seed) * 3.0f;
        for (int f16 = 0; f16 < 2; f16++)
            for (size_t st = 0; st < sizeof starts / sizeof starts[0]; st++)
                for (size_t wi = 0; wi < sizeof windows / sizeof windows[0]; wi++) {
                    const int w = windows[wi], np0 = starts[st];
                    const size_t es = f16 ? 2 : 4;
                    sl_attn_block b = {
                        .q = q, .q_stride = (size_t)dk, .k = f16 ? (const void *)(kh + dk) : (const void *)(kf + dk),
                        .v = f16 ? (const void *)vh : (const void *)vf,
                        .k_stride = es * HR * dk, .v_stride = es * HR * dv, .dk = dk, .dv = dv,
                        .n_q = nq, .n_pos = np0, .scale = 1.0f / sqrtf((float)dk), .out = want,
                        .out_stride = (size_t)dv, .scratch = scratch,
                        .pos_lo = w > 0 && np0 > w ? np0 - w : 0, .sinks = wi == 1 ? sinks : NULL,
                        .n_tok = nt, .q_tok = (size_t)nq * dk, .out_tok = (size_t)nq * dv, .n_swa = w};
                    for (int i = 0; i < nt; i++) { /* the expected: one token at a time */
                        sl_attn_block one = b;
                        one.n_tok = 1;
                        one.n_pos = np0 + i;
                        one.pos_lo = w > 0 && one.n_pos > w ? one.n_pos - w : 0;
                        CHECK(sl_attn_tok_lo(&b, i) == one.pos_lo);
                        one.q = q + (size_t)i * b.q_tok;
                        one.out = want + (size_t)i * b.out_tok;
                        (f16 ? ref->attend_f16 : ref->attend_f32)(&one);
                    }
                    b.out = got;
                    memset(got, 0xff, sizeof(float) * nout);
                    sl_attn_attend_tokens(ref, &b, f16);
                    CHECK_MSG(!memcmp(got, want, sizeof(float) * nout),
                              "ref blocks, shape %zu f16 %d start %d window %d", si, f16, np0, w);
                    for (int k = 0; k < n_sets; k++) {
                        memset(got, 0xff, sizeof(float) * nout);
                        sl_attn_attend_tokens(sets[k], &b, f16);
                        CHECK_MSG(!memcmp(got, want, sizeof(float) * nout),
                                  "%s blocks, shape %zu f16 %d start %d window %d", names[k], si,
                                  f16, np0, w);
                    }
                }
        free(q), free(kh), free(vh), free(kf), free(vf), free(want), free(got), free(scratch);
    }
}

/* The one-chunk form (sl_attn_attend_seq) over an f16 cache: the SIMD sets'
 * whole-range loop and query conversion (seq_range_f16, to_f16) give the
 * bits of the scalar element loops, at head sizes with and without tails,
 * groups of 1 to 12 rows (past the 8 scored together), over a window, a
 * selection of positions and with sinks. */
TEST(seq_f16_equals_the_element_loops)
{
    static const int shapes[][3] = {/* dk, dv, n_q */
        {64, 64, 4}, {128, 128, 8}, {72, 40, 12}, {40, 24, 1}, {576, 512, 9}};
    enum { MAXP = 300 };
    const sl_attn_kernels *ref = sl_attn_kernels_ref(), *sets[2];
    const char *names[2];
    const int n_sets = simd_sets(sets, names);
    unsigned seed = 41;
    static int sel[MAXP];
    int n_sel = 0;
    for (int i = 0; i < MAXP; i += 3) sel[n_sel++] = i;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int dk = shapes[si][0], dv = shapes[si][1], nq = shapes[si][2];
        const size_t sf = sl_attn_scratch_floats(dk, dv, nq);
        float *q = malloc(sizeof(float) * (size_t)nq * dk), sinks[16];
        uint16_t *kh = malloc(2 * (size_t)MAXP * dk), *vh = malloc(2 * (size_t)MAXP * dv);
        float *want = malloc(sizeof(float) * (size_t)nq * dv), *got = malloc(sizeof(float) * (size_t)nq * dv);
        float *scratch = malloc(sizeof(float) * sf);
        for (int i = 0; i < nq * dk; i++) q[i] = frand(&seed) * 3.0f;
        for (int i = 0; i < MAXP * dk; i++) kh[i] = sl_f32_to_fp16(frand(&seed) * 2.0f);
        for (int i = 0; i < MAXP * dv; i++) vh[i] = sl_f32_to_fp16(frand(&seed));
        for (int i = 0; i < nq; i++) sinks[i] = frand(&seed) * 3.0f;
        for (int c = 0; c < 4; c++) {
            sl_attn_block b = {.q = q, .q_stride = (size_t)dk, .k = kh, .v = vh,
                               .k_stride = 2 * (size_t)dk, .v_stride = 2 * (size_t)dv, .dk = dk,
                               .dv = dv, .n_q = nq, .n_pos = c == 1 ? 37 : MAXP,
                               .scale = 1.0f / sqrtf((float)dk), .out = want,
                               .out_stride = (size_t)dv, .scratch = scratch, .n_tok = 1,
                               .pos_lo = c == 2 ? 100 : 0, .sinks = c == 3 ? sinks : NULL,
                               .sel = c == 2 ? sel : NULL, .n_sel = n_sel};
            sl_attn_attend_seq(ref, &b, SL_TYPE_F16, SL_TYPE_F16);
            for (int k = 0; k < n_sets; k++) {
                b.out = got;
                memset(got, 0xff, sizeof(float) * (size_t)nq * dv);
                sl_attn_attend_seq(sets[k], &b, SL_TYPE_F16, SL_TYPE_F16);
                CHECK_MSG(!memcmp(got, want, sizeof(float) * (size_t)nq * dv),
                          "%s seq, shape %zu case %d", names[k], si, c);
            }
        }
        free(q), free(kh), free(vh), free(want), free(got), free(scratch);
    }
}

int main(void)
{
    RUN(reference_kernels_match_double_loops);
    RUN(avx2_kernels_match_double_loops);
    RUN(attend_blocks_match_double_and_each_other);
    RUN(query_blocks_equal_one_token_calls);
    RUN(seq_f16_equals_the_element_loops);
    return TEST_REPORT();
}
