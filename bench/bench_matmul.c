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
 * three lines (plain / rp32 / x8, see below), measured interleaved; Q4_K
 * two (gemm: a 2-d weight, the reference's repacked gemm order; gemv: an
 * expert of a 128-expert tensor, its gemv order). Q6_K on x86 gets a
 * third line per form of its multi-token kernel (AVX2; AVX-512BW where
 * the CPU has it), each called as sl_matmul_rows calls it (8 rows x the
 * n tokens), alternated in one run; n=1 there is the multi-token kernel
 * with one token, not the single kernel the engine takes at n=1. */
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

int main(int argc, char **argv)
{
    static const char *const k_types[] = {"q4_K", "q5_K", "q6_K", "q3_K", "q2_K"};
    /* the types named on the command line, else the K-quants */
    const char *const *types = argc > 1 ? (const char *const *)(argv + 1) : k_types;
    const size_t n_types = argc > 1 ? (size_t)(argc - 1) : sizeof k_types / sizeof k_types[0];
    static const int ns[] = {1, 2, 4, 8, 64};
    enum { ROWS = 256, COLS = 2048, NMAX = 64 };
    float *x = malloc(sizeof(float) * COLS);
    float *y = malloc(sizeof(float) * ROWS * NMAX);
    if (!x || !y) return 1;
    for (size_t ti = 0; ti < n_types; ti++) {
        sl_type t;
        if (!sl_type_from_name(types[ti], &t)) return 1;
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
        /* Q4_0 / IQ4_NL / MXFP4: three forms in one run, so their ratios
         * hold on a busy machine: "plain" (the plain dot kernel, the order
         * before issue 11: a one-expert tensor takes it), "rp32" (the
         * reference's order on the plain layout) and "x8" (the same order
         * on the eight-row interleaved layout, the engine's resident form) */
        uint8_t *w8 = NULL;
        if (sl_rp32_x8_applies(t, ROWS)) {
            w8 = malloc(rb * ROWS);
            uint8_t *tmp = malloc(rb * 8);
            if (!w8 || !tmp) return 1;
            memcpy(w8, w, rb * ROWS);
            sl_rp32_x8_interleave(t, w8, ROWS, COLS, rb, tmp);
            free(tmp);
        }
        const size_t ab = sl_matvec_act_bytes(t, COLS);
        uint8_t *a = malloc(ab * NMAX);
        const void *ap[NMAX];
        if (!a) return 1;
        for (int k = 0; k < NMAX; k++) {
            for (int i = 0; i < COLS; i++) x[i] = (float)((k * 5 + i * 3) % 11 - 5) / 5.0f;
            sl_matvec_prepare(&m, x, a + ab * (size_t)k);
            ap[k] = a + ab * (size_t)k;
        }
        static const char *const forms[3] = {"rp32", "plain", "x8"};
        static const char *const k4forms[2] = {"gemm", "gemv"};
        const bool k4 = t == SL_TYPE_Q4_K;
        const int n_forms = w8 ? 3 : k4 ? 2 : 1;
        sl_mat f[3] = {m, m, m};
        f[1].n_experts = k4 ? 128 : 1;
        f[2].data = w8;
        f[2].layout = SL_MAT_X8;
        double gbs[3][sizeof ns / sizeof ns[0]];
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            const int n = ns[j];
            double best[3] = {1e9, 1e9, 1e9};
            for (int rep = 0; rep < 5; rep++) /* forms alternate within each rep */
                for (int k = 0; k < n_forms; k++) {
                    const double t0 = now();
                    int it = 0;
                    while (now() - t0 < 0.15) {
                        sl_matmul_rows(&f[k], ap, n, y, ROWS, 0, ROWS, x);
                        it++;
                    }
                    const double dt = (now() - t0) / it / n;
                    if (dt < best[k]) best[k] = dt;
                }
            for (int k = 0; k < n_forms; k++) gbs[k][j] = (double)(rb * ROWS) / best[k] / 1e9;
        }
        for (int k = 0; k < n_forms; k++) {
            printf("%-6s %-5s", types[ti], w8 ? forms[k] : k4 ? k4forms[k] : "");
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
                printf("  n=%-2d %6.2f GB/s", ns[j], gbs[k][j]);
            printf("\n");
        }
        sl_vec_dot_n_fn q6[2];
        const int n_q6 = t == SL_TYPE_Q6_K ? sl_vec_dot_n_q6_K_forms_avx2(q6) : 0;
        double q6gbs[2][sizeof ns / sizeof ns[0]];
        for (size_t j = 0; j < sizeof ns / sizeof ns[0] && n_q6 > 0; j++) {
            const int n = ns[j];
            double best[2] = {1e9, 1e9};
            float s[8];
            for (int rep = 0; rep < 5; rep++)
                for (int k = 0; k < n_q6; k++) {
                    const double t0 = now();
                    int it = 0;
                    while (now() - t0 < 0.15) {
                        for (int rb0 = 0; rb0 < ROWS; rb0 += 8)
                            for (int t0k = 0; t0k < n; t0k += 8)
                                for (int r = rb0; r < rb0 + 8; r++) {
                                    const int nt = n - t0k < 8 ? n - t0k : 8;
                                    q6[k](COLS, s, w + rb * (size_t)r, ap + t0k, nt);
                                    for (int q = 0; q < nt; q++) y[(size_t)(t0k + q) * ROWS + r] = s[q];
                                }
                        it++;
                    }
                    const double dt = (now() - t0) / it / n;
                    if (dt < best[k]) best[k] = dt;
                }
            for (int k = 0; k < n_q6; k++) q6gbs[k][j] = (double)(rb * ROWS) / best[k] / 1e9;
        }
        for (int k = 0; k < n_q6; k++) {
            printf("%-6s %-5s", types[ti], k ? "n512" : "n256");
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
                printf("  n=%-2d %6.2f GB/s", ns[j], q6gbs[k][j]);
            printf("\n");
        }
        free(w8);
        free(w);
        free(a);
    }
    free(x);
    free(y);
    return 0;
}
