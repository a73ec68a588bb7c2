/* eval_run.h - the perplexity and KL-divergence procedures of llama.cpp's
 * perplexity tool, over a model seen only through a callback.
 *
 * Owns: the chunk loop (fresh context per chunk, BOS at position 0, which
 * positions are scored and which token each one predicts), writing or
 * reading the KL-divergence base file, and the text lines. Must not know:
 * sessions, the forward pass, tokenizers, or where the text goes (lines are
 * handed to an output callback; the library prints nothing).
 *
 * Which logits score which token, for a chunk c of n_ctx tokens t[0..n_ctx)
 * (t[0] evaluated as BOS when bos >= 0):
 *
 *   position p:     0   1  ...  first  first+1  ...  n_ctx-2  n_ctx-1
 *   logits(p) score                t[first+1] ...   t[n_ctx-1]
 *
 * first = n_ctx/2, so n_ctx-1-first positions are scored per chunk; the
 * logits of position n_ctx-1 predict nothing and are not requested. */
#ifndef SL_EVAL_EVAL_RUN_H
#define SL_EVAL_EVAL_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "eval/kld.h"
#include "eval/ppl.h"
#include "util/status.h"

/* Receives the logits (n_vocab floats, borrowed for the call) of position
 * pos of the chunk being evaluated. Returns SL_OK or an error to abort. */
typedef int (*sl_eval_row_fn)(void *sink, int32_t pos, const float *logits, sl_err *err);

/* Evaluates tokens[0..n) as one fresh sequence (positions 0..n-1 from an
 * empty cache) and calls row(sink, p, logits_p) for p = first .. n-2 in
 * increasing order, each exactly once. Returns SL_OK, the error a row call
 * returned, or its own error. */
typedef int (*sl_eval_chunk_fn)(void *model, const int32_t *tokens, int32_t n, int32_t first,
                                sl_eval_row_fn row, void *sink, sl_err *err);

/* Output: stream 1 is results (llama.cpp prints them on stdout), stream 2
 * is information (its stderr). text is a complete fragment; lines end with
 * '\n' where llama.cpp ends them. */
typedef void (*sl_eval_out_fn)(void *user, int stream, const char *text);

typedef struct sl_eval_run {
    int32_t n_vocab;         /* logits per row; tokens must be < n_vocab */
    int32_t bos;             /* id evaluated at position 0 of every chunk
                                (llama.cpp does this when the vocabulary adds
                                BOS), or -1 to evaluate the text's token */
    sl_eval_chunk_fn eval;
    void *model;
    sl_eval_out_fn out;      /* may be NULL */
    void *user;
} sl_eval_run;

/* Perplexity over tokens[0..n_tokens) with context n_ctx (plan as in
 * sl_ppl_plan_make; max_chunks <= 0 means all). Prints "[k]PPL," after
 * each chunk (stream 1), then "\n", then "Final estimate: PPL = X +/- Y\n"
 * (stream 2). If base_path is non-NULL it also writes the KL-divergence
 * base file there (tokens of the evaluated chunks, one row per scored
 * position): into a temporary file beside it, synced and renamed over
 * base_path once complete, so a failure (a full disk, an evaluation error)
 * leaves base_path as it was and no temporary file behind. base_path must
 * be a regular file or not exist. The accumulated result goes to *result
 * (may be NULL).
 * Errors: those of the plan, the callback, the writer; SL_EINVAL if the
 * callback delivers positions out of order or a token is out of range; the
 * message is prefixed "KL-divergence base 'x' not written" when writing one.
 */
int sl_eval_perplexity(const sl_eval_run *r, const int32_t *tokens, size_t n_tokens,
                       int32_t n_ctx, int32_t max_chunks, const char *base_path,
                       sl_ppl *result, sl_err *err);

/* KL-divergence against the base file at base_path (its n_ctx and tokens
 * are used; its n_vocab must equal r->n_vocab): the column header, one line
 * per chunk with the running statistics, a blank line, then the full report
 * (all stream 1). max_chunks > 0 limits the chunks. Statistics to *stats
 * (may be NULL). Errors: those of the reader, the callback, and the
 * comparison. Unlike llama.cpp, which prints no report below 100 tokens,
 * the report is always printed. */
int sl_eval_kl_divergence(const sl_eval_run *r, const char *base_path, int32_t max_chunks,
                          sl_kld_stats *stats, sl_err *err);

#endif
