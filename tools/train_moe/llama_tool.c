/* llama_tool.c - llama.cpp's side of the trained model's checks, against the
 * libraries of the node-llama-cpp npm package (built by llama_tool.sh):
 *   llama_tool greedy MODEL PROMPT N   the prompt (BOS first) then N greedy
 *                                      tokens, one batch for the prompt and
 *                                      one token per decode; prints the
 *                                      generated text
 *   llama_tool rescore MODEL PROMPT N  the same, but each token from the whole
 *                                      sequence evaluated afresh in one batch
 *                                      (the path of the KL-divergence base)
 *   llama_tool quantize IN OUT TYPE    llama.cpp's own quantiser, TYPE one
 *                                      of llama-quantize's names (q8_0,
 *                                      q4_k_m, iq4_xs, mxfp4_moe, ...)
 * A developer tool for tools/train_moe; not part of the library or the suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* llama-quantize's type names (tools/quantize) and their llama_ftype */
static const struct {
    const char *name;
    enum llama_ftype ftype;
} ftypes[] = {
    {"f32", LLAMA_FTYPE_ALL_F32}, {"f16", LLAMA_FTYPE_MOSTLY_F16},
    {"bf16", LLAMA_FTYPE_MOSTLY_BF16}, {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
    {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0}, {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0}, {"q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    {"q2_k", LLAMA_FTYPE_MOSTLY_Q2_K}, {"q2_k_s", LLAMA_FTYPE_MOSTLY_Q2_K_S},
    {"q3_k_s", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"q3_k_m", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"q3_k_l", LLAMA_FTYPE_MOSTLY_Q3_K_L}, {"q4_k_s", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"q5_k_s", LLAMA_FTYPE_MOSTLY_Q5_K_S},
    {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K},
    {"iq4_nl", LLAMA_FTYPE_MOSTLY_IQ4_NL}, {"iq4_xs", LLAMA_FTYPE_MOSTLY_IQ4_XS},
    {"iq3_xxs", LLAMA_FTYPE_MOSTLY_IQ3_XXS}, {"iq3_xs", LLAMA_FTYPE_MOSTLY_IQ3_XS},
    {"iq3_s", LLAMA_FTYPE_MOSTLY_IQ3_S}, {"iq3_m", LLAMA_FTYPE_MOSTLY_IQ3_M},
    {"iq2_xxs", LLAMA_FTYPE_MOSTLY_IQ2_XXS}, {"iq2_xs", LLAMA_FTYPE_MOSTLY_IQ2_XS},
    {"iq2_s", LLAMA_FTYPE_MOSTLY_IQ2_S}, {"iq2_m", LLAMA_FTYPE_MOSTLY_IQ2_M},
    {"iq1_s", LLAMA_FTYPE_MOSTLY_IQ1_S}, {"iq1_m", LLAMA_FTYPE_MOSTLY_IQ1_M},
    {"tq1_0", LLAMA_FTYPE_MOSTLY_TQ1_0}, {"tq2_0", LLAMA_FTYPE_MOSTLY_TQ2_0},
    {"mxfp4_moe", LLAMA_FTYPE_MOSTLY_MXFP4_MOE},
};

static int quantize(const char *in, const char *out, const char *type)
{
    llama_model_quantize_params p = llama_model_quantize_default_params();
    size_t i = 0, n = sizeof ftypes / sizeof ftypes[0];
    while (i < n && strcasecmp(type, ftypes[i].name)) i++;
    if (i == n) {
        fprintf(stderr, "llama_tool: unknown TYPE '%s' (llama-quantize's names:", type);
        for (i = 0; i < n; i++) fprintf(stderr, " %s", ftypes[i].name);
        fprintf(stderr, ")\n");
        return 2;
    }
    p.ftype = ftypes[i].ftype;
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
