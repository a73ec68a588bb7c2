/* retype.h - rewriting a GGUF file with some tensors in another type, so
 * tests can build models whose matrices mix types (as real quantised files
 * do) from the generator's uniform ones. */
#ifndef SL_TESTS_RETYPE_H
#define SL_TESTS_RETYPE_H

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

/* One step of a rewrite, called once for each tensor t of the source file
 * g, in order: see t_gguf_rewrite. Returns 0, or -1 with err set. */
typedef int (*t_tensor_step)(void *ctx, const sl_gguf *g, sl_gguf_writer *w,
                             const sl_gguf_tensor *t, sl_err *err);

/* Writes a rewritten copy of src to dst: src's metadata as it is, then
 * declare for every tensor of src (it adds dst's tensor infos for t with
 * sl_gguf_writer_add_tensor: one, several or none), then write for every
 * tensor (it writes the data of what declare added for t, in the same
 * order). ctx is passed to both. Returns 0, or -1 with "  WHAT SRC -> DST:
 * message" on stderr (dst may then hold a partial file). */
int t_gguf_rewrite(const char *src, const char *dst, const char *what, t_tensor_step declare,
                   t_tensor_step write, void *ctx);

/* Copies src to dst (metadata and tensors, in order); every matrix (2 or
 * more dimensions) whose name contains `match` is dequantised and
 * requantised to `type` with the traits' quantiser. Returns 0, or -1 with
 * a message on stderr. */
int t_gguf_retype(const char *src, const char *dst, const char *match, sl_type type);

#endif
