/* tok_spm.c - SentencePiece BPE encoding of one raw fragment.
 *
 * Spaces become U+2581 ("▁"), with one prepended at the start of the text
 * and after a special token when the vocabulary asks for a space prefix.
 * The text starts as one symbol per character; the adjacent pair whose
 * concatenation is a vocabulary token with the highest score is merged
 * first (leftmost on ties), until no pair forms a token. A character that
 * is not a token is emitted as its bytes' <0xNN> tokens (byte fallback).
 * Knows the vocabulary and scores, not the special tokens. */
#include "tok/tok_internal.h"

#include <string.h>

static bool is_space_mark(const sl_tok_scratch *s, int32_t i)
{
    return s->sym[i].n == 3 && memcmp(s->text + s->sym[i].off, "\xE2\x96\x81", 3) == 0;
}

/* Symbol j is ▁ and follows a complete character other than ▁. */
static bool word_starts(const sl_tok_scratch *s, int32_t j)
{
    const sl_tok_symbol *p = &s->sym[j - 1];
    return is_space_mark(s, j) && !is_space_mark(s, j - 1) &&
           sl_tok_utf8_valid_len((const unsigned char *)s->text + p->off, p->n) == p->n;
}

/* Merges symbols [start, end) (already linked among themselves only) and
 * appends their ids. */
static int encode_word(const sl_tokenizer *tok, sl_tok_scratch *s, int32_t start, int32_t end,
                       sl_tok_ids *out, sl_err *err)
{
    if (sl_tok_merge(tok, s, s->text, start, end, SL_TOK_MERGE_SCORE)) goto nomem;

    for (int32_t i = start; i != -1; i = s->sym[i].next) {
        const sl_tok_symbol *sy = &s->sym[i];
        int32_t id = sl_tok_map_get(&tok->vocab, s->text + sy->off, sy->n, 0);
        if (id >= 0) {
            if (sl_tok_ids_push(out, id)) goto nomem;
            continue;
        }
        /* Only single characters can miss: every merge formed a token. */
        for (uint32_t j = 0; j < sy->n; j++) {
            unsigned char byte = (unsigned char)s->text[sy->off + j];
            int32_t bt = tok->byte_tok[byte];
            if (bt < 0) bt = tok->unk;
            if (bt < 0)
                return sl_err_set(err, SL_EINVAL,
                                  "the vocabulary has no token for byte 0x%02X and no unknown token",
                                  byte);
            if (sl_tok_ids_push(out, bt)) goto nomem;
        }
    }
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory encoding a %d-character word", end - start);
}

int sl_tok_spm_encode(const sl_tokenizer *tok, const char *text, size_t len, bool space_prefix,
                      sl_tok_scratch *s, sl_tok_ids *out, sl_err *err)
{
    /* Escape: every ' ' becomes the 3 bytes of U+2581. */
    if (len > (SIZE_MAX - 3) / 3 || 3 * len + 3 > UINT32_MAX) goto nomem;
    if (!sl_tok_reserve((void **)&s->text, &s->text_cap, 3 * len + 3, 1)) goto nomem;
    size_t n = 0;
    if (space_prefix) {
        memcpy(s->text, "\xE2\x96\x81", 3);
        n = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(s->text + n, "\xE2\x96\x81", 3);
            n += 3;
        } else {
            s->text[n++] = text[i];
        }
    }
    if (n == 0) return SL_OK;

    /* One symbol per character, counted by the lead byte as llama.cpp does
     * (so ill-formed bytes still form symbols and end up as byte tokens). */
    const int32_t ns = sl_tok_char_symbols(s, s->text, n);
    if (ns < 0) goto nomem;

    /* With a vocabulary where U+2581 only ever follows U+2581 inside a
     * token, no merge can join a character to a following ▁: the text
     * splits into independent words there, each merged with a small queue
     * (the result is the same as merging the whole text at once). */
    for (int32_t start = 0; start < ns;) {
        int32_t end = start + 1;
        if (tok->spm_word_split)
            while (end < ns && !word_starts(s, end)) end++;
        else
            end = ns;
        s->sym[start].prev = -1;
        s->sym[end - 1].next = -1;
        int rc = encode_word(tok, s, start, end, out, err);
        if (rc) return rc;
        start = end;
    }
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory encoding a %zu-byte text", len);
}
