/* test_mem_budget.c - the memory budget comes from MemAvailable and the
 * cgroup's room, never from MemTotal, and keeps the documented margin.
 * Fake /proc/meminfo, /proc/self/cgroup and cgroup trees are written to a
 * temporary folder and read through sl_mem_available_from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/mem.h"
#include "test.h"

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)

static char g_dir[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, rel);
    /* make the parent folders */
    for (char *p = path + strlen(g_dir) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0700);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static bool avail_of(const char *meminfo, const char *cgroup, uint64_t *avail, uint64_t *limit)
{
    char mi[512], cg[512], root[512];
    snprintf(mi, sizeof mi, "%s/%s", g_dir, meminfo);
    snprintf(cg, sizeof cg, "%s/%s", g_dir, cgroup);
    snprintf(root, sizeof root, "%s/sys", g_dir);
    return sl_mem_available_from(mi, cg, root, avail, limit);
}

/* a phone's meminfo: 12 GiB total, 3 GiB available */
static const char phone_meminfo[] = "MemTotal:       12582912 kB\n"
                                    "MemFree:          524288 kB\n"
                                    "MemAvailable:    3145728 kB\n"
                                    "Buffers:           10240 kB\n";

TEST(meminfo_available_not_total)
{
    put("meminfo", phone_meminfo);
    put("cgroup-none", "0::/\n");
    uint64_t a = 0, l = 1;
    CHECK(avail_of("meminfo", "cgroup-none", &a, &l));
    CHECK_EQ_INT(a, 3 * GIB);
    CHECK_EQ_INT(l, 0);
}

TEST(cgroup_v2_room_is_tighter)
{
    put("meminfo", phone_meminfo);
    put("cgroup-v2", "0::/user.slice/app.scope\n");
    put("sys/user.slice/memory.max", "max\n");
    put("sys/user.slice/memory.current", "900000000\n");
    put("sys/user.slice/app.scope/memory.max", "2147483648\n");
    put("sys/user.slice/app.scope/memory.current", "536870912\n");
    uint64_t a = 0, l = 0;
    CHECK(avail_of("meminfo", "cgroup-v2", &a, &l));
    CHECK_EQ_INT(a, 2 * GIB - 512 * MIB);
    CHECK_EQ_INT(l, 2 * GIB);
    /* a parent's limit binds too: the tightest room along the path */
    put("sys/user.slice/memory.max", "1610612736\n");
    put("sys/user.slice/memory.current", "1073741824\n");
    CHECK(avail_of("meminfo", "cgroup-v2", &a, &l));
    CHECK_EQ_INT(a, 512 * MIB);
    CHECK_EQ_INT(l, 1536 * MIB);
}

TEST(cgroup_v1_and_over_limit)
{
    put("meminfo", phone_meminfo);
    put("cgroup-v1", "12:memory:/apps/7\n11:cpu:/apps\n");
    put("sys/memory/apps/7/memory.limit_in_bytes", "1073741824\n");
    put("sys/memory/apps/7/memory.usage_in_bytes", "2147483648\n"); /* above its limit */
    uint64_t a = 1, l = 0;
    CHECK(avail_of("meminfo", "cgroup-v1", &a, &l));
    CHECK_EQ_INT(a, 0);
    CHECK_EQ_INT(l, GIB);
}

TEST(nothing_readable)
{
    uint64_t a = 7, l = 7;
    CHECK(!avail_of("missing-meminfo", "missing-cgroup", &a, &l));
    /* a meminfo without MemAvailable (before Linux 3.14) is not read as MemTotal */
    put("old-meminfo", "MemTotal:       12582912 kB\nMemFree:  524288 kB\n");
    CHECK(!avail_of("old-meminfo", "missing-cgroup", &a, &l));
}

TEST(default_budget_margin)
{
    /* max(5%, 512 MiB) is kept back */
    CHECK_EQ_INT(sl_mem_default_budget(3 * GIB), 3 * GIB - 512 * MIB);
    CHECK_EQ_INT(sl_mem_default_budget(20 * GIB), 19 * GIB);
    CHECK_EQ_INT(sl_mem_default_budget(512 * MIB), 0);
    CHECK_EQ_INT(sl_mem_default_budget(100 * MIB), 0);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/sluice-mem-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(meminfo_available_not_total);
    RUN(cgroup_v2_room_is_tighter);
    RUN(cgroup_v1_and_over_limit);
    RUN(nothing_readable);
    RUN(default_budget_margin);
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
    return TEST_REPORT();
}
