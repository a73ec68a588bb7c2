/* test_generated_llama.c - models written by `sluice mkmodel` against
 * llama.cpp's own outputs on the same files (tests/data/generated: its
 * KL-divergence bases, see ATTRIBUTION.md). The generator is deterministic,
 * so each model is written afresh and only llama.cpp's output is stored.
 * This covers shapes and types the shared fixtures lack: a gpt-oss model
 * with MXFP4 experts whose rows take the repacked 8x8 order, sliding
 * layers with a window (8) far shorter than the 128-token chunks, sinks,
 * YaRN and every bias. */
#include <stdio.h>
#include <string.h>

#include "common/kld_eval.h"
#include "common/testutil.h"
#include "model/llama_rev.h"
#include "sluice.h"
#include "synth/synth.h"
#include "synth/synth_ds.h"
#include "test.h"

typedef struct generated {
    const char *arch, *preset, *type, *kld;
    double max_kld, min_top; /* llama.cpp's ops: 0.000000 / 99.7 % (one near-tie) */
    unsigned seed;           /* 0: the generator's default */
    int type_k, type_v;      /* the attention cache (sl_kv_type), -1: the model's default */
    int exact;               /* every row's bytes as llama.cpp's */
    int rev;                 /* sl_llama_rev to follow, -1: the default */
    unsigned experts, top_k; /* 0: the preset's */
} generated;

static const generated k_models[] = {
    {"gpt-oss", "tiny", "mxfp4", "gpt-oss-tiny-mxfp4.kld", 1e-6, 0.99, 0, -1, -1, 0, -1, 0, 0},
    /* quantised caches with head size 64: llama.cpp rotates Q, K and V by a
     * Walsh-Hadamard matrix (without the rotation: mean KLD 2.5e-3) */
    {"qwen3moe", "tiny-k", "q4_k_m", "qwen3moe-tinyk-q4_k_m-kv-q8_0.kld", 1e-6, 0.99, 3,
     SL_KV_Q8_0, SL_KV_Q8_0, 0, -1, 0, 0},
    {"qwen3moe", "tiny-k", "q4_k_m", "qwen3moe-tinyk-q4_k_m-kv-q4_0-f16.kld", 1e-6, 0.99, 3,
     SL_KV_Q4_0, SL_KV_F16, 0, -1, 0, 0},
    /* the shared expert's gate as qwen2moe's graph rounds it, silu(g) / g
     * (with 1 / (1 + e^-g): 387 bytes of the base differ) */
    {"qwen2moe", "tiny", "f32", "qwen2moe-tiny-f32.kld", 1e-6, 0.99, 0, -1, -1, 1, -1, 0, 0},
    /* llama.cpp 2026-09 (node-llama-cpp 3.22.1's build, bench/llama_ref.sh):
     * its tiled flash attention adds the sinks as one FMA (as 2026-08: 248
     * of 315 rows differ), and its ggml_vec_dot_f32 rounds a leftover of 4+
     * values as vectorised products (the delta rule's dots over a state of
     * 16: all 315 rows differ with the FMA leftover) */
    {"gpt-oss", "tiny-k", "f32", "gpt-oss-tinyk-f32-2026-09.kld", 1e-6, 0.99, 0, -1, -1, 1,
     SL_LLAMA_REV_2026_09, 0, 0},
    {"qwen35moe", "tiny", "f32", "qwen35moe-tiny-f32-2026-09.kld", 1e-6, 0.99, 0, -1, -1, 1,
     SL_LLAMA_REV_2026_09, 0, 0},
    /* MLA's per-head f32 products (k_b, v_b) meet permuted inputs, which
     * tinyBLAS does not take: ggml_vec_dot_f32's order (with tinyBLAS's:
     * 315 of 315 rows differ) */
    {"deepseek2", "tiny", "f32", "deepseek2-tiny-f32.kld", 1e-6, 0.99, 0, -1, -1, 1, -1, 0, 0},
    /* llama.cpp 2026-09's IQ panel takes an expert's product over 8+ of its
     * tokens, and its last layer runs past the mixer on the rows whose
     * logits llama-perplexity asks (each chunk's second half) only: an
     * expert with 8+ tokens of the chunk but fewer of its second half
     * takes the plain kernel there (running every row: 20 bytes differ) */
    {"qwen3moe", "tiny-k", "iq4_xs", "qwen3moe-tinyk-iq4_xs-e32-2026-09.kld", 1e-6, 0.99, 3, -1,
     -1, 1, SL_LLAMA_REV_2026_09, 32, 2},
};

TEST(generated_models_match_llama_cpp)
{
    for (size_t i = 0; i < sizeof k_models / sizeof *k_models; i++) {
        const generated *g = &k_models[i];
        sl_err err = {0};
        char path[512], kld[512], why[512];
        snprintf(path, sizeof path, "%s/%s-%s-%s-%zu.gguf", t_tmpdir(), g->arch, g->preset,
                 g->type, i);
        snprintf(kld, sizeof kld, "tests/data/generated/%s", g->kld);
        if (sl_synth_ds_arch(g->arch)) { /* deepseek2 and kin: their own writer */
            sl_synth_ds d;
            uint64_t bytes = 0;
            CHECK(sl_synth_ds_init(&d, g->arch, g->preset, &err) == SL_OK);
            CHECK(sl_synth_type_from_name(g->type, &d.type));
            if (g->seed) d.seed = g->seed;
            CHECK_MSG(sl_synth_ds_validate(&d, &err) == SL_OK &&
                          sl_synth_ds_write(&d, path, &bytes, &err) == SL_OK,
                      "%s", err.msg);
        } else {
            sl_synth_config c;
            CHECK(sl_synth_config_init(&c, g->arch, g->preset, &err) == SL_OK);
            CHECK(sl_synth_type_from_name(g->type, &c.type));
            if (g->seed) c.seed = g->seed;
            if (g->experts) c.n_expert = g->experts;
            if (g->top_k) c.n_expert_used = g->top_k;
            CHECK_MSG(sl_synth_write(&c, path, NULL, NULL, NULL, &err) == SL_OK, "%s", err.msg);
        }
        sl_kld_stats st;
        t_kld_rows rows = {0, 0};
        t_kld_eval_set_rev(g->rev);
        const int rc = t_kld_eval_rows(path, kld, 0, g->type_k, g->type_v, NULL, &st, &rows, why,
                                       sizeof why);
        CHECK_MSG(rc == 0, "%s: %s", g->kld, why);
        if (rc == 0) {
            printf("  %-24s mean KLD %.6f  same top %.3f %% over %llu tokens\n", g->kld,
                   st.kld.value, 100.0 * st.same_top.value, (unsigned long long)st.count);
            CHECK_MSG(st.count >= 300, "%s: only %llu tokens compared", g->kld,
                      (unsigned long long)st.count);
            CHECK_MSG(st.kld.value <= g->max_kld, "%s: mean KLD %.6g above %.6g", g->kld,
                      st.kld.value, g->max_kld);
            CHECK_MSG(st.same_top.value >= g->min_top, "%s: same top %.4f below %.4f", g->kld,
                      st.same_top.value, g->min_top);
            if (g->exact)
                CHECK_MSG(rows.total > 0 && rows.same == rows.total,
                          "%s: %ld of %ld rows differ from llama.cpp's bytes", g->kld,
                          rows.total - rows.same, rows.total);
        }
        remove(path);
    }
}

int main(void)
{
    RUN(generated_models_match_llama_cpp);
    return TEST_REPORT();
}
