/* test_sample.c - the RNG and the sampler chain (src/sample/).
 *
 * Expected values come from published reference vectors (RNG) or are worked
 * out by hand in the comments (distributions, penalties); the test code that
 * re-derives a distribution is its own few lines, not the sampler's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/rng.h"
#include "sample/sampler.h"
#include "test.h"

TEST(splitmix64_reference_values)
{
    /* Published splitmix64 outputs for state 0 (Vigna's splitmix64.c). */
    uint64_t st = 0;
    CHECK(sl_splitmix64(&st) == 0xe220a8397b1dcdafull);
    CHECK(sl_splitmix64(&st) == 0x6e789e6aa1b965f4ull);
    CHECK(sl_splitmix64(&st) == 0x06c45d188009454full);
    CHECK(sl_splitmix64(&st) == 0xf88bb8a8724c81ecull);
}

TEST(xoshiro256ss_reference_values)
{
    /* State {1,2,3,4}: the ten outputs of the reference xoshiro256starstar.c
     * as quoted by the rand_xoshiro crate's `reference` test. */
    static const uint64_t want[10] = {
        11520ull, 0ull, 1509978240ull, 1215971899390074240ull,
        1216172134540287360ull, 607988272756665600ull, 16172922978634559625ull,
        8476171486693032832ull, 10595114339597558777ull, 2904607092377533576ull,
    };
    sl_rng r = {{1, 2, 3, 4}};
    for (int i = 0; i < 10; i++) CHECK_MSG(sl_rng_next(&r) == want[i], "output %d", i);
}

TEST(uniform_is_in_unit_interval_and_uses_top_53_bits)
{
    /* With state {1,2,3,4} the outputs are 11520, 0, 1509978240: u is the
     * value >> 11 times 2^-53, i.e. 5 * 2^-53 (11520 / 2048 = 5.6), 0, and
     * 737294 * 2^-53 (1509978240 / 2048 = 737294.06). */
    sl_rng r = {{1, 2, 3, 4}};
    CHECK(sl_rng_uniform(&r) == 5.0 * 0x1.0p-53);
    CHECK(sl_rng_uniform(&r) == 0.0);
    CHECK(sl_rng_uniform(&r) == 737294.0 * 0x1.0p-53);
    sl_rng_seed(&r, 99);
    for (int i = 0; i < 100000; i++) {
        double u = sl_rng_uniform(&r);
        if (!(u >= 0.0 && u < 1.0)) { CHECK(u >= 0.0 && u < 1.0); break; }
    }
}

static sl_sampler_config cfg_plain(void)
{
    sl_sampler_config c = sl_sampler_config_default();
    c.top_k = 0;
    c.top_p = 1.0f;
    c.min_p = 0.0f;
    c.temp = 1.0f;
    return c;
}

TEST(greedy_picks_argmax_lowest_id_on_ties)
{
    sl_sampler s;
    sl_sampler_config c = sl_sampler_config_default();
    c.temp = 0.0f;
    sl_err err = {0};
    CHECK_EQ_INT(sl_sampler_init(&s, &c, 6, &err), SL_OK);
    const float a[6] = {1.0f, 3.0f, -2.0f, 3.0f, 2.5f, -INFINITY};
    CHECK_EQ_INT(sl_sampler_sample(&s, a, &err), 1); /* ids 1 and 3 tie at 3.0 */
    const float b[6] = {-5.0f, -4.0f, -1.0f, -3.0f, -1.0f, -2.0f};
    CHECK_EQ_INT(sl_sampler_sample(&s, b, &err), 2); /* 2 and 4 tie at -1.0 */
    sl_sampler_free(&s);

    c.temp = -1.0f; /* any temp <= 0 is greedy */
    CHECK_EQ_INT(sl_sampler_init(&s, &c, 6, &err), SL_OK);
    CHECK_EQ_INT(sl_sampler_sample(&s, a, &err), 1);
    sl_sampler_free(&s);
}

/* Small deterministic generator for test inputs only (Numerical Recipes LCG). */
static uint32_t lcg(uint32_t *st)
{
    *st = *st * 1664525u + 1013904223u;
    return *st;
}

TEST(top_k_one_equals_greedy)
{
    enum { NV = 300 };
    float logits[NV];
    uint32_t st = 12345;
    sl_sampler_config g = cfg_plain();
    g.temp = 0.0f;
    sl_sampler_config k1 = cfg_plain();
    k1.top_k = 1;
    k1.temp = 1.3f;
    k1.top_p = 0.5f;
    k1.min_p = 0.2f;
    sl_sampler sg, sk;
    sl_err err = {0};
    CHECK_EQ_INT(sl_sampler_init(&sg, &g, NV, &err), SL_OK);
    CHECK_EQ_INT(sl_sampler_init(&sk, &k1, NV, &err), SL_OK);
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < NV; i++)
            /* coarse values (multiples of 1/8) so ties really happen */
            logits[i] = (float)((int)(lcg(&st) % 64u) - 32) / 8.0f;
        int a = sl_sampler_sample(&sg, logits, &err);
        int b = sl_sampler_sample(&sk, logits, &err);
        /* reference argmax written here: first index of the maximum */
        int ref = 0;
        for (int i = 1; i < NV; i++)
            if (logits[i] > logits[ref]) ref = i;
        CHECK_EQ_INT(a, ref);
        CHECK_EQ_INT(b, ref);
    }
    sl_sampler_free(&sg);
    sl_sampler_free(&sk);
}

static int draw_seq(uint64_t seed, int *out, int n)
{
    static const float logits[5] = {0.1f, 0.4f, -0.2f, 0.3f, 0.0f};
    sl_sampler_config c = cfg_plain();
    c.seed = seed;
    sl_sampler s;
    sl_err err = {0};
    if (sl_sampler_init(&s, &c, 5, &err)) return -1;
    for (int i = 0; i < n; i++) out[i] = sl_sampler_sample(&s, logits, &err);
    sl_sampler_reset(&s);
    int same_after_reset = 1;
    for (int i = 0; i < n; i++)
        if (sl_sampler_sample(&s, logits, &err) != out[i]) same_after_reset = 0;
    sl_sampler_free(&s);
    return same_after_reset;
}

TEST(seeded_sequences_reproduce_and_differ_by_seed)
{
    enum { N = 200 };
    int a[N], b[N], c[N];
    CHECK_EQ_INT(draw_seq(7, a, N), 1); /* reset rewinds to the same stream */
    CHECK_EQ_INT(draw_seq(7, b, N), 1);
    CHECK_EQ_INT(draw_seq(8, c, N), 1);
    int same_ab = 1, diff_ac = 0;
    for (int i = 0; i < N; i++) {
        if (a[i] != b[i]) same_ab = 0;
        if (a[i] != c[i]) diff_ac++;
        CHECK(a[i] >= 0 && a[i] < 5);
    }
    CHECK(same_ab);
    /* five tokens with similar probabilities: two independent streams agree
     * on a draw with probability ~0.2, so 200 draws differ in ~160 places */
    CHECK_MSG(diff_ac > 100, "seeds 7 and 8 differ in only %d of %d draws", diff_ac, N);
}

/* Draws n tokens and checks each frequency against want[] within 5 sigma
 * (binomial standard deviation), and that zero-probability tokens never
 * appear. Deterministic: the seed is fixed. */
static void check_frequencies(const sl_sampler_config *c, const float *logits, int nv,
                              const double *want, int n_draws)
{
    sl_sampler s;
    sl_err err = {0};
    CHECK_EQ_INT(sl_sampler_init(&s, c, nv, &err), SL_OK);
    int hist[16] = {0};
    for (int i = 0; i < n_draws; i++) {
        int id = sl_sampler_sample(&s, logits, &err);
        if (id < 0 || id >= nv) { CHECK_MSG(0, "bad id %d", id); break; }
        hist[id]++;
    }
    for (int i = 0; i < nv; i++) {
        double f = (double)hist[i] / n_draws;
        if (want[i] == 0.0) {
            CHECK_MSG(hist[i] == 0, "token %d drawn %d times, expected never", i, hist[i]);
        } else {
            double sigma = sqrt(want[i] * (1.0 - want[i]) / n_draws);
            CHECK_MSG(fabs(f - want[i]) <= 5.0 * sigma,
                      "token %d: frequency %.5f, expected %.5f (5 sigma = %.5f)", i, f,
                      want[i], 5.0 * sigma);
        }
    }
    sl_sampler_free(&s);
}

/* softmax(l/T) restricted to keep[] (the test's own arithmetic). */
static void restricted_softmax(const float *l, const int *keep, int nv, double t, double *out)
{
    double mx = -INFINITY, sum = 0.0;
    for (int i = 0; i < nv; i++)
        if (keep[i] && l[i] > mx) mx = l[i];
    for (int i = 0; i < nv; i++) {
        out[i] = keep[i] ? exp((l[i] - mx) / t) : 0.0;
        sum += out[i];
    }
    for (int i = 0; i < nv; i++) out[i] /= sum;
}

TEST(distribution_top_k_top_p_min_p_temperature)
{
    /* logits (sorted by id already): 2, 1.5, 1, .5, 0, -.5, -1, -3
     * top_k = 6 keeps ids 0..5. T=1 softmax over them: exps 7.389056,
     * 4.481689, 2.718282, 1.648721, 1, 0.606531 (sum 17.844279) ->
     * p = .41409 .25115 .15233 .09239 .05604 .03399; cumulative .41409
     * .66524 .81757 .90996 (< .95) .96600 (>= .95): top_p = 0.95 keeps ids
     * 0..4. min_p = 0.15 keeps logit >= 2 + ln .15 = 0.1029: ids 0..3.
     * T = 0.7: w = exp((l-2)/.7) = 1, .489542, .239651, .117319
     * (sum 1.846512) -> p = .541559 .265118 .129786 .063536. */
    const float l[8] = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, -3.0f};
    sl_sampler_config c = cfg_plain();
    c.top_k = 6;
    c.top_p = 0.95f;
    c.min_p = 0.15f;
    c.temp = 0.7f;
    c.seed = 1;
    const int keep[8] = {1, 1, 1, 1, 0, 0, 0, 0};
    double want[8];
    restricted_softmax(l, keep, 8, 0.7, want);
    CHECK_NEAR(want[0], 0.541559, 1e-5); /* the test's arithmetic = the hand values */
    CHECK_NEAR(want[1], 0.265118, 1e-5);
    CHECK_NEAR(want[2], 0.129786, 1e-5);
    CHECK_NEAR(want[3], 0.063536, 1e-5);
    check_frequencies(&c, l, 8, want, 100000);
}

TEST(distribution_top_p_alone_sorts_full_vocab)
{
    /* Same logits, no top-k, no min-p, T = 1. Softmax over all 8 (sum
     * 18.261945): .404614 .245412 .148850 .090282 .054759 .033213 .020145
     * .002726; cumulative .404614 .650026 .798876 (< .8) .889158 -> top_p =
     * 0.8 keeps ids 0..3; renormalised (sum 16.237748): .455055 .276004
     * .167404 .101537. The ids are permuted so sorting is really needed:
     * id -> logit below, so logits 2, 1.5, 1, .5 are ids 6, 0, 3, 5. */
    const float l[8] = {1.5f, -3.0f, 0.0f, 1.0f, -1.0f, 0.5f, 2.0f, -0.5f};
    sl_sampler_config c = cfg_plain();
    c.top_p = 0.8f;
    c.seed = 2;
    const double want[8] = {0.276004, 0, 0, 0.167404, 0, 0.101537, 0.455055, 0};
    double mine[8];
    const int keep[8] = {1, 0, 0, 1, 0, 1, 1, 0};
    restricted_softmax(l, keep, 8, 1.0, mine);
    for (int i = 0; i < 8; i++) CHECK_NEAR(mine[i], want[i], 1e-5);
    check_frequencies(&c, l, 8, want, 100000);
}

TEST(distribution_top_p_with_min_p_without_top_k)
{
    /* id -> logit: -.5 2 -3 1 0 1.5 -1 .5. min_p = 0.1: logit >= 2 + ln .1 =
     * -0.3026 keeps logits 2 1.5 1 .5 0 (5 tokens). top_p = 0.95 on the T=1
     * softmax of all 8 (values above): cumulative reaches .943917 after 5
     * and .977130 after 6, so it keeps 6 tokens (down to -0.5); min-p's 5 is
     * the shorter. T = 1.5: w = exp((l-2)/1.5) = 1 .716531 .513417 .367879
     * .263597 (sum 2.861424) -> .349476 .250411 .179427 .128565 .092121 for
     * logits 2 1.5 1 .5 0 = ids 1 5 3 7 4. */
    const float l[8] = {-0.5f, 2.0f, -3.0f, 1.0f, 0.0f, 1.5f, -1.0f, 0.5f};
    sl_sampler_config c = cfg_plain();
    c.top_p = 0.95f;
    c.min_p = 0.1f;
    c.temp = 1.5f;
    c.seed = 3;
    const double want[8] = {0, 0.349476, 0, 0.179427, 0.092121, 0.250411, 0, 0.128565};
    check_frequencies(&c, l, 8, want, 100000);
}

TEST(distribution_top_k_alone_and_min_p_alone)
{
    /* top_k = 3 on 2 1.5 1 .5 ...: softmax of 2 1.5 1 at T=1: 7.389056
     * 4.481689 2.718282 (sum 14.589027) -> .506480 .307196 .186324. */
    const float l[8] = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, -3.0f};
    sl_sampler_config c = cfg_plain();
    c.top_k = 3;
    c.seed = 4;
    const double want_k[8] = {0.506480, 0.307196, 0.186324, 0, 0, 0, 0, 0};
    check_frequencies(&c, l, 8, want_k, 100000);

    /* min_p = 0.3: logit >= 2 + ln .3 = 0.7960 keeps 2 1.5 1 -> the same
     * three tokens at T = 2: exp(0) exp(-.25) exp(-.5) = 1 .778801 .606531
     * (sum 2.385332) -> .419228 .326497 .254275. */
    c = cfg_plain();
    c.min_p = 0.3f;
    c.temp = 2.0f;
    c.seed = 5;
    const double want_m[8] = {0.419228, 0.326497, 0.254275, 0, 0, 0, 0, 0};
    check_frequencies(&c, l, 8, want_m, 100000);
}

TEST(penalties_follow_the_formula)
{
    /* repeat 2.0, presence 0.5, frequency 0.25, last_n 3. Accept 2, 3, 1, 3:
     * the ring keeps the last three (3, 1, 3), so id 2 has left it.
     *   id 0:  2.0 untouched
     *   id 1: -1.0 (count 1): negative -> *2 = -2.0; - (1*.25 + .5) = -2.75
     *   id 2:  0.5 untouched (evicted)
     *   id 3:  3.0 (count 2): positive -> /2 = 1.5; - (2*.25 + .5) = 0.5
     *   id 4: -2.0 untouched */
    sl_sampler_config c = cfg_plain();
    c.repeat_penalty = 2.0f;
    c.presence_penalty = 0.5f;
    c.frequency_penalty = 0.25f;
    c.repeat_last_n = 3;
    c.temp = 0.0f;
    sl_sampler s;
    sl_err err = {0};
    CHECK_EQ_INT(sl_sampler_init(&s, &c, 5, &err), SL_OK);
    const int acc[4] = {2, 3, 1, 3};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(sl_sampler_accept(&s, acc[i], &err), SL_OK);
    const float l[5] = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
    sl_sampler_cand cand[5];
    for (int i = 0; i < 5; i++) cand[i] = (sl_sampler_cand){i, l[i]};
    sl_sampler_apply_penalties(&s, cand);
    CHECK(cand[0].logit == 2.0f);
    CHECK(cand[1].logit == -2.75f);
    CHECK(cand[2].logit == 0.5f);
    CHECK(cand[3].logit == 0.5f);
    CHECK(cand[4].logit == -2.0f);
    /* greedy after penalties: id 0 (2.0) now beats id 3 (0.5) */
    CHECK_EQ_INT(sl_sampler_sample(&s, l, &err), 0);
    /* the caller's logits are not modified */
    CHECK(l[3] == 3.0f);
    /* reset forgets the history: id 3 wins again */
    sl_sampler_reset(&s);
    CHECK_EQ_INT(sl_sampler_sample(&s, l, &err), 3);
    sl_sampler_free(&s);
}

TEST(repeat_penalty_alone_matches_llama_cpp_sign_rule)
{
    /* repeat 1.5 only, ids 0 and 1 seen: 3.0 -> 2.0, -3.0 -> -4.5, and a
     * zero logit stays 0 (0 * 1.5). */
    sl_sampler_config c = cfg_plain();
    c.repeat_penalty = 1.5f;
    c.repeat_last_n = 64;
    sl_sampler s;
    sl_err err = {0};
    CHECK_EQ_INT(sl_sampler_init(&s, &c, 4, &err), SL_OK);
    sl_sampler_accept(&s, 0, &err);
    sl_sampler_accept(&s, 1, &err);
    sl_sampler_accept(&s, 2, &err);
    sl_sampler_accept(&s, 1, &err); /* repeats do not compound the factor */
    sl_sampler_cand cand[4] = {{0, 3.0f}, {1, -3.0f}, {2, 0.0f}, {3, 1.0f}};
    sl_sampler_apply_penalties(&s, cand);
    CHECK(cand[0].logit == 2.0f);
    CHECK(cand[1].logit == -4.5f);
    CHECK(cand[2].logit == 0.0f);
    CHECK(cand[3].logit == 1.0f);
    sl_sampler_free(&s);
}

TEST(errors_are_reported)
{
    sl_sampler s;
    sl_err err = {0};
    sl_sampler_config c = sl_sampler_config_default();
    c.top_p = 0.0f;
    CHECK_EQ_INT(sl_sampler_init(&s, &c, 10, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "top_p");
    sl_sampler_free(&s);
    c = sl_sampler_config_default();
    c.repeat_last_n = -1;
    CHECK_EQ_INT(sl_sampler_init(&s, &c, 10, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "repeat_last_n");
    c = sl_sampler_config_default();
    CHECK_EQ_INT(sl_sampler_init(&s, &c, 0, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "n_vocab");

    CHECK_EQ_INT(sl_sampler_init(&s, &c, 4, &err), SL_OK);
    float l[4] = {0.0f, NAN, 1.0f, 2.0f};
    CHECK_EQ_INT(sl_sampler_sample(&s, l, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "token 1 is NaN");
    float m[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    CHECK_EQ_INT(sl_sampler_sample(&s, m, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "-inf");
    CHECK_EQ_INT(sl_sampler_accept(&s, 4, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "outside [0, 4)");
    CHECK_EQ_INT(sl_sampler_accept(&s, -1, &err), SL_EINVAL);
    sl_sampler_free(&s);
}

TEST(masked_tokens_are_never_drawn)
{
    /* -inf logits (masked tokens) have probability 0 under every config. */
    const float l[6] = {-INFINITY, 0.0f, -INFINITY, 0.0f, -INFINITY, 0.0f};
    const double want[6] = {0, 1.0 / 3, 0, 1.0 / 3, 0, 1.0 / 3};
    sl_sampler_config c = cfg_plain();
    c.seed = 6;
    check_frequencies(&c, l, 6, want, 30000);
    c.top_p = 0.9f; /* full sort with -inf present */
    check_frequencies(&c, l, 6, want, 30000);
}

static int cmp_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

TEST(top_p_nucleus_is_exact_on_a_large_vocab)
{
    /* 1000 distinct logits 0.00 .. 9.99 (permuted over ids). The nucleus
     * for top_p is computed here the textbook way: sort descending, add
     * softmax probabilities until the sum reaches top_p. The sampler must
     * keep exactly that set: with temp = 1000 the survivors are drawn
     * almost uniformly, so 20000 draws hit each of the <= ~230 members ~90
     * times or more (P(miss) < e^-80), and no other token may ever appear. The
     * mass spans several 1/8-nat buckets, so this checks the bucketed
     * top-p against a full sort. */
    enum { V = 1000 };
    static float l[V], sorted[V];
    for (int i = 0; i < V; i++) l[i] = (float)((i * 37) % V) / 100.0f;
    memcpy(sorted, l, sizeof l);
    qsort(sorted, V, sizeof sorted[0], cmp_desc);
    const float ps[2] = {0.9f, 0.5f};
    for (int pi = 0; pi < 2; pi++) {
        double z = 0, cum = 0;
        for (int i = 0; i < V; i++) z += exp(sorted[i] - sorted[0]);
        int keep = 0;
        while (keep < V) {
            cum += exp(sorted[keep] - sorted[0]) / z;
            keep++;
            if (cum >= ps[pi]) break;
        }
        /* the cut is not a rounding coin-flip: the sum before it is well
         * below top_p */
        CHECK(cum - exp(sorted[keep - 1] - sorted[0]) / z < ps[pi] - 1e-6);
        const float cutoff = sorted[keep - 1];
        sl_sampler_config c = cfg_plain();
        c.top_p = ps[pi];
        c.temp = 1000.0f;
        c.seed = 11 + (uint64_t)pi;
        sl_sampler s;
        sl_err err = {0};
        CHECK_EQ_INT(sl_sampler_init(&s, &c, V, &err), SL_OK);
        static int hits[V];
        memset(hits, 0, sizeof hits);
        for (int d = 0; d < 20000; d++) {
            int id = sl_sampler_sample(&s, l, &err);
            if (id < 0 || id >= V) { CHECK(0); break; }
            hits[id]++;
        }
        int members = 0, bad = 0, missed = 0;
        for (int i = 0; i < V; i++) {
            if (l[i] >= cutoff) {
                members++;
                if (!hits[i]) missed++;
            } else if (hits[i]) {
                bad++;
            }
        }
        CHECK_EQ_INT(members, keep);
        CHECK_MSG(missed == 0 && bad == 0, "top_p %.2f: %d members never drawn, %d outsiders drawn",
                  (double)ps[pi], missed, bad);
        sl_sampler_free(&s);
    }
}

int main(void)
{
    RUN(splitmix64_reference_values);
    RUN(xoshiro256ss_reference_values);
    RUN(uniform_is_in_unit_interval_and_uses_top_53_bits);
    RUN(greedy_picks_argmax_lowest_id_on_ties);
    RUN(top_k_one_equals_greedy);
    RUN(seeded_sequences_reproduce_and_differ_by_seed);
    RUN(distribution_top_k_top_p_min_p_temperature);
    RUN(distribution_top_p_alone_sorts_full_vocab);
    RUN(distribution_top_p_with_min_p_without_top_k);
    RUN(distribution_top_k_alone_and_min_p_alone);
    RUN(top_p_nucleus_is_exact_on_a_large_vocab);
    RUN(penalties_follow_the_formula);
    RUN(repeat_penalty_alone_matches_llama_cpp_sign_rule);
    RUN(errors_are_reported);
    RUN(masked_tokens_are_never_drawn);
    return TEST_REPORT();
}
