/* io_win.c - the Windows lanes: opening the files behind an io handle and
 * reading them (the counterpart of io_files.c and io_pread.c).
 *
 * Owns: each lane's handles, opened with CreateFileW(FILE_FLAG_NO_BUFFERING
 * | FILE_FLAG_OVERLAPPED) - one handle per lane and file, since one handle
 * shared by many reading threads is measured far slower on Windows - the
 * open-time check that an unbuffered read returns what a buffered read
 * does, the buffered fallback where unbuffered opens or reads are refused
 * (network drives), and the lane loop: take a request, issue positional
 * OVERLAPPED reads (ReadFile + GetOverlappedResult on the lane's event),
 * post the completion. The same queue protocol and io_op retry rules as
 * the POSIX lanes.
 *
 * Alignment: unbuffered reads need sector-aligned offsets, lengths and
 * buffers. Windows fails a misaligned one (ERROR_INVALID_PARAMETER); wine
 * does not, so every unbuffered read is checked here and a misaligned one
 * fails its request with a message naming the numbers.
 *
 * No mapping: the model file is only ever read into memory the engine owns;
 * a live section of the file would serialise these unbuffered reads. */
#include "io/io_internal.h"

#include <windows.h>

#include <errno.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/aligned.h"
#include "util/utf16_win.h"

#define DEFAULT_ALIGN 4096u
#define CHECK_WINDOW (64u * 1024u)

const char sl_io_direct_flag[] = "FILE_FLAG_NO_BUFFERING";
const char sl_io_direct_word[] = "unbuffered";

static HANDLE open_lane_handle(const char *path, bool unbuffered)
{
    wchar_t *w = sl_utf8_to_utf16(path);
    if (!w) {
        SetLastError(ERROR_NO_UNICODE_TRANSLATION);
        return INVALID_HANDLE_VALUE;
    }
    DWORD flags = FILE_FLAG_OVERLAPPED | (unbuffered ? FILE_FLAG_NO_BUFFERING : FILE_FLAG_RANDOM_ACCESS);
    HANDLE h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, flags, NULL);
    free(w);
    return h;
}

/* One positional read on an overlapped handle: bytes read, 0 at the end of
 * the file, -1 with the Win32 error in *werr. */
static int64_t read_at(HANDLE h, HANDLE ev, void *buf, size_t len, uint64_t off, DWORD *werr)
{
    OVERLAPPED ov = {0};
    ov.Offset = (DWORD)(off & 0xffffffffu);
    ov.OffsetHigh = (DWORD)(off >> 32);
    ov.hEvent = ev;
    DWORD got = 0;
    if (len > 0x40000000u) len = 0x40000000u;
    if (!ReadFile(h, buf, (DWORD)len, &got, &ov)) {
        DWORD e = GetLastError();
        if (e == ERROR_IO_PENDING) {
            if (GetOverlappedResult(h, &ov, &got, TRUE)) return got;
            e = GetLastError();
        }
        if (e == ERROR_HANDLE_EOF) return 0;
        *werr = e;
        return -1;
    }
    return got;
}

/* The sector size an unbuffered read of h must respect (at least 4096). */
static uint32_t handle_align(HANDLE h)
{
    FILE_STORAGE_INFO si;
    uint32_t a = DEFAULT_ALIGN;
    if (GetFileInformationByHandleEx(h, FileStorageInfo, &si, sizeof si)) {
        uint32_t s = (uint32_t)si.PhysicalBytesPerSectorForPerformance;
        if (si.LogicalBytesPerSector > s) s = (uint32_t)si.LogicalBytesPerSector;
        if (s > a && s <= 65536 && !(s & (s - 1))) a = s;
    }
    return a;
}

/* The open-time check: an unbuffered read of the first window compared with
 * a buffered read of the same bytes. SL_OK if they agree, SL_EUNSUPPORTED
 * with a reason if the unbuffered open or read is refused or differs. */
static int probe_unbuffered(sl_io *io, const char *path, uint32_t *align, char *reason, size_t cap,
                            sl_err *err)
{
    char why[192];
    if (io->cfg.test_flags & SL_IO_TEST_REFUSE_DIRECT) {
        snprintf(reason, cap, "%s refused for '%s' (test hook)", sl_io_direct_flag, path);
        return SL_EUNSUPPORTED;
    }
    HANDLE h = open_lane_handle(path, true);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e == ERROR_INVALID_PARAMETER || e == ERROR_NOT_SUPPORTED) {
            snprintf(reason, cap, "FILE_FLAG_NO_BUFFERING refused for '%s': %s", path,
                     sl_win_error_text(e, why, sizeof why));
            return SL_EUNSUPPORTED;
        }
        return sl_err_set(err, SL_EIO, "cannot open '%s': %s", path,
                          sl_win_error_text(e, why, sizeof why));
    }
    *align = handle_align(h);
    const size_t win = CHECK_WINDOW > *align ? CHECK_WINDOW / *align * *align : *align;
    void *dbuf = sl_aligned_alloc(*align, win);
    unsigned char *bbuf = malloc(win);
    HANDLE ev = CreateEventW(NULL, TRUE, FALSE, NULL);
    int rc = SL_OK;
    if (!dbuf || !bbuf || !ev) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory for the unbuffered-read check");
        goto done;
    }
    DWORD werr = 0;
    int64_t n = read_at(h, ev, dbuf, win, 0, &werr);
    if (n < 0) {
        snprintf(reason, cap, "unbuffered probe read of %zu bytes from '%s' failed: %s", win, path,
                 sl_win_error_text(werr, why, sizeof why));
        rc = SL_EUNSUPPORTED;
        goto done;
    }
    if (io->has_fault) sl_io_fault_direct_check(&io->fault, dbuf, n);
    HANDLE bh = open_lane_handle(path, false);
    int64_t got = 0, m = 0;
    if (bh != INVALID_HANDLE_VALUE) {
        while (got < n && (m = read_at(bh, ev, bbuf + got, (size_t)(n - got), (uint64_t)got, &werr)) > 0)
            got += m;
        CloseHandle(bh);
    }
    if (bh == INVALID_HANDLE_VALUE || m < 0) {
        rc = sl_err_set(err, SL_EIO, "cannot read '%s' for the unbuffered-read check", path);
    } else if (got != n || memcmp(dbuf, bbuf, (size_t)n) != 0) {
        snprintf(reason, cap, "an unbuffered read of '%s' returned other bytes than a buffered "
                 "read of the same %lld bytes (not trusted)", path, (long long)n);
        rc = SL_EUNSUPPORTED;
    }
done:
    if (ev) CloseHandle(ev);
    sl_aligned_free(dbuf);
    free(bbuf);
    CloseHandle(h);
    return rc;
}

int sl_io_files_open(sl_io *io, const char *const *paths, uint32_t n, sl_err *err)
{
    io->files = calloc(n, sizeof *io->files);
    if (!io->files) return sl_err_set(err, SL_ENOMEM, "out of memory for %u io files", n);
    io->n_files = n;
    uint32_t align = DEFAULT_ALIGN;
    bool direct = !io->cfg.buffered;
    char reason[256] = "", why[192];
    for (uint32_t i = 0; i < n; i++) {
        HANDLE h = open_lane_handle(paths[i], false);
        if (h == INVALID_HANDLE_VALUE)
            return sl_err_set(err, SL_EIO, "cannot open '%s': %s", paths[i],
                              sl_win_error_text(GetLastError(), why, sizeof why));
        LARGE_INTEGER sz;
        const bool disk = GetFileType(h) == FILE_TYPE_DISK, got_size = GetFileSizeEx(h, &sz);
        CloseHandle(h);
        if (!disk || !got_size)
            return sl_err_set(err, SL_EINVAL, "'%s' is not a regular file", paths[i]);
        const size_t len = strlen(paths[i]) + 1;
        io->files[i].path = malloc(len);
        if (!io->files[i].path) return sl_err_set(err, SL_ENOMEM, "out of memory");
        memcpy(io->files[i].path, paths[i], len);
        io->files[i].size = (uint64_t)sz.QuadPart;
        if (direct) {
            uint32_t fa = DEFAULT_ALIGN;
            int rc = probe_unbuffered(io, paths[i], &fa, reason, sizeof reason, err);
            if (rc == SL_EUNSUPPORTED) direct = false;
            else if (rc) return rc;
            if (fa > align) align = fa;
        }
    }
    io->info.align = align;
    io->info.mem_align = align;
    io->info.direct = direct;
    if (!direct && !io->cfg.buffered) {
        io->info.direct_fell_back = true;
        snprintf(io->info.direct_reason, sizeof io->info.direct_reason,
                 "%.200s; using buffered overlapped reads", reason);
    }
    return SL_OK;
}

int sl_io_lane_open_fds(sl_io *io, io_lane *ln, sl_err *err)
{
    if (!ln->fds) {
        ln->fds = malloc(io->n_files * sizeof *ln->fds);
        if (!ln->fds) return sl_err_set(err, SL_ENOMEM, "out of memory for lane handles");
        for (uint32_t i = 0; i < io->n_files; i++) ln->fds[i] = -1;
    }
    for (uint32_t i = 0; i < io->n_files; i++) {
        char why[192];
        HANDLE h = open_lane_handle(io->files[i].path, io->info.direct);
        if (h == INVALID_HANDLE_VALUE)
            return sl_err_set(err, SL_EIO, "io lane %u cannot open '%s': %s", ln->id,
                              io->files[i].path, sl_win_error_text(GetLastError(), why, sizeof why));
        /* a CRT descriptor over the handle: the lane tables hold ints */
        int fd = _open_osfhandle((intptr_t)h, _O_RDONLY | _O_BINARY);
        if (fd < 0) {
            CloseHandle(h);
            return sl_err_set(err, SL_EIO, "io lane %u: out of descriptors", ln->id);
        }
        ln->fds[i] = fd;
    }
    return SL_OK;
}

void sl_io_lane_close_fds(sl_io *io, io_lane *ln)
{
    if (!ln->fds) return;
    for (uint32_t i = 0; i < io->n_files; i++)
        if (ln->fds[i] >= 0) _close(ln->fds[i]);
    free(ln->fds);
    ln->fds = NULL;
}

/* ---- the lane loop ---------------------------------------------------------- */

static void run_one(io_lane *ln, HANDLE ev, io_op *op, const io_item *it)
{
    const sl_io_info *info = &ln->io->info;
    uint64_t delay = 0;
    if (sl_io_op_begin(ln, op, it, &delay) == SL_OK) {
        if (delay) Sleep((DWORD)((delay + 999999) / 1000000));
        HANDLE h = (HANDLE)_get_osfhandle(op->fd);
        for (;;) {
            void *buf;
            size_t len;
            uint64_t off;
            sl_io_op_next(ln, op, &buf, &len, &off);
            int64_t n;
            if (info->direct && ((off | len) & (info->align - 1) ||
                                 (uintptr_t)buf & (info->mem_align - 1))) {
                /* Windows refuses this read; wine would serve it: fail it here */
                fprintf(stderr, "sluice: unaligned unbuffered read (offset %llu, %zu bytes, buffer "
                        "%p; sectors of %u): a bug\n", (unsigned long long)off, len, buf, info->align);
                n = -EINVAL;
            } else {
                DWORD werr = 0;
                n = read_at(h, ev, buf, len, off, &werr);
                if (n < 0) n = werr == ERROR_INVALID_PARAMETER ? -EINVAL : -EIO;
            }
            if (sl_io_op_account(ln, op, n) != 1) break;
        }
    }
    sl_io_op_finish(ln, op);
    sl_io_lane_post(ln, &op->d);
}

void sl_io_read_now(io_lane *ln, io_op *op, const io_item *it)
{
    HANDLE ev = CreateEventW(NULL, TRUE, FALSE, NULL);
    run_one(ln, ev, op, it);
    if (ev) CloseHandle(ev);
}

static void *overlapped_lane_main(void *arg)
{
    io_lane *ln = arg;
    HANDLE ev = CreateEventW(NULL, TRUE, FALSE, NULL);
    io_op op;
    io_item it;
    while (sl_io_lane_take(ln, &it, 1, true) == 1) run_one(ln, ev, &op, &it);
    if (ev) CloseHandle(ev);
    return NULL;
}

const io_backend_ops sl_io_pread_ops = {
    .name = "overlapped",
    .lane_init = NULL,
    .lane_main = overlapped_lane_main,
    .lane_wake = NULL,
    .lane_fini = NULL,
};
