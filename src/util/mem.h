/* mem.h - what memory this process may use and what it uses (platform
 * wrapper: /proc and cgroup files on Linux, mem.c; GlobalMemoryStatusEx, job
 * limits and VirtualAlloc on Windows, mem_win.c; other systems report
 * unknown). */
#ifndef SL_UTIL_MEM_H
#define SL_UTIL_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h" /* sl_mem_rss */

/* Bytes this process can still take without swapping or hitting its cgroup
 * limit: min(MemAvailable, cgroup limit - cgroup usage) over the cgroup v2
 * hierarchy or the v1 memory controller. Also reports the cgroup limit
 * (0 if none). False if nothing could be read. */
bool sl_mem_available(uint64_t *avail, uint64_t *cgroup_limit);

/* sl_mem_available reading the given files instead of /proc/meminfo,
 * /proc/self/cgroup and the hierarchy under /sys/fs/cgroup (v1 under
 * cgroup_root/memory): for tests. Linux only. */
bool sl_mem_available_from(const char *meminfo, const char *proc_cgroup, const char *cgroup_root,
                           uint64_t *avail, uint64_t *cgroup_limit);

/* The memory budget when --mem-budget is not given: avail (from
 * sl_mem_available) less a margin of max(5%, 512 MiB). The margin is for the
 * low-memory killers (Android's lmkd, systemd-oomd), which act on memory
 * pressure while MemAvailable is still well above zero, and for the page
 * cache the rest of the system lives on. 0 if avail is below the margin. */
uint64_t sl_mem_default_budget(uint64_t avail);

/* A large anonymous arena on 2 MiB boundaries with transparent huge pages
 * asked for (madvise; falls back silently to small pages). Reads into huge
 * pages ran 2.1-2.3x faster on the virtual disk measured in docs/perf-log.md.
 * Returns NULL on failure; free with sl_mem_free_huge(p, bytes). */
void *sl_mem_alloc_huge(size_t bytes);
void sl_mem_free_huge(void *p, size_t bytes);

/* Asks for transparent huge pages on the whole 2 MiB pages inside [p, p +
 * bytes) of memory the caller already owns (madvise; a hint: nothing
 * happens where the system has none, or off Linux). */
void sl_mem_advise_huge(void *p, size_t bytes);

/* Faults in (and zeroes) every page of [p, p + bytes) now, so that later
 * first touches (a direct read landing there) cost nothing, and so that
 * memory that cannot be had shows up here rather than mid-run. Returns
 * false if the kernel refused (out of memory). */
bool sl_mem_prefault(void *p, size_t bytes);

/* True when the last sl_mem_alloc_huge arena got large pages the system
 * guarantees (Windows MEM_LARGE_PAGES, with the lock-memory privilege);
 * false for transparent huge pages (a hint) and normal pages. */
bool sl_mem_large_pages(void);

/* The pages the last sl_mem_alloc_huge arena got, for reports: "huge pages"
 * (transparent, asked for) on Linux; "large pages" or "normal pages (no
 * SeLockMemoryPrivilege)" on Windows. A static string. */
const char *sl_mem_pages_name(void);

/* sl_mem_rss (resident set size now and at its peak: VmRSS / VmHWM) is
 * declared in sluice.h. */

/* Major page faults and CPU seconds (user + system) of this process. */
void sl_proc_usage(uint64_t *major_faults, double *cpu_seconds);

#endif
