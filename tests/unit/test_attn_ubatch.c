/* test_attn_ubatch.c - the attention kernel of each row follows the request,
 * not how sluice splits it (sl_session_set_prompt): a prompt row takes
 * llama.cpp's kernel for the micro-batch of 512 it would lie in when that
 * prompt is evaluated cold (one-chunk when the micro-batch has fewer than
 * 64 tokens, else tiled), a generated row the one-chunk kernel. On a
 * generated qwen3moe (f16 cache) with prompts of 1,060 tokens (1,060 mod 512
 * = 36: the last micro-batch one-chunk) and 700 (188: all tiled), then four
 * generated tokens, every row's logits are the same bits in batches of 512,
 * 100, 32 and 7, in pieces split at arbitrary points, with the prompt's
 * last token evaluated again after a cut (the prompt cache's heal), with a
 * prefix restored from memory and from a file, and with the generated
 * tokens as one drafted-verify batch. Both kernels occur: the one-chunk
 * rows differ from an all-tiled run (no prompt given) and the tiled rows
 * equal it. A prefix evaluated for another prompt is kept only where its
 * rows agree. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_MAX 1060 /* the longer prompt */
#define N_GEN 4    /* generated tokens after it */
#define N_ALL (N_MAX + N_GEN)

static int32_t toks[N_ALL];
static char model_path[512], state_path[512];
static sl_model *model;
static int V;

static sl_session *session(int batch)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = N_ALL + 8;
    sp.n_batch_max = batch;
    sp.all_logits = true;
    sp.type_k = sp.type_v = SL_KV_F16;
    sl_session *s = NULL;
    sl_err err;
    if (sl_session_create(&s, model, &sp, &err)) fprintf(stderr, "  session: %s\n", err.msg);
    return s;
}

/* Evaluates toks[from..to) in batches of at most batch, copying each row's
 * logits to out (N_ALL x V, by position). false on failure. */
static bool eval_range(sl_session *s, int from, int to, int batch, float *out)
{
    sl_err err;
    for (int i = from; i < to;) {
        const int n = to - i < batch ? to - i : batch;
        if (sl_session_eval(s, toks + i, n, &err)) {
            fprintf(stderr, "  eval at %d: %s\n", i, err.msg);
            return false;
        }
        for (int j = 0; j < n; j++)
            memcpy(out + (size_t)(i + j) * V, sl_session_logits_at(s, j), sizeof(float) * V);
        i += n;
    }
    return true;
}

/* The prompt toks[0..np) given (np < 0: none), evaluated in batches of
 * batch from empty at the cuts cut[0..n_cut) too (each a batch boundary),
 * then N_GEN tokens one at a time (gen_batch 1) or in one batch. */
static float *run(int np, int batch, const int *cut, int n_cut, int gen_batch)
{
    const int n_prompt = np < 0 ? N_MAX : np;
    float *out = calloc((size_t)N_ALL * V, sizeof(float));
    sl_session *s = session(batch > N_GEN ? batch : N_GEN);
    bool ok = out && s;
    if (ok) sl_session_set_prompt(s, np);
    int at = 0;
    for (int c = 0; ok && c <= n_cut; c++) {
        const int to = c < n_cut ? cut[c] : n_prompt;
        ok = eval_range(s, at, to, batch, out);
        at = to;
    }
    if (ok) ok = eval_range(s, n_prompt, n_prompt + N_GEN, gen_batch, out);
    sl_session_free(s);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static size_t rows(int from, int to) { return sizeof(float) * (size_t)V * (size_t)(to - from); }

static bool same_rows(const float *a, const float *b, int from, int to)
{
    return !memcmp(a + (size_t)from * V, b + (size_t)from * V, rows(from, to));
}

/* Every row a prompt of np tokens (and its reply) gives, whatever the split. */
static void check_prompt(int np)
{
    const int cuts[] = {1, 300, 511, 512, 513, 1030, 1059};
    int cut[8], n_cut = 0;
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
        if (cuts[i] < np) cut[n_cut++] = cuts[i];
    const int last = np - 1;
    float *cold = run(np, 512, NULL, 0, 1);
    CHECK_MSG(cold != NULL, "prompt %d: the cold run failed", np);
    if (!cold) return;
    const int n_rows = np + N_GEN;
    const int batches[] = {100, 32, 7};
    for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
        float *b = run(np, batches[i], NULL, 0, 1);
        CHECK_MSG(b && same_rows(cold, b, 0, n_rows), "prompt %d: batches of %d differ from 512",
                  np, batches[i]);
        free(b);
    }
    float *split = run(np, 512, cut, n_cut, 1);
    CHECK_MSG(split && same_rows(cold, split, 0, n_rows), "prompt %d: evaluated in pieces "
              "(cut at 1, 300, 511, 512, 513, 1030, 1059) it differs", np);
    free(split);
    float *verify = run(np, 512, NULL, 0, N_GEN);
    CHECK_MSG(verify && same_rows(cold, verify, 0, n_rows), "prompt %d: the generated tokens as "
              "one drafted-verify batch differ from one at a time", np);
    free(verify);

    /* the heal: the prompt, cut back by one token, its last token again;
     * then a prefix captured in memory and saved to a file, restored into
     * fresh sessions and continued */
    sl_session *s = session(512), *r = session(512), *f = session(512);
    float *out = calloc((size_t)N_ALL * V, sizeof(float));
    bool ok = s && r && f && out;
    sl_err err;
    if (ok) {
        sl_session_set_prompt(s, np);
        ok = eval_range(s, 0, np, 512, out) && sl_session_truncate(s, last) == SL_OK &&
             eval_range(s, last, np, 512, out);
        CHECK_MSG(ok && same_rows(cold, out, last, np), "prompt %d: its last token evaluated "
                  "again differs", np);
    }
    sl_state *st = NULL;
    const int keep = np / 2 + 17;
    ok = ok && sl_state_capture(s, keep, &st, &err) == SL_OK &&
         sl_session_save(s, state_path, toks, keep, &err) == SL_OK;
    if (ok) {
        ok = sl_state_restore(r, st, keep, &err) == SL_OK;
        CHECK_MSG(ok && sl_session_set_prompt(r, np) == keep, "prompt %d: a restored prefix "
                  "is not kept whole", np);
        ok = ok && eval_range(r, keep, np + N_GEN, 7, out);
        CHECK_MSG(ok && same_rows(cold, out, keep, n_rows), "prompt %d: continued after a "
                  "prefix restored from memory it differs", np);
        int32_t got[N_MAX];
        ok = sl_session_load(f, state_path, got, N_MAX, &err) == keep;
        CHECK_MSG(ok && sl_session_set_prompt(f, np) == keep, "prompt %d: a prefix loaded "
                  "from a file is not kept whole", np);
        ok = ok && eval_range(f, keep, np + N_GEN, 100, out);
        CHECK_MSG(ok && same_rows(cold, out, keep, n_rows), "prompt %d: continued after a "
                  "prefix loaded from a file it differs", np);
    }
    CHECK_MSG(ok, "prompt %d: the heal or a restore failed", np);
    sl_state_free(st);
    sl_session_free(s);
    sl_session_free(r);
    sl_session_free(f);
    free(out);
    free(cold);
}

static int generate(void)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen3moe", "tiny-k", &err)) {
        fprintf(stderr, "synth: %s\n", err.msg);
        return -1;
    }
    c.type = SL_SYNTH_Q8_0;
    c.seed = 7;
    t_path(model_path, sizeof model_path, "attn_ubatch.gguf");
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, model_path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "mkmodel: %s\n", err.msg);
        return -1;
    }
    model = t_load_resident(model_path, 2);
    if (model) V = sl_model_n_vocab(model);
    return model ? 0 : -1;
}

TEST(splits_do_not_change_bits)
{
    check_prompt(N_MAX); /* 1060 mod 512 = 36: the last micro-batch one-chunk */
    check_prompt(700);   /* 188: every prompt row tiled */
}

TEST(both_kernels_occur)
{
    float *rule = run(N_MAX, 512, NULL, 0, 1), *tiled = run(-1, 512, NULL, 0, 1);
    CHECK(rule && tiled);
    if (rule && tiled) {
        CHECK_MSG(same_rows(rule, tiled, 0, 1024), "rows of the prompt's full micro-batches "
                  "are not the tiled bits");
        int n_tiled = 0;
        for (int p = 1024; p < N_ALL; p++) n_tiled += same_rows(rule, tiled, p, p + 1);
        CHECK_MSG(n_tiled == 0, "%d of the rows from 1024 on (a micro-batch of 36, then "
                  "generated) have the tiled bits: the one-chunk kernel was not taken", n_tiled);
    }
    free(rule);
    free(tiled);
}

/* A prefix evaluated for a prompt of 1,060 tokens: a prompt of 1,100 tiles
 * rows 1,024.. (its last micro-batch has 76), so only 1,024 rows are kept;
 * a prompt of 1,060 keeps all; one of 1,040 keeps 1,040 (its last
 * micro-batch of 16 one-chunk, as it was; its generated rows one-chunk too
 * but with the one-row products, which the rows of a micro-batch of 36 did
 * not take); one of 700 tiles rows up to 699 and would decode the rest; no
 * prompt tiles every row. */
TEST(set_prompt_keeps_the_rows_that_agree)
{
    sl_session *s = session(512);
    float *out = calloc((size_t)N_ALL * V, sizeof(float));
    bool ok = s && out;
    if (ok) {
        sl_session_set_prompt(s, N_MAX);
        ok = eval_range(s, 0, N_MAX, 512, out);
    }
    CHECK(ok);
    if (ok) {
        CHECK_EQ_INT(sl_session_set_prompt(s, 1100), 1024);
        CHECK_EQ_INT(sl_session_set_prompt(s, N_MAX), N_MAX);
        CHECK_EQ_INT(sl_session_set_prompt(s, 1040), 1040);
        CHECK_EQ_INT(sl_session_set_prompt(s, 700), 700);
        CHECK_EQ_INT(sl_session_set_prompt(s, -1), 1024);
    }
    sl_session_free(s);
    free(out);
}

int main(void)
{
    for (int i = 0; i < N_ALL; i++) toks[i] = (int32_t)((i * 7919 + 13) % 256);
    t_path(state_path, sizeof state_path, "attn_ubatch.state");
    if (generate() != 0) {
        CHECK_MSG(false, "cannot write or load the qwen3moe model");
        return TEST_REPORT();
    }
    RUN(splits_do_not_change_bits);
    RUN(both_kernels_occur);
    RUN(set_prompt_keeps_the_rows_that_agree);
    sl_model_free(model);
    remove(model_path);
    remove(state_path);
    return TEST_REPORT();
}
