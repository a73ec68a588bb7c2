/* drive_rate.h - the drive's lane curve kept by `sluice iobench --expert`,
 * as a run uses it: the best point's rate for `--stats`' printed bound,
 * and the fewest lanes that reach it (at least DRIVE_MIN_LANES) for the
 * streamer's reads.
 *
 * A curve is used while it is for the device that holds the model and
 * under a day old (io/io_rate.h); otherwise the run reads on the default
 * lanes and `--stats` calibrates at start. */
#ifndef SLUICE_APP_DRIVE_RATE_H
#define SLUICE_APP_DRIVE_RATE_H

#include <stdbool.h>
#include <stddef.h>

/* A lane within this share of the best point's rate is as good as it. */
#define DRIVE_LANES_SLACK 0.05
/* Lanes a run reads on at least (the engine's default). */
#define DRIVE_MIN_LANES 8u

typedef struct drive_rate {
    double bps;          /* the best point's rate, bytes per second */
    unsigned best_lanes; /* its lane count */
    unsigned lanes;      /* the fewest lanes within DRIVE_LANES_SLACK of it */
    double age_s;        /* since it was measured */
    char path[4096];     /* the file it is kept in */
} drive_rate;

/* Fills *r from the curve kept for the drive holding model_path and
 * returns true when there is one for this device under a day old. False
 * otherwise, with why[cap] saying why it is not used ("" when none is
 * kept; a damaged file, another device's, or a stale one are named). */
bool drive_rate_kept(const char *model_path, drive_rate *r, char *why, size_t cap);

#endif
