/* test_spec_policy.c - the draft-length policy (engine/spec_policy.h) fed
 * made-up step times and outcomes: plain steps first to measure T(0), and
 * no draft before a guess is seen to hold; a cheap verify with drafts that
 * hold keeps drafting and lengthens it; a dear one with drafts that fail
 * switches off, with no probes while unverified guesses keep failing, and
 * guesses that hold again bring a re-measure within 64 steps; a plain step
 * every 32 verify steps; the expected gain worked by hand; --draft-always's
 * lengths follow the last outcome only; the drafter's own time in the first
 * guess of T; probes spaced by what they cost (every step when free), none
 * that cost while no guess could pay; re-measures ever further apart; a
 * preempted step's time clipped to twice the average. */
#include "engine/spec_policy.h"
#include "test.h"

/* Feeds n plain steps of t seconds. */
static void plain(sl_spec_policy *p, int n, double t)
{
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(sl_spec_policy_len(p), 0);
        sl_spec_policy_record(p, 0, 0, t);
    }
}

TEST(plain_steps_first)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 8, false);
    sl_spec_policy_observe(&p, 2, 2); /* guesses hold, but T(0) is unknown */
    CHECK_EQ_INT(sl_spec_policy_len(&p), 0);
    sl_spec_policy_record(&p, 0, 0, -1); /* not timed: does not count */
    CHECK_EQ_INT(sl_spec_policy_len(&p), 0);
    sl_spec_policy_record(&p, 0, 0, 0.010);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 0);
    sl_spec_policy_record(&p, 0, 0, 0.010);
    CHECK(sl_spec_policy_len(&p) >= 1);
}

TEST(no_draft_before_a_guess_holds)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 8, false);
    plain(&p, 2, 0.010);
    /* a = 0.5 and T(1) = 1.5 T(0) assumed: a gain of 1, under the margin */
    CHECK_NEAR(sl_spec_policy_gain(&p, 1), 1.0, 1e-12);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 0);
    sl_spec_policy_observe(&p, 1, 1); /* a1 = 0.65 */
    CHECK_NEAR(sl_spec_policy_gain(&p, 1), 1.65 / 1.5, 1e-12);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 1); /* E(2) / T(2) = 2.0725 / 2: less */
}

TEST(gain_by_hand)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 8, false);
    plain(&p, 2, 0.010);
    sl_spec_policy_record(&p, 1, 1, 0.015);
    /* a1 = 0.5 + 0.3 (1 - 0.5) = 0.65: E(1) = 1.65, T(1) = 15 ms */
    CHECK_NEAR(sl_spec_policy_gain(&p, 1), 1.65 * 0.010 / 0.015, 1e-12);
    /* T(2) extrapolated: 10 + 2 x 5 ms; a2 taken as a1: E(2) = 1 + 0.65 + 0.65^2 */
    CHECK_NEAR(sl_spec_policy_gain(&p, 2), (1 + 0.65 + 0.65 * 0.65) * 0.010 / 0.020, 1e-12);
    CHECK_NEAR(sl_spec_policy_gain(&p, 9), 0.0, 0); /* past max */
}

TEST(cheap_and_holding_drafts_grow)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 8, false);
    plain(&p, 2, 0.010);
    sl_spec_policy_observe(&p, 1, 1);
    int k = sl_spec_policy_len(&p), longest = 0;
    for (int step = 0; step < 20; step++) {
        CHECK(k >= 1);
        sl_spec_policy_record(&p, k, k, 0.010 + 0.001 * k); /* all hold; 10 % a draft */
        longest = k > longest ? k : longest;
        k = sl_spec_policy_len(&p);
    }
    CHECK_EQ_INT(longest, 8);
    CHECK_EQ_INT((int)p.switches_off, 0);
}

TEST(dear_and_failing_drafts_switch_off_until_guesses_hold)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 8, false);
    plain(&p, 2, 0.010);
    sl_spec_policy_observe(&p, 1, 1);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 1);
    sl_spec_policy_record(&p, 1, 0, 0.020); /* two positions cost 2x; the draft failed */
    /* a1 = 0.455: E(1) / 2 < 1: off */
    CHECK_EQ_INT(sl_spec_policy_len(&p), 0);
    CHECK_EQ_INT((int)p.switches_off, 1);
    int drafts = 0;
    for (int i = 0; i < 200; i++) {
        sl_spec_policy_record(&p, 0, 0, 0.010);
        sl_spec_policy_observe(&p, 1, 0); /* unverified guesses fail */
        drafts += sl_spec_policy_len(&p) > 0;
    }
    CHECK_EQ_INT(drafts, 0); /* no probes */
    /* guesses hold again, but T(1) = 2 T(0) says no: a re-measure comes */
    int wait = 0;
    for (;;) {
        sl_spec_policy_record(&p, 0, 0, 0.010);
        sl_spec_policy_observe(&p, 1, 1);
        if (sl_spec_policy_len(&p) > 0 || ++wait > 100) break;
    }
    CHECK(wait <= 64);
    sl_spec_policy_record(&p, 1, 1, 0.012); /* cheaper now: T(1) = 18 ms */
    /* while guesses keep holding, a1 rises until 2 positions pay */
    int on = 0;
    for (int i = 0; i < 8 && !on; i++) {
        sl_spec_policy_record(&p, 0, 0, 0.010);
        sl_spec_policy_observe(&p, 1, 1);
        on = sl_spec_policy_len(&p) > 0;
    }
    CHECK(on);
    CHECK(sl_spec_policy_gain(&p, 1) >= 1.02);
}

TEST(plain_step_every_32_verify_steps)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 4, false);
    plain(&p, 2, 0.010);
    sl_spec_policy_observe(&p, 1, 1);
    int verify = 0;
    while (verify < 40) {
        const int k = sl_spec_policy_len(&p);
        if (k == 0) break;
        sl_spec_policy_record(&p, k, k, 0.011);
        verify++;
    }
    CHECK_EQ_INT(verify, 32);
    sl_spec_policy_record(&p, 0, 0, 0.010);
    CHECK(sl_spec_policy_len(&p) > 0);
}

TEST(always_follows_the_last_outcome)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 8, true);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 8); /* no plain steps first */
    sl_spec_policy_record(&p, 8, 2, 1.0); /* however dear */
    CHECK_EQ_INT(sl_spec_policy_len(&p), 3); /* the part that held, plus one */
    sl_spec_policy_record(&p, 3, 3, 1.0);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 6); /* twice, when all held */
    sl_spec_policy_record(&p, 6, 6, 1.0);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 8); /* capped by max */
    sl_spec_policy_init(&p, 99, true);
    CHECK_EQ_INT(sl_spec_policy_len(&p), SL_SPEC_MAX);
}

TEST(drafter_time_in_the_first_guess)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 8, false);
    plain(&p, 2, 0.010);
    sl_spec_policy_observe(&p, 1, 1); /* a1 = 0.65 */
    CHECK_NEAR(sl_spec_policy_gain(&p, 1), 1.65 / 1.5, 1e-12);
    sl_spec_policy_probe_cost(&p, 2, 0.010); /* 5 ms a guess */
    /* T(1) = 10 (1 + 0.5) + 5 ms */
    CHECK_NEAR(sl_spec_policy_gain(&p, 1), 1.65 * 0.010 / 0.020, 1e-12);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 0);
}

/* Probes over n plain steps whose guesses fail, a probe costing probe_s. */
static int probes_in(sl_spec_policy *p, int n, double probe_s)
{
    int probes = 0;
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(sl_spec_policy_len(p), 0);
        const int k = sl_spec_policy_probe(p);
        if (k > 0) {
            probes++;
            sl_spec_policy_probe_cost(p, k, probe_s);
            sl_spec_policy_observe(p, k, 0);
        }
        sl_spec_policy_record(p, 0, 0, 0.010);
    }
    return probes;
}

TEST(probes_spaced_by_their_cost)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 4, false);
    CHECK_EQ_INT(probes_in(&p, 100, 0), 100); /* free: every step, the first ones too */
    sl_spec_policy_init(&p, 4, false);
    /* 1 ms a probe against 10 ms steps: 1 % of plain decoding every 10 steps */
    const int n = probes_in(&p, 200, 0.001);
    CHECK_MSG(n >= 19 && n <= 21, "%d probes", n);
    sl_spec_policy_init(&p, 4, false);
    CHECK_EQ_INT(probes_in(&p, 200, 1.0), 1); /* dearer than any gap: the first only */
}

TEST(no_dear_probes_while_nothing_could_pay)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 2, false);
    plain(&p, 2, 0.010);
    sl_spec_policy_observe(&p, 1, 1);
    CHECK_EQ_INT(sl_spec_policy_len(&p), 1);
    sl_spec_policy_record(&p, 1, 1, 0.030); /* T(1) = 3 T(0): 2 tokens would not pay */
    CHECK_EQ_INT(sl_spec_policy_len(&p), 0);
    int free_probes = 0, dear_probes = 0;
    for (int i = 0; i < 50; i++) { /* a free drafter is still asked */
        const int k = sl_spec_policy_probe(&p);
        free_probes += k > 0;
        if (k > 0) sl_spec_policy_probe_cost(&p, k, 0);
        CHECK_EQ_INT(sl_spec_policy_len(&p), 0); /* 50 steps: no re-measure yet */
    }
    CHECK_EQ_INT(free_probes, 50);
    sl_spec_policy_probe_cost(&p, 1, 0.005); /* now it costs: half a step */
    for (int i = 0; i < 500; i++) {
        if (sl_spec_policy_len(&p) > 0) { /* a re-measure: still dear */
            sl_spec_policy_record(&p, 1, 1, 0.030);
            continue;
        }
        dear_probes += sl_spec_policy_probe(&p) > 0;
        sl_spec_policy_record(&p, 0, 0, 0.010);
    }
    CHECK_EQ_INT(dear_probes, 0);
}

TEST(remeasures_further_apart)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 1, false);
    plain(&p, 2, 0.010);
    sl_spec_policy_observe(&p, 1, 1);
    sl_spec_policy_observe(&p, 1, 1); /* a1 = 0.755: 1.755 / 1.5 pays at first sight */
    CHECK_EQ_INT(sl_spec_policy_len(&p), 1);
    sl_spec_policy_record(&p, 1, 1, 0.030); /* but a verify step costs 3 T(0) */
    int at[4], n = 0;
    for (int step = 1; step <= 2000 && n < 4; step++) {
        const int k = sl_spec_policy_len(&p);
        if (k > 0) {
            at[n++] = step;
            sl_spec_policy_record(&p, 1, 1, 0.030);
            step = 0; /* count from the re-measure */
        } else {
            sl_spec_policy_record(&p, 0, 0, 0.010);
            sl_spec_policy_observe(&p, 1, 1); /* guesses keep holding */
        }
    }
    CHECK_EQ_INT(n, 4);
    CHECK_EQ_INT(at[0], 64);
    CHECK_EQ_INT(at[1], 128);
    CHECK_EQ_INT(at[2], 256);
    CHECK_EQ_INT(at[3], 512);
}

TEST(a_preempted_step_moves_the_average_little)
{
    sl_spec_policy p;
    sl_spec_policy_init(&p, 4, false);
    plain(&p, 2, 0.0002);
    sl_spec_policy_record(&p, 0, 0, 0.012); /* the scheduler took 12 ms */
    /* counted as 0.4 ms: 0.2 + 0.15 (0.4 - 0.2) */
    CHECK_NEAR(p.t_plain, 0.0002 + 0.15 * 0.0002, 1e-15);
    sl_spec_policy_record(&p, 1, 1, 0.0004);
    sl_spec_policy_record(&p, 1, 1, 0.00001); /* clipped to half the average */
    CHECK_NEAR(p.t_verify[1], 0.0004 + 0.25 * (0.0002 - 0.0004), 1e-15);
}

int main(void)
{
    RUN(plain_steps_first);
    RUN(no_draft_before_a_guess_holds);
    RUN(gain_by_hand);
    RUN(cheap_and_holding_drafts_grow);
    RUN(dear_and_failing_drafts_switch_off_until_guesses_hold);
    RUN(plain_step_every_32_verify_steps);
    RUN(always_follows_the_last_outcome);
    RUN(drafter_time_in_the_first_guess);
    RUN(probes_spaced_by_their_cost);
    RUN(no_dear_probes_while_nothing_could_pay);
    RUN(remeasures_further_apart);
    RUN(a_preempted_step_moves_the_average_little);
    return TEST_REPORT();
}
