/* file.h - the one place that wraps platform file calls.
 *
 * Everything else in sluice reads files through these functions, so a port
 * to another OS changes this file (and io/ backends) only. */
#ifndef SL_UTIL_FILE_H
#define SL_UTIL_FILE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util/status.h"

typedef struct sl_file {
    int fd;           /* OS descriptor, -1 when closed */
    uint64_t size;    /* bytes, taken at open */
    char *path;       /* owned copy, for messages */
    bool input;       /* opened by sl_file_open_read: listed as an open input */
    uint64_t dev, ino; /* its identity, when input */
} sl_file;

/* Opens path read-only (buffered). Only a regular file is accepted: a FIFO,
 * directory, device or socket is refused (SL_EINVAL, "'x' is a FIFO, not a
 * regular file") without blocking, since the open is non-blocking until the
 * type is known. On failure fills err naming the path and the OS reason; f
 * is left closed (fd == -1). Until sl_file_close the file is one of the
 * process's open inputs (sl_file_open_input), which no output replaces. */
int sl_file_open_read(sl_file *f, const char *path, sl_err *err);

/* Reads exactly len bytes at offset into dst, retrying short reads and EINTR.
 * Reading past the end is a SL_EFORMAT error ("unexpected end of file"). */
int sl_file_pread_full(const sl_file *f, void *dst, size_t len, uint64_t offset,
                       sl_err *err);

/* Closes and frees the path copy; safe on a closed or zeroed sl_file. */
void sl_file_close(sl_file *f);

/* Creates/truncates path for writing (mode 0644 before the umask). A FIFO
 * without a reader is refused (SL_EIO, the OS says "No such device or
 * address") instead of blocking; a directory too. Devices such as /dev/null
 * are accepted. */
int sl_file_open_write(sl_file *f, const char *path, sl_err *err);

/* Writes exactly len bytes at the current position (retries short writes).
 * A full disk is reported as SL_EIO with the OS reason. */
int sl_file_write_full(sl_file *f, const void *src, size_t len, sl_err *err);

/* Flushes a file open for writing to its device (fsync), so that a late
 * write error (a full disk, a network file system) is reported now, as
 * SL_EIO naming the file. Devices and pipes that cannot be synced pass. */
int sl_file_sync(sl_file *f, sl_err *err);

/* Closes like sl_file_close but reports a failing close() (SL_EIO naming
 * the file and the OS reason): what an output must use. f is closed and its
 * path freed either way. */
int sl_file_close_checked(sl_file *f, sl_err *err);

/* ---- file identity -------------------------------------------------------- */

/* What a path or descriptor refers to: the same identity means the same file
 * whatever the name (a symlink, a hard link, "./x" and "x"). */
typedef struct sl_file_id {
    bool exists;      /* false: the path names nothing (yet) */
    uint64_t dev, ino;
    bool regular;     /* a regular file */
    bool stream;      /* a FIFO or character device (a pipe, /dev/null) */
    const char *kind; /* "regular file", "directory", "FIFO", ... (static) */
} sl_file_id;

/* Fills *id for path, following symlinks. A path that does not exist (or a
 * dangling symlink) gives exists = false and SL_OK; other stat failures are
 * SL_EIO naming the path. */
int sl_file_identity(const char *path, sl_file_id *id, sl_err *err);

/* The same for an open descriptor (e.g. 1 for standard output); a closed
 * descriptor gives exists = false. */
void sl_file_fd_identity(int fd, sl_file_id *id);

/* True when both exist and are the same file (device and inode). */
bool sl_file_id_same(const sl_file_id *a, const sl_file_id *b);

/* Whether id is a file the process has open through sl_file_open_read (a
 * model's files for the model's life, a KL-divergence base being read, a
 * session file being loaded): then the path it was opened by is copied to
 * path[cap] (cut to fit). Thread-safe. */
bool sl_file_open_input(const sl_file_id *id, char *path, size_t cap);

/* Reads up to cap bytes from the start of the regular file at path into
 * buf (*got receives how many: fewer at the end of the file), without
 * listing it as an open input. SL_EIO naming the path on failure; a path
 * that is not a regular file is refused (SL_EINVAL) without being opened. */
int sl_file_read_head(const char *path, void *buf, size_t cap, size_t *got, sl_err *err);

/* ---- whole inputs and atomic outputs --------------------------------------- */

/* Reads the whole regular file at path (or standard input when path is "-":
 * a pipe, terminal or regular file, never another device) into a new
 * NUL-terminated buffer, refusing more than limit bytes (SL_EINVAL, the
 * limit named). Devices, FIFOs and directories given as a path are refused
 * as sl_file_open_read does. *buf is the caller's to free. */
int sl_file_read_all(const char *path, uint64_t limit, char **buf, size_t *len, sl_err *err);

/* Creates an empty temporary file beside the file final_path names (same
 * directory, so that renaming it over that file is atomic), called
 * ".NAME.tmp-XXXXXX", with the mode final_path has if it exists (else 0666
 * less the umask). final_path must be a regular file or not exist: a device
 * or directory is refused (SL_EINVAL), since renaming over it would replace
 * it. A symlink is followed: *dest is the path to rename onto (the file the
 * link points to, or final_path). *tmp_path and *dest are new strings the
 * caller frees. */
int sl_file_temp_beside(const char *final_path, char **tmp_path, char **dest, sl_err *err);

/* Renames from onto to (atomically replacing it); SL_EIO naming both. */
int sl_file_rename(const char *from, const char *to, sl_err *err);

/* sl_file_remove (remove, ignoring errors) is declared in sluice.h. */

/* Flushes the directory holding path to its device (after a rename into
 * it, so that the new name survives a crash). Errors are ignored: some
 * file systems cannot sync a directory. */
void sl_file_sync_dir(const char *path);

/* The size and last modification time of the file at path (seconds and
 * nanoseconds since the epoch; the nanoseconds are 0 where the platform's
 * stat keeps whole seconds, as Windows' CRT does), so that a caller can tell
 * a rewritten file from the one it saw. False when path cannot be stat'ed. */
bool sl_file_stamp(const char *path, uint64_t *size, int64_t *mtime_s, int64_t *mtime_ns);

/* ---- the standard descriptors ---------------------------------------------- */

/* Makes sure descriptors 0, 1 and 2 are open: each closed one is pointed at
 * /dev/null opened read-only, so that no file opened later takes its number
 * (output meant for the terminal would otherwise land in it) and writes to
 * it still fail (EBADF), as they would on the closed descriptor. Returns a
 * bit mask of the descriptors that were closed (1 << fd). */
unsigned sl_file_guard_std_fds(void);

/* Direct I/O (O_DIRECT) for a file open for writing: writes then bypass the
 * page cache, and each must start at a file offset, come from an address
 * and have a length that are multiples of SL_FILE_DIRECT_ALIGN. on = false
 * goes back to ordinary writes (for an unaligned tail). Returns false, with
 * f unchanged, where the file system or platform refuses it (tmpfs). */
#define SL_FILE_DIRECT_ALIGN 4096
bool sl_file_set_direct(sl_file *f, bool on);

/* Opens path for writing as sl_file_open_write does (no blocking on a FIFO)
 * and returns it as a stdio stream the caller fcloses; NULL with err set. */
FILE *sl_file_fopen_write(const char *path, sl_err *err);

/* Maps the whole file at path read-only and shared (pages come from the
 * page cache on first touch). *size receives its length. Free with
 * sl_file_unmap. Fails with SL_EIO naming the path. */
int sl_file_map_read(const char *path, void **addr, uint64_t *size, sl_err *err);
void sl_file_unmap(void *addr, uint64_t size);

#endif
