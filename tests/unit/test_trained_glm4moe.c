/* test_trained_glm4moe.c - the trained glm4moe model (tests/data/trained,
 * tools/train_moe: 16 routed experts top-4 beside a shared expert, a dense
 * first layer and an MTP block, distilled from stories260K) against
 * llama.cpp's own KL-divergence bases of the same files (node-llama-cpp
 * 3.22.1's build, README there): every scored row of sluice's logits must
 * encode to the base's very bytes (bit-identity as far as the base can
 * show it), at f32 and at llama.cpp's own Q8_0 and Q4_K_M quantisations.
 * Unlike the generated models' routers, these routers were trained: top-4
 * picks with clear margins, not near-ties. */
#include <stdio.h>

#include "common/kld_eval.h"
#include "test.h"

static const char *const k_files[] = {"glm4moe-stories-f32", "glm4moe-stories-q8_0",
                                      "glm4moe-stories-q4_k_m"};

TEST(trained_glm4moe_matches_llama_cpp)
{
    for (size_t i = 0; i < sizeof k_files / sizeof *k_files; i++) {
        char gguf[256], kld[256], why[512];
        snprintf(gguf, sizeof gguf, "tests/data/trained/%s.gguf", k_files[i]);
        snprintf(kld, sizeof kld, "tests/data/trained/%s.kld", k_files[i]);
        sl_kld_stats st;
        t_kld_rows rows = {0, 0};
        const int rc = t_kld_eval_rows(gguf, kld, 0, -1, -1, NULL, &st, &rows, why, sizeof why);
        CHECK_MSG(rc == 0, "%s: %s", k_files[i], why);
        if (rc != 0) continue;
        printf("  %-24s mean KLD %.6f  same top %.3f %%  rows as llama.cpp's %ld/%ld\n",
               k_files[i], st.kld.value, 100.0 * st.same_top.value, rows.same, rows.total);
        CHECK_MSG(rows.total >= 300, "%s: only %ld rows compared", k_files[i], rows.total);
        CHECK_MSG(rows.same == rows.total, "%s: %ld of %ld rows differ from llama.cpp's bytes",
                  k_files[i], rows.total - rows.same, rows.total);
        /* equal rows still leave ~1e-6 of mean KLD: the base is uint16-encoded */
        CHECK_MSG(st.kld.value <= 5e-6, "%s: mean KLD %.6g", k_files[i], st.kld.value);
    }
}

/* 32-token chunks: llama.cpp attends a micro-batch under 64 tokens by its
 * one-chunk flash attention, not tiled (mix_attn.c) */
TEST(trained_glm4moe_matches_llama_cpp_in_32_token_chunks)
{
    const char *gguf = "tests/data/trained/glm4moe-stories-f32.gguf",
               *kld = "tests/data/trained/glm4moe-stories-f32.c32.kld";
    char why[512];
    sl_kld_stats st;
    t_kld_rows rows = {0, 0};
    const int rc = t_kld_eval_rows(gguf, kld, 0, -1, -1, NULL, &st, &rows, why, sizeof why);
    CHECK_MSG(rc == 0, "%s", why);
    if (rc != 0) return;
    printf("  f32, 32-token chunks: mean KLD %.6f  rows as llama.cpp's %ld/%ld\n", st.kld.value,
           rows.same, rows.total);
    CHECK_MSG(rows.total >= 100, "only %ld rows compared", rows.total);
    CHECK_MSG(rows.same == rows.total, "%ld of %ld rows differ from llama.cpp's bytes",
              rows.total - rows.same, rows.total);
}

int main(void)
{
    RUN(trained_glm4moe_matches_llama_cpp);
    RUN(trained_glm4moe_matches_llama_cpp_in_32_token_chunks);
    return TEST_REPORT();
}
