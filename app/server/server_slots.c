/* server_slots.c - see server_slots.h: jobs, their output buffer, the
 * queue and the worker threads. */
#include "server_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

srv_job *srv_job_new(int32_t *ids, int n_ids)
{
    srv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->ids = ids;
    j->n_ids = n_ids;
    j->max_tokens = -1;
    j->matched_stop = -1;
    j->lps.n_top = -1;
    j->refs = 1;
    return j;
}

void srv_job_unref(srv_job *j)
{
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    if (j->api_free) j->api_free(j->api);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j->ids);
    free(j->out);
    free(j->text);
    free(j->lps.v);
    free(j);
}

static bool grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    char *nb = realloc(*buf, nc);
    if (!nb) return false;
    *buf = nb;
    *cap = nc;
    return true;
}

void srv_job_cancel(srv_job *j)
{
    __atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
}

bool srv_job_cancelled(const srv_job *j)
{
    return __atomic_load_n(&j->cancel, __ATOMIC_RELAXED) != 0;
}

void srv_job_emit(srv_job *j, const char *bytes, size_t n)
{
    pthread_mutex_lock(&j->mu);
    if (grow(&j->out, &j->out_cap, j->out_len + n)) {
        memcpy(j->out + j->out_len, bytes, n);
        j->out_len += n;
    } else {
        j->oom = true;
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

void srv_job_wait(srv_job *j)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

size_t srv_job_read(srv_job *j, char *buf, size_t max)
{
    pthread_mutex_lock(&j->mu);
    while (j->out_read == j->out_len && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    size_t n = j->out_len - j->out_read;
    if (n > max) n = max;
    memcpy(buf, j->out + j->out_read, n);
    j->out_read += n;
    pthread_mutex_unlock(&j->mu);
    return n;
}

/* Under the pool's mu: what the slot holds, for the views and the choice
 * of a slot; wakes the workers, whose choice may change. */
static void slot_show(srv_slot *s)
{
    s->shown_held = s->n_held;
    if (s->n_held > 0) memcpy(s->shown_ids, s->held, (size_t)s->n_held * sizeof *s->held);
    pthread_cond_broadcast(&s->pool->cv);
}

void srv_slot_idle(srv_slot *s)
{
    pthread_mutex_lock(&s->pool->mu);
    s->busy = false;
    s->running = NULL;
    slot_show(s);
    pthread_mutex_unlock(&s->pool->mu);
}

/* Under mu: the slot that should take job j: the idle one sharing the
 * longest prefix with its prompt (counted when more than a tenth of it),
 * the least recently used among equals. */
static srv_slot *pick_slot(srv_pool *p, const srv_job *j)
{
    srv_slot *best = NULL;
    int best_len = -1;
    for (int i = 0; i < p->n_slots; i++) {
        srv_slot *s = &p->slots[i];
        if (s->busy) continue;
        int len = 0;
        while (len < s->shown_held && len < j->n_ids && s->shown_ids[len] == j->ids[len]) len++;
        if (10 * (int64_t)len <= (int64_t)j->n_ids) len = 0;
        if (len > best_len || (len == best_len && s->last_used < best->last_used)) {
            best = s;
            best_len = len;
        }
    }
    return best;
}

static void job_finish_unrun(srv_job *j)
{
    j->finish = SRV_FINISH_CANCELLED;
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void *worker(void *arg)
{
    srv_slot *s = arg;
    srv_pool *p = s->pool;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->stopping && (p->q_len == 0 || pick_slot(p, p->queue[p->q_head]) != s))
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stopping) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        srv_job *j = p->queue[p->q_head];
        p->q_head = (p->q_head + 1) % p->max_queue;
        p->q_len--;
        s->busy = true;
        s->running = j;
        s->last_used = ++p->clock;
        if (p->q_len) pthread_cond_broadcast(&p->cv); /* the next job's slot may wait */
        pthread_mutex_unlock(&p->mu);
        if (srv_job_cancelled(j)) {
            srv_slot_idle(s);
            job_finish_unrun(j);
        } else {
            pthread_mutex_lock(&s->use_mu);
            srv_run_job(s, j); /* calls srv_slot_idle before the job is done */
            pthread_mutex_unlock(&s->use_mu);
        }
        srv_job_unref(j);
    }
}

int srv_slot_save(srv_slot *s, const char *path, int *n_tokens, sl_err *err)
{
    pthread_mutex_lock(&s->use_mu);
    const int n = s->n_held < sl_session_n_past(s->g.s) ? s->n_held : sl_session_n_past(s->g.s);
    int rc = n > 0 ? sl_session_save(s->g.s, path, s->held, n, err)
                   : sl_err_set(err, SL_EINVAL, "slot %d holds no tokens to save", s->id);
    pthread_mutex_unlock(&s->use_mu);
    *n_tokens = rc ? 0 : n;
    return rc;
}

int srv_slot_restore(srv_slot *s, const char *path, int *n_tokens, sl_err *err)
{
    pthread_mutex_lock(&s->use_mu);
    const int cap = sl_session_n_ctx(s->g.s);
    int rc = SL_OK;
    if (s->cap_held < cap) {
        int32_t *nh = realloc(s->held, (size_t)cap * sizeof *nh);
        if (!nh) rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        else {
            s->held = nh;
            s->cap_held = cap;
        }
    }
    /* on a refusal the session and its tokens stay as they were */
    int n = rc ? rc : sl_session_load(s->g.s, path, s->held, s->cap_held, err);
    if (n >= 0 && !gen_logits_finite(s->g.s)) { /* poisoned: never restored again */
        sl_session_truncate(s->g.s, 0);
        n = sl_err_set(err, SL_EFORMAT, "slot file '%s' holds non-finite logits (NaN or "
                       "infinity): deleted", path);
        sl_file_remove(path);
        s->n_held = 0;
    }
    if (n >= 0) s->n_held = n;
    pthread_mutex_lock(&s->pool->mu);
    slot_show(s);
    pthread_mutex_unlock(&s->pool->mu);
    pthread_mutex_unlock(&s->use_mu);
    *n_tokens = n > 0 ? n : 0;
    return n < 0 ? n : SL_OK;
}

void srv_pool_view(srv_pool *p, srv_slot_view *views, int *queued)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n_slots; i++) {
        views[i].busy = p->slots[i].busy;
        views[i].n_held = p->slots[i].shown_held;
    }
    *queued = p->q_len;
    pthread_mutex_unlock(&p->mu);
}

void srv_pool_counts(srv_pool *p, int *busy, int *queued)
{
    pthread_mutex_lock(&p->mu);
    *busy = 0;
    for (int i = 0; i < p->n_slots; i++) *busy += p->slots[i].busy;
    *queued = p->q_len;
    pthread_mutex_unlock(&p->mu);
}

bool srv_pool_submit(srv_pool *p, srv_job *j)
{
    pthread_mutex_lock(&p->mu);
    int idle = 0;
    for (int i = 0; i < p->n_slots; i++) idle += !p->slots[i].busy;
    /* queued jobs that idle slots are about to take do not wait; of the
     * others at most max_queue (p->max_queue holds both) */
    const int wait_bound = p->max_queue - p->n_slots;
    bool ok = !p->stopping && p->q_len - idle < wait_bound;
    if (ok) {
        pthread_mutex_lock(&j->mu);
        j->refs++;
        pthread_mutex_unlock(&j->mu);
        p->queue[(p->q_head + p->q_len) % p->max_queue] = j;
        p->q_len++;
        pthread_cond_broadcast(&p->cv); /* the job's slot is chosen among the idle ones */
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

static void slot_free(srv_slot *s)
{
    sl_sampling_free(s->g.smp);
    sl_draft_src_free(s->g.draft_src); /* before the session it follows */
    sl_session_free(s->g.s);
    free(s->held);
    free(s->shown_ids);
}

int srv_pool_start(srv_pool *p, sl_model *m, const sl_chat *chat, int n_slots, int n_ctx,
                   int n_batch, sl_kv_type kv, int max_queue, int step_tokens,
                   const srv_draft *draft)
{
    const int rows = draft->type != SL_GEN_DRAFT_NONE ? draft->max + 1 : 1;
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->m = m;
    p->n_slots = n_slots;
    /* room for the jobs the slots are about to take, plus the waiting ones */
    p->max_queue = max_queue + n_slots;
    p->queue = calloc((size_t)p->max_queue, sizeof *p->queue);
    p->slots = calloc((size_t)n_slots, sizeof *p->slots);
    if (!p->queue || !p->slots) {
        fprintf(stderr, "sluice serve: out of memory for %d slots\n", n_slots);
        return 1;
    }
    sl_err err = {0};
    for (int i = 0; i < n_slots; i++) {
        srv_slot *s = &p->slots[i];
        s->pool = p;
        s->id = i;
        pthread_mutex_init(&s->use_mu, NULL);
        s->chat = chat;
        s->g.m = m;
        sl_session_params sp = sl_session_default_params();
        sp.n_ctx = n_ctx;
        sp.kv_type = kv;
        sp.n_batch_max = n_batch > rows ? n_batch : rows;
        sp.n_logit_rows = rows;
        s->g.n_batch = n_batch;
        s->g.spec_type = draft->type;
        s->g.draft_max = draft->max;
        s->g.draft_min = draft->min;
        s->g.spec_ngram = draft->ngram;
        s->g.draft_always = draft->always;
        /* harmony answers are split by their channel markers: keep them */
        if (chat && !strcmp(sl_chat_name(chat), "harmony")) gen_decode_specials(&s->g);
        if (sl_session_create(&s->g.s, m, &sp, &err)) {
            fprintf(stderr, "sluice serve: slot %d: %s\n", i, err.msg);
            return 1;
        }
        if (draft->type == SL_GEN_DRAFT_MTP || draft->type == SL_GEN_DRAFT_MODEL) {
            const bool mtp = draft->type == SL_GEN_DRAFT_MTP;
            p->drafter_mtp = mtp;
            int drc = SL_OK;
            if (!p->drafter_model)
                drc = mtp ? sl_draft_mtp_block_load(&p->drafter_model, s->g.s, draft->mp, &err)
                          : sl_draft_model_load(&p->drafter_model, s->g.s, draft->model,
                                                draft->mp, &err);
            if (!drc)
                drc = mtp ? sl_draft_mtp_create_on(&s->g.draft_src, s->g.s, p->drafter_model, &err)
                          : sl_draft_model_create_on(&s->g.draft_src, s->g.s, p->drafter_model,
                                                     &err);
            if (drc) {
                fprintf(stderr, "sluice serve: slot %d: %s\n", i, err.msg);
                return 1;
            }
        }
        s->shown_ids = malloc((size_t)sl_session_n_ctx(s->g.s) * sizeof *s->shown_ids);
        if (!s->shown_ids) {
            fprintf(stderr, "sluice serve: slot %d: out of memory\n", i);
            return 1;
        }
    }
    if (srv_batch_init(&p->batch, m, n_slots, step_tokens, kv)) return 1;
    for (int i = 0; i < n_slots; i++) {
        if (pthread_create(&p->slots[i].th, NULL, worker, &p->slots[i])) {
            fprintf(stderr, "sluice serve: cannot start the thread of slot %d\n", i);
            return 1;
        }
        p->n_started++;
    }
    return 0;
}

void srv_pool_stop(srv_pool *p)
{
    if (!p->queue || !p->slots) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    for (int i = 0; i < p->q_len; i++) {
        srv_job *j = p->queue[(p->q_head + i) % p->max_queue];
        job_finish_unrun(j);
        srv_job_unref(j);
    }
    p->q_len = 0;
    for (int i = 0; i < p->n_slots; i++)
        if (p->slots[i].running) srv_job_cancel(p->slots[i].running);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++) pthread_join(p->slots[i].th, NULL);
    p->n_started = 0;
}

void srv_pool_free(srv_pool *p)
{
    if (!p->queue && !p->slots) return; /* never started */
    srv_pool_stop(p);
    for (int i = 0; p->slots && i < p->n_slots; i++) slot_free(&p->slots[i]);
    /* after the drafters sharing it */
    if (p->drafter_mtp)
        sl_draft_mtp_block_free(p->drafter_model);
    else
        sl_model_free(p->drafter_model);
    free(p->slots);
    free(p->queue);
    srv_batch_free(&p->batch);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    memset(p, 0, sizeof *p);
}
