/* tok_decode.c - ids back to bytes: the per-token piece cache, and the
 * streaming decoder that turns pieces into complete, valid UTF-8.
 *
 * Pieces: byte-level BPE texts are mapped back through the GPT-2 byte table
 * (a code point outside the table is kept as its own UTF-8); SentencePiece
 * and Gemma 4 texts get U+2581 turned back into spaces and <0xNN> tokens become the
 * byte; control, unknown and user-defined tokens keep their text (the first
 * two are only shown on request); unused and undefined tokens are empty.
 * Knows the vocabulary, not how it was encoded. */
#include "tok/tok_internal.h"

#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* "<0xNN>" -> NN, or -1. */
static int byte_token_value(const char *t, size_t n)
{
    if (n != 6 || memcmp(t, "<0x", 3) != 0 || t[5] != '>') return -1;
    int hi = hexval(t[3]), lo = hexval(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* Writes the piece of token t into dst (room for t->len bytes); returns
 * its length. Every rule shrinks or keeps the length. */
static uint32_t make_piece(const sl_tokenizer *tok, const sl_tok_entry *t, char *dst)
{
    const char *src = tok->pool + t->off;
    const size_t n = t->len;
    switch (t->type) {
    case SL_TOK_TYPE_CONTROL:
    case SL_TOK_TYPE_UNKNOWN:
    case SL_TOK_TYPE_USER_DEFINED:
        memcpy(dst, src, n);
        return (uint32_t)n;
    case SL_TOK_TYPE_BYTE: {
        int v = byte_token_value(src, n);
        if (v < 0) {
            memcpy(dst, src, n);
            return (uint32_t)n;
        }
        dst[0] = (char)v;
        return 1;
    }
    case SL_TOK_TYPE_NORMAL:
        break;
    default:
        return 0;
    }
    uint32_t w = 0;
    if (tok->model == SL_TOK_MODEL_SPM || tok->raw_bpe) {
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && memcmp(src + i, "\xE2\x96\x81", 3) == 0) {
                dst[w++] = ' ';
                i += 3;
            } else {
                dst[w++] = src[i++];
            }
        }
        return w;
    }
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = sl_tok_utf8_decode((const unsigned char *)src + i, n - i, &cp);
        int b = k ? sl_tok_unicode_to_byte(cp) : -1;
        if (b >= 0) {
            dst[w++] = (char)b;
            i += k;
        } else if (k) {
            memcpy(dst + w, src + i, k);
            w += (uint32_t)k;
            i += k;
        } else {
            dst[w++] = src[i++];
        }
    }
    return w;
}

int sl_tok_pieces_init(sl_tokenizer *tok, sl_err *err)
{
    size_t total = 0;
    for (uint32_t i = 0; i < tok->n_tokens; i++) total += tok->tokens[i].len;
    tok->pieces = malloc(total ? total : 1);
    if (!tok->pieces) return sl_err_set(err, SL_ENOMEM, "out of memory for token pieces");
    uint32_t off = 0, maxlen = 0;
    for (uint32_t i = 0; i < tok->n_tokens; i++) {
        sl_tok_entry *t = &tok->tokens[i];
        t->piece_off = off;
        t->piece_len = make_piece(tok, t, tok->pieces + off);
        off += t->piece_len;
        if (t->piece_len > maxlen) maxlen = t->piece_len;
    }
    tok->max_piece_len = maxlen;
    return SL_OK;
}

const char *sl_tokenizer_piece(const sl_tokenizer *tok, int32_t id, bool special, size_t *len)
{
    if (id < 0 || (uint32_t)id >= tok->n_tokens) {
        *len = 0;
        return NULL;
    }
    const sl_tok_entry *t = &tok->tokens[id];
    if (!special && (t->type == SL_TOK_TYPE_CONTROL || t->type == SL_TOK_TYPE_UNKNOWN)) {
        *len = 0;
        return "";
    }
    *len = t->piece_len;
    return tok->pieces + t->piece_off;
}

/* ---- streaming decoder --------------------------------------------------- */

int sl_tok_decoder_init(sl_tok_decoder *d, const sl_tokenizer *tok, unsigned flags, sl_err *err)
{
    memset(d, 0, sizeof *d);
    d->tok = tok;
    d->flags = flags;
    /* Worst case per push: the held bytes and every piece byte each turn
     * into a 3-byte U+FFFD. */
    d->cap = 3 * ((size_t)tok->max_piece_len + 4) + 1;
    d->buf = malloc(d->cap);
    if (!d->buf) return sl_err_set(err, SL_ENOMEM, "out of memory for a decoder");
    return SL_OK;
}

void sl_tok_decoder_free(sl_tok_decoder *d)
{
    free(d->buf);
    d->buf = NULL;
    d->cap = 0;
}

void sl_tok_decoder_reset(sl_tok_decoder *d)
{
    d->started = false;
    d->n_pend = d->need = 0;
}

static size_t put_fffd(char *o, size_t w)
{
    o[w] = (char)0xEF;
    o[w + 1] = (char)0xBF;
    o[w + 2] = (char)0xBD;
    return w + 3;
}

/* Feeds one byte through the UTF-8 state machine, writing finished text. */
static size_t feed(sl_tok_decoder *d, unsigned char c, char *o, size_t w)
{
    if (d->n_pend) {
        unsigned lo = d->n_pend == 1 ? d->lo : 0x80, hi = d->n_pend == 1 ? d->hi : 0xBF;
        if (c >= lo && c <= hi) {
            d->pend[d->n_pend++] = c;
            if (d->n_pend == d->need) {
                memcpy(o + w, d->pend, d->need);
                w += d->need;
                d->n_pend = 0;
            }
            return w;
        }
        /* The held bytes are a maximal ill-formed subpart: one U+FFFD, then
         * this byte starts afresh. */
        w = put_fffd(o, w);
        d->n_pend = 0;
    }
    if (c < 0x80) {
        o[w++] = (char)c;
        return w;
    }
    d->lo = 0x80;
    d->hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) d->need = 2;
    else if (c == 0xE0) { d->need = 3; d->lo = 0xA0; }
    else if (c == 0xED) { d->need = 3; d->hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) d->need = 3;
    else if (c == 0xF0) { d->need = 4; d->lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) d->need = 4;
    else if (c == 0xF4) { d->need = 4; d->hi = 0x8F; }
    else return put_fffd(o, w);
    d->pend[0] = c;
    d->n_pend = 1;
    return w;
}

int sl_tok_decoder_push(sl_tok_decoder *d, int32_t id, const char **text, size_t *len,
                        sl_err *err)
{
    size_t n;
    const char *p = sl_tokenizer_piece(d->tok, id, (d->flags & SL_TOK_DECODE_SPECIAL) != 0, &n);
    *text = d->buf;
    *len = 0;
    if (!p)
        return sl_err_set(err, SL_EINVAL, "token id %d is outside the vocabulary (0..%u)", id,
                          d->tok->n_tokens - 1);
    if (n && !d->started) {
        d->started = true;
        if ((d->flags & SL_TOK_DECODE_STRIP_PREFIX_SPACE) && d->tok->add_space_prefix &&
            d->tok->model == SL_TOK_MODEL_SPM && p[0] == ' ') {
            p++;
            n--;
        }
    }
    SL_ASSERT(3 * (n + 4) < d->cap);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w = feed(d, (unsigned char)p[i], d->buf, w);
    d->buf[w] = '\0';
    *len = w;
    return SL_OK;
}

void sl_tok_decoder_flush(sl_tok_decoder *d, const char **text, size_t *len)
{
    size_t w = 0;
    if (d->n_pend) {
        w = put_fffd(d->buf, 0);
        d->n_pend = 0;
    }
    d->buf[w] = '\0';
    *text = d->buf;
    *len = w;
}

int sl_tokenizer_decode(const sl_tokenizer *tok, const int32_t *ids, size_t n, unsigned flags,
                        char **out, size_t *out_len, sl_err *err)
{
    sl_tok_decoder d;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    const char *t;
    size_t tl;
    *out = NULL;
    *out_len = 0;
    int rc = sl_tok_decoder_init(&d, tok, flags, err);
    if (rc) return rc;
    for (size_t i = 0; i <= n; i++) {
        if (i < n) {
            rc = sl_tok_decoder_push(&d, ids[i], &t, &tl, err);
            if (rc) goto fail;
        } else {
            sl_tok_decoder_flush(&d, &t, &tl);
        }
        if (!sl_tok_reserve((void **)&buf, &cap, len + tl + 1, 1)) {
            rc = sl_err_set(err, SL_ENOMEM, "out of memory decoding %zu tokens", n);
            goto fail;
        }
        memcpy(buf + len, t, tl);
        len += tl;
    }
    buf[len] = '\0'; /* the last (flush) round reserved room for it */
    *out = buf;
    *out_len = len;
    sl_tok_decoder_free(&d);
    return SL_OK;
fail:
    free(buf);
    sl_tok_decoder_free(&d);
    return rc;
}
