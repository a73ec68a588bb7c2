/* gguf_internal.h - shared between the files of the GGUF reader only.
 *
 * Owns: the layout of struct sl_gguf, the bump arena every parsed string and
 * array lives in, and the one-image parser used by both the file and the
 * memory front-ends. Nothing outside src/gguf/ includes this. */
#ifndef SL_GGUF_GGUF_INTERNAL_H
#define SL_GGUF_GGUF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "util/file.h"

/* The header (metadata + tensor infos) of a file must end within this many
 * bytes. Real headers are a few MB (a 256k-token vocabulary with merges is
 * ~15 MB); the cap bounds what a hostile count can make us read or allocate. */
#define SL_GGUF_MAX_HEADER ((uint64_t)256 << 20)

/* Arrays nested deeper than this are rejected (no real file nests at all;
 * the limit keeps recursion bounded on hostile input). */
#define SL_GGUF_MAX_ARRAY_DEPTH 8

/* ---- arena: many small allocations freed at once ------------------------ */

typedef struct sl_gguf_arena_blk sl_gguf_arena_blk;
typedef struct sl_gguf_arena {
    sl_gguf_arena_blk *head; /* current block; older ones chained behind */
} sl_gguf_arena;

/* Zeroed memory of n bytes aligned for any type, or NULL if out of memory. */
void *sl_gguf_arena_alloc(sl_gguf_arena *a, uint64_t n);
void sl_gguf_arena_free(sl_gguf_arena *a);

/* ---- one parsed image (a whole file, or one part of a split model) ------ */

typedef struct sl_gguf_image {
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;      /* aligned start of the tensor data section */
    uint64_t n_kv;
    sl_gguf_kv *kvs;           /* n_kv, file order */
    uint64_t n_tensors;
    sl_gguf_tensor *tensors;   /* n_tensors, file order */
    uint64_t *tensor_info_off; /* n_tensors: byte offset of each tensor info */
    const sl_gguf_kv **kv_index;         /* sorted by key */
    const sl_gguf_tensor **tensor_index; /* sorted by name */
} sl_gguf_image;

/* Where the bytes of an image come from: a memory buffer, or an open file
 * whose header is read in growing chunks (never mapped). */
typedef struct sl_gguf_src {
    const uint8_t *mem;  /* memory image, or NULL */
    const sl_file *file; /* file, when mem is NULL */
    uint64_t size;       /* bytes in the image / file */
    const char *name;    /* for messages */
} sl_gguf_src;

/* Parses and validates one image; tensors get file_index. Everything lands
 * in arena a (freed by the caller whatever the outcome). On failure returns
 * SL_EFORMAT (or SL_EIO / SL_ENOMEM) with a message naming the problem, the
 * field and the byte offset, prefixed by src->name. */
int sl_gguf_parse_image(sl_gguf_arena *a, const sl_gguf_src *src, uint32_t file_index,
                        sl_gguf_image *out, sl_err *err);

/* Sorts pointers to kvs by key, reporting the first duplicate. */
int sl_gguf_index_kvs(sl_gguf_arena *a, const sl_gguf_kv *kvs, uint64_t n,
                      const sl_gguf_kv ***out, const char *name, sl_err *err);

/* Sorts pointers to tensors by name, reporting the first duplicate (with the
 * files and info offsets of both when info_off is not NULL). */
int sl_gguf_index_tensors(sl_gguf_arena *a, const sl_gguf_tensor *t, uint64_t n,
                          const uint64_t *info_off, const sl_gguf_tensor ***out,
                          const char *name, sl_err *err);

/* Binary search in an index built above; NULL if absent. */
const sl_gguf_kv *sl_gguf_index_find_kv(const sl_gguf_kv *const *idx, uint64_t n,
                                        const char *key);
const sl_gguf_tensor *sl_gguf_index_find_tensor(const sl_gguf_tensor *const *idx,
                                                uint64_t n, const char *name);

/* Writes a printable, escaped, possibly shortened form of s into buf (for
 * messages: names in hostile files may hold control bytes). Returns buf. */
const char *sl_gguf_str_show(char *buf, size_t cap, const sl_gguf_str *s);

/* ---- the handle ----------------------------------------------------------- */

typedef struct sl_gguf_part {
    sl_file file;          /* fd == -1 for a memory image */
    char *path;            /* owned (file.path for files, "(memory)" else) */
    uint64_t size;
    uint64_t data_offset;
} sl_gguf_part;

struct sl_gguf {
    sl_gguf_arena arena;
    uint32_t version;
    uint64_t alignment;
    uint64_t n_kv;
    const sl_gguf_kv *kvs;
    const sl_gguf_kv **kv_index;       /* sorted by key */
    uint64_t n_tensors;
    sl_gguf_tensor *tensors;           /* all parts, in part then file order */
    const sl_gguf_tensor **tensor_index; /* sorted by name */
    uint32_t n_parts;
    sl_gguf_part *parts;
    const uint8_t *mem;                /* memory image or NULL */
};

#endif
