/* aligned_win.c - Windows implementation of aligned.h. */
#include "util/aligned.h"

#include <malloc.h>

void *sl_aligned_alloc(size_t align, size_t bytes)
{
    return _aligned_malloc(bytes ? bytes : 1, align);
}

void sl_aligned_free(void *p)
{
    _aligned_free(p);
}
