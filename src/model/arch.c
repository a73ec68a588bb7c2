/* arch.c - the architecture table. */
#include "model/arch.h"
#include "model/model_internal.h"

#include <stdio.h>
#include <string.h>

static const sl_arch archs[] = {
    /* name        layer                  rope           qk_norm             bias   moe    opt    shexp  norm_topk at_head */
    {"llama",      sl_family_llama_layer, SL_ROPE_NORMAL, SL_QK_NORM_NONE, false, true,  true,  false, true, false},
    {"qwen2",      sl_family_llama_layer, SL_ROPE_NEOX,   SL_QK_NORM_NONE, true,  false, false, false, false, false},
    {"qwen3",      sl_family_llama_layer, SL_ROPE_NEOX,   SL_QK_NORM_HEAD, false, false, false, false, false, false},
    {"qwen2moe",   sl_family_llama_layer, SL_ROPE_NEOX,   SL_QK_NORM_NONE, true,  true,  false, true,  false, false},
    {"qwen3moe",   sl_family_llama_layer, SL_ROPE_NEOX,   SL_QK_NORM_HEAD, false, true,  false, false, true, false},
    {"olmoe",      sl_family_llama_layer, SL_ROPE_NEOX,   SL_QK_NORM_FULL, false, true,  false, false, false, false},
    {"qwen35moe",  sl_family_qwen35_layer, SL_ROPE_NEOX,  SL_QK_NORM_HEAD, false, true,  false, true,  true, true},
    {"gpt-oss",    sl_family_gptoss_layer, SL_ROPE_NEOX,  SL_QK_NORM_NONE, true,  true,  false, false, false, true},
    {"gemma4",     sl_family_gemma4_layer, SL_ROPE_NEOX,  SL_QK_NORM_HEAD, false, true,  true,  false, true, true},
    {"deepseek2",  sl_family_deepseek2_layer, SL_ROPE_NORMAL, SL_QK_NORM_NONE, false, true, false, true, false, false},
    {"glm4moe",    sl_family_glm4moe_layer, SL_ROPE_NEOX, SL_QK_NORM_HEAD, true,  true,  false, true,  false, false},
    {"glm-dsa",    sl_family_glm_dsa_layer, SL_ROPE_NORMAL, SL_QK_NORM_NONE, false, true, false, true, false, false},
    {"deepseek4",  sl_family_deepseek4_layer, SL_ROPE_NORMAL, SL_QK_NORM_NONE, false, true, false, true, false, true},
};

const sl_arch *sl_arch_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, name)) return &archs[i];
    return NULL;
}

const char *sl_arch_supported_list(void)
{
    return "llama, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, qwen35moe, gpt-oss, gemma4, deepseek2, "
           "glm4moe, glm-dsa, deepseek4";
}

char *sl_arch_key(char *buf, size_t cap, const char *arch, const char *suffix)
{
    snprintf(buf, cap, "%s.%s", arch, suffix);
    return buf;
}

char *sl_tensor_name(char *buf, size_t cap, int layer, const char *suffix)
{
    snprintf(buf, cap, "blk.%d.%s", layer, suffix);
    return buf;
}
