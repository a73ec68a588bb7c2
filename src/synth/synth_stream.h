/* synth_stream.h - the tensor data of a generated model, streamed through
 * the GGUF writer: generated (sl_synth_gen_rows), encoded to each tensor's
 * type and written a chunk at a time, on generator threads while the
 * calling thread writes. Shared by every generator's writer (synth_write.c,
 * synth_ds.c); they own the metadata and the file. */
#ifndef SL_SYNTH_STREAM_H
#define SL_SYNTH_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf_writer.h"
#include "synth/synth.h"

/* What streaming a list of tensors takes (sl_synth_stream_measure). */
typedef struct sl_synth_stream_size {
    uint64_t data_bytes;  /* the tensors' bytes, without padding */
    uint64_t n_chunks;    /* chunks the data is cut into */
    size_t max_out;       /* the largest chunk's encoded bytes */
    size_t max_in;        /* floats of generator scratch a worker needs */
    size_t n_fallback;    /* tensors whose type fell back */
} sl_synth_stream_size;

/* Sizes and chunk counts of tensors t[0..nt) (types chosen), into *out;
 * fails (SL_EUNSUPPORTED) naming a tensor whose type has no quantiser, or
 * (SL_EINVAL) when the total overflows. Writes nothing. */
int sl_synth_stream_measure(const sl_synth_tensor *t, size_t nt, sl_synth_stream_size *out,
                            sl_err *err);

/* Writes the data of t[0..nt), in order, to w (whose header lists the same
 * tensors): the values of g (its seed, type and layer count, as
 * sl_synth_gen_rows reads them), on g->threads generator threads (0 or 1:
 * all in the caller). The bytes do not depend on the thread count. sz is
 * sl_synth_stream_measure's result for the same tensors. progress (may be
 * NULL) is called after each chunk; non-zero cancels (SL_EINVAL
 * "cancelled"). Fails on a write error or out of memory; w stays the
 * caller's (close or abort it). */
int sl_synth_stream_write(sl_gguf_writer *w, const sl_synth_config *g, const sl_synth_tensor *t,
                          size_t nt, const sl_synth_stream_size *sz,
                          sl_synth_progress_fn progress, void *progress_ud, sl_err *err);

#endif
