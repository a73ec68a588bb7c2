/* tok_bpe.c - byte-level BPE encoding of one raw fragment.
 *
 * The fragment is made valid UTF-8 (ill-formed bytes become U+FFFD, as in
 * llama.cpp), split by the pre-tokenizer, and each piece is written through
 * the GPT-2 byte table so that every byte is one visible character. Merging
 * then starts from one symbol per byte and repeatedly applies the adjacent
 * pair with the lowest merge rank (leftmost first on ties) until no ranked
 * pair remains. A priority queue holds candidate pairs; entries made stale
 * by an earlier merge are recognised by their recorded byte size (symbols
 * only ever grow to the right, so an unchanged size means unchanged text).
 * Knows the merge table and the vocabulary, not the special tokens. */
#include "tok/tok_internal.h"

#include <string.h>

static bool add_pair(const sl_tokenizer *tok, sl_tok_scratch *s, int32_t l, int32_t r)
{
    if (l < 0 || r < 0) return true;
    const sl_tok_symbol *L = &s->sym[l], *R = &s->sym[r];
    uint32_t size = L->n + R->n;
    /* Adjacent live symbols are contiguous bytes of the word. */
    int32_t rank = sl_tok_map_get(&tok->merges, s->word + L->off, size, L->n);
    if (rank < 0) return true;
    sl_tok_bigram b = {.key = (double)rank, .left = l, .right = r, .size = size};
    return sl_tok_heap_push(&s->heap, b);
}

static int encode_piece(const sl_tokenizer *tok, const unsigned char *p, size_t n,
                        sl_tok_scratch *s, sl_tok_ids *out)
{
    if (n == 0) return SL_OK;
    if (n > UINT32_MAX / 2) return SL_ENOMEM;
    if (!sl_tok_reserve((void **)&s->word, &s->word_cap, 2 * n, 1)) return SL_ENOMEM;
    if (!sl_tok_reserve((void **)&s->sym, &s->sym_cap, n, sizeof *s->sym)) return SL_ENOMEM;

    const sl_tok_bytemap_entry *b2u = sl_tok_byte_to_unicode();
    uint32_t w = 0;
    for (size_t i = 0; i < n; i++) {
        const sl_tok_bytemap_entry *e = &b2u[p[i]];
        s->sym[i].off = w;
        s->sym[i].n = e->len;
        s->sym[i].prev = (int32_t)i - 1;
        s->sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        memcpy(s->word + w, e->s, e->len);
        w += e->len;
    }

    if (tok->ignore_merges) {
        int32_t id = sl_tok_map_get(&tok->vocab, s->word, w, 0);
        if (id >= 0) return sl_tok_ids_push(out, id);
    }

    s->heap.n = 0;
    for (size_t i = 1; i < n; i++)
        if (!add_pair(tok, s, (int32_t)i - 1, (int32_t)i)) return SL_ENOMEM;

    sl_tok_bigram b;
    while (sl_tok_heap_pop(&s->heap, &b)) {
        sl_tok_symbol *L = &s->sym[b.left], *R = &s->sym[b.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != b.size) continue;
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0) s->sym[R->next].prev = b.left;
        if (!add_pair(tok, s, L->prev, b.left)) return SL_ENOMEM;
        if (!add_pair(tok, s, b.left, L->next)) return SL_ENOMEM;
    }

    for (int32_t i = 0; i != -1; i = s->sym[i].next) {
        const sl_tok_symbol *sy = &s->sym[i];
        int32_t id = sl_tok_map_get(&tok->vocab, s->word + sy->off, sy->n, 0);
        if (id >= 0) {
            if (sl_tok_ids_push(out, id)) return SL_ENOMEM;
            continue;
        }
        /* A merge result missing from the vocabulary: fall back to its
         * single-byte pieces that are tokens (llama.cpp's rule). */
        for (uint32_t j = 0; j < sy->n; j++) {
            id = sl_tok_map_get(&tok->vocab, s->word + sy->off + j, 1, 0);
            if (id >= 0 && sl_tok_ids_push(out, id)) return SL_ENOMEM;
        }
    }
    return SL_OK;
}

int sl_tok_bpe_encode(const sl_tokenizer *tok, const char *text, size_t len, sl_tok_scratch *s,
                      sl_tok_ids *out, sl_err *err)
{
    const char *t = text;
    size_t tl = len;
    for (size_t i = 0; i < len;) {
        size_t k = sl_tok_utf8_valid_len((const unsigned char *)text + i, len - i);
        if (k == 0) {
            tl = sl_tok_utf8_sanitize(text, len, &s->text, &s->text_cap);
            if (tl == (size_t)-1) goto nomem;
            t = s->text;
            break;
        }
        i += k;
    }
    int rc = sl_tok_pretok_split(&tok->pretok, t, tl, &s->spans, err);
    if (rc) return rc;
    for (size_t k = 0; k < s->spans.n; k++) {
        const sl_tok_span *sp = &s->spans.v[k];
        if (encode_piece(tok, (const unsigned char *)t + sp->off, sp->len, s, out)) goto nomem;
    }
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory encoding a %zu-byte text", len);
}
