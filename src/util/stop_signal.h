/* stop_signal.h - waiting for the user's request to stop a long-running
 * command with a clean shutdown (platform wrapper: stop_signal.c on POSIX,
 * stop_signal_win.c on Windows). Declared in sluice.h, with the other
 * helpers front-ends share, because the server includes no header under
 * src/. */
#ifndef SL_UTIL_STOP_SIGNAL_H
#define SL_UTIL_STOP_SIGNAL_H

#include "sluice.h" /* sl_stop_signal_hold, sl_stop_signal_wait */

#endif
