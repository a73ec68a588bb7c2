/* llama_rev.c - SLUICE_LLAMA_REF, the llama.cpp revision to follow. */
#include "model/llama_rev.h"

#include <stdlib.h>
#include <string.h>

#include "util/status.h"

int sl_llama_rev_from_env(sl_llama_rev *out, sl_err *err)
{
    const char *v = getenv("SLUICE_LLAMA_REF");
    *out = SL_LLAMA_REV_2026_08;
    if (!v || !v[0] || !strcmp(v, "2026-08")) return SL_OK;
    if (!strcmp(v, "2026-09")) {
        *out = SL_LLAMA_REV_2026_09;
        return SL_OK;
    }
    return sl_err_set(err, SL_EINVAL, "SLUICE_LLAMA_REF is '%s'; it names the llama.cpp "
                      "revision whose arithmetic to follow: 2026-08 (the default, the "
                      "reference fixtures' build) or 2026-09 (node-llama-cpp 3.22.1's)", v);
}
