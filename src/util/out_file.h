/* out_file.h - the one way sluice writes a file: outputs never clobber
 * inputs, by construction.
 *
 * Every file sluice writes (session files: prompt caches and slot saves;
 * usage histories; drive rates; --stats-json and --stats-csv; GGUF models;
 * KL-divergence bases; traces) is written through an sl_out_file, which
 * keeps these rules:
 *   - a path that names an existing file is followed through symlinks, and
 *     the file it reaches is replaced only when it is of the kind the
 *     writer writes: it begins with the kind's magic (a session file only
 *     over a session file, a GGUF only over a GGUF), or, for a text output
 *     (CSV, JSON, a trace), it holds no NUL byte in its first 4 KiB (a
 *     model, a cache, any binary file is refused). An empty file may
 *     always be replaced;
 *   - a file the process has open as an input (the loaded model, a base
 *     being read: sl_file_open_input) is never replaced, whatever its kind;
 *   - the bytes go to a temporary file in the same directory, which is
 *     flushed to the device (fsync) and then renamed over the target, so
 *     the old file survives any failure and a reader never sees half a
 *     file. A directory, device, FIFO or socket is refused, except that a
 *     text output writes a FIFO or a character device (a pipe, /dev/null)
 *     in place: that replaces nothing.
 * A refused target is left exactly as it was; the error is one sentence
 * naming the path and the reason (SL_EINVAL). */
#ifndef SL_UTIL_OUT_FILE_H
#define SL_UTIL_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util/file.h"
#include "util/status.h"

/* What a writer writes. */
typedef struct sl_out_kind {
    const char *what;    /* "a session file", for messages */
    const char *magic;   /* the bytes its files begin with; NULL: a text output */
    size_t magic_len;
} sl_out_kind;

/* Text outputs: CSV, JSON, traces. */
extern const sl_out_kind sl_out_text;

/* An output being written; zero-initialise (or sl_out_open does). */
typedef struct sl_out_file {
    sl_file f;       /* open for writing: the temporary file, or a FIFO/device */
    char *tmp;       /* the temporary file; NULL when writing in place */
    char *dest;      /* what tmp is renamed onto (a symlink's target) */
    char *path;      /* as given, for messages */
    bool open;
} sl_out_file;

/* Whether path may be written as kind k under the rules above: SL_OK when
 * it does not exist or may be replaced, else SL_EINVAL (SL_EIO when it
 * cannot be examined) with err naming path and the reason. Touches
 * nothing. */
int sl_out_check(const char *path, const sl_out_kind *k, sl_err *err);

/* Checks path (sl_out_check) and opens o for writing it: a new temporary
 * file beside its target. On failure o is closed and nothing was created. */
int sl_out_open(sl_out_file *o, const char *path, const sl_out_kind *k, sl_err *err);

/* As sl_out_open, under the same rules, but writes path itself (created or
 * truncated) rather than a temporary file: for a log written as it goes
 * (--stats-csv, --io-trace), whose lines up to a crash or a kill matter
 * more than an atomic replacement. sl_out_commit then syncs and closes;
 * sl_out_abort leaves what was written. */
int sl_out_open_live(sl_out_file *o, const char *path, const sl_out_kind *k, sl_err *err);

/* Appends len bytes (SL_EIO naming the output on a failed write). */
int sl_out_write(sl_out_file *o, const void *p, size_t len, sl_err *err);

/* Finishes o: flushes everything to the device, closes it and renames the
 * temporary file over the target (and syncs the directory). On any
 * failure the temporary file is removed and the target is as it was. o is
 * closed either way. */
int sl_out_commit(sl_out_file *o, sl_err *err);

/* Drops o: closes it and removes the temporary file (the target is as it
 * was). Safe on a closed or zeroed sl_out_file. */
void sl_out_abort(sl_out_file *o);

/* A trace written as it goes with fprintf: checks path (sl_out_check) and
 * opens it in place as a stdio stream (sl_file_fopen_write: no blocking on
 * a FIFO), which the caller fcloses. NULL with err filled on a refusal or
 * a failed open. */
FILE *sl_out_fopen_live(const char *path, const sl_out_kind *k, sl_err *err);

/* sl_out_open, one sl_out_write of len bytes, sl_out_commit. */
int sl_out_write_all(const char *path, const sl_out_kind *k, const void *data, size_t len,
                     sl_err *err);

#endif
