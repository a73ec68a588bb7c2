/* sluice.h - public C API of the sluice inference engine.
 *
 * Two objects:
 *   sl_model    immutable after load: hyperparameters, dense weights, the
 *               expert store, the tokenizer. Shareable by several sessions.
 *   sl_session  one timeline: KV cache, scratch buffers, position. Not
 *               thread-safe; use one per thread of conversation.
 *
 * Errors: functions returning int give 0 (SL_OK) on success or a negative
 * SL_E* code, and fill the caller's sl_err with a sentence naming the
 * problem. The library never prints and never exits. */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ----------------------------------------------------------- */

enum {
    SL_OK = 0,
    SL_EIO = -1,          /* the OS refused a read, write or open */
    SL_EFORMAT = -2,      /* malformed input (bad file, wrong shape) */
    SL_ENOMEM = -3,       /* allocation failed or a size overflowed */
    SL_EINVAL = -4,       /* invalid argument */
    SL_EUNSUPPORTED = -5, /* valid input sluice does not handle */
};

#define SL_ERR_MSG_MAX 512

typedef struct sl_err {
    int code;                 /* last SL_E* code, SL_OK if none */
    char msg[SL_ERR_MSG_MAX]; /* NUL-terminated message */
} sl_err;

/* ---- model ------------------------------------------------------------ */

typedef struct sl_model sl_model;
typedef struct sl_session sl_session;

typedef enum sl_kv_type {
    SL_KV_F16 = 0, /* default: half the memory, exact enough for inference */
    SL_KV_F32 = 1,
} sl_kv_type;

typedef struct sl_model_params {
    int n_threads; /* compute threads; <= 0 picks the number of cores */
} sl_model_params;

/* Defaults for sl_model_params. */
sl_model_params sl_model_default_params(void);

/* Loads the GGUF model at path (split parts are found automatically),
 * validates its architecture, hyperparameters and tensor shapes, and reads
 * the weights. On success *out is owned by the caller (sl_model_free). */
int sl_model_load(sl_model **out, const char *path, const sl_model_params *params,
                  sl_err *err);

/* Frees a model; every session created from it must be freed first. */
void sl_model_free(sl_model *m);

/* Basic facts, for front-ends. */
int sl_model_n_vocab(const sl_model *m);
int sl_model_n_ctx_train(const sl_model *m);
const char *sl_model_arch_name(const sl_model *m);

/* ---- session ------------------------------------------------------------ */

typedef struct sl_session_params {
    int n_ctx;          /* KV capacity in tokens; <= 0: min(train ctx, 4096) */
    sl_kv_type kv_type;
    bool all_logits;    /* keep logits of every evaluated token (perplexity) */
    int n_batch_max;    /* largest batch passed to sl_session_eval; <= 0: 512 */
} sl_session_params;

sl_session_params sl_session_default_params(void);

/* Creates a session bound to m (m must outlive it). Allocates the KV cache
 * and all scratch up front: evaluation allocates nothing afterwards. */
int sl_session_create(sl_session **out, sl_model *m, const sl_session_params *p,
                      sl_err *err);
void sl_session_free(sl_session *s);

/* Appends n tokens at the current position and runs the model over them.
 * Fails (SL_EINVAL) if a token id is out of range, n exceeds n_batch_max,
 * or the KV cache would overflow; the session is unchanged then. */
int sl_session_eval(sl_session *s, const int32_t *tokens, int n, sl_err *err);

/* Logits (n_vocab floats) of the last evaluated token; with all_logits,
 * sl_session_logits_at(s, i) gives those of token i of the last batch.
 * Valid until the next eval. */
const float *sl_session_logits(const sl_session *s);
const float *sl_session_logits_at(const sl_session *s, int i);

/* Number of tokens in the KV cache, and forgetting all from position n on
 * (n <= sl_session_n_past), e.g. to restart or to rewind a chat turn. */
int sl_session_n_past(const sl_session *s);
int sl_session_n_ctx(const sl_session *s);
void sl_session_truncate(sl_session *s, int n);

#ifdef __cplusplus
}
#endif

#endif
