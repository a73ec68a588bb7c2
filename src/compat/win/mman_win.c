/* mman_win.c - sys/mman.h's mmap / munmap for the Windows build, and the
 * map report that proves the model file is never mapped.
 *
 * With SLUICE_WIN_MAP_REPORT set, the exe prints at exit how many file
 * sections mmap created during the run (the only place in sluice that
 * calls CreateFileMappingW) and how many views of .gguf files the
 * process's address space holds then (VirtualQuery over every region,
 * GetMappedFileNameW on each mapped one): tests/cli/windows.sh asserts
 * both are 0 after a streamed run. A live section serialises unbuffered
 * reads of its file on Windows (docs/ARCHITECTURE.md, "Windows"). */
#include <windows.h>

#include <psapi.h>

#include <errno.h>
#include <io.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#include "sys/mman.h"

static atomic_int file_sections; /* file-backed sections mmap created */

/* mapped views whose file name ends in .gguf (any case) */
static int gguf_views(void)
{
    int n = 0;
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    const char *a = si.lpMinimumApplicationAddress;
    MEMORY_BASIC_INFORMATION mi;
    while (a < (const char *)si.lpMaximumApplicationAddress && VirtualQuery(a, &mi, sizeof mi)) {
        if (mi.State == MEM_COMMIT && mi.Type == MEM_MAPPED && mi.AllocationBase == mi.BaseAddress) {
            wchar_t name[1024];
            const DWORD len = GetMappedFileNameW(GetCurrentProcess(), mi.BaseAddress, name, 1024);
            if (len >= 5 && _wcsicmp(name + len - 5, L".gguf") == 0) n++;
        }
        a = (const char *)mi.BaseAddress + mi.RegionSize;
    }
    return n;
}

static void map_report(void)
{
    fprintf(stderr, "sluice: map report: %d file sections created, %d views of .gguf files alive\n",
            atomic_load(&file_sections), gguf_views());
}

__attribute__((constructor)) static void map_report_init(void)
{
    if (getenv("SLUICE_WIN_MAP_REPORT")) atexit(map_report);
}

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
    if (sec) atomic_fetch_add(&file_sections, 1);
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
