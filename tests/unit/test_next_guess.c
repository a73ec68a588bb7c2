/* test_next_guess.c - the learned next-layer guesses: a transition seen
 * often enough is guessed, most confident first; one seen once, or at a
 * share below half, is not; a batch's tokens are paired token by token
 * (never across tokens); only one token's choice is guessed from; layers
 * are paired only when adjacent and observed in order; a count that would
 * overflow halves its row and the guess stays; bad shapes are refused. */
#include <stdint.h>
#include <stdio.h>

#include "experts/next_guess.h"
#include "test.h"

static sl_next_guess *fresh(int layers, int experts)
{
    sl_next_guess *g = NULL;
    sl_err err;
    CHECK(sl_next_guess_create(&g, layers, experts, &err) == SL_OK);
    return g;
}

/* one token through layers 0 and 1: {a0, a1} then {b0, b1} */
static void token(sl_next_guess *g, int a0, int a1, int b0, int b1)
{
    const int s0[2] = {a0, a1}, s1[2] = {b0, b1};
    sl_next_guess_observe(g, 0, s0, 1, 2);
    sl_next_guess_observe(g, 1, s1, 1, 2);
}

TEST(seen_twice_is_guessed_once_is_not)
{
    sl_next_guess *g = fresh(3, 8);
    int out[8];
    const int s0[2] = {1, 2};
    token(g, 1, 2, 5, 6);
    sl_next_guess_observe(g, 0, s0, 1, 2);
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 8), 0); /* each pair seen once */
    token(g, 1, 3, 5, 7);
    sl_next_guess_observe(g, 0, s0, 1, 2);
    /* n(1->5) = 2 of n(1) = 2: share 1; 6 and 7 once each */
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 8), 1);
    CHECK_EQ_INT(out[0], 5);
    sl_next_guess_free(g);
}

TEST(most_confident_first_and_below_half_left_out)
{
    sl_next_guess *g = fresh(2, 8);
    int out[8];
    /* from 1: 4 tokens; 5 in all 4 (share 1), 6 in 3 (0.75), 7 in 2 (0.5) */
    token(g, 1, 0, 5, 6);
    token(g, 1, 0, 5, 6);
    token(g, 1, 0, 5, 7);
    token(g, 1, 0, 6, 7);
    const int s0[2] = {1, 0}; /* 0 was followed by the same: same shares */
    sl_next_guess_observe(g, 0, s0, 1, 2);
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 8), 3);
    CHECK_EQ_INT(out[0], 5);
    CHECK_EQ_INT(out[1], 6);
    CHECK_EQ_INT(out[2], 7);
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 2), 2); /* max respected */
    /* 2 tokens more from 1 without 7: 7 falls to 2 of 6, below half */
    token(g, 1, 0, 5, 6);
    token(g, 1, 0, 5, 6);
    sl_next_guess_observe(g, 0, s0, 1, 2);
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 8), 2);
    CHECK_EQ_INT(out[0], 5);
    CHECK_EQ_INT(out[1], 6);
    sl_next_guess_free(g);
}

TEST(batch_pairs_token_by_token)
{
    sl_next_guess *g = fresh(2, 8);
    int out[8];
    /* two tokens, twice: token 0 goes 1 -> 4, token 1 goes 2 -> 6 */
    const int l0[2] = {1, 2}, l1[2] = {4, 6};
    for (int r = 0; r < 2; r++) {
        sl_next_guess_observe(g, 0, l0, 2, 1);
        sl_next_guess_observe(g, 1, l1, 2, 1);
    }
    const int one[1] = {1};
    sl_next_guess_observe(g, 0, one, 1, 1);
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 8), 1);
    CHECK_EQ_INT(out[0], 4); /* never 6: that was the other token */
    /* a batch's choice is not guessed from */
    sl_next_guess_observe(g, 0, l0, 2, 1);
    CHECK(!sl_next_guess_has_token(g, 0));
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 8), 0);
    sl_next_guess_free(g);
}

TEST(only_adjacent_layers_in_order_are_paired)
{
    sl_next_guess *g = fresh(3, 8);
    int out[8];
    const int a[1] = {1}, b[1] = {5};
    for (int r = 0; r < 3; r++) { /* layer 0 then layer 2: no pair */
        sl_next_guess_observe(g, 0, a, 1, 1);
        sl_next_guess_observe(g, 2, b, 1, 1);
    }
    sl_next_guess_observe(g, 0, a, 1, 1);
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 8), 0);
    CHECK_EQ_INT(sl_next_guess_predict(g, 1, out, 8), 0); /* not the last layer seen */
    sl_next_guess_observe(g, 2, b, 1, 1);
    CHECK_EQ_INT(sl_next_guess_predict(g, 2, out, 8), 0); /* the last layer: no next */
    sl_next_guess_free(g);
}

TEST(overflow_halves_and_keeps_the_guess)
{
    sl_next_guess *g = fresh(2, 4);
    int out[4];
    for (int r = 0; r < 70000; r++) token(g, 1, 0, 2, 3);
    const int s0[2] = {1, 0};
    sl_next_guess_observe(g, 0, s0, 1, 2);
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 4), 2);
    CHECK(out[0] == 2 || out[0] == 3);
    sl_next_guess_free(g);
}

TEST(bad_shapes_are_refused)
{
    sl_next_guess *g = NULL;
    sl_err err;
    CHECK(sl_next_guess_create(&g, 0, 8, &err) == SL_EINVAL && g == NULL);
    CHECK(sl_next_guess_create(&g, 2, 0, &err) == SL_EINVAL && g == NULL);
    g = fresh(1, 4); /* one layer: nothing to guess, but valid */
    int out[4];
    const int s[1] = {2};
    sl_next_guess_observe(g, 0, s, 1, 1);
    sl_next_guess_observe(g, 5, s, 1, 1); /* out of range: ignored */
    CHECK_EQ_INT(sl_next_guess_predict(g, 0, out, 4), 0);
    sl_next_guess_free(g);
}

int main(void)
{
    RUN(seen_twice_is_guessed_once_is_not);
    RUN(most_confident_first_and_below_half_left_out);
    RUN(batch_pairs_token_by_token);
    RUN(only_adjacent_layers_in_order_are_paired);
    RUN(overflow_halves_and_keeps_the_guess);
    RUN(bad_shapes_are_refused);
    return TEST_REPORT();
}
