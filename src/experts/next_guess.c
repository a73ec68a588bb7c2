/* next_guess.c - see next_guess.h. */
#include "experts/next_guess.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The confidence gate (see next_guess.h; bench/replay_floor.py --guess
 * measures it on a trace). */
#define GUESS_MIN_COUNT 2
#define GUESS_MIN_SHARE 0.5f

struct sl_next_guess {
    int n_layer, n_expert;
    uint16_t *pair;   /* ((n_layer - 1) * n_expert + a) * n_expert + b: n(a -> b) */
    uint16_t *from;   /* (n_layer - 1) * n_expert + a: n(a) */
    int *last;        /* the last observed choice */
    int last_layer, last_n, last_k, last_cap;
    float *score;     /* (n_expert) scratch of predict */
};

int sl_next_guess_create(sl_next_guess **out, int n_layer, int n_expert, sl_err *err)
{
    *out = NULL;
    if (n_layer < 1 || n_expert < 1 || n_expert > 65536)
        return sl_err_set(err, SL_EINVAL, "next-layer guesses need 1.. layers and 1..65536 "
                          "experts (got %d, %d)", n_layer, n_expert);
    sl_next_guess *g = calloc(1, sizeof *g);
    if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory");
    g->n_layer = n_layer;
    g->n_expert = n_expert;
    const size_t pairs = (size_t)(n_layer > 1 ? n_layer - 1 : 1) * (size_t)n_expert;
    g->pair = calloc(pairs * (size_t)n_expert, sizeof *g->pair);
    g->from = calloc(pairs, sizeof *g->from);
    g->score = calloc((size_t)n_expert, sizeof *g->score);
    g->last_layer = -1;
    if (!g->pair || !g->from || !g->score) {
        sl_next_guess_free(g);
        return sl_err_set(err, SL_ENOMEM, "out of memory (next-layer guess table of %d layers "
                          "x %d^2 experts)", n_layer, n_expert);
    }
    *out = g;
    return SL_OK;
}

void sl_next_guess_free(sl_next_guess *g)
{
    if (!g) return;
    free(g->pair);
    free(g->from);
    free(g->last);
    free(g->score);
    free(g);
}

/* Halves n(a) and its row n(a -> .), so that one more use fits. */
static void halve_row(sl_next_guess *g, size_t row)
{
    uint16_t *p = g->pair + row * (size_t)g->n_expert;
    for (int b = 0; b < g->n_expert; b++) p[b] /= 2;
    g->from[row] /= 2;
}

/* Counts one token's pair of choices: prev (k ids at layer) -> cur. */
static void count_pair(sl_next_guess *g, int layer, const int *prev, const int *cur, int k)
{
    for (int i = 0; i < k; i++) {
        const int a = prev[i];
        if (a < 0 || a >= g->n_expert) continue;
        const size_t row = (size_t)layer * (size_t)g->n_expert + (size_t)a;
        uint16_t *p = g->pair + row * (size_t)g->n_expert;
        bool full = g->from[row] == UINT16_MAX;
        for (int j = 0; j < k && !full; j++)
            if (cur[j] >= 0 && cur[j] < g->n_expert && p[cur[j]] == UINT16_MAX) full = true;
        if (full) halve_row(g, row);
        g->from[row]++;
        for (int j = 0; j < k; j++)
            if (cur[j] >= 0 && cur[j] < g->n_expert) p[cur[j]]++;
    }
}

void sl_next_guess_observe(sl_next_guess *g, int layer, const int *ids, int n, int k)
{
    if (layer < 0 || layer >= g->n_layer || n < 1 || k < 1) {
        g->last_layer = -1;
        return;
    }
    if (g->last_layer == layer - 1 && g->last_n == n && g->last_k == k)
        for (int t = 0; t < n; t++)
            count_pair(g, layer - 1, g->last + (size_t)t * (size_t)k, ids + (size_t)t * (size_t)k,
                       k);
    const int need = n * k;
    if (need > g->last_cap) {
        int *p = realloc(g->last, sizeof(int) * (size_t)need);
        if (!p) { /* nothing to pair with next time: only that pair is lost */
            g->last_layer = -1;
            return;
        }
        g->last = p;
        g->last_cap = need;
    }
    memcpy(g->last, ids, sizeof(int) * (size_t)need);
    g->last_layer = layer;
    g->last_n = n;
    g->last_k = k;
}

int sl_next_guess_predict(sl_next_guess *g, int layer, int *out, int max)
{
    if (layer != g->last_layer || g->last_n != 1 || layer + 1 >= g->n_layer || max < 1) return 0;
    const int X = g->n_expert;
    for (int b = 0; b < X; b++) g->score[b] = 0.0f;
    for (int i = 0; i < g->last_k; i++) {
        const int a = g->last[i];
        if (a < 0 || a >= X) continue;
        const size_t row = (size_t)layer * (size_t)X + (size_t)a;
        if (g->from[row] == 0) continue;
        const uint16_t *p = g->pair + row * (size_t)X;
        const float inv = 1.0f / (float)g->from[row];
        for (int b = 0; b < X; b++)
            if (p[b] >= GUESS_MIN_COUNT && (float)p[b] * inv > g->score[b])
                g->score[b] = (float)p[b] * inv;
    }
    /* the best max of those past the gate, by selection (max is small) */
    int n = 0;
    while (n < max) {
        int best = -1;
        for (int b = 0; b < X; b++)
            if (g->score[b] >= GUESS_MIN_SHARE && (best < 0 || g->score[b] > g->score[best]))
                best = b;
        if (best < 0) break;
        out[n++] = best;
        g->score[best] = 0.0f;
    }
    return n;
}

bool sl_next_guess_has_token(const sl_next_guess *g, int layer)
{
    return layer == g->last_layer && g->last_n == 1;
}
