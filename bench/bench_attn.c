/* bench_attn.c - speed of one decode attention block (one token's group of
 * query heads sharing one K/V head) over an f16 cache, per kernel set.
 *
 *   make build/rel/bench/bench_attn && build/rel/bench/bench_attn [n_pos] [dk] [n_q] [reps]
 *
 * Defaults: 4096 positions, head size 128 (K and V), 8 query heads per K/V
 * head (the 30B-A3B shape), 20 repetitions. The cache is 64 such heads'
 * worth laid out one after another (larger than the caches), visited in
 * turn, so each block reads its K/V from memory as a decode step does.
 * Prints, per kernel set, ns per position per K/V head (thread CPU time,
 * best repetition), the K/V bytes read per second that makes, and whether
 * its output equals the scalar reference's bit for bit (BENCH_ATTN_FAST set:
 * the reference runs once, for profiling the SIMD set). Not a test. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/attn_kernels.h"
#include "quant/quant.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

enum { N_HEADS = 64 };

static double run(const sl_attn_kernels *k, sl_attn_block *b, const uint16_t *kh,
                  const uint16_t *vh, int reps, float *out)
{
    double best = 1e30;
    const size_t kv_head = (size_t)b->n_pos * (size_t)b->dk;
    for (int r = 0; r < reps; r++) {
        const double t0 = cpu_now();
        for (int h = 0; h < N_HEADS; h++) {
            b->k = kh + (size_t)h * kv_head;
            b->v = vh + (size_t)h * kv_head;
            b->out = out + (size_t)h * (size_t)b->n_q * (size_t)b->dv;
            k->attend_f16(b);
        }
        const double dt = cpu_now() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    const int n_pos = argc > 1 ? atoi(argv[1]) : 4096;
    const int dk = argc > 2 ? atoi(argv[2]) : 128;
    const int nq = argc > 3 ? atoi(argv[3]) : 8;
    const int reps = argc > 4 ? atoi(argv[4]) : 20;
    if (n_pos < 1 || dk < 1 || nq < 1 || reps < 1) {
        fprintf(stderr, "usage: bench_attn [n_pos] [dk] [n_q] [reps]\n");
        return 2;
    }
    const size_t cache = (size_t)N_HEADS * (size_t)n_pos * (size_t)dk;
    uint16_t *kh = malloc(2 * cache), *vh = malloc(2 * cache);
    float *q = malloc(sizeof(float) * (size_t)nq * dk);
    float *out[2];
    for (int i = 0; i < 2; i++) out[i] = calloc((size_t)N_HEADS * nq * dk, sizeof(float));
    float *scratch = malloc(sizeof(float) * sl_attn_scratch_floats(dk, dk, nq));
    if (!kh || !vh || !q || !out[0] || !out[1] || !scratch) return 1;
    unsigned seed = 3;
    for (size_t i = 0; i < cache; i++) kh[i] = sl_f32_to_fp16(frand(&seed));
    for (size_t i = 0; i < cache; i++) vh[i] = sl_f32_to_fp16(frand(&seed));
    for (int i = 0; i < nq * dk; i++) q[i] = frand(&seed) * 2.0f;
    sl_attn_block b = {q, (size_t)dk, kh, vh, 2 * (size_t)dk, 2 * (size_t)dk, dk, dk, nq, n_pos,
                       1.0f / sqrtf((float)dk), out[0], (size_t)dk, scratch, 0, NULL};
    const int ref_reps = getenv("BENCH_ATTN_FAST") ? 1 : reps > 3 ? 3 : reps;
    const double t_ref = run(sl_attn_kernels_ref(), &b, kh, vh, ref_reps, out[0]);
    const double per = 1e9 / ((double)N_HEADS * n_pos);
    const double bytes = (double)N_HEADS * n_pos * 4.0 * dk;
    printf("n_pos %d, dk = dv = %d, %d query rows per K/V head, %d heads per repetition\n", n_pos,
           dk, nq, N_HEADS);
    printf("%-6s %10.2f ns/pos %8.2f GB/s\n", "ref", t_ref * per, bytes / t_ref * 1e-9);
    const sl_attn_kernels *set = sl_attn_kernels_get();
    if (set != sl_attn_kernels_ref()) {
        const double t = run(set, &b, kh, vh, reps, out[1]);
        const int same = !memcmp(out[0], out[1], sizeof(float) * (size_t)N_HEADS * nq * dk);
        printf("%-6s %10.2f ns/pos %8.2f GB/s  %s\n", "simd", t * per, bytes / t * 1e-9,
               same ? "bit-identical to ref" : "DIFFERS from ref");
    }
    free(kh), free(vh), free(q), free(out[0]), free(out[1]), free(scratch);
    return 0;
}
