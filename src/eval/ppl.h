/* ppl.h - perplexity the way llama.cpp's perplexity tool computes it.
 *
 * Owns: the chunking plan, the log-softmax of one logits row, the running
 * sums of negative log-likelihood, and the text of the progress and final
 * lines. Must not know: models, sessions, tokenizers or files.
 *
 * The method (tools/perplexity/perplexity.cpp, function perplexity()):
 *   - the token stream is cut into n_chunk = n_tokens / n_ctx
 *     non-overlapping chunks of n_ctx tokens (a tail shorter than n_ctx is
 *     dropped); at least 2 * n_ctx tokens are required;
 *   - each chunk is evaluated from an empty KV cache; if the vocabulary adds
 *     BOS, the chunk's first token is replaced by BOS for the evaluation;
 *   - only the second half is scored: with first = n_ctx / 2, the logits at
 *     positions first .. n_ctx-2 predict tokens first+1 .. n_ctx-1, i.e.
 *     n_scored = n_ctx - 1 - first tokens per chunk;
 *   - NLL_i = log(sum_j exp(l_j)) - l_target; PPL = exp(mean NLL);
 *     the +/- is PPL * sqrt((mean(NLL^2) - mean(NLL)^2) / (count - 1)).
 *   - after each chunk it prints "[k]%.4f," (running PPL); at the end
 *     "Final estimate: PPL = %.4f +/- %.5f". */
#ifndef SL_EVAL_PPL_H
#define SL_EVAL_PPL_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct sl_ppl_plan {
    int32_t n_ctx;    /* tokens per chunk */
    int32_t n_chunk;  /* chunks to evaluate */
    int32_t first;    /* n_ctx / 2: first position whose logits are scored */
    int32_t n_scored; /* n_ctx - 1 - first: scored tokens per chunk */
} sl_ppl_plan;

/* Plans the chunks for n_tokens tokens with context n_ctx; max_chunks > 0
 * caps the count (llama.cpp's --chunks), <= 0 means all. Fails with
 * SL_EINVAL when n_ctx < 3 (a chunk of 1 or 2 tokens scores nothing) or when
 * n_tokens < 2 * n_ctx (llama.cpp's own minimum), quoting both numbers. */
int sl_ppl_plan_make(sl_ppl_plan *plan, size_t n_tokens, int32_t n_ctx, int32_t max_chunks,
                     sl_err *err);

/* log(sum_j exp(logits[j])) over n_vocab floats: max-subtracted, summed in
 * double. Returns -inf if every logit is -inf, NaN if one is NaN. */
double sl_log_sum_exp(const float *logits, int32_t n_vocab);

typedef struct sl_ppl {
    double nll;     /* sum of NLL */
    double nll2;    /* sum of NLL^2 */
    uint64_t count; /* scored tokens */
} sl_ppl;

/* Empties the accumulator. */
void sl_ppl_init(sl_ppl *acc);

/* Scores one position: adds -log softmax(logits)[target]. Fails with
 * SL_EINVAL if target is outside [0, n_vocab), or SL_EFORMAT if the NLL is
 * not finite (NaN logits, or the target's logit is -inf); the accumulator is
 * unchanged on failure. If nll_out is non-NULL it receives the NLL. */
int sl_ppl_add_logits(sl_ppl *acc, const float *logits, int32_t n_vocab, int32_t target,
                      double *nll_out, sl_err *err);

/* Adds an NLL computed elsewhere (e.g. by the KL-divergence base writer,
 * which computes it while quantising the row). */
void sl_ppl_add_nll(sl_ppl *acc, double nll);

/* exp(mean NLL); NaN when count == 0. */
double sl_ppl_value(const sl_ppl *acc);

/* The +/- that llama.cpp prints: PPL * sqrt(var / (count - 1)) with
 * var = mean(NLL^2) - mean(NLL)^2. NaN when count < 2 or var <= 0 (llama.cpp
 * then reports "Unexpected negative standard deviation"). */
double sl_ppl_stderr(const sl_ppl *acc);

/* Formats the progress item after chunk number `chunk` (1-based):
 * "[chunk]%.4f," with the running PPL. Returns the length snprintf would
 * write (output truncated to cap, always NUL-terminated when cap > 0). */
int sl_ppl_format_chunk(char *buf, size_t cap, int chunk, const sl_ppl *acc);

/* Formats "Final estimate: PPL = %.4f +/- %.5f" (no newline), or, when the
 * error is undefined, "Final estimate: PPL = %.4f +/- nan". Same return
 * convention as sl_ppl_format_chunk. */
int sl_ppl_format_final(char *buf, size_t cap, const sl_ppl *acc);

#endif
