/* test_draft.c - the prompt-lookup drafter (engine/draft.h) on hand-made
 * token sequences: the longest suffix that recurs wins, its latest earlier
 * occurrence, the continuation capped by max and going on past the
 * history's end as the match went on, and
 * no proposal when nothing recurs or the arguments leave no room. */
#include <stdint.h>

#include "engine/draft.h"
#include "test.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int same(const int32_t *got, int n_got, const int32_t *want, int n_want)
{
    if (n_got != n_want) return 0;
    for (int i = 0; i < n_got; i++)
        if (got[i] != want[i]) return 0;
    return 1;
}

TEST(suffix_found_gives_what_followed)
{
    const int32_t h[] = {1, 2, 3, 4, 1, 2, 3};
    int32_t out[8];
    const int32_t want[] = {4, 1, 2, 3, 4, 1, 2, 3};
    int k = sl_draft_ngram(h, N(h), 1, 3, out, 8);
    CHECK(same(out, k, want, 8)); /* past the history's end, the period goes on */
    k = sl_draft_ngram(h, N(h), 1, 3, out, 2);
    CHECK(same(out, k, want, 2)); /* capped by max */
}

TEST(latest_occurrence_first)
{
    const int32_t h[] = {5, 9, 7, 5, 8, 7, 5};
    int32_t out[8];
    const int32_t want[] = {8, 7, 5, 8};
    const int k = sl_draft_ngram(h, N(h), 1, 1, out, 4);
    CHECK(same(out, k, want, 4)); /* "5" last at 3: "8 7 5", then "8" again */
}

TEST(longer_suffix_wins)
{
    const int32_t h[] = {1, 2, 6, 0, 2, 7, 1, 2};
    int32_t out[8];
    const int32_t two[] = {6, 0, 2, 7, 1, 2}, one[] = {7, 1, 2};
    int k = sl_draft_ngram(h, N(h), 1, 2, out, 6);
    CHECK(same(out, k, two, 6)); /* "1 2" recurs at 0 */
    k = sl_draft_ngram(h, N(h), 1, 1, out, 3);
    CHECK(same(out, k, one, 3)); /* "2" recurs last at 4 */
}

TEST(shortest_suffix_bounds_the_search)
{
    const int32_t h[] = {3, 1, 4, 1};
    int32_t out[8];
    const int32_t want[] = {4, 1, 4};
    CHECK_EQ_INT(sl_draft_ngram(h, N(h), 2, 3, out, 8), 0); /* "4 1" never came before */
    const int k = sl_draft_ngram(h, N(h), 1, 3, out, 3);
    CHECK(same(out, k, want, 3)); /* "1" last at 1 */
}

TEST(self_overlapping_run)
{
    const int32_t h[] = {7, 7, 7};
    int32_t out[8];
    const int32_t want[] = {7, 7, 7, 7, 7};
    const int k = sl_draft_ngram(h, N(h), 2, 2, out, 5);
    CHECK(same(out, k, want, 5));
}

TEST(nothing_to_propose)
{
    const int32_t h[] = {1, 2, 3};
    int32_t out[8] = {0};
    CHECK_EQ_INT(sl_draft_ngram(h, N(h), 1, 3, out, 8), 0); /* no token recurs */
    CHECK_EQ_INT(sl_draft_ngram(h, 1, 1, 3, out, 8), 0);
    CHECK_EQ_INT(sl_draft_ngram(h, 0, 1, 3, out, 8), 0);
    const int32_t r[] = {4, 4};
    CHECK_EQ_INT(sl_draft_ngram(r, N(r), 1, 3, out, 0), 0); /* no room */
    CHECK_EQ_INT(sl_draft_ngram(r, N(r), 0, 3, out, 8), 0); /* a zero-length suffix */
    CHECK_EQ_INT(out[0], 0);
    sl_drafter none = {.kind = SL_DRAFT_NONE};
    CHECK_EQ_INT(sl_draft_propose(&none, r, N(r), out, 8), 0);
    sl_drafter ng = {.kind = SL_DRAFT_NGRAM, .ngram_min = 1, .ngram_max = 3};
    CHECK_EQ_INT(sl_draft_propose(&ng, r, N(r), out, 2), 2);
    CHECK_EQ_INT(out[0], 4);
    CHECK_EQ_INT(out[1], 4);
}

int main(void)
{
    RUN(suffix_found_gives_what_followed);
    RUN(latest_occurrence_first);
    RUN(longer_suffix_wins);
    RUN(shortest_suffix_bounds_the_search);
    RUN(self_overlapping_run);
    RUN(nothing_to_propose);
    return TEST_REPORT();
}
