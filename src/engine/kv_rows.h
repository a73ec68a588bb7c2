/* kv_rows.h - how an attention layer's K and V rows are stored in a
 * session's cache: the value types of sluice.h's sl_kv_type (f16, f32,
 * q8_0, q4_0), their row sizes, their quant type ids, and the append of
 * one row (f32 values in, the type's bytes out).
 *
 * The quantised types store blocks of 32 values along the row, so each
 * K/V head of a row starts at a block boundary when the head size is a
 * multiple of 32 (session_layout.c refuses other head sizes). The bytes
 * of an appended row are the ones llama.cpp's CPU backend writes into its
 * cache for the same floats (q8_0: its x86 activation quantiser; q4_0:
 * its reference rule), so a quantised cache holds the reference's values.
 * Must not know: sessions, models. */
#ifndef SL_ENGINE_KV_ROWS_H
#define SL_ENGINE_KV_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"
#include "sluice.h"

/* Values per block of a quantised cache type. */
#define SL_KV_BLOCK 32

/* True when t is one of the sl_kv_type values. */
bool sl_kv_type_ok(int t);

/* True for the block types (q8_0, q4_0). */
bool sl_kv_type_quantized(sl_kv_type t);


/* The type by name (lower case, as llama.cpp's -ctk spells it); false if
 * it is not one of the four. */
bool sl_kv_type_parse(const char *name, sl_kv_type *out);

/* The quant type id whose blocks (or plain values) t stores. */
sl_type sl_kv_quant_type(sl_kv_type t);

/* Bytes of n values of type t; n must be a multiple of SL_KV_BLOCK for
 * the block types (the caller checks). */
uint64_t sl_kv_row_bytes(sl_kv_type t, uint64_t n);

/* Stores x[0..n) as type t at dst (sl_kv_row_bytes(t, n) bytes). */
void sl_kv_row_store(sl_kv_type t, const float *x, void *dst, int n);

#endif
