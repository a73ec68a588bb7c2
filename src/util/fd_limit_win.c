/* fd_limit_win.c - the open-file limit on Windows (fd_limit.h): sockets and
 * files are kernel handles there, with no per-process soft limit to raise. */
#include "util/fd_limit.h"

uint64_t sl_fd_limit_raise(uint64_t want)
{
    (void)want;
    return UINT64_MAX;
}
