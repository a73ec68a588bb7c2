/* test_qwen35.c - the hybrid qwen35moe engine (gated DeltaNet + gated full
 * attention) on llama.cpp's own qwen35moe-f32 reference file, and on a
 * generated qwen35moe model (always there): results do
 * not depend on how a prompt is split into batches, on the thread count or
 * on streaming the experts; the recurrent state restarts at position 0,
 * rewinds to its snapshot (the end of the last prompt batch) and refuses
 * any other rewind. (Agreement with llama.cpp's own distributions is
 * checked by test_reference_kld.) The fixture's part is skipped, saying
 * why, when the shared fixtures are not there. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_TOK 24

static const char *fixture;

static const char *find_fixture(void)
{
    static char path[512];
    return t_fixture(path, sizeof path, "qwen35moe-f32.gguf");
}

static int32_t tok(int i) { return (int32_t)(3 + (i * 37) % 500); }

/* Logits of tokens 0..N_TOK-1 evaluated in batches of `batch` (malloc'ed). */
static float *run(int batch, int threads, int cache_experts)
{
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = tok(i);
    const t_logits_run r = {.path = fixture, .ids = ids, .n_tok = N_TOK, .batch = batch,
                            .threads = threads, .cache_experts = cache_experts,
                            .kv = SL_KV_F16};
    return t_batched_logits(&r);
}

TEST(batches_threads_and_streaming_do_not_change_bits)
{
    float *a = run(1, 1, 0), *b = run(5, 2, 0), *c = run(N_TOK, 2, 0), *d = run(7, 2, 4);
    CHECK(a && b && c && d);
    if (a && b && c && d) {
        sl_model *m;
        sl_err err;
        CHECK(sl_model_load(&m, fixture, NULL, &err) == 0);
        const size_t n = (size_t)sl_model_n_vocab(m) * (size_t)N_TOK * sizeof(float);
        sl_model_free(m);
        CHECK(memcmp(a, b, n) == 0);
        CHECK(memcmp(a, c, n) == 0);
        CHECK(memcmp(a, d, n) == 0);
    }
    free(a);
    free(b);
    free(c);
    free(d);
}

/* Evaluates ids one call each; copies the last token's logits to out. */
static int eval_each(sl_session *s, int from, int to, float *out, size_t V)
{
    sl_err err;
    for (int i = from; i < to; i++) {
        const int32_t id = tok(i);
        if (sl_session_eval(s, &id, 1, &err)) return -1;
    }
    memcpy(out, sl_session_logits(s), V * sizeof *out);
    return 0;
}

TEST(recurrent_state_rewinds_only_to_its_snapshot)
{
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, fixture, NULL, &err) == 0);
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 16;
    sl_session *s;
    CHECK(sl_session_create(&s, m, &sp, &err) == 0);
    const size_t V = (size_t)sl_model_n_vocab(m);
    float *first = malloc(V * sizeof(float)), *again = malloc(V * sizeof(float));
    int32_t prompt[10];
    for (int i = 0; i < 10; i++) prompt[i] = tok(i);
    CHECK(sl_session_eval(s, prompt, 10, &err) == 0); /* snapshot at 10 */
    CHECK(eval_each(s, 10, 13, first, V) == 0);
    CHECK_EQ_INT(sl_session_truncate(s, 11), SL_EINVAL); /* no history at 11 */
    CHECK_EQ_INT(sl_session_n_past(s), 13);              /* and nothing changed */
    CHECK_EQ_INT(sl_session_truncate(s, 10), SL_OK);     /* the snapshot */
    CHECK_EQ_INT(sl_session_n_past(s), 10);
    CHECK(eval_each(s, 10, 13, again, V) == 0);
    CHECK(memcmp(first, again, V * sizeof(float)) == 0);
    CHECK_EQ_INT(sl_session_truncate(s, 0), SL_OK); /* a restart always works */
    CHECK(sl_session_eval(s, prompt, 10, &err) == 0);
    CHECK(eval_each(s, 10, 13, again, V) == 0);
    CHECK(memcmp(first, again, V * sizeof(float)) == 0);
    free(first);
    free(again);
    sl_session_free(s);
    sl_model_free(m);
}

/* A generated 4-layer qwen35moe (q8_0, layers alternating DeltaNet and
 * attention); path in path. */
static int generated(char *path, size_t cap)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen35moe", "tiny", &err)) return -1;
    c.type = SL_SYNTH_Q8_0;
    c.seed = 8;
    t_path(path, cap, "qwen35moe-q8_0.gguf");
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(void)
{
    static char gen[512];
    if (generated(gen, sizeof gen) == 0) {
        printf("  generated qwen35moe (q8_0)\n");
        fixture = gen;
        RUN(batches_threads_and_streaming_do_not_change_bits);
        RUN(recurrent_state_rewinds_only_to_its_snapshot);
    } else {
        printf("  could not generate a qwen35moe model\n");
        t_failed++;
    }
    fixture = find_fixture();
    if (!fixture) {
        printf("  (skipping the fixture: ../shared/fixtures/reference/qwen35moe-f32.gguf not "
               "found)\n");
        return TEST_REPORT();
    }
    printf("  llama.cpp's qwen35moe-f32\n");
    RUN(batches_threads_and_streaming_do_not_change_bits);
    RUN(recurrent_state_rewinds_only_to_its_snapshot);
    return TEST_REPORT();
}
