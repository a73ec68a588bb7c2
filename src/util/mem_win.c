/* mem_win.c - Windows implementation of mem.h.
 *
 * Budget: GlobalMemoryStatusEx's available physical memory and, when the
 * process runs in a job with a memory limit (the cgroup's counterpart), that
 * limit less what the job or process has committed. RSS: the working set
 * (GetProcessMemoryInfo). Arenas: VirtualAlloc; with MEM_LARGE_PAGES when
 * the process holds SeLockMemoryPrivilege (enabled here on first use),
 * normal pages otherwise. sl_mem_large_pages() says which one the last
 * arena got. */
#include "util/mem.h"

#include <windows.h>
#include <psapi.h>

#include <stdatomic.h>

static atomic_int large_state; /* 0 unknown, 1 privilege held, -1 not */

/* Enables SeLockMemoryPrivilege in the process token if the account has it. */
static bool large_pages_allowed(void)
{
    int s = atomic_load(&large_state);
    if (s) return s > 0;
    bool ok = false;
    HANDLE tok;
    if (OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &tok)) {
        TOKEN_PRIVILEGES tp = {.PrivilegeCount = 1};
        if (LookupPrivilegeValueW(NULL, L"SeLockMemoryPrivilege", &tp.Privileges[0].Luid)) {
            tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
            ok = AdjustTokenPrivileges(tok, FALSE, &tp, 0, NULL, NULL) &&
                 GetLastError() == ERROR_SUCCESS;
        }
        CloseHandle(tok);
    }
    ok = ok && GetLargePageMinimum() > 0;
    atomic_store(&large_state, ok ? 1 : -1);
    return ok;
}

static atomic_bool last_large;

bool sl_mem_large_pages(void)
{
    return atomic_load(&last_large);
}

const char *sl_mem_pages_name(void)
{
    return atomic_load(&last_large) ? "large pages" : "normal pages (no SeLockMemoryPrivilege)";
}

void *sl_mem_alloc_huge(size_t bytes)
{
    if (bytes == 0) return NULL;
    if (large_pages_allowed()) {
        const size_t lp = GetLargePageMinimum();
        const size_t len = (bytes + lp - 1) / lp * lp;
        void *p = VirtualAlloc(NULL, len, MEM_RESERVE | MEM_COMMIT | MEM_LARGE_PAGES, PAGE_READWRITE);
        if (p) {
            atomic_store(&last_large, true);
            return p;
        }
    }
    atomic_store(&last_large, false);
    return VirtualAlloc(NULL, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
}

void sl_mem_free_huge(void *p, size_t bytes)
{
    (void)bytes;
    if (p) VirtualFree(p, 0, MEM_RELEASE);
}

void sl_mem_advise_huge(void *p, size_t bytes)
{
    (void)p; /* large pages are chosen at allocation on Windows */
    (void)bytes;
}

bool sl_mem_prefault(void *p, size_t bytes)
{
    if (!p || bytes == 0) return true;
    volatile uint8_t *b = p;
    for (size_t i = 0; i < bytes; i += 4096) b[i] = 0;
    return true;
}

bool sl_mem_available(uint64_t *avail, uint64_t *cgroup_limit)
{
    *cgroup_limit = 0;
    MEMORYSTATUSEX ms = {.dwLength = sizeof ms};
    if (!GlobalMemoryStatusEx(&ms)) return false;
    uint64_t a = ms.ullAvailPhys;
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION jl;
    BOOL in_job = FALSE;
    if (IsProcessInJob(GetCurrentProcess(), NULL, &in_job) && in_job &&
        QueryInformationJobObject(NULL, JobObjectExtendedLimitInformation, &jl, sizeof jl, NULL)) {
        uint64_t lim = 0, used = 0;
        const DWORD f = jl.BasicLimitInformation.LimitFlags;
        PROCESS_MEMORY_COUNTERS_EX pc = {.cb = sizeof pc};
        GetProcessMemoryInfo(GetCurrentProcess(), (PROCESS_MEMORY_COUNTERS *)&pc, sizeof pc);
        if (f & JOB_OBJECT_LIMIT_JOB_MEMORY) {
            lim = jl.JobMemoryLimit;
            used = jl.PeakJobMemoryUsed; /* the job's peak: a conservative usage */
        }
        if ((f & JOB_OBJECT_LIMIT_PROCESS_MEMORY) && (!lim || jl.ProcessMemoryLimit < lim)) {
            lim = jl.ProcessMemoryLimit;
            used = pc.PrivateUsage;
        }
        if (lim) {
            *cgroup_limit = lim;
            const uint64_t room = lim > used ? lim - used : 0;
            if (room < a) a = room;
        }
    }
    *avail = a;
    return true;
}

bool sl_mem_rss(uint64_t *rss, uint64_t *peak)
{
    PROCESS_MEMORY_COUNTERS pc = {.cb = sizeof pc};
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &pc, sizeof pc)) return false;
    *rss = pc.WorkingSetSize;
    *peak = pc.PeakWorkingSetSize;
    return true;
}

void sl_proc_usage(uint64_t *major_faults, double *cpu_seconds)
{
    *major_faults = 0; /* Windows counts soft and hard faults together */
    *cpu_seconds = 0;
    FILETIME c, e, k, u;
    if (GetProcessTimes(GetCurrentProcess(), &c, &e, &k, &u)) {
        const uint64_t kt = (uint64_t)k.dwHighDateTime << 32 | k.dwLowDateTime;
        const uint64_t ut = (uint64_t)u.dwHighDateTime << 32 | u.dwLowDateTime;
        *cpu_seconds = (double)(kt + ut) * 1e-7;
    }
}
