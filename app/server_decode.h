/* server_decode.h - a slot's prompt evaluation and reply loop on the
 * batcher (server_batch.h): gen_eval and gen_reply's behaviour (app/gen.h),
 * with each evaluation submitted to the next batched step instead of run on
 * the session directly. */
#ifndef SL_APP_SERVER_DECODE_H
#define SL_APP_SERVER_DECODE_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "gen.h"
#include "server_batch.h"

/* Evaluates ids[0..n) on g's session in as many steps as the batcher
 * takes, recording each token in g's sampler. 0 or a negative SL_E*. */
int srv_eval_prompt(srv_batcher *b, gen_ctx *g, const int32_t *ids, int n, sl_err *err);

/* gen_reply (gen.h) with the batcher: samples from the session's logits,
 * stops on is_stop, prints the decoded text to out (flushed after every
 * token, text that could begin one of stop_texts held back, a complete one
 * ending the reply unprinted), evaluates the token in the next step, up to
 * max tokens (< 0: no limit), while *interrupt is 0. */
int srv_reply(srv_batcher *b, gen_ctx *g, int max, bool (*is_stop)(void *ud, int32_t id),
              void *ud, const char *const *stop_texts, volatile sig_atomic_t *interrupt,
              FILE *out, gen_reply_stats *st, sl_err *err);

#endif
