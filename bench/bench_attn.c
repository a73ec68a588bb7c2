/* bench_attn.c - speed of one decode attention block (one token's group of
 * query heads sharing one K/V head) over an f16 cache, per kernel set.
 *
 *   make build/rel/bench/bench_attn && build/rel/bench/bench_attn [n_pos] [dk] [n_q] [reps]
 *
 * Defaults: 4096 positions, head size 128 (K and V), 8 query heads per K/V
 * head (the 30B-A3B shape), 20 repetitions. The cache is 64 such heads'
 * worth laid out one after another (larger than the caches), visited in
 * turn, so each block reads its K/V from memory as a decode step does.
 * Prints, per kernel set (avx2, and avx512 when the CPU has it: the
 * repetitions alternate between them), ns per position per K/V head
 * (thread CPU time, best repetition), the K/V bytes read per second that makes, and whether
 * its output equals the scalar reference's bit for bit (BENCH_ATTN_FAST set:
 * the reference runs once, for profiling the SIMD set). BENCH_ATTN_HEADS=H
 * (a divisor of 64) lays the cache out position-major, as the engine did
 * before session 7: each position's row holds H heads' K (and V) side by
 * side, so one head's rows are H x dk values apart (the 30B-A3B shape:
 * H = 4, 1024 bytes); the default H = 1 is the engine's head-major order
 * since (kv_ring.h: each head's rows contiguous). BENCH_ATTN_TOK=N
 * times a prompt's query block of N tokens (the last one attending n_pos positions;
 * the figure is then per position per token); BENCH_ATTN_ONE set with it
 * makes the block token by token (the one-token kernel), for comparison.
 * BENCH_ATTN_SEQ set times the one-chunk form instead (sl_attn_attend_seq,
 * llama.cpp's kernel for micro-batches under 64 queries: a decode's).
 * Not a test. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/attn_kernels.h"
#include "quant/quant.h"
#include "util/mem.h"

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

/* Element offset of head h's position 0 with H heads per row. */
static size_t head_base(int h, int H, int n_pos, int dk)
{
    return (size_t)(h / H) * (size_t)n_pos * (size_t)H * (size_t)dk + (size_t)(h % H) * (size_t)dk;
}

static double run(const sl_attn_kernels *k, sl_attn_block *b, const uint16_t *kh,
                  const uint16_t *vh, int reps, float *out, int H)
{
    const int nt = b->n_tok > 1 ? b->n_tok : 1;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = cpu_now();
        for (int h = 0; h < N_HEADS; h++) {
            b->k = kh + head_base(h, H, b->n_pos, b->dk);
            b->v = vh + head_base(h, H, b->n_pos, b->dk);
            b->out = out + (size_t)h * (size_t)nt * (size_t)b->n_q * (size_t)b->dv;
            if (getenv("BENCH_ATTN_SEQ")) sl_attn_attend_seq(k, b, SL_TYPE_F16, SL_TYPE_F16);
            else sl_attn_attend_tokens(k, b, 1);
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
    const int H = getenv("BENCH_ATTN_HEADS") ? atoi(getenv("BENCH_ATTN_HEADS")) : 1;
    if (n_pos < 1 || dk < 1 || nq < 1 || reps < 1 || H < 1 || N_HEADS % H) {
        fprintf(stderr, "usage: bench_attn [n_pos] [dk] [n_q] [reps]\n");
        return 2;
    }
    const size_t cache = (size_t)N_HEADS * (size_t)n_pos * (size_t)dk;
    /* huge pages when BENCH_ATTN_HUGE is set (the session arena's pages otherwise) */
    const int huge = getenv("BENCH_ATTN_HUGE") != NULL;
    uint16_t *kh = huge ? sl_mem_alloc_huge(2 * cache) : malloc(2 * cache);
    uint16_t *vh = huge ? sl_mem_alloc_huge(2 * cache) : malloc(2 * cache);
    const size_t sf = sl_attn_scratch_floats(dk, dk, nq);
    int nt = getenv("BENCH_ATTN_TOK") ? atoi(getenv("BENCH_ATTN_TOK")) : 1;
    const int max_nt = sl_attn_block_tokens(dk, dk, nq, sf);
    if (nt < 1) nt = 1;
    if (nt > max_nt) nt = max_nt;
    float *q = malloc(sizeof(float) * (size_t)nt * nq * dk);
    float *out[2];
    for (int i = 0; i < 2; i++) out[i] = calloc((size_t)N_HEADS * nt * nq * dk, sizeof(float));
    float *scratch = malloc(sizeof(float) * sf);
    if (!kh || !vh || !q || !out[0] || !out[1] || !scratch) return 1;
    unsigned seed = 3;
    for (size_t i = 0; i < cache; i++) kh[i] = sl_f32_to_fp16(frand(&seed));
    for (size_t i = 0; i < cache; i++) vh[i] = sl_f32_to_fp16(frand(&seed));
    for (int i = 0; i < nt * nq * dk; i++) q[i] = frand(&seed) * 2.0f;
    sl_attn_block b = {q, (size_t)dk, kh, vh, 2 * (size_t)dk * H, 2 * (size_t)dk * H, dk, dk, nq, n_pos,
                       1.0f / sqrtf((float)dk), out[0], (size_t)dk, scratch, 0, NULL,
                       nt, (size_t)nq * dk, (size_t)nq * dk, 0, NULL, 0, 0, 0, false};
    b.n_pos = n_pos - nt + 1 > 0 ? n_pos - nt + 1 : 1; /* the block's last token sees n_pos */
    const size_t n_out = (size_t)N_HEADS * nt * nq * dk;
    const int ref_reps = getenv("BENCH_ATTN_FAST") ? 1 : reps > 3 ? 3 : reps;
    const double t_ref = run(sl_attn_kernels_ref(), &b, kh, vh, ref_reps, out[0], H);
    const double per = 1e9 / ((double)N_HEADS * n_pos * nt);
    const double bytes = (double)N_HEADS * n_pos * 4.0 * dk;
    printf("n_pos %d, dk = dv = %d, %d query rows per K/V head, %d heads per repetition, "
           "%d per row, %d tokens per block\n", n_pos, dk, nq, N_HEADS, H, nt);
    printf("%-6s %10.2f ns/pos %8.2f GB/s\n", "ref", t_ref * per, bytes / t_ref * 1e-9);
    /* the SIMD sets (AVX2, and AVX2 with the 512-bit steps where the CPU
     * has them; NEON on ARM64), timed in alternation, best repetition each */
    const sl_attn_kernels *sets[2] = {sl_attn_kernels_avx2(), sl_attn_kernels_avx512()};
    const char *names[2] = {"avx2", "avx512"};
    if (!sets[0]) sets[0] = sl_attn_kernels_get(), names[0] = "simd";
    sl_attn_kernels one_sets[2]; /* the sets without their block kernels */
    for (int i = 0; i < 2; i++)
        if (sets[i] && getenv("BENCH_ATTN_ONE")) {
            one_sets[i] = *sets[i];
            one_sets[i].attend_tok_f16 = one_sets[i].attend_tok_f32 = NULL;
            sets[i] = &one_sets[i];
        }
    double best[2] = {1e30, 1e30};
    int same[2] = {1, 1};
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < 2; i++) {
            if (!sets[i] || (sets[i] == sl_attn_kernels_ref() && !getenv("BENCH_ATTN_ONE"))) continue;
            const double t = run(sets[i], &b, kh, vh, 1, out[1], H);
            if (t < best[i]) best[i] = t;
            same[i] &= !memcmp(out[0], out[1], sizeof(float) * n_out);
        }
    for (int i = 0; i < 2; i++)
        if (best[i] < 1e30)
            printf("%-6s %10.2f ns/pos %8.2f GB/s  %s\n", names[i], best[i] * per,
                   bytes / best[i] * 1e-9, same[i] ? "bit-identical to ref" : "DIFFERS from ref");
    if (huge) sl_mem_free_huge(kh, 2 * cache), sl_mem_free_huge(vh, 2 * cache);
    else free(kh), free(vh);
    free(q), free(out[0]), free(out[1]), free(scratch);
    return 0;
}
