/* io_rate.h - a drive's measured read rate kept between runs.
 *
 * `sluice iobench --expert` measures how fast the streamer's own reads
 * (whole experts: gate, up, down at their offsets, on N pread lanes) come
 * off the drive that holds a model; the rate is kept per device and lane
 * count in a small text file; `--stats`' printed bound uses its best point
 * instead of a calibration at start, and the streamer reads on as many
 * lanes as that point needs, while the file is under a day old.
 *
 * Owns: the file's format (`sluice io rate v1`, one `lanes=N mib_s=R` line
 * per lane count, a checksum line), its crash-safe writing (a temporary
 * beside it, fsync, rename) and its strict reading. Knows nothing of where
 * the per-user cache directory is (the caller passes the path). */
#ifndef SL_IO_IO_RATE_H
#define SL_IO_IO_RATE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/status.h"

#define SL_IO_RATE_MAX_ROWS 32
/* A kept curve older than this is measured again (a virtual disk's rate
 * moves through the day). */
#define SL_IO_RATE_MAX_AGE_S (24 * 3600)

typedef struct sl_io_rate {
    char device[64];   /* "dev-MAJOR-MINOR" of the file measured */
    int n;             /* rows */
    unsigned lanes[SL_IO_RATE_MAX_ROWS];
    double mib_s[SL_IO_RATE_MAX_ROWS];
    long long when;    /* seconds since the epoch of the measurement */
} sl_io_rate;

/* The device key of the file at path ("dev-MAJOR-MINOR", the device that
 * holds it) into key[cap]. SL_EIO if path cannot be stat'ed. */
int sl_io_rate_device(const char *path, char *key, size_t cap, sl_err *err);

/* Writes r to path crash-safe (a reader sees the old file or the new one,
 * never a torn one). SL_EIO naming the file on failure; SL_EINVAL for a
 * rate that is not positive and finite or a device key with characters
 * other than letters, digits, '-' and '_'. */
int sl_io_rate_save(const sl_io_rate *r, const char *path, sl_err *err);

/* Reads path into *r. *found is false (SL_OK) when there is no file; a
 * damaged or foreign file (bad header, field, checksum) is SL_EFORMAT
 * naming the line, so the caller can warn and measure instead. */
int sl_io_rate_load(sl_io_rate *r, bool *found, const char *path, sl_err *err);

/* The rate r keeps for `lanes` lanes in bytes per second, or 0. */
double sl_io_rate_for(const sl_io_rate *r, unsigned lanes);

/* The best point of r's lane curve: its rate in bytes per second (0 when r
 * has no rows) and its lane count in *lanes (0 when none). */
double sl_io_rate_best(const sl_io_rate *r, unsigned *lanes);

/* The fewest lanes whose rate is within `slack` (0.05 = 5 %) of the best
 * point's: as fast, on fewer threads. 0 when r has no rows. */
unsigned sl_io_rate_enough_lanes(const sl_io_rate *r, double slack);

#endif
