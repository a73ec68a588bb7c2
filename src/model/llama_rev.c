/* llama_rev.c - the llama.cpp revisions sluice can follow, by name. */
#include "model/llama_rev.h"

#include <string.h>

#include "util/status.h"

static const char *const rev_names[SL_LLAMA_REV_COUNT] = {
    [SL_LLAMA_REV_2026_08] = "2026-08",
    [SL_LLAMA_REV_2026_09] = "2026-09",
};

const char *sl_llama_rev_known(void)
{
    return "2026-08 (the default: the reference fixtures' build) or 2026-09 "
           "(node-llama-cpp 3.22.1's, the one bench/llama_ref.sh runs)";
}

const char *sl_llama_rev_name(sl_llama_rev rev)
{
    return (unsigned)rev < SL_LLAMA_REV_COUNT ? rev_names[rev] : "?";
}

int sl_llama_rev_parse(const char *name, sl_llama_rev *out, sl_err *err)
{
    for (int i = 0; name && i < SL_LLAMA_REV_COUNT; i++)
        if (!strcmp(name, rev_names[i])) {
            *out = (sl_llama_rev)i;
            return SL_OK;
        }
    return sl_err_set(err, SL_EINVAL, "the llama.cpp revision '%s' is unknown; it names the "
                      "llama.cpp build whose arithmetic to follow: %s",
                      name ? name : "(none)", sl_llama_rev_known());
}

int sl_llama_rev_check(sl_llama_rev rev, sl_err *err)
{
    if ((unsigned)rev < SL_LLAMA_REV_COUNT) return SL_OK;
    return sl_err_set(err, SL_EINVAL, "sl_model_params.llama_rev is %d, not a llama.cpp "
                      "revision sluice knows: %s", (int)rev, sl_llama_rev_known());
}
