/* policy_lru.c - least-recently-used eviction: an intrusive doubly linked
 * list of slots, most recent at the head; the victim is the first evictable
 * slot from the tail. */
#include <stdlib.h>

#include "experts/expert_cache.h"

typedef struct lru {
    int n;
    int head, tail;  /* -1 when empty */
    int *prev, *next;
    bool *linked;
} lru;

static void unlink_slot(lru *l, int s)
{
    if (!l->linked[s]) return;
    if (l->prev[s] >= 0) l->next[l->prev[s]] = l->next[s];
    else l->head = l->next[s];
    if (l->next[s] >= 0) l->prev[l->next[s]] = l->prev[s];
    else l->tail = l->prev[s];
    l->linked[s] = false;
}

static void lru_touch(void *ctx, int s)
{
    lru *l = ctx;
    unlink_slot(l, s);
    l->prev[s] = -1;
    l->next[s] = l->head;
    if (l->head >= 0) l->prev[l->head] = s;
    l->head = s;
    if (l->tail < 0) l->tail = s;
    l->linked[s] = true;
}

static void lru_admit(void *ctx, int s, int layer, int expert) { lru_touch(ctx, s); }

static void lru_forget(void *ctx, int s) { unlink_slot(ctx, s); }

static int lru_victim(void *ctx, int layer, int expert, bool (*evictable)(void *cache, int slot),
                      void *cache)
{
    lru *l = ctx;
    for (int s = l->tail; s >= 0; s = l->prev[s])
        if (evictable(cache, s)) return s;
    return -1;
}

static void lru_destroy(void *ctx)
{
    lru *l = ctx;
    if (!l) return;
    free(l->prev);
    free(l->next);
    free(l->linked);
    free(l);
}

int sl_policy_lru_create(sl_cache_policy *p, int n_slots, sl_err *err)
{
    lru *l = calloc(1, sizeof *l);
    if (!l) return sl_err_set(err, SL_ENOMEM, "out of memory");
    l->n = n_slots;
    l->head = l->tail = -1;
    l->prev = malloc(sizeof(int) * (size_t)n_slots);
    l->next = malloc(sizeof(int) * (size_t)n_slots);
    l->linked = calloc((size_t)n_slots, sizeof(bool));
    if (!l->prev || !l->next || !l->linked) {
        lru_destroy(l);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    p->ctx = l;
    p->name = "lru";
    p->touch = lru_touch;
    p->admit = lru_admit;
    p->forget = lru_forget;
    p->victim = lru_victim;
    p->destroy = lru_destroy;
    return SL_OK;
}
