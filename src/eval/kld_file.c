/* kld_file.c - writer and reader of the KL-divergence base file (see
 * kld_file.h for the layout and where it comes from). */
#include "eval/kld_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_f32(uint8_t *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(p, v);
}

static float get_f32(const uint8_t *p)
{
    uint32_t v = get_u32(p);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

double sl_kld_row_encode(const float *logits, int32_t n_vocab, int32_t target, uint8_t *out)
{
    /* Float arithmetic on purpose, step for step as llama.cpp's
     * log_softmax(n_vocab, logits, log_prob, tok): the stored bytes then
     * match a file written by llama-perplexity for the same logits. */
    float max_l = logits[0], min_l = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) {
        if (logits[i] > max_l) max_l = logits[i];
        if (logits[i] < min_l) min_l = logits[i];
    }
    if (min_l < max_l - 16.0f) min_l = max_l - 16.0f;
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) sum_exp += (double)expf(logits[i] - max_l);
    const float lse = (float)log(sum_exp);
    const float min_log_prob = min_l - max_l - lse;
    const float scale = (max_l - min_l) / 65535.0f;
    put_f32(out, scale);
    put_f32(out + 4, min_log_prob);
    uint8_t *q = out + 8;
    if (scale != 0.0f) {
        const float inv_scale = 1.0f / scale;
        for (int32_t i = 0; i < n_vocab; i++) {
            long v = 0;
            /* lrintf rounds half to even in the default rounding mode, as
             * llama.cpp's nearest_int (add 1.5*2^23) does */
            if (logits[i] > min_l) v = lrintf(inv_scale * (logits[i] - min_l));
            if (v > 65535) v = 65535;
            q[2 * (size_t)i] = (uint8_t)v;
            q[2 * (size_t)i + 1] = (uint8_t)(v >> 8);
        }
    } else {
        memset(q, 0, 2 * (size_t)n_vocab);
    }
    if (n_vocab & 1) { /* the pad slot */
        q[2 * (size_t)n_vocab] = 0;
        q[2 * (size_t)n_vocab + 1] = 0;
    }
    return (double)(max_l + lse - logits[target]);
}

int sl_kld_row_view(const uint8_t *bytes, int32_t n_vocab, sl_kld_row *out, const char *where,
                    sl_err *err)
{
    out->scale = get_f32(bytes);
    out->min_log_prob = get_f32(bytes + 4);
    out->q = bytes + 8;
    out->n_vocab = n_vocab;
    if (!isfinite(out->scale) || out->scale < 0.0f)
        return sl_err_set(err, SL_EFORMAT, "%s%sscale is %g, expected a finite value >= 0",
                          where ? where : "", where ? ": " : "", (double)out->scale);
    if (!isfinite(out->min_log_prob) || out->min_log_prob > 0.0f)
        return sl_err_set(err, SL_EFORMAT,
                          "%s%smin_log_prob is %g, expected a finite value <= 0",
                          where ? where : "", where ? ": " : "", (double)out->min_log_prob);
    /* the largest value a q can decode to (q = 65535), in the float
     * arithmetic of sl_kld_row_logprob: finite for every real row (it is
     * -log-sum-exp, <= 0), +inf when a huge scale overflows */
    const float top = out->scale * 65535.0f + out->min_log_prob;
    if (!isfinite(top))
        return sl_err_set(err, SL_EFORMAT,
                          "%s%sscale %g with min_log_prob %g decodes to a non-finite "
                          "log-probability",
                          where ? where : "", where ? ": " : "", (double)out->scale,
                          (double)out->min_log_prob);
    return SL_OK;
}

/* ---- writer ------------------------------------------------------------ */

int sl_kld_writer_open(sl_kld_writer *w, const char *path, int32_t n_ctx, int32_t n_vocab,
                       int32_t n_chunk, const int32_t *tokens, sl_err *err)
{
    memset(w, 0, sizeof *w);
    w->out.f.fd = -1;
    if (n_ctx < 3)
        return sl_err_set(err, SL_EINVAL, "KLD base: n_ctx is %d, expected >= 3", (int)n_ctx);
    if (n_vocab < 1)
        return sl_err_set(err, SL_EINVAL, "KLD base: n_vocab is %d, expected >= 1", (int)n_vocab);
    if (n_chunk < 1)
        return sl_err_set(err, SL_EINVAL, "KLD base: n_chunk is %d, expected >= 1", (int)n_chunk);
    const size_t n_tok = (size_t)n_ctx * (size_t)n_chunk; /* < 2^62: no overflow */
    for (size_t i = 0; i < n_tok; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return sl_err_set(err, SL_EINVAL,
                              "KLD base: token %zu is %d, outside the vocabulary [0, %d)", i,
                              (int)tokens[i], (int)n_vocab);
    w->n_ctx = n_ctx;
    w->n_vocab = n_vocab;
    w->n_chunk = n_chunk;
    w->rows_expected = (uint64_t)n_chunk * (uint64_t)sl_kld_rows_per_chunk(n_ctx);
    w->row = malloc(sl_kld_row_bytes(n_vocab));
    uint8_t *tok_bytes = malloc(n_tok * 4);
    int rc;
    if (!w->row || !tok_bytes) {
        rc = sl_err_set(err, SL_ENOMEM, "KLD base: out of memory for %zu tokens", n_tok);
        goto err;
    }
    static const sl_out_kind kld_kind = {"a KL-divergence base", SL_KLD_MAGIC, 8};
    rc = sl_out_open(&w->out, path, &kld_kind, err);
    if (rc) goto err;
    uint8_t hdr[SL_KLD_HEADER_BYTES];
    memcpy(hdr, SL_KLD_MAGIC, 8);
    put_u32(hdr + 8, (uint32_t)n_ctx);
    put_u32(hdr + 12, (uint32_t)n_vocab);
    put_u32(hdr + 16, (uint32_t)n_chunk);
    for (size_t i = 0; i < n_tok; i++) put_u32(tok_bytes + 4 * i, (uint32_t)tokens[i]);
    rc = sl_out_write(&w->out, hdr, sizeof hdr, err);
    if (!rc) rc = sl_out_write(&w->out, tok_bytes, n_tok * 4, err);
    if (rc) goto err;
    free(tok_bytes);
    return SL_OK;
err:
    free(tok_bytes);
    free(w->row);
    w->row = NULL;
    sl_out_abort(&w->out);
    return rc;
}

int sl_kld_writer_add(sl_kld_writer *w, const float *logits, int32_t target, double *nll,
                      sl_err *err)
{
    if (w->rows_written >= w->rows_expected)
        return sl_err_set(err, SL_EINVAL, "KLD base: all %llu rows are already written",
                          (unsigned long long)w->rows_expected);
    if (target < 0 || target >= w->n_vocab)
        return sl_err_set(err, SL_EINVAL, "KLD base: target token %d is outside [0, %d)",
                          (int)target, (int)w->n_vocab);
    for (int32_t i = 0; i < w->n_vocab; i++)
        if (!isfinite(logits[i]))
            return sl_err_set(err, SL_EFORMAT,
                              "KLD base: row %llu: logit of token %d is %g",
                              (unsigned long long)w->rows_written, (int)i, (double)logits[i]);
    double v = sl_kld_row_encode(logits, w->n_vocab, target, w->row);
    int rc = sl_out_write(&w->out, w->row, sl_kld_row_bytes(w->n_vocab), err);
    if (rc) return rc;
    w->rows_written++;
    if (nll) *nll = v;
    return SL_OK;
}

int sl_kld_writer_close(sl_kld_writer *w, sl_err *err)
{
    int rc = SL_OK;
    if (w->out.open && w->rows_written != w->rows_expected) {
        rc = sl_err_set(err, SL_EINVAL,
                        "KLD base '%s' is incomplete: %llu of %llu rows written",
                        w->out.path, (unsigned long long)w->rows_written,
                        (unsigned long long)w->rows_expected);
        sl_out_abort(&w->out);
    } else if (w->out.open) {
        rc = sl_out_commit(&w->out, err);
    }
    free(w->row);
    w->row = NULL;
    return rc;
}

/* ---- reader ------------------------------------------------------------ */

void sl_kld_base_close(sl_kld_base *b)
{
    if (!b) return;
    sl_file_close(&b->f);
    free(b->tokens);
    free(b->chunk);
    b->tokens = NULL;
    b->chunk = NULL;
}

static int header_i32(const uint8_t *hdr, unsigned off, const char *name, int32_t min,
                      const char *path, int32_t *out, sl_err *err)
{
    int32_t v = (int32_t)get_u32(hdr + off);
    if (v < min)
        return sl_err_set(err, SL_EFORMAT,
                          "KLD base '%s': %s at offset %u is %d, expected >= %d", path, name,
                          off, (int)v, (int)min);
    *out = v;
    return SL_OK;
}

int sl_kld_base_open(sl_kld_base *b, const char *path, int32_t model_n_vocab, sl_err *err)
{
    memset(b, 0, sizeof *b);
    b->f.fd = -1;
    b->loaded_chunk = -1;
    int rc = sl_file_open_read(&b->f, path, err);
    if (rc) return rc;
    const uint64_t size = b->f.size;
    if (size < SL_KLD_HEADER_BYTES) {
        rc = sl_err_set(err, SL_EFORMAT,
                        "KLD base '%s' is truncated: %llu bytes, the header alone needs %u",
                        path, (unsigned long long)size, SL_KLD_HEADER_BYTES);
        goto err;
    }
    uint8_t hdr[SL_KLD_HEADER_BYTES];
    rc = sl_file_pread_full(&b->f, hdr, sizeof hdr, 0, err);
    if (rc) goto err;
    if (memcmp(hdr, SL_KLD_MAGIC "v2", 10) == 0) {
        /* a llama.cpp fork's sliding-window variant: same rows, another
         * header; better named than misread as a garbage n_ctx */
        rc = sl_err_set(err, SL_EUNSUPPORTED,
                        "'%s' is a \"_logits_v2\" (sliding-window) base file from a llama.cpp "
                        "fork; only upstream's \"" SL_KLD_MAGIC "\" format is supported",
                        path);
        goto err;
    }
    if (memcmp(hdr, SL_KLD_MAGIC, 8) != 0) {
        char seen[33];
        for (int i = 0; i < 8; i++) snprintf(seen + 4 * i, 5, "\\x%02x", hdr[i]);
        rc = sl_err_set(err, SL_EFORMAT,
                        "'%s' is not a KL-divergence base file: magic at offset 0 is %s, "
                        "expected \"" SL_KLD_MAGIC "\"",
                        path, seen);
        goto err;
    }
    if ((rc = header_i32(hdr, 8, "n_ctx", 3, path, &b->n_ctx, err))) goto err;
    if ((rc = header_i32(hdr, 12, "n_vocab", 1, path, &b->n_vocab, err))) goto err;
    if ((rc = header_i32(hdr, 16, "n_chunk", 1, path, &b->n_chunk, err))) goto err;
    if (model_n_vocab > 0 && b->n_vocab != model_n_vocab) {
        rc = sl_err_set(err, SL_EINVAL,
                        "KLD base '%s': n_vocab at offset 12 is %d but the model's vocabulary "
                        "has %d tokens",
                        path, (int)b->n_vocab, (int)model_n_vocab);
        goto err;
    }
    b->n_scored = sl_kld_rows_per_chunk(b->n_ctx);
    b->row_bytes = sl_kld_row_bytes(b->n_vocab);

    /* n_ctx, n_chunk and n_vocab are each < 2^31, so the counts fit in 64
     * bits; the byte sizes need not (2^30 rows x 2^31 chunks x 2^32 bytes):
     * everything past the counts is checked. */
    const uint64_t n_tok = (uint64_t)b->n_ctx * (uint64_t)b->n_chunk;
    const uint64_t n_rows = (uint64_t)b->n_scored * (uint64_t)b->n_chunk;
    uint64_t tok_bytes, tok_end, rows_bytes, expected;
    if (!sl_mul_u64(n_tok, 4, &tok_bytes) || !sl_add_u64(SL_KLD_HEADER_BYTES, tok_bytes, &tok_end) ||
        !sl_mul_u64(n_rows, b->row_bytes, &rows_bytes) ||
        !sl_add_u64(tok_end, rows_bytes, &expected) || n_tok > SIZE_MAX / 4) {
        rc = sl_err_set(err, SL_EFORMAT,
                        "KLD base '%s': the header's n_ctx %d, n_vocab %d and n_chunk %d "
                        "describe a file of more than 2^64 bytes (the file has %llu)",
                        path, (int)b->n_ctx, (int)b->n_vocab, (int)b->n_chunk,
                        (unsigned long long)size);
        goto err;
    }
    b->rows_offset = tok_end;
    if (size < tok_end) {
        uint64_t idx = (size - SL_KLD_HEADER_BYTES) / 4;
        rc = sl_err_set(err, SL_EFORMAT,
                        "KLD base '%s' is truncated in the tokens: %llu bytes, expected %llu "
                        "(n_ctx %d, n_chunk %d); token %llu at offset %llu is incomplete",
                        path, (unsigned long long)size, (unsigned long long)expected,
                        (int)b->n_ctx, (int)b->n_chunk, (unsigned long long)idx,
                        (unsigned long long)(SL_KLD_HEADER_BYTES + 4 * idx));
        goto err;
    }
    if (size < expected) {
        uint64_t k = (size - tok_end) / b->row_bytes;
        rc = sl_err_set(err, SL_EFORMAT,
                        "KLD base '%s' is truncated: %llu bytes, expected %llu; chunk %llu "
                        "row %llu at offset %llu is incomplete",
                        path, (unsigned long long)size, (unsigned long long)expected,
                        (unsigned long long)(k / (uint64_t)b->n_scored),
                        (unsigned long long)(k % (uint64_t)b->n_scored),
                        (unsigned long long)(tok_end + k * b->row_bytes));
        goto err;
    }
    if (size > expected) {
        rc = sl_err_set(err, SL_EFORMAT,
                        "KLD base '%s' has %llu unexpected bytes after its last row, at "
                        "offset %llu (n_ctx %d, n_vocab %d, n_chunk %d)",
                        path, (unsigned long long)(size - expected),
                        (unsigned long long)expected, (int)b->n_ctx, (int)b->n_vocab,
                        (int)b->n_chunk);
        goto err;
    }

    b->tokens = malloc((size_t)n_tok * sizeof *b->tokens);
    b->chunk = malloc((size_t)b->n_scored * b->row_bytes);
    uint8_t *raw = malloc((size_t)n_tok * 4);
    if (!b->tokens || !b->chunk || !raw) {
        free(raw);
        rc = sl_err_set(err, SL_ENOMEM, "KLD base '%s': out of memory for %llu tokens", path,
                        (unsigned long long)n_tok);
        goto err;
    }
    rc = sl_file_pread_full(&b->f, raw, (size_t)n_tok * 4, SL_KLD_HEADER_BYTES, err);
    for (uint64_t i = 0; !rc && i < n_tok; i++) {
        int32_t t = (int32_t)get_u32(raw + 4 * i);
        if (t < 0 || t >= b->n_vocab)
            rc = sl_err_set(err, SL_EFORMAT,
                            "KLD base '%s': token %llu (chunk %llu) at offset %llu is %d, "
                            "outside the vocabulary [0, %d)",
                            path, (unsigned long long)i,
                            (unsigned long long)(i / (uint64_t)b->n_ctx),
                            (unsigned long long)(SL_KLD_HEADER_BYTES + 4 * i), (int)t,
                            (int)b->n_vocab);
        b->tokens[i] = t;
    }
    free(raw);
    if (rc) goto err;
    return SL_OK;
err:
    sl_kld_base_close(b);
    return rc;
}

int sl_kld_base_read_chunk(sl_kld_base *b, int32_t c, sl_err *err)
{
    if (c < 0 || c >= b->n_chunk)
        return sl_err_set(err, SL_EINVAL, "KLD base: chunk %d is outside [0, %d)", (int)c,
                          (int)b->n_chunk);
    if (c == b->loaded_chunk) return SL_OK;
    size_t len = (size_t)b->n_scored * b->row_bytes;
    uint64_t off = b->rows_offset + (uint64_t)c * len;
    b->loaded_chunk = -1;
    int rc = sl_file_pread_full(&b->f, b->chunk, len, off, err);
    if (rc) return rc;
    b->loaded_chunk = c;
    return SL_OK;
}

int sl_kld_base_row(const sl_kld_base *b, int32_t r, sl_kld_row *out, sl_err *err)
{
    if (b->loaded_chunk < 0)
        return sl_err_set(err, SL_EINVAL, "KLD base: no chunk loaded");
    if (r < 0 || r >= b->n_scored)
        return sl_err_set(err, SL_EINVAL, "KLD base: row %d is outside [0, %d)", (int)r,
                          (int)b->n_scored);
    uint64_t off = b->rows_offset +
                   ((uint64_t)b->loaded_chunk * (uint64_t)b->n_scored + (uint64_t)r) *
                       b->row_bytes;
    char where[160];
    snprintf(where, sizeof where, "KLD base '%s': chunk %d row %d at offset %llu", b->f.path,
             (int)b->loaded_chunk, (int)r, (unsigned long long)off);
    return sl_kld_row_view(b->chunk + (size_t)r * b->row_bytes, b->n_vocab, out, where, err);
}
