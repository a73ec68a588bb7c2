/* test_ref_qwen35.c - the qwen35moe reference pass against llama.cpp.
 *
 * The expected numbers are llama.cpp's own: the KL-divergence base files in
 * ../shared/fixtures/reference (llama-perplexity -c 128 -b 128 over text.txt,
 * see the README there) store, for the second half of each 128-token chunk,
 * the log-probabilities llama.cpp computed on the same GGUF file. The
 * reference runs the first chunk (its first token replaced by BOS, as
 * llama-perplexity evaluates it) and its distributions at positions
 * 64 .. 126 are compared with the 63 stored rows. Skipped, with a printed
 * reason, where the fixtures are absent. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/ref_qwen35.h"
#include "eval/kld.h"
#include "eval/kld_file.h"
#include "gguf/gguf.h"
#include "synth/synth.h"
#include "test.h"
#include "common/testutil.h"

static const char *fixture_dir(void)
{
    static const char *const dirs[] = {"../shared/fixtures/reference",
                                       "/work/shared/fixtures/reference"};
    struct stat st;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/qwen35moe-f32.gguf", dirs[i]);
        if (stat(p, &st) == 0) return dirs[i];
    }
    return NULL;
}

/* BOS id if the file's tokenizer adds one, else -1 (read here from the
 * GGUF directly, the rule of llama-perplexity). */
static int32_t bos_if_added(const char *path)
{
    sl_gguf *g = NULL;
    sl_err err = {0};
    if (sl_gguf_open(&g, path, &err)) return -1;
    bool add = false;
    uint32_t bos = 0;
    int32_t r = -1;
    if (sl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add) && add &&
        sl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos))
        r = (int32_t)bos;
    sl_gguf_close(g);
    return r;
}

typedef struct kld_result {
    double mean_kld, max_kld;
    double max_dlogp;   /* max |log p_ref - log p_base| over tokens with p_base > 1e-3 */
    double max_step;    /* largest 16-bit step (scale) of the rows compared */
    int same_top, count;
    bool ok;
} kld_result;

/* Runs the reference on chunk 0 of NAME.kld and compares every stored row. */
static kld_result compare_first_chunk(const char *dir, const char *name, int kv_f16)
{
    kld_result res = {0, 0, 0, 0, 0, 0, false};
    char gpath[512], kpath[512], eb[256] = "";
    snprintf(gpath, sizeof gpath, "%s/%s.gguf", dir, name);
    snprintf(kpath, sizeof kpath, "%s/%s.kld", dir, name);
    ref_q35 *m = ref_q35_load(gpath, eb, sizeof eb);
    CHECK_MSG(m != NULL, "%s", eb);
    if (!m) return res;
    ref_q35_set_kv_f16(m, kv_f16);
    const int V = ref_q35_n_vocab(m);
    sl_kld_base b;
    memset(&b, 0, sizeof b);
    sl_err err = {0};
    int rc = sl_kld_base_open(&b, kpath, V, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc) {
        ref_q35_free(m);
        return res;
    }
    CHECK_EQ_INT(b.n_ctx, 128);
    const int n = b.n_ctx, first = n / 2;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n);
    float *logits = malloc(sizeof(float) * (size_t)n * (size_t)V);
    memcpy(tok, sl_kld_base_chunk_tokens(&b, 0), sizeof(int32_t) * (size_t)n);
    int32_t bos = bos_if_added(gpath);
    if (bos >= 0) tok[0] = bos;
    rc = ref_q35_forward(m, tok, n, logits, NULL);
    CHECK(rc == 0);
    rc |= sl_kld_base_read_chunk(&b, 0, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    double sum = 0;
    for (int r = 0; !rc && r < b.n_scored; r++) {
        sl_kld_row row;
        sl_kld_token t;
        const int pos = first + r;
        if (sl_kld_base_row(&b, r, &row, &err) ||
            sl_kld_token_compare(logits + (size_t)pos * V, V, &row, tok[pos + 1], &t, &err)) {
            CHECK_MSG(0, "row %d: %s", r, err.msg);
            break;
        }
        /* log-softmax of the reference row, in double */
        const float *l = logits + (size_t)pos * V;
        double mx = l[0], se = 0;
        for (int i = 1; i < V; i++) if (l[i] > mx) mx = l[i];
        for (int i = 0; i < V; i++) se += exp(l[i] - mx);
        for (int i = 0; i < V; i++) {
            const double bl = sl_kld_row_logprob(&row, i);
            if (bl < log(1e-3)) continue;
            const double d = fabs((l[i] - mx - log(se)) - bl);
            if (d > res.max_dlogp) res.max_dlogp = d;
        }
        if (row.scale > res.max_step) res.max_step = row.scale;
        sum += t.kld;
        if (t.kld > res.max_kld) res.max_kld = t.kld;
        res.same_top += t.same_top;
        res.count++;
    }
    res.ok = res.count == b.n_scored;
    res.mean_kld = res.count ? sum / res.count : INFINITY;
    free(tok);
    free(logits);
    sl_kld_base_close(&b);
    ref_q35_free(m);
    return res;
}

TEST(f32_matches_llama_cpp)
{
    const char *dir = fixture_dir();
    if (!dir) {
        printf("  (skipping: ../shared/fixtures/reference/qwen35moe-f32.gguf not found)\n");
        return;
    }
    /* with an f32 cache: llama.cpp's f16 K/V rounding shows in the logits */
    kld_result r32 = compare_first_chunk(dir, "qwen35moe-f32", 0);
    CHECK(r32.ok);
    printf("  qwen35moe-f32, f32 KV: mean KLD %.3e, max %.3e, max |dlog p| %.2e\n", r32.mean_kld,
           r32.max_kld, r32.max_dlogp);
    CHECK_MSG(fabs(r32.mean_kld) <= 1e-5, "mean KLD %g", r32.mean_kld);
    kld_result r = compare_first_chunk(dir, "qwen35moe-f32", 1);
    CHECK(r.ok);
    printf("  qwen35moe-f32, f16 KV: mean KLD %.3e, max %.3e, same top %d/%d, max |dlog p| %.2e "
           "(base step %.2e)\n",
           r.mean_kld, r.max_kld, r.same_top, r.count, r.max_dlogp, r.max_step);
    /* Measured (f16 KV): mean KLD -7.7e-08, max 4.9e-06 (the 16-bit base's
     * own noise), and no probable token's log-probability further from the
     * base than 6.7e-05, about half the base's step of 1.19e-04: exact to
     * the base's resolution. With an f32 cache that distance was 4.1e-04. */
    CHECK_MSG(fabs(r.mean_kld) <= 1e-5, "mean KLD %g", r.mean_kld);
    CHECK_MSG(r.max_kld <= 2e-5, "max KLD %g", r.max_kld);
    CHECK_MSG(r.max_dlogp <= r.max_step, "max |dlog p| %g, step %g", r.max_dlogp, r.max_step);
    CHECK_EQ_INT(r.same_top, r.count);
}

TEST(q8_0_matches_llama_cpp)
{
    const char *dir = fixture_dir();
    char p[512];
    struct stat st;
    if (dir) snprintf(p, sizeof p, "%s/qwen35moe-Q8_0.gguf", dir);
    if (!dir || stat(p, &st) != 0) {
        printf("  (skipping: qwen35moe-Q8_0.gguf not found)\n");
        return;
    }
    kld_result r = compare_first_chunk(dir, "qwen35moe-Q8_0", 1);
    CHECK(r.ok);
    printf("  qwen35moe-Q8_0: mean KLD %.3e, max %.3e, same top %d/%d\n", r.mean_kld, r.max_kld,
           r.same_top, r.count);
    /* Measured 8.8e-03 (8.2e-03 with an f32 cache): the activations go
     * through sluice's own q8_0 quantiser (as ref_forward.c does), which
     * differs from llama.cpp's x86 one (issue 11); a requantised activation
     * moves by a whole int8 step wherever a value sits near a rounding
     * boundary, so the difference is far above float rounding. With
     * llama.cpp's rule (multiply by 127/amax, round half-even; tried in a
     * scratch copy) it measured 1.4e-04 with an f32 cache and 5.4e-05 with
     * the f16 one. A misread rule is far above either: grouped instead of
     * tiled v-to-q/k heads gives 0.62 on both files. */
    CHECK_MSG(r.mean_kld <= 2e-2, "mean KLD %g", r.mean_kld);
}

TEST(generated_tiny_runs)
{
    /* mkmodel's qwen35moe tiny (both layer kinds, nk 2 < nv 4) loads, runs
     * and gives finite logits, and the state matters: the same token at two
     * positions gives different logits. */
    sl_synth_config c;
    sl_err err = {0};
    char path[512], eb[256] = "";
    t_path(path, sizeof path, "q35-ref-tiny.gguf");
    CHECK(!sl_synth_config_init(&c, "qwen35moe", "tiny", &err));
    CHECK(!sl_synth_write(&c, path, NULL, NULL, NULL, &err));
    ref_q35 *m = ref_q35_load(path, eb, sizeof eb);
    CHECK_MSG(m != NULL, "%s", eb);
    if (!m) return;
    CHECK_EQ_INT(ref_q35_n_layer(m), 4);
    CHECK(ref_q35_layer_is_linear(m, 0) && !ref_q35_layer_is_linear(m, 1));
    CHECK(ref_q35_layer_is_linear(m, 2) && !ref_q35_layer_is_linear(m, 3));
    const int V = ref_q35_n_vocab(m);
    int32_t tok[6] = {10, 20, 10, 30, 10, 40};
    float *lg = malloc(sizeof(float) * 6 * (size_t)V);
    CHECK(ref_q35_forward(m, tok, 6, lg, NULL) == 0);
    int finite = 1;
    for (int i = 0; i < 6 * V; i++) finite &= isfinite(lg[i]) != 0;
    CHECK(finite);
    CHECK(memcmp(lg, lg + 2 * V, sizeof(float) * (size_t)V) != 0);
    CHECK(t_rel_rms(lg, lg + 4 * (size_t)V, V) > 1e-3);
    int32_t bad = V;
    CHECK(ref_q35_forward(m, &bad, 1, lg, NULL) == -1);
    free(lg);
    ref_q35_free(m);
    remove(path);
}

int main(void)
{
    RUN(f32_matches_llama_cpp);
    RUN(q8_0_matches_llama_cpp);
    RUN(generated_tiny_runs);
    return TEST_REPORT();
}
