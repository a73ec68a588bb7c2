/* test_ds4_hc.c - deepseek4's hyper-connection stream sums in llama.cpp's
 * two orders, and which one a model takes (issue 34).
 *
 * llama.cpp computes u = sum_s pre[s] X[s] (build_hc_pre) and
 * X'[d] = post[d] f + sum_s C[d][s] X[s] (build_hc_post) either in its
 * fused DSV4_HC_PRE / DSV4_HC_POST ops, whose loops its AVX2 build
 * compiles to multiply-add chains, or in the unfused graph of ggml_mul and
 * ggml_add, every product and sum rounded. Asserted:
 *   - sl_ds4_stream_sum and sl_ds4_post_mix equal, bit for bit, a twin
 *     written here from that description (fmaf for a multiply-add, a
 *     volatile float for each rounded product and sum), in both orders, at
 *     the fixtures' n_embd 256 and at an odd 37; the two orders do differ
 *     on these values (so the comparison is not vacuous);
 *   - the model-wide choice (family_deepseek4.c): a generated deepseek4 of
 *     the 4-layer fixture's size (4 layers, 8 experts, top 2) takes the
 *     unfused order, as the reference fixtures' build computed that
 *     fixture; one larger on any count (6 layers, 16 experts or top 4, as
 *     the 6-layer variants) takes the fused order, and so does every model
 *     under llama_rev 2026-09 (node-llama-cpp 3.22.1's build fuses at every
 *     shape). The file-level agreement with llama.cpp's bases is
 *     test_reference_kld's (deepseek4-Q8_0, deepseek4-l6-Q8_0 / -Q4_K_M,
 *     byte-identical);
 *   - the clamped SwiGLU as 2026-09's ggml_swiglu_clamp computes it
 *     (sl_ffn_swiglu_clamp_op) against a twin. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "engine/ffn.h"
#include "families/deepseek4/ds4.h"
#include "model/model.h"
#include "sluice.h"
#include "synth/synth_ds.h"
#include "test.h"

#define NS 4 /* streams */
#define EMAX 256

/* A rounded product, a rounded sum: volatile stores keep each in float. */
static float rmul(float a, float b)
{
    volatile float p = a * b;
    return p;
}

static float radd(float a, float b)
{
    volatile float p = a + b;
    return p;
}

/* uniform in [-2, 2) from a 64-bit LCG (deterministic) */
static float rnd(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*st >> 11) / 9007199254740992.0) * 4.0f - 2.0f;
}

static void fill(float *v, size_t n, uint64_t *st)
{
    for (size_t i = 0; i < n; i++) v[i] = rnd(st);
}

TEST(stream_sum_is_either_llama_cpp_order)
{
    static const size_t sizes[] = {EMAX, 37};
    uint64_t st = 7;
    int differ = 0;
    for (size_t k = 0; k < 2; k++) {
        const size_t E = sizes[k];
        float x[NS * EMAX], w[NS], got_f[EMAX], got_u[EMAX];
        fill(x, NS * E, &st);
        fill(w, NS, &st);
        sl_ds4_stream_sum(got_f, x, w, E, true);
        sl_ds4_stream_sum(got_u, x, w, E, false);
        for (size_t i = 0; i < E; i++) {
            /* DSV4_HC_PRE: sum = 0; sum += x w per stream, contracted */
            float f = rmul(x[i], w[0]);
            for (int s = 1; s < NS; s++) f = fmaf(x[(size_t)s * E + i], w[s], f);
            /* the unfused graph: mul per stream, add in stream order */
            float u = rmul(x[i], w[0]);
            for (int s = 1; s < NS; s++) u = radd(u, rmul(x[(size_t)s * E + i], w[s]));
            CHECK_MSG(memcmp(&f, &got_f[i], sizeof f) == 0, "fused E %zu i %zu: %a vs %a", E, i,
                      (double)got_f[i], (double)f);
            CHECK_MSG(memcmp(&u, &got_u[i], sizeof u) == 0, "unfused E %zu i %zu: %a vs %a", E,
                      i, (double)got_u[i], (double)u);
            differ += f != u;
        }
    }
    CHECK_MSG(differ > 0, "the two orders never differ on these values");
}

TEST(post_mix_is_either_llama_cpp_order)
{
    static const size_t sizes[] = {EMAX, 37};
    uint64_t st = 11;
    int differ = 0;
    for (size_t k = 0; k < 2; k++) {
        const size_t E = sizes[k];
        float f[EMAX], r[NS * EMAX], comb[NS * NS], post[NS], got_f[EMAX], got_u[EMAX];
        fill(f, E, &st);
        fill(r, NS * E, &st);
        fill(comb, NS * NS, &st);
        fill(post, NS, &st);
        for (int d = 0; d < NS; d++) {
            /* comb index d + 4 s: destination d's column over the sources */
            sl_ds4_post_mix(got_f, f, post[d], r, comb + d, E, true);
            sl_ds4_post_mix(got_u, f, post[d], r, comb + d, E, false);
            for (size_t i = 0; i < E; i++) {
                float a = rmul(f[i], post[d]), b = a;
                for (int s = 0; s < NS; s++) {
                    a = fmaf(r[(size_t)s * E + i], comb[d + NS * s], a);
                    b = radd(b, rmul(r[(size_t)s * E + i], comb[d + NS * s]));
                }
                CHECK_MSG(memcmp(&a, &got_f[i], sizeof a) == 0, "fused d %d i %zu", d, i);
                CHECK_MSG(memcmp(&b, &got_u[i], sizeof b) == 0, "unfused d %d i %zu", d, i);
                differ += a != b;
            }
        }
    }
    CHECK_MSG(differ > 0, "the two orders never differ on these values");
}

/* llama.cpp 2026-09's ggml_swiglu_clamp: gc = min(g, lim), uc = clamp(u),
 * gc / (1 + expf(-gc)) * uc, each step rounded, libm expf; the input clamp
 * of the older build leaves the SwiGLU to sl_ffn_prepare_down. */
TEST(swiglu_clamp_op_is_ggml_swiglu_clamp)
{
    enum { F = 300 };
    float g[F], u[F], want[F];
    uint64_t st = 3;
    for (int i = 0; i < F; i++) {
        g[i] = 3.0f * rnd(&st); /* beyond the limit on both sides */
        u[i] = 3.0f * rnd(&st);
    }
    const float lim = 2.5f;
    for (int i = 0; i < F; i++) {
        const float gc = g[i] < lim ? g[i] : lim;
        const float uc = u[i] < -lim ? -lim : (u[i] > lim ? lim : u[i]);
        volatile float e = expf(-gc);
        volatile float den = 1.0f + e;
        volatile float silu = gc / den;
        want[i] = silu * uc;
    }
    sl_ffn_swiglu_clamp_op(g, u, F, lim);
    CHECK(memcmp(g, want, sizeof want) == 0);
}

/* hp.hc_fused of a generated tiny deepseek4 with the given counts, loaded
 * under rev; -1 when the file or the load fails. */
static int fused_for(uint32_t n_layer, uint32_t n_expert, uint32_t used, sl_llama_rev rev)
{
    sl_synth_ds c;
    sl_err err = {0};
    if (sl_synth_ds_init(&c, "deepseek4", "tiny", &err)) return -1;
    c.n_layer = n_layer;
    c.n_expert = n_expert;
    c.n_expert_used = used;
    c.seed = 5;
    char path[512];
    if (t_write_synth_ds(&c, "ds4_hc_rule", path, sizeof path)) return -1;
    sl_model_params mp = sl_model_default_params();
    mp.llama_rev = rev;
    mp.n_threads = 1;
    sl_model *m = NULL;
    if (sl_model_load(&m, path, &mp, &err)) {
        printf("  load: %s\n", err.msg);
        return -1;
    }
    const int fused = m->hp.hc_fused ? 1 : 0;
    sl_model_free(m);
    remove(path);
    return fused;
}

TEST(the_fixtures_size_is_unfused_and_any_larger_model_fused)
{
    const sl_llama_rev r8 = SL_LLAMA_REV_2026_08, r9 = SL_LLAMA_REV_2026_09;
    CHECK(sl_model_default_params().llama_rev == r8);
    CHECK_EQ_INT(fused_for(4, 8, 2, r8), 0); /* deepseek4-Q8_0's counts */
    CHECK_EQ_INT(fused_for(3, 8, 2, r8), 0);
    CHECK_EQ_INT(fused_for(6, 16, 4, r8), 1); /* the variants' counts */
    CHECK_EQ_INT(fused_for(6, 8, 2, r8), 1);
    CHECK_EQ_INT(fused_for(4, 16, 2, r8), 1);
    CHECK_EQ_INT(fused_for(4, 8, 4, r8), 1);
    CHECK_EQ_INT(fused_for(4, 8, 2, r9), 1); /* node-llama-cpp's build */
}

int main(void)
{
    RUN(stream_sum_is_either_llama_cpp_order);
    RUN(post_mix_is_either_llama_cpp_order);
    RUN(swiglu_clamp_op_is_ggml_swiglu_clamp);
    RUN(the_fixtures_size_is_unfused_and_any_larger_model_fused);
    return TEST_REPORT();
}
