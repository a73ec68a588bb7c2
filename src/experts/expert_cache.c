/* expert_cache.c - see expert_cache.h. */
#include "experts/expert_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/mem.h"

typedef struct slot {
    sl_slot_state state;
    int pins;
    int layer, expert; /* owner, -1 when FREE */
} slot;

struct sl_expert_cache {
    int n_slots;
    size_t slot_bytes;
    int n_layer, n_expert;
    uint8_t *mem;           /* n_slots * slot_bytes, on 2 MiB boundaries */
    size_t mem_bytes;
    slot *slots;
    int32_t *where;         /* (n_layer, n_expert) -> slot, -1 if absent */
    uint8_t *seen;          /* (n_layer, n_expert) was resident once */
    int free_hint;          /* lowest slot index that may be FREE */
    sl_cache_policy policy;
    sl_cache_stats stats;
};

int sl_cache_create(sl_expert_cache **out, int n_slots, size_t slot_bytes, size_t align,
                    int n_layer, int n_expert, sl_cache_policy policy, sl_err *err)
{
    *out = NULL;
    if (n_slots < 1 || n_layer < 1 || n_expert < 1 || align == 0 || (align & (align - 1))) {
        if (policy.destroy) policy.destroy(policy.ctx);
        return sl_err_set(err, SL_EINVAL, "bad expert cache shape: %d slots, %d layers, "
                          "%d experts, alignment %zu", n_slots, n_layer, n_expert, align);
    }
    sl_expert_cache *c = calloc(1, sizeof *c);
    if (!c) {
        if (policy.destroy) policy.destroy(policy.ctx);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    c->policy = policy;
    uint64_t sb, total, n_map;
    if (!sl_align_up_u64(slot_bytes, align, &sb) || !sl_mul_u64(sb, (uint64_t)n_slots, &total) ||
        total > SIZE_MAX || !sl_mul_u64((uint64_t)n_layer, (uint64_t)n_expert, &n_map)) {
        sl_cache_free(c);
        return sl_err_set(err, SL_ENOMEM, "expert cache size overflows");
    }
    c->n_slots = n_slots;
    c->slot_bytes = (size_t)sb;
    c->n_layer = n_layer;
    c->n_expert = n_expert;
    /* huge pages: a direct read lands in few, large DMA segments */
    c->mem = align <= ((size_t)2 << 20) ? sl_mem_alloc_huge((size_t)total) : NULL;
    c->mem_bytes = (size_t)total;
    c->slots = calloc((size_t)n_slots, sizeof *c->slots);
    c->where = malloc(sizeof(int32_t) * (size_t)n_map);
    c->seen = calloc((size_t)n_map, 1);
    /* every page faulted in now: a miss then costs the read alone, not
     * also zeroing 2-3 MB of fresh pages (8 % of decode time while a large
     * cache fills), and a budget the machine cannot meet fails here */
    if (c->mem && !sl_mem_prefault(c->mem, c->mem_bytes)) {
        sl_mem_free_huge(c->mem, c->mem_bytes);
        c->mem = NULL;
    }
    if (!c->mem || !c->slots || !c->where || !c->seen) {
        sl_cache_free(c);
        return sl_err_set(err, SL_ENOMEM, "cannot allocate an expert cache of %d slots x "
                          "%.2f MiB", n_slots, (double)sb / (1 << 20));
    }
    for (uint64_t i = 0; i < n_map; i++) c->where[i] = -1;
    for (int s = 0; s < n_slots; s++) c->slots[s].layer = c->slots[s].expert = -1;
    *out = c;
    return SL_OK;
}

void sl_cache_free(sl_expert_cache *c)
{
    if (!c) return;
    if (c->policy.destroy) c->policy.destroy(c->policy.ctx);
    sl_mem_free_huge(c->mem, c->mem_bytes);
    free(c->slots);
    free(c->where);
    free(c->seen);
    free(c);
}

int sl_cache_n_slots(const sl_expert_cache *c) { return c->n_slots; }
size_t sl_cache_slot_bytes(const sl_expert_cache *c) { return c->slot_bytes; }

static size_t key(const sl_expert_cache *c, int layer, int expert)
{
    SL_ASSERT(layer >= 0 && layer < c->n_layer && expert >= 0 && expert < c->n_expert);
    return (size_t)layer * (size_t)c->n_expert + (size_t)expert;
}

int sl_cache_pin(sl_expert_cache *c, int layer, int expert)
{
    int s = c->where[key(c, layer, expert)];
    if (s < 0) return -1;
    c->slots[s].pins++;
    c->stats.hits++;
    c->policy.touch(c->policy.ctx, s);
    return s;
}

int sl_cache_find(const sl_expert_cache *c, int layer, int expert)
{
    return c->where[key(c, layer, expert)];
}

static bool evictable(void *cache, int s)
{
    const sl_expert_cache *c = cache;
    return c->slots[s].state == SL_SLOT_READY && c->slots[s].pins == 0;
}

static void make_free(sl_expert_cache *c, int s)
{
    slot *sl = &c->slots[s];
    if (sl->layer >= 0) c->where[key(c, sl->layer, sl->expert)] = -1;
    sl->state = SL_SLOT_FREE;
    sl->layer = sl->expert = -1;
    c->policy.forget(c->policy.ctx, s);
    if (s < c->free_hint) c->free_hint = s;
}

int sl_cache_claim(sl_expert_cache *c, int layer, int expert)
{
    const size_t k = key(c, layer, expert);
    SL_ASSERT(c->where[k] < 0);
    int s = -1;
    for (int i = c->free_hint; i < c->n_slots; i++)
        if (c->slots[i].state == SL_SLOT_FREE && c->slots[i].pins == 0) {
            s = i;
            break;
        }
    if (s < 0) {
        c->free_hint = c->n_slots;
        s = c->policy.victim(c->policy.ctx, layer, expert, evictable, c);
        if (s < 0) return -1;
        make_free(c, s);
        c->stats.evictions++;
    }
    c->free_hint = s + 1;
    slot *sl = &c->slots[s];
    sl->state = SL_SLOT_LOADING;
    sl->pins = 1;
    sl->layer = layer;
    sl->expert = expert;
    c->where[k] = s;
    c->stats.misses++;
    if (c->seen[k]) c->stats.rereads++;
    c->seen[k] = 1;
    c->policy.admit(c->policy.ctx, s, layer, expert);
    return s;
}

void sl_cache_mark_ready(sl_expert_cache *c, int s)
{
    SL_ASSERT(c->slots[s].state == SL_SLOT_LOADING);
    c->slots[s].state = SL_SLOT_READY;
}

void sl_cache_mark_failed(sl_expert_cache *c, int s)
{
    SL_ASSERT(c->slots[s].state == SL_SLOT_LOADING);
    const slot *sl = &c->slots[s];
    c->seen[key(c, sl->layer, sl->expert)] = 0;
    make_free(c, s);
}

void sl_cache_unpin(sl_expert_cache *c, int s)
{
    SL_ASSERT(s >= 0 && s < c->n_slots && c->slots[s].pins > 0);
    c->slots[s].pins--;
}

sl_slot_state sl_cache_state(const sl_expert_cache *c, int s) { return c->slots[s].state; }
int sl_cache_pins(const sl_expert_cache *c, int s) { return c->slots[s].pins; }

uint8_t *sl_cache_slot_data(sl_expert_cache *c, int s)
{
    return c->mem + (size_t)s * c->slot_bytes;
}

void sl_cache_slot_owner(const sl_expert_cache *c, int s, int *layer, int *expert)
{
    *layer = c->slots[s].layer;
    *expert = c->slots[s].expert;
}

void sl_cache_get_stats(const sl_expert_cache *c, sl_cache_stats *st) { *st = c->stats; }

int sl_cache_set_policy(sl_expert_cache *c, sl_cache_policy policy, sl_err *err)
{
    for (int s = 0; s < c->n_slots; s++)
        if (c->slots[s].state != SL_SLOT_FREE || c->slots[s].pins) {
            if (policy.destroy) policy.destroy(policy.ctx);
            return sl_err_set(err, SL_EINVAL, "the cache policy can only change while the "
                              "expert cache is empty");
        }
    if (c->policy.destroy) c->policy.destroy(c->policy.ctx);
    c->policy = policy;
    return SL_OK;
}

const char *sl_cache_policy_name(const sl_expert_cache *c) { return c->policy.name; }

bool sl_cache_has_free(sl_expert_cache *c)
{
    for (int i = c->free_hint; i < c->n_slots; i++)
        if (c->slots[i].state == SL_SLOT_FREE && c->slots[i].pins == 0) {
            c->free_hint = i;
            return true;
        }
    c->free_hint = c->n_slots;
    return false;
}
