/* server_req.h - reading the fields of a request body for `sluice serve`.
 *
 * Each reader leaves *out alone when the key is absent or null and
 * returns true; for a value of the wrong type or out of range it writes a
 * sentence naming the field, what was seen and what is expected into msg
 * (cap bytes) and returns false (the caller answers 400). */
#ifndef SL_APP_SERVER_REQ_H
#define SL_APP_SERVER_REQ_H

#include <stdbool.h>
#include <stddef.h>

#include "server_slots.h"
#include "util/json.h"

bool req_int(const json_t *o, const char *key, long lo, long hi, long *out, char *msg,
             size_t cap);
bool req_num(const json_t *o, const char *key, double lo, double hi, double *out, char *msg,
             size_t cap);
bool req_bool(const json_t *o, const char *key, bool *out, char *msg, size_t cap);
/* *out points into o (valid while o lives); *len its length. */
bool req_str(const json_t *o, const char *key, const char **out, size_t *len, char *msg,
             size_t cap);

/* The sampling fields (temperature, top_p, top_k, min_p, seed,
 * presence_penalty, frequency_penalty, repeat_penalty, repeat_last_n) over
 * the defaults in *sp. */
bool req_sampling(const json_t *o, sl_sampling_params *sp, char *msg, size_t cap);

/* The generation limits and stops into j: max_tokens,
 * max_completion_tokens, n_predict (default def_max; -1: no limit), stop_key (a string or
 * up to SRV_MAX_STOPS non-empty strings of at most SRV_MAX_STOP_LEN bytes),
 * ignore_eos. */
bool req_limits(const json_t *o, srv_job *j, int def_max, const char *stop_key, char *msg,
                size_t cap);

/* Refuses what this server cannot do rather than ignore it silently: n
 * other than 1, a response_format other than text, grammar / json_schema,
 * a non-empty logit_bias, the deprecated functions / function_call,
 * modalities other than text; for completions (chat false) also best_of,
 * echo and a non-empty suffix. Fields it can safely ignore (user,
 * metadata, parallel_tool_calls, store, ...) are not looked at. */
bool req_refuse_unsupported(const json_t *o, bool chat, char *msg, size_t cap);

/* JSON's name for the type of v ("string", "number", ...). */
const char *req_type_name(const json_t *v);

#endif
