/* checked.h - overflow-checked size arithmetic.
 *
 * Every size that comes from a file header goes through these before it is
 * used to allocate, index or seek. Each returns true on success and writes
 * the result; on overflow it returns false and leaves *out unspecified. */
#ifndef SL_UTIL_CHECKED_H
#define SL_UTIL_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

static inline bool sl_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline bool sl_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* Rounds v up to a multiple of align (align > 0). */
static inline bool sl_align_up_u64(uint64_t v, uint64_t align, uint64_t *out)
{
    uint64_t r = v % align;
    if (r == 0) { *out = v; return true; }
    return sl_add_u64(v, align - r, out);
}

#endif
