/* kld_eval.c - see kld_eval.h. */
#include "common/kld_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_run.h"
#include "eval/kld_file.h"
#include "model/llama_rev.h"
#include "sluice.h"

enum { N_BATCH = 128 };

typedef struct evalctx {
    sl_session *s;
    sl_kld_base *base;   /* NULL: rows not compared */
    int32_t chunk;       /* the chunk being evaluated (they come in order) */
    uint8_t *enc;        /* one encoded row */
    t_kld_rows *rows;
} evalctx;

/* Encodes the row of logits at pos as llama-perplexity writes it and counts
 * it the same when its bytes equal the base's row. */
static int compare_row(evalctx *e, const int32_t *tokens, int32_t pos, int32_t first,
                       const float *logits, sl_err *err)
{
    if (pos == first) {
        int rc = sl_kld_base_read_chunk(e->base, e->chunk, err);
        if (rc) return rc;
    }
    sl_kld_row_encode(logits, e->base->n_vocab, tokens[pos + 1], e->enc);
    const uint8_t *want = e->base->chunk + (size_t)(pos - first) * e->base->row_bytes;
    e->rows->same += memcmp(e->enc, want, e->base->row_bytes) == 0;
    e->rows->total++;
    return SL_OK;
}

/* sl_eval_chunk_fn over a session: a fresh cache per chunk, batches of
 * N_BATCH (llama-perplexity -b 128), rows first..n-2 handed over. */
static int eval_chunk(void *model, const int32_t *tokens, int32_t n, int32_t first,
                      sl_eval_row_fn row, void *sink, sl_err *err)
{
    evalctx *e = model;
    sl_session_truncate(e->s, 0);
    /* each chunk is a prompt of its own, as llama-perplexity evaluates it,
     * asking the logits of positions first.. only */
    sl_session_set_prompt(e->s, n);
    int rc = sl_session_set_outputs_from(e->s, first, err);
    for (int p0 = 0; !rc && p0 < n; p0 += N_BATCH) {
        const int nb = n - p0 < N_BATCH ? n - p0 : N_BATCH;
        if ((rc = sl_session_eval(e->s, tokens + p0, nb, err))) return rc;
        for (int j = 0; j < nb; j++) {
            const int pos = p0 + j;
            if (pos < first || pos > n - 2) continue;
            const float *logits = sl_session_logits_at(e->s, j);
            if (e->base && (rc = compare_row(e, tokens, pos, first, logits, err))) return rc;
            if ((rc = row(sink, pos, logits, err))) return rc;
        }
    }
    if (rc) return rc;
    e->chunk++;
    return SL_OK;
}

static int g_rev = -1; /* t_kld_eval_set_rev */

void t_kld_eval_set_rev(int rev) { g_rev = rev; }

int t_kld_eval(const char *gguf, const char *kld, int chunks,
               int (*supported)(const char *arch), sl_kld_stats *st, char *why, size_t cap)
{
    return t_kld_eval_rows(gguf, kld, chunks, -1, -1, supported, st, NULL, why, cap);
}

int t_kld_eval_cache(const char *gguf, const char *kld, int chunks, int type_k, int type_v,
                     int (*supported)(const char *arch), sl_kld_stats *st, char *why, size_t cap)
{
    return t_kld_eval_rows(gguf, kld, chunks, type_k, type_v, supported, st, NULL, why, cap);
}

int t_kld_eval_rows(const char *gguf, const char *kld, int chunks, int type_k, int type_v,
                    int (*supported)(const char *arch), sl_kld_stats *st, t_kld_rows *rows,
                    char *why, size_t cap)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 2;
    mp.n_ctx_hint = 128;
    mp.n_logits_hint = N_BATCH;
    if (g_rev >= 0) mp.llama_rev = (sl_llama_rev)g_rev;
    sl_model *m = NULL;
    sl_err err = {0};
    if (sl_model_load(&m, gguf, &mp, &err) != 0) {
        snprintf(why, cap, "%s", err.msg); /* an architecture sluice does not run yet */
        return 1;
    }
    int rc = -1;
    sl_session *s = NULL;
    sl_kld_base b;
    memset(&b, 0, sizeof b); /* closing a zeroed reader is a no-op */
    uint8_t *enc = NULL;
    const int n_vocab = sl_model_n_vocab(m);
    if (supported && !supported(sl_model_arch_name(m))) {
        snprintf(why, cap, "%s: architecture not in this test's table yet",
                 sl_model_arch_name(m));
        rc = 1;
        goto out;
    }
    if (sl_kld_base_open(&b, kld, n_vocab, &err) != 0) {
        snprintf(why, cap, "%s: %s", kld, err.msg);
        goto out;
    }
    const int32_t n_ctx = b.n_ctx;
    if (rows) {
        memset(rows, 0, sizeof *rows);
    } else {
        sl_kld_base_close(&b);
    }
    enc = rows ? malloc(b.row_bytes) : NULL;
    if (rows && !enc) {
        snprintf(why, cap, "out of memory");
        goto out;
    }
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = n_ctx;
    sp.all_logits = true;
    sp.n_batch_max = N_BATCH;
    sp.type_k = type_k;
    sp.type_v = type_v;
    if (sl_session_create(&s, m, &sp, &err) != 0) {
        snprintf(why, cap, "%s", err.msg);
        goto out;
    }
    evalctx e = {s, rows ? &b : NULL, 0, enc, rows};
    sl_eval_run run = {
        .n_vocab = n_vocab,
        .bos = sl_model_add_bos(m) ? sl_model_token_bos(m) : -1,
        .eval = eval_chunk,
        .model = &e,
        .out = NULL,
        .user = NULL,
    };
    memset(st, 0, sizeof *st);
    if (sl_eval_kl_divergence(&run, kld, chunks, st, &err) != 0) {
        snprintf(why, cap, "%s", err.msg);
        goto out;
    }
    rc = 0;
out:
    if (rows) {
        free(enc);
        sl_kld_base_close(&b);
    }
    sl_session_free(s);
    sl_model_free(m);
    return rc;
}

static int no_row(void *sink, int32_t pos, const float *logits, sl_err *err)
{
    (void)sink, (void)pos, (void)logits, (void)err;
    return SL_OK;
}

int t_kld_rows_chunk(const char *gguf, const char *kld, int chunk, t_kld_rows *rows, char *why,
                     size_t cap)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 2;
    mp.n_ctx_hint = 128;
    mp.n_logits_hint = N_BATCH;
    sl_model *m = NULL;
    sl_err err = {0};
    memset(rows, 0, sizeof *rows);
    if (sl_model_load(&m, gguf, &mp, &err) != 0) {
        snprintf(why, cap, "%s", err.msg);
        return -1;
    }
    int rc = -1;
    sl_session *s = NULL;
    sl_kld_base b;
    memset(&b, 0, sizeof b);
    uint8_t *enc = NULL;
    int32_t *toks = NULL;
    if (sl_kld_base_open(&b, kld, sl_model_n_vocab(m), &err) != 0) {
        snprintf(why, cap, "%s: %s", kld, err.msg);
        goto out;
    }
    if (chunk < 0 || chunk >= b.n_chunk) {
        snprintf(why, cap, "%s has no chunk %d (%d chunks)", kld, chunk, (int)b.n_chunk);
        goto out;
    }
    enc = malloc(b.row_bytes);
    toks = malloc(sizeof *toks * (size_t)b.n_ctx);
    if (!enc || !toks) {
        snprintf(why, cap, "out of memory");
        goto out;
    }
    memcpy(toks, sl_kld_base_chunk_tokens(&b, chunk), sizeof *toks * (size_t)b.n_ctx);
    if (sl_model_add_bos(m)) toks[0] = sl_model_token_bos(m); /* as the evaluation does */
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = b.n_ctx;
    sp.all_logits = true;
    sp.n_batch_max = N_BATCH;
    if (sl_session_create(&s, m, &sp, &err) != 0) {
        snprintf(why, cap, "%s", err.msg);
        goto out;
    }
    evalctx e = {s, &b, chunk, enc, rows};
    if (eval_chunk(&e, toks, b.n_ctx, b.n_ctx / 2, no_row, NULL, &err) != 0) {
        snprintf(why, cap, "%s", err.msg);
        goto out;
    }
    rc = 0;
out:
    free(toks);
    free(enc);
    sl_kld_base_close(&b);
    sl_session_free(s);
    sl_model_free(m);
    return rc;
}
