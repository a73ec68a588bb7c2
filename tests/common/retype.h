/* retype.h - rewriting a GGUF file with some tensors in another type, so
 * tests can build models whose matrices mix types (as real quantised files
 * do) from the generator's uniform ones. */
#ifndef SL_TESTS_RETYPE_H
#define SL_TESTS_RETYPE_H

#include "quant/quant.h"

/* Copies src to dst (metadata and tensors, in order); every matrix (2 or
 * more dimensions) whose name contains `match` is dequantised and
 * requantised to `type` with the traits' quantiser. Returns 0, or -1 with
 * a message on stderr. */
int t_gguf_retype(const char *src, const char *dst, const char *match, sl_type type);

#endif
