/* tok_heap.c - the binary min-heap of candidate merges both encoders use.
 * Order: smaller key first, then smaller left position (what llama.cpp's
 * priority queues produce), so equal-rank merges resolve left to right. */
#include "tok/tok_internal.h"

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
