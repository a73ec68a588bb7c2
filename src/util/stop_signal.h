/* stop_signal.h - waiting for the user's request to stop a long-running
 * command (`sluice serve`) with a clean shutdown, instead of the default
 * of ending the process at once (platform wrapper: stop_signal.c on POSIX,
 * SIGINT and SIGTERM; stop_signal_win.c, the console's Ctrl-C, Ctrl-Break
 * and close events). */
#ifndef SL_UTIL_STOP_SIGNAL_H
#define SL_UTIL_STOP_SIGNAL_H

/* Holds the stop requests for sl_stop_signal_wait: they no longer end the
 * process. Call once, from the main thread, before starting any thread
 * (POSIX threads inherit the signal mask set here). Also ignores SIGPIPE,
 * so a client that goes away is an error on its socket, not the end. */
void sl_stop_signal_hold(void);

/* Blocks until a stop request arrives and returns its name ("SIGINT",
 * "SIGTERM"; Windows: "Ctrl-C", "Ctrl-Break", "console closed", "logoff",
 * "shutdown"), a static string. On Windows the console's close, logoff and
 * shutdown events give the process a few seconds (the system's limit) to
 * return from main. */
const char *sl_stop_signal_wait(void);

#endif
