/* usage_history.h - how often each routed expert of one model was used,
 * kept across runs, so that a new run can preload the hottest experts
 * (warm start).
 *
 * Owns: one score per (layer, expert) and the history file. A score is a
 * use count with decay: loading a file multiplies every score by the decay
 * factor, so a run's uses weigh 1 and those of the run before decay, of the
 * one before that decay^2 ... Knows nothing of caches or I/O: the MoE
 * block's expert source adds uses (engine/expert_src.c), the runtime's
 * setters load and save it (engine/runtime.c) and the streamer reads it
 * once for the warm start's preload.
 *
 * The file (text; $XDG_CACHE_HOME/sluice/<model-id>.usage by the app's
 * choice):
 *
 *     sluice-usage 1
 *     model <model id, no spaces>
 *     layers <L> experts <X>
 *     <L lines: X scores each, "%.9g", separated by one space>
 *     end <FNV-1a 64 of every byte before this line, 16 hex digits>
 *
 * Loading is strict: a wrong header, another model id or shape, a score
 * that is not a finite number >= 0, missing lines or a checksum that does
 * not match is SL_EFORMAT naming the line, and the caller starts afresh.
 * Saving writes a temporary file beside the target, syncs it and renames
 * it over the target, so a crash or a failed write leaves the old file
 * whole (and no temporary behind after a failure it saw).
 * Not thread-safe: its user serialises (the runtime's lock,
 * engine/model_runtime.h). */
#ifndef SL_EXPERTS_USAGE_HISTORY_H
#define SL_EXPERTS_USAGE_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "util/status.h"

typedef struct sl_usage sl_usage;

/* An empty history (every score 0) for n_layer x n_expert experts and the
 * model id (copied; letters, digits and ._- only, 1..200 characters).
 * SL_EINVAL for a bad shape or id, SL_ENOMEM. */
int sl_usage_create(sl_usage **out, const char *model_id, int n_layer, int n_expert,
                    sl_err *err);
void sl_usage_free(sl_usage *u);

/* Reads the history at path for this model id and shape, every score
 * times decay (0 < decay <= 1). *found is false (and *out an empty
 * history) when the file does not exist. SL_EFORMAT (err names the file,
 * the line and what is wrong) for a damaged file or one of another model
 * or shape; SL_EIO when it cannot be read. On failure *out is NULL. */
int sl_usage_load(sl_usage **out, bool *found, const char *path, const char *model_id,
                  int n_layer, int n_expert, double decay, sl_err *err);

/* Test hook for sl_usage_save: stop after half the text, as a full disk or
 * a crash would, and fail. */
enum { SL_USAGE_TEST_FAIL_WRITE = 1u << 0 };

/* Writes the history to path crash-safe (temporary file beside it, fsync,
 * rename, directory synced). The directory must exist. SL_EIO naming the
 * file and the OS reason; the old file at path is then untouched and the
 * temporary removed. */
int sl_usage_save(const sl_usage *u, const char *path, unsigned test_flags, sl_err *err);

/* One more use of (layer, expert), weighing w. */
void sl_usage_add(sl_usage *u, int layer, int expert, double w);
double sl_usage_get(const sl_usage *u, int layer, int expert);
int sl_usage_n_layer(const sl_usage *u);
int sl_usage_n_expert(const sl_usage *u);

/* The at most max experts with the highest scores (> 0), hottest first
 * (ties: lower layer, then lower expert), into layers[] and experts[].
 * Returns how many. */
int sl_usage_top(const sl_usage *u, int max, int *layers, int *experts);

#endif
