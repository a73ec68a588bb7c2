/* policy_lfu.c - least frequently used, with ageing: every expert's use
 * count (hits and reads) is kept, all counts are halved after each
 * 16 x n_slots uses so that experts hot long ago fade, and the victim is
 * the evictable slot whose expert has the lowest count, the least recently
 * used among equals. A scan of the slots per eviction. */
#include <stdint.h>
#include <stdlib.h>

#include "experts/expert_cache.h"

typedef struct lfu {
    int n_slots, n_key, n_expert;
    uint32_t *count;   /* (n_layer x n_expert) */
    int *key_of_slot;  /* (n_slots), -1 when empty */
    uint64_t *stamp;   /* (n_slots) last use */
    uint64_t clock, next_halving, period;
} lfu;

static void use(lfu *p, int s)
{
    const int k = p->key_of_slot[s];
    if (k >= 0) p->count[k]++;
    p->stamp[s] = ++p->clock;
    if (p->clock >= p->next_halving) {
        for (int i = 0; i < p->n_key; i++) p->count[i] >>= 1;
        p->next_halving = p->clock + p->period;
    }
}

static void lfu_touch(void *ctx, int s) { use(ctx, s); }

static void lfu_admit(void *ctx, int s, int layer, int expert)
{
    lfu *p = ctx;
    p->key_of_slot[s] = layer * p->n_expert + expert;
    use(p, s);
}

static void lfu_forget(void *ctx, int s) { ((lfu *)ctx)->key_of_slot[s] = -1; }

static int lfu_victim(void *ctx, int layer, int expert, bool (*evictable)(void *cache, int slot),
                      void *cache)
{
    lfu *p = ctx;
    int best = -1;
    for (int s = 0; s < p->n_slots; s++) {
        if (!evictable(cache, s)) continue;
        if (best < 0) {
            best = s;
            continue;
        }
        const uint32_t cs = p->count[p->key_of_slot[s]], cb = p->count[p->key_of_slot[best]];
        if (cs < cb || (cs == cb && p->stamp[s] < p->stamp[best])) best = s;
    }
    return best;
}

static void lfu_destroy(void *ctx)
{
    lfu *p = ctx;
    if (!p) return;
    free(p->count);
    free(p->key_of_slot);
    free(p->stamp);
    free(p);
}

int sl_policy_lfu_create(sl_cache_policy *out, int n_slots, int n_layer, int n_expert,
                         sl_err *err)
{
    lfu *p = calloc(1, sizeof *p);
    if (!p) return sl_err_set(err, SL_ENOMEM, "out of memory");
    p->n_slots = n_slots;
    p->n_expert = n_expert;
    p->n_key = n_layer * n_expert;
    p->count = calloc((size_t)p->n_key, sizeof *p->count);
    p->key_of_slot = malloc(sizeof(int) * (size_t)n_slots);
    p->stamp = calloc((size_t)n_slots, sizeof *p->stamp);
    if (!p->count || !p->key_of_slot || !p->stamp) {
        lfu_destroy(p);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    for (int s = 0; s < n_slots; s++) p->key_of_slot[s] = -1;
    p->period = 16 * (uint64_t)n_slots;
    p->next_halving = p->period;
    *out = (sl_cache_policy){p, "lfu", lfu_touch, lfu_admit, lfu_forget, lfu_victim, lfu_destroy};
    return SL_OK;
}
