/* file.h - the one place that wraps platform file calls.
 *
 * Everything else in sluice reads files through these functions, so a port
 * to another OS changes this file (and io/ backends) only. */
#ifndef SL_UTIL_FILE_H
#define SL_UTIL_FILE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/status.h"

typedef struct sl_file {
    int fd;           /* OS descriptor, -1 when closed */
    uint64_t size;    /* bytes, taken at open */
    char *path;       /* owned copy, for messages */
} sl_file;

/* Opens path read-only (buffered). On failure fills err naming the path and
 * the OS reason; f is left closed (fd == -1). */
int sl_file_open_read(sl_file *f, const char *path, sl_err *err);

/* Reads exactly len bytes at offset into dst, retrying short reads and EINTR.
 * Reading past the end is a SL_EFORMAT error ("unexpected end of file"). */
int sl_file_pread_full(const sl_file *f, void *dst, size_t len, uint64_t offset,
                       sl_err *err);

/* Closes and frees the path copy; safe on a closed or zeroed sl_file. */
void sl_file_close(sl_file *f);

/* Creates/truncates path for writing. */
int sl_file_open_write(sl_file *f, const char *path, sl_err *err);

/* Writes exactly len bytes at the current position (retries short writes).
 * A full disk is reported as SL_EIO with the OS reason. */
int sl_file_write_full(sl_file *f, const void *src, size_t len, sl_err *err);

/* Direct I/O (O_DIRECT) for a file open for writing: writes then bypass the
 * page cache, and each must start at a file offset, come from an address
 * and have a length that are multiples of SL_FILE_DIRECT_ALIGN. on = false
 * goes back to ordinary writes (for an unaligned tail). Returns false, with
 * f unchanged, where the file system or platform refuses it (tmpfs). */
#define SL_FILE_DIRECT_ALIGN 4096
bool sl_file_set_direct(sl_file *f, bool on);

/* Maps the whole file at path read-only and shared (pages come from the
 * page cache on first touch). *size receives its length. Free with
 * sl_file_unmap. Fails with SL_EIO naming the path. */
int sl_file_map_read(const char *path, void **addr, uint64_t *size, sl_err *err);
void sl_file_unmap(void *addr, uint64_t size);

#endif
