/* args.h - small helpers for parsing subcommand flags in app/. */
#ifndef SL_APP_ARGS_H
#define SL_APP_ARGS_H

#include <stdbool.h>

/* Parses a whole decimal integer in [lo, hi] from s into *out; on failure
 * prints "sluice CMD: FLAG expects ..." to stderr and returns false. */
bool arg_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out);

/* Parses a finite float in [lo, hi]. */
bool arg_float(const char *cmd, const char *flag, const char *s, double lo, double hi,
               double *out);

/* Returns argv[*i + 1] and advances *i, or prints that flag needs a value
 * and returns NULL. */
const char *arg_value(const char *cmd, int argc, char **argv, int *i);

#endif
