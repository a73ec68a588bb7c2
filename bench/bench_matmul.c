/* bench_matmul.c - in-cache speed of sl_matmul_rows per K-quant type and
 * batch size: the path the engine takes (per-matrix kernel choice of
 * ops/matmul_order.h included), unlike bench_vecdot which times the traits'
 * vec_dot alone.
 *
 *   make build/rel/bench/bench_matmul && build/rel/bench/bench_matmul [TYPE...]
 *
 * A 256 x 2048 matrix (288 KiB of Q4_K: it stays in L2), every row against
 * 1, 2, 4, 8 and 64 activation rows; figures are GB/s of weight bytes per token,
 * best of 5 runs of 0.15 s in thread CPU time (robust on a busy machine).
 * One thread. Not a test: nothing is asserted. Q4_0, IQ4_NL and MXFP4 get
 * three lines (plain / rp32 / x8, see below); Q4_K two (gemm: a 2-d weight,
 * the reference's repacked gemm order; gemv: an expert of a 128-expert
 * tensor, its gemv order). Q6_K on x86 gets a line per form of its
 * multi-token kernel (n256: AVX2; n512: AVX-512BW where the CPU has it),
 * each called as sl_matmul_rows calls it (8 rows x the n tokens); n=1
 * there is the multi-token kernel with one token, not the single kernel
 * the engine takes at n=1. Every line of every type named is measured in
 * each of the 5 rounds, in turn, so ratios between types (q4_K against
 * mxfp4 x8, say) compare the same minutes of a machine that changes state.
 * Q4_K also gets "gv256" / "gv512" / "gvnni": its eight-row kernel in the
 * gemv order called directly (8 rows x up to 4 tokens a call), the 256-bit
 * form, where the CPU has AVX-512BW the 512-bit one, and where it also has
 * AVX512-VNNI that one with vpdpwssd (the last present is the engine's).
 * The last line gives each line's n=1 figure over the first line's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/ops.h"
#include "quant/quant.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { ROWS = 256, COLS = 2048, NMAX = 64, MAX_LINES = 64 };

/* one measured line: a type in one of its forms */
typedef struct line {
    const char *type, *form;
    sl_mat m;
    uint8_t *w;      /* owned weights (the x8 copy for x8 lines) */
    uint8_t *a;      /* owned activations, NMAX rows */
    const void *ap[NMAX];
    sl_vec_dot_n_fn q6; /* a Q6_K multi-token kernel form, called directly; else NULL */
    sl_vec_dot_rows8_fn r8; /* a Q4_K eight-row form (gemv order), called directly; else NULL */
} line;

/* one pass of a line over its ROWS rows for n tokens, as the engine calls it */
static void run_line(const line *l, int n, float *y, float *x)
{
    const uint8_t *w = l->m.data;
    float s[8 * SL_VEC_DOT_ROWS8_MAX];
    if (l->r8) {
        for (int rb0 = 0; rb0 < ROWS; rb0 += 8)
            for (int t0 = 0; t0 < n; t0 += SL_VEC_DOT_ROWS8_MAX) {
                const int nt = n - t0 < SL_VEC_DOT_ROWS8_MAX ? n - t0 : SL_VEC_DOT_ROWS8_MAX;
                l->r8(COLS, s, w + l->m.row_bytes * (size_t)rb0, l->m.row_bytes, l->ap + t0, nt);
                for (int q = 0; q < nt; q++)
                    for (int r = 0; r < 8; r++) y[(size_t)(t0 + q) * ROWS + rb0 + r] = s[8 * q + r];
            }
        return;
    }
    if (!l->q6) {
        sl_matmul_rows(&l->m, l->ap, n, y, ROWS, 0, ROWS, x);
        return;
    }
    for (int rb0 = 0; rb0 < ROWS; rb0 += 8)
        for (int t0 = 0; t0 < n; t0 += 8) {
            const int nt = n - t0 < 8 ? n - t0 : 8;
            for (int r = rb0; r < rb0 + 8; r++) {
                l->q6(COLS, s, w + l->m.row_bytes * (size_t)r, l->ap + t0, nt);
                for (int q = 0; q < nt; q++) y[(size_t)(t0 + q) * ROWS + r] = s[q];
            }
        }
}

int main(int argc, char **argv)
{
    static const char *const k_types[] = {"q4_K", "q5_K", "q6_K", "q3_K", "q2_K"};
    /* the types named on the command line, else the K-quants */
    const char *const *types = argc > 1 ? (const char *const *)(argv + 1) : k_types;
    const size_t n_types = argc > 1 ? (size_t)(argc - 1) : sizeof k_types / sizeof k_types[0];
    static const int ns[] = {1, 2, 4, 8, 64};
    enum { NN = sizeof ns / sizeof ns[0] };
    float *x = malloc(sizeof(float) * COLS);
    float *y = malloc(sizeof(float) * ROWS * NMAX);
    line *lines = calloc(MAX_LINES, sizeof *lines);
    if (!x || !y || !lines) return 1;
    int n_lines = 0;
    for (size_t ti = 0; ti < n_types; ti++) {
        sl_type t;
        if (!sl_type_from_name(types[ti], &t)) {
            fprintf(stderr, "bench_matmul: unknown type '%s'\n", types[ti]);
            return 1;
        }
        const sl_type_traits *tr = sl_type_get(t);
        const size_t rb = COLS / tr->block_size * tr->type_size;
        uint8_t *w = malloc(rb * ROWS);
        if (!w) return 1;
        /* deterministic weights and activations, no randomness needed */
        for (int r = 0; r < ROWS; r++) {
            for (int i = 0; i < COLS; i++) x[i] = (float)((r * 7 + i * 13) % 17 - 8) / 8.0f;
            sl_quantize_fast(t, x, w + rb * (size_t)r, COLS);
        }
        sl_mat m = {.type = t, .rows = ROWS, .cols = COLS, .row_bytes = rb, .data = w};
        /* Q4_0 / IQ4_NL / MXFP4: three forms, "rp32" (the reference's
         * order on the plain layout), "plain" (the plain dot kernel, the
         * order before issue 11: a one-expert tensor takes it) and "x8"
         * (the same order on the eight-row interleaved layout, the
         * engine's resident form) */
        const bool b32 = sl_rp32_x8_applies(t, ROWS);
        const bool k4 = t == SL_TYPE_Q4_K;
        static const char *const forms[3] = {"rp32", "plain", "x8"};
        static const char *const k4forms[5] = {"gemm", "gemv", "gv256", "gv512", "gvnni"};
        sl_vec_dot_n_fn q6[2];
        const int n_q6 = t == SL_TYPE_Q6_K ? sl_vec_dot_n_q6_K_forms_avx2(q6) : 0;
        static const char *const q6forms[3] = {"", "n256", "n512"};
        sl_vec_dot_rows8_fn r8[3];
        const int n_r8 = k4 ? sl_vec_dot_rows8_q4_K_rp_forms_avx2(SL_RP_GEMV, r8) : 0;
        const int n_forms = b32 ? 3 : k4 ? 2 + n_r8 : 1 + n_q6;
        const size_t ab = sl_matvec_act_bytes(t, COLS);
        for (int k = 0; k < n_forms; k++) {
            if (n_lines == MAX_LINES) return 1;
            line *l = &lines[n_lines++];
            l->type = types[ti];
            l->form = b32 ? forms[k] : k4 ? k4forms[k] : n_q6 ? q6forms[k] : "";
            l->q6 = n_q6 && k > 0 ? q6[k - 1] : NULL;
            l->r8 = k4 && k >= 2 ? r8[k - 2] : NULL;
            l->m = m;
            l->w = malloc(rb * ROWS);
            l->a = malloc(ab * NMAX);
            if (!l->w || !l->a) return 1;
            memcpy(l->w, w, rb * ROWS);
            l->m.data = l->w;
            if (k == 1 && !n_q6) l->m.n_experts = k4 ? 128 : 1;
            if (k == 2 && b32) {
                uint8_t *tmp = malloc(rb * 8);
                if (!tmp) return 1;
                sl_rp32_x8_interleave(t, l->w, ROWS, COLS, rb, tmp);
                free(tmp);
                l->m.layout = SL_MAT_X8;
            }
            for (int j = 0; j < NMAX; j++) {
                for (int i = 0; i < COLS; i++) x[i] = (float)((j * 5 + i * 3) % 11 - 5) / 5.0f;
                sl_matvec_prepare(&l->m, x, l->a + ab * (size_t)j);
                l->ap[j] = l->a + ab * (size_t)j;
            }
        }
        free(w);
    }
    double (*gbs)[NN] = calloc((size_t)n_lines, sizeof *gbs);
    if (!gbs) return 1;
    for (size_t j = 0; j < NN; j++) {
        const int n = ns[j];
        double best[MAX_LINES];
        for (int k = 0; k < n_lines; k++) best[k] = 1e9;
        for (int rep = 0; rep < 5; rep++) /* every line in turn within each rep */
            for (int k = 0; k < n_lines; k++) {
                const double t0 = now();
                int it = 0;
                while (now() - t0 < 0.15) {
                    run_line(&lines[k], n, y, x);
                    it++;
                }
                const double dt = (now() - t0) / it / n;
                if (dt < best[k]) best[k] = dt;
            }
        for (int k = 0; k < n_lines; k++)
            gbs[k][j] = (double)(lines[k].m.row_bytes * ROWS) / best[k] / 1e9;
    }
    for (int k = 0; k < n_lines; k++) {
        printf("%-6s %-5s", lines[k].type, lines[k].form);
        for (size_t j = 0; j < NN; j++) printf("  n=%-2d %6.2f GB/s", ns[j], gbs[k][j]);
        printf("\n");
    }
    printf("n=1 / %s %s:", lines[0].type, lines[0].form);
    for (int k = 1; k < n_lines; k++)
        printf("  %s %s %.0f%%", lines[k].type, lines[k].form, 100.0 * gbs[k][0] / gbs[0][0]);
    printf("\n");
    for (int k = 0; k < n_lines; k++) {
        free(lines[k].w);
        free(lines[k].a);
    }
    free(lines);
    free(gbs);
    free(x);
    free(y);
    return 0;
}
