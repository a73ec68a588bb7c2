/* stop_signal_win.c - the console's control events for stop_signal.h.
 *
 * A handler registered with SetConsoleCtrlHandler runs on a thread the
 * system starts for each event: it records the first event, sets the event
 * object the waiting thread sleeps on, and claims the event (TRUE), so the
 * process is not ended at once. Closing the console window, logoff and
 * shutdown end the process when the handler returns, so for those it
 * never returns: the process ends when main returns after its clean stop
 * (ExitProcess ends this thread too), or at the system's time limit. */
#include "util/stop_signal.h"

#include <windows.h>

static HANDLE stop_event;       /* manual reset: set by the first request */
static volatile LONG stop_type = -1;

static BOOL WINAPI on_console_event(DWORD type)
{
    InterlockedCompareExchange(&stop_type, (LONG)type, -1);
    SetEvent(stop_event);
    if (type == CTRL_CLOSE_EVENT || type == CTRL_LOGOFF_EVENT || type == CTRL_SHUTDOWN_EVENT)
        Sleep(INFINITE);
    return TRUE;
}

void sl_stop_signal_hold(void)
{
    stop_event = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (stop_event) SetConsoleCtrlHandler(on_console_event, TRUE);
}

const char *sl_stop_signal_wait(void)
{
    if (!stop_event) { /* no event object: nothing can wake us, so wait for ever */
        Sleep(INFINITE);
        return "Ctrl-C";
    }
    WaitForSingleObject(stop_event, INFINITE);
    switch (InterlockedCompareExchange(&stop_type, -1, -1)) {
    case CTRL_C_EVENT: return "Ctrl-C";
    case CTRL_BREAK_EVENT: return "Ctrl-Break";
    case CTRL_CLOSE_EVENT: return "console closed";
    case CTRL_LOGOFF_EVENT: return "logoff";
    case CTRL_SHUTDOWN_EVENT: return "shutdown";
    default: return "stop request";
    }
}
