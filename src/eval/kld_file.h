/* kld_file.h - the KL-divergence base file, byte-compatible with llama.cpp.
 *
 * Owns: the file layout, the 16-bit quantisation of one row of
 * log-probabilities, writing and bounds-checked reading. Must not know:
 * models, sessions, or the statistics computed from the rows (kld.h).
 *
 * Layout (llama.cpp tools/perplexity/perplexity.cpp, read at ggml-org
 * commit 050fc7f: perplexity() with --kl-divergence-base writes it,
 * kl_divergence() reads it; all integers and floats little-endian, no
 * padding between fields):
 *
 *   offset      size                 field
 *   0           8                    magic "_logits_" (no NUL)
 *   8           4   int32            n_ctx    tokens per chunk
 *   12          4   int32            n_vocab
 *   16          4   int32            n_chunk
 *   20          4*n_ctx*n_chunk      tokens   int32, the tokenized text of all
 *                                             chunks (original first token of
 *                                             each chunk, not the BOS that
 *                                             replaces it during evaluation)
 *   20+4*n_ctx*n_chunk               rows     n_chunk * n_scored rows, chunk
 *                                             after chunk, where
 *                                             n_scored = n_ctx - 1 - n_ctx/2
 *
 *   one row = nv uint16 = 2*nv bytes, nv = 2*((n_vocab + 1)/2) + 4:
 *
 *   +----------------+----------------------+-----------------------+-----+
 *   | f32 scale      | f32 min_log_prob     | u16 q[0..n_vocab)     | pad |
 *   +----------------+----------------------+-----------------------+-----+
 *     bytes 0..3       bytes 4..7             bytes 8..8+2*n_vocab    u16 0
 *                                                                     if n_vocab odd
 *   Row r of chunk c holds the distribution predicted at position
 *   n_ctx/2 + r of chunk c (which scores token n_ctx/2 + r + 1). With l the
 *   logits, max_l their max, min_l = max(min of l, max_l - 16) and
 *   lse = log(sum exp(l - max_l)):
 *     scale        = (max_l - min_l) / 65535
 *     min_log_prob = min_l - max_l - lse
 *     q_i          = l_i > min_l ? round((l_i - min_l) / scale) : 0
 *   so log p_i ~= scale * q_i + min_log_prob: 16-bit steps over the top 16
 *   nats, everything below clamped to the bottom (and ignored by the KLD,
 *   which skips log p <= -16). */
#ifndef SL_EVAL_KLD_FILE_H
#define SL_EVAL_KLD_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "util/file.h"
#include "util/out_file.h"
#include "util/status.h"

#define SL_KLD_MAGIC "_logits_"
#define SL_KLD_HEADER_BYTES 20u

/* Bytes of one row for n_vocab tokens: 2 * (2*((n_vocab+1)/2) + 4). */
static inline size_t sl_kld_row_bytes(int32_t n_vocab)
{
    return 2u * (2u * (((size_t)n_vocab + 1u) / 2u) + 4u);
}

/* Rows (scored positions) per chunk for a context of n_ctx. */
static inline int32_t sl_kld_rows_per_chunk(int32_t n_ctx)
{
    return n_ctx - 1 - n_ctx / 2;
}

/* Quantises one logits row into out (sl_kld_row_bytes(n_vocab) bytes),
 * computed exactly as llama.cpp does (float arithmetic, sum in double,
 * round-half-even), so both tools write the same bytes for the same logits.
 * Returns the NLL of `target` (max_l + lse - l[target]) for the perplexity
 * printed while writing. The caller checks target is in range. */
double sl_kld_row_encode(const float *logits, int32_t n_vocab, int32_t target, uint8_t *out);

/* A decoded view of one stored row. q points into the reader's chunk buffer
 * and stays valid until the next sl_kld_base_read_chunk or close. */
typedef struct sl_kld_row {
    float scale;
    float min_log_prob;
    const uint8_t *q; /* n_vocab little-endian uint16 */
    int32_t n_vocab;
} sl_kld_row;

/* Stored q value of token i (0 <= i < n_vocab). */
static inline uint16_t sl_kld_row_q(const sl_kld_row *r, int32_t i)
{
    return (uint16_t)(r->q[2 * (size_t)i] | (r->q[2 * (size_t)i + 1] << 8));
}

/* Decoded log-probability of token i, in float as llama.cpp computes it. */
static inline float sl_kld_row_logprob(const sl_kld_row *r, int32_t i)
{
    return r->scale * (float)sl_kld_row_q(r, i) + r->min_log_prob;
}

/* Interprets bytes (one encoded row) as a row; fails with SL_EFORMAT if the
 * scale is not finite and >= 0, min_log_prob is not finite and <= 0, or
 * the largest value a q decodes to (scale * 65535 + min_log_prob) is not
 * finite.
 * `where` (may be NULL) prefixes the message, e.g. "chunk 3 row 7". */
int sl_kld_row_view(const uint8_t *bytes, int32_t n_vocab, sl_kld_row *out, const char *where,
                    sl_err *err);

/* ---- writer ------------------------------------------------------------ */

typedef struct sl_kld_writer {
    sl_out_file out;     /* out_file.h: beside the target until complete */
    int32_t n_ctx, n_vocab, n_chunk;
    uint64_t rows_expected;
    uint64_t rows_written;
    uint8_t *row;        /* (sl_kld_row_bytes(n_vocab)) scratch */
} sl_kld_writer;

/* Starts writing path through the writer (util/out_file.h: a base replaces
 * only another base, never an open input; the bytes go to a temporary
 * file beside it) with the header and the n_ctx*n_chunk tokens (the
 * caller keeps ownership of tokens). Fails with SL_EINVAL for n_ctx < 3,
 * n_vocab < 1, n_chunk < 1, a token outside [0, n_vocab) (naming its
 * index) or a path the writer refuses, SL_EIO if the file cannot be
 * written, SL_ENOMEM. On failure the writer is closed. */
int sl_kld_writer_open(sl_kld_writer *w, const char *path, int32_t n_ctx, int32_t n_vocab,
                       int32_t n_chunk, const int32_t *tokens, sl_err *err);

/* Appends the next row (rows go chunk by chunk, n_scored per chunk) from a
 * logits row of n_vocab floats; target is the token it predicts. Writes the
 * NLL of target to *nll (may be NULL). Fails with SL_EINVAL if all rows were
 * already written or target is out of range, SL_EFORMAT if the logits
 * contain NaN/inf, SL_EIO on a write error. */
int sl_kld_writer_add(sl_kld_writer *w, const float *logits, int32_t target, double *nll,
                      sl_err *err);

/* Finishes the file: when every row was written, syncs it and renames it
 * onto path (SL_EIO on a failure); else returns SL_EINVAL (naming the
 * counts) and path is left as it was: an incomplete base never takes its
 * name. Resources are released either way. */
int sl_kld_writer_close(sl_kld_writer *w, sl_err *err);

/* ---- reader ------------------------------------------------------------ */

typedef struct sl_kld_base {
    sl_file f;
    int32_t n_ctx, n_vocab, n_chunk;
    int32_t n_scored;        /* rows per chunk */
    size_t row_bytes;
    uint64_t rows_offset;    /* file offset of chunk 0 row 0 */
    int32_t *tokens;         /* (n_chunk * n_ctx) validated token ids */
    uint8_t *chunk;          /* (n_scored * row_bytes) rows of loaded_chunk */
    int32_t loaded_chunk;    /* -1 before the first read */
} sl_kld_base;

/* Opens and validates a base file: magic, header fields, exact file size
 * (a truncated file names the first incomplete chunk/row and its offset;
 * trailing bytes are an error too), and every token id against n_vocab.
 * If model_n_vocab > 0 the file's n_vocab must equal it. Header counts whose
 * sizes overflow 64 bits are refused, naming them, before anything is
 * allocated; allocations never exceed what the file holds. All failures are
 * SL_EFORMAT (SL_EINVAL for the n_vocab mismatch, SL_EUNSUPPORTED for a
 * fork's "_logits_v2" file, SL_EIO for OS errors) with the field and byte
 * offset in the message; b is closed on failure. */
int sl_kld_base_open(sl_kld_base *b, const char *path, int32_t model_n_vocab, sl_err *err);

/* Loads the rows of chunk c (0-based) into memory. SL_EINVAL if c is out of
 * range; SL_EIO/SL_EFORMAT if the read fails. */
int sl_kld_base_read_chunk(sl_kld_base *b, int32_t c, sl_err *err);

/* Row r (0 <= r < n_scored) of the loaded chunk, validated as in
 * sl_kld_row_view (messages name the chunk, row and file offset). */
int sl_kld_base_row(const sl_kld_base *b, int32_t r, sl_kld_row *out, sl_err *err);

/* Tokens of chunk c: n_ctx ids (valid until close). */
static inline const int32_t *sl_kld_base_chunk_tokens(const sl_kld_base *b, int32_t c)
{
    return b->tokens + (size_t)c * (size_t)b->n_ctx;
}

/* Closes and frees; safe on a zeroed or closed reader. */
void sl_kld_base_close(sl_kld_base *b);

#endif
