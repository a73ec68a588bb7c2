/* logits_digest.c - `logits_digest MODEL [BATCH] [THREADS]`: evaluates a fixed
 * 40-token sequence in batches of BATCH (default 7) keeping every token's
 * logits and prints one 64-bit FNV-1a digest of their bits per position, and
 * one of all; with CACHE_EXPERTS > 0 the routed experts are streamed
 * through a cache of that many. Built against two versions of libsluice (bench/bitcompare.sh),
 * it proves a change leaves the output bit-identical. DIGEST_PROMPT=N in
 * the environment gives the first N tokens as the prompt
 * (sl_session_set_prompt: llama.cpp's attention kernels, the rest as
 * generated rows); without it no prompt is given (every row tiled). Uses
 * the public API only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"

/* Weak: a library from before sl_session_set_prompt links too
 * (bitcompare builds this file against an old tree); called only under
 * DIGEST_PROMPT. */
extern int sl_session_set_prompt(sl_session *s, int n_prompt) __attribute__((weak));

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: logits_digest MODEL [BATCH] [THREADS] [CACHE_EXPERTS]\n");
        return 2;
    }
    const int batch = argc > 2 ? atoi(argv[2]) : 7, threads = argc > 3 ? atoi(argv[3]) : 2;
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    if (argc > 4 && atoi(argv[4]) > 0) {
        mp.stream = SL_STREAM_ON;
        mp.cache_experts = atoi(argv[4]);
    }
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, argv[1], &mp, &err)) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = batch;
    sp.all_logits = true;
    sl_session *s;
    if (sl_session_create(&s, m, &sp, &err)) {
        fprintf(stderr, "session: %s\n", err.msg);
        return 1;
    }
    const char *dp = getenv("DIGEST_PROMPT");
    if (dp) {
        if (!sl_session_set_prompt) {
            fprintf(stderr, "DIGEST_PROMPT: this library has no sl_session_set_prompt\n");
            return 2;
        }
        sl_session_set_prompt(s, atoi(dp));
    }
    const int V = sl_model_n_vocab(m), N = 40;
    int32_t toks[40];
    for (int i = 0; i < N; i++) toks[i] = (int32_t)((i * 7919 + 13) % V);
    uint64_t all = 0xcbf29ce484222325ull;
    for (int i = 0; i < N; i += batch) {
        const int n = N - i < batch ? N - i : batch;
        if (sl_session_eval(s, toks + i, n, &err)) {
            fprintf(stderr, "eval: %s\n", err.msg);
            return 1;
        }
        for (int j = 0; j < n; j++) {
            const float *l = sl_session_logits_at(s, j);
            const uint64_t h = fnv(0xcbf29ce484222325ull, l, sizeof(float) * (size_t)V);
            all = fnv(all, &h, sizeof h);
            printf("%d %016llx\n", i + j, (unsigned long long)h);
        }
    }
    printf("all %016llx\n", (unsigned long long)all);
    sl_session_free(s);
    sl_model_free(m);
    return 0;
}
