/* test_draft_model.c - the draft-model drafter (engine/draft_model.c):
 * whatever history it is handed (growing by accepted guesses, turning away
 * from its guesses, cut back), its proposal is the draft model's own greedy
 * continuation of that history, as a fresh session computes it, also for
 * two drafters sharing one loaded draft model; the same vocabulary is
 * required. On the trained glm4moe: the f32 file as the
 * target, its Q8_0 quantisation as the draft. */
#include <string.h>

#include "engine/draft.h"
#include "engine/session.h"
#include "common/testutil.h"
#include "synth/synth.h"
#include "test.h"

#define TARGET "tests/data/trained/glm4moe-stories-f32.gguf"
#define DRAFT "tests/data/trained/glm4moe-stories-q8_0.gguf"
#define MAXH 48

static int32_t argmax(const float *x, int n)
{
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static sl_session *session(sl_model *m)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 8;
    sl_session *s = NULL;
    sl_err err = {0};
    if (sl_session_create(&s, m, &sp, &err)) fprintf(stderr, "  session: %s\n", err.msg);
    return s;
}

/* The draft model's greedy max tokens after hist[0..n), on a fresh session
 * evaluating the history token by token. */
static void greedy(sl_model *dm, const int32_t *hist, int n, int32_t *out, int max)
{
    sl_session *s = session(dm);
    sl_err err = {0};
    bool ok = s != NULL;
    for (int i = 0; ok && i < n; i++) ok = sl_session_eval(s, &hist[i], 1, &err) == 0;
    for (int k = 0; ok && k < max; k++) {
        out[k] = argmax(sl_session_logits(s), sl_model_n_vocab(dm));
        ok = sl_session_eval(s, &out[k], 1, &err) == 0;
    }
    CHECK_MSG(ok, "%s", err.msg);
    sl_session_free(s);
}

/* The proposals of a drafter made by sl_draft_model_create, or (shared)
 * of two drafters of two sessions made by sl_draft_model_create_on on one
 * loaded draft model, proposing in turn. */
static void check_proposals(bool shared)
{
    sl_model *tm = t_load_resident(TARGET, 2), *dm = t_load_resident(DRAFT, 2);
    sl_session *s = tm ? session(tm) : NULL, *s2 = tm && shared ? session(tm) : NULL;
    sl_draft_src *d = NULL, *d2 = NULL;
    sl_err err = {0};
    CHECK(tm && dm && s && (s2 || !shared));
    if (!s || !dm || (shared && !s2)) goto done;
    if (shared) {
        CHECK_MSG(sl_draft_model_create_on(&d, s, dm, &err) == 0 &&
                  sl_draft_model_create_on(&d2, s2, dm, &err) == 0, "%s", err.msg);
    } else {
        CHECK_MSG(sl_draft_model_create(&d, s, DRAFT, NULL, &err) == 0, "%s", err.msg);
    }
    if (!d || (shared && !d2)) goto done;
    sl_drafter dr = {.kind = SL_DRAFT_SRC, .src = d}, dr2 = {.kind = SL_DRAFT_SRC, .src = d2};
    int32_t hist[MAXH] = {1, 403, 297, 261}, out[6], out2[6], ref[6];
    int n = 4;
    /* 1: a prompt; 2: two guesses taken and a third turned away; 3: cut back
     * before the prompt's end; 4: the same history again */
    for (int round = 0; round < 4; round++) {
        const int k = sl_draft_propose(&dr, hist, n, out, 6);
        CHECK_EQ_INT(k, 6);
        greedy(dm, hist, n, ref, 6);
        CHECK_MSG(!memcmp(out, ref, sizeof out), "round %d: the proposal is not the draft "
                  "model's greedy continuation", round);
        if (shared) {
            CHECK_EQ_INT(sl_draft_propose(&dr2, hist, n, out2, 6), 6);
            CHECK_MSG(!memcmp(out2, ref, sizeof out2), "round %d: the second drafter's "
                      "proposal differs", round);
        }
        if (round == 0) {
            hist[n++] = out[0];
            hist[n++] = out[1];
            hist[n++] = out[2] == 5 ? 6 : 5;
        } else if (round == 1) {
            n = 2;
        }
    }
done:
    sl_draft_src_free(d);
    sl_draft_src_free(d2);
    sl_session_free(s);
    sl_session_free(s2);
    sl_model_free(dm);
    sl_model_free(tm);
}

TEST(proposals_are_the_draft_models_greedy_continuation)
{
    check_proposals(false);
}

TEST(drafters_sharing_a_draft_model_propose_the_same)
{
    check_proposals(true);
}

TEST(another_vocabulary_is_refused)
{
    /* a generated qwen3moe: another tokenizer than the trained file's */
    char path[512];
    sl_synth_config c;
    sl_err err = {0};
    t_path(path, sizeof path, "draft_model_other_vocab.gguf");
    bool ok = sl_synth_config_init(&c, "qwen3moe", "tiny", &err) == 0;
    c.type = SL_SYNTH_Q8_0;
    c.seed = 2;
    ok = ok && sl_synth_config_validate(&c, &err) == 0 &&
         sl_synth_write(&c, path, NULL, NULL, NULL, &err) == 0;
    CHECK_MSG(ok, "mkmodel: %s", err.msg);
    sl_model *tm = ok ? t_load_resident(TARGET, 2) : NULL;
    sl_session *s = tm ? session(tm) : NULL;
    sl_draft_src *d = NULL;
    const int rc = s ? sl_draft_model_create(&d, s, path, NULL, &err) : -1;
    CHECK_EQ_INT(rc, SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "vocabulary");
    CHECK(d == NULL);
    sl_session_free(s);
    sl_model_free(tm);
}

int main(void)
{
    RUN(proposals_are_the_draft_models_greedy_continuation);
    RUN(drafters_sharing_a_draft_model_propose_the_same);
    RUN(another_vocabulary_is_refused);
    return TEST_REPORT();
}
