/* synth_gemma4.c - gemma4's part of a synthetic model's shape: which layers
 * slide and the sliding layers' dimensions, per preset. */
#include <string.h>

#include "synth/synth.h"

/* What gemma4 adds to a preset. tiny: 4 layers alternating sliding (0, 2)
 * and full (1, 3), a window of 4 shorter than any test prompt; 26b-a4b:
 * Gemma-4-26B-A4B's published sliding layers (5 of every 6, 8 K/V heads of
 * 256, window 1024). Other presets: a quarter of the head on 5 of 6 layers,
 * all heads K/V, window 128. */
typedef struct g4_preset {
    const char *name;
    uint32_t n_layer, head_dim_swa, kv_swa, window, period;
} g4_preset;

static const g4_preset g4_presets[] = {
    /* name    layers hd_swa kv_swa window period */
    {"tiny",      4,   8,     2,     4,     2},
    {"tiny-k",    4,   32,    2,     8,     2},
    {"26b-a4b",  30,   256,   8,     1024,  6},
};

bool sl_synth_gemma4_slides(const sl_synth_config *c, uint32_t l)
{
    return c->swa_period > 0 && (l + 1) % c->swa_period != 0;
}

int sl_synth_gemma4_init(sl_synth_config *c, sl_err *err)
{
    const g4_preset *g = NULL;
    for (size_t i = 0; i < sizeof g4_presets / sizeof g4_presets[0]; i++)
        if (!strcmp(c->preset, g4_presets[i].name)) g = &g4_presets[i];
    if (g) {
        c->n_layer = g->n_layer;
        c->head_dim_swa = g->head_dim_swa;
        c->n_head_kv_swa = g->kv_swa;
        c->n_swa = g->window;
        c->swa_period = g->period;
    } else {
        c->head_dim_swa = c->head_dim / 4 >= 2 ? c->head_dim / 4 : 2;
        c->n_head_kv_swa = c->n_head;
        c->n_swa = 128;
        c->swa_period = 6;
    }
    if (c->n_ff == 0)
        return sl_err_set(err, SL_EINVAL, "gemma4 needs a dense MLP width (preset '%s' has none)",
                          c->preset);
    return SL_OK;
}
