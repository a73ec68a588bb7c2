/* gguf.h - strict, bounds-checked GGUF reader (versions 2 and 3).
 *
 * Owns: parsing and validating the header, metadata and tensor infos of a
 * GGUF file (or a split set *-00001-of-0000N.gguf read as one), and reading
 * tensor bytes by position. Knows nothing about models or architectures.
 *
 * Every count, length and offset read from the file is checked with
 * overflow-safe arithmetic before use. A bad file yields SL_EFORMAT and one
 * message naming the problem, the field and the byte offset.
 *
 * Lifetime: all pointers returned by accessors (keys, strings, tensor infos)
 * belong to the sl_gguf and stay valid until sl_gguf_close. */
#ifndef SL_GGUF_GGUF_H
#define SL_GGUF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"
#include "util/status.h"

#define SL_GGUF_MAX_DIMS 4
#define SL_GGUF_DEFAULT_ALIGNMENT 32

typedef enum sl_gguf_vtype {
    SL_GGUF_UINT8 = 0,
    SL_GGUF_INT8 = 1,
    SL_GGUF_UINT16 = 2,
    SL_GGUF_INT16 = 3,
    SL_GGUF_UINT32 = 4,
    SL_GGUF_INT32 = 5,
    SL_GGUF_FLOAT32 = 6,
    SL_GGUF_BOOL = 7,
    SL_GGUF_STRING = 8,
    SL_GGUF_ARRAY = 9,
    SL_GGUF_UINT64 = 10,
    SL_GGUF_INT64 = 11,
    SL_GGUF_FLOAT64 = 12,
    SL_GGUF_VTYPE_COUNT = 13,
} sl_gguf_vtype;

typedef struct sl_gguf_str {
    const char *ptr; /* NUL-terminated copy (the file's bytes may hold NULs:
                        len is authoritative) */
    uint64_t len;
} sl_gguf_str;

typedef struct sl_gguf_value sl_gguf_value;

typedef struct sl_gguf_array {
    sl_gguf_vtype type;        /* element type */
    uint64_t n;                /* element count */
    const void *data;          /* numeric/bool: n packed little-endian elements
                                  as in the file; STRING: sl_gguf_str[n];
                                  ARRAY: sl_gguf_value[n] (nested) */
} sl_gguf_array;

struct sl_gguf_value {
    sl_gguf_vtype type;
    union {
        uint64_t u64;  /* UINT8/16/32/64 widened */
        int64_t i64;   /* INT8/16/32/64 widened */
        double f64;    /* FLOAT32/64 widened */
        bool b;
        sl_gguf_str str;
        sl_gguf_array arr;
    } v;
};

typedef struct sl_gguf_kv {
    sl_gguf_str key;
    sl_gguf_value value;
    uint64_t file_offset; /* where the key/value pair starts, for messages */
} sl_gguf_kv;

typedef struct sl_gguf_tensor {
    sl_gguf_str name;
    uint32_t n_dims;
    uint64_t ne[SL_GGUF_MAX_DIMS]; /* ne[0] is the row length (innermost);
                                      unused dims are 1 */
    uint64_t n_elements;
    sl_type type;
    uint32_t file_index;  /* which split file holds the data (0 if single) */
    uint64_t offset;      /* absolute byte offset of the data in that file */
    uint64_t nbytes;      /* bytes of data */
} sl_gguf_tensor;

typedef struct sl_gguf sl_gguf;

/* Opens and validates a GGUF file. If path names the first part of a split
 * model (..-00001-of-0000N.gguf), all parts are opened and their tensors
 * presented as one list (metadata comes from the first part). On success
 * *out owns the open files; free with sl_gguf_close. */
int sl_gguf_open(sl_gguf **out, const char *path, sl_err *err);

/* Parses a GGUF image held in memory (used by the fuzzer and tests). The
 * buffer must outlive the returned handle; tensor data must lie inside it. */
int sl_gguf_open_memory(sl_gguf **out, const void *buf, size_t len, sl_err *err);

/* Releases everything; NULL is allowed. */
void sl_gguf_close(sl_gguf *g);

uint32_t sl_gguf_version(const sl_gguf *g);
uint64_t sl_gguf_alignment(const sl_gguf *g);

/* Metadata: count, positional access, lookup by key (NULL if absent). */
uint64_t sl_gguf_kv_count(const sl_gguf *g);
const sl_gguf_kv *sl_gguf_kv_at(const sl_gguf *g, uint64_t i);
const sl_gguf_kv *sl_gguf_find(const sl_gguf *g, const char *key);

/* Typed getters. Each returns false if the key is absent or its value cannot
 * be represented in the requested type (integers of any width convert when
 * in range; floats accept FLOAT32/FLOAT64). *out untouched on false. */
bool sl_gguf_get_u32(const sl_gguf *g, const char *key, uint32_t *out);
bool sl_gguf_get_u64(const sl_gguf *g, const char *key, uint64_t *out);
bool sl_gguf_get_i32(const sl_gguf *g, const char *key, int32_t *out);
bool sl_gguf_get_f32(const sl_gguf *g, const char *key, float *out);
bool sl_gguf_get_bool(const sl_gguf *g, const char *key, bool *out);
/* Returns the NUL-terminated string, or NULL if absent / not a string. */
const char *sl_gguf_get_str(const sl_gguf *g, const char *key);
/* Returns the array, or NULL if absent / not an array. */
const sl_gguf_array *sl_gguf_get_arr(const sl_gguf *g, const char *key);

/* Element i of a numeric array converted to double / int64; false if out of
 * range or the element type is not numeric. */
bool sl_gguf_arr_f64(const sl_gguf_array *a, uint64_t i, double *out);
bool sl_gguf_arr_i64(const sl_gguf_array *a, uint64_t i, int64_t *out);
/* Element i of a string array, or NULL. */
const sl_gguf_str *sl_gguf_arr_str(const sl_gguf_array *a, uint64_t i);

/* Name of a value type, e.g. "uint32", "array". */
const char *sl_gguf_vtype_name(sl_gguf_vtype t);

/* Tensors, in file order (split parts concatenated). */
uint64_t sl_gguf_tensor_count(const sl_gguf *g);
const sl_gguf_tensor *sl_gguf_tensor_at(const sl_gguf *g, uint64_t i);
const sl_gguf_tensor *sl_gguf_find_tensor(const sl_gguf *g, const char *name);

/* Files behind the handle (1 unless split). Path and size for messages and
 * for I/O layers that open their own descriptors (e.g. O_DIRECT lanes). */
uint32_t sl_gguf_file_count(const sl_gguf *g);
const char *sl_gguf_file_path(const sl_gguf *g, uint32_t i);
uint64_t sl_gguf_file_size(const sl_gguf *g, uint32_t i);
/* Offset of the tensor data section of file i (aligned). */
uint64_t sl_gguf_data_offset(const sl_gguf *g, uint32_t i);

/* Reads len bytes starting at byte `from` of tensor t's data into dst
 * (buffered pread, or memcpy for in-memory images). Range is checked. */
int sl_gguf_read_tensor(const sl_gguf *g, const sl_gguf_tensor *t, uint64_t from,
                        void *dst, uint64_t len, sl_err *err);

#endif
