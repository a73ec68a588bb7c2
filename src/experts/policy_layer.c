/* policy_layer.c - one pool, each layer an equal share of it (n_slots /
 * n_layer, the remainder to the first layers), LRU within a layer: a layer
 * at or over its share gives up its own least recent expert; one under it
 * takes the least recent expert of a layer over its share; failing both
 * (every candidate pinned), the least recent evictable slot of any layer. */
#include <stdlib.h>

#include "experts/expert_cache.h"
#include "experts/slot_list.h"

typedef struct shares {
    slot_links k;
    slot_list all;     /* every filled slot, by recency */
    int *layer_of;     /* (n_slots), -1 when empty */
    int *held, *share; /* (n_layer) */
} shares;

static void sh_touch(void *ctx, int s)
{
    shares *p = ctx;
    if (p->k.on[s]) slot_list_remove(&p->k, &p->all, s);
    slot_list_push(&p->k, &p->all, s);
}

static void sh_forget(void *ctx, int s)
{
    shares *p = ctx;
    if (p->k.on[s]) slot_list_remove(&p->k, &p->all, s);
    if (p->layer_of[s] >= 0) p->held[p->layer_of[s]]--;
    p->layer_of[s] = -1;
}

static void sh_admit(void *ctx, int s, int layer, int expert)
{
    shares *p = ctx;
    sh_forget(p, s);
    p->layer_of[s] = layer;
    p->held[layer]++;
    sh_touch(p, s);
}

static int sh_victim(void *ctx, int layer, int expert, bool (*evictable)(void *cache, int slot),
                     void *cache)
{
    shares *p = ctx;
    const bool full = p->held[layer] >= p->share[layer];
    for (int s = p->all.tail; s >= 0; s = p->k.prev[s]) {
        const int l = p->layer_of[s];
        if ((full ? l == layer : p->held[l] > p->share[l]) && evictable(cache, s)) return s;
    }
    for (int s = p->all.tail; s >= 0; s = p->k.prev[s])
        if (evictable(cache, s)) return s;
    return -1;
}

static void sh_destroy(void *ctx)
{
    shares *p = ctx;
    if (!p) return;
    free(p->k.prev);
    free(p->k.next);
    free(p->k.on);
    free(p->layer_of);
    free(p->held);
    free(p->share);
    free(p);
}

int sl_policy_layer_create(sl_cache_policy *out, int n_slots, int n_layer, sl_err *err)
{
    shares *p = calloc(1, sizeof *p);
    if (!p) return sl_err_set(err, SL_ENOMEM, "out of memory");
    p->k.prev = malloc(sizeof(int) * (size_t)n_slots);
    p->k.next = malloc(sizeof(int) * (size_t)n_slots);
    p->k.on = calloc((size_t)n_slots, 1);
    p->layer_of = malloc(sizeof(int) * (size_t)n_slots);
    p->held = calloc((size_t)n_layer, sizeof(int));
    p->share = calloc((size_t)n_layer, sizeof(int));
    if (!p->k.prev || !p->k.next || !p->k.on || !p->layer_of || !p->held || !p->share) {
        sh_destroy(p);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    slot_list_init(&p->all, 1);
    for (int s = 0; s < n_slots; s++) p->layer_of[s] = -1;
    for (int l = 0; l < n_layer; l++)
        p->share[l] = n_slots / n_layer + (l < n_slots % n_layer ? 1 : 0);
    *out = (sl_cache_policy){p, "layer", sh_touch, sh_admit, sh_forget, sh_victim, sh_destroy};
    return SL_OK;
}
