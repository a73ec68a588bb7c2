/* kld.c - KL-divergence per token, accumulation and report (see kld.h). */
#include "eval/kld.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/ppl.h"

int sl_kld_token_compare(const float *logits, int32_t n_vocab, const sl_kld_row *base,
                         int32_t target, sl_kld_token *out, sl_err *err)
{
    if (n_vocab != base->n_vocab)
        return sl_err_set(err, SL_EINVAL, "KLD: logits have %d entries, the base row %d",
                          (int)n_vocab, (int)base->n_vocab);
    if (target < 0 || target >= n_vocab)
        return sl_err_set(err, SL_EINVAL, "KLD: target token %d is outside [0, %d)", (int)target,
                          (int)n_vocab);
    int32_t imax = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > logits[imax]) imax = i;
    const double max_l = logits[imax];
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) sum_exp += exp((double)logits[i] - max_l);
    const double shift = max_l + log(sum_exp); /* c_i = l_i - shift */

    int32_t imax_base = 0;
    uint16_t qmax = sl_kld_row_q(base, 0);
    double kld = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) {
        uint16_t q = sl_kld_row_q(base, i);
        if (q > qmax) { /* b_i is increasing in q_i: first max of q = first max of b */
            qmax = q;
            imax_base = i;
        }
        const float b = sl_kld_row_logprob(base, i);
        if (b > -16.0f) kld += exp((double)b) * ((double)b - ((double)logits[i] - shift));
    }
    const double nll = shift - (double)logits[target];
    const double nll_base = -(double)sl_kld_row_logprob(base, target);
    if (!isfinite(nll) || !isfinite(kld))
        return sl_err_set(err, SL_EFORMAT,
                          "KLD: the logits give a non-finite result (NLL %g, KLD %g)", nll, kld);
    out->kld = kld;
    out->nll = nll;
    out->nll_base = nll_base;
    out->p_diff = exp(-nll) - exp(-nll_base);
    out->same_top = imax == imax_base;
    return SL_OK;
}

double sl_kld_logits(const float *base_logits, const float *logits, int32_t n_vocab)
{
    const double lse_p = sl_log_sum_exp(base_logits, n_vocab);
    const double lse_q = sl_log_sum_exp(logits, n_vocab);
    if (!isfinite(lse_p) || !isfinite(lse_q)) return NAN;
    double kl = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) {
        const double lp = (double)base_logits[i] - lse_p;
        if (lp == -INFINITY) continue; /* p_i = 0 contributes nothing */
        const double lq = (double)logits[i] - lse_q;
        kl += exp(lp) * (lp - lq);
    }
    return kl;
}

int sl_kld_acc_init(sl_kld_acc *a, size_t cap, sl_err *err)
{
    memset(a, 0, sizeof *a);
    a->kld_values = malloc((cap ? cap : 1) * sizeof *a->kld_values);
    a->p_diff_values = malloc((cap ? cap : 1) * sizeof *a->p_diff_values);
    if (!a->kld_values || !a->p_diff_values) {
        sl_kld_acc_free(a);
        return sl_err_set(err, SL_ENOMEM, "KLD: out of memory for %zu tokens", cap);
    }
    a->cap = cap;
    return SL_OK;
}

void sl_kld_acc_free(sl_kld_acc *a)
{
    if (!a) return;
    free(a->kld_values);
    free(a->p_diff_values);
    memset(a, 0, sizeof *a);
}

int sl_kld_acc_add(sl_kld_acc *a, const sl_kld_token *t, sl_err *err)
{
    if (a->count >= a->cap)
        return sl_err_set(err, SL_EINVAL, "KLD: accumulator is full (%zu tokens)", a->cap);
    a->sum_nll += t->nll;
    a->sum_nll2 += t->nll * t->nll;
    a->sum_nll_base += t->nll_base;
    a->sum_nll_base2 += t->nll_base * t->nll_base;
    a->sum_nll_nll_base += t->nll * t->nll_base;
    a->sum_kld += t->kld;
    a->sum_kld2 += t->kld * t->kld;
    const double d2 = t->p_diff * t->p_diff;
    a->sum_p_diff += t->p_diff;
    a->sum_p_diff2 += d2;
    a->sum_p_diff4 += d2 * d2;
    if (fabs(t->p_diff) > a->max_abs_p_diff) a->max_abs_p_diff = fabs(t->p_diff);
    a->n_same_top += t->same_top;
    a->kld_values[a->count] = (float)t->kld;
    a->p_diff_values[a->count] = (float)t->p_diff;
    a->count++;
    return SL_OK;
}

/* llama.cpp's mean_and_uncertainty: no error bar for 10 values or fewer. */
static sl_kld_value_err mean_err(double sum, double sum2, uint64_t n)
{
    sl_kld_value_err r = {0.0, 0.0};
    if (n < 1) return r;
    r.value = sum / (double)n;
    double var = sum2 / (double)n - r.value * r.value;
    r.err = var > 0.0 && n > 10 ? sqrt(var / (double)(n - 1)) : 0.0;
    return r;
}

/* llama.cpp's covariance of the two means (zero below 10 values). */
static double cov_of_means(double sa, double sb, double sab, uint64_t n)
{
    if (n < 10) return 0.0;
    double c = sab / (double)n - (sa / (double)n) * (sb / (double)n);
    return c / (double)(n - 1);
}

/* sqrt that reads a rounding-negative variance as zero (identical inputs
 * make the ratio's variance cancel to about -1e-17; llama.cpp prints nan) */
static double sqrt0(double v)
{
    return v > 0.0 ? sqrt(v) : 0.0;
}

void sl_kld_acc_moments(const sl_kld_acc *a, sl_kld_stats *st)
{
    memset(st, 0, sizeof *st);
    const uint64_t n = a->count;
    st->count = n;
    sl_kld_value_err lp = mean_err(a->sum_nll, a->sum_nll2, n);
    sl_kld_value_err lb = mean_err(a->sum_nll_base, a->sum_nll_base2, n);
    st->ppl.value = exp(lp.value);
    st->ppl.err = st->ppl.value * lp.err;
    st->ppl_base.value = exp(lb.value);
    st->ppl_base.err = st->ppl_base.value * lb.err;
    const double cov = cov_of_means(a->sum_nll, a->sum_nll_base, a->sum_nll_nll_base, n);
    st->ppl_cor = lp.err > 0.0 && lb.err > 0.0 ? cov / (lp.err * lb.err) : 0.0;
    st->ln_ppl_ratio.value = lp.value - lb.value;
    st->ln_ppl_ratio.err = sqrt0(lp.err * lp.err + lb.err * lb.err - 2.0 * cov);
    st->ppl_ratio.value = exp(st->ln_ppl_ratio.value);
    st->ppl_ratio.err = st->ppl_ratio.value * st->ln_ppl_ratio.err;
    const double ppl_cov = st->ppl.value * st->ppl_base.value * cov;
    st->ppl_diff.value = st->ppl.value - st->ppl_base.value;
    st->ppl_diff.err = sqrt0(st->ppl.err * st->ppl.err + st->ppl_base.err * st->ppl_base.err -
                             2.0 * ppl_cov);
    st->kld = mean_err(a->sum_kld, a->sum_kld2, n);
    st->p_diff = mean_err(a->sum_p_diff, a->sum_p_diff2, n);
    sl_kld_value_err mse = mean_err(a->sum_p_diff2, a->sum_p_diff4, n);
    st->rms_p_diff.value = sqrt(mse.value);
    st->rms_p_diff.err = st->rms_p_diff.value > 0.0 ? 0.5 / st->rms_p_diff.value * mse.err : 0.0;
    if (n > 0) {
        double p = (double)a->n_same_top / (double)n;
        st->same_top.value = p;
        st->same_top.err = n > 1 ? sqrt(p * (1.0 - p) / (double)(n - 1)) : 0.0;
    }
}

double sl_kld_percentile(const float *sorted, size_t n, double fraction)
{
    if (fraction <= 0.0) return sorted[0];
    if (fraction >= 1.0) return sorted[n - 1];
    double p = fraction * (double)(n - 1);
    size_t ip = (size_t)p;
    p -= (double)ip;
    size_t next = ip + 1 < n ? ip + 1 : n - 1;
    return (1.0 - p) * sorted[ip] + p * sorted[next];
}

static int cmp_float(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

static double median(const float *v, size_t n)
{
    return n % 2 == 0 ? 0.5 * ((double)v[n / 2] + (double)v[n / 2 - 1]) : (double)v[n / 2];
}

int sl_kld_acc_stats(sl_kld_acc *a, sl_kld_stats *st, sl_err *err)
{
    if (a->count == 0) return sl_err_set(err, SL_EINVAL, "KLD: no tokens were scored");
    sl_kld_acc_moments(a, st);
    const size_t n = (size_t)a->count;
    float *k = a->kld_values, *d = a->p_diff_values;
    qsort(k, n, sizeof *k, cmp_float);
    qsort(d, n, sizeof *d, cmp_float);
    st->kld_max = k[n - 1];
    st->kld_p999 = sl_kld_percentile(k, n, 0.999);
    st->kld_p99 = sl_kld_percentile(k, n, 0.99);
    st->kld_p95 = sl_kld_percentile(k, n, 0.95);
    st->kld_p90 = sl_kld_percentile(k, n, 0.90);
    st->kld_median = median(k, n);
    st->kld_p10 = sl_kld_percentile(k, n, 0.10);
    st->kld_p05 = sl_kld_percentile(k, n, 0.05);
    st->kld_p01 = sl_kld_percentile(k, n, 0.01);
    st->kld_p001 = sl_kld_percentile(k, n, 0.001);
    st->kld_min = k[0];
    st->dp_max = d[n - 1];
    st->dp_p999 = sl_kld_percentile(d, n, 0.999);
    st->dp_p99 = sl_kld_percentile(d, n, 0.99);
    st->dp_p95 = sl_kld_percentile(d, n, 0.95);
    st->dp_p90 = sl_kld_percentile(d, n, 0.90);
    st->dp_p75 = sl_kld_percentile(d, n, 0.75);
    st->dp_median = median(d, n);
    st->dp_p25 = sl_kld_percentile(d, n, 0.25);
    st->dp_p10 = sl_kld_percentile(d, n, 0.10);
    st->dp_p05 = sl_kld_percentile(d, n, 0.05);
    st->dp_p01 = sl_kld_percentile(d, n, 0.01);
    st->dp_p001 = sl_kld_percentile(d, n, 0.001);
    st->dp_min = d[0];
    return SL_OK;
}

/* ---- text -------------------------------------------------------------- */

typedef struct out_buf {
    char *buf;
    size_t cap;
    size_t len; /* what would have been written, may exceed cap */
} out_buf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void emit(out_buf *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = o->len < o->cap ? o->buf + o->len : NULL;
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

int sl_kld_format_chunk_header(char *buf, size_t cap)
{
    return snprintf(buf, cap,
                    "chunk             PPL               ln(PPL(Q)/PPL(base))          "
                    "KL Divergence              Δp RMS            Same top p");
}

int sl_kld_format_chunk(char *buf, size_t cap, int chunk, const sl_kld_acc *a)
{
    sl_kld_stats st;
    sl_kld_acc_moments(a, &st);
    out_buf o = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    emit(&o, "%4d", chunk);
    emit(&o, "    %9.4f ± %9.4f", st.ppl.value, st.ppl.err);
    emit(&o, "    %10.5f ± %10.5f", st.ln_ppl_ratio.value, st.ln_ppl_ratio.err);
    emit(&o, "    %10.5f ± %10.5f", st.kld.value, st.kld.err);
    emit(&o, "    %6.3f ± %6.3f %%", 100.0 * st.rms_p_diff.value, 100.0 * st.rms_p_diff.err);
    emit(&o, "    %6.3f ± %6.3f %%", 100.0 * st.same_top.value, 100.0 * st.same_top.err);
    return (int)o.len;
}

int sl_kld_format_stats(char *buf, size_t cap, const sl_kld_stats *st)
{
    out_buf o = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    emit(&o, "====== Perplexity statistics ======\n");
    emit(&o, "Mean PPL(Q)                   : %10.6f ± %10.6f\n", st->ppl.value, st->ppl.err);
    emit(&o, "Mean PPL(base)                : %10.6f ± %10.6f\n", st->ppl_base.value,
         st->ppl_base.err);
    emit(&o, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * st->ppl_cor);
    emit(&o, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", st->ln_ppl_ratio.value,
         st->ln_ppl_ratio.err);
    emit(&o, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", st->ppl_ratio.value,
         st->ppl_ratio.err);
    emit(&o, "Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", st->ppl_diff.value,
         st->ppl_diff.err);
    emit(&o, "\n====== KL divergence statistics ======\n");
    emit(&o, "Mean    KLD: %10.6f ± %10.6f\n", st->kld.value, st->kld.err);
    emit(&o, "Maximum KLD: %10.6f\n", st->kld_max);
    emit(&o, "99.9%%   KLD: %10.6f\n", st->kld_p999);
    emit(&o, "99.0%%   KLD: %10.6f\n", st->kld_p99);
    emit(&o, "95.0%%   KLD: %10.6f\n", st->kld_p95);
    emit(&o, "90.0%%   KLD: %10.6f\n", st->kld_p90);
    emit(&o, "Median  KLD: %10.6f\n", st->kld_median);
    emit(&o, "10.0%%   KLD: %10.6f\n", st->kld_p10);
    emit(&o, " 5.0%%   KLD: %10.6f\n", st->kld_p05);
    emit(&o, " 1.0%%   KLD: %10.6f\n", st->kld_p01);
    emit(&o, " 0.1%%   KLD: %10.6f\n", st->kld_p001);
    emit(&o, "Minimum KLD: %10.6f\n", st->kld_min);
    emit(&o, "\n====== Token probability statistics ======\n");
    emit(&o, "Mean    Δp: %6.3f ± %5.3f %%\n", 100.0 * st->p_diff.value, 100.0 * st->p_diff.err);
    emit(&o, "Maximum Δp: %6.3f%%\n", 100.0 * st->dp_max);
    emit(&o, "99.9%%   Δp: %6.3f%%\n", 100.0 * st->dp_p999);
    emit(&o, "99.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p99);
    emit(&o, "95.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p95);
    emit(&o, "90.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p90);
    emit(&o, "75.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p75);
    emit(&o, "Median  Δp: %6.3f%%\n", 100.0 * st->dp_median);
    emit(&o, "25.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p25);
    emit(&o, "10.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p10);
    emit(&o, " 5.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p05);
    emit(&o, " 1.0%%   Δp: %6.3f%%\n", 100.0 * st->dp_p01);
    emit(&o, " 0.1%%   Δp: %6.3f%%\n", 100.0 * st->dp_p001);
    emit(&o, "Minimum Δp: %6.3f%%\n", 100.0 * st->dp_min);
    emit(&o, "RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * st->rms_p_diff.value,
         100.0 * st->rms_p_diff.err);
    emit(&o, "Same top p: %6.3f ± %5.3f %%\n", 100.0 * st->same_top.value,
         100.0 * st->same_top.err);
    return (int)o.len;
}
