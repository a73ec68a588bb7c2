/* aligned.c - POSIX implementation of aligned.h. */
#include "util/aligned.h"

#include <stdlib.h>

void *sl_aligned_alloc(size_t align, size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, align, bytes ? bytes : 1) == 0 ? p : NULL;
}

void sl_aligned_free(void *p)
{
    free(p);
}
