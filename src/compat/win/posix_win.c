/* posix_win.c - the POSIX equivalents posix_win.h declares (Windows build
 * only). Paths arrive as UTF-8 and go to the wide CRT and Win32 calls. */
#include <windows.h>

#include <errno.h>
#include <io.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "util/utf16_win.h"

#undef fopen
#undef open
#undef unlink
#undef mkdir
#undef getenv
#undef fmaf

long sl_win_sysconf(int name)
{
    if (name == _SC_NPROCESSORS_ONLN) return (long)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    errno = EINVAL;
    return -1;
}

int sl_win_timespec_get(struct timespec *ts, int base)
{
    if (base != TIME_UTC) return 0;
    FILETIME ft; /* 100 ns units since 1601-01-01 */
    GetSystemTimePreciseAsFileTime(&ft);
    const uint64_t t = ((uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime) -
                       116444736000000000ull; /* 1601 to 1970 */
    ts->tv_sec = (time_t)(t / 10000000u);
    ts->tv_nsec = (long)(t % 10000000u) * 100;
    return base;
}

int sl_win_fsync(int fd)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h == INVALID_HANDLE_VALUE) {
        errno = EBADF;
        return -1;
    }
    if (FlushFileBuffers(h)) return 0;
    /* a console or pipe cannot be flushed: as Linux's EINVAL */
    errno = GetLastError() == ERROR_INVALID_HANDLE ? EINVAL : EIO;
    return -1;
}

ssize_t sl_win_pread(int fd, void *buf, size_t len, off_t off)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h == INVALID_HANDLE_VALUE) {
        errno = EBADF;
        return -1;
    }
    if (len > 0x40000000u) len = 0x40000000u; /* one ReadFile takes a DWORD */
    OVERLAPPED ov = {0};
    ov.Offset = (DWORD)((uint64_t)off & 0xffffffffu);
    ov.OffsetHigh = (DWORD)((uint64_t)off >> 32);
    DWORD got = 0;
    if (ReadFile(h, buf, (DWORD)len, &got, &ov)) return (ssize_t)got;
    DWORD e = GetLastError();
    if (e == ERROR_HANDLE_EOF) return 0;
    errno = e == ERROR_INVALID_PARAMETER ? EINVAL : EIO;
    return -1;
}

void *sl_win_memmem(const void *hay, size_t hay_len, const void *needle, size_t needle_len)
{
    if (needle_len == 0) return (void *)hay;
    const unsigned char *h = hay, *n = needle;
    while (hay_len >= needle_len) {
        const unsigned char *p = memchr(h, n[0], hay_len - needle_len + 1);
        if (!p) return NULL;
        if (!memcmp(p, n, needle_len)) return (void *)p;
        hay_len -= (size_t)(p - h) + 1;
        h = p + 1;
    }
    return NULL;
}

FILE *sl_win_fopen(const char *path, const char *mode)
{
    wchar_t *wp = sl_utf8_to_utf16(path), *wm = sl_utf8_to_utf16(mode);
    FILE *f = NULL;
    if (wp && wm) f = _wfopen(wp, wm);
    else errno = ENOMEM;
    free(wp);
    free(wm);
    return f;
}

int sl_win_open(const char *path, int flags, ...)
{
    int mode = 0;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, int);
        va_end(ap);
    }
    wchar_t *wp = sl_utf8_to_utf16(path);
    if (!wp) {
        errno = ENOMEM;
        return -1;
    }
    /* binary always: the CRT's text mode would turn \n into \r\n */
    int fd = _wopen(wp, flags | _O_BINARY | _O_NOINHERIT, mode & (_S_IREAD | _S_IWRITE));
    free(wp);
    return fd;
}

int sl_win_unlink(const char *path)
{
    wchar_t *wp = sl_utf8_to_utf16(path);
    int rc = wp ? _wunlink(wp) : -1;
    free(wp);
    return rc;
}

int sl_win_mkdir(const char *path)
{
    wchar_t *wp = sl_utf8_to_utf16(path);
    int rc = wp ? _wmkdir(wp) : -1;
    free(wp);
    return rc;
}

int sl_win_stat(const char *path, struct stat *st)
{
    wchar_t *wp = sl_utf8_to_utf16(path);
    struct _stat64 w;
    int rc = -1;
    if (!wp) errno = ENOENT;
    else if ((rc = _wstat64(wp, &w)) == 0) {
        memset(st, 0, sizeof *st);
        st->st_dev = w.st_dev;
        st->st_ino = w.st_ino;
        st->st_mode = w.st_mode;
        st->st_nlink = w.st_nlink;
        st->st_uid = w.st_uid;
        st->st_gid = w.st_gid;
        st->st_rdev = w.st_rdev;
        st->st_size = (_off_t)w.st_size;
        st->st_atime = w.st_atime;
        st->st_mtime = w.st_mtime;
        st->st_ctime = w.st_ctime;
    }
    free(wp);
    return rc;
}

int sl_win_access(const char *path, int mode)
{
    wchar_t *wp = sl_utf8_to_utf16(path);
    int rc = wp ? _waccess(wp, mode) : -1;
    if (!wp) errno = ENOENT;
    free(wp);
    return rc;
}

/* errno for the Win32 error of a failed MoveFileExW / DeleteFileW */
static int errno_of(DWORD e)
{
    switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND: return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION: return EACCES;
    case ERROR_NOT_SAME_DEVICE: return EXDEV;
    case ERROR_DIR_NOT_EMPTY: return ENOTEMPTY;
    default: return EIO;
    }
}

int sl_win_rename(const char *from, const char *to)
{
    wchar_t *wf = sl_utf8_to_utf16(from), *wt = sl_utf8_to_utf16(to);
    int rc = -1;
    if (!wf || !wt) errno = ENOENT;
    else if (MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING)) rc = 0;
    else errno = errno_of(GetLastError());
    free(wf);
    free(wt);
    return rc;
}

int sl_win_remove(const char *path)
{
    wchar_t *wp = sl_utf8_to_utf16(path);
    int rc = -1;
    if (!wp) errno = ENOENT;
    else if (DeleteFileW(wp) || RemoveDirectoryW(wp)) rc = 0;
    else errno = errno_of(GetLastError());
    free(wp);
    return rc;
}

struct sl_win_dir {
    _WDIR *w;
    struct sl_win_dirent e;
};

sl_win_dir *sl_win_opendir(const char *path)
{
    wchar_t *wp = sl_utf8_to_utf16(path);
    sl_win_dir *d = wp ? calloc(1, sizeof *d) : NULL;
    if (d && !(d->w = _wopendir(wp))) {
        free(d);
        d = NULL;
    } else if (!d) errno = wp ? ENOMEM : ENOENT;
    free(wp);
    return d;
}

struct sl_win_dirent *sl_win_readdir(sl_win_dir *d)
{
    for (struct _wdirent *w; (w = _wreaddir(d->w));) {
        char *name = sl_utf16_to_utf8(w->d_name);
        const size_t n = name ? strlen(name) : 0;
        if (name && n < sizeof d->e.d_name) {
            memcpy(d->e.d_name, name, n + 1);
            free(name);
            return &d->e;
        }
        free(name); /* unrepresentable: skipped, as no caller could open it */
    }
    return NULL;
}

int sl_win_closedir(sl_win_dir *d)
{
    const int rc = _wclosedir(d->w);
    free(d);
    return rc;
}

/* The values getenv has returned: each kept for the life of the process
 * (callers hold the pointers), a name's latest reused while it is equal. */
struct env_value {
    struct env_value *next;
    char *name, *value;
};
static struct env_value *env_values;
static SRWLOCK env_lock = SRWLOCK_INIT;

char *sl_win_getenv(const char *name)
{
    wchar_t *wn = sl_utf8_to_utf16(name);
    const wchar_t *wv = wn ? _wgetenv(wn) : NULL;
    char *v = wv ? sl_utf16_to_utf8(wv) : NULL;
    free(wn);
    if (!v) return NULL;
    char *out = NULL;
    AcquireSRWLockExclusive(&env_lock);
    for (struct env_value *e = env_values; e && !out; e = e->next)
        if (!strcmp(e->name, name) && !strcmp(e->value, v)) out = e->value;
    struct env_value *e = out ? NULL : malloc(sizeof *e);
    if (e && (e->name = strdup(name))) {
        e->value = v;
        e->next = env_values;
        env_values = e;
        out = v;
        v = NULL;
    } else free(e);
    ReleaseSRWLockExclusive(&env_lock);
    free(v);
    return out;
}

int sl_win_setenv(const char *name, const char *value, int overwrite)
{
    wchar_t *wn = sl_utf8_to_utf16(name), *wv = sl_utf8_to_utf16(value);
    int rc = -1;
    if (!wn || !wv) errno = EINVAL;
    else if (!overwrite && _wgetenv(wn)) rc = 0;
    else rc = _wputenv_s(wn, wv) == 0 ? 0 : -1;
    free(wn);
    free(wv);
    return rc;
}

int sl_win_unsetenv(const char *name)
{
    wchar_t *wn = sl_utf8_to_utf16(name);
    const int rc = wn && _wputenv_s(wn, L"") == 0 ? 0 : -1;
    free(wn);
    return rc;
}

/* Fills the trailing XXXXXX of tmpl with a fresh tag; false if it has none. */
static bool fill_template(char *tmpl, unsigned attempt)
{
    size_t n = strlen(tmpl);
    if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX")) return false;
    static volatile LONG counter;
    unsigned v = (unsigned)GetTickCount64() * 2654435761u ^ GetCurrentProcessId() * 40503u ^
                 (unsigned)InterlockedIncrement(&counter) * 2246822519u ^ attempt;
    for (int i = 0; i < 6; i++, v /= 36) tmpl[n - 6 + i] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
    return true;
}

char *sl_win_mkdtemp(char *tmpl)
{
    char *keep = strdup(tmpl);
    for (unsigned a = 0; keep && a < 100; a++) {
        strcpy(tmpl, keep);
        if (!fill_template(tmpl, a)) break;
        if (sl_win_mkdir(tmpl) == 0) {
            free(keep);
            return tmpl;
        }
        if (errno != EEXIST) break;
    }
    free(keep);
    errno = errno ? errno : EINVAL;
    return NULL;
}

int sl_win_mkstemp(char *tmpl)
{
    char *keep = strdup(tmpl);
    int fd = -1;
    for (unsigned a = 0; keep && a < 100; a++) {
        strcpy(tmpl, keep);
        if (!fill_template(tmpl, a)) break;
        fd = sl_win_open(tmpl, O_RDWR | O_CREAT | O_EXCL, _S_IREAD | _S_IWRITE);
        if (fd >= 0 || errno != EEXIST) break;
    }
    free(keep);
    return fd;
}

float sl_win_fmaf(float x, float y, float z)
{
    /* the product of two floats is exact in a double; the sum rounds once
     * there, and rounding that double to float is then right unless it
     * sits exactly halfway between two floats while the sum was inexact
     * (double rounding): then the sum's error decides the side */
    const double xy = (double)x * (double)y;
    const double s = xy + (double)z;
    const float f = (float)s;
    if (!isfinite(s) || (double)f == s) return f;
    const double bb = s - xy, err = (xy - (s - bb)) + ((double)z - bb); /* s + err is exact */
    if (err == 0) return f;
    const double d = s - (double)f;
    const float g = nextafterf(f, d > 0 ? INFINITY : -INFINITY);
    if ((double)f + ((double)g - (double)f) * 0.5 != s) return f; /* not a midpoint */
    const float lo = f < g ? f : g, hi = f < g ? g : f;
    return err > 0 ? hi : lo;
}
