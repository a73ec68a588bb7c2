/* model_flags.h - the flags every model-running command shares (threads,
 * memory budget, streaming, I/O lanes, stats), parsed into sl_model_params,
 * and the --stats summary they print. */
#ifndef SL_APP_MODEL_FLAGS_H
#define SL_APP_MODEL_FLAGS_H

#include <stdbool.h>
#include <stdio.h>

#include "outputs.h"
#include "sluice.h"

typedef struct model_flags {
    sl_model_params params;
    bool stats;              /* --stats: summary on stderr at the end */
    const char *stats_json;  /* --stats-json FILE */
    bool progress;           /* --progress: a live line on stderr */
    const char *route_trace; /* --route-trace FILE: replay recorded expert choices */
    const char *cache_policy; /* --cache-policy NAME (streamed experts) */
    const char *stats_csv;   /* --stats-csv FILE: one row per decoded token */
    bool no_warm;            /* --no-warm: no expert usage history, no preload */
    /* the command's other files, for the output-is-an-input check of
     * model_flags_load (the model, --stats-json and --io-trace are known) */
    file_role inputs[4];     /* e.g. -f TEXT, a KLD base being read */
    file_role outputs[2];    /* e.g. a KLD base being written */
    int n_inputs, n_outputs;
} model_flags;

void model_flags_init(model_flags *f);

/* If argv[*i] is one of the shared flags, consumes it (and its value),
 * advancing *i, and returns 1; returns 0 if it is not one of them; -1
 * after printing an error about a bad value. */
int model_flags_parse(model_flags *f, const char *cmd, int argc, char **argv, int *i);

/* The help lines for the shared flags. */
void model_flags_help(FILE *out);

/* Records another input or output of the command (what: "-f", ...). */
void model_flags_add_input(model_flags *f, const char *what, const char *path);
void model_flags_add_output(model_flags *f, const char *what, const char *path);

/* Checks, before anything is written, that no output (--stats-json,
 * --io-trace, the recorded outputs, standard output) is the model at path
 * or a recorded input. Prints the clash and returns false. */
bool model_flags_check_outputs(const model_flags *f, const char *cmd, const char *path);

/* Loads the model with f->params; on failure prints the error (prefixed
 * with "sluice CMD: ") and returns NULL. Runs model_flags_check_outputs
 * first, and again after loading against every part of a split model.
 * --io-trace is created (empty) when the model is not streamed, so that an
 * unwritable path fails here too. Prints the planning warning (cache below
 * one token's cycle) to stderr. */
sl_model *model_flags_load(const model_flags *f, const char *cmd, const char *path);

/* Wall seconds and tokens of the measured part of a run. */
typedef struct run_totals {
    double seconds;
    long tokens;       /* tokens evaluated (prompt + generated) */
    long generated;
    const sl_gen_draft_stats *draft; /* the reply's drafting (NULL: not asked for) */
} run_totals;

/* --progress: at most twice a second, rewrites one status line on stderr
 * (tokens, tok/s, hit rate, stall per token, RSS). A no-op without the
 * flag. done: tokens so far; seconds: since the measured part began.
 * Also writes the --stats-csv row of decoded token `done`; done == 0 marks
 * the end of the prompt (its row) and draws nothing. */
void model_flags_progress(const model_flags *f, const sl_model *m, long done, double seconds);

/* Ends the --progress line (a newline) if one was drawn. */
void model_flags_progress_end(const model_flags *f);

/* Prints the --stats summary to stderr and writes --stats-json, if asked,
 * and checks that the --io-trace written so far reached its file. Returns
 * false after printing the file and the OS reason of a failed write. */
bool model_flags_report(const model_flags *f, const char *cmd, const sl_model *m,
                        const run_totals *t);

#endif
