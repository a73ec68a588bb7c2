/* io_ring_probe.c - may this process use io_uring at all? Asked once, in a
 * child process, before any io_uring lane starts.
 *
 * Owns: the probe and its cached answer. Android's app sandbox (and some
 * container runtimes) run processes under a seccomp filter that answers
 * io_uring_setup or io_uring_enter with SECCOMP_RET_TRAP (SIGSYS, whose
 * default action ends the process) or SECCOMP_RET_KILL_PROCESS (ended, no
 * handler can help); a plain error return (ENOSYS, EPERM) is the easy case
 * the ring's own set-up reports.
 *
 * Why a forked child rather than a SIGSYS handler around the call: a
 * handler cannot survive SECCOMP_RET_KILL, changing the process-wide SIGSYS
 * disposition races with other threads (and with a caller's own handler),
 * and a trap on io_uring_enter only shows up after set-up succeeded. The
 * child inherits the filter, calls io_uring_setup and then io_uring_enter
 * (submit nothing, wait for nothing: a valid call that reaches the filter)
 * through raw system calls only (it is the child of a threaded process),
 * writes one byte to a pipe before each call and one when both returned.
 * Whatever kills it, the parent sees where it stopped. The cost is one
 * fork (page tables copied, no memory) per process, when io_uring is asked
 * for. Compiled only with SL_HAVE_URING, like io_ring.c. */
#ifdef SL_HAVE_URING

#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool probe_usable;
static char probe_reason[200];

/* The child: never returns. Only system calls here (async-signal-safe). */
static void probe_child(int wfd)
{
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* a trapped probe leaves no core file */
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    (void)!write(wfd, "s", 1);
    long fd = syscall(SYS_io_uring_setup, 2, &p);
    if (fd >= 0) {
        (void)!write(wfd, "e", 1);
        if (syscall(SYS_io_uring_enter, (int)fd, 0, 0, 0, NULL, 0) < 0) {
            const unsigned char err[2] = {'E', (unsigned char)errno};
            (void)!write(wfd, err, 2);
        }
        close((int)fd);
    }
    (void)!write(wfd, "d", 1);
    _exit(0);
}

static void run_probe(void)
{
    probe_usable = true; /* if the probe cannot run, the ring's set-up decides */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) return;
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        probe_child(pfd[1]);
    }
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return;
    }
    /* what the child wrote: "s", "se", "sd" (set-up failed: the ring's
     * own set-up reports why), "sed", or "seE<errno>d" */
    unsigned char seen[8];
    size_t len = 0;
    while (len < sizeof seen) {
        ssize_t n = read(pfd[0], seen + len, sizeof seen - len);
        if (n > 0) len += (size_t)n;
        else if (n == 0 || errno != EINTR) break;
    }
    close(pfd[0]);
    int status = 0;
    pid_t w;
    do w = waitpid(pid, &status, 0); while (w < 0 && errno == EINTR);
    const unsigned char last = len ? seen[len - 1] : 0;
    if (last == 'd' && !(len == 5 && seen[2] == 'E')) return;
    probe_usable = false;
    if (last == 'd') { /* set-up works and the ring's first submit would fail */
        snprintf(probe_reason, sizeof probe_reason, "io_uring_enter failed in a probe: %s",
                 strerror(seen[3]));
        return;
    }
    const char *call = last == 'e' ? "io_uring_enter" : "io_uring_setup";
    if (w == pid && WIFSIGNALED(status))
        snprintf(probe_reason, sizeof probe_reason,
                 "%s ended a probe process with signal %d (%s): a seccomp filter refuses it",
                 call, WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(probe_reason, sizeof probe_reason, "%s did not return in a probe process", call);
}

bool sl_io_uring_allowed(char *reason, size_t cap)
{
    pthread_once(&probe_once, run_probe);
    if (!probe_usable) snprintf(reason, cap, "%s", probe_reason);
    return probe_usable;
}

#else
/* Without liburing this file is empty; keep ISO C happy. */
typedef int sl_io_ring_probe_unused;
#endif
