/* server_run.c - one generation job on one slot (server_slots.h).
 *
 * Prompt reuse: the slot remembers the tokens its session holds; a job
 * whose prompt starts with some of them keeps that prefix (the session is
 * cut back to it) and evaluates only the rest; at least the last prompt
 * token is evaluated again so that its logits are fresh. Whatever is kept
 * or restored is cut back further to the rows whose attention took the
 * kernels this prompt gives them (keep_agreeing), so a reply's bits never
 * depend on what the slot held. A model whose state cannot be cut back
 * there (a recurrent layer) starts from 0. The
 * sampler is the job's own, created here, so nothing of one request's
 * sampling reaches the next; it sees every prompt token, reused or not.
 *
 * The pool's prompt cache in memory (--cache-ram, server_ramcache.h) and
 * on disk (--prompt-cache, server_pcache.h) give a longer prefix when they
 * hold one, whichever slot evaluated it: the prompt's first turn (the
 * system prompt) is kept in both once evaluated, the whole prompt on
 * disk, and a slot's whole state (a prompt and its reply) in memory
 * before a request that does not continue it replaces it. A kept or
 * restored state whose evaluation gives non-finite values is dropped and
 * the prompt evaluated from the start (gen_heal).
 *
 * Evaluation goes through the pool's batcher (server_batch.h): from its
 * first evaluation to the end of its reply the slot is engaged, and each
 * prompt chunk or decode token joins the next batched step. The reply is
 * the library's generation step (sl_gen_*), driven in its two halves: the
 * tokens it has taken are submitted to the batcher, then its next event
 * (tokens, whole UTF-8 text, the stop, logprobs) becomes a piece for the
 * job's formatter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen.h"
#include "server_batch.h"
#include "server_slots.h"

typedef struct run_ctx {
    int32_t *gen;            /* tokens taken, in order */
    int n_gen, cap_gen;
} run_ctx;

/* Records an event's tokens and their logprobs; false when out of memory. */
static bool record(run_ctx *c, srv_job *j, const sl_gen_event *ev)
{
    if (ev->n_ids == 0) return true;
    if (c->n_gen + ev->n_ids > c->cap_gen) {
        int nc = c->cap_gen ? c->cap_gen * 2 : 256;
        while (nc < c->n_gen + ev->n_ids) nc *= 2;
        int32_t *ng = realloc(c->gen, (size_t)nc * sizeof *ng);
        if (!ng) return false;
        c->gen = ng;
        c->cap_gen = nc;
    }
    memcpy(c->gen + c->n_gen, ev->ids, (size_t)ev->n_ids * sizeof *ev->ids);
    c->n_gen += ev->n_ids;
    for (int i = 0; ev->logprobs && i < ev->n_ids; i++)
        if (!srv_lps_add(&j->lps, &ev->logprobs[i])) return false;
    return true;
}

/* Hands an event's text to the formatter: the tokens taken since the last
 * piece count as sent with it (their logprobs go out with it). */
static bool piece(srv_job *j, const char *text, size_t len)
{
    size_t need = j->text_len + len + 1;
    if (need > j->text_cap) {
        size_t nc = j->text_cap ? j->text_cap * 2 : 1024;
        while (nc < need) nc *= 2;
        char *nt = realloc(j->text, nc);
        if (!nt) return false;
        j->text = nt;
        j->text_cap = nc;
    }
    memcpy(j->text + j->text_len, text, len);
    j->text_len += len;
    j->text[j->text_len] = '\0';
    j->lps_from = j->lps.n_sent;
    j->lps.n_sent = j->lps.n;
    j->fmt->piece(j, text, len);
    return true;
}

/* Tokens the slot holds that begin ids[0..n). */
static int held_prefix(const srv_slot *s, const int32_t *ids, int n)
{
    int p = 0;
    while (p < s->n_held && p < n && s->held[p] == ids[p]) p++;
    return p;
}

/* Cuts the session back to the longest usable prefix of ids; returns its
 * length (< n). */
static int reuse_prefix(srv_slot *s, const int32_t *ids, int n)
{
    int p = held_prefix(s, ids, n);
    if (p >= n) p = n - 1;
    if (p > sl_session_n_past(s->g.s)) p = sl_session_n_past(s->g.s);
    if (sl_session_truncate(s->g.s, p) != SL_OK || sl_session_n_past(s->g.s) != p) {
        p = 0;
        sl_session_truncate(s->g.s, 0);
    }
    s->n_held = p;
    return p;
}

/* Sets the job's prompt (n tokens from position 0) on the slot's session
 * and keeps at most the prefix of its p positions whose rows took the
 * attention kernels that prompt's rule gives them (sl_session_set_prompt),
 * so a reused or restored prefix gives the bits of a cold evaluation;
 * returns the positions kept. */
static int keep_agreeing(srv_slot *s, int n, int p)
{
    const int agree = sl_session_set_prompt(s->g.s, n);
    if (p <= agree) return p;
    if (sl_session_truncate(s->g.s, agree) != SL_OK || sl_session_n_past(s->g.s) != agree) {
        sl_session_truncate(s->g.s, 0);
        return 0;
    }
    return agree;
}

/* Where the prompt's first chat turn ends: just after its first end-of-turn
 * token (e.g. <|im_end|>); 0 for a prompt that is not a chat or has none. */
static int first_turn_end(const srv_slot *s, const srv_job *j)
{
    if (!j->chat || !s->chat) return 0;
    for (int i = 0; i < j->n_ids; i++)
        if (sl_chat_is_stop_token(s->chat, j->ids[i])) return i + 1;
    return 0;
}

/* Records the tokens the session now holds: prompt then generated. */
static void remember(srv_slot *s, const srv_job *j, const run_ctx *c)
{
    int n_past = sl_session_n_past(s->g.s);
    if (n_past > s->cap_held) {
        int32_t *nh = realloc(s->held, (size_t)n_past * sizeof *nh);
        if (!nh) {
            s->n_held = 0;
            sl_session_truncate(s->g.s, 0);
            return;
        }
        s->held = nh;
        s->cap_held = n_past;
    }
    for (int i = 0; i < n_past; i++)
        s->held[i] = i < j->n_ids ? j->ids[i] : c->gen[i - j->n_ids];
    s->n_held = n_past;
}

static void finish(srv_slot *s, srv_job *j, srv_finish f, const char *msg)
{
    j->finish = f;
    if (msg) snprintf(j->error, sizeof j->error, "%s", msg);
    srv_slot_idle(s); /* before the last bytes: the client may ask again at once */
    j->fmt->end(j);
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* Evaluates ids[0..n) on the slot's session in the batcher's steps
 * (chunks of at most its batch size), recording each in the sampler's
 * history. */
static int slot_eval(srv_slot *s, const int32_t *ids, int n, sl_err *err)
{
    gen_ctx *g = &s->g;
    for (int i = 0; i < n;) {
        const int want = n - i < g->n_batch ? n - i : g->n_batch;
        const int got = srv_batch_eval(&s->pool->batch, g->s, ids + i, want, false, err);
        if (got < 0) return got;
        for (int k = 0; k < got; k++) {
            const int rc = sl_sampling_accept(g->smp, ids[i + k], err);
            if (rc) return rc;
        }
        i += got;
    }
    return SL_OK;
}

/* Evaluates the job's prompt after the p tokens the slot's session holds
 * (recording all of them in the sampler's history); with a prompt cache,
 * the first chat turn (the system prompt when there is one) is saved on
 * its own, so that requests that differ after it find it, and then the
 * whole prompt. */
static int eval_prompt(srv_slot *s, srv_job *j, int p, sl_err *err)
{
    gen_ctx *g = &s->g;
    srv_pool *pool = s->pool;
    srv_batcher *bt = &pool->batch;
    for (int i = 0; i < p; i++) {
        const int rc = sl_sampling_accept(g->smp, j->ids[i], err);
        if (rc) return rc;
    }
    if (pool->pcache || pool->ram) {
        /* the first turn (the system prompt when there is one) is kept on
         * its own, so that requests that differ after it find it */
        const int cut = first_turn_end(s, j);
        if (cut > p && cut < j->n_ids) {
            const int rc = slot_eval(s, j->ids + p, cut - p, err);
            if (rc) return rc;
            srv_batch_leave(bt); /* the other slots go on while it is copied */
            srv_ramcache_store(pool->ram, g->s, j->ids, cut);
            if (pool->pcache) srv_pcache_save(pool->pcache, g->s, j->ids, cut);
            srv_batch_join(bt);
            p = cut;
        }
    }
    const int rc = slot_eval(s, j->ids + p, j->n_ids - p, err);
    if (rc) return rc;
    if (pool->pcache && p < j->n_ids) {
        srv_batch_leave(bt);
        srv_pcache_save(pool->pcache, g->s, j->ids, j->n_ids);
        srv_batch_join(bt);
    }
    return SL_OK;
}

/* The reply: the generation step's halves, its tokens evaluated in the
 * batcher's steps, its events handed to the formatter. Returns 0 or a
 * negative SL_E* (err filled); *stop is the reply's stop. */
static int reply(srv_slot *s, srv_job *j, run_ctx *c, sl_gen_stop *stop, sl_err *err)
{
    gen_ctx *g = &s->g;
    const char *stops[SRV_MAX_STOPS + 1];
    for (int i = 0; i < j->n_stops; i++) stops[i] = j->stops[i];
    stops[j->n_stops] = NULL;
    sl_gen_params gp = sl_gen_default_params();
    gp.sampler = g->smp;
    gp.max_tokens = j->max_tokens;
    gp.stop_texts = stops;
    gp.chat = j->chat ? s->chat : NULL;
    gp.ignore_eog = j->ignore_eos;
    gp.logprobs = j->lps.n_top;
    gp.detok_flags = g->detok_flags;
    gen_draft_params(g, &gp);
    gp.context = j->ids; /* prompt lookup: the prompt and the reply */
    gp.n_context = j->n_ids;
    sl_gen *gen = NULL;
    int rc = sl_gen_create(&gen, g->s, &gp, err);
    *stop = SL_GEN_GOING;
    while (rc == SL_OK && *stop == SL_GEN_GOING) {
        if (srv_job_cancelled(j)) sl_gen_cancel(gen);
        const int32_t *ids;
        const int n = sl_gen_pending(gen, &ids);
        if (n > 0) { /* the taken tokens (and drafts: all at once) join the next step */
            const int got = srv_batch_eval(&s->pool->batch, g->s, ids, n, n > 1, err);
            if (got < 0) rc = got;
            else sl_gen_evaluated(gen, got);
            continue;
        }
        sl_gen_event ev;
        if ((rc = sl_gen_next(gen, &ev, err))) break;
        if (!record(c, j, &ev) || (ev.len && !srv_job_cancelled(j) && !piece(j, ev.text, ev.len)))
            rc = sl_err_set(err, SL_ENOMEM, "out of memory for the generated tokens");
        *stop = ev.stop;
        if (ev.stop == SL_GEN_STOP_TEXT) j->matched_stop = ev.stop_text;
    }
    sl_gen_free(gen);
    return rc;
}

void srv_run_job(srv_slot *s, srv_job *j)
{
    gen_ctx *g = &s->g;
    sl_err err = {0};
    run_ctx c = {0};
    j->n_prompt = j->n_ids;

    sl_sampling_params sp = j->sp;
    if (sp.penalty_last_n < 0) sp.penalty_last_n = sl_session_n_ctx(g->s);
    sl_sampling_free(g->smp);
    g->smp = NULL;
    if (sl_sampling_create(&g->smp, &sp, sl_model_n_vocab(g->m), &err)) {
        j->fmt->begin(j);
        finish(s, j, SRV_FINISH_ERROR, err.msg);
        return;
    }
    srv_pool *pool = s->pool;
    /* a state this request does not continue is kept for the one that will */
    if (pool->ram && held_prefix(s, j->ids, j->n_ids) < s->n_held &&
        s->n_held == sl_session_n_past(g->s))
        srv_ramcache_store(pool->ram, g->s, s->held, s->n_held);
    int p = keep_agreeing(s, j->n_ids, reuse_prefix(s, j->ids, j->n_ids));
    s->n_held = p;
    int entry_n = 0; /* the prompt-cache file restored, if any */
    const int have = p;
    p = srv_ramcache_restore(pool->ram, g->s, j->ids, j->n_ids, p);
    if (pool->pcache) p = srv_pcache_restore(pool->pcache, g->s, j->ids, j->n_ids, p, &entry_n);
    if (p != have) p = keep_agreeing(s, j->n_ids, p);
    if (p != have) s->n_held = 0; /* remember() records the tokens held after the job */
    j->n_cached = p;
    j->fmt->begin(j); /* after the lookup: an answer's first event may count n_cached */
    srv_batcher *bt = &pool->batch;
    srv_batch_join(bt); /* from here the slot takes part in every step, until it leaves */
    uint64_t t0 = sl_now_ns();
    int erc = eval_prompt(s, j, p, &err);
    sl_err first;
    if (gen_heal(g, erc, p, &err, &first)) {
        /* evaluated from the start: the kept or restored state was to blame
         * when this succeeds */
        s->n_held = 0;
        j->n_cached = 0;
        erc = eval_prompt(s, j, 0, &err);
        if (!erc && entry_n > 0)
            srv_pcache_drop(pool->pcache, j->ids, entry_n, first.msg, true);
        else if (!erc)
            fprintf(stderr, "sluice serve: slot %d: the state it kept gave non-finite values "
                    "(%s): dropped; the prompt was evaluated from the start\n", s->id,
                    first.msg);
        entry_n = 0;
    }
    if (erc) {
        srv_batch_leave(bt);
        s->n_held = 0;
        sl_session_truncate(g->s, 0);
        finish(s, j, SRV_FINISH_ERROR, err.msg);
        return;
    }
    p = j->n_cached;
    __atomic_add_fetch(&pool->prompt_us, (sl_now_ns() - t0) / 1000, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->prompt_tokens, (uint64_t)(j->n_ids - p), __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->cached_tokens, (uint64_t)p, __ATOMIC_RELAXED);

    const uint64_t tg0 = sl_now_ns();
    sl_gen_stop stop;
    int rc = reply(s, j, &c, &stop, &err);
    srv_batch_leave(bt);
    /* a reply that met non-finite values right after a restored entry
     * (one that held the whole prompt on a model that cannot re-evaluate
     * its last token, so nothing was evaluated before): that entry is
     * never served again */
    if (rc == SL_EFORMAT && entry_n > 0)
        srv_pcache_drop(pool->pcache, j->ids, entry_n, err.msg, false);
    j->n_gen = c.n_gen;
    __atomic_add_fetch(&pool->gen_tokens, (uint64_t)c.n_gen, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->gen_us, (sl_now_ns() - tg0) / 1000, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->jobs_done, 1, __ATOMIC_RELAXED);
    if (rc == SL_ENOMEM) {
        free(c.gen);
        s->n_held = 0;
        sl_session_truncate(g->s, 0);
        finish(s, j, SRV_FINISH_ERROR, err.msg);
        return;
    }
    remember(s, j, &c);
    free(c.gen);
    if (srv_job_cancelled(j)) {
        finish(s, j, SRV_FINISH_CANCELLED, NULL);
    } else if (rc) {
        finish(s, j, SRV_FINISH_ERROR, err.msg);
    } else {
        finish(s, j, stop == SL_GEN_LIMIT || stop == SL_GEN_CTX ? SRV_FINISH_LENGTH
                                                                 : SRV_FINISH_STOP, NULL);
    }
}
