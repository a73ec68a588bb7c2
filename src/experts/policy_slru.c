/* policy_slru.c - segmented LRU: a newly read expert enters a probation
 * segment; used again, it moves to a protected segment (3/4 of the slots),
 * whose least recent member falls back to probation when it is full.
 * Victims come from probation first (least recent first), so experts used
 * once cannot flush the ones used repeatedly. */
#include <stdlib.h>

#include "experts/expert_cache.h"
#include "experts/slot_list.h"

typedef struct slru {
    slot_links k;
    slot_list prob, prot;
    int cap_prot;
} slru;

static slot_list *list_of(slru *p, int s)
{
    return p->k.on[s] == 1 ? &p->prob : p->k.on[s] == 2 ? &p->prot : NULL;
}

static void slru_admit(void *ctx, int s, int layer, int expert)
{
    slru *p = ctx;
    slot_list *l = list_of(p, s);
    if (l) slot_list_remove(&p->k, l, s);
    slot_list_push(&p->k, &p->prob, s);
}

static void slru_touch(void *ctx, int s)
{
    slru *p = ctx;
    slot_list *l = list_of(p, s);
    if (l) slot_list_remove(&p->k, l, s);
    slot_list_push(&p->k, &p->prot, s);
    while (p->prot.n > p->cap_prot) {
        const int old = p->prot.tail;
        slot_list_remove(&p->k, &p->prot, old);
        slot_list_push(&p->k, &p->prob, old);
    }
}

static void slru_forget(void *ctx, int s)
{
    slru *p = ctx;
    slot_list *l = list_of(p, s);
    if (l) slot_list_remove(&p->k, l, s);
}

static int slru_victim(void *ctx, int layer, int expert, bool (*evictable)(void *cache, int slot),
                       void *cache)
{
    slru *p = ctx;
    for (int s = p->prob.tail; s >= 0; s = p->k.prev[s])
        if (evictable(cache, s)) return s;
    for (int s = p->prot.tail; s >= 0; s = p->k.prev[s])
        if (evictable(cache, s)) return s;
    return -1;
}

static void slru_destroy(void *ctx)
{
    slru *p = ctx;
    if (!p) return;
    free(p->k.prev);
    free(p->k.next);
    free(p->k.on);
    free(p);
}

int sl_policy_slru_create(sl_cache_policy *out, int n_slots, sl_err *err)
{
    slru *p = calloc(1, sizeof *p);
    if (!p) return sl_err_set(err, SL_ENOMEM, "out of memory");
    p->k.prev = malloc(sizeof(int) * (size_t)n_slots);
    p->k.next = malloc(sizeof(int) * (size_t)n_slots);
    p->k.on = calloc((size_t)n_slots, 1);
    if (!p->k.prev || !p->k.next || !p->k.on) {
        slru_destroy(p);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    slot_list_init(&p->prob, 1);
    slot_list_init(&p->prot, 2);
    p->cap_prot = n_slots * 3 / 4;
    *out = (sl_cache_policy){p, "slru", slru_touch, slru_admit, slru_forget, slru_victim,
                             slru_destroy};
    return SL_OK;
}
