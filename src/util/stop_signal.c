/* stop_signal.c - POSIX signals for stop_signal.h: SIGINT and SIGTERM are
 * blocked in every thread and taken by sigwait in the waiting one. */
#include "util/stop_signal.h"

#include <pthread.h>
#include <signal.h>

static sigset_t stop_set; /* set once by sl_stop_signal_hold */

void sl_stop_signal_hold(void)
{
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

const char *sl_stop_signal_wait(void)
{
    int sig = 0;
    while (sigwait(&stop_set, &sig) != 0) {}
    return sig == SIGINT ? "SIGINT" : "SIGTERM";
}
