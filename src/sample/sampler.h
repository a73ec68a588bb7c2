/* sampler.h - turns one logits vector into one token id.
 *
 * Owns: the sampling configuration, the penalty history (a ring of the last
 * `repeat_last_n` accepted tokens with per-token counts), the seeded RNG, and
 * preallocated candidate arrays of n_vocab entries. Must not know: models,
 * tokenizers, sessions, or where the logits came from.
 *
 * The chain, in this fixed order (llama.cpp's default order):
 *
 *   1. penalties     for each distinct token t among the last repeat_last_n
 *                    accepted tokens, with c = its count there:
 *                      logit = logit > 0 ? logit / repeat_penalty
 *                                        : logit * repeat_penalty
 *                      logit -= c * frequency_penalty + presence_penalty
 *   2. greedy        if temp <= 0: the argmax of the penalised logits (ties:
 *                    lowest id) is returned; stages 3-7 are skipped.
 *   3. top-k         keep the k highest logits (ties: lowest id); k <= 0 or
 *                    k >= n_vocab keeps all.
 *   4. top-p         softmax (T = 1) over the survivors, sorted by logit
 *                    descending; keep the shortest prefix whose cumulative
 *                    probability reaches top_p. top_p >= 1 keeps all.
 *                    (Without top-k this avoids a full sort: candidates are
 *                    bucketed by 1/8 nat below the max and only the bucket
 *                    where the cumulative mass crosses top_p is sorted.)
 *   5. min-p         keep tokens with logit >= max_logit + ln(min_p), i.e.
 *                    p >= min_p * p_max at T = 1. min_p <= 0 keeps all.
 *   6. temperature   divide the survivors' logits by temp.
 *   7. draw          u = sl_rng_uniform() in [0,1); walk the survivors in
 *                    their current order (deterministic: sorted after
 *                    top-k, bucket order after top-p, id order otherwise)
 *                    accumulating exp((l - l_max) / temp) in double; pick
 *                    the first whose running sum exceeds u * total.
 *
 * Note that the truncations (3-5) see the untempered logits: temperature only
 * reshapes the distribution among the survivors (as in llama.cpp).
 *
 * Determinism: the same config, seed, accepted tokens and logits give the
 * same ids on every run; all orderings are total (logit, then id), the RNG is
 * integer arithmetic, and the draw uses double. Allocation happens only in
 * sl_sampler_init; sample/accept/reset never allocate. */
#ifndef SL_SAMPLE_SAMPLER_H
#define SL_SAMPLE_SAMPLER_H

#include <stdint.h>

#include "util/rng.h"
#include "util/status.h"

typedef struct sl_sampler_config {
    float temp;              /* <= 0: greedy. default 0.8 */
    int32_t top_k;           /* <= 0: off. default 40 */
    float top_p;             /* in (0, 1]; 1: off. default 0.95 */
    float min_p;             /* in [0, 1]; 0: off. default 0.05 */
    float repeat_penalty;    /* > 0; 1: off. default 1.0 */
    float presence_penalty;  /* 0: off. default 0 */
    float frequency_penalty; /* 0: off. default 0 */
    int32_t repeat_last_n;   /* >= 0; tokens of history the penalties see;
                                0 disables all penalties. default 64 */
    uint64_t seed;           /* RNG seed. default SL_SAMPLER_DEFAULT_SEED */
} sl_sampler_config;

#define SL_SAMPLER_DEFAULT_SEED 0x5eedu

/* Candidate: a token id and its current (possibly transformed) logit. */
typedef struct sl_sampler_cand {
    int32_t id;
    float logit;
} sl_sampler_cand;

typedef struct sl_sampler {
    sl_sampler_config cfg;
    int32_t n_vocab;
    sl_sampler_cand *cand;   /* (n_vocab) working candidates */
    double *weight;          /* (n_vocab) exp((l - l_max) / temp) of survivors */
    int32_t *count;          /* (n_vocab) occurrences of each id in the ring */
    uint32_t *stamp;         /* (n_vocab) dedupes ring ids within one call */
    uint32_t cur_stamp;
    int32_t *ring;           /* (repeat_last_n) last accepted ids, oldest at
                                ring[ring_head] once full */
    int32_t ring_len;        /* entries in use, <= repeat_last_n */
    int32_t ring_head;       /* next slot to overwrite */
    sl_rng rng_seeded;       /* state right after seeding, restored by reset */
    sl_rng rng;              /* live generator */
} sl_sampler;

/* The documented defaults (see sl_sampler_config). */
sl_sampler_config sl_sampler_config_default(void);

/* Checks cfg and allocates the sampler's arrays for n_vocab tokens.
 * Fails with SL_EINVAL naming the field (NaN, top_p outside (0,1], min_p
 * outside [0,1], repeat_penalty <= 0, repeat_last_n < 0, n_vocab <= 0) or
 * SL_ENOMEM. On failure s is left freed (sl_sampler_free is still safe). */
int sl_sampler_init(sl_sampler *s, const sl_sampler_config *cfg, int32_t n_vocab,
                    sl_err *err);

/* Releases the arrays; safe on a zeroed or already freed sampler. */
void sl_sampler_free(sl_sampler *s);

/* Picks the next token from logits (n_vocab floats, read only; the caller
 * keeps ownership). Returns the id (>= 0), or SL_EINVAL if a logit is NaN or
 * +inf or all logits are -inf (the message names the token). Does not
 * record the token: call sl_sampler_accept with the id actually used. */
int sl_sampler_sample(sl_sampler *s, const float *logits, sl_err *err);

/* sl_sampler_sample with the draw walking pref first (pref < 0: the same
 * as sl_sampler_sample, bit for bit): one uniform u as ever, pref taken
 * when u falls in its share p(pref) of the final distribution, else the
 * survivors after it in their usual order. This is speculative sampling
 * against a draft that proposes pref with certainty (q a point mass):
 * accept with min(1, p/q) = p(pref), else draw from the residual max(0, p
 * - q), i.e. p without pref renormalised; the token is distributed as p
 * exactly, whatever pref is. A pref outside the truncated survivors (p =
 * 0) changes nothing. */
int sl_sampler_sample_pref(sl_sampler *s, const float *logits, int32_t pref, sl_err *err);

/* Records id in the penalty history (evicting the oldest once
 * repeat_last_n are held). Prompt tokens may be accepted too, as llama.cpp
 * does. Returns SL_EINVAL if id is outside [0, n_vocab). */
int sl_sampler_accept(sl_sampler *s, int32_t id, sl_err *err);

/* Forgets the penalty history and rewinds the RNG to its seeded state, so a
 * reset sampler repeats the same sequence for the same inputs. */
void sl_sampler_reset(sl_sampler *s);

/* Applies stage 1 (penalties) of the chain to cand[0..n_vocab) in place,
 * where cand[i].id == i. Exposed so tests can check the formula on a hand
 * example; sl_sampler_sample calls it internally. */
void sl_sampler_apply_penalties(sl_sampler *s, sl_sampler_cand *cand);

#endif
