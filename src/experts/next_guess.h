/* next_guess.h - guesses of the next layer's experts learned online from the
 * routing seen so far in this run (no router product, no look ahead).
 *
 * Owns: per pair of adjacent layers (L, L+1) a transition table of counts
 * n(a -> b): how many tokens chose expert a at layer L and expert b at layer
 * L+1, and per (L, a) how many tokens chose a at L with a choice at L+1
 * observed; plus a copy of the last observed batch's choice, to pair it with
 * the next layer's. Knows nothing of caches or I/O.
 *
 * A guess for layer L+1 given one token's choice S at layer L ranks each
 * expert b by max over a in S of n(a -> b) / n(a), keeping those seen at
 * least GUESS_MIN_COUNT times with a share of at least GUESS_MIN_SHARE (the
 * confidence gate: on the recorded Qwen3-30B-A3B routing a transition seen
 * twice at >= 50 % is right about 40 % of the time, a looser one far less).
 *
 * Memory: (n_layer - 1) x n_expert^2 16-bit counts (1.5 MiB for 48 x 128).
 * A count about to overflow halves its whole row (the row's share stays).
 * Not thread-safe: its user serialises (the model's stream lock). */
#ifndef SL_EXPERTS_NEXT_GUESS_H
#define SL_EXPERTS_NEXT_GUESS_H

#include <stdbool.h>

#include "util/status.h"

typedef struct sl_next_guess sl_next_guess;

/* An empty table for n_layer x n_expert (both >= 1). SL_EINVAL for a bad
 * shape, SL_ENOMEM. */
int sl_next_guess_create(sl_next_guess **out, int n_layer, int n_expert, sl_err *err);
void sl_next_guess_free(sl_next_guess *g);

/* The choice of n tokens at layer: ids[t * k + j], j < k, each in
 * [0, n_expert) (others are ignored). If the previous call was the same n
 * tokens at layer - 1, each token's pair of choices is counted. */
void sl_next_guess_observe(sl_next_guess *g, int layer, const int *ids, int n, int k);

/* Guesses for layer + 1 from the last observed choice, which must be one
 * token's at `layer` (else 0). Writes up to max experts, most confident
 * first, to out; returns how many passed the gate. */
int sl_next_guess_predict(sl_next_guess *g, int layer, int *out, int max);

/* Whether the last observed choice is one token's at layer (what predict
 * guesses from). */
bool sl_next_guess_has_token(const sl_next_guess *g, int layer);

#endif
