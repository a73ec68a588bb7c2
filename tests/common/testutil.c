/* testutil.c - see testutil.h. */
#include "common/testutil.h"

#include <math.h>
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

double t_rel_rms(const float *x, const float *y, int n)
{
    double se = 0, sx = 0;
    for (int i = 0; i < n; i++) {
        se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        sx += (double)x[i] * x[i];
    }
    return sx > 0 ? sqrt(se / sx) : sqrt(se);
}
