/* server_run.c - one generation job on one slot (server_slots.h).
 *
 * Prompt reuse: the slot remembers the tokens its session holds; a job
 * whose prompt starts with some of them keeps that prefix (the session is
 * cut back to it) and evaluates only the rest; at least the last prompt
 * token is evaluated again so that its logits are fresh. A model whose
 * state cannot be cut back there (a recurrent layer) starts from 0. The
 * sampler is the job's own, created here, so nothing of one request's
 * sampling reaches the next; it sees every prompt token, reused or not.
 *
 * The pool's prompt cache in memory (--cache-ram, server_ramcache.h) and
 * on disk (--prompt-cache, server_pcache.h) give a longer prefix when they
 * hold one, whichever slot evaluated it: the prompt's first turn (the
 * system prompt) is kept in both once evaluated, the whole prompt on
 * disk, and a slot's whole state (a prompt and its reply) in memory
 * before a request that does not continue it replaces it.
 *
 * Evaluation goes through the pool's batcher (server_batch.h): from its
 * first evaluation to the end of its reply the slot is engaged, and each
 * prompt chunk or decode token joins the next batched step (the slot's
 * gen_ctx evaluates through it: batch_eval). Prompt and reply are
 * gen_eval's and gen_reply's (gen.h), the reply written into a stdio
 * stream whose writes come here (fopencookie): each flush, one per token,
 * becomes a piece for the job's formatter, cut on a UTF-8 character
 * boundary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "server_batch.h"
#include "server_slots.h"
#include "util/escape.h"
#include "util/timer.h"

typedef struct run_ctx {
    srv_slot *s;
    srv_job *j;
    int32_t *gen;            /* tokens sampled (and not stop tokens), in order */
    int n_gen, cap_gen;
    bool oom;
    bool by_token;           /* an end-of-turn token ended the reply */
    /* gen_reply's interrupt flag: written by this (the worker) thread only,
     * when it sees the job cancelled, so no other thread touches it */
    volatile sig_atomic_t stop_now;
} run_ctx;

/* Appends generated text and hands the complete characters to the
 * formatter; a character split across writes waits for its last byte. */
static ssize_t cookie_write(void *cookie, const char *buf, size_t n)
{
    run_ctx *c = cookie;
    srv_job *j = c->j;
    if (srv_job_cancelled(j)) {
        c->stop_now = 1;
        return -1; /* gen_reply stops with "cannot write" */
    }
    char tmp[4096 + 8];
    size_t done = 0;
    while (done < n) {
        size_t take = n - done > 4096 ? 4096 : n - done;
        size_t len = j->tail_len;
        memcpy(tmp, j->utf8_tail, len);
        memcpy(tmp + len, buf + done, take);
        len += take;
        done += take;
        /* the longest prefix of whole characters (invalid bytes count as one) */
        size_t ok = 0;
        while (ok < len) {
            size_t l = sl_utf8_seq_len((const unsigned char *)tmp + ok, len - ok);
            if (l == 0) {
                /* incomplete at the end, or invalid: wait if it could still complete */
                if (len - ok < 4 && (unsigned char)tmp[ok] >= 0xc2) break;
                l = 1;
            }
            ok += l;
        }
        j->tail_len = len - ok;
        memcpy(j->utf8_tail, tmp + ok, j->tail_len);
        if (ok) {
            size_t need = j->text_len + ok + 1;
            if (need > j->text_cap) {
                size_t nc = j->text_cap ? j->text_cap * 2 : 1024;
                while (nc < need) nc *= 2;
                char *nt = realloc(j->text, nc);
                if (!nt) return -1;
                j->text = nt;
                j->text_cap = nc;
            }
            memcpy(j->text + j->text_len, tmp, ok);
            j->text_len += ok;
            j->text[j->text_len] = '\0';
            j->lps_from = j->lps.n_sent;
            j->lps.n_sent = j->lps.n;
            j->fmt->piece(j, tmp, ok);
        }
    }
    return (ssize_t)n;
}

/* is_stop for gen_reply: records each token that goes on. */
static bool is_stop(void *ud, int32_t id)
{
    run_ctx *c = ud;
    srv_job *j = c->j;
    if (srv_job_cancelled(j)) c->stop_now = 1; /* seen at gen_reply's next step */
    bool stop = !j->ignore_eos && (j->chat && c->s->chat ? sl_chat_is_stop_token(c->s->chat, id)
                                                         : sl_model_token_is_eog(c->s->g.m, id));
    if (stop) {
        c->by_token = true;
        return true;
    }
    if (c->n_gen == c->cap_gen) {
        int nc = c->cap_gen ? c->cap_gen * 2 : 256;
        int32_t *ng = realloc(c->gen, (size_t)nc * sizeof *ng);
        if (!ng) {
            c->oom = true;
            return true;
        }
        c->gen = ng;
        c->cap_gen = nc;
    }
    c->gen[c->n_gen++] = id;
    /* the logits the sampler just saw are still the session's */
    if (j->lps.n_top >= 0 &&
        !srv_lps_record(&j->lps, sl_session_logits(c->s->g.s), sl_model_n_vocab(c->s->g.m), id)) {
        c->oom = true;
        return true;
    }
    return false;
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

/* Where the prompt's first chat turn ends: just after its first end-of-turn
 * token (e.g. <|im_end|>); 0 for a prompt that is not a chat or has none. */
static int first_turn_end(const srv_slot *s, const srv_job *j)
{
    if (!j->chat || !s->chat) return 0;
    for (int i = 0; i < j->n_ids; i++)
        if (sl_chat_is_stop_token(s->chat, j->ids[i])) return i + 1;
    return 0;
}

/* After a reply that a stop text ended: which of the job's stop texts it
 * was (the generated tokens spell the text sent, then the stop text). */
static int matched_stop(const srv_slot *s, const srv_job *j, const run_ctx *c)
{
    sl_err err = {0};
    int len = sl_detokenize(s->g.m, c->gen, c->n_gen, NULL, 0, 0, &err);
    if (len < 0 || (size_t)len < j->text_len) return -1;
    char *buf = malloc((size_t)len + 1);
    int found = -1;
    if (buf && sl_detokenize(s->g.m, c->gen, c->n_gen, buf, (size_t)len + 1, 0, &err) == len) {
        for (int i = 0; i < j->n_stops && found < 0; i++) {
            size_t ls = strlen(j->stops[i]);
            if ((size_t)len - j->text_len >= ls && !memcmp(buf + j->text_len, j->stops[i], ls))
                found = i;
        }
    }
    free(buf);
    return found;
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

/* gen_ctx.eval for a slot: the tokens join the next batched step. */
static int batch_eval(void *batcher, sl_session *s, const int32_t *ids, int n, sl_err *err)
{
    return srv_batch_eval(batcher, s, ids, n, err);
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
            const int rc = gen_eval(g, j->ids + p, cut - p, err);
            if (rc) return rc;
            srv_batch_leave(bt); /* the other slots go on while it is copied */
            srv_ramcache_store(pool->ram, g->s, j->ids, cut);
            if (pool->pcache) srv_pcache_save(pool->pcache, g->s, j->ids, cut);
            srv_batch_join(bt);
            p = cut;
        }
    }
    const int rc = gen_eval(g, j->ids + p, j->n_ids - p, err);
    if (rc) return rc;
    if (pool->pcache && p < j->n_ids) {
        srv_batch_leave(bt);
        srv_pcache_save(pool->pcache, g->s, j->ids, j->n_ids);
        srv_batch_join(bt);
    }
    return SL_OK;
}

void srv_run_job(srv_slot *s, srv_job *j)
{
    gen_ctx *g = &s->g;
    sl_err err = {0};
    run_ctx c = {.s = s, .j = j};
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
    int p = reuse_prefix(s, j->ids, j->n_ids);
    int entry_n = 0; /* the prompt-cache file restored, if any */
    const int have = p;
    p = srv_ramcache_restore(pool->ram, g->s, j->ids, j->n_ids, p);
    if (pool->pcache) p = srv_pcache_restore(pool->pcache, g->s, j->ids, j->n_ids, p, &entry_n);
    if (p != have) s->n_held = 0; /* remember() records the tokens held after the job */
    j->n_cached = p;
    j->fmt->begin(j); /* after the lookup: an answer's first event may count n_cached */
    srv_batcher *bt = &pool->batch;
    g->eval = batch_eval;
    g->eval_ud = bt;
    g->out_name = "the reply";
    srv_batch_join(bt); /* from here the slot takes part in every step, until it leaves */
    uint64_t t0 = sl_now_ns();
    int erc = eval_prompt(s, j, p, &err);
    if (erc == SL_EFORMAT && p > 0) {
        /* non-finite values after a kept or restored state: evaluated from
         * the start, that state is to blame when this succeeds */
        sl_err first = err;
        s->n_held = 0;
        sl_session_truncate(g->s, 0);
        sl_sampling_reset(g->smp);
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
    if (erc) goto engine_error;
    p = j->n_cached;
    __atomic_add_fetch(&pool->prompt_us, (sl_now_ns() - t0) / 1000, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->prompt_tokens, (uint64_t)(j->n_ids - p), __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->cached_tokens, (uint64_t)p, __ATOMIC_RELAXED);

    const char *stops[SRV_MAX_STOPS + 8 + 1];
    int ns = 0;
    for (int i = 0; i < j->n_stops; i++) stops[ns++] = j->stops[i];
    if (j->chat && s->chat && !j->ignore_eos) {
        const char *const *t = sl_chat_stop_texts(s->chat);
        for (int i = 0; t && t[i] && i < 8; i++) stops[ns++] = t[i];
    }
    stops[ns] = NULL;

    cookie_io_functions_t io = {.write = cookie_write};
    FILE *out = fopencookie(&c, "w", io);
    if (!out) {
        srv_batch_leave(bt);
        finish(s, j, SRV_FINISH_ERROR, "out of memory for the output stream");
        return;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 16);
    gen_reply_stats st;
    int rc = gen_reply(g, j->max_tokens, is_stop, &c, ns ? stops : NULL, &c.stop_now, out, &st,
                       &err);
    srv_batch_leave(bt);
    fclose(out);
    /* a reply that met non-finite values right after a restored entry
     * (one that held the whole prompt, so nothing was evaluated before):
     * that entry is never served again */
    if (rc == SL_EFORMAT && entry_n > 0)
        srv_pcache_drop(pool->pcache, j->ids, entry_n, err.msg, false);
    j->n_gen = st.n_gen;
    __atomic_add_fetch(&pool->gen_tokens, (uint64_t)st.n_gen, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->gen_us, (uint64_t)(1e6 * st.seconds), __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool->jobs_done, 1, __ATOMIC_RELAXED);
    if (c.oom) {
        free(c.gen);
        s->n_held = 0;
        sl_session_truncate(g->s, 0);
        finish(s, j, SRV_FINISH_ERROR, "out of memory for the generated tokens");
        return;
    }
    if (rc == SL_OK && st.stop == GEN_STOP_EOG && !c.by_token && j->n_stops)
        j->matched_stop = matched_stop(s, j, &c);
    remember(s, j, &c);
    free(c.gen);
    if (srv_job_cancelled(j)) {
        finish(s, j, SRV_FINISH_CANCELLED, NULL);
    } else if (rc) {
        finish(s, j, SRV_FINISH_ERROR, err.msg);
    } else {
        finish(s, j, st.stop == GEN_STOP_EOG ? SRV_FINISH_STOP : SRV_FINISH_LENGTH, NULL);
    }
    return;
engine_error:
    srv_batch_leave(bt);
    s->n_held = 0;
    sl_session_truncate(g->s, 0);
    free(c.gen);
    finish(s, j, SRV_FINISH_ERROR, err.msg);
}
