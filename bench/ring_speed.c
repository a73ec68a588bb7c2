/* bench/ring_speed.c - prefill and decode speed of a model with its
 * sliding-window layers as a ring against --swa-full, measured in one
 * process, the two sessions alternating repetition by repetition (so a
 * shared, noisy machine slows both alike); the best and the median of each.
 *
 *   ring_speed MODEL.gguf [DEPTH [PROMPT [GEN [REPS [THREADS]]]]]
 *
 * Defaults: depth 2048 tokens evaluated untimed, then a prompt of 256 (in
 * micro-batches of 512) and 64 decoded tokens timed, 5 repetitions, 1
 * thread; context DEPTH + PROMPT + GEN. Also checks the two sessions' last
 * logits are the same bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int eval_n(sl_session *s, int from, int n, int batch, sl_err *err)
{
    int32_t ids[512];
    for (int p = 0; p < n; p += batch) {
        const int k = n - p < batch ? n - p : batch;
        for (int i = 0; i < k; i++) ids[i] = (int32_t)(3 + ((from + p + i) * 37) % 400);
        if (sl_session_eval(s, ids, k, err)) return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ring_speed MODEL.gguf [DEPTH [PROMPT [GEN [REPS [THREADS]]]]]\n");
        return 2;
    }
    const int depth = argc > 2 ? atoi(argv[2]) : 2048, pp = argc > 3 ? atoi(argv[3]) : 256;
    const int tg = argc > 4 ? atoi(argv[4]) : 64, reps = argc > 5 ? atoi(argv[5]) : 5;
    const int threads = argc > 6 ? atoi(argv[6]) : 1;
    if (depth < 0 || pp < 1 || tg < 1 || reps < 1 || reps > 64 || threads < 1) {
        fprintf(stderr, "ring_speed: bad arguments\n");
        return 2;
    }
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    mp.n_ctx_hint = depth + pp + tg;
    sl_model *m = NULL;
    sl_err err;
    if (sl_model_load(&m, argv[1], &mp, &err)) {
        fprintf(stderr, "ring_speed: %s\n", err.msg);
        return 1;
    }
    sl_session *s[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        sl_session_params sp = sl_session_default_params();
        sp.n_ctx = depth + pp + tg;
        sp.n_batch_max = 512;
        sp.swa_full = k == 1;
        if (sl_session_create(&s[k], m, &sp, &err)) {
            fprintf(stderr, "ring_speed: %s\n", err.msg);
            return 1;
        }
    }
    double t_pp[2][64], t_tg[2][64];
    const int V = sl_model_n_vocab(m);
    int same = 1;
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 2; k++) {
            sl_session_truncate(s[k], 0);
            if (eval_n(s[k], 0, depth, 512, &err)) goto fail;
            double t0 = now();
            if (eval_n(s[k], depth, pp, 512, &err)) goto fail;
            double t1 = now();
            if (eval_n(s[k], depth + pp, tg, 1, &err)) goto fail;
            double t2 = now();
            t_pp[k][r] = pp / (t1 - t0);
            t_tg[k][r] = tg / (t2 - t1);
        }
        same &= !memcmp(sl_session_logits(s[0]), sl_session_logits(s[1]), sizeof(float) * (size_t)V);
    }
    printf("%s: depth %d, pp%d and tg%d, %d repetitions, %d thread(s); logits %s\n", argv[1],
           depth, pp, tg, reps, threads, same ? "bit-identical" : "DIFFERENT");
    const char *name[2] = {"ring", "--swa-full"};
    double best[2][2], med[2][2];
    for (int k = 0; k < 2; k++) {
        qsort(t_pp[k], (size_t)reps, sizeof(double), cmp_d);
        qsort(t_tg[k], (size_t)reps, sizeof(double), cmp_d);
        best[k][0] = t_pp[k][reps - 1];
        best[k][1] = t_tg[k][reps - 1];
        med[k][0] = t_pp[k][reps / 2];
        med[k][1] = t_tg[k][reps / 2];
        printf("  %-10s pp best %8.1f median %8.1f tok/s | tg best %8.1f median %8.1f tok/s\n",
               name[k], best[k][0], med[k][0], best[k][1], med[k][1]);
    }
    printf("  ring / --swa-full: pp best %.3f median %.3f | tg best %.3f median %.3f\n",
           best[0][0] / best[1][0], med[0][0] / med[1][0], best[0][1] / best[1][1],
           med[0][1] / med[1][1]);
    for (int k = 0; k < 2; k++) sl_session_free(s[k]);
    sl_model_free(m);
    return same ? 0 : 1;
fail:
    fprintf(stderr, "ring_speed: %s\n", err.msg);
    return 1;
}
