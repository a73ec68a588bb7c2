/* test_route_trace_policy.c - the expert cache policies compared under
 * replay (--cache-policy): each evicts what its rule says where LRU would
 * evict something else; names and refusals. */
#include <string.h>

#include "experts/expert_cache.h"
#include "test.h"

static sl_expert_cache *make(const char *policy, int slots)
{
    sl_cache_policy p;
    sl_err err;
    sl_expert_cache *c = NULL;
    if (sl_policy_create(&p, policy, slots, 4, 8, &err)) return NULL;
    if (sl_cache_create(&c, slots, 1000, 4096, 4, 8, p, &err)) return NULL;
    return c;
}

/* a miss: claim, the bytes arrive, the layer is done with it */
static int load(sl_expert_cache *c, int layer, int e)
{
    int s = sl_cache_claim(c, layer, e);
    if (s >= 0) {
        sl_cache_mark_ready(c, s);
        sl_cache_unpin(c, s);
    }
    return s;
}

/* a hit */
static void use(sl_expert_cache *c, int layer, int e)
{
    int s = sl_cache_pin(c, layer, e);
    CHECK_MSG(s >= 0, "(%d, %d) should be resident", layer, e);
    if (s >= 0) sl_cache_unpin(c, s);
}

static bool resident(const sl_expert_cache *c, int layer, int e)
{
    return sl_cache_find(c, layer, e) >= 0;
}

TEST(slru_protects_experts_used_twice)
{
    /* 3 slots, 2 protected: A and B used twice, C once; D evicts C, the
     * most recent (LRU would evict A, the least recent) */
    for (int pass = 0; pass < 2; pass++) {
        sl_expert_cache *c = make(pass ? "slru" : "lru", 3);
        if (!c) return;
        load(c, 0, 0);
        load(c, 0, 1);
        use(c, 0, 0);
        use(c, 0, 1);
        load(c, 0, 2);
        load(c, 0, 3);
        if (pass) CHECK(resident(c, 0, 0) && resident(c, 0, 1) && !resident(c, 0, 2));
        else CHECK(!resident(c, 0, 0) && resident(c, 0, 1) && resident(c, 0, 2));
        CHECK(resident(c, 0, 3));
        sl_cache_free(c);
    }
}

TEST(slru_demotes_the_oldest_protected)
{
    /* 4 slots, 3 protected: A, B, C, D all used twice; the protected
     * segment holds 3, so A (protected first) falls back to probation and
     * is the victim, not D */
    sl_expert_cache *c = make("slru", 4);
    if (!c) return;
    for (int e = 0; e < 4; e++) load(c, 1, e);
    for (int e = 0; e < 4; e++) use(c, 1, e);
    load(c, 1, 4);
    CHECK(!resident(c, 1, 0));
    CHECK(resident(c, 1, 1) && resident(c, 1, 2) && resident(c, 1, 3) && resident(c, 1, 4));
    sl_cache_free(c);
}

TEST(lfu_keeps_the_frequent_expert)
{
    /* 2 slots: A used 3 times, then B once; C evicts B (count 1 < 3),
     * though A is older */
    sl_expert_cache *c = make("lfu", 2);
    if (!c) return;
    load(c, 2, 0);
    use(c, 2, 0);
    use(c, 2, 0);
    load(c, 2, 1);
    load(c, 2, 2);
    CHECK(resident(c, 2, 0) && !resident(c, 2, 1) && resident(c, 2, 2));
    /* equal counts: the least recent goes (C count 1, B gone; D evicts C) */
    load(c, 2, 3);
    CHECK(resident(c, 2, 0) && !resident(c, 2, 2) && resident(c, 2, 3));
    sl_cache_free(c);
}

TEST(layer_shares_take_from_the_layer_over_its_share)
{
    /* 4 slots over 4 layers: one each. Layer 0 holds two; a layer-3 expert
     * takes layer 0's oldest, (0,0), not the overall oldest (1,0) */
    sl_expert_cache *c = make("layer", 4);
    if (!c) return;
    load(c, 1, 0);
    load(c, 0, 0);
    load(c, 0, 1);
    load(c, 2, 0);
    load(c, 3, 0);
    CHECK(resident(c, 1, 0) && !resident(c, 0, 0) && resident(c, 0, 1));
    /* layer 1 is at its share: a new layer-1 expert replaces its own */
    use(c, 0, 1);
    load(c, 1, 1);
    CHECK(!resident(c, 1, 0) && resident(c, 1, 1) && resident(c, 0, 1) && resident(c, 2, 0) &&
          resident(c, 3, 0));
    sl_cache_free(c);
}

TEST(policies_never_evict_pinned_slots)
{
    const char *names[] = {"lru", "slru", "lfu", "layer"};
    for (int i = 0; i < 4; i++) {
        sl_expert_cache *c = make(names[i], 2);
        if (!c) return;
        int a = sl_cache_claim(c, 0, 0);
        sl_cache_mark_ready(c, a); /* still pinned */
        load(c, 0, 1);
        int e = load(c, 0, 2); /* only (0,1) can go */
        CHECK_MSG(resident(c, 0, 0) && !resident(c, 0, 1) && e >= 0, "%s", names[i]);
        CHECK_EQ_INT(sl_cache_claim(c, 3, 3) >= 0, 1); /* (0,2) unpinned: evictable */
        CHECK_EQ_INT(sl_cache_claim(c, 3, 4), -1);     /* both pinned now */
        sl_cache_free(c);
    }
}

TEST(names_and_refusals)
{
    sl_cache_policy p;
    sl_err err;
    CHECK_EQ_INT(sl_policy_create(&p, "mru", 4, 4, 8, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "unknown cache policy 'mru' (known: lru, slru, lfu, layer)");
    const char *names[] = {"lru", "slru", "lfu", "layer"};
    for (int i = 0; i < 4; i++) {
        sl_expert_cache *c = make(names[i], 4);
        CHECK(c != NULL);
        if (!c) continue;
        CHECK(!strcmp(sl_cache_policy_name(c), names[i]));
        /* a policy changes only on an empty cache */
        load(c, 0, 0);
        CHECK_EQ_INT(sl_policy_create(&p, "lru", 4, 4, 8, &err), 0);
        CHECK_EQ_INT(sl_cache_set_policy(c, p, &err), SL_EINVAL); /* adopts p: no leak */
        CHECK_STR_CONTAINS(err.msg, "only change while the expert cache is empty");
        CHECK(!strcmp(sl_cache_policy_name(c), names[i]));
        sl_cache_free(c);
    }
}

int main(void)
{
    RUN(slru_protects_experts_used_twice);
    RUN(slru_demotes_the_oldest_protected);
    RUN(lfu_keeps_the_frequent_expert);
    RUN(layer_shares_take_from_the_layer_over_its_share);
    RUN(policies_never_evict_pinned_slots);
    RUN(names_and_refusals);
    return TEST_REPORT();
}
