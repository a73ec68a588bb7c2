/* stats_csv.h - --stats-csv FILE: per-token telemetry, one CSV row per
 * decoded token (and one for everything before the first: the prompt).
 *
 * Each row holds the deltas since the previous row of what --stats sums:
 * wall time and its split (compute = wall - cache management - flash
 * stall), expert hits and misses, bytes read (whole aligned windows),
 * experts read ahead and used / evicted unused, major page faults, and the
 * RSS at the row's end.
 *
 * Written as it goes (sl_out_open_live: the writer's rules on what it may
 * replace hold), not through a temporary file and a rename: the rows
 * up to a crash or a kill are what a user diagnosing one needs, and a
 * rename at the end would lose them all. The file is truncated at the
 * start and every row goes out in one write(2) of a whole line, so a killed
 * process leaves only complete rows (a machine crash may leave a last line
 * without its newline: a reader drops it); the close is fsync'ed and
 * checked. One file per process (the app's commands run one model). */
#ifndef SL_APP_STATS_CSV_H
#define SL_APP_STATS_CSV_H

#include <stdbool.h>

#include "sluice.h"

/* Creates (truncates) path and writes the header; the next row's deltas
 * start now. Returns false after printing the OS reason. */
bool stats_csv_open(const char *cmd, const char *path, const sl_model *m);

/* Writes the row of decoded token `token` (1, 2, ...); token 0 is the row
 * of what came before the first decoded token (the prompt). A no-op when
 * no file is open; a failed write is reported by stats_csv_close. */
void stats_csv_row(const sl_model *m, long token);

/* Syncs and closes the file. Returns false (after printing the file and
 * the OS reason) if a write, the sync or the close failed; true when no
 * file was open. */
bool stats_csv_close(const char *cmd);

#endif
