/* aligned.h - heap blocks on a stated alignment (platform wrapper: POSIX
 * posix_memalign with free; Windows _aligned_malloc with _aligned_free, whose
 * blocks free() must never see, hence the pair). */
#ifndef SL_UTIL_ALIGNED_H
#define SL_UTIL_ALIGNED_H

#include <stddef.h>

/* bytes of heap starting on a multiple of align (a power of two, at least
 * sizeof(void *)); NULL when memory runs out. Release with sl_aligned_free. */
void *sl_aligned_alloc(size_t align, size_t bytes);

/* Releases a block from sl_aligned_alloc; NULL is ignored. */
void sl_aligned_free(void *p);

#endif
