/* gguf_writer.h - streaming GGUF (version 3) writer.
 *
 * Owns: producing a valid GGUF file from metadata, tensor declarations and
 * tensor bytes supplied in declaration order, possibly in many chunks, so a
 * 20 GB model is written with little RAM. Knows nothing about models.
 *
 * Usage:
 *   sl_gguf_writer_open(&w, path, err);
 *   sl_gguf_writer_set_*(w, key, ...);        // metadata, any order
 *   sl_gguf_writer_add_tensor(w, name, type, n_dims, ne, err); // declare all
 *   sl_gguf_writer_write(w, bytes, n, err);   // data, in declaration order;
 *                                             // padding between tensors is
 *                                             // inserted automatically
 *   sl_gguf_writer_close(w, err);             // checks all bytes arrived
 * Each setter copies its arguments. On any error the writer stays in a failed
 * state; sl_gguf_writer_close reports it. The file is written through the
 * writer of util/out_file.h: it replaces only another GGUF (never a file
 * the process has open as an input, e.g. the model it reads), and the
 * bytes go to a temporary file beside path that takes the name only when
 * sl_gguf_writer_close succeeds: a failed or aborted writer leaves path as
 * it was. sl_gguf_writer_abort frees without checks. */
#ifndef SL_GGUF_GGUF_WRITER_H
#define SL_GGUF_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "util/status.h"

typedef struct sl_gguf_writer sl_gguf_writer;

int sl_gguf_writer_open(sl_gguf_writer **out, const char *path, sl_err *err);

/* Asks for direct I/O (O_DIRECT), before any data is written: tensor bytes
 * then reach the device without passing through the page cache, which
 * costs no kernel copy, leaves other files' cached pages alone when the
 * file is larger than RAM, and means the data is on the device when
 * sl_gguf_writer_close returns (except the last partial 4 KiB block, which
 * is an ordinary write). Returns whether it is on: false where the file
 * system refuses it; the writer then works as before. The bytes written
 * are the same either way. */
bool sl_gguf_writer_direct_io(sl_gguf_writer *w);

int sl_gguf_writer_set_u32(sl_gguf_writer *w, const char *key, uint32_t v);
int sl_gguf_writer_set_i32(sl_gguf_writer *w, const char *key, int32_t v);
int sl_gguf_writer_set_u64(sl_gguf_writer *w, const char *key, uint64_t v);
int sl_gguf_writer_set_f32(sl_gguf_writer *w, const char *key, float v);
int sl_gguf_writer_set_bool(sl_gguf_writer *w, const char *key, bool v);
int sl_gguf_writer_set_str(sl_gguf_writer *w, const char *key, const char *v);
/* Arrays: strings (n NUL-terminated strings), int32, float32. */
int sl_gguf_writer_set_arr_str(sl_gguf_writer *w, const char *key,
                               const char *const *v, uint64_t n);
int sl_gguf_writer_set_arr_i32(sl_gguf_writer *w, const char *key,
                               const int32_t *v, uint64_t n);
int sl_gguf_writer_set_arr_f32(sl_gguf_writer *w, const char *key,
                               const float *v, uint64_t n);
/* Any value, in the reader's representation: every scalar type, strings,
 * arrays of any element type, nested arrays (at most 8 deep). Copying a kv
 * from an open sl_gguf works. Integers must fit their declared width. */
int sl_gguf_writer_set_value(sl_gguf_writer *w, const char *key,
                             const sl_gguf_value *v);

/* Declares the next tensor. ne[0] is the row length. All tensors must be
 * declared before the first sl_gguf_writer_write. */
int sl_gguf_writer_add_tensor(sl_gguf_writer *w, const char *name, sl_type type,
                              uint32_t n_dims, const uint64_t *ne, sl_err *err);

/* Appends n bytes of tensor data (the header is written on the first call).
 * Chunks may split or span tensors freely; padding is inserted between them. */
int sl_gguf_writer_write(sl_gguf_writer *w, const void *bytes, size_t n, sl_err *err);

/* Instead of any sl_gguf_writer_write: writes the header, then extends
 * the file to its full size without writing the tensor data, which is left
 * as a hole (reads as zeros; on file systems with sparse files it takes no
 * disk). The index is exactly the one a real write gives; every weight is
 * zero. For measuring what loading a file costs at sizes the disk cannot
 * hold. Fails (SL_EINVAL) after data writing began, or on a write or
 * ftruncate error; then call sl_gguf_writer_close as usual. */
int sl_gguf_writer_write_holes(sl_gguf_writer *w, sl_err *err);

/* Finishes the file: fails if the data written does not match the declared
 * tensors. Frees w in all cases. */
int sl_gguf_writer_close(sl_gguf_writer *w, sl_err *err);

/* Frees w without finishing the file. NULL allowed. */
void sl_gguf_writer_abort(sl_gguf_writer *w);

#endif
