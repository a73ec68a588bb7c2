/* user_cache.c - see user_cache.h. */
#include "user_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "io/io_rate.h"

bool user_cache_dir(char *out, size_t cap)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    const char *local = getenv("LOCALAPPDATA"); /* Windows: %LOCALAPPDATA%\sluice */
    int n;
    if (x && x[0] == '/') n = snprintf(out, cap, "%s/sluice", x);
    else if (local && local[0]) n = snprintf(out, cap, "%s\\sluice", local);
    else if (home && home[0]) n = snprintf(out, cap, "%s/.cache/sluice", home);
    else return false;
    if (n < 0 || (size_t)n >= cap) return false;
    for (char *p = out + 1; *p; p++) /* mkdir -p */
        if (*p == '/') {
            *p = '\0';
            mkdir(out, 0755);
            *p = '/';
        }
    return mkdir(out, 0755) == 0 || errno == EEXIST;
}

bool user_cache_rate_path(const char *model_path, char *out, size_t cap)
{
    char dir[3800], key[64];
    sl_err err;
    if (!user_cache_dir(dir, sizeof dir)) return false;
    if (sl_io_rate_device(model_path, key, sizeof key, &err)) return false;
    const int n = snprintf(out, cap, "%s/iobench-%s.rate", dir, key);
    return n > 0 && (size_t)n < cap;
}
