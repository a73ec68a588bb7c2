/* test_spec_sampling.c - speculative sampling against a guessed token
 * (sl_sampler_sample_pref, sample/sampler.h) on a six-token vocabulary
 * with fixed logits: the drawn tokens follow the sampler's own
 * distribution (softmax of the tempered survivors, worked out here in
 * double) within a chi-square bound at the 0.1 % level, whichever token is
 * guessed, with and without top-k truncation, a guess outside the
 * survivors never drawn; no guess draws the same ids as sl_sampler_sample;
 * the same seed gives the same ids. Fixed seeds: the figures do not move. */
#include <math.h>
#include <string.h>

#include "sample/sampler.h"
#include "test.h"

#define V 6
#define DRAWS 40000

static const float LOGITS[V] = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, -1.3f};

static sl_sampler make(float temp, int top_k, uint64_t seed)
{
    sl_sampler s;
    sl_sampler_config c = sl_sampler_config_default();
    c.temp = temp;
    c.top_k = top_k;
    c.top_p = 1.0f;
    c.min_p = 0.0f;
    c.repeat_last_n = 0;
    c.seed = seed;
    sl_err err;
    CHECK_EQ_INT(sl_sampler_init(&s, &c, V, &err), 0);
    return s;
}

/* The target: softmax(logit / temp) over the top_k highest (all: <= 0). */
static void target(float temp, int top_k, double *p)
{
    double sum = 0;
    for (int i = 0; i < V; i++) {
        int above = 0;
        for (int j = 0; j < V; j++) above += LOGITS[j] > LOGITS[i];
        p[i] = top_k > 0 && above >= top_k ? 0 : exp(LOGITS[i] / temp);
        sum += p[i];
    }
    for (int i = 0; i < V; i++) p[i] /= sum;
}

/* Chi-square of DRAWS draws guessing pref against the target; *hits the
 * draws that took pref, *outside the draws of a token the target gives 0. */
static double chi_square(float temp, int top_k, int32_t pref, uint64_t seed, long *hits,
                         long *outside)
{
    sl_sampler s = make(temp, top_k, seed);
    double p[V];
    long n[V] = {0};
    target(temp, top_k, p);
    sl_err err;
    for (int d = 0; d < DRAWS; d++) {
        const int id = sl_sampler_sample_pref(&s, LOGITS, pref, &err);
        if (id >= 0 && id < V) n[id]++;
    }
    sl_sampler_free(&s);
    double x2 = 0;
    *outside = 0;
    for (int i = 0; i < V; i++) {
        if (p[i] == 0) {
            *outside += n[i];
            continue;
        }
        const double e = DRAWS * p[i];
        x2 += (n[i] - e) * (n[i] - e) / e;
    }
    *hits = pref >= 0 ? n[pref] : 0;
    return x2;
}

TEST(draws_follow_the_target_whatever_the_guess)
{
    double p[V];
    target(1.0f, 0, p);
    for (int32_t pref = -1; pref < V; pref++) {
        long hits, outside;
        const double x2 = chi_square(1.0f, 0, pref, 100 + (uint64_t)pref, &hits, &outside);
        /* 5 degrees of freedom: P(X2 > 20.52) = 0.001 */
        CHECK_MSG(x2 < 20.52, "guess %d: chi-square %.2f", (int)pref, x2);
        CHECK_EQ_INT((int)outside, 0);
        if (pref >= 0) /* the guess kept about p(guess) of the time (4 sigma) */
            CHECK_MSG(fabs(hits - DRAWS * p[pref]) < 4 * sqrt(DRAWS * p[pref] * (1 - p[pref])),
                      "guess %d: kept %ld times, expected %.0f", (int)pref, hits, DRAWS * p[pref]);
    }
}

TEST(truncated_and_tempered)
{
    /* top-3 of the logits (tokens 3, 0, 1) at temp 0.7: 2 degrees of
     * freedom, P(X2 > 13.82) = 0.001 */
    const int32_t prefs[] = {3, 1, 5, 2};
    for (int k = 0; k < 4; k++) {
        long hits, outside;
        const double x2 = chi_square(0.7f, 3, prefs[k], 7 + (uint64_t)k, &hits, &outside);
        CHECK_MSG(x2 < 13.82, "guess %d: chi-square %.2f", (int)prefs[k], x2);
        CHECK_EQ_INT((int)outside, 0); /* a guess cut by top-k is never drawn */
    }
}

TEST(no_guess_is_the_plain_draw)
{
    sl_sampler a = make(0.9f, 0, 5), b = make(0.9f, 0, 5);
    sl_err err;
    float l[V];
    int same = 0;
    for (int d = 0; d < 2000; d++) {
        for (int i = 0; i < V; i++) l[i] = LOGITS[(i + d) % V] * (1 + 0.1f * (float)(d % 7));
        same += sl_sampler_sample(&a, l, &err) == sl_sampler_sample_pref(&b, l, -1, &err);
    }
    CHECK_EQ_INT(same, 2000);
    sl_sampler_free(&a);
    sl_sampler_free(&b);
}

TEST(same_seed_same_draws)
{
    sl_sampler a = make(1.0f, 0, 42), b = make(1.0f, 0, 42);
    sl_err err;
    int same = 0;
    for (int d = 0; d < 500; d++) {
        const int32_t pref = (int32_t)(d % V);
        same += sl_sampler_sample_pref(&a, LOGITS, pref, &err) ==
                sl_sampler_sample_pref(&b, LOGITS, pref, &err);
    }
    CHECK_EQ_INT(same, 500);
    /* greedy ignores the guess */
    sl_sampler g = make(0.0f, 0, 1);
    CHECK_EQ_INT(sl_sampler_sample_pref(&g, LOGITS, 5, &err), 3);
    sl_sampler_free(&a);
    sl_sampler_free(&b);
    sl_sampler_free(&g);
}

int main(void)
{
    RUN(draws_follow_the_target_whatever_the_guess);
    RUN(truncated_and_tempered);
    RUN(no_guess_is_the_plain_draw);
    RUN(same_seed_same_draws);
    return TEST_REPORT();
}
