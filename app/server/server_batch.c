/* server_batch.c - see server_batch.h: steps formed from the slots'
 * submissions, run by the submitter that completes them. */
#include "server_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct srv_batch_sub {
    sl_session *s;
    const int32_t *toks;
    int want;                  /* tokens offered */
    bool whole;                /* all of them at once, keeping their logit rows (drafts) */
    int got;                   /* evaluated: > 0, or a negative SL_E* */
    bool done;
    sl_err err;
};

int srv_batch_init(srv_batcher *b, sl_model *m, int n_slots, int budget, sl_kv_type kv)
{
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->cap_subs = n_slots;
    b->subs = calloc((size_t)n_slots, sizeof *b->subs);
    if (!b->subs) {
        fprintf(stderr, "sluice serve: out of memory for the batcher\n");
        return 1;
    }
    if (n_slots < 2 || budget <= 0 || !sl_model_multi_ok(m)) return 0;
    if (budget < n_slots) budget = n_slots;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 1; /* its own K/V is never used */
    sp.kv_type = kv;
    sp.all_logits = true;
    sp.n_batch_max = budget;
    sl_err err = {0};
    if (sl_session_create(&b->batch, m, &sp, &err)) {
        fprintf(stderr, "sluice serve: the batch session (%d tokens): %s\n", budget, err.msg);
        return 1;
    }
    b->budget = budget;
    return 0;
}

void srv_batch_free(srv_batcher *b)
{
    if (!b->subs) return;
    sl_session_free(b->batch);
    free(b->subs);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    memset(b, 0, sizeof *b);
}

void srv_batch_join(srv_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    b->n_engaged++;
    pthread_mutex_unlock(&b->mu);
}

void srv_batch_leave(srv_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    b->n_engaged--;
    pthread_cond_broadcast(&b->cv); /* the step may be complete without this slot */
    pthread_mutex_unlock(&b->mu);
}

/* How many tokens each member takes: a decoding member (one token) its
 * one, a whole one (a token and its drafts) all of its own; prompt chunks
 * share the rest of the budget, in submission order. */
static void share_budget(srv_batch_sub **m, int count, int budget, int *take)
{
    int left = budget, n_long = 0;
    for (int i = 0; i < count; i++) {
        take[i] = m[i]->whole ? m[i]->want : 1;
        left -= take[i];
        n_long += !m[i]->whole && m[i]->want > 1;
    }
    for (int i = 0; i < count && n_long > 0; i++) {
        if (m[i]->whole || m[i]->want == 1) continue;
        int extra = left / n_long;
        if (extra > m[i]->want - 1) extra = m[i]->want - 1;
        take[i] += extra;
        left -= extra;
        n_long--;
    }
}

/* Runs the members in one pass (the lock not held). */
static void run_shared(srv_batcher *b, srv_batch_sub **m, int count)
{
    if (count == 1) { /* alone: its own batch size, no copy through the batch session */
        int rc = sl_session_eval(m[0]->s, m[0]->toks, m[0]->want, &m[0]->err);
        m[0]->got = rc ? rc : m[0]->want;
        return;
    }
    sl_session *ss[SL_MULTI_MAX];
    const int32_t *tk[SL_MULTI_MAX];
    int take[SL_MULTI_MAX];
    share_budget(m, count, b->budget, take);
    for (int i = 0; i < count; i++) {
        ss[i] = m[i]->s;
        tk[i] = m[i]->toks;
    }
    sl_err err = {0};
    int rc = sl_session_eval_multi(b->batch, ss, tk, take, count, &err);
    if (rc == SL_EINVAL) { /* refused before anything ran: one member's own problem is
                              then its own, the others go on */
        for (int i = 0; i < count; i++) {
            int r1 = sl_session_eval(m[i]->s, m[i]->toks, take[i], &m[i]->err);
            m[i]->got = r1 ? r1 : take[i];
        }
        return;
    }
    for (int i = 0; i < count; i++) {
        m[i]->got = rc ? rc : take[i];
        if (rc) m[i]->err = err;
    }
}

/* Runs the members (the lock not held) in one pass; those whose tokens
 * must be evaluated whole (a token and its drafts) join it while the
 * budget has room for all of their tokens, the rest run beside it on
 * their own sessions. */
static void run_step(srv_batcher *b, srv_batch_sub **m, int count)
{
    srv_batch_sub *shared[SL_MULTI_MAX];
    int k = 0, need = 0;
    for (int i = 0; i < count; i++) need += m[i]->whole ? 0 : 1;
    for (int i = 0; i < count; i++) {
        if (m[i]->whole && count > 1 && need + m[i]->want > b->budget) {
            int rc = sl_session_eval(m[i]->s, m[i]->toks, m[i]->want, &m[i]->err);
            m[i]->got = rc ? rc : m[i]->want;
        } else {
            if (m[i]->whole) need += m[i]->want;
            shared[k++] = m[i];
        }
    }
    if (k > 0) run_shared(b, shared, k);
}

/* Counts got tokens (when positive) of a submission of want. */
static int counted(srv_batcher *b, int want, int got)
{
    if (got > 0)
        __atomic_add_fetch(want == 1 ? &b->tokens_one : &b->tokens_many, (uint64_t)got,
                           __ATOMIC_RELAXED);
    return got;
}

int srv_batch_eval(srv_batcher *b, sl_session *s, const int32_t *toks, int n, bool whole,
                   sl_err *err)
{
    if (!b->batch) { /* no batching: every slot on its own, as before */
        int rc = sl_session_eval(s, toks, n, err);
        return counted(b, n, rc ? rc : n);
    }
    srv_batch_sub me = {.s = s, .toks = toks, .want = n, .whole = whole};
    pthread_mutex_lock(&b->mu);
    b->subs[b->n_subs++] = &me; /* n_subs <= engaged slots <= cap_subs */
    pthread_cond_broadcast(&b->cv);
    while (!me.done) {
        if (!b->running && b->n_subs > 0 && b->n_subs >= b->n_engaged) {
            /* the step is complete: run it (whoever sees it first) */
            srv_batch_sub *m[SL_MULTI_MAX];
            int count = b->n_subs < SL_MULTI_MAX ? b->n_subs : SL_MULTI_MAX;
            memcpy(m, b->subs, sizeof *m * (size_t)count);
            memmove(b->subs, b->subs + count, sizeof *m * (size_t)(b->n_subs - count));
            b->n_subs -= count;
            b->running = true;
            pthread_mutex_unlock(&b->mu);
            run_step(b, m, count);
            pthread_mutex_lock(&b->mu);
            b->running = false;
            __atomic_add_fetch(&b->steps, 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&b->members, (uint64_t)count, __ATOMIC_RELAXED);
            for (int i = 0; i < count; i++) m[i]->done = true;
            pthread_cond_broadcast(&b->cv);
            continue;
        }
        pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    if (me.got < 0) *err = me.err;
    return counted(b, n, me.got);
}
