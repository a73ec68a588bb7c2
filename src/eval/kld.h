/* kld.h - KL-divergence statistics the way llama.cpp's perplexity tool
 * reports them (--kl-divergence against a base file).
 *
 * Owns: the per-token comparison of a logits row with a stored base row, the
 * running sums, the sorted per-token values for percentiles, and the text of
 * the per-chunk lines and the final report. Must not know: models, sessions,
 * or the file layout beyond the sl_kld_row view (kld_file.h).
 *
 * Per scored token (llama.cpp: log_softmax(..., base_log_prob, tok, kld)):
 *   base log-probs  b_i = scale * q_i + min_log_prob   (float)
 *   current         c_i = l_i - max_l - log(sum exp(l - max_l))
 *   KLD             sum over i with b_i > -16 of exp(b_i) * (b_i - c_i)
 *                   (base || current; the clamped tail is ignored)
 *   NLL, NLL_base   -c_target, -b_target
 *   same top        argmax_i l_i == argmax_i b_i (first index on ties)
 *   dp              exp(-NLL) - exp(-NLL_base)   (probability of the target)
 * Statistics: mean +/- sqrt(var/(n-1)) (zero when n <= 10, as llama.cpp),
 * PPL(Q), PPL(base), their correlation, ln ratio, ratio and difference with
 * propagated errors, KLD and dp percentiles by linear interpolation on the
 * sorted values, RMS dp, and the same-top rate with a binomial error. */
#ifndef SL_EVAL_KLD_H
#define SL_EVAL_KLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/kld_file.h"
#include "util/status.h"

/* One scored token compared with its base row. */
typedef struct sl_kld_token {
    double kld;      /* KL(base || current) in nats */
    double nll;      /* -log p_current(target) */
    double nll_base; /* -log p_base(target) */
    double p_diff;   /* p_current(target) - p_base(target) */
    bool same_top;   /* argmax agrees */
} sl_kld_token;

/* Compares logits (n_vocab floats, the current model's row) with base (the
 * stored row for the same position); target is the token that follows.
 * Fails with SL_EINVAL if n_vocab differs from the row's or target is out
 * of range, SL_EFORMAT if the result is not finite (NaN or inf logits). */
int sl_kld_token_compare(const float *logits, int32_t n_vocab, const sl_kld_row *base,
                         int32_t target, sl_kld_token *out, sl_err *err);

/* Exact KL(P || Q) in nats between softmax(base_logits) and softmax(logits),
 * both n_vocab floats, computed in double with no quantisation and no tail
 * cut-off: for comparing two engines in one process (e.g. the optimised
 * forward pass against the reference). NaN if either row is unusable. */
double sl_kld_logits(const float *base_logits, const float *logits, int32_t n_vocab);

typedef struct sl_kld_acc {
    double sum_nll, sum_nll2;
    double sum_nll_base, sum_nll_base2, sum_nll_nll_base;
    double sum_kld, sum_kld2;
    double sum_p_diff, sum_p_diff2, sum_p_diff4;
    double max_abs_p_diff;
    uint64_t n_same_top;
    uint64_t count;
    float *kld_values;    /* (cap) per-token KLD, for percentiles */
    float *p_diff_values; /* (cap) per-token dp */
    size_t cap;
} sl_kld_acc;

/* Prepares an accumulator for up to cap tokens (allocates the two value
 * arrays once; adding never allocates). SL_ENOMEM on failure. */
int sl_kld_acc_init(sl_kld_acc *a, size_t cap, sl_err *err);

/* Frees; safe on a zeroed accumulator. */
void sl_kld_acc_free(sl_kld_acc *a);

/* Adds one compared token. SL_EINVAL when cap tokens were already added. */
int sl_kld_acc_add(sl_kld_acc *a, const sl_kld_token *t, sl_err *err);

typedef struct sl_kld_value_err {
    double value, err;
} sl_kld_value_err;

typedef struct sl_kld_stats {
    uint64_t count;
    sl_kld_value_err ppl, ppl_base;  /* PPL(Q), PPL(base) */
    double ppl_cor;                  /* Cor(ln PPL(Q), ln PPL(base)) in [-1, 1] */
    sl_kld_value_err ln_ppl_ratio;   /* mean ln(PPL(Q)/PPL(base)) */
    sl_kld_value_err ppl_ratio;      /* PPL(Q)/PPL(base) */
    sl_kld_value_err ppl_diff;       /* PPL(Q)-PPL(base) */
    sl_kld_value_err kld;            /* mean KLD */
    /* KLD percentiles: max, 99.9, 99, 95, 90, median, 10, 5, 1, 0.1, min */
    double kld_max, kld_p999, kld_p99, kld_p95, kld_p90, kld_median, kld_p10, kld_p05,
        kld_p01, kld_p001, kld_min;
    sl_kld_value_err p_diff;         /* mean dp (fraction, not %) */
    /* dp percentiles: max, 99.9, 99, 95, 90, 75, median, 25, 10, 5, 1, 0.1, min */
    double dp_max, dp_p999, dp_p99, dp_p95, dp_p90, dp_p75, dp_median, dp_p25, dp_p10,
        dp_p05, dp_p01, dp_p001, dp_min;
    sl_kld_value_err rms_p_diff;     /* RMS dp */
    sl_kld_value_err same_top;       /* fraction with the same argmax */
} sl_kld_stats;

/* Running statistics without percentiles (cheap; for per-chunk lines). */
void sl_kld_acc_moments(const sl_kld_acc *a, sl_kld_stats *st);

/* Full statistics. Sorts the accumulator's value arrays in place (their
 * order carries no meaning). SL_EINVAL when no token was added.
 * llama.cpp prints the full report only for >= 100 tokens; the caller
 * decides (st->count is there). */
int sl_kld_acc_stats(sl_kld_acc *a, sl_kld_stats *st, sl_err *err);

/* Linear-interpolation percentile of sorted[0..n) as llama.cpp defines it:
 * p = fraction * (n - 1), value = (1-frac(p)) * v[floor p] + frac(p) * v[next].
 * fraction <= 0 gives the first, >= 1 the last. n must be > 0. */
double sl_kld_percentile(const float *sorted, size_t n, double fraction);

/* The column header printed before the per-chunk lines (no newline). */
int sl_kld_format_chunk_header(char *buf, size_t cap);

/* One per-chunk line (no newline) for chunk number `chunk` (1-based) from
 * the running sums: PPL, ln ratio, KLD, RMS dp, same top, each +/- error.
 * Returns what snprintf returns. */
int sl_kld_format_chunk(char *buf, size_t cap, int chunk, const sl_kld_acc *a);

/* The final report ("====== Perplexity statistics ======" ... "Same top p")
 * as llama.cpp prints it, lines separated by '\n'. Returns what snprintf
 * returns (the full length; about 2 KB is enough). */
int sl_kld_format_stats(char *buf, size_t cap, const sl_kld_stats *st);

#endif
