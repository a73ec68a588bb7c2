/* tok_special.c - control and user-defined tokens matched in raw text.
 *
 * Before any splitting, the text is cut around occurrences of special token
 * texts: for each special token in turn, longest text first, every
 * occurrence inside a still-raw fragment becomes that token. (This global
 * longest-first order, rather than a left-to-right scan, is what llama.cpp
 * does; the two differ only for overlapping special texts.) User-defined
 * tokens are always matched; control and unknown tokens only when the caller
 * asks to parse special tokens. Tokens marked LSTRIP/RSTRIP eat the ASCII
 * whitespace next to them.
 *
 * To keep long texts cheap, one pass over the text first finds which
 * special tokens occur at all (a hash probe per position whose byte starts
 * some special text, one per distinct length); only those take part.
 *
 * Knows nothing about BPE or SentencePiece. */
#include "tok/tok_internal.h"

#include <stdlib.h>
#include <string.h>

static bool is_special_type(uint8_t type)
{
    return type == SL_TOK_TYPE_CONTROL || type == SL_TOK_TYPE_USER_DEFINED ||
           type == SL_TOK_TYPE_UNKNOWN;
}

/* qsort has no context argument; thread-local so concurrent builds are safe. */
static _Thread_local const sl_tokenizer *g_sort_tok;

static int by_length_desc(const void *a, const void *b)
{
    const sl_tok_entry *ta = &g_sort_tok->tokens[*(const int32_t *)a];
    const sl_tok_entry *tb = &g_sort_tok->tokens[*(const int32_t *)b];
    if (ta->len != tb->len) return ta->len > tb->len ? -1 : 1;
    return *(const int32_t *)a < *(const int32_t *)b ? -1 : 1;
}

static int cmp_u32_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x > y ? -1 : x < y;
}

int sl_tok_special_init(sl_tokenizer *tok, sl_err *err)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < tok->n_tokens; i++)
        if (is_special_type(tok->tokens[i].type) && tok->tokens[i].len > 0) n++;
    tok->n_specials = n;
    tok->specials = malloc((size_t)(n ? n : 1) * sizeof *tok->specials);
    tok->special_lens = malloc((size_t)(n ? n : 1) * sizeof *tok->special_lens);
    if (!tok->specials || !tok->special_lens) goto nomem;
    n = 0;
    for (uint32_t i = 0; i < tok->n_tokens; i++)
        if (is_special_type(tok->tokens[i].type) && tok->tokens[i].len > 0)
            tok->specials[n++] = (int32_t)i;

    /* Sorting by id as the tie-break makes the order (and so the result
     * for equal-length overlapping texts) deterministic. */
    g_sort_tok = tok;
    qsort(tok->specials, n, sizeof *tok->specials, by_length_desc);
    g_sort_tok = NULL;

    if (!sl_tok_map_init(&tok->special_map, tok->pool, n)) goto nomem;
    for (uint32_t k = 0; k < n; k++) {
        const sl_tok_entry *t = &tok->tokens[tok->specials[k]];
        sl_tok_map_put(&tok->special_map, t->off, t->len, 0, (int32_t)k);
    }

    /* Distinct lengths per first byte, longest first. */
    uint32_t at = 0;
    for (int b = 0; b < 256; b++) {
        tok->special_lens_at[b] = at;
        uint32_t start = at;
        for (uint32_t k = 0; k < n; k++) {
            const sl_tok_entry *t = &tok->tokens[tok->specials[k]];
            if ((unsigned char)tok->pool[t->off] != b) continue;
            bool seen = false;
            for (uint32_t j = start; j < at; j++)
                if (tok->special_lens[j] == t->len) { seen = true; break; }
            if (!seen) tok->special_lens[at++] = t->len;
        }
        qsort(tok->special_lens + start, at - start, sizeof *tok->special_lens, cmp_u32_desc);
    }
    tok->special_lens_at[256] = at;
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory for %u special tokens", n);
}

static bool eligible(const sl_tokenizer *tok, int32_t id, bool parse_special)
{
    uint8_t type = tok->tokens[id].type;
    return parse_special ||
           (type == SL_TOK_TYPE_USER_DEFINED && !(tok->tokens[id].flags & SL_TOKF_CONTROL));
}

static bool is_ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int frag_push(sl_tok_frags *f, size_t off, size_t len, int32_t id)
{
    if (!sl_tok_reserve((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v)) return SL_ENOMEM;
    f->v[f->n].off = off;
    f->v[f->n].len = len;
    f->v[f->n].id = id;
    f->n++;
    return SL_OK;
}

/* Cuts every occurrence of special token `id` out of raw fragment fr. */
static int split_fragment(const sl_tokenizer *tok, const char *text, sl_tok_frag fr, int32_t id,
                          sl_tok_frags *out)
{
    const sl_tok_entry *t = &tok->tokens[id];
    const char *needle = tok->pool + t->off;
    size_t pos = fr.off, end = fr.off + fr.len;
    for (;;) {
        const char *m = end - pos >= t->len ? memmem(text + pos, end - pos, needle, t->len) : NULL;
        if (!m) {
            if (end > pos && frag_push(out, pos, end - pos, -1)) return SL_ENOMEM;
            return SL_OK;
        }
        size_t at = (size_t)(m - text);
        size_t left = at - pos;
        if (t->flags & SL_TOKF_LSTRIP)
            while (left > 0 && is_ascii_space(text[pos + left - 1])) left--;
        if (left > 0 && frag_push(out, pos, left, -1)) return SL_ENOMEM;
        if (frag_push(out, at, t->len, id)) return SL_ENOMEM;
        pos = at + t->len;
        if (t->flags & SL_TOKF_RSTRIP)
            while (pos < end && is_ascii_space(text[pos])) pos++;
    }
}

int sl_tok_partition(const sl_tokenizer *tok, const char *text, size_t len, bool parse_special,
                     sl_tok_frags *out, sl_err *err)
{
    int rc = SL_OK;
    uint8_t *present = NULL;
    sl_tok_frags tmp = {0};
    out->n = 0;
    if (len == 0) return SL_OK;
    if (frag_push(out, 0, len, -1)) goto nomem;
    if (tok->n_specials == 0) return SL_OK;

    /* Which special tokens occur anywhere in the text? */
    size_t n_present = 0;
    present = calloc(tok->n_specials, 1);
    if (!present) goto nomem;
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)text[i];
        for (uint32_t j = tok->special_lens_at[b]; j < tok->special_lens_at[b + 1]; j++) {
            uint32_t l = tok->special_lens[j];
            if (l > len - i) continue;
            int32_t k = sl_tok_map_get(&tok->special_map, text + i, l, 0);
            if (k >= 0 && !present[k] && eligible(tok, tok->specials[k], parse_special)) {
                present[k] = 1;
                n_present++;
            }
        }
    }

    for (uint32_t k = 0; k < tok->n_specials && n_present > 0; k++) {
        if (!present[k]) continue;
        n_present--;
        tmp.n = 0;
        for (size_t f = 0; f < out->n; f++) {
            if (out->v[f].id >= 0) {
                if (frag_push(&tmp, out->v[f].off, out->v[f].len, out->v[f].id)) goto nomem;
            } else if (split_fragment(tok, text, out->v[f], tok->specials[k], &tmp)) {
                goto nomem;
            }
        }
        sl_tok_frags swap = *out;
        *out = tmp;
        tmp = swap;
    }
    goto done;
nomem:
    rc = sl_err_set(err, SL_ENOMEM, "out of memory matching special tokens in a %zu-byte text",
                    len);
done:
    free(present);
    free(tmp.v);
    return rc;
}
