/* expert_cache.h - slots holding routed experts in RAM, and their bookkeeping.
 *
 * Owns: a fixed array of slots (memory aligned for direct I/O, each large
 * enough for one expert's gate, up and down windows), the map
 * (layer, expert) -> slot, pin counts, the eviction policy, and the
 * counters. Knows nothing about files or I/O: the streamer fills slots.
 *
 * Rules:
 *  - A slot pinned (pins > 0) is never evicted or overwritten. Every
 *    successful sl_cache_pin / sl_cache_claim is matched by one
 *    sl_cache_unpin. A pointer into a slot is valid only while pinned.
 *  - States: FREE -> (claim) LOADING -> (mark_ready) READY -> (evict) FREE.
 *    A LOADING slot whose read failed goes back to FREE (mark_failed).
 *  - Eviction picks among READY unpinned slots by the policy (LRU unless
 *    sl_cache_set_policy chose another).
 * Not thread-safe: one compute thread drives it. */
#ifndef SL_EXPERTS_EXPERT_CACHE_H
#define SL_EXPERTS_EXPERT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef enum sl_slot_state {
    SL_SLOT_FREE = 0,
    SL_SLOT_LOADING,
    SL_SLOT_READY,
} sl_slot_state;

typedef struct sl_cache_stats {
    uint64_t hits;       /* lookups that found the expert READY or LOADING */
    uint64_t misses;     /* lookups that had to claim a slot */
    uint64_t evictions;  /* READY experts dropped to make room */
    uint64_t rereads;    /* misses on an expert that had been resident before */
} sl_cache_stats;

/* The eviction policy, a plug-in: the cache tells it about uses and asks it
 * for a victim. It only decides which expert leaves: what is computed never
 * depends on it, only hit rates do. sl_policy_create names the policies. */
typedef struct sl_cache_policy sl_cache_policy;
struct sl_cache_policy {
    void *ctx;
    const char *name;
    /* the slot was used again (a hit) */
    void (*touch)(void *ctx, int slot);
    /* the slot was just claimed for expert (layer, expert) */
    void (*admit)(void *ctx, int slot, int layer, int expert);
    /* the slot became FREE */
    void (*forget)(void *ctx, int slot);
    /* choose a READY, unpinned slot to evict (evictable(cache, slot) says
     * which qualify) to make room for (layer, expert); -1 if none */
    int (*victim)(void *ctx, int layer, int expert, bool (*evictable)(void *cache, int slot),
                  void *cache);
    void (*destroy)(void *ctx);
};

/* The policies one by one (see sl_policy_create); each fails only with
 * SL_ENOMEM. */
int sl_policy_lru_create(sl_cache_policy *p, int n_slots, sl_err *err);
int sl_policy_slru_create(sl_cache_policy *p, int n_slots, sl_err *err);
int sl_policy_lfu_create(sl_cache_policy *p, int n_slots, int n_layer, int n_expert,
                         sl_err *err);
int sl_policy_layer_create(sl_cache_policy *p, int n_slots, int n_layer, sl_err *err);

/* The policy called name over n_slots slots for n_layer x n_expert
 * experts: "lru" (least recently used), "slru" (segmented LRU: an expert
 * used once waits in a probation segment, one used again is protected),
 * "lfu" (least frequently used, counts halved now and then so that old
 * fame fades; ties: least recent) or "layer" (each layer an equal share of
 * the pool, LRU within it). Fails (SL_EINVAL) for another name, naming the
 * known ones; SL_ENOMEM. */
int sl_policy_create(sl_cache_policy *p, const char *name, int n_slots, int n_layer,
                     int n_expert, sl_err *err);

/* "lru, slru, lfu, layer": the names sl_policy_create knows. */
const char *sl_policy_names(void);

typedef struct sl_expert_cache sl_expert_cache;

/* Creates n_slots slots of slot_bytes each (rounded up to align, a power of
 * two), for n_layer x n_expert experts. The policy is adopted: destroyed
 * with the cache, or at once if creation fails. Fails with SL_ENOMEM if the memory cannot be had. */
int sl_cache_create(sl_expert_cache **out, int n_slots, size_t slot_bytes, size_t align,
                    int n_layer, int n_expert, sl_cache_policy policy, sl_err *err);
void sl_cache_free(sl_expert_cache *c);

int sl_cache_n_slots(const sl_expert_cache *c);
size_t sl_cache_slot_bytes(const sl_expert_cache *c);

/* Looks the expert up. If it is READY or LOADING, pins it, counts a hit and
 * returns its slot (check sl_cache_state for LOADING). Else returns -1. */
int sl_cache_pin(sl_expert_cache *c, int layer, int expert);

/* The expert's slot if it is READY or LOADING, else -1. No pin, no
 * counting, no policy touch: a look, not a use. */
int sl_cache_find(const sl_expert_cache *c, int layer, int expert);
/* Claims a slot for an expert that is not resident: a FREE slot, else the
 * policy's victim (evicted). The slot comes back LOADING and pinned; counts
 * a miss. Returns -1 when every slot is pinned (the caller must release
 * some first). */
int sl_cache_claim(sl_expert_cache *c, int layer, int expert);

/* LOADING -> READY (the bytes arrived). */
void sl_cache_mark_ready(sl_expert_cache *c, int slot);

/* LOADING -> FREE: the read failed; the expert is forgotten. Still pinned
 * until the matching unpin. */
void sl_cache_mark_failed(sl_expert_cache *c, int slot);

/* Drops one pin. */
void sl_cache_unpin(sl_expert_cache *c, int slot);

sl_slot_state sl_cache_state(const sl_expert_cache *c, int slot);
int sl_cache_pins(const sl_expert_cache *c, int slot);
/* Slot memory (slot_bytes, aligned). */
uint8_t *sl_cache_slot_data(sl_expert_cache *c, int slot);
/* Which expert a slot holds (-1, -1 when FREE). */
void sl_cache_slot_owner(const sl_expert_cache *c, int slot, int *layer, int *expert);

void sl_cache_get_stats(const sl_expert_cache *c, sl_cache_stats *st);

/* Replaces the policy, which is adopted (destroyed with the cache, or at
 * once if this fails). Only while no slot holds an expert (SL_EINVAL). */
int sl_cache_set_policy(sl_expert_cache *c, sl_cache_policy policy, sl_err *err);

/* The policy's name. */
const char *sl_cache_policy_name(const sl_expert_cache *c);

/* Whether a FREE unpinned slot is left (sl_cache_claim would then take it
 * without evicting). */
bool sl_cache_has_free(sl_expert_cache *c);

#endif
