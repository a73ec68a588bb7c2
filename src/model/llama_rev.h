/* llama_rev.h - which llama.cpp revision sluice's arithmetic follows where
 * llama.cpp's own revisions compute an operation differently.
 *
 * sluice reproduces llama.cpp's numbers to the bit (issue 11). Where two
 * llama.cpp builds disagree in the last bit, one of them has to be chosen:
 *   SL_LLAMA_REV_2026_08  the reference fixtures' build (August 2026
 *                         snapshot; ../shared/fixtures/reference): the default
 *   SL_LLAMA_REV_2026_09  node-llama-cpp 3.22.1's bundled build (commit of
 *                         28 September 2026), the one bench/llama_ref.sh runs
 * The environment variable SLUICE_LLAMA_REF (2026-08 or 2026-09) chooses at
 * model load. What differs between them (docs/ARCHITECTURE.md, "llama.cpp
 * revisions"): qwen35moe's q/k normalisation in the gated DeltaNet
 * (ggml_l2_norm before llama.cpp PR 28068, an RMS norm with eps / n and a
 * 1 / sqrt(n) scale after it). */
#ifndef SL_LLAMA_REV_H
#define SL_LLAMA_REV_H

#include "sluice.h"

typedef enum sl_llama_rev {
    SL_LLAMA_REV_2026_08 = 0,
    SL_LLAMA_REV_2026_09,
} sl_llama_rev;

/* The revision SLUICE_LLAMA_REF names (unset or empty: 2026-08) into *out.
 * SL_EINVAL, naming the value and the accepted ones, for anything else. */
int sl_llama_rev_from_env(sl_llama_rev *out, sl_err *err);

#endif
