/* server_slots.h - `sluice serve`'s slots: sessions on the one loaded
 * model, each run by a worker thread, and the bounded queue of generation
 * jobs they take from.
 *
 * A job is one request's generation: its prompt tokens, sampling, limits
 * and stop texts in; text pieces out through the job's formatter (the API
 * layer decides what bytes a piece becomes), collected in the job's output
 * buffer, which the HTTP side reads (streaming) or takes whole at the end.
 * Jobs are reference counted: the HTTP side and the worker each hold one.
 * Each slot serves one request at a time; the evaluations of all busy
 * slots run as one batched step (server_batch.h); requests beyond the
 * free slots wait in the queue, and past its bound are refused. The job
 * at the head of the queue goes to the idle slot whose tokens share the
 * longest prefix with its prompt, counted when it is more than a tenth of
 * the prompt (shorter ones, such as a chat template's opening, tie at 0);
 * ties go to the least recently used slot. */
#ifndef SL_APP_SERVER_SLOTS_H
#define SL_APP_SERVER_SLOTS_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../gen.h"
#include "server_batch.h"
#include "server_logprobs.h"
#include "server_pcache.h"
#include "server_ramcache.h"

#define SRV_MAX_STOPS 16
#define SRV_MAX_STOP_LEN 64

typedef struct srv_job srv_job;

/* How generated text becomes output bytes; called on the worker thread.
 * begin before the first piece, piece for each (valid UTF-8) text, end once
 * (also after an error: job->error is then set). Each appends with
 * srv_job_emit. */
typedef struct srv_format {
    void (*begin)(srv_job *j);
    void (*piece)(srv_job *j, const char *text, size_t len);
    void (*end)(srv_job *j);
} srv_format;

typedef enum srv_finish {
    SRV_FINISH_STOP = 0,   /* an end-of-turn token or a stop text */
    SRV_FINISH_LENGTH,     /* max tokens, or the context is full */
    SRV_FINISH_CANCELLED,  /* the client went away */
    SRV_FINISH_ERROR,      /* an engine error: error holds the message */
} srv_finish;

struct srv_job {
    /* in: set before srv_pool_submit, read-only afterwards */
    int32_t *ids;                 /* prompt tokens (owned) */
    int n_ids;
    sl_sampling_params sp;
    int max_tokens;               /* < 0: until a stop or a full context */
    bool chat;                    /* stop on the chat template's end of turn */
    bool ignore_eos;
    char stops[SRV_MAX_STOPS][SRV_MAX_STOP_LEN + 1];
    int n_stops;
    const srv_format *fmt;
    srv_lps lps;                  /* lps.n_top >= 0: record log-probabilities (worker) */
    int lps_from;                 /* during piece(): its tokens are lps.v[lps_from..n_sent) */
    void *api;                    /* the formatter's state (owned, freed by api_free) */
    void (*api_free)(void *api);
    int cancel;                   /* set by the HTTP side (srv_job_cancel): stop at the next
                                     token; read with srv_job_cancelled */

    /* out: written by the worker, read under mu (or after done) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *out;                    /* bytes for the client */
    size_t out_len, out_cap, out_read;
    char *text;                   /* the whole generated text (NUL-terminated) */
    size_t text_len, text_cap;
    bool done;
    bool oom;                     /* an output buffer could not grow */
    srv_finish finish;
    int matched_stop;             /* SRV_FINISH_STOP by stops[i]: i; else -1 */
    int n_prompt, n_cached, n_gen;
    int truncated_from;           /* the prompt's length before "truncate"; 0: not cut */
    char error[SL_ERR_MSG_MAX];
    int refs;
};

/* A new job with one reference (the caller's), or NULL when out of
 * memory. ids is taken over (freed with the job). */
srv_job *srv_job_new(int32_t *ids, int n_ids);
void srv_job_unref(srv_job *j);

/* Asks the job to stop (any thread), and whether it was asked. */
void srv_job_cancel(srv_job *j);
bool srv_job_cancelled(const srv_job *j);

/* Appends bytes to the job's output and wakes a reader. Worker side. */
void srv_job_emit(srv_job *j, const char *bytes, size_t n);

/* Waits until the job is done. */
void srv_job_wait(srv_job *j);

/* Copies up to max unread output bytes into buf, waiting for some while
 * the job runs. Returns the count; 0 once the job is done and everything
 * was read. */
size_t srv_job_read(srv_job *j, char *buf, size_t max);

typedef struct srv_slot {
    gen_ctx g;                    /* session and decoder; g.m shared */
    const sl_chat *chat;
    int32_t *held;                /* the tokens the session holds, in order */
    int n_held, cap_held;
    pthread_t th;
    struct srv_pool *pool;
    int id;
    bool busy;
    srv_job *running;             /* under the pool's mu */
    pthread_mutex_t use_mu;       /* held while a job or a slot action (save,
                                     restore) uses the session */
    int shown_held;               /* n_held when it was last idle, under mu */
    int32_t *shown_ids;           /* held[0..shown_held) then (n_ctx), under mu: what
                                     the choice of a slot compares */
    uint64_t last_used;           /* the pool's clock when it last took a job, under mu */
} srv_slot;

typedef struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_job **queue;              /* ring of max_queue waiting jobs */
    int max_queue, q_head, q_len;
    bool stopping;
    srv_slot *slots;
    int n_slots, n_started;
    sl_model *m;
    sl_model *drafter_model;      /* draft-mtp: the MTP block, -md: the draft model, loaded
                                     once and shared by the slots' drafters */
    bool drafter_mtp;             /* drafter_model is an MTP block */
    srv_pcache *pcache;           /* --prompt-cache, or NULL; set before any job */
    srv_ramcache *ram;            /* --cache-ram, or NULL; set before any job */
    uint64_t clock;               /* jobs taken, under mu (slots' last_used) */
    srv_batcher batch;            /* the slots' evaluations as batched steps */
    /* counters for /metrics, updated with atomic adds by the workers */
    uint64_t jobs_done, prompt_tokens, cached_tokens, gen_tokens;
    uint64_t prompt_us, gen_us;   /* time evaluating prompts, generating */
} srv_pool;

/* What /slots and /metrics show of the pool at one moment. */
typedef struct srv_slot_view {
    bool busy;
    int n_held;
} srv_slot_view;

/* Fills views[0..n_slots) and *queued under the pool's lock. */
void srv_pool_view(srv_pool *p, srv_slot_view *views, int *queued);

/* The number of busy slots and of queued jobs, under the pool's lock. */
void srv_pool_counts(srv_pool *p, int *busy, int *queued);

/* Drafting of every slot's replies (gen_opts' --spec-type or -md and its
 * numbers). draft-mtp and -md: the MTP block or the draft model is loaded
 * once (with mp) and each slot gets a drafter of its own on it (a block
 * cache or a draft session of the slot's context). */
typedef struct srv_draft {
    sl_gen_draft type;
    int max, min, ngram;
    bool always;                 /* --draft-always */
    const char *model;           /* -md's file (type SL_GEN_DRAFT_MODEL) */
    const sl_model_params *mp;   /* the drafters' load parameters */
} srv_draft;

/* Creates n_slots sessions on m (n_ctx tokens each, micro-batch n_batch,
 * kv type kv, logit rows for draft), the batcher (steps of at most step_tokens tokens when
 * several slots are busy) and starts their workers. chat is the template for chat
 * jobs. Returns 0, or prints why (prefixed "sluice serve: ") and returns
 * non-zero. m and chat must outlive the pool. */
int srv_pool_start(srv_pool *p, sl_model *m, const sl_chat *chat, int n_slots, int n_ctx,
                   int n_batch, sl_kv_type kv, int max_queue, int step_tokens,
                   const srv_draft *draft);

/* Queues a job (taking a reference of its own). Returns false when the
 * queue is full (the job is untouched). */
bool srv_pool_submit(srv_pool *p, srv_job *j);

/* Stops the workers: running jobs are cancelled, queued ones finish as
 * cancelled, later submissions are refused. */
void srv_pool_stop(srv_pool *p);

/* Stops the workers if running and frees the sessions (after every user
 * of the pool is gone). */
void srv_pool_free(srv_pool *p);

/* Marks the slot free for the next job; srv_run_job calls it just before
 * it marks the job done, so that a client who sends its next request as
 * soon as the answer arrives finds the slot free. */
void srv_slot_idle(srv_slot *s);

/* POST /slots/{id}?action=save|restore: writes the slot's state (the
 * tokens it holds) to path, or replaces it by the state saved there; waits
 * for the slot's running job. Returns 0 with *n_tokens, or a negative SL_E*
 * with err filled (SL_EINVAL: nothing to save, or a path a session file
 * may not replace: sl_session_save_check). A restored file whose saved
 * logits are not finite is deleted and refused (SL_EFORMAT), the slot
 * left empty. */
int srv_slot_save(srv_slot *s, const char *path, int *n_tokens, sl_err *err);
int srv_slot_restore(srv_slot *s, const char *path, int *n_tokens, sl_err *err);

/* Runs one job on a slot: reuses the longest prefix of the prompt the slot
 * holds, evaluates the rest, generates (server_run.c). */
void srv_run_job(srv_slot *s, srv_job *j);

#endif
