/* tok_heap.c - the binary min-heap of candidate merges the encoders use,
 * and the merge loop over it. Order: smaller key first, then smaller left
 * position (what llama.cpp's priority queues produce), so equal-rank merges
 * resolve left to right. A queued pair made stale by an earlier merge is
 * recognised by its recorded byte size: symbols only grow rightwards, so an
 * unchanged size is unchanged text. */
#include "tok/tok_internal.h"

#include <stdint.h>

static bool before(const sl_tok_bigram *a, const sl_tok_bigram *b)
{
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

bool sl_tok_heap_push(sl_tok_heap *h, sl_tok_bigram b)
{
    if (!sl_tok_reserve((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v)) return false;
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&b, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = b;
    return true;
}

bool sl_tok_heap_pop(sl_tok_heap *h, sl_tok_bigram *out)
{
    if (h->n == 0) return false;
    *out = h->v[0];
    sl_tok_bigram last = h->v[--h->n];
    size_t n = h->n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (n) h->v[i] = last;
    return true;
}

int32_t sl_tok_char_symbols(sl_tok_scratch *s, const char *text, size_t n)
{
    if (n > UINT32_MAX || n > INT32_MAX) return -1;
    if (!sl_tok_reserve((void **)&s->sym, &s->sym_cap, n, sizeof *s->sym)) return -1;
    int32_t ns = 0;
    for (size_t off = 0; off < n;) {
        size_t cl = sl_tok_utf8_len((unsigned char)text[off]);
        if (cl > n - off) cl = n - off;
        s->sym[ns].off = (uint32_t)off;
        s->sym[ns].n = (uint32_t)cl;
        s->sym[ns].prev = ns - 1;
        off += cl;
        s->sym[ns].next = off == n ? -1 : ns + 1;
        ns++;
    }
    return ns;
}

/* Queues the pair (l, r) when it can merge; false only when memory runs
 * out. */
static bool add_pair(const sl_tokenizer *tok, sl_tok_scratch *s, const char *text, int32_t l,
                     int32_t r, sl_tok_merge_order order)
{
    if (l < 0 || r < 0) return true;
    const sl_tok_symbol *L = &s->sym[l], *R = &s->sym[r];
    uint32_t size = L->n + R->n;
    double key;
    if (order == SL_TOK_MERGE_RANK) {
        int32_t rank = sl_tok_map_get(&tok->merges, text + L->off, size, L->n);
        if (rank < 0) return true;
        key = (double)rank;
    } else {
        int32_t id = sl_tok_map_get(&tok->vocab, text + L->off, size, 0);
        if (id < 0) return true;
        key = -(double)tok->tokens[id].score;
    }
    sl_tok_bigram b = {.key = key, .left = l, .right = r, .size = size};
    return sl_tok_heap_push(&s->heap, b);
}

int sl_tok_merge(const sl_tokenizer *tok, sl_tok_scratch *s, const char *text, int32_t start,
                 int32_t end, sl_tok_merge_order order)
{
    s->heap.n = 0;
    for (int32_t i = start + 1; i < end; i++)
        if (!add_pair(tok, s, text, i - 1, i, order)) return SL_ENOMEM;

    sl_tok_bigram b;
    while (sl_tok_heap_pop(&s->heap, &b)) {
        sl_tok_symbol *L = &s->sym[b.left], *R = &s->sym[b.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != b.size) continue; /* stale */
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0) s->sym[R->next].prev = b.left;
        if (!add_pair(tok, s, text, L->prev, b.left, order)) return SL_ENOMEM;
        if (!add_pair(tok, s, text, b.left, L->next, order)) return SL_ENOMEM;
    }
    return SL_OK;
}
