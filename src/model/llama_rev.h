/* llama_rev.h - which llama.cpp revision sluice's arithmetic follows where
 * llama.cpp's own revisions compute an operation differently.
 *
 * sluice reproduces llama.cpp's numbers to the bit. Where two
 * llama.cpp builds disagree in the last bit, one of them has to be chosen
 * (sl_llama_rev in sluice.h, the load's sl_model_params.llama_rev):
 *   SL_LLAMA_REV_2026_08  "2026-08": the reference fixtures' build (August
 *                         2026 snapshot; ../shared/fixtures/reference): the
 *                         default
 *   SL_LLAMA_REV_2026_09  "2026-09": node-llama-cpp 3.22.1's bundled build
 *                         (commit of 28 September 2026), the one
 *                         bench/llama_ref.sh runs
 * What differs between them (docs/ARCHITECTURE.md, "llama.cpp revisions"):
 * qwen35moe's q/k normalisation in the gated DeltaNet (ggml_l2_norm before
 * llama.cpp PR 28068, an RMS norm with eps / n and a 1 / sqrt(n) scale after
 * it); IQ4_XS products of rows % 8 == 0 (2026-09's IQ panel gemm order);
 * deepseek4's hyper-connection stream sums on a model no larger than the
 * 4-layer fixture (4 layers, 8 experts, top 2): the fixtures' build
 * computed that one with every product and sum rounded (llama.cpp's
 * unfused graph) and the larger variants with its fused ops' multiply-add
 * chains; 2026-09 takes the fused ops at every size
 * (families/deepseek4/family_deepseek4.c ds4_hc_fused); deepseek4's clamped
 * SwiGLU (2026-09's ggml_swiglu_clamp op, libm expf on every element; the
 * fixtures' build clamps the inputs of ggml's vectorised SwiGLU:
 * engine/ffn.h sl_ffn_swiglu_clamp_op).
 * The library reads no environment variable for this. */
#ifndef SL_LLAMA_REV_H
#define SL_LLAMA_REV_H

#include "sluice.h"

/* The revision named `name` ("2026-08" or "2026-09") into *out. SL_EINVAL,
 * naming the value seen and the known names, for anything else (NULL
 * included); *out is then left alone. */
int sl_llama_rev_parse(const char *name, sl_llama_rev *out, sl_err *err);

/* The name of rev ("2026-08", ...), or "?" for a value outside the enum.
 * A static string. */
const char *sl_llama_rev_name(sl_llama_rev rev);

/* The known names, for messages and help: "2026-08 (the default, ...) or
 * 2026-09 (...)". A static string. */
const char *sl_llama_rev_known(void);

/* SL_OK when rev is one of the enum's revisions, else SL_EINVAL naming the
 * value seen (sl_model_params.llama_rev) and the known ones. */
int sl_llama_rev_check(sl_llama_rev rev, sl_err *err);

#endif
