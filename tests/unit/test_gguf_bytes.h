/* test_gguf_bytes.h - a tiny GGUF byte builder for the reader's tests
 * (header-only, static).
 *
 * Assembles files field by field straight from the format description, with
 * no help from src/gguf, so the tests can make any valid or broken layout
 * and know every field's byte offset (gb.n before the field is appended). */
#ifndef SL_TEST_GGUF_BYTES_H
#define SL_TEST_GGUF_BYTES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gb {
    uint8_t *p;
    size_t n, cap;
} gb;

static void gb_put(gb *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

/* little-endian by construction, whatever the host */
static void gb_uint(gb *b, uint64_t v, int n)
{
    uint8_t x[8];
    for (int i = 0; i < n; i++) x[i] = (uint8_t)(v >> (8 * i));
    gb_put(b, x, (size_t)n);
}
static void gb_u8(gb *b, uint8_t v) { gb_uint(b, v, 1); }
static void gb_u32(gb *b, uint32_t v) { gb_uint(b, v, 4); }
static void gb_u64(gb *b, uint64_t v) { gb_uint(b, v, 8); }

static void gb_str(gb *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_put(b, s, strlen(s));
}

static void gb_zeros(gb *b, size_t n)
{
    for (size_t i = 0; i < n; i++) gb_u8(b, 0);
}

static void gb_pad(gb *b, size_t align)
{
    while (b->n % align) gb_u8(b, 0);
}

/* magic "GGUF", version, tensor count, kv count: 24 bytes */
static void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_put(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

/* value type ids from the GGUF spec */
enum { GB_U8 = 0, GB_I8, GB_U16, GB_I16, GB_U32, GB_I32, GB_F32, GB_BOOL, GB_STR, GB_ARR,
       GB_U64, GB_I64, GB_F64 };

static void gb_kv_u32(gb *b, const char *key, uint32_t v)
{
    gb_str(b, key);
    gb_u32(b, GB_U32);
    gb_u32(b, v);
}

static void gb_kv_str(gb *b, const char *key, const char *v)
{
    gb_str(b, key);
    gb_u32(b, GB_STR);
    gb_str(b, v);
}

static void gb_tinfo(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                     uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gb_u64(b, ne[d]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

static void gb_free(gb *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

#endif
