/* fd_limit.c - the open-file limit (fd_limit.h). */
#include "util/fd_limit.h"

#include <sys/resource.h>

uint64_t sl_fd_limit_raise(uint64_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return UINT64_MAX;
    if (rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    if ((uint64_t)rl.rlim_cur >= want) return (uint64_t)rl.rlim_cur;
    struct rlimit up = rl;
    up.rlim_cur = rl.rlim_max == RLIM_INFINITY || (uint64_t)rl.rlim_max > want ? (rlim_t)want
                                                                                : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) return (uint64_t)up.rlim_cur;
    return (uint64_t)rl.rlim_cur;
}
