/* drive_rate.c - see drive_rate.h. */
#include "drive_rate.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "io/io_rate.h"
#include "user_cache.h"

bool drive_rate_kept(const char *model_path, drive_rate *r, char *why, size_t cap)
{
    memset(r, 0, sizeof *r);
    why[0] = '\0';
    char key[64];
    sl_err err;
    if (!user_cache_rate_path(model_path, r->path, sizeof r->path) ||
        sl_io_rate_device(model_path, key, sizeof key, &err))
        return false;
    sl_io_rate k;
    bool found = false;
    if (sl_io_rate_load(&k, &found, r->path, &err)) {
        snprintf(why, cap, "ignoring the kept drive rate: %s", err.msg);
        return false;
    }
    if (!found) return false;
    if (strcmp(k.device, key) != 0) {
        snprintf(why, cap, "the lane curve in '%s' is of device %s, the model is on %s",
                 r->path, k.device, key);
        return false;
    }
    r->age_s = difftime(time(NULL), (time_t)k.when);
    if (r->age_s > SL_IO_RATE_MAX_AGE_S || r->age_s < -60.0) {
        snprintf(why, cap, "the lane curve in '%s' was measured %.1f hours ago (kept a day "
                 "at most)", r->path, r->age_s / 3600.0);
        return false;
    }
    r->bps = sl_io_rate_best(&k, &r->best_lanes);
    r->lanes = sl_io_rate_enough_lanes(&k, DRIVE_LANES_SLACK);
    return r->bps > 0 && r->lanes > 0;
}
