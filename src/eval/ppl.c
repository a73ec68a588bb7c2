/* ppl.c - perplexity accumulator and chunk plan (see ppl.h). */
#include "eval/ppl.h"

#include <math.h>
#include <stdio.h>

int sl_ppl_plan_make(sl_ppl_plan *plan, size_t n_tokens, int32_t n_ctx, int32_t max_chunks,
                     sl_err *err)
{
    if (n_ctx < 3)
        return sl_err_set(err, SL_EINVAL,
                          "perplexity needs a context of at least 3 tokens, got %d", (int)n_ctx);
    if (n_tokens < 2 * (size_t)n_ctx)
        return sl_err_set(err, SL_EINVAL,
                          "perplexity with a context of %d needs at least %zu tokens, "
                          "the text has only %zu",
                          (int)n_ctx, 2 * (size_t)n_ctx, n_tokens);
    size_t n_chunk = n_tokens / (size_t)n_ctx;
    if (n_chunk > INT32_MAX) n_chunk = INT32_MAX;
    if (max_chunks > 0 && (size_t)max_chunks < n_chunk) n_chunk = (size_t)max_chunks;
    plan->n_ctx = n_ctx;
    plan->n_chunk = (int32_t)n_chunk;
    plan->first = n_ctx / 2;
    plan->n_scored = n_ctx - 1 - plan->first;
    return SL_OK;
}

double sl_log_sum_exp(const float *logits, int32_t n_vocab)
{
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (isnan(logits[i])) return NAN;
        if (logits[i] > mx) mx = logits[i];
    }
    if (mx == -INFINITY || mx == INFINITY) return (double)mx;
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - (double)mx);
    return (double)mx + log(sum);
}

void sl_ppl_init(sl_ppl *acc)
{
    acc->nll = 0.0;
    acc->nll2 = 0.0;
    acc->count = 0;
}

int sl_ppl_add_logits(sl_ppl *acc, const float *logits, int32_t n_vocab, int32_t target,
                      double *nll_out, sl_err *err)
{
    if (target < 0 || target >= n_vocab)
        return sl_err_set(err, SL_EINVAL, "perplexity: target token %d is outside [0, %d)",
                          (int)target, (int)n_vocab);
    double nll = sl_log_sum_exp(logits, n_vocab) - (double)logits[target];
    if (!isfinite(nll))
        return sl_err_set(err, SL_EFORMAT,
                          "perplexity: negative log-likelihood of token %d is %g "
                          "(logit %g); the logits are not a usable distribution",
                          (int)target, nll, (double)logits[target]);
    sl_ppl_add_nll(acc, nll);
    if (nll_out) *nll_out = nll;
    return SL_OK;
}

void sl_ppl_add_nll(sl_ppl *acc, double nll)
{
    acc->nll += nll;
    acc->nll2 += nll * nll;
    acc->count++;
}

double sl_ppl_value(const sl_ppl *acc)
{
    if (acc->count == 0) return NAN;
    return exp(acc->nll / (double)acc->count);
}

double sl_ppl_stderr(const sl_ppl *acc)
{
    if (acc->count < 2) return NAN;
    double n = (double)acc->count;
    double mean = acc->nll / n;
    double var = acc->nll2 / n - mean * mean;
    if (!(var > 0.0)) return NAN;
    return exp(mean) * sqrt(var / (n - 1.0));
}

int sl_ppl_format_chunk(char *buf, size_t cap, int chunk, const sl_ppl *acc)
{
    return snprintf(buf, cap, "[%d]%.4f,", chunk, sl_ppl_value(acc));
}

int sl_ppl_format_final(char *buf, size_t cap, const sl_ppl *acc)
{
    double e = sl_ppl_stderr(acc);
    if (isnan(e)) return snprintf(buf, cap, "Final estimate: PPL = %.4f +/- nan", sl_ppl_value(acc));
    return snprintf(buf, cap, "Final estimate: PPL = %.4f +/- %.5f", sl_ppl_value(acc), e);
}
