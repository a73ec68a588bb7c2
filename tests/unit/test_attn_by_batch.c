/* test_attn_by_batch.c - llama.cpp's choice of CPU flash-attention path by
 * the size of the micro-batch it evaluates a row in, which sluice's
 * attention follows once the prompt is given (sl_session_set_prompt): a
 * prompt of 32 tokens and its generated rows over an f16 cache attend
 * position by position (the one-chunk form, token by token: batches of 32,
 * 7 and 1 give the same bits), a prompt of 64 tiled, which gives other bits,
 * the same as no prompt given (every row tiled) in batches of 64 or 7. The
 * same for multi-head latent attention (deepseek2), its sparse form
 * (glm-dsa's indexer-chosen positions) and deepseek4's attention, on their
 * reference fixtures. The trained model's 32-token llama.cpp base
 * (test_trained_glm4moe) checks the bits themselves against llama.cpp's;
 * test_attn_ubatch the rule at 512-token micro-batches. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_TOK 64

static int32_t prompt[N_TOK];
static char model_path[512];
/* the reference fixtures of the two latent-attention forms and deepseek4's
 * attention over its window and compressed blocks */
static const char *const k_fixtures[] = {"deepseek2-Q8_0.gguf", "glm-dsa-Q8_0.gguf",
                                         "deepseek4-Q8_0.gguf"};

/* Every token's logits of the 64 tokens in batches of `batch`, the first
 * n_prompt of them given as the prompt (< 0: none); NULL on failure. *V
 * receives the vocabulary size. */
static float *logits(int n_prompt, int batch, int *V)
{
    sl_model *m = t_load_resident(model_path, 2);
    if (!m) return NULL;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 2 * N_TOK;
    sp.n_batch_max = batch;
    sp.all_logits = true;
    sp.type_k = sp.type_v = SL_KV_F16;
    *V = sl_model_n_vocab(m);
    float *out = t_session_logits(m, &sp, prompt, N_TOK, batch, n_prompt);
    sl_model_free(m);
    return out;
}

static void check_model(const char *arch)
{
    int V = 0;
    float *seq32 = logits(32, 32, &V), *seq1 = logits(32, 1, &V), *seq7 = logits(32, 7, &V),
          *tiled64 = logits(64, 64, &V), *tiled7 = logits(64, 7, &V), *none = logits(-1, 7, &V);
    CHECK(seq32 && seq1 && seq7 && tiled64 && tiled7 && none && V > 0);
    if (seq32 && seq1 && seq7 && tiled64 && tiled7 && none && V > 0) {
        const size_t bytes = sizeof(float) * (size_t)V * N_TOK;
        CHECK_MSG(!memcmp(seq32, seq1, bytes), "%s: batches of 32 differ from one token at a time", arch);
        CHECK_MSG(!memcmp(seq32, seq7, bytes), "%s: batches of 32 differ from batches of 7", arch);
        CHECK_MSG(memcmp(seq32, tiled64, bytes) != 0, "%s: a prompt of 64 gives the one-chunk bits: it was not tiled", arch);
        CHECK_MSG(!memcmp(tiled64, tiled7, bytes), "%s: a prompt of 64 in batches of 7 is not tiled", arch);
        CHECK_MSG(!memcmp(tiled64, none, bytes), "%s: no prompt given is not tiled", arch);
    }
    free(seq32);
    free(seq1);
    free(seq7);
    free(tiled64);
    free(tiled7);
    free(none);
}

/* A generated qwen3moe tiny-k (head size 64) at model_path. */
static int generate(void)
{
    const char *arch = "qwen3moe", *preset = "tiny-k";
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, arch, preset, &err)) {
        fprintf(stderr, "synth: %s\n", err.msg);
        return -1;
    }
    c.type = SL_SYNTH_Q8_0;
    c.seed = 5;
    t_path(model_path, sizeof model_path, "attn_by_batch.gguf");
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, model_path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "mkmodel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

TEST(path_follows_the_batch_size)
{
    const int rc = generate();
    CHECK_MSG(rc == 0, "cannot write the qwen3moe model");
    if (rc == 0) check_model("qwen3moe");
    remove(model_path);
    for (size_t i = 0; i < sizeof k_fixtures / sizeof *k_fixtures; i++) {
        const bool found = t_fixture(model_path, sizeof model_path, k_fixtures[i]) != NULL;
        CHECK_MSG(found, "%s not found in ../shared/fixtures/reference", k_fixtures[i]);
        if (found) check_model(k_fixtures[i]);
    }
}

int main(void)
{
    for (int i = 0; i < N_TOK; i++) prompt[i] = (int32_t)((i * 37 + 11) % 200);
    RUN(path_follows_the_batch_size);
    return TEST_REPORT();
}
