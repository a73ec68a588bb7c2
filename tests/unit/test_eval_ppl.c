/* test_eval_ppl.c - perplexity plan, accumulator and output lines
 * (src/eval/ppl.c). Expected numbers are derived by hand in the comments. */
#include <math.h>
#include <stdint.h>

#include "eval/ppl.h"
#include "test.h"

TEST(uniform_distribution_has_perplexity_v)
{
    /* Equal logits over V tokens: p = 1/V for every target, NLL = ln V,
     * PPL = exp(ln V) = V whatever the logit value or the target. */
    enum { V = 1000 };
    static float logits[V];
    for (int i = 0; i < V; i++) logits[i] = 3.7f;
    sl_ppl acc;
    sl_ppl_init(&acc);
    sl_err err = {0};
    for (int t = 0; t < 50; t++)
        CHECK_EQ_INT(sl_ppl_add_logits(&acc, logits, V, (t * 37) % V, NULL, &err), SL_OK);
    CHECK_EQ_INT(acc.count, 50);
    CHECK_NEAR(sl_ppl_value(&acc), (double)V, 1e-9 * V);
    /* every NLL is the same: the variance is zero up to rounding (llama.cpp's
     * E[x^2] - E[x]^2 leaves ~1e-16), so the error is ~0 or undefined */
    double e = sl_ppl_stderr(&acc);
    CHECK_MSG(isnan(e) || e < 1e-3, "error %g", e);
    char line[128];
    sl_ppl_format_final(line, sizeof line, &acc);
    CHECK_STR_CONTAINS(line, "Final estimate: PPL = 1000.0000 +/- ");
}

TEST(hand_example_value_error_and_lines)
{
    /* logits ln1 ln2 ln3 ln4 -> p = .1 .2 .3 .4. Targets 3 and 0:
     * NLL = -ln .4 = 0.916291, -ln .1 = 2.302585; mean 1.609438 = ln 5, so
     * PPL = 5. var = mean(NLL^2) - mean^2 = ((2.302585-0.916291)/2)^2 =
     * 0.693147^2; error = 5 * sqrt(var / (2-1)) = 5 * 0.693147 = 3.465736. */
    const float l[4] = {0.0f, (float)log(2.0), (float)log(3.0), (float)log(4.0)};
    sl_ppl acc;
    sl_ppl_init(&acc);
    sl_err err = {0};
    double nll = 0;
    CHECK_EQ_INT(sl_ppl_add_logits(&acc, l, 4, 3, &nll, &err), SL_OK);
    CHECK_NEAR(nll, 0.916291, 1e-6);
    char line[128];
    sl_ppl_format_chunk(line, sizeof line, 1, &acc);
    CHECK(strcmp(line, "[1]2.5000,") == 0); /* exp(0.916291) = 1/.4 = 2.5 */
    CHECK_EQ_INT(sl_ppl_add_logits(&acc, l, 4, 0, &nll, &err), SL_OK);
    CHECK_NEAR(nll, 2.302585, 1e-6);
    CHECK_NEAR(sl_ppl_value(&acc), 5.0, 1e-6);
    CHECK_NEAR(sl_ppl_stderr(&acc), 3.465736, 1e-5);
    sl_ppl_format_chunk(line, sizeof line, 2, &acc);
    CHECK(strcmp(line, "[2]5.0000,") == 0);
    sl_ppl_format_final(line, sizeof line, &acc);
    CHECK_MSG(strcmp(line, "Final estimate: PPL = 5.0000 +/- 3.46574") == 0, "got '%s'", line);
}

TEST(add_nll_matches_add_logits)
{
    sl_ppl a, b;
    sl_ppl_init(&a);
    sl_ppl_init(&b);
    const float l[3] = {1.0f, 2.0f, 3.0f};
    double nll;
    sl_err err = {0};
    sl_ppl_add_logits(&a, l, 3, 1, &nll, &err);
    sl_ppl_add_nll(&b, nll);
    CHECK(a.nll == b.nll && a.nll2 == b.nll2 && a.count == b.count);
}

TEST(log_sum_exp_is_stable)
{
    /* 1000 and 1000: exp would overflow without the max shift;
     * answer 1000 + ln 2. With -inf entries they contribute nothing. */
    const float big[3] = {1000.0f, 1000.0f, -INFINITY};
    CHECK_NEAR(sl_log_sum_exp(big, 3), 1000.0 + log(2.0), 1e-9);
    const float tiny[2] = {-1000.0f, -1000.0f};
    CHECK_NEAR(sl_log_sum_exp(tiny, 2), -1000.0 + log(2.0), 1e-9);
    const float none[2] = {-INFINITY, -INFINITY};
    CHECK(sl_log_sum_exp(none, 2) == -INFINITY);
    const float bad[2] = {0.0f, NAN};
    CHECK(isnan(sl_log_sum_exp(bad, 2)));
}

TEST(bad_targets_and_logits_are_errors)
{
    const float l[3] = {0.0f, -INFINITY, 1.0f};
    sl_ppl acc;
    sl_ppl_init(&acc);
    sl_err err = {0};
    CHECK_EQ_INT(sl_ppl_add_logits(&acc, l, 3, 3, NULL, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "target token 3 is outside [0, 3)");
    CHECK_EQ_INT(sl_ppl_add_logits(&acc, l, 3, -1, NULL, &err), SL_EINVAL);
    /* the target has probability 0: infinite NLL would poison the mean */
    CHECK_EQ_INT(sl_ppl_add_logits(&acc, l, 3, 1, NULL, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "token 1");
    CHECK_EQ_INT(acc.count, 0);
}

TEST(plan_follows_llama_cpp_chunking)
{
    sl_ppl_plan p;
    sl_err err = {0};
    /* 1000 tokens, n_ctx 128: 1000/128 = 7 chunks (104 tokens dropped);
     * first = 64; scored per chunk = 128 - 1 - 64 = 63 */
    CHECK_EQ_INT(sl_ppl_plan_make(&p, 1000, 128, 0, &err), SL_OK);
    CHECK_EQ_INT(p.n_chunk, 7);
    CHECK_EQ_INT(p.first, 64);
    CHECK_EQ_INT(p.n_scored, 63);
    /* odd context 9: first = 4, scored = 9 - 1 - 4 = 4 */
    CHECK_EQ_INT(sl_ppl_plan_make(&p, 40, 9, 0, &err), SL_OK);
    CHECK_EQ_INT(p.n_chunk, 4);
    CHECK_EQ_INT(p.first, 4);
    CHECK_EQ_INT(p.n_scored, 4);
    /* --chunks 3 caps it */
    CHECK_EQ_INT(sl_ppl_plan_make(&p, 1000, 128, 3, &err), SL_OK);
    CHECK_EQ_INT(p.n_chunk, 3);
    /* llama.cpp requires 2 * n_ctx tokens */
    CHECK_EQ_INT(sl_ppl_plan_make(&p, 255, 128, 0, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "at least 256 tokens");
    CHECK_STR_CONTAINS(err.msg, "only 255");
    CHECK_EQ_INT(sl_ppl_plan_make(&p, 256, 128, 0, &err), SL_OK);
    CHECK_EQ_INT(p.n_chunk, 2);
    CHECK_EQ_INT(sl_ppl_plan_make(&p, 100, 2, 0, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "at least 3");
}

int main(void)
{
    RUN(uniform_distribution_has_perplexity_v);
    RUN(hand_example_value_error_and_lines);
    RUN(add_nll_matches_add_logits);
    RUN(log_sum_exp_is_stable);
    RUN(bad_targets_and_logits_are_errors);
    RUN(plan_follows_llama_cpp_chunking);
    return TEST_REPORT();
}
