/* server_batch.h - continuous batching of `sluice serve`'s slots: the
 * evaluations of every slot that is working on a request run as one
 * forward pass per step (sl_session_eval_multi), so each routed expert is
 * read and computed once per step for all of them.
 *
 * Each slot's worker thread keeps running its own request; instead of
 * evaluating its session itself, it submits its tokens (one decode token,
 * or a chunk of its prompt) and waits. A step starts when every engaged
 * slot (srv_batch_join .. srv_batch_leave: the slots generating or
 * evaluating a prompt) has submitted; the submitter that completes the
 * set runs it for all and wakes the others. A request that arrives joins
 * at the next step; its prompt is cut into chunks that share the step's
 * token budget with the decoding slots, so they keep generating while it
 * is evaluated. A step of one member is a plain sl_session_eval (the
 * slot's own batch size). Results are bit-identical to evaluating each
 * slot alone (sl_session_eval_multi's contract). */
#ifndef SL_APP_SERVER_BATCH_H
#define SL_APP_SERVER_BATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

typedef struct srv_batch_sub srv_batch_sub;

typedef struct srv_batcher {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sl_session *batch;         /* scratch of a multi-member step; NULL: no batching */
    int budget;                /* tokens per multi-member step (batch's n_batch_max) */
    int n_engaged;             /* slots that will submit before the next step */
    srv_batch_sub **subs;      /* the step being formed */
    int n_subs, cap_subs;
    bool running;              /* a step is being evaluated */
    /* for /metrics (atomic adds): steps run, and their members in all */
    uint64_t steps, members;
    /* for /api/events (atomic adds): tokens evaluated in submissions of one
     * token (a decoding slot's step) and of several (prompt chunks) */
    uint64_t tokens_one, tokens_many;
} srv_batcher;

/* Prepares b for up to n_slots slots on m. With batching (n_slots > 1 and
 * the model takes it: sl_model_multi_ok), creates the batch session of
 * budget tokens (budget <= 0: no batching); without, every submission is evaluated on its own. Prints
 * (prefixed "sluice serve: ") and returns non-zero on failure. */
int srv_batch_init(srv_batcher *b, sl_model *m, int n_slots, int budget, sl_kv_type kv);
void srv_batch_free(srv_batcher *b);

/* A slot starts / stops taking part in steps. Between the two, the slot
 * must keep submitting (other slots wait for it). */
void srv_batch_join(srv_batcher *b);
void srv_batch_leave(srv_batcher *b);

/* Evaluates up to n of toks on session s in the next step (an engaged
 * slot's thread only). Returns how many were evaluated (1..n: fewer when
 * the step's budget was shared), or a negative SL_E* with err filled.
 * whole: all n in one evaluation, keeping its logit rows (a token and its
 * drafts to verify): in the step's shared pass while its budget has room,
 * else beside it on s alone. */
int srv_batch_eval(srv_batcher *b, sl_session *s, const int32_t *toks, int n, bool whole,
                   sl_err *err);

#endif
