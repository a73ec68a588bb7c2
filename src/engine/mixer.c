/* mixer.c - the mixer kinds by sl_mixer_kind (see mixer.h). */
#include "engine/mixer.h"

const sl_mixer_ops *sl_mixer_of(sl_mixer_kind k)
{
    static const sl_mixer_ops *const kinds[SL_MIXER_COUNT] = {[SL_MIXER_ATTN] = &sl_mixer_attn,
                                                              [SL_MIXER_GDN] = &sl_mixer_gdn,
                                                              [SL_MIXER_MLA] = &sl_mixer_mla,
                                                              [SL_MIXER_DS4] = &sl_mixer_ds4};
    return kinds[k];
}
