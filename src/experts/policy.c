/* policy.c - the eviction policies by name (expert_cache.h). */
#include <string.h>

#include "experts/expert_cache.h"

const char *sl_policy_names(void) { return "lru, slru, lfu, layer"; }

int sl_policy_create(sl_cache_policy *p, const char *name, int n_slots, int n_layer,
                     int n_expert, sl_err *err)
{
    if (n_slots < 1 || n_layer < 1 || n_expert < 1)
        return sl_err_set(err, SL_EINVAL, "bad cache policy shape: %d slots, %d layers, "
                          "%d experts", n_slots, n_layer, n_expert);
    if (!strcmp(name, "lru")) return sl_policy_lru_create(p, n_slots, err);
    if (!strcmp(name, "slru")) return sl_policy_slru_create(p, n_slots, err);
    if (!strcmp(name, "lfu")) return sl_policy_lfu_create(p, n_slots, n_layer, n_expert, err);
    if (!strcmp(name, "layer")) return sl_policy_layer_create(p, n_slots, n_layer, err);
    return sl_err_set(err, SL_EINVAL, "unknown cache policy '%s' (known: %s)", name,
                      sl_policy_names());
}
