/* mkmodel_dims.c - the --dims overrides of `sluice mkmodel` (mkmodel_dims.h).
 *
 * Owns: the names of the overridable fields of both synthetic configs. */
#include "mkmodel_dims.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dim_key {
    const char *name;
    ptrdiff_t generic, ds; /* offsetof in sl_synth_config / sl_synth_ds, -1: none */
} dim_key;

#define G(f) (ptrdiff_t)offsetof(sl_synth_config, f)
#define D(f) (ptrdiff_t)offsetof(sl_synth_ds, f)
static const dim_key keys[] = {
    {"embd", G(n_embd), D(n_embd)},
    {"heads", G(n_head), D(n_head)},
    {"kv-heads", G(n_head_kv), D(n_head_kv)},
    {"head-dim", G(head_dim), D(head_dim)},
    {"rope-dim", G(rope_dim), D(rope_dim)},
    {"ff", G(n_ff), D(n_ff)},
    {"ff-exp", G(n_ff_exp), D(n_ff_exp)},
    {"ff-shexp", G(n_ff_shexp), -1},
    {"head-dim-swa", G(head_dim_swa), -1},
    {"kv-heads-swa", G(n_head_kv_swa), -1},
    {"window", G(n_swa), D(n_swa)},
    {"swa-period", G(swa_period), -1},
    {"attn-interval", G(full_attn_interval), -1},
    {"ssm-state", G(ssm_state), -1},
    {"ssm-groups", G(ssm_groups), -1},
    {"ssm-v-heads", G(ssm_v_heads), -1},
    {"dense-lead", -1, D(n_dense_lead)},
    {"q-lora", -1, D(q_lora)},
    {"kv-lora", -1, D(kv_lora)},
    {"nope", -1, D(nope)},
    {"rope", -1, D(rope)},
    {"v-head", -1, D(v_head)},
    {"groups", -1, D(n_group)},
    {"groups-used", -1, D(n_group_used)},
    {"o-groups", -1, D(o_groups)},
    {"o-lora", -1, D(o_lora)},
    {"idx-heads", -1, D(idx_head)},
    {"idx-dim", -1, D(idx_dim)},
    {"idx-top-k", -1, D(idx_top_k)},
    {"raw-layers", -1, D(n_raw)},
    {"hash-layers", -1, D(n_hash)},
};
#undef G
#undef D

const char *mkmodel_dims_keys(void)
{
    return "embd, heads, kv-heads, head-dim, rope-dim, ff, ff-exp, window; ff-shexp,\n"
           "                  head-dim-swa, kv-heads-swa, swa-period (gemma4), attn-interval,\n"
           "                  ssm-state, ssm-groups, ssm-v-heads (qwen35moe); dense-lead, q-lora,\n"
           "                  kv-lora, nope, rope, v-head, groups, groups-used (deepseek2,\n"
           "                  glm4moe, glm-dsa); o-groups, o-lora, idx-heads, idx-dim, idx-top-k,\n"
           "                  raw-layers, hash-layers (deepseek4)";
}

bool mkmodel_dims_apply(const char *cmd, const char *list, sl_synth_config *c, sl_synth_ds *d)
{
    char buf[512];
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "sluice %s: --dims list too long\n", cmd);
        return false;
    }
    strcpy(buf, list);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            fprintf(stderr, "sluice %s: --dims expects key=value, got '%s'\n", cmd, item);
            return false;
        }
        *eq = 0;
        const dim_key *k = NULL;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (!strcmp(item, keys[i].name)) k = &keys[i];
        const ptrdiff_t off = !k ? -1 : c ? k->generic : k->ds;
        if (off < 0) {
            fprintf(stderr, "sluice %s: --dims: '%s' is not a dimension of this architecture "
                    "(keys: %s)\n", cmd, item, mkmodel_dims_keys());
            return false;
        }
        char *end;
        const long v = strtol(eq + 1, &end, 10);
        if (end == eq + 1 || *end || v < 0 || v > 65536) {
            fprintf(stderr, "sluice %s: --dims: %s=%s is not a whole number 0..65536\n", cmd,
                    item, eq + 1);
            return false;
        }
        uint32_t *field = (uint32_t *)((char *)(c ? (void *)c : (void *)d) + off);
        *field = (uint32_t)v;
    }
    return true;
}
