/* eval_run.c - chunk loops of the perplexity and KL-divergence procedures
 * (see eval_run.h for the position/target mapping). */
#include "eval/eval_run.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/kld_file.h"
#include "util/file.h"

typedef struct sink_state {
    const sl_eval_run *r;
    const int32_t *chunk;   /* original tokens of the chunk: the targets */
    int32_t n_ctx, first;
    int32_t next_pos;       /* position the next row must be */
    sl_ppl *ppl;            /* perplexity mode */
    sl_kld_writer *w;       /* perplexity mode writing a base file, or NULL */
    const sl_kld_base *base; /* KL-divergence mode */
    sl_kld_acc *acc;
} sink_state;

static int on_row(void *sink, int32_t pos, const float *logits, sl_err *err)
{
    sink_state *s = sink;
    if (pos != s->next_pos || pos > s->n_ctx - 2)
        return sl_err_set(err, SL_EINVAL,
                          "eval callback delivered the logits of position %d, expected "
                          "position %d (scored positions are %d..%d)",
                          (int)pos, (int)s->next_pos, (int)s->first, (int)(s->n_ctx - 2));
    const int32_t target = s->chunk[pos + 1];
    int rc;
    if (s->ppl) {
        if (s->w) {
            double nll = 0.0;
            rc = sl_kld_writer_add(s->w, logits, target, &nll, err);
            if (!rc) sl_ppl_add_nll(s->ppl, nll);
        } else {
            rc = sl_ppl_add_logits(s->ppl, logits, s->r->n_vocab, target, NULL, err);
        }
    } else {
        sl_kld_row row;
        sl_kld_token t;
        rc = sl_kld_base_row(s->base, pos - s->first, &row, err);
        if (!rc) rc = sl_kld_token_compare(logits, s->r->n_vocab, &row, target, &t, err);
        if (!rc) rc = sl_kld_acc_add(s->acc, &t, err);
    }
    if (rc) return rc;
    s->next_pos++;
    return SL_OK;
}

static void emit(const sl_eval_run *r, int stream, const char *text)
{
    if (r->out) r->out(r->user, stream, text);
}

/* Evaluates one chunk: copies its tokens into buf with BOS at 0, runs the
 * callback and checks that every scored row arrived. */
static int run_chunk(const sl_eval_run *r, sink_state *s, const int32_t *chunk, int32_t *buf,
                     int c, sl_err *err)
{
    memcpy(buf, chunk, (size_t)s->n_ctx * sizeof *buf);
    if (r->bos >= 0) buf[0] = r->bos;
    s->chunk = chunk;
    s->next_pos = s->first;
    int rc = r->eval(r->model, buf, s->n_ctx, s->first, on_row, s, err);
    if (rc) {
        sl_err_prefix(err, "chunk %d", c + 1);
        return rc;
    }
    if (s->next_pos != s->n_ctx - 1)
        return sl_err_set(err, SL_EINVAL,
                          "chunk %d: eval callback delivered %d of the %d scored rows", c + 1,
                          (int)(s->next_pos - s->first), (int)(s->n_ctx - 1 - s->first));
    return SL_OK;
}

/* A perplexity that is not finite is no result: every token's NLL was
 * finite, but their mean is beyond what exp() can take (logits far apart
 * beyond any trained model's: a damaged file). Fails naming chunk c. */
static int finite_ppl(double ppl, double mean_nll, int c, sl_err *err)
{
    if (isfinite(ppl)) return SL_OK;
    return sl_err_set(err, SL_EFORMAT, "chunk %d: the perplexity is %g (mean negative "
                      "log-likelihood %g): the logits are not a usable distribution", c + 1, ppl,
                      mean_nll);
}

static int check_run(const sl_eval_run *r, sl_err *err)
{
    if (!r->eval || r->n_vocab < 1)
        return sl_err_set(err, SL_EINVAL, "eval: no callback or n_vocab %d < 1", (int)r->n_vocab);
    if (r->bos >= r->n_vocab)
        return sl_err_set(err, SL_EINVAL, "eval: BOS id %d is outside [0, %d)", (int)r->bos,
                          (int)r->n_vocab);
    return SL_OK;
}

int sl_eval_perplexity(const sl_eval_run *r, const int32_t *tokens, size_t n_tokens,
                       int32_t n_ctx, int32_t max_chunks, const char *base_path,
                       sl_ppl *result, sl_err *err)
{
    int rc = check_run(r, err);
    if (rc) return rc;
    sl_ppl_plan plan;
    if ((rc = sl_ppl_plan_make(&plan, n_tokens, n_ctx, max_chunks, err))) return rc;
    const size_t n_used = (size_t)plan.n_chunk * (size_t)plan.n_ctx;
    for (size_t i = 0; i < n_used; i++)
        if (tokens[i] < 0 || tokens[i] >= r->n_vocab)
            return sl_err_set(err, SL_EINVAL, "perplexity: token %zu is %d, outside [0, %d)", i,
                              (int)tokens[i], (int)r->n_vocab);
    sl_ppl ppl;
    sl_ppl_init(&ppl);
    sl_kld_writer w;
    bool writing = false;
    int32_t *buf = malloc((size_t)plan.n_ctx * sizeof *buf);
    if (!buf) return sl_err_set(err, SL_ENOMEM, "perplexity: out of memory");
    if (base_path) {
        rc = sl_kld_writer_open(&w, base_path, plan.n_ctx, r->n_vocab, plan.n_chunk, tokens,
                                err);
        if (rc) goto done;
        writing = true;
    }
    sink_state s = {r, NULL, plan.n_ctx, plan.first, 0, &ppl, writing ? &w : NULL, NULL, NULL};
    char line[128];
    for (int c = 0; c < plan.n_chunk; c++) {
        rc = run_chunk(r, &s, tokens + (size_t)c * (size_t)plan.n_ctx, buf, c, err);
        if (!rc) rc = finite_ppl(sl_ppl_value(&ppl), ppl.nll / (double)ppl.count, c, err);
        if (rc) goto done;
        sl_ppl_format_chunk(line, sizeof line, c + 1, &ppl);
        emit(r, 1, line);
    }
    emit(r, 1, "\n");
    sl_ppl_format_final(line, sizeof line, &ppl);
    strncat(line, "\n", sizeof line - strlen(line) - 1);
    emit(r, 2, line);
    if (writing) {
        /* every byte on the disk, then the complete file takes the name */
        writing = false;
        if ((rc = sl_kld_writer_close(&w, err))) goto done;
    }
    if (result) *result = ppl;
done:
    if (writing) sl_kld_writer_close(&w, NULL); /* incomplete: no base file left behind */
    if (rc && base_path) sl_err_prefix(err, "KL-divergence base '%s' not written", base_path);
    free(buf);
    return rc;
}

int sl_eval_kl_divergence(const sl_eval_run *r, const char *base_path, int32_t max_chunks,
                          sl_kld_stats *stats, sl_err *err)
{
    int rc = check_run(r, err);
    if (rc) return rc;
    sl_kld_base base;
    if ((rc = sl_kld_base_open(&base, base_path, r->n_vocab, err))) return rc;
    int32_t n_chunk = base.n_chunk;
    if (max_chunks > 0 && max_chunks < n_chunk) n_chunk = max_chunks;
    sl_kld_acc acc;
    int32_t *buf = NULL;
    char *report = NULL;
    rc = sl_kld_acc_init(&acc, (size_t)n_chunk * (size_t)base.n_scored, err);
    if (rc) goto done_base;
    buf = malloc((size_t)base.n_ctx * sizeof *buf);
    report = malloc(4096);
    if (!buf || !report) {
        rc = sl_err_set(err, SL_ENOMEM, "KL-divergence: out of memory");
        goto done;
    }
    sink_state s = {r, NULL, base.n_ctx, base.n_ctx / 2, 0, NULL, NULL, &base, &acc};
    sl_kld_format_chunk_header(report, 4096);
    strcat(report, "\n");
    emit(r, 1, report);
    for (int c = 0; c < n_chunk; c++) {
        if ((rc = sl_kld_base_read_chunk(&base, c, err))) goto done;
        rc = run_chunk(r, &s, sl_kld_base_chunk_tokens(&base, c), buf, c, err);
        if (rc) goto done;
        sl_kld_format_chunk(report, 4096, c + 1, &acc);
        strcat(report, "\n");
        emit(r, 1, report);
    }
    emit(r, 1, "\n");
    sl_kld_stats st;
    if ((rc = sl_kld_acc_stats(&acc, &st, err))) goto done;
    rc = finite_ppl(st.ppl.value, st.ln_ppl_ratio.value + log(st.ppl_base.value), n_chunk - 1,
                    err);
    if (rc) goto done;
    sl_kld_format_stats(report, 4096, &st);
    emit(r, 1, report);
    if (stats) *stats = st;
done:
    free(report);
    free(buf);
    sl_kld_acc_free(&acc);
done_base:
    sl_kld_base_close(&base);
    return rc;
}
