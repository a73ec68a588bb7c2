/* fd_limit.h - how many files this process may have open, and raising it.
 *
 * The one place that asks the OS about the open-file limit (RLIMIT_NOFILE
 * on POSIX). `sluice serve` holds one descriptor per client connection, and
 * desktop systems often start processes with a soft limit of 1024 under a
 * much higher hard limit. */
#ifndef SL_UTIL_FD_LIMIT_H
#define SL_UTIL_FD_LIMIT_H

#include <stdint.h>

#include "sluice.h" /* sl_fd_limit_raise */

#endif
