/* warm_start.h - the per-model expert usage history of a streamed run:
 * where it lives ($XDG_CACHE_HOME/sluice/<model-id>.usage, else
 * ~/.cache/sluice/), loading it and starting the preload at start-up,
 * saving it now and then and at the end. Warnings go to stderr; nothing
 * here fails a command (a run without a history is a cold run). */
#ifndef SL_APP_WARM_START_H
#define SL_APP_WARM_START_H

#include <stdbool.h>

#include "sluice.h"

/* For a streamed model: loads the history of the model file at path
 * (decayed by half per run; a damaged one is ignored with a warning and
 * replaced at the next save), hands it to the streamer and, if preload,
 * starts preloading its hottest experts. No-op when m does not stream. */
void warm_start_begin(const char *cmd, sl_model *m, const char *path, bool preload);

/* Saves the history crash-safe if one is kept (first creating the
 * directory); at most every 30 s unless force. A failure is a warning (cmd NULL: the one given to
 * warm_start_begin). */
void warm_start_save(const char *cmd, sl_model *m, bool force);

/* The history file of this run ("" when none is kept). */
const char *warm_start_path(void);

#endif
