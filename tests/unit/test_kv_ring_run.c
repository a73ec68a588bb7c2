/* test_kv_ring_run.c - sliding-window layers kept as a mirrored ring
 * (engine/kv_ring.h) give the bits of the whole-context cache:
 *  - gpt-oss (llama.cpp's gpt-oss-MXFP4_MOE fixture: window 8 on layers 0
 *    and 2, sinks) and gemma4 (the gemma4-Q8_0 fixture: window 8, sliding
 *    and full layers of their own head sizes; a generated tiny gemma4,
 *    window 4): every token's logits of a prompt five windows long, split
 *    into micro-batches of several sizes, then decoded a token at a time
 *    past three windows and several turns of the ring, are bit-identical
 *    (memcmp) to a --swa-full session's, for every K/V cache type the
 *    model's head sizes allow (f16, f32, q8_0, q4_0, mixed);
 *  - the ring is really there (ring_cap on the sliding layers only) and the
 *    session's KV bytes are what sl_session_kv_bytes_at plans.
 * Skipped, saying why, when the shared fixtures are not there. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "engine/kv_rows.h"
#include "engine/session.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_PROMPT 40 /* five windows of 8 */
#define N_DECODE 30
#define N_TOK (N_PROMPT + N_DECODE)
#define N_CTX 128

static int32_t tok(int i) { return (int32_t)(3 + (i * 37) % 500); }

static const char *fixture(const char *name)
{
    static char path[2][512]; /* two at a time */
    static int k;
    k ^= 1;
    return t_fixture(path[k], sizeof path[k], name);
}

static sl_model *load(const char *path)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 2;
    sl_model *m = NULL;
    sl_err err;
    if (sl_model_load(&m, path, &mp, &err)) {
        fprintf(stderr, "  load %s: %s\n", path, err.msg);
        return NULL;
    }
    return m;
}

static sl_session *session(sl_model *m, int batch, bool swa_full, sl_kv_type tk, sl_kv_type tv)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = N_CTX;
    sp.n_batch_max = batch;
    sp.all_logits = true;
    sp.type_k = (int)tk;
    sp.type_v = (int)tv;
    sp.swa_full = swa_full;
    sl_session *s = NULL;
    sl_err err;
    if (sl_session_create(&s, m, &sp, &err)) {
        fprintf(stderr, "  session: %s\n", err.msg);
        return NULL;
    }
    return s;
}

/* Every token's logits (N_TOK x n_vocab, malloc'ed) of the prompt in
 * micro-batches of `batch`, then N_DECODE tokens one at a time; the
 * session's layout checked on the way (rings where expected). */
static float *run(sl_model *m, int batch, bool swa_full, sl_kv_type tk, sl_kv_type tv)
{
    const int V = sl_model_n_vocab(m);
    sl_session *s = session(m, batch, swa_full, tk, tv);
    if (!s) return NULL;
    int rings = 0;
    for (int il = 0; il < sl_model_n_layer(m); il++) {
        const int n_swa = m->layers[il].d.attn.n_swa;
        const int cap = s->layer_state[il].ring_cap;
        /* a ring exactly on the sliding layers, of the window and a batch */
        CHECK_EQ_INT(cap, swa_full || n_swa == 0 ? 0 : n_swa + batch - 1);
        rings += cap > 0;
    }
    CHECK(swa_full ? rings == 0 : rings > 0);
    uint64_t planned = 0;
    CHECK(sl_session_kv_bytes_at(m, tk, tv, N_CTX, batch, !swa_full, &planned));
    CHECK_EQ_INT((long long)s->layout.kv_bytes, (long long)planned);

    float *out = malloc(sizeof(float) * (size_t)V * N_TOK);
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = tok(i);
    sl_err err;
    bool ok = out != NULL;
    for (int p = 0; ok && p < N_TOK;) {
        const int n = p < N_PROMPT ? (N_PROMPT - p < batch ? N_PROMPT - p : batch) : 1;
        if (sl_session_eval(s, ids + p, n, &err)) {
            fprintf(stderr, "  eval at %d: %s\n", p, err.msg);
            ok = false;
            break;
        }
        for (int i = 0; i < n; i++)
            memcpy(out + (size_t)(p + i) * V, sl_session_logits_at(s, i), sizeof(float) * (size_t)V);
        p += n;
    }
    sl_session_free(s);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* The ring in batches of each size against the whole cache in one batch. */
static void same_as_full(sl_model *m, sl_kv_type tk, sl_kv_type tv, const int *batches, int nb)
{
    const int V = sl_model_n_vocab(m);
    float *want = run(m, N_PROMPT, true, tk, tv);
    CHECK(want != NULL);
    for (int b = 0; want && b < nb; b++) {
        float *got = run(m, batches[b], false, tk, tv);
        CHECK(got != NULL);
        if (!got) continue;
        int first = -1;
        for (int t = 0; t < N_TOK && first < 0; t++)
            if (memcmp(got + (size_t)t * V, want + (size_t)t * V, sizeof(float) * (size_t)V))
                first = t;
        CHECK_MSG(first < 0, "K %s V %s, batches of %d: token %d's logits differ from the "
                  "whole cache's", sl_kv_type_name(tk), sl_kv_type_name(tv), batches[b],
                  first);
        free(got);
    }
    free(want);
}

TEST(gpt_oss_ring_is_bit_identical_to_the_whole_cache)
{
    const char *path = fixture("gpt-oss-MXFP4_MOE.gguf");
    if (!path) {
        printf("  (skipped: no gpt-oss-MXFP4_MOE.gguf fixture)\n");
        return;
    }
    sl_model *m = load(path);
    CHECK(m != NULL);
    if (!m) return;
    const int all[] = {1, 3, 8, 13}, two[] = {3, 13};
    same_as_full(m, SL_KV_F16, SL_KV_F16, all, 4);
    same_as_full(m, SL_KV_F32, SL_KV_F32, two, 2);
    same_as_full(m, SL_KV_Q8_0, SL_KV_Q8_0, two, 2);
    same_as_full(m, SL_KV_Q4_0, SL_KV_Q4_0, two, 2);
    same_as_full(m, SL_KV_Q8_0, SL_KV_F16, two, 2);
    sl_model_free(m);
}

TEST(gemma4_fixture_ring_is_bit_identical_to_the_whole_cache)
{
    const char *path = fixture("gemma4-Q8_0.gguf");
    if (!path) {
        printf("  (skipped: no gemma4-Q8_0.gguf fixture)\n");
        return;
    }
    sl_model *m = load(path);
    CHECK(m != NULL);
    if (!m) return;
    const int all[] = {1, 5, 16}, two[] = {5};
    same_as_full(m, SL_KV_F16, SL_KV_F16, all, 3);
    same_as_full(m, SL_KV_Q8_0, SL_KV_Q8_0, two, 1);
    same_as_full(m, SL_KV_Q4_0, SL_KV_F32, two, 1);
    sl_model_free(m);
}

TEST(generated_gemma4_ring_is_bit_identical_to_the_whole_cache)
{
    sl_synth_config c;
    sl_err err;
    char path[512];
    t_path(path, sizeof path, "g4-tiny.gguf");
    CHECK(sl_synth_config_init(&c, "gemma4", "tiny", &err) == 0);
    c.seed = 7;
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        CHECK_MSG(0, "mkmodel gemma4 tiny: %s", err.msg);
        return;
    }
    sl_model *m = load(path);
    CHECK(m != NULL);
    if (!m) return;
    const int all[] = {1, 2, 7};
    same_as_full(m, SL_KV_F16, SL_KV_F16, all, 3);
    same_as_full(m, SL_KV_F32, SL_KV_F32, all, 3);
    sl_model_free(m);
}

int main(void)
{
    RUN(gpt_oss_ring_is_bit_identical_to_the_whole_cache);
    RUN(gemma4_fixture_ring_is_bit_identical_to_the_whole_cache);
    RUN(generated_gemma4_ring_is_bit_identical_to_the_whole_cache);
    return TEST_REPORT();
}
