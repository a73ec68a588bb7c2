/* test_out_rows.c - the rows whose logits are asked (engine/out_rows.h):
 * sl_session_set_outputs_from's contract, which rows a batch keeps and
 * where the others are dropped, and that dropping rows changes no kept
 * row's bits where no product depends on the row count. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "engine/out_rows.h"
#include "engine/session.h"
#include "ops/ops.h"
#include "test.h"

enum { N_TOK = 48, N_VOCAB_MAX = 1 << 16 };

static void fill_ids(int32_t *ids, int n, int vocab)
{
    for (int i = 0; i < n; i++) ids[i] = (int32_t)((i * 37 + 11) % vocab);
}

/* Every kept row of an all_logits session asking from position `from`,
 * evaluated in batches of `batch`, into out (N_TOK x V; rows before from
 * left untouched); checks the rows before from give NULL. */
static int eval_from(sl_model *m, const int32_t *ids, int from, int batch, float *out)
{
    const int V = sl_model_n_vocab(m);
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.all_logits = true;
    sp.n_batch_max = batch;
    sl_session *s = NULL;
    sl_err err = {0};
    if (sl_session_create(&s, m, &sp, &err)) return -1;
    sl_session_set_prompt(s, N_TOK);
    int rc = sl_session_set_outputs_from(s, from, &err);
    for (int p0 = 0; !rc && p0 < N_TOK; p0 += batch) {
        const int nb = N_TOK - p0 < batch ? N_TOK - p0 : batch;
        rc = sl_session_eval(s, ids + p0, nb, &err);
        for (int j = 0; !rc && j < nb; j++) {
            const float *l = sl_session_logits_at(s, j);
            if (p0 + j < from) {
                CHECK_MSG(l == NULL, "row %d before %d has logits", p0 + j, from);
            } else {
                CHECK_MSG(l != NULL, "row %d from %d has none", p0 + j, from);
                if (l) memcpy(out + (size_t)(p0 + j) * V, l, sizeof(float) * (size_t)V);
            }
        }
    }
    sl_session_free(s);
    return rc;
}

TEST(outputs_from_needs_all_logits)
{
    sl_model *m = t_load_tiny("qwen3moe", "or-q3.gguf", false);
    CHECK(m != NULL);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sl_session *s = NULL;
    sl_err err = {0};
    CHECK(sl_session_create(&s, m, &sp, &err) == SL_OK);
    CHECK(sl_session_set_outputs_from(s, 8, &err) == SL_EINVAL);
    sl_session_free(s);
    sp.all_logits = true;
    CHECK(sl_session_create(&s, m, &sp, &err) == SL_OK);
    CHECK(sl_session_set_outputs_from(s, -1, &err) == SL_EINVAL);
    CHECK(sl_session_set_outputs_from(s, 0, &err) == SL_OK);
    sl_session_free(s);
    sl_model_free(m);
}

/* qwen3moe drops the other rows past its last layer's mixer; the kept
 * rows' bits stay those of every-row evaluation (f32, 24 + 24 or 8-row
 * batches: counts whose forms agree), also from batches with no output
 * row at all, and so do gpt-oss's, which keeps them to the head. */
TEST(dropped_rows_leave_the_kept_ones_bit_identical)
{
    const char *archs[] = {"qwen3moe", "gpt-oss"};
    for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
        char file[64];
        snprintf(file, sizeof file, "or-%s.gguf", archs[a]);
        sl_model *m = t_load_tiny(archs[a], file, false);
        CHECK(m != NULL);
        if (!m) continue;
        const int V = sl_model_n_vocab(m);
        int32_t ids[N_TOK];
        fill_ids(ids, N_TOK, V);
        float *all = calloc((size_t)N_TOK * V, sizeof(float));
        float *part = calloc((size_t)N_TOK * V, sizeof(float));
        CHECK(all && part);
        const int batches[] = {N_TOK, 8};
        for (size_t b = 0; all && part && b < 2; b++) {
            CHECK(eval_from(m, ids, 0, N_TOK, all) == 0);
            CHECK(eval_from(m, ids, 24, batches[b], part) == 0);
            const size_t off = (size_t)24 * V, cnt = (size_t)(N_TOK - 24) * V;
            CHECK_MSG(!memcmp(all + off, part + off, cnt * sizeof(float)),
                      "%s, batches of %d: the kept rows changed", archs[a], batches[b]);
        }
        free(all);
        free(part);
        sl_model_free(m);
    }
}

/* A drafter's hook (never called here: the plan only looks at it). */
static int reads_every_row(void *ud, sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    (void)ud, (void)s, (void)tokens, (void)n, (void)err;
    return 0;
}

/* Which rows a batch keeps and where the others end, by session state. */
TEST(the_plan_follows_llama_cpp)
{
    sl_model *q3 = t_load_tiny("qwen3moe", "or-plan-q3.gguf", false);
    sl_model *go = t_load_tiny("gpt-oss", "or-plan-go.gguf", false);
    CHECK(q3 && go);
    if (!q3 || !go) goto out;
    sl_err err = {0};
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 16;
    sp.n_logit_rows = 4;
    sl_session *s = NULL, *g = NULL;
    CHECK(sl_session_create(&s, q3, &sp, &err) == SL_OK);
    CHECK(sl_session_create(&g, go, &sp, &err) == SL_OK);
    if (!s || !g) goto free_s;
    sl_out_rows o;
    /* a generation's prompt ending in the batch: its last row alone, as a
     * micro-batch of one (its forms bits are those the model heeds) */
    sl_session_set_prompt(s, 10);
    sl_session_batch_begin(s, 10);
    sl_out_rows_plan(s, 10, &o);
    CHECK(o.first == 9 && o.drop_in_layer);
    CHECK(o.form && (o.form[0] & (SL_MM_FORM_ONE | SL_MM_FORM_TAIL)) ==
                        ((SL_MM_FORM_ONE | SL_MM_FORM_TAIL) & s->mm_heed));
    /* gpt-oss: llama.cpp keeps every row to the head */
    sl_session_set_prompt(g, 10);
    sl_session_batch_begin(g, 10);
    sl_out_rows_plan(g, 10, &o);
    CHECK(o.first == 9 && !o.drop_in_layer);
    /* a prompt batch before the prompt's end: the last n_logit_rows, and
     * its rows keep their own forms */
    sl_session_set_prompt(s, 40);
    sl_session_batch_begin(s, 16);
    sl_out_rows_plan(s, 16, &o);
    CHECK(o.first == 12);
    CHECK(o.form && !memcmp(o.form, s->mm_form + 12, 4));
    /* a drafter reading every row's final state: nothing dropped */
    s->on_hidden = reads_every_row;
    sl_session_set_prompt(s, 10);
    sl_session_batch_begin(s, 10);
    sl_out_rows_plan(s, 10, &o);
    CHECK(o.first == 9 && !o.drop_in_layer);
    s->on_hidden = NULL;
free_s:
    sl_session_free(s);
    sl_session_free(g);
out:
    sl_model_free(q3);
    sl_model_free(go);
}

int main(void)
{
    RUN(outputs_from_needs_all_logits);
    RUN(dropped_rows_leave_the_kept_ones_bit_identical);
    RUN(the_plan_follows_llama_cpp);
    return TEST_REPORT();
}
