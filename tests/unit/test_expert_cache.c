/* test_expert_cache.c - slot bookkeeping, pinning and LRU eviction. */
#include <string.h>

#include "experts/expert_cache.h"
#include "test.h"

static sl_expert_cache *make(int slots)
{
    sl_cache_policy p;
    sl_err err;
    sl_expert_cache *c = NULL;
    if (sl_policy_lru_create(&p, slots, &err)) return NULL;
    if (sl_cache_create(&c, slots, 1000, 4096, 4, 8, p, &err)) return NULL;
    return c;
}

/* claim + mark ready + unpin: the expert becomes resident and unpinned */
static int load(sl_expert_cache *c, int layer, int e)
{
    int s = sl_cache_claim(c, layer, e);
    if (s < 0) return -1;
    sl_cache_mark_ready(c, s);
    sl_cache_unpin(c, s);
    return s;
}

TEST(slots_are_aligned_and_sized)
{
    sl_expert_cache *c = make(3);
    CHECK(c != NULL);
    CHECK_EQ_INT(sl_cache_slot_bytes(c), 4096); /* 1000 rounded up to the alignment */
    for (int s = 0; s < 3; s++) CHECK(((uintptr_t)sl_cache_slot_data(c, s) & 4095) == 0);
    sl_cache_free(c);
}

TEST(hit_after_load_and_miss_before)
{
    sl_expert_cache *c = make(2);
    CHECK_EQ_INT(sl_cache_pin(c, 0, 3), -1);
    int s = load(c, 0, 3);
    CHECK(s >= 0);
    CHECK_EQ_INT(sl_cache_pin(c, 0, 3), s);
    CHECK_EQ_INT(sl_cache_state(c, s), SL_SLOT_READY);
    sl_cache_unpin(c, s);
    sl_cache_stats st;
    sl_cache_get_stats(c, &st);
    CHECK_EQ_INT(st.hits, 1);
    CHECK_EQ_INT(st.misses, 1);
    CHECK_EQ_INT(st.evictions, 0);
    sl_cache_free(c);
}

TEST(lru_evicts_least_recently_used)
{
    sl_expert_cache *c = make(3);
    int a = load(c, 0, 0), b = load(c, 0, 1), d = load(c, 0, 2);
    CHECK(a >= 0 && b >= 0 && d >= 0);
    /* use expert 0 again: expert 1 is now the oldest */
    sl_cache_unpin(c, sl_cache_pin(c, 0, 0));
    int e = load(c, 1, 5);
    CHECK_EQ_INT(e, b);
    CHECK_EQ_INT(sl_cache_pin(c, 0, 1), -1); /* evicted */
    int layer, expert;
    sl_cache_slot_owner(c, e, &layer, &expert);
    CHECK(layer == 1 && expert == 5);
    sl_cache_stats st;
    sl_cache_get_stats(c, &st);
    CHECK_EQ_INT(st.evictions, 1);
    sl_cache_free(c);
}

TEST(pinned_slots_are_never_evicted)
{
    sl_expert_cache *c = make(2);
    int a = sl_cache_claim(c, 0, 0);
    sl_cache_mark_ready(c, a);  /* still pinned */
    int b = load(c, 0, 1);
    int e = load(c, 0, 2); /* must take b, the only unpinned slot */
    CHECK_EQ_INT(e, b);
    CHECK_EQ_INT(sl_cache_pin(c, 0, 0), a);
    /* now both pinned (a twice) and e pinned by a lookup: nothing to evict */
    CHECK_EQ_INT(sl_cache_pin(c, 0, 2), e);
    CHECK_EQ_INT(sl_cache_claim(c, 2, 7), -1);
    sl_cache_unpin(c, e);
    CHECK_EQ_INT(sl_cache_claim(c, 2, 7), e);
    CHECK_EQ_INT(sl_cache_pins(c, a), 2);
    sl_cache_free(c);
}

TEST(rereads_count_experts_loaded_again)
{
    sl_expert_cache *c = make(1);
    load(c, 0, 0);
    load(c, 0, 1); /* evicts (0,0) */
    load(c, 0, 0); /* read again: a re-read */
    sl_cache_stats st;
    sl_cache_get_stats(c, &st);
    CHECK_EQ_INT(st.misses, 3);
    CHECK_EQ_INT(st.rereads, 1);
    CHECK_EQ_INT(st.evictions, 2);
    sl_cache_free(c);
}

TEST(failed_read_frees_the_slot)
{
    sl_expert_cache *c = make(1);
    int s = sl_cache_claim(c, 3, 3);
    sl_cache_mark_failed(c, s);
    CHECK_EQ_INT(sl_cache_pin(c, 3, 3), -1); /* not resident */
    sl_cache_unpin(c, s);
    CHECK_EQ_INT(sl_cache_state(c, s), SL_SLOT_FREE);
    CHECK_EQ_INT(sl_cache_claim(c, 3, 3), s);
    sl_cache_free(c);
}

TEST(bad_shapes_are_refused)
{
    sl_cache_policy p;
    sl_err err;
    sl_expert_cache *c;
    CHECK(sl_policy_lru_create(&p, 1, &err) == 0);
    CHECK(sl_cache_create(&c, 0, 100, 4096, 1, 1, p, &err) == SL_EINVAL); /* adopts p */
    CHECK(sl_policy_lru_create(&p, 1, &err) == 0);
    CHECK(sl_cache_create(&c, 1, 100, 3000, 1, 1, p, &err) == SL_EINVAL); /* not a power of 2 */
}

int main(void)
{
    RUN(slots_are_aligned_and_sized);
    RUN(hit_after_load_and_miss_before);
    RUN(lru_evicts_least_recently_used);
    RUN(pinned_slots_are_never_evicted);
    RUN(rereads_count_experts_loaded_again);
    RUN(failed_read_frees_the_slot);
    RUN(bad_shapes_are_refused);
    return TEST_REPORT();
}
