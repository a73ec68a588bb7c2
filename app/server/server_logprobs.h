/* server_logprobs.h - log-probabilities of generated tokens for `sluice
 * serve` (OpenAI's logprobs / top_logprobs).
 *
 * The figures are the model's own distribution at each step (log-softmax
 * of the logits the sampler saw, before penalties, temperature or any
 * cut), as OpenAI reports them, so they do not depend on the sampling
 * settings (the generation step computes them: sl_gen_logprob).
 * Recorded on the worker thread as each token is taken;
 * a token counts as sent once a piece of text after its sampling went out
 * (its text is in that piece or an earlier one), so tokens held back as
 * the start of a stop text never appear. */
#ifndef SL_APP_SERVER_LOGPROBS_H
#define SL_APP_SERVER_LOGPROBS_H

#include <stdbool.h>
#include <stdint.h>

#include "util/json.h"
#include "sluice.h"

#define SRV_MAX_TOP_LOGPROBS SL_GEN_MAX_TOP

/* One token's figures, as the generation step gives them. */
typedef sl_gen_logprob srv_lp;

typedef struct srv_lps {
    int n_top;          /* alternatives asked for per token (0..20); < 0: off */
    srv_lp *v;
    int n, cap;
    int n_sent;         /* v[0..n_sent) went out with a piece */
} srv_lps;

/* Records one token's figures (copied). Returns false when out of memory. */
bool srv_lps_add(srv_lps *l, const srv_lp *e);

/* OpenAI chat form of v[from..to): an array of {token, logprob, bytes,
 * top_logprobs: [{token, logprob, bytes}]}. NULL when out of memory. */
json_t *srv_lps_chat(const sl_model *m, const srv_lps *l, int from, int to);

/* OpenAI completions (legacy) form of v[from..to): {tokens,
 * token_logprobs, top_logprobs: [{token: logprob}], text_offset}, offsets
 * counted from text_base. */
json_t *srv_lps_completion(const sl_model *m, const srv_lps *l, int from, int to,
                           size_t text_base);

#endif
