/* testutil.c - see testutil.h. */
#include "common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

const char *t_tmpdir(void)
{
    if (dir[0]) return dir;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sluice-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    return dir;
}

char *t_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", t_tmpdir(), name);
    return buf;
}
