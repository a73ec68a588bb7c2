/* testutil.h - small helpers shared by test binaries. */
#ifndef SL_TESTS_TESTUTIL_H
#define SL_TESTS_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"
#include "synth/synth_ds.h"

/* A fresh private directory for this test binary's files (created once,
 * under $TMPDIR or /tmp). Never NULL. */
const char *t_tmpdir(void);

/* Writes "<t_tmpdir()>/<name>" into buf and returns buf. */
char *t_path(char *buf, size_t cap, const char *name);

/* The path of the reference fixture NAME (llama.cpp's files in
 * ../shared/fixtures/reference, else /work/shared/fixtures/reference: the
 * first readable) written into buf (cap bytes) and returned; NULL when
 * neither is there. */
char *t_fixture(char *buf, size_t cap, const char *name);

/* The whole file at path, NUL-terminated (malloc'ed: the caller frees),
 * its length in *len; NULL when it cannot be opened or memory runs out. */
char *t_read_all(const char *path, size_t *len);

/* Validates c and writes it as "<t_tmpdir()>/<name>.gguf"; path (cap
 * bytes) receives the file's path. 0, or -1 after printing why. */
int t_write_synth_ds(const sl_synth_ds *c, const char *name, char *path, size_t cap);

/* Writes arch's "tiny" generated model as "<t_tmpdir()>/<file>" and loads
 * it on one thread. q8: weights in q8_0 with seed 2 (else the preset's type
 * and seed). NULL after printing why the file or the load failed; the
 * caller frees the model. */
sl_model *t_load_tiny(const char *arch, const char *file, bool q8);

/* Loads the model file at path with its experts resident, on n_threads
 * threads. NULL after printing why; the caller frees the model. */
sl_model *t_load_resident(const char *path, int n_threads);

/* sqrt(sum (x - y)^2 / sum x^2) over n values, in double: the relative RMS
 * error of y as a copy of x (0 when x is all zero and y equals it). */
double t_rel_rms(const float *x, const float *y, int n);

/* Evaluates ids (n_tok tokens) in a new session of m made with *sp
 * (sp->all_logits set, n_batch_max >= batch), batch tokens per
 * sl_session_eval, the first n_prompt given as the prompt
 * (sl_session_set_prompt; < 0: none), and returns every token's logits
 * (n_tok x n_vocab, malloc'ed: the caller frees), or NULL after printing
 * why the session or an evaluation failed. m stays the caller's. */
float *t_session_logits(sl_model *m, const sl_session_params *sp, const int32_t *ids, int n_tok,
                        int batch, int n_prompt);

/* How t_batched_logits runs a model. */
typedef struct t_logits_run {
    const char *path;       /* the GGUF file */
    const int32_t *ids;     /* the n_tok tokens to evaluate */
    int n_tok;
    int batch;              /* tokens per sl_session_eval (and n_batch_max) */
    int threads;
    int cache_experts;      /* > 0: experts streamed through this many slots */
    sl_kv_type kv;          /* the session's KV type */
    int n_ctx;              /* 0: 64 */
} t_logits_run;

/* Loads r->path, evaluates r->ids in batches of r->batch and returns every
 * token's logits (n_tok x n_vocab, malloc'ed: the caller frees), or NULL
 * after printing why the load, the session or an evaluation failed. */
float *t_batched_logits(const t_logits_run *r);

#endif
