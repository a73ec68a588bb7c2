/* file_win.c - Windows implementation of file.h.
 *
 * Paths are UTF-8 and go to the W calls as UTF-16. A sl_file's fd is a CRT
 * descriptor over a CreateFileW handle (_open_osfhandle), so the callers
 * that write through stdio or fd calls work unchanged; positional reads use
 * ReadFile with an OVERLAPPED offset. The crash-safe output rule is the same
 * as on POSIX: a temporary file beside the target, flushed
 * (FlushFileBuffers), then MoveFileExW(MOVEFILE_REPLACE_EXISTING |
 * MOVEFILE_WRITE_THROUGH). Model files are never mapped here: a live
 * section serialises unbuffered reads of the file (docs/ARCHITECTURE.md,
 * "Windows"), so sl_file_map_read refuses. */
#include "util/file.h"

#include <windows.h>

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/open_inputs.h"
#include "util/utf16_win.h"

static const char *last_error(char *buf, size_t cap)
{
    return sl_win_error_text(GetLastError(), buf, cap);
}

/* CreateFileW on a UTF-8 path; INVALID_HANDLE_VALUE with the last error set
 * (ERROR_NO_UNICODE_TRANSLATION for a path that is not UTF-8). */
static HANDLE open_handle(const char *path, DWORD access, DWORD share, DWORD disposition,
                          DWORD flags)
{
    wchar_t *w = sl_utf8_to_utf16(path);
    if (!w) {
        SetLastError(ERROR_NO_UNICODE_TRANSLATION);
        return INVALID_HANDLE_VALUE;
    }
    HANDLE h = CreateFileW(w, access, share, NULL, disposition, flags, NULL);
    free(w);
    return h;
}

/* The kind of an open handle, for messages; NULL for a regular disk file. */
static const char *handle_kind(HANDLE h)
{
    switch (GetFileType(h)) {
    case FILE_TYPE_DISK: {
        BY_HANDLE_FILE_INFORMATION bi;
        if (GetFileInformationByHandle(h, &bi) && (bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
            return "directory";
        return NULL;
    }
    case FILE_TYPE_CHAR: return "character device";
    case FILE_TYPE_PIPE: return "FIFO";
    default: return "special file";
    }
}

/* The identity of an open handle: volume serial and file index on disk. */
static void id_from_handle(HANDLE h, sl_file_id *id)
{
    const char *kind = handle_kind(h);
    id->exists = true;
    id->regular = kind == NULL;
    id->stream = GetFileType(h) == FILE_TYPE_CHAR || GetFileType(h) == FILE_TYPE_PIPE;
    id->kind = kind ? kind : "regular file";
    BY_HANDLE_FILE_INFORMATION bi;
    if (GetFileType(h) == FILE_TYPE_DISK && GetFileInformationByHandle(h, &bi)) {
        id->dev = bi.dwVolumeSerialNumber;
        id->ino = (uint64_t)bi.nFileIndexHigh << 32 | bi.nFileIndexLow;
    } else {
        id->dev = UINT64_MAX; /* a console or pipe: the handle is all there is */
        id->ino = (uint64_t)(uintptr_t)h;
    }
}

static int path_kind_refused(const char *path, sl_err *err)
{
    wchar_t *w = sl_utf8_to_utf16(path);
    DWORD a = w ? GetFileAttributesW(w) : INVALID_FILE_ATTRIBUTES;
    free(w);
    if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY))
        return sl_err_set(err, SL_EINVAL, "'%s' is a directory, not a regular file", path);
    return SL_OK;
}

/* Wraps h in a CRT descriptor; closes h and returns -1 on failure. */
static int wrap_handle(HANDLE h, int flags)
{
    int fd = _open_osfhandle((intptr_t)h, flags | _O_BINARY);
    if (fd < 0) CloseHandle(h);
    return fd;
}

/* Opens the regular file at path for reading into *h; a directory,
 * device or pipe is refused (SL_EINVAL) and a failed open is SL_EIO, both
 * naming the path. */
static int open_regular(const char *path, HANDLE *h, sl_err *err)
{
    int rc = path_kind_refused(path, err);
    if (rc) return rc;
    char why[192];
    *h = open_handle(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                     OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL);
    if (*h == INVALID_HANDLE_VALUE)
        return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path, last_error(why, sizeof why));
    const char *kind = handle_kind(*h);
    if (kind) {
        CloseHandle(*h);
        return sl_err_set(err, SL_EINVAL, "'%s' is a %s, not a regular file", path, kind);
    }
    return SL_OK;
}

int sl_file_open_read(sl_file *f, const char *path, sl_err *err)
{
    f->fd = -1;
    f->size = 0;
    f->path = NULL;
    HANDLE h;
    int rc = open_regular(path, &h, err);
    if (rc) return rc;
    char why[192];
    LARGE_INTEGER sz;
    if (!GetFileSizeEx(h, &sz)) {
        last_error(why, sizeof why);
        CloseHandle(h);
        return sl_err_set(err, SL_EIO, "cannot stat '%s': %s", path, why);
    }
    sl_file_id id;
    id_from_handle(h, &id);
    f->path = strdup(path);
    if (!f->path || !sl_open_inputs_add(id.dev, id.ino, path)) {
        CloseHandle(h);
        free(f->path);
        f->path = NULL;
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    f->fd = wrap_handle(h, _O_RDONLY);
    if (f->fd < 0) {
        sl_open_inputs_drop(id.dev, id.ino);
        free(f->path);
        f->path = NULL;
        return sl_err_set(err, SL_EIO, "cannot open '%s': out of descriptors", path);
    }
    f->input = true;
    f->dev = id.dev;
    f->ino = id.ino;
    f->size = (uint64_t)sz.QuadPart;
    return SL_OK;
}

int sl_file_pread_full(const sl_file *f, void *dst, size_t len, uint64_t offset, sl_err *err)
{
    uint8_t *p = dst;
    HANDLE h = (HANDLE)_get_osfhandle(f->fd);
    while (len > 0) {
        DWORD want = len > 0x40000000u ? 0x40000000u : (DWORD)len, got = 0;
        OVERLAPPED ov = {0};
        ov.Offset = (DWORD)(offset & 0xffffffffu);
        ov.OffsetHigh = (DWORD)(offset >> 32);
        if (!ReadFile(h, p, want, &got, &ov)) {
            DWORD e = GetLastError();
            if (e != ERROR_HANDLE_EOF) {
                char why[192];
                return sl_err_set(err, SL_EIO, "read of %zu bytes at offset %llu in '%s' failed: %s",
                                  len, (unsigned long long)offset, f->path,
                                  sl_win_error_text(e, why, sizeof why));
            }
            got = 0;
        }
        if (got == 0)
            return sl_err_set(err, SL_EFORMAT,
                              "unexpected end of file in '%s' at offset %llu (%zu bytes missing)",
                              f->path, (unsigned long long)offset, len);
        p += got;
        len -= got;
        offset += got;
    }
    return SL_OK;
}

void sl_file_close(sl_file *f)
{
    if (!f) return;
    if (f->fd >= 0 && f->input) sl_open_inputs_drop(f->dev, f->ino);
    f->input = false;
    if (f->fd >= 0) _close(f->fd);
    f->fd = -1;
    free(f->path);
    f->path = NULL;
}

int sl_file_open_write(sl_file *f, const char *path, sl_err *err)
{
    f->fd = -1;
    f->size = 0;
    f->path = NULL;
    int rc = path_kind_refused(path, err);
    if (rc) return rc;
    char why[192];
    HANDLE h = open_handle(path, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, CREATE_ALWAYS,
                           FILE_ATTRIBUTE_NORMAL);
    if (h == INVALID_HANDLE_VALUE)
        return sl_err_set(err, SL_EIO, "cannot create '%s': %s", path, last_error(why, sizeof why));
    f->path = strdup(path);
    if (!f->path) {
        CloseHandle(h);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    f->fd = wrap_handle(h, _O_WRONLY);
    if (f->fd < 0) {
        free(f->path);
        f->path = NULL;
        return sl_err_set(err, SL_EIO, "cannot create '%s': out of descriptors", path);
    }
    return SL_OK;
}

int sl_file_write_full(sl_file *f, const void *src, size_t len, sl_err *err)
{
    const uint8_t *p = src;
    HANDLE h = (HANDLE)_get_osfhandle(f->fd);
    while (len > 0) {
        DWORD want = len > 0x40000000u ? 0x40000000u : (DWORD)len, put = 0;
        if (!WriteFile(h, p, want, &put, NULL)) {
            char why[192];
            return sl_err_set(err, SL_EIO, "write to '%s' failed: %s", f->path,
                              last_error(why, sizeof why));
        }
        if (put == 0) return sl_err_set(err, SL_EIO, "write to '%s' failed: no bytes written", f->path);
        p += put;
        len -= put;
        f->size += put;
    }
    return SL_OK;
}

int sl_file_sync(sl_file *f, sl_err *err)
{
    HANDLE h = (HANDLE)_get_osfhandle(f->fd);
    if (FlushFileBuffers(h)) return SL_OK;
    DWORD e = GetLastError();
    /* a console, NUL or a pipe cannot be flushed: as EINVAL on Linux */
    if (e == ERROR_INVALID_HANDLE || e == ERROR_INVALID_FUNCTION || GetFileType(h) != FILE_TYPE_DISK)
        return SL_OK;
    char why[192];
    return sl_err_set(err, SL_EIO, "writing '%s' failed: %s", f->path ? f->path : "?",
                      sl_win_error_text(e, why, sizeof why));
}

int sl_file_close_checked(sl_file *f, sl_err *err)
{
    int rc = SL_OK;
    if (f->fd >= 0 && _close(f->fd) != 0)
        rc = sl_err_set(err, SL_EIO, "writing '%s' failed on close: %s", f->path ? f->path : "?",
                        strerror(errno));
    f->fd = -1;
    free(f->path);
    f->path = NULL;
    return rc;
}

int sl_file_identity(const char *path, sl_file_id *id, sl_err *err)
{
    memset(id, 0, sizeof *id);
    id->kind = "nothing";
    HANDLE h = open_handle(path, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS);
    if (h != INVALID_HANDLE_VALUE) {
        id_from_handle(h, id);
        CloseHandle(h);
        return SL_OK;
    }
    DWORD e = GetLastError();
    if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND) return SL_OK;
    char why[192];
    return sl_err_set(err, SL_EIO, "cannot stat '%s': %s", path,
                      sl_win_error_text(e, why, sizeof why));
}

void sl_file_fd_identity(int fd, sl_file_id *id)
{
    memset(id, 0, sizeof *id);
    id->kind = "nothing";
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h != INVALID_HANDLE_VALUE && h != NULL) id_from_handle(h, id);
}

bool sl_file_id_same(const sl_file_id *a, const sl_file_id *b)
{
    return a->exists && b->exists && a->dev == b->dev && a->ino == b->ino;
}

int sl_file_read_all(const char *path, uint64_t limit, char **buf, size_t *len, sl_err *err)
{
    *buf = NULL;
    *len = 0;
    if (!strcmp(path, "-")) {
        size_t cap = 1 << 16, n = 0;
        char *b = malloc(cap);
        if (!b) return sl_err_set(err, SL_ENOMEM, "out of memory reading standard input");
        _setmode(0, _O_BINARY);
        for (;;) {
            if (n + 1 >= cap) {
                char *nb = realloc(b, cap * 2);
                if (!nb) {
                    free(b);
                    return sl_err_set(err, SL_ENOMEM, "out of memory reading standard input");
                }
                b = nb;
                cap *= 2;
            }
            unsigned want = cap - 1 - n > 0x40000000u ? 0x40000000u : (unsigned)(cap - 1 - n);
            int r = _read(0, b + n, want);
            if (r < 0) {
                int e = errno;
                free(b);
                return sl_err_set(err, SL_EIO, "cannot read standard input: %s", strerror(e));
            }
            if (r == 0) break;
            n += (size_t)r;
            if ((uint64_t)n > limit) {
                free(b);
                return sl_err_set(err, SL_EINVAL, "standard input holds more than %llu bytes, "
                                  "the limit for an input text", (unsigned long long)limit);
            }
        }
        b[n] = '\0';
        *buf = b;
        *len = n;
        return SL_OK;
    }
    sl_file f;
    int rc = sl_file_open_read(&f, path, err);
    if (rc) return rc;
    if (f.size > limit || f.size > (uint64_t)SIZE_MAX - 1) {
        rc = sl_err_set(err, SL_EINVAL, "'%s' has %llu bytes, more than %llu, the limit for an "
                        "input text", path, (unsigned long long)f.size, (unsigned long long)limit);
        sl_file_close(&f);
        return rc;
    }
    char *b = malloc((size_t)f.size + 1);
    if (!b) {
        sl_file_close(&f);
        return sl_err_set(err, SL_ENOMEM, "out of memory reading '%s' (%llu bytes)", path,
                          (unsigned long long)f.size);
    }
    rc = sl_file_pread_full(&f, b, (size_t)f.size, 0, err);
    sl_file_close(&f);
    if (rc) {
        free(b);
        return rc;
    }
    b[f.size] = '\0';
    *buf = b;
    *len = (size_t)f.size;
    return SL_OK;
}

int sl_file_temp_beside(const char *final_path, char **tmp_path, char **dest, sl_err *err)
{
    *tmp_path = NULL;
    *dest = NULL;
    sl_file_id id;
    int rc = sl_file_identity(final_path, &id, err);
    if (rc) return rc;
    if (id.exists && !id.regular)
        return sl_err_set(err, SL_EINVAL, "'%s' is a %s; this output must be a regular file "
                          "(it is written beside and renamed over)", final_path, id.kind);
    char *target = strdup(final_path);
    if (!target) return sl_err_set(err, SL_ENOMEM, "out of memory");
    const char *slash = strrchr(target, '/'), *bslash = strrchr(target, '\\');
    if (bslash && (!slash || bslash > slash)) slash = bslash;
    const size_t dir_len = slash ? (size_t)(slash - target) + 1 : 0;
    const char *base = slash ? slash + 1 : target;
    const size_t need = dir_len + 1 + strlen(base) + sizeof ".tmp-XXXXXXXX";
    char *tmp = malloc(need);
    if (!tmp) {
        free(target);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    static volatile LONG counter;
    DWORD e = 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned tag = (unsigned)(GetTickCount64() * 2654435761u) ^ GetCurrentProcessId() * 40503u ^
                       (unsigned)InterlockedIncrement(&counter) * 2246822519u;
        snprintf(tmp, need, "%.*s.%s.tmp-%08x", (int)dir_len, target, base, tag);
        HANDLE h = open_handle(tmp, GENERIC_WRITE, 0, CREATE_NEW, FILE_ATTRIBUTE_NORMAL);
        if (h != INVALID_HANDLE_VALUE) {
            CloseHandle(h);
            *tmp_path = tmp;
            *dest = target;
            return SL_OK;
        }
        e = GetLastError();
        if (e != ERROR_FILE_EXISTS && e != ERROR_ALREADY_EXISTS) break;
    }
    free(tmp);
    free(target);
    char why[192];
    return sl_err_set(err, SL_EIO, "cannot create a temporary file beside '%s': %s", final_path,
                      sl_win_error_text(e, why, sizeof why));
}

FILE *sl_file_fopen_write(const char *path, sl_err *err)
{
    sl_file f;
    if (sl_file_open_write(&f, path, err)) return NULL;
    FILE *s = _fdopen(f.fd, "wb");
    if (!s) {
        sl_err_set(err, SL_EIO, "cannot create '%s': %s", path, strerror(errno));
        sl_file_close(&f);
        return NULL;
    }
    f.fd = -1; /* the stream owns it now */
    sl_file_close(&f);
    return s;
}

int sl_file_rename(const char *from, const char *to, sl_err *err)
{
    wchar_t *wf = sl_utf8_to_utf16(from), *wt = sl_utf8_to_utf16(to);
    BOOL ok = wf && wt && MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
    DWORD e = ok ? 0 : (wf && wt ? GetLastError() : ERROR_NO_UNICODE_TRANSLATION);
    free(wf);
    free(wt);
    if (ok) return SL_OK;
    char why[192];
    return sl_err_set(err, SL_EIO, "cannot rename '%s' to '%s': %s", from, to,
                      sl_win_error_text(e, why, sizeof why));
}

void sl_file_remove(const char *path)
{
    if (!path) return;
    wchar_t *w = sl_utf8_to_utf16(path);
    if (w) DeleteFileW(w);
    free(w);
}

unsigned sl_file_guard_std_fds(void)
{
    unsigned closed = 0;
    for (int fd = 0; fd <= 2; fd++) {
        intptr_t h = _get_osfhandle(fd);
        if (h != -1 && h != -2) continue; /* -2: no console attached to it */
        closed |= 1u << fd;
        int nfd = _wopen(L"NUL", _O_RDONLY | _O_BINARY);
        if (nfd >= 0 && nfd != fd) {
            _dup2(nfd, fd);
            _close(nfd);
        }
    }
    return closed;
}

bool sl_file_set_direct(sl_file *f, bool on)
{
    (void)f; /* FILE_FLAG_NO_BUFFERING is chosen at open: writes stay buffered */
    return !on;
}

int sl_file_map_read(const char *path, void **addr, uint64_t *size, sl_err *err)
{
    *addr = NULL;
    *size = 0;
    return sl_err_set(err, SL_EUNSUPPORTED, "cannot map '%s': the Windows build never maps model "
                      "files (a live mapping serialises unbuffered reads); use --dense-weights "
                      "anon", path);
}

void sl_file_unmap(void *addr, uint64_t size)
{
    (void)addr;
    (void)size;
}

bool sl_file_stamp(const char *path, uint64_t *size, int64_t *mtime_s, int64_t *mtime_ns)
{
    struct stat sb; /* stat is posix_win.h's sl_win_stat (_wstat64 of the UTF-16 path) */
    if (stat(path, &sb) != 0) return false;
    *size = (uint64_t)sb.st_size;
    *mtime_s = (int64_t)sb.st_mtime; /* the CRT's stat has whole seconds only */
    *mtime_ns = 0;
    return true;
}

void sl_file_sync_dir(const char *path)
{
    (void)path; /* MoveFileExW's MOVEFILE_WRITE_THROUGH already flushed the rename */
}

int sl_file_read_head(const char *path, void *buf, size_t cap, size_t *got, sl_err *err)
{
    *got = 0;
    HANDLE h;
    int rc = open_regular(path, &h, err);
    if (rc) return rc;
    char why[192];
    size_t n = 0;
    while (n < cap) {
        DWORD want = cap - n > (1u << 30) ? (1u << 30) : (DWORD)(cap - n), r = 0;
        if (!ReadFile(h, (uint8_t *)buf + n, want, &r, NULL)) {
            last_error(why, sizeof why);
            CloseHandle(h);
            return sl_err_set(err, SL_EIO, "cannot read '%s': %s", path, why);
        }
        if (r == 0) break;
        n += r;
    }
    CloseHandle(h);
    *got = n;
    return SL_OK;
}
