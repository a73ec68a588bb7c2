/* posix_win.h - the POSIX names sluice's portable code uses that mingw-w64
 * lacks, for the Windows build only (mk/windows.mk force-includes it into
 * every file; Linux builds never see it).
 *
 * Owns: small equivalents (open flags that mean nothing on Windows, fsync,
 * pread, memmem, sysconf for the CPU count, posix_fadvise as a no-op,
 * SIGINT's sigaction, timespec_get) and the UTF-8 path rule for the CRT
 * calls that take a path (fopen, open, unlink, mkdir, stat, access,
 * rename, remove, opendir/readdir go through UTF-16 in posix_win.c), and
 * getenv/setenv read and write the wide environment, so a path given as
 * UTF-8 names the same file here as on Linux. The files that
 * own platform calls (util/file_win.c, io/io_win.c, util/mem_win.c) use the
 * Win32 API directly; this header only lets the rest compile unchanged. */
#ifndef SL_COMPAT_POSIX_WIN_H
#define SL_COMPAT_POSIX_WIN_H

#ifndef _POSIX_THREAD_SAFE_FUNCTIONS
#define _POSIX_THREAD_SAFE_FUNCTIONS 200112L /* gmtime_r, localtime_r */
#endif

#include <direct.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0 /* handles are not inherited unless asked for */
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0 /* open() of a directory fails on Windows: callers skip */
#endif

#define POSIX_FADV_DONTNEED 4
#define POSIX_FADV_RANDOM 1
/* the cache manager has no per-range drop; unbuffered reads avoid it */
static inline int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
    (void)fd; (void)off; (void)len; (void)advice;
    return 0;
}

#define _SC_NPROCESSORS_ONLN 84
/* sysconf(_SC_NPROCESSORS_ONLN): the processors of all groups */
long sl_win_sysconf(int name);
#define sysconf sl_win_sysconf

/* FlushFileBuffers on the descriptor's handle; -1 and errno on failure */
int sl_win_fsync(int fd);
#define fsync sl_win_fsync

/* A positional read (ReadFile with an OVERLAPPED offset) on a descriptor:
 * bytes read, 0 at the end, -1 and errno on failure. */
ssize_t sl_win_pread(int fd, void *buf, size_t len, off_t off);
#define pread sl_win_pread

void *sl_win_memmem(const void *hay, size_t hay_len, const void *needle, size_t needle_len);
#define memmem sl_win_memmem

/* UTF-8 paths: converted to UTF-16 for _wfopen / _wopen / _wunlink / _wmkdir */
FILE *sl_win_fopen(const char *path, const char *mode);
#define fopen sl_win_fopen
int sl_win_open(const char *path, int flags, ...);
#define open sl_win_open
int sl_win_unlink(const char *path);
#define unlink sl_win_unlink
/* mkdir with a mode (ignored: ACLs decide) */
int sl_win_mkdir(const char *path);
#define mkdir(path, mode) sl_win_mkdir(path)

/* stat of a UTF-8 path (_wstat64, its fields copied into struct stat);
 * 0, or -1 and errno */
int sl_win_stat(const char *path, struct stat *st);
#define stat(path, st) sl_win_stat(path, st)
/* access of a UTF-8 path (_waccess); 0, or -1 and errno */
int sl_win_access(const char *path, int mode);
#define access(path, mode) sl_win_access(path, mode)
/* rename that replaces an existing target, as POSIX's does (MoveFileExW);
 * remove of a file or an empty directory; 0, or -1 and errno */
int sl_win_rename(const char *from, const char *to);
#define rename sl_win_rename
int sl_win_remove(const char *path);
#define remove sl_win_remove

/* opendir / readdir / closedir over _wopendir: each entry's name as UTF-8
 * (the CRT's char form gives the ANSI code page's, losing what it cannot
 * spell). The entry stays valid until the next readdir or closedir. */
struct sl_win_dirent {
    char d_name[1024]; /* 260 UTF-16 units take at most 780 bytes */
};
typedef struct sl_win_dir sl_win_dir;
sl_win_dir *sl_win_opendir(const char *path);
struct sl_win_dirent *sl_win_readdir(sl_win_dir *d);
int sl_win_closedir(sl_win_dir *d);
#define DIR sl_win_dir
#define dirent sl_win_dirent
#define opendir sl_win_opendir
#define readdir sl_win_readdir
#define closedir sl_win_closedir

/* getenv as UTF-8 from the wide environment (the CRT's char environment
 * holds the ANSI code page's spelling, so %LOCALAPPDATA% with a user name
 * outside it would name no directory). The string lives as long as the
 * process. setenv / unsetenv write the wide environment. */
char *sl_win_getenv(const char *name);
#define getenv sl_win_getenv
int sl_win_setenv(const char *name, const char *value, int overwrite);
#define setenv sl_win_setenv
int sl_win_unsetenv(const char *name);
#define unsetenv sl_win_unsetenv

/* mkdtemp / mkstemp: the trailing XXXXXX replaced until a new name is made */
char *sl_win_mkdtemp(char *tmpl);
#define mkdtemp sl_win_mkdtemp
int sl_win_mkstemp(char *tmpl);
#define mkstemp sl_win_mkstemp

/* fmaf: mingw-w64's rounds the product before the sum, and the kernels'
 * reference forms need the fused, once-rounded result that glibc and the
 * FMA instruction give: the instruction where the file is built with FMA,
 * an exact software form elsewhere (posix_win.c). */
float sl_win_fmaf(float x, float y, float z);
#include <math.h>
#undef fmaf
#ifdef __FMA__
#define fmaf(x, y, z) __builtin_fmaf(x, y, z)
#else
#define fmaf sl_win_fmaf
#endif

/* expf, logf, powf, sinf, cosf, tanhf, expm1f: glibc 2.36's results
 * (util/libm_glibc.c), so the exe computes the Linux build's numbers. By
 * macro, not only by link-time definition (compat/win/libm_win.c, which
 * still catches calls through the names' addresses): clang, targeting
 * mingw-w64, treats expf, powf and tanhf as absent and compiles a call to
 * them as (float)exp((double)x), pow, tanh, so no definition of expf would
 * ever be called. */
float sl_glibc_expf(float x);
float sl_glibc_logf(float x);
float sl_glibc_powf(float x, float y);
float sl_glibc_sinf(float x);
float sl_glibc_cosf(float x);
float sl_glibc_tanhf(float x);
float sl_glibc_expm1f(float x);
#define expf(x) sl_glibc_expf(x)
#define logf(x) sl_glibc_logf(x)
#define powf(x, y) sl_glibc_powf(x, y)
#define sinf(x) sl_glibc_sinf(x)
#define cosf(x) sl_glibc_cosf(x)
#define tanhf(x) sl_glibc_tanhf(x)
#define expm1f(x) sl_glibc_expm1f(x)

/* timespec_get (C11) with TIME_UTC: msvcrt has none (the UCRT has) */
#include <time.h>
#ifndef TIME_UTC
#define TIME_UTC 1
#endif
int sl_win_timespec_get(struct timespec *ts, int base);
#define timespec_get sl_win_timespec_get

/* symbolic links need a privilege (or developer mode) on Windows: callers
 * that can do without one (tests) treat the failure as "not here" */
static inline int symlink(const char *target, const char *path)
{
    (void)target;
    (void)path;
    errno = ENOSYS;
    return -1;
}

/* no allocation count: a file takes its size (sparse files are not made) */
#define st_blocks st_size / 512

/* sigaction for SIGINT only (the CRT's console handler runs it) */
struct sigaction {
    void (*sa_handler)(int);
    int sa_mask;
    int sa_flags;
};
static inline int sigemptyset(int *set)
{
    *set = 0;
    return 0;
}
static inline int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
    void (*prev)(int) = signal(sig, sa->sa_handler);
    if (old) old->sa_handler = prev;
    return prev == SIG_ERR ? -1 : 0;
}

#endif
