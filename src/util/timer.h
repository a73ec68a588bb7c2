/* timer.h - monotonic clock. */
#ifndef SL_UTIL_TIMER_H
#define SL_UTIL_TIMER_H

#include <stdint.h>

#include "sluice.h" /* sl_now_ns: nanoseconds from a fixed point (CLOCK_MONOTONIC) */

static inline double sl_ns_to_s(uint64_t ns) { return (double)ns * 1e-9; }

/* Seconds from the same fixed point, for timing whole runs. */
static inline double sl_now_s(void) { return sl_ns_to_s(sl_now_ns()); }

#endif
