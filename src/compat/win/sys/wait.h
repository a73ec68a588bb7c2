/* sys/wait.h for the Windows build: there is no fork. fork() fails with
 * ENOSYS, so a test that re-runs itself in a child says it is skipped, and
 * `make test-windows` runs such binaries a second time with the child's
 * environment instead (mk/windows.mk). */
#ifndef SL_COMPAT_WAIT_H
#define SL_COMPAT_WAIT_H

#include <errno.h>
#include <sys/types.h>

static inline pid_t fork(void)
{
    errno = ENOSYS;
    return -1;
}
static inline pid_t waitpid(pid_t pid, int *st, int opt)
{
    (void)pid; (void)st; (void)opt;
    errno = ECHILD;
    return -1;
}
static inline int execl(const char *path, const char *arg, ...)
{
    (void)path; (void)arg;
    errno = ENOSYS;
    return -1;
}
#define WIFEXITED(st) 1
#define WEXITSTATUS(st) ((st) & 0xff)
#endif
