/* llama_tool.c - llama.cpp's side of the trained model's checks, against the
 * libraries of the node-llama-cpp npm package (built by llama_tool.sh):
 *   llama_tool greedy MODEL PROMPT N   the prompt (BOS first) then N greedy
 *                                      tokens, one batch for the prompt and
 *                                      one token per decode; prints the
 *                                      generated text
 *   llama_tool rescore MODEL PROMPT N  the same, but each token from the whole
 *                                      sequence evaluated afresh in one batch
 *                                      (the path of the KL-divergence base)
 *   llama_tool quantize IN OUT TYPE    llama.cpp's own quantiser, TYPE
 *                                      q8_0 or q4_k_m
 * A developer tool for tools/train_moe; not part of the library or the suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int greedy(const char *path, const char *prompt, int n_gen, int rescore)
{
    struct llama_model *model = llama_model_load_from_file(path, llama_model_default_params());
    if (!model) {
        fprintf(stderr, "llama_tool: llama.cpp cannot load %s\n", path);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    cp.n_threads = cp.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_tool: no context\n");
        return 1;
    }
    llama_token toks[512];
    int n = llama_tokenize(vocab, prompt, (int)strlen(prompt), toks, 512, true, false);
    if (n <= 0 || n + n_gen > 512) {
        fprintf(stderr, "llama_tool: prompt of %d tokens does not fit\n", n);
        return 1;
    }
    if (llama_decode(ctx, llama_batch_get_one(toks, n))) return 1;
    const int n_vocab = llama_vocab_n_tokens(vocab);
    for (int i = 0; i < n_gen; i++) {
        if (rescore && i > 0) {
            llama_memory_clear(llama_get_memory(ctx), true);
            if (llama_decode(ctx, llama_batch_get_one(toks, n))) return 1;
        }
        const float *lg = llama_get_logits_ith(ctx, -1);
        llama_token best = 0;
        for (int t = 1; t < n_vocab; t++)
            if (lg[t] > lg[best]) best = t;
        if (getenv("LLAMA_TOOL_GAPS")) { /* the margin of each pick, to find near-ties */
            float second = -1e30f;
            for (int t = 0; t < n_vocab; t++)
                if (t != best && lg[t] > second) second = lg[t];
            fprintf(stderr, "token %d: id %d, top-two gap %.6f\n", i, best, lg[best] - second);
        }
        char buf[64];
        int m = llama_token_to_piece(vocab, best, buf, sizeof buf, 0, false);
        if (m > 0) fwrite(buf, 1, (size_t)m, stdout);
        toks[n++] = best;
        if (!rescore && llama_decode(ctx, llama_batch_get_one(&toks[n - 1], 1))) return 1;
    }

    llama_free(ctx);
    llama_model_free(model);
    return 0;
}

static int quantize(const char *in, const char *out, const char *type)
{
    llama_model_quantize_params p = llama_model_quantize_default_params();
    if (!strcmp(type, "q8_0")) p.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
    else if (!strcmp(type, "q4_k_m")) p.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
    else {
        fprintf(stderr, "llama_tool: TYPE must be q8_0 or q4_k_m, not '%s'\n", type);
        return 2;
    }
    p.nthread = 1;
    return llama_model_quantize(in, out, &p) ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *backend = getenv("LLAMA_CPU_BACKEND");
    const int gen = !strcmp(argv[1], "greedy") || !strcmp(argv[1], "rescore");
    if (argc != 5 || (!gen && strcmp(argv[1], "quantize"))) {
        fprintf(stderr, "usage: llama_tool greedy|rescore MODEL PROMPT N | quantize IN OUT TYPE\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    if (!backend || !ggml_backend_load(backend)) {
        fprintf(stderr, "llama_tool: cannot load the CPU backend '%s'\n", backend ? backend : "");
        return 1;
    }
    llama_backend_init();
    int rc = gen ? greedy(argv[2], argv[3], atoi(argv[4]), !strcmp(argv[1], "rescore"))
                 : quantize(argv[2], argv[3], argv[4]);
    llama_backend_free();
    return rc;
}
