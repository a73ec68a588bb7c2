/* test_imrope_sections.c - qwen35moe's IMROPE with any
 * rope.dimension_sections split (ARCHS.md section 1; ggml's
 * ggml_mrope_cache_init with is_imrope). For text llama.cpp feeds the
 * positions (p, p, p, 0), so a pair whose sector falls to the fourth ("e")
 * section rotates by angle 0 and every other pair as NeoX. Checked three
 * ways: the pair rule against tables written by hand from that rule; the
 * rotation of single vectors; and whole models whose sections were
 * rewritten in the file, against the independent reference pass
 * (tests/common/ref_qwen35.c) and against llama.cpp's own KL-divergence
 * base for one such file (tests/data/generated). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kld_eval.h"
#include "common/ref_qwen35.h"
#include "common/testutil.h"
#include "ops/ops.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_TOK 12
static const int32_t prompt[N_TOK] = {1, 72, 101, 108, 108, 111, 300, 44, 32, 119, 260, 33};

/* Pairs at angle 0 for a few splits, worked out by hand (sector = pair mod
 * sum; t needs sector % 3 == 0 and sector < 3 s0, h % 3 == 1 and < 3 s1, w
 * % 3 == 2 and < 3 s2). */
TEST(pair_rule_by_hand)
{
    static const struct {
        int sec[4], pairs;
        const char *zero; /* '1' where the pair takes position 0 */
    } cases[] = {
        {{11, 11, 10, 0}, 32, "00000000000000000000000000000000"}, /* the converter's */
        {{3, 3, 2, 0}, 8, "00000000"},  /* the fixtures' */
        {{2, 2, 2, 2}, 8, "00000011"},  /* sectors 6 (t: 6 < 6 no), 7 (h: 7 < 6 no) */
        {{2, 1, 0, 1}, 8, "00100010"},  /* sum 4: sector 2 (w: 2 < 0 no) in each turn */
        {{1, 0, 0, 1}, 2, "01"},        /* the llama.cpp-checked file below */
        {{0, 1, 0, 0}, 4, "1111"},      /* sum 1: always sector 0, t has none */
        {{1, 1, 1, 0}, 6, "000000"},    /* sum 3, each sector below its limit */
        {{0, 0, 0, 0}, 4, "0000"},      /* no sections: plain NeoX */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_rope r = {.n_dims = 2 * cases[i].pairs, .neox = 1};
        memcpy(r.sections, cases[i].sec, sizeof r.sections);
        for (int p = 0; p < cases[i].pairs; p++)
            CHECK_MSG(sl_rope_pair_at_zero(&r, p) == (cases[i].zero[p] == '1'),
                      "split %zu pair %d", i, p);
    }
}

/* A pair at angle 0 keeps its two values exactly; the others rotate as the
 * same rope without sections rotates them. */
TEST(pairs_at_zero_stay_and_the_others_rotate_as_neox)
{
    enum { HD = 24, ND = 16, H = 3 };
    sl_rope plain = {.n_dims = ND, .neox = 1, .freq_base = 10000.0f, .freq_scale = 1.0f,
                     .attn_factor = 1.0f, .beta_fast = 32.0f, .beta_slow = 1.0f};
    sl_rope sect = plain;
    const int split[4] = {2, 2, 2, 2}; /* pairs 6 and 7 at zero */
    memcpy(sect.sections, split, sizeof split);
    float x[H * HD], a[H * HD], b[H * HD];
    for (int i = 0; i < H * HD; i++) x[i] = sinf(0.37f * (float)i + 0.1f) * 2.0f;
    for (int pos = 0; pos < 40; pos += 13) {
        memcpy(a, x, sizeof x);
        memcpy(b, x, sizeof x);
        sl_rope_apply(&plain, a, H, HD, pos);
        sl_rope_apply(&sect, b, H, HD, pos);
        for (int h = 0; h < H; h++)
            for (int i = 0; i < HD; i++) {
                const int d = h * HD + i;
                const int pair = i < ND ? i % (ND / 2) : -1;
                if (pair == 6 || pair == 7)
                    CHECK_MSG(b[d] == x[d], "pos %d head %d dim %d moved", pos, h, i);
                else
                    CHECK_MSG(memcmp(&b[d], &a[d], sizeof(float)) == 0,
                              "pos %d head %d dim %d: %g vs NeoX %g", pos, h, i, b[d], a[d]);
            }
        if (pos > 0) CHECK(a[6] != x[6]); /* NeoX does move pair 6 */
    }
}

/* Rewrites the four int32 values of qwen35moe.rope.dimension_sections in
 * the GGUF file at path (the array keeps its length). 0 on success. */
static int set_sections(const char *path, const int sec[4])
{
    static const char key[] = "qwen35moe.rope.dimension_sections";
    size_t len = 0;
    char *all = t_read_all(path, &len);
    if (!all) return -1;
    const size_t kl = sizeof key - 1;
    long at = -1;
    for (size_t i = 8; i + kl + 16 + 16 <= len && at < 0; i++) {
        uint64_t n;
        memcpy(&n, all + i - 8, 8);
        if (n == kl && !memcmp(all + i, key, kl)) at = (long)(i + kl);
    }
    int rc = -1;
    if (at >= 0) {
        uint32_t vtype, etype;
        uint64_t n;
        memcpy(&vtype, all + at, 4);
        memcpy(&etype, all + at + 4, 4);
        memcpy(&n, all + at + 8, 8);
        FILE *f = (vtype == 9 && etype == 5 && n == 4) ? fopen(path, "r+b") : NULL;
        if (f) {
            int32_t v[4] = {sec[0], sec[1], sec[2], sec[3]};
            rc = fseek(f, at + 16, SEEK_SET) || fwrite(v, sizeof v, 1, f) != 1 ? -1 : 0;
            if (fclose(f)) rc = -1;
        }
    }
    free(all);
    return rc;
}

/* Writes the qwen35moe tiny preset (f32, seed 11, rope over rope_dim dims
 * of heads of head_dim; 0: the preset's) with the given sections. */
static int write_q35(char *path, size_t cap, const char *name, int head_dim, int rope_dim,
                     const int sec[4])
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen35moe", "tiny", &err)) return -1;
    c.type = SL_SYNTH_F32;
    c.seed = 11;
    if (head_dim) c.head_dim = (uint32_t)head_dim;
    if (rope_dim) c.rope_dim = (uint32_t)rope_dim;
    char file[128];
    snprintf(file, sizeof file, "%s.gguf", name);
    t_path(path, cap, file);
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", name, err.msg);
        return -1;
    }
    return sec ? set_sections(path, sec) : 0;
}

static float *engine_logits(const char *path, int batch)
{
    const t_logits_run r = {.path = path, .ids = prompt, .n_tok = N_TOK, .batch = batch,
                            .threads = 2, .kv = SL_KV_F32};
    return t_batched_logits(&r);
}

/* Generated f32 models with rope over all 16 dims of 32-wide heads (8
 * pairs) under splits that leave pairs to "e": the engine within 1e-5 of
 * the reference pass's logits (prompt in batches of 5 and in one), and
 * not equal to the same weights under the covering split (the split is
 * applied, not ignored). */
TEST(splits_match_reference)
{
    static const int splits[][4] = {{3, 3, 2, 0}, {2, 2, 2, 2}, {2, 1, 0, 1}, {0, 1, 0, 0}};
    float *base = NULL;
    int V = 0;
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        const int *s = splits[i];
        char path[512], name[64];
        snprintf(name, sizeof name, "q35-sect-%d%d%d%d", s[0], s[1], s[2], s[3]);
        if (write_q35(path, sizeof path, name, 32, 16, s)) {
            CHECK_MSG(0, "could not write %s", name);
            continue;
        }
        char eb[256];
        ref_q35 *ref = ref_q35_load(path, eb, sizeof eb);
        CHECK_MSG(ref != NULL, "%s", eb);
        if (!ref) continue;
        V = ref_q35_n_vocab(ref);
        float *want = malloc(sizeof(float) * (size_t)V * N_TOK);
        float margin[N_TOK];
        CHECK(want && ref_q35_forward(ref, prompt, N_TOK, want, margin) == 0);
        ref_q35_free(ref);
        float *got = engine_logits(path, 5), *one = engine_logits(path, N_TOK);
        CHECK(got && one);
        if (want && got && one) {
            double max_abs = 0, scale = 0;
            for (size_t k = 0; k < (size_t)V * N_TOK; k++) {
                max_abs = fmax(max_abs, fabs((double)got[k] - want[k]));
                scale = fmax(scale, fabs((double)want[k]));
            }
            printf("   %-18s max|dlogit| %.2e of %.2f\n", name, max_abs, scale);
            CHECK_MSG(max_abs <= 1e-5 * scale, "%s: %.3g > %.3g", name, max_abs, 1e-5 * scale);
            CHECK(memcmp(got, one, sizeof(float) * (size_t)V * N_TOK) == 0);
            if (i == 0) {
                base = got;
                got = NULL;
            } else if (base) {
                double diff = 0;
                for (size_t k = 0; k < (size_t)V * N_TOK; k++)
                    diff = fmax(diff, fabs((double)got[k] - base[k]));
                printf("   %-18s max|dlogit| vs the covering split %.2e\n", name, diff);
                CHECK_MSG(diff > 1e-3, "%s: logits equal to the covering split's", name);
            }
        }
        free(want);
        free(got);
        free(one);
    }
    free(base);
}

/* llama.cpp's own base for the tiny preset (f32, seed 11; 2 rotated pairs)
 * with sections [1, 0, 0, 1], pair 1 at angle 0 (tests/data/generated);
 * the same weights with the generator's covering split [1, 1, 0, 0] are
 * measurably off that base, so the base tells the splits apart. */
TEST(split_matches_llama_cpp)
{
    static const int split[4] = {1, 0, 0, 1}, covering[4] = {1, 1, 0, 0};
    const char *kld = "tests/data/generated/qwen35moe-tiny-f32-sect1001.kld";
    char path[512], why[512];
    sl_kld_stats st;
    CHECK(write_q35(path, sizeof path, "q35-llama-1001", 0, 0, split) == 0);
    int rc = t_kld_eval(path, kld, 0, NULL, &st, why, sizeof why);
    CHECK_MSG(rc == 0, "%s: %s", kld, why);
    if (rc == 0) {
        printf("   [1,0,0,1] vs llama.cpp: mean KLD %.6f, same top %.3f %% over %llu tokens\n",
               st.kld.value, 100.0 * st.same_top.value, (unsigned long long)st.count);
        CHECK(st.count >= 300);
        CHECK_MSG(st.kld.value <= 1e-6, "mean KLD %.3g", st.kld.value);
        CHECK_MSG(st.same_top.value >= 0.999, "same top %.4f", st.same_top.value);
    }
    CHECK(write_q35(path, sizeof path, "q35-llama-1100", 0, 0, covering) == 0);
    rc = t_kld_eval(path, kld, 0, NULL, &st, why, sizeof why);
    CHECK_MSG(rc == 0, "%s: %s", kld, why);
    if (rc == 0) {
        printf("   [1,1,0,0] vs the same base: mean KLD %.6f, same top %.3f %%\n",
               st.kld.value, 100.0 * st.same_top.value);
        CHECK_MSG(st.kld.value >= 1e-4, "the covering split is not told apart: KLD %.3g",
                  st.kld.value);
    }
}

/* Splits llama.cpp's rope op asserts against are refused at load. */
TEST(invalid_splits_refused)
{
    static const int bad[][4] = {{0, 0, 0, 2}, {0, 0, 0, 0}, {1, -1, 0, 0}, {9, 9, 0, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[512];
        CHECK(write_q35(path, sizeof path, "q35-bad", 0, 0, bad[i]) == 0);
        sl_model *m = NULL;
        sl_err err = {0};
        const int rc = sl_model_load(&m, path, NULL, &err);
        CHECK_MSG(rc != SL_OK, "split %zu loaded", i);
        CHECK_MSG(strstr(err.msg, "dimension_sections") != NULL, "split %zu: '%s'", i, err.msg);
        if (rc == SL_OK) sl_model_free(m);
    }
}

int main(void)
{
    RUN(pair_rule_by_hand);
    RUN(pairs_at_zero_stay_and_the_others_rotate_as_neox);
    RUN(splits_match_reference);
    RUN(split_matches_llama_cpp);
    RUN(invalid_splits_refused);
    return TEST_REPORT();
}
