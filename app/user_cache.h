/* user_cache.h - the per-user cache directory of sluice's small state files
 * (the expert usage histories of warm starts, the drives' measured rates).
 *
 * $XDG_CACHE_HOME/sluice when XDG_CACHE_HOME is an absolute path, else
 * %LOCALAPPDATA%\sluice where LOCALAPPDATA is set (Windows), else
 * $HOME/.cache/sluice. */
#ifndef SLUICE_APP_USER_CACHE_H
#define SLUICE_APP_USER_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* The directory into out[cap], created with its parents if missing; false
 * when neither variable gives one, it does not fit, or it cannot be made. */
bool user_cache_dir(char *out, size_t cap);

/* out[cap] = the file where `sluice iobench --expert` keeps the rate of the
 * drive holding model_path (user_cache_dir/iobench-dev-MAJ-MIN.rate);
 * false when there is no cache directory or model_path cannot be stat'ed. */
bool user_cache_rate_path(const char *model_path, char *out, size_t cap);

#endif
