/* args.c - see args.h. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

bool arg_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "sluice %s: %s expects a whole number in [%ld, %ld], got '%s'\n", cmd,
                flag, lo, hi, s);
        return false;
    }
    *out = v;
    return true;
}

bool arg_float(const char *cmd, const char *flag, const char *s, double lo, double hi,
               double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "sluice %s: %s expects a number in [%g, %g], got '%s'\n", cmd, flag, lo,
                hi, s);
        return false;
    }
    *out = v;
    return true;
}

const char *arg_value(const char *cmd, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "sluice %s: %s needs a value\n", cmd, argv[*i]);
        return NULL;
    }
    return argv[++*i];
}
