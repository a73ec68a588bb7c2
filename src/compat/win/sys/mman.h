/* sys/mman.h for the Windows build: what `sluice iobench` uses (an anonymous
 * arena, and --mmap's read-only view of a file, kept to show the Windows
 * trap: a live section serialises unbuffered reads). The engine itself
 * never maps a model file on Windows (util/file_win.c). */
#ifndef SL_COMPAT_MMAN_H
#define SL_COMPAT_MMAN_H

#include <stddef.h>
#include <sys/types.h>

#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_SHARED 1
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20
#define MAP_FAILED ((void *)-1)
#define MADV_HUGEPAGE 14
#define MADV_RANDOM 1
#define MADV_DONTNEED 4

void *sl_win_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int sl_win_munmap(void *addr, size_t len);
#define mmap sl_win_mmap
#define munmap sl_win_munmap
static inline int madvise(void *addr, size_t len, int advice)
{
    (void)addr; (void)len; (void)advice;
    return 0;
}

#endif
