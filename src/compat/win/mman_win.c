/* mman_win.c - sys/mman.h's mmap / munmap for the Windows build. */
#include <windows.h>

#include <errno.h>
#include <io.h>

#include "sys/mman.h"

void *sl_win_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    (void)addr;
    if (flags & MAP_ANONYMOUS) {
        void *p = VirtualAlloc(NULL, len, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
        if (!p) errno = ENOMEM;
        return p ? p : MAP_FAILED;
    }
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    const int ro = !(prot & PROT_WRITE);
    HANDLE sec = CreateFileMappingW(h, NULL, ro ? PAGE_READONLY : PAGE_READWRITE, 0, 0, NULL);
    if (!sec) {
        errno = EACCES;
        return MAP_FAILED;
    }
    void *p = MapViewOfFile(sec, ro ? FILE_MAP_READ : FILE_MAP_WRITE, (DWORD)((uint64_t)off >> 32),
                            (DWORD)((uint64_t)off & 0xffffffffu), len);
    CloseHandle(sec); /* the view keeps the section alive */
    if (!p) errno = ENOMEM;
    return p ? p : MAP_FAILED;
}

int sl_win_munmap(void *addr, size_t len)
{
    (void)len;
    MEMORY_BASIC_INFORMATION mi;
    if (!VirtualQuery(addr, &mi, sizeof mi)) return -1;
    if (mi.Type == MEM_MAPPED) return UnmapViewOfFile(addr) ? 0 : -1;
    return VirtualFree(mi.AllocationBase, 0, MEM_RELEASE) ? 0 : -1;
}
