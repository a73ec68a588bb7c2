/* mem.c - see mem.h. */
#include "util/mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define HUGE_PAGE ((size_t)2 << 20)

void *sl_mem_alloc_huge(size_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX - HUGE_PAGE) return NULL;
    const size_t len = bytes + HUGE_PAGE; /* room to start on a huge page */
    uint8_t *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    /* give back the unaligned head and the tail beyond bytes */
    if (p > raw) munmap(raw, (size_t)(p - raw));
    const size_t tail = (size_t)(raw + len - (p + bytes));
    if (tail) munmap(p + bytes, tail);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

bool sl_mem_large_pages(void)
{
    return false; /* transparent huge pages are a hint, never a guarantee */
}

const char *sl_mem_pages_name(void)
{
    return "huge pages";
}

void sl_mem_advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    const uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (p && hi > lo) madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#else
    (void)p, (void)bytes;
#endif
}

bool sl_mem_prefault(void *p, size_t bytes)
{
    if (!p || bytes == 0) return true;
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return true;
    /* EINVAL: a kernel before 5.14; ENOSYS / EPERM / EOPNOTSUPP: an
     * emulator or a sandbox without it. Touch the pages instead. ENOMEM
     * and the rest are real failures. */
    if (errno != EINVAL && errno != ENOSYS && errno != EPERM && errno != EOPNOTSUPP) return false;
#endif
    volatile uint8_t *b = p;
    for (size_t i = 0; i < bytes; i += 4096) b[i] = 0;
    return true;
}

void sl_mem_free_huge(void *p, size_t bytes)
{
    if (p) munmap(p, bytes);
}

/* Reads the first number in a file ("max" reads as no limit: false). */
static bool read_u64_file(const char *path, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char buf[64] = {0};
    bool ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok || !strncmp(buf, "max", 3)) return false;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (end == buf) return false;
    *out = v;
    return true;
}

/* Value of "Key: N kB" in a /proc file, in bytes. */
static bool read_kb_field(const char *path, const char *key, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[256];
    size_t klen = strlen(key);
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            *out = strtoull(line + klen + 1, NULL, 10) * 1024ull;
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}

/* The tightest (limit - usage) along this process's cgroup path, read from
 * proc_cgroup (the /proc/self/cgroup format) under root (v2 there, v1 in
 * root/memory). */
static bool cgroup_headroom(const char *proc_cgroup, const char *root_dir, uint64_t *headroom,
                            uint64_t *limit_out)
{
    FILE *f = fopen(proc_cgroup, "r");
    if (!f) return false;
    char line[1024];
    char v2[1024] = "", v1[1024] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "0::", 3)) snprintf(v2, sizeof v2, "%s", line + 3);
        char *c = strchr(line, ':');
        if (c && !strncmp(c + 1, "memory:", 7)) snprintf(v1, sizeof v1, "%s", c + 8);
    }
    fclose(f);
    bool any = false;
    uint64_t best = UINT64_MAX, best_limit = 0;
    char v1_root[600];
    snprintf(v1_root, sizeof v1_root, "%s/memory", root_dir);
    for (int pass = 0; pass < 2; pass++) {
        const char *rel = pass == 0 ? v1 : v2;
        const char *root = pass == 0 ? v1_root : root_dir;
        const char *lim_name = pass == 0 ? "memory.limit_in_bytes" : "memory.max";
        const char *use_name = pass == 0 ? "memory.usage_in_bytes" : "memory.current";
        if (!rel[0]) continue;
        char path[1200];
        snprintf(path, sizeof path, "%s", rel);
        /* walk from the process's cgroup up to the root */
        for (;;) {
            char lp[2000], up[2000];
            snprintf(lp, sizeof lp, "%s%s/%s", root, path, lim_name);
            snprintf(up, sizeof up, "%s%s/%s", root, path, use_name);
            uint64_t lim, use;
            if (read_u64_file(lp, &lim) && lim < (1ull << 60) && read_u64_file(up, &use)) {
                uint64_t room = lim > use ? lim - use : 0;
                if (room < best) {
                    best = room;
                    best_limit = lim;
                }
                any = true;
            }
            char *slash = strrchr(path, '/');
            if (!slash || slash == path) {
                if (!path[0] || !strcmp(path, "/")) break;
                path[0] = 0;
                continue;
            }
            *slash = 0;
        }
    }
    if (any) {
        *headroom = best;
        *limit_out = best_limit;
    }
    return any;
}

bool sl_mem_available_from(const char *meminfo, const char *proc_cgroup, const char *cgroup_root,
                           uint64_t *avail, uint64_t *cgroup_limit)
{
    uint64_t mem = 0, room = 0, lim = 0;
    /* MemAvailable, never MemTotal: what the kernel can hand out without
     * swapping or reclaiming what others need (Linux 3.14+; Android too) */
    bool have_mem = read_kb_field(meminfo, "MemAvailable", &mem);
    bool have_cg = cgroup_headroom(proc_cgroup, cgroup_root, &room, &lim);
    *cgroup_limit = have_cg ? lim : 0;
    if (!have_mem && !have_cg) return false;
    if (!have_mem) mem = UINT64_MAX;
    if (!have_cg) room = UINT64_MAX;
    *avail = mem < room ? mem : room;
    return true;
}

bool sl_mem_available(uint64_t *avail, uint64_t *cgroup_limit)
{
    return sl_mem_available_from("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup", avail,
                                 cgroup_limit);
}

bool sl_mem_rss(uint64_t *rss, uint64_t *peak)
{
    bool a = read_kb_field("/proc/self/status", "VmRSS", rss);
    bool b = read_kb_field("/proc/self/status", "VmHWM", peak);
    return a && b;
}

void sl_proc_usage(uint64_t *major_faults, double *cpu_seconds)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *major_faults = (uint64_t)ru.ru_majflt;
    *cpu_seconds = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                   (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}
