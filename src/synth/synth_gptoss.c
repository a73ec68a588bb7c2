/* synth_gptoss.c - gpt-oss's part of a synthetic model's shape: the sliding
 * window and its layer pattern (../shared/ARCHS.md section 2). */
#include <string.h>

#include "synth/synth.h"

int sl_synth_gptoss_init(sl_synth_config *c, sl_err *err)
{
    /* Tests need prompts longer than the window; the published models
     * slide over 128 tokens on the even layers. */
    const bool tiny = !strcmp(c->preset, "tiny") || !strcmp(c->preset, "tiny-k");
    c->n_swa = tiny ? 8 : 128;
    c->swa_period = 2;
    (void)err;
    return SL_OK;
}
