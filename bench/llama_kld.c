/* llama_kld.c - `llama_kld MODEL TEXT OUT.kld [N_CTX] [THREADS]`: llama.cpp's
 * own KL-divergence base for a model, written as llama-perplexity
 * --kl-divergence-base writes it (the text cut into chunks of N_CTX tokens,
 * default 128, each evaluated from an empty memory in one batch with BOS
 * first, in micro-batches of 512 as llama-perplexity's default, the second half of each chunk scored), so that
 * `sluice perplexity --kl-divergence` can compare sluice with llama.cpp on
 * any file llama.cpp loads. Built by bench/llama_ref.sh against the llama.cpp
 * libraries of the node-llama-cpp npm package and sluice's base writer
 * (src/eval/kld_file.c, whose row encoding is llama-perplexity's). A
 * developer tool: not part of the library or the suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/kld_file.h"
#include "ggml-backend.h"
#include "llama.h"
#include "llama_text.h"

/* The ggml type of a cache type name from the environment variable var. */
static int cache_type(const char *var, enum ggml_type *out)
{
    const char *v = getenv(var);
    if (!v || !*v || !strcmp(v, "f16")) *out = GGML_TYPE_F16;
    else if (!strcmp(v, "f32")) *out = GGML_TYPE_F32;
    else if (!strcmp(v, "q8_0")) *out = GGML_TYPE_Q8_0;
    else if (!strcmp(v, "q4_0")) *out = GGML_TYPE_Q4_0;
    else {
        fprintf(stderr, "llama_kld: %s must be f16, f32, q8_0 or q4_0, not '%s'\n", var, v);
        return -1;
    }
    return 0;
}

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: llama_kld MODEL TEXT OUT.kld [N_CTX] [THREADS]\n"
                        "  env LLAMA_CPU_BACKEND: the ggml CPU backend library to load\n"
                        "  env LLAMA_UBATCH: micro-batch size (default 512, llama-perplexity's)\n");
        return 2;
    }
    const int n_ctx = argc > 4 ? atoi(argv[4]) : 128, n_threads = argc > 5 ? atoi(argv[5]) : 2;
    const char *backend = getenv("LLAMA_CPU_BACKEND");
    llama_log_set(quiet, NULL);
    if (!backend || !ggml_backend_load(backend)) {
        fprintf(stderr, "llama_kld: cannot load the CPU backend '%s' (set LLAMA_CPU_BACKEND)\n",
                backend ? backend : "");
        return 1;
    }
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) {
        fprintf(stderr, "llama_kld: llama.cpp cannot load %s\n", argv[1]);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_tok = -1;
    llama_token *tokens = llama_text_tokens(vocab, argv[2], &n_tok);
    if (!tokens) return 1;
    const int n_chunk = n_tok / n_ctx, first = n_ctx / 2, n_vocab = llama_vocab_n_tokens(vocab);
    if (n_tok < 0 || n_chunk < 1) {
        fprintf(stderr, "llama_kld: %d tokens, need at least %d\n", n_tok, n_ctx);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    /* one batch per chunk, cut into micro-batches of llama-perplexity's
     * default n_ubatch (512) unless LLAMA_UBATCH says otherwise */
    const char *ub = getenv("LLAMA_UBATCH");
    const int n_ubatch = ub && atoi(ub) > 0 ? atoi(ub) : 512;
    cp.n_batch = (uint32_t)n_ctx;
    cp.n_ubatch = (uint32_t)(n_ubatch < n_ctx ? n_ubatch : n_ctx);
    cp.n_threads = cp.n_threads_batch = n_threads;
    if (cache_type("LLAMA_CACHE_TYPE_K", &cp.type_k) || cache_type("LLAMA_CACHE_TYPE_V", &cp.type_v))
        return 2;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    sl_kld_writer w;
    sl_err err;
    if (sl_kld_writer_open(&w, argv[3], n_ctx, n_vocab, n_chunk, tokens, &err)) {
        fprintf(stderr, "llama_kld: %s\n", err.msg);
        return 1;
    }
    struct llama_batch batch = llama_batch_init(n_ctx, 0, 1);
    const bool add_bos = llama_vocab_get_add_bos(vocab);
    for (int c = 0; c < n_chunk; c++) {
        const llama_token *ct = tokens + (size_t)c * n_ctx;
        llama_memory_clear(llama_get_memory(ctx), true);
        for (int i = 0; i < n_ctx; i++) {
            batch.token[i] = i == 0 && add_bos ? llama_vocab_bos(vocab) : ct[i];
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = i >= first; /* as llama-perplexity asks */
        }
        batch.n_tokens = n_ctx;
        if (llama_decode(ctx, batch)) {
            fprintf(stderr, "llama_kld: llama_decode failed on chunk %d\n", c);
            return 1;
        }
        for (int p = first; p < n_ctx - 1; p++)
            if (sl_kld_writer_add(&w, llama_get_logits_ith(ctx, p), ct[p + 1], NULL, &err)) {
                fprintf(stderr, "llama_kld: %s\n", err.msg);
                return 1;
            }
    }
    if (sl_kld_writer_close(&w, &err)) {
        fprintf(stderr, "llama_kld: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "llama_kld: %d chunks of %d tokens -> %s\n", n_chunk, n_ctx, argv[3]);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    free(tokens);
    return 0;
}
