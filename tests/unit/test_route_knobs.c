/* test_route_knobs.c - the lossy routing knobs (--n-expert-used,
 * --cache-route): the choice rule on ranks, that lowering the experts used
 * computes what a file with that top-k computes (the generator's weights do
 * not depend on the top-k), that --cache-route changes nothing on a
 * resident model and cuts misses on a streamed one, the cost counters, and
 * the refusals. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "engine/route_knobs.h"
#include "synth/synth.h"
#include "sluice.h"
#include "test.h"

#define N_TOK 24
#define BATCH 8
#define N_LAYER 3

static char path_k4[512], path_k2[512];

static int make_model(const char *path, int top_k)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen3moe", "tiny", &err)) return -1;
    c.type = SL_SYNTH_Q8_0;
    c.n_layer = N_LAYER;
    c.n_expert = 16;
    c.n_expert_used = top_k;
    c.seed = 5;
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Every logit of N_TOK tokens (prefill in batches of BATCH, then the rest
 * one by one), malloc'ed, or NULL; the model's knob and stream stats. */
static float *run(const char *path, const sl_model_params *mp, sl_knob_stats *ks,
                  sl_stream_stats *ss, sl_err *err)
{
    sl_model *m;
    if (sl_model_load(&m, path, mp, err)) return NULL;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = N_TOK + 1;
    sp.n_batch_max = BATCH;
    sp.all_logits = true;
    sl_session *s;
    if (sl_session_create(&s, m, &sp, err)) {
        sl_model_free(m);
        return NULL;
    }
    const int V = sl_model_n_vocab(m);
    float *out = malloc(sizeof(float) * (size_t)V * N_TOK);
    int32_t toks[N_TOK];
    for (int i = 0; i < N_TOK; i++) toks[i] = (int32_t)((i * 53 + 7) % V);
    int rc = 0;
    for (int i = 0; i < N_TOK && !rc;) {
        const int n = i < 16 ? BATCH : 1;
        rc = sl_session_eval(s, toks + i, n, err);
        for (int j = 0; j < n && !rc; j++)
            memcpy(out + (size_t)(i + j) * V, sl_session_logits_at(s, j), sizeof(float) * V);
        i += n;
    }
    if (ks) sl_model_knob_stats(m, ks);
    if (ss) sl_model_stream_stats(m, ss);
    sl_session_free(s);
    sl_model_free(m);
    if (rc) {
        free(out);
        return NULL;
    }
    return out;
}

static int n_vocab_of(const char *path)
{
    sl_model *m;
    sl_err err;
    sl_model_params mp = sl_model_default_params();
    mp.describe_only = true;
    if (sl_model_load(&m, path, &mp, &err)) return 0;
    const int v = sl_model_n_vocab(m);
    sl_model_free(m);
    return v;
}

TEST(pick_rule)
{
    int pick[8];
    /* ranks 2..7: 4, 6 and 7 cached; keep 2 of 4 -> 0 1 4 6, two taken for being cached */
    const bool c1[8] = {false, false, false, false, true, false, true, true};
    CHECK_EQ_INT(sl_route_pick(8, 2, 4, c1, pick), 2);
    CHECK(pick[0] == 0 && pick[1] == 1 && pick[2] == 4 && pick[3] == 6);
    /* nothing cached: the router's own top 4 */
    const bool c0[8] = {false};
    CHECK_EQ_INT(sl_route_pick(8, 2, 4, c0, pick), 0);
    CHECK(pick[0] == 0 && pick[1] == 1 && pick[2] == 2 && pick[3] == 3);
    /* one cached (rank 5): it, then the best-ranked uncached (2) */
    const bool c5[8] = {false, false, false, false, false, true, false, false};
    CHECK_EQ_INT(sl_route_pick(8, 2, 4, c5, pick), 1);
    CHECK(pick[0] == 0 && pick[1] == 1 && pick[2] == 2 && pick[3] == 5);
    /* everything cached: ranks in order, no change */
    const bool call[8] = {true, true, true, true, true, true, true, true};
    CHECK_EQ_INT(sl_route_pick(8, 0, 3, call, pick), 0);
    CHECK(pick[0] == 0 && pick[1] == 1 && pick[2] == 2);
    /* keep 0: only cached ones if there are enough */
    CHECK_EQ_INT(sl_route_pick(8, 0, 3, c1, pick), 3);
    CHECK(pick[0] == 4 && pick[1] == 6 && pick[2] == 7);
}

TEST(fewer_experts_is_the_smaller_top_k)
{
    sl_err err;
    const int V = n_vocab_of(path_k4);
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_OFF;
    float *ref = run(path_k2, &mp, NULL, NULL, &err); /* a file with top-k 2 */
    CHECK_MSG(ref, "%s", err.msg);
    float *exact = run(path_k4, &mp, NULL, NULL, &err);
    mp.n_expert_used = 2;
    sl_knob_stats ks;
    float *low = run(path_k4, &mp, &ks, NULL, &err);
    CHECK_MSG(low, "%s", err.msg);
    if (ref && low && exact) {
        CHECK(memcmp(ref, low, sizeof(float) * (size_t)V * N_TOK) == 0);
        CHECK(memcmp(exact, low, sizeof(float) * (size_t)V * N_TOK) != 0);
    }
    CHECK(ks.active);
    CHECK_EQ_INT(ks.n_expert_used, 2);
    CHECK_EQ_INT(ks.file_top_k, 4);
    CHECK_EQ_INT(ks.routings, (uint64_t)N_TOK * N_LAYER);
    CHECK_EQ_INT(ks.choices, (uint64_t)N_TOK * N_LAYER * 4);
    CHECK_EQ_INT(ks.changed, (uint64_t)N_TOK * N_LAYER * 2);
    CHECK_EQ_INT(ks.substituted, 0);
    /* the two best of four carry at least half of their weight, and not all */
    CHECK_MSG(ks.weight_kept >= 0.5 && ks.weight_kept < 1.0, "kept %g", ks.weight_kept);
    /* the same, streamed through a small cache: identical to resident */
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 5;
    float *st = run(path_k4, &mp, NULL, NULL, &err);
    CHECK_MSG(st, "%s", err.msg);
    if (st && low) CHECK(memcmp(st, low, sizeof(float) * (size_t)V * N_TOK) == 0);
    free(st);
    free(ref);
    free(exact);
    free(low);
}

TEST(cache_route_resident_changes_nothing)
{
    sl_err err;
    const int V = n_vocab_of(path_k4);
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_OFF;
    float *exact = run(path_k4, &mp, NULL, NULL, &err);
    mp.cache_route_keep = 1;
    mp.cache_route_from = 10;
    sl_knob_stats ks;
    float *cr = run(path_k4, &mp, &ks, NULL, &err);
    CHECK_MSG(cr, "%s", err.msg);
    if (exact && cr) CHECK(memcmp(exact, cr, sizeof(float) * (size_t)V * N_TOK) == 0);
    CHECK_EQ_INT(ks.changed, 0);
    CHECK_EQ_INT(ks.substituted, 0);
    CHECK(ks.weight_kept == 1.0);
    free(exact);
    free(cr);
}

TEST(cache_route_streamed_reads_less)
{
    sl_err err;
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 12; /* a quarter of the 48 experts */
    sl_stream_stats exact_ss, cr_ss;
    float *exact = run(path_k4, &mp, NULL, &exact_ss, &err);
    CHECK_MSG(exact, "%s", err.msg);
    mp.cache_route_keep = 2;
    mp.cache_route_from = 12;
    sl_knob_stats ks;
    float *cr = run(path_k4, &mp, &ks, &cr_ss, &err);
    CHECK_MSG(cr, "%s", err.msg);
    CHECK_MSG(ks.substituted > 0, "no expert taken for being cached");
    /* each expert taken instead of one of the exact top-4 replaces one choice */
    CHECK_EQ_INT(ks.changed, ks.substituted);
    CHECK_MSG(ks.weight_kept < 1.0 && ks.weight_kept > 0.3, "kept %g", ks.weight_kept);
    CHECK_MSG(cr_ss.misses < exact_ss.misses, "misses %llu, exact %llu",
              (unsigned long long)cr_ss.misses, (unsigned long long)exact_ss.misses);
    free(exact);
    free(cr);
}

TEST(refusals)
{
    sl_err err;
    sl_model *m = NULL;
    sl_model_params mp = sl_model_default_params();
    mp.n_expert_used = 5;
    CHECK(sl_model_load(&m, path_k4, &mp, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "can only be lowered");
    CHECK_STR_CONTAINS(err.msg, "1..4");
    mp.n_expert_used = 0;
    mp.cache_route_keep = 4; /* J must be below K = 4 */
    mp.cache_route_from = 8;
    CHECK(sl_model_load(&m, path_k4, &mp, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "0 <= J < K < M");
    mp.cache_route_keep = 1;
    mp.cache_route_from = 17; /* only 16 experts */
    CHECK(sl_model_load(&m, path_k4, &mp, &err) == SL_EINVAL);
    mp.n_expert_used = 3;
    mp.cache_route_from = 3; /* M must exceed the experts used */
    CHECK(sl_model_load(&m, path_k4, &mp, &err) == SL_EINVAL);
    CHECK(m == NULL);
}

int main(void)
{
    t_path(path_k4, sizeof path_k4, "knobs-k4.gguf");
    t_path(path_k2, sizeof path_k2, "knobs-k2.gguf");
    if (make_model(path_k4, 4) || make_model(path_k2, 2)) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(pick_rule);
    RUN(fewer_experts_is_the_smaller_top_k);
    RUN(cache_route_resident_changes_nothing);
    RUN(cache_route_streamed_reads_less);
    RUN(refusals);
    return TEST_REPORT();
}
