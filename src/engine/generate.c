/* generate.c - one reply pulled a step at a time (sl_gen_*, sluice.h).
 *
 * A step: sample from the session's logits; a stop token ends the reply
 * untaken; else the token is taken (the sampler records it, its
 * log-probability is computed from the same logits), decoded, and its
 * text goes through the stop-text filter, which holds back the tail that
 * could begin a stop text; what it lets out goes to the event once it is
 * whole UTF-8 characters. The taken token is pending until the caller has
 * evaluated it, unless it ended the reply (a stop text, a full context).
 * The limit and a cancel are seen at the start of a step, after the last
 * token's evaluation, so the session then holds every taken token. At the
 * end the decoder's held bytes go through the filter too.
 *
 * Drafting (speculative decoding): a taken token is pending with up to
 * draft_max guesses after it (engine/draft.h). The caller evaluates them in
 * one batch; the next step samples from that batch's logit rows in turn,
 * exactly as it would have sampled one token a step: a row's token equal to
 * the guess after it is taken and already in the session, and the next row
 * is read; the first that differs (or the row after the last guess) is
 * taken and becomes pending. The session is cut back to the tokens taken.
 * Every row is the same bits as the single-token evaluation it stands for
 * (batch-split invariance), so the reply is too.
 *
 * Speculative sampling (draft_sampling, opt-in): every token is drawn with
 * the drafter's one-token guess at its position walked first
 * (sl_sampling_sample_draft: the guess taken with its probability, else
 * the rest renormalised), drafted or not; drafts are chained one-token
 * guesses, so a drafted token is that same guess. The reply follows the
 * sampler's distribution exactly and depends on the seed and the tokens
 * only, not on what the policy drafted, but it is not the reply without
 * drafting. With a deterministic drafter its acceptance is p(guess), as
 * in the default mode.
 *
 * Public API only: the server's batcher and the CLI drive the same steps. */
#include "sluice.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/draft.h"
#include "engine/mixer.h"
#include "engine/session.h"
#include "engine/spec_policy.h"
#include "util/escape.h"
#include "util/status.h"
#include "util/timer.h"

#define PEND_CAP (2 * SL_GEN_MAX_STOP_LEN + 8)
#define MAX_STEP_TOKENS (SL_GEN_MAX_DRAFT + 1) /* tokens one step takes */

struct sl_gen {
    sl_session *s;
    const sl_model *m;
    sl_sampling *smp;
    sl_detok *dt;
    const sl_chat *chat;
    int max_tokens, n_logprobs, n_vocab;
    bool ignore_eog, cancel, done;
    char stops[SL_GEN_MAX_STOPS][SL_GEN_MAX_STOP_LEN + 1];
    int n_stops, n_user_stops;
    char pend[PEND_CAP];      /* text held back: it could begin a stop text */
    size_t np;
    char *out;                /* this step's text */
    size_t n_out, cap_out;
    char tail[8];             /* an incomplete UTF-8 character let out by the filter */
    size_t n_tail;
    int32_t ids[MAX_STEP_TOKENS];        /* taken this step */
    sl_gen_logprob lps[MAX_STEP_TOKENS];
    int n_ids;
    int32_t pending[MAX_STEP_TOKENS];    /* taken, not yet evaluated: pending[p0..p0+n) */
    int p0, n_pending;
    int n_taken;
    /* drafting */
    sl_drafter drafter;                  /* kind NONE: off */
    int draft_max, draft_min;
    sl_spec_policy *pol;      /* the draft length of each step (when it pays): the
                                 session's, kept across its replies */
    long switches_off0, probes0; /* pol's counts when the reply began */
    bool spec_sampling;       /* tokens drawn with the drafter's guess first */
    int32_t shadow[SL_GEN_MAX_DRAFT]; /* guesses not verified, checked as tokens come */
    int n_shadow, shadow_at;
    bool following;           /* the drafter keeps up with the session (sl_draft_follow) */
    uint64_t t_mark;          /* when the step's work began (its drafts' proposal, else
                                 the pending token handed out); 0: not timed */
    int n_draft;              /* of the pending tokens, the guesses after the first */
    int pos0;                 /* the session's position before the pending tokens */
    int last_eval;            /* tokens the caller's last sl_gen_evaluated covered */
    int32_t *hist;            /* the context and the reply so far (prompt lookup) */
    int n_hist, cap_hist;
    sl_gen_draft_stats st;
};

sl_gen_params sl_gen_default_params(void)
{
    sl_gen_params p;
    memset(&p, 0, sizeof p);
    p.max_tokens = -1;
    p.logprobs = -1;
    return p;
}

static int add_stop(sl_gen *g, const char *t, sl_err *err)
{
    size_t l = strlen(t);
    if (g->n_stops == SL_GEN_MAX_STOPS || l == 0 || l > SL_GEN_MAX_STOP_LEN)
        return sl_err_set(err, SL_EINVAL, "generation: at most %d stop texts of 1 to %d bytes",
                          SL_GEN_MAX_STOPS, SL_GEN_MAX_STOP_LEN);
    memcpy(g->stops[g->n_stops++], t, l + 1);
    return SL_OK;
}

/* Room for one more token in the history. */
static int hist_grow(sl_gen *g, int more, sl_err *err)
{
    if (g->n_hist + more <= g->cap_hist) return SL_OK;
    int nc = g->cap_hist ? g->cap_hist : 256;
    while (nc < g->n_hist + more) nc *= 2;
    int32_t *nh = realloc(g->hist, (size_t)nc * sizeof *nh);
    if (!nh) return sl_err_set(err, SL_ENOMEM, "out of memory for the drafting history");
    g->hist = nh;
    g->cap_hist = nc;
    return SL_OK;
}

/* The session's drafting policy for this drafter, maximum and mode: the
 * one its last reply used when they are the same (what it learnt carries
 * over), else a new one. NULL: out of memory. */
static sl_spec_policy *session_policy(sl_session *s, const sl_drafter *d, int max, bool always,
                                      sl_err *err)
{
    const void *key = d->kind == SL_DRAFT_SRC ? (const void *)d->src : NULL;
    if (!s->spec) {
        s->spec = calloc(1, sizeof *s->spec);
        if (!s->spec) {
            sl_err_set(err, SL_ENOMEM, "out of memory for the drafting policy");
            return NULL;
        }
        s->spec_kind = -1;
    }
    sl_spec_policy *p = s->spec;
    if (s->spec_kind != (int)d->kind || s->spec_src != key || p->always != always ||
        p->max != (max > SL_SPEC_MAX ? SL_SPEC_MAX : max)) {
        sl_spec_policy_init(p, max, always);
        s->spec_kind = (int)d->kind;
        s->spec_src = key;
    }
    return p;
}

/* The drafter of p, or drafting off with the reason in g->st.off. */
static int draft_setup(sl_gen *g, const sl_gen_params *p, sl_err *err)
{
    if (p->draft == SL_GEN_DRAFT_NONE) return SL_OK;
    const bool src = p->draft == SL_GEN_DRAFT_MTP || p->draft == SL_GEN_DRAFT_MODEL;
    if (p->draft != SL_GEN_DRAFT_NGRAM && !src)
        return sl_err_set(err, SL_EINVAL, "generation: unknown drafter %d", (int)p->draft);
    if (src && !p->draft_src)
        return sl_err_set(err, SL_EINVAL, "generation: the drafter asked for was not made "
                          "(sl_gen_params.draft_src)");
    if (p->draft_max < 0 || p->draft_max > SL_GEN_MAX_DRAFT || p->n_context < 0)
        return sl_err_set(err, SL_EINVAL, "generation: draft_max must be 0 to %d",
                          SL_GEN_MAX_DRAFT);
    const sl_session *s = g->s;
    for (int il = 0; il < g->m->hp.n_layer; il++)
        if (!sl_mixer_of(g->m->layers[il].d.mixer)->truncatable) {
            g->st.off = "the model's recurrent layers cannot go back to a drafted position";
            return SL_OK;
        }
    int max = p->draft_max;
    if (max > s->n_logit_rows - 1) max = s->n_logit_rows - 1;
    if (max > s->n_batch_max - 1) max = s->n_batch_max - 1;
    if (max < 1) {
        g->st.off = "the session keeps one row of logits a batch";
        return SL_OK;
    }
    g->drafter.kind = src ? SL_DRAFT_SRC : SL_DRAFT_NGRAM;
    g->drafter.src = p->draft_src;
    g->drafter.ngram_max = p->draft_ngram > 0 ? p->draft_ngram : 3;
    g->drafter.ngram_min = 1;
    g->draft_max = max;
    g->spec_sampling = p->draft_sampling;
    g->pol = session_policy(g->s, &g->drafter, max, p->draft_always, err);
    if (!g->pol) return SL_ENOMEM;
    g->switches_off0 = g->pol->switches_off;
    g->probes0 = g->pol->probes;
    g->following = true;
    g->draft_min = p->draft_min > 1 ? p->draft_min : 1;
    const int n = p->context ? p->n_context : 0;
    int rc = hist_grow(g, n + 1, err);
    if (rc) return rc;
    if (n) memcpy(g->hist, p->context, (size_t)n * sizeof *g->hist);
    g->n_hist = n;
    return SL_OK;
}

int sl_gen_create(sl_gen **out, sl_session *s, const sl_gen_params *p, sl_err *err)
{
    *out = NULL;
    if (!p || !p->sampler || !s)
        return sl_err_set(err, SL_EINVAL, "generation: no session or no sampler");
    if (p->logprobs > SL_GEN_MAX_TOP)
        return sl_err_set(err, SL_EINVAL, "generation: at most %d alternatives a token",
                          SL_GEN_MAX_TOP);
    sl_gen *g = calloc(1, sizeof *g);
    if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory for a generator");
    g->s = s;
    g->m = s->m;
    g->smp = p->sampler;
    g->chat = p->chat;
    g->max_tokens = p->max_tokens;
    g->n_logprobs = p->logprobs;
    g->n_vocab = sl_model_n_vocab(g->m);
    g->ignore_eog = p->ignore_eog;
    int rc = SL_OK;
    for (int i = 0; rc == SL_OK && p->stop_texts && p->stop_texts[i]; i++)
        rc = add_stop(g, p->stop_texts[i], err);
    g->n_user_stops = g->n_stops;
    if (rc == SL_OK && p->chat && !p->ignore_eog) {
        const char *const *t = sl_chat_stop_texts(p->chat);
        for (int i = 0; rc == SL_OK && t && t[i]; i++) rc = add_stop(g, t[i], err);
    }
    if (rc == SL_OK) rc = sl_detok_create(&g->dt, g->m, p->detok_flags, err);
    if (rc == SL_OK) rc = draft_setup(g, p, err);
    if (rc) {
        sl_gen_free(g);
        return rc;
    }
    *out = g;
    return SL_OK;
}

void sl_gen_free(sl_gen *g)
{
    if (!g) return;
    /* the session's next batches (the next prompt) followed again; what
     * was skipped is caught up only if drafting resumes */
    if (!g->following) sl_draft_follow(&g->drafter, true, NULL, 0);
    sl_detok_free(g->dt);
    free(g->hist);
    free(g->out);
    free(g);
}

int sl_gen_pending(const sl_gen *g, const int32_t **ids)
{
    *ids = g->pending + g->p0;
    return g->n_pending;
}

void sl_gen_evaluated(sl_gen *g, int n)
{
    if (n < 0) n = 0;
    if (n > g->n_pending) n = g->n_pending;
    g->p0 += n;
    g->n_pending -= n;
    g->last_eval = n;
    if (n > 0) g->st.steps++;
}

void sl_gen_draft_stats_get(const sl_gen *g, sl_gen_draft_stats *st) { *st = g->st; }

void sl_gen_cancel(sl_gen *g) { g->cancel = true; }

int sl_gen_n_taken(const sl_gen *g) { return g->n_taken; }

/* Room for n more bytes of text (and a NUL). */
static int out_grow(sl_gen *g, size_t n, sl_err *err)
{
    size_t need = g->n_out + n + 1;
    if (need <= g->cap_out) return SL_OK;
    size_t nc = g->cap_out ? g->cap_out * 2 : 256;
    while (nc < need) nc *= 2;
    char *no = realloc(g->out, nc);
    if (!no) return sl_err_set(err, SL_ENOMEM, "out of memory for the generated text");
    g->out = no;
    g->cap_out = nc;
    return SL_OK;
}

/* Appends n bytes to the step's text, keeping back an incomplete UTF-8
 * character at its end (invalid bytes count as one character each). */
static int out_put(sl_gen *g, const char *b, size_t n, sl_err *err)
{
    if (!n) return SL_OK;
    const int rc = out_grow(g, g->n_tail + n, err);
    if (rc) return rc;
    char *d = g->out + g->n_out;
    memcpy(d, g->tail, g->n_tail);
    memcpy(d + g->n_tail, b, n);
    size_t len = g->n_tail + n, ok = 0;
    while (ok < len) {
        size_t l = sl_utf8_seq_len((const unsigned char *)d + ok, len - ok);
        if (l == 0) {
            /* incomplete at the end, or invalid: wait if it could still complete */
            if (len - ok < 4 && (unsigned char)d[ok] >= 0xc2) break;
            l = 1;
        }
        ok += l;
    }
    g->n_tail = len - ok;
    memcpy(g->tail, d + ok, g->n_tail);
    g->n_out += ok;
    return SL_OK;
}

/* Lets out the first n held-back bytes. */
static int pend_out(sl_gen *g, size_t n, sl_err *err)
{
    int rc = out_put(g, g->pend, n, err);
    memmove(g->pend, g->pend + n, g->np - n);
    g->np -= n;
    return rc;
}

/* Whether pend[k..np) is a prefix of some stop text. */
static bool could_start_stop(const sl_gen *g, size_t k)
{
    for (int i = 0; i < g->n_stops; i++) {
        size_t ls = strlen(g->stops[i]), n = g->np - k;
        if (n < ls && !memcmp(g->pend + k, g->stops[i], n)) return true;
    }
    return false;
}

/* Feeds decoded text through the stop-text filter. Returns the index of
 * the stop text completed (what preceded it let out, the rest dropped), or
 * -1 when none; *rc is SL_ENOMEM when the text could not grow. */
static int filter_feed(sl_gen *g, const char *text, size_t len, int *rc, sl_err *err)
{
    *rc = SL_OK;
    if (g->n_stops == 0) {
        *rc = out_put(g, text, len, err);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (g->np == sizeof g->pend && (*rc = pend_out(g, 1, err))) return -1;
        g->pend[g->np++] = text[i];
        for (int k = 0; k < g->n_stops; k++) {
            size_t ls = strlen(g->stops[k]);
            if (ls <= g->np && !memcmp(g->pend + g->np - ls, g->stops[k], ls)) {
                *rc = pend_out(g, g->np - ls, err);
                g->np = 0;
                return k;
            }
        }
    }
    size_t k = 0;
    while (k < g->np && !could_start_stop(g, k)) k++;
    *rc = pend_out(g, k, err);
    return -1;
}

/* The reply ends: the decoder's held bytes go through the filter (unless
 * a stop text ended it), then everything held is let out. */
static int finish(sl_gen *g, sl_gen_event *ev, sl_err *err)
{
    const char *text;
    size_t len;
    int rc = SL_OK;
    sl_detok_flush(g->dt, &text, &len);
    if (ev->stop != SL_GEN_STOP_TEXT) {
        int k = filter_feed(g, text, len, &rc, err);
        if (k >= 0) {
            ev->stop = SL_GEN_STOP_TEXT;
            ev->stop_text = k < g->n_user_stops ? k : -1;
        } else if (rc == SL_OK) {
            rc = pend_out(g, g->np, err);
        }
    }
    if (rc == SL_OK && g->n_tail && (rc = out_grow(g, g->n_tail, err)) == SL_OK) {
        memcpy(g->out + g->n_out, g->tail, g->n_tail); /* it cannot complete now */
        g->n_out += g->n_tail;
        g->n_tail = 0;
    }
    g->done = true;
    return rc;
}

/* The log-probabilities of id and the n_top most likely tokens. */
static void logprob_of(sl_gen_logprob *e, const float *logits, int n_vocab, int32_t id,
                       int n_top)
{
    /* log-softmax: max, then the log of the sum of exp(logit - max) */
    float mx = -INFINITY;
    for (int i = 0; i < n_vocab; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - (double)mx);
    const double lse = (double)mx + log(sum);
    memset(e, 0, sizeof *e);
    e->id = id;
    e->lp = (float)((double)logits[id] - lse);
    const int k = n_top > SL_GEN_MAX_TOP ? SL_GEN_MAX_TOP : n_top;
    for (int i = 0; i < n_vocab && k > 0; i++) {
        float x = logits[i];
        if (e->n_top == k && !(x > e->top_lp[k - 1])) continue;
        int pos = e->n_top < k ? e->n_top++ : k - 1;
        while (pos > 0 && x > e->top_lp[pos - 1]) {
            e->top_lp[pos] = e->top_lp[pos - 1];
            e->top_id[pos] = e->top_id[pos - 1];
            pos--;
        }
        e->top_lp[pos] = x;
        e->top_id[pos] = i;
    }
    for (int t = 0; t < e->n_top; t++) e->top_lp[t] = (float)((double)e->top_lp[t] - lse);
}

static bool is_stop_token(const sl_gen *g, int32_t id)
{
    if (g->ignore_eog) return false;
    return g->chat ? sl_chat_is_stop_token(g->chat, id) : sl_model_token_is_eog(g->m, id);
}

/* Up to max guesses after the history to out: the count, or SL_ENOMEM. */
static int propose(sl_gen *g, int32_t *out, int max, sl_err *err)
{
    if (!g->spec_sampling) return sl_draft_propose(&g->drafter, g->hist, g->n_hist, out, max);
    /* one token at a time, each from the history and the guesses before
     * it: a guess is then the preference the sampler would get at its
     * position had it not been drafted (draft_pref) */
    const int rc = hist_grow(g, max, err);
    if (rc) return rc;
    int32_t *ext = g->hist + g->n_hist;
    int k = 0;
    while (k < max && sl_draft_propose(&g->drafter, g->hist, g->n_hist + k, ext + k, 1) == 1) k++;
    memcpy(out, ext, (size_t)k * sizeof *ext);
    return k;
}

/* A token taken on a plain step against the unverified guess for it. */
static void shadow_check(sl_gen *g, int32_t id)
{
    if (id == g->shadow[g->shadow_at] && ++g->shadow_at < g->n_shadow) return;
    sl_spec_policy_observe(g->pol, g->n_shadow, g->shadow_at);
    g->n_shadow = 0;
}

/* Pending: id, then the drafter's guesses after it (none when off, when
 * fewer than draft_min, and never past the context, the batch or the
 * token limit). The session holds n_past taken tokens. */
static int set_pending(sl_gen *g, int32_t id, int n_past, sl_err *err)
{
    g->pending[0] = id;
    g->n_pending = 1;
    g->n_draft = 0;
    g->pos0 = n_past;
    if (g->drafter.kind == SL_DRAFT_NONE) return SL_OK;
    int rc = hist_grow(g, 1, err);
    if (rc) return rc;
    g->hist[g->n_hist++] = id;
    int max = sl_spec_policy_len(g->pol);
    if (max <= 0) {
        /* not drafting: the drafter need not keep up (unless speculative
         * sampling asks it every token), and now and then it guesses
         * anyway, to see whether guesses would hold */
        if (g->following && !g->pol->drafting && !g->spec_sampling) {
            sl_draft_follow(&g->drafter, false, g->hist, g->n_hist);
            g->following = false;
        }
        int want = g->n_shadow == 0 ? sl_spec_policy_probe(g->pol) : 0;
        if (want > 0) {
            if (want > g->draft_max) want = g->draft_max;
            const uint64_t t0 = sl_now_ns();
            const int n = propose(g, g->shadow, want, err);
            if (n < 0) return n;
            sl_spec_policy_probe_cost(g->pol, n, sl_ns_to_s(sl_now_ns() - t0));
            g->n_shadow = n;
            g->shadow_at = 0;
        }
        g->t_mark = sl_now_ns();
        return SL_OK;
    }
    g->n_shadow = 0;
    /* drafting resumes: its catch-up is the switch's cost, not the step's;
     * a single re-measure proposes as a probe does (a short catch-up) */
    if (!g->following && g->pol->drafting) {
        sl_draft_follow(&g->drafter, true, g->hist, g->n_hist);
        g->following = true;
    }
    g->t_mark = sl_now_ns(); /* the step's time counts the proposal's */
    if (max < g->draft_min) max = g->draft_min;
    const int room = sl_session_n_ctx(g->s) - n_past - 1;
    if (max > room) max = room;
    if (g->max_tokens >= 0 && max > g->max_tokens - g->n_taken) max = g->max_tokens - g->n_taken;
    if (max < g->draft_min) return SL_OK;
    const int k = propose(g, g->pending + 1, max, err);
    if (k < 0) return k;
    if (k < g->draft_min) return SL_OK;
    g->n_draft = k;
    g->n_pending = 1 + k;
    g->st.drafted += k;
    g->st.verify_steps++;
    return SL_OK;
}

/* Speculative sampling's preference at the next position: the drafter's
 * one-token guess after the history (-1: none). A function of the tokens
 * so far only, so the reply does not depend on what was drafted. */
static int32_t draft_pref(const sl_gen *g)
{
    int32_t t;
    return sl_draft_propose(&g->drafter, g->hist, g->n_hist, &t, 1) == 1 ? t : -1;
}

/* A step's outcome for the policy and the statistics: nd drafts
 * verified, c of them held, dt seconds (< 0: not timed). */
static void draft_account(sl_gen *g, int nd, int c, double dt)
{
    sl_spec_policy_record(g->pol, nd, c, dt);
    for (int i = 0; i < nd; i++) {
        g->st.drafted_at[i]++;
        if (i < c) g->st.accepted_at[i]++;
    }
    g->st.switched_off = g->pol->switches_off - g->switches_off0;
    g->st.probes = g->pol->probes - g->probes0;
    if (dt < 0) return;
    if (nd > 0) {
        g->st.verify_timed++;
        g->st.verify_tokens_timed += g->n_ids;
        g->st.verify_s += dt;
    } else {
        g->st.plain_timed++;
        g->st.plain_s += dt;
    }
}

int sl_gen_next(sl_gen *g, sl_gen_event *ev, sl_err *err)
{
    memset(ev, 0, sizeof *ev);
    ev->stop_text = -1;
    if (g->done) return sl_err_set(err, SL_EINVAL, "generation: the reply has ended");
    if (g->n_pending)
        return sl_err_set(err, SL_EINVAL, "generation: %d taken tokens not evaluated",
                          g->n_pending);
    /* the guesses evaluated after the last taken token, and where they start */
    const int nd = g->n_draft;
    /* the step's cost: from handing out its tokens to now (the caller's
     * evaluation and whatever else it did between) */
    const double dt = g->t_mark && g->last_eval > 0 ? sl_ns_to_s(sl_now_ns() - g->t_mark) : -1;
    g->t_mark = 0;
    int32_t guess[SL_GEN_MAX_DRAFT];
    memcpy(guess, g->pending + 1, (size_t)nd * sizeof *guess);
    g->n_draft = 0;
    int row0 = 0;
    if (nd > 0) {
        if (g->last_eval != nd + 1 || g->s->n_logits < nd + 1 ||
            sl_session_n_past(g->s) != g->pos0 + nd + 1)
            return sl_err_set(err, SL_EINVAL, "generation: the drafted tokens were not "
                              "evaluated in one batch");
        row0 = g->s->n_logits - (nd + 1);
    }
    g->n_out = 0;
    g->n_ids = 0;
    g->p0 = 0;
    ev->ids = g->ids;
    ev->logprobs = g->n_logprobs >= 0 ? g->lps : NULL;
    int rc = SL_OK, c = 0; /* c: guesses confirmed */
    int32_t next = -1;     /* a taken token to evaluate */
    for (;;) {
        const bool later = g->n_ids > 0; /* a cancel or the limit then stops the next step */
        if (g->cancel) {
            if (!later) ev->stop = SL_GEN_CANCELLED;
            break;
        }
        if (g->max_tokens >= 0 && g->n_taken >= g->max_tokens) {
            if (!later) ev->stop = SL_GEN_LIMIT;
            break;
        }
        const float *logits = nd > 0 ? sl_session_logits_at(g->s, row0 + c)
                                     : sl_session_logits(g->s);
        int id;
        if (g->spec_sampling && g->drafter.kind != SL_DRAFT_NONE)
            id = sl_sampling_sample_draft(g->smp, logits, c < nd ? guess[c] : draft_pref(g), err);
        else
            id = sl_sampling_sample(g->smp, logits, err);
        if (id < 0) {
            rc = id;
            break;
        }
        if (is_stop_token(g, id)) {
            ev->stop = SL_GEN_EOG;
            break;
        }
        if (g->n_logprobs >= 0)
            logprob_of(&g->lps[g->n_ids], logits, g->n_vocab, id, g->n_logprobs);
        if ((rc = sl_sampling_accept(g->smp, id, err))) break;
        const char *text;
        size_t len;
        if ((rc = sl_detok_push(g->dt, id, &text, &len, err))) break;
        g->ids[g->n_ids++] = id;
        g->n_taken++;
        if (g->n_shadow) shadow_check(g, id);
        const int k = filter_feed(g, text, len, &rc, err);
        if (rc) break;
        if (k >= 0) {
            ev->stop = SL_GEN_STOP_TEXT;
            ev->stop_text = k < g->n_user_stops ? k : -1;
            break;
        }
        if (c < nd && id == guess[c]) { /* already evaluated: read the next row */
            c++;
            if (g->drafter.kind != SL_DRAFT_NONE) {
                if ((rc = hist_grow(g, 1, err))) break;
                g->hist[g->n_hist++] = id;
            }
            continue;
        }
        next = id;
        break;
    }
    if (rc) { /* the reply fails: the session keeps the tokens taken and evaluated */
        if (nd > 0) sl_session_truncate(g->s, g->pos0 + 1 + c);
        return rc;
    }
    g->st.accepted += c;
    if (g->drafter.kind != SL_DRAFT_NONE) draft_account(g, nd, c, dt);
    /* the session keeps the taken tokens it evaluated: the last one taken
     * before the guesses, and the guesses confirmed */
    const int n_past = nd > 0 ? g->pos0 + 1 + c : sl_session_n_past(g->s);
    if (nd > 0 && (rc = sl_session_truncate_err(g->s, n_past, err))) return rc;
    if (next >= 0 && ev->stop == SL_GEN_GOING) {
        if (n_past >= sl_session_n_ctx(g->s)) ev->stop = SL_GEN_CTX;
        else if ((rc = set_pending(g, next, n_past, err))) return rc;
    }
    if (ev->stop != SL_GEN_GOING && (rc = finish(g, ev, err))) return rc;
    ev->n_ids = g->n_ids;
    ev->text = g->out ? g->out : "";
    ev->len = g->n_out;
    return SL_OK;
}

int sl_gen_step(sl_gen *g, sl_gen_event *ev, sl_err *err)
{
    const int32_t *ids;
    const int n = sl_gen_pending(g, &ids);
    if (n > 0) {
        const int rc = sl_session_eval(g->s, ids, n, err);
        if (rc) return rc;
        sl_gen_evaluated(g, n);
    }
    return sl_gen_next(g, ev, err);
}
