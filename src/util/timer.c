/* timer.c - monotonic clock (POSIX; a Windows path would use QPC here). */
#include "util/timer.h"

#include <time.h>

uint64_t sl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
