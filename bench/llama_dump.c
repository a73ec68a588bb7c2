/* llama_dump.c - `llama_dump MODEL TEXT CHUNK DIR [N_CTX] [MATCH]`: llama.cpp's
 * intermediate tensors of one perplexity chunk, as raw f32 files, to find
 * the first operation where sluice and llama.cpp part.
 *
 * The text is tokenized and cut into chunks of N_CTX tokens (default 128) as
 * llama-perplexity does; chunk CHUNK (0-based) is evaluated from an empty
 * memory in one batch with BOS first. Every f32 tensor of the graph whose
 * name contains MATCH (default: all) is written to DIR/NAME.OP.f32 (ggml's
 * layout, innermost dimension first), with a line "NAME OP ne0 ne1 ne2 ne3"
 * on stdout. The logits of every position go to DIR/logits.f32 [n_vocab,
 * N_CTX/2], positions N_CTX/2 on (the ones llama-perplexity asks for).
 * Build against the node-llama-cpp libraries bench/llama_ref.sh installs
 * (R=build/llama-ref, L=$R/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64):
 *   cc -O2 -I$R/src/include -I$R/src/ggml/include bench/llama_dump.c -L$L \
 *      -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
 *      -Wl,-rpath,$L -lm -o $R/llama_dump
 * and run with LLAMA_CPU_BACKEND=$L/libggml-cpu-haswell.so. A developer
 * tool, not part of the suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "llama_text.h"

static const char *g_dir, *g_match;

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* the eval callback: asks for every matching f32 tensor, writes it */
static bool on_tensor(struct ggml_tensor *t, bool ask, void *ud)
{
    (void)ud;
    const bool want = t->type == GGML_TYPE_F32 && (!g_match || strstr(t->name, g_match));
    if (ask) return want;
    if (!want) return true;
    const size_t n = (size_t)ggml_nelements(t);
    float *buf = malloc(n * sizeof *buf);
    if (!buf) return false;
    if (ggml_is_contiguous(t)) {
        ggml_backend_tensor_get(t, buf, 0, n * sizeof *buf);
    } else {
        char *raw = malloc(ggml_nbytes(t));
        if (!raw) return false;
        ggml_backend_tensor_get(t, raw, 0, ggml_nbytes(t));
        size_t k = 0;
        for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
            for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
                for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
                    for (int64_t i0 = 0; i0 < t->ne[0]; i0++)
                        memcpy(&buf[k++],
                               raw + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3],
                               sizeof(float));
        free(raw);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s.f32", g_dir, t->name, ggml_op_name(t->op));
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(buf, sizeof *buf, n, f);
        fclose(f);
    }
    printf("%s %s %lld %lld %lld %lld\n", t->name, ggml_op_name(t->op), (long long)t->ne[0],
           (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    free(buf);
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: llama_dump MODEL TEXT CHUNK DIR [N_CTX] [MATCH]\n"
                        "  env LLAMA_CPU_BACKEND: the ggml CPU backend library to load\n");
        return 2;
    }
    const int chunk = atoi(argv[3]), n_ctx = argc > 5 ? atoi(argv[5]) : 128;
    g_dir = argv[4];
    g_match = argc > 6 ? argv[6] : NULL;
    const char *backend = getenv("LLAMA_CPU_BACKEND");
    llama_log_set(quiet, NULL);
    if (!backend || !ggml_backend_load(backend)) {
        fprintf(stderr, "llama_dump: cannot load the CPU backend '%s'\n", backend ? backend : "");
        return 1;
    }
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_tok = -1;
    llama_token *tokens = llama_text_tokens(vocab, argv[2], &n_tok);
    if (!tokens) return 1;
    if (n_tok < (chunk + 1) * n_ctx) {
        fprintf(stderr, "llama_dump: %d tokens, no chunk %d\n", n_tok, chunk);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = cp.n_ubatch = (uint32_t)n_ctx;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.cb_eval = on_tensor;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    struct llama_batch batch = llama_batch_init(n_ctx, 0, 1);
    const llama_token *ct = tokens + (size_t)chunk * n_ctx;
    for (int i = 0; i < n_ctx; i++) {
        batch.token[i] = i == 0 && llama_vocab_get_add_bos(vocab) ? llama_vocab_bos(vocab) : ct[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = i >= n_ctx / 2; /* as llama-perplexity asks */
    }
    batch.n_tokens = n_ctx;
    if (llama_decode(ctx, batch)) return 1;
    const int n_vocab = llama_vocab_n_tokens(vocab);
    char path[4096];
    snprintf(path, sizeof path, "%s/logits.f32", g_dir);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    for (int i = n_ctx / 2; i < n_ctx; i++)
        fwrite(llama_get_logits_ith(ctx, i), sizeof(float), (size_t)n_vocab, f);
    fclose(f);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    free(tokens);
    return 0;
}
