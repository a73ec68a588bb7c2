/* draft_mtp.c - the MTP (nextn) drafter: the model file's own
 * multi-token-prediction block guesses the tokens after the one just taken
 * (llama.cpp's --spec-type draft-mtp; ARCHITECTURE.md "MTP blocks").
 *
 * The block sits after the main layers. Its row at position p reads the
 * main model's final hidden state h_p (before the output norm) and the
 * embedding of the token at p + 1, the one h_p predicted:
 *
 *   x = eh_proj [ enorm(embed(t_{p+1})) ; hnorm(h_p) ]      (one product over 2 n_embd)
 *   x = the block's decoder layer on x at position p (its own KV cache)
 *   logits = head(shared_head_norm(x))   (shared_head_head, else the model's output)
 *
 * and its greedy token is the guess for t_{p+2}. Further guesses chain: the
 * next row (position p + 1) reads the guess's embedding and this row's x in
 * place of h. The block is loaded as a model of one layer (model_load.c,
 * sl_model_params.nextn_block) with a session of its own, so its attention
 * has its cache: every batch the target evaluates (the prompt too) hands
 * its hidden rows over (sl_session.on_hidden), and the block's K/V rows for
 * those positions are computed from them (the mixer only: a cache row needs
 * nothing after it). The last B hidden rows and their tokens are kept in a
 * ring by position. While the generator does not draft it stops the block
 * following (sl_draft_follow): batches then only fill the ring, and a
 * proposal computes the missing rows of the last SL_DRAFT_PROBE_BACK
 * positions from it, a resumed follow those of the last SL_DRAFT_CATCHUP
 * (older ones stay as they were, so guesses after a pause may be worse). Drafts never change the reply: the
 * target verifies each one (generate.c). */
#include <stdlib.h>
#include <string.h>

#include "engine/block.h"
#include "engine/draft.h"
#include "engine/fwd_mm.h"
#include "engine/mixer.h"
#include "engine/model_runtime.h"
#include "engine/session.h"
#include "gguf/gguf.h"
#include "util/pool.h"
#include "util/status.h"

typedef struct mtp {
    sl_draft_src base;
    sl_session *t;        /* the target session (borrowed) */
    sl_model *vm;         /* the block as a one-layer model (owned when own) */
    bool own;
    sl_session *vs;       /* its session: the block's cache */
    int E, V, B;          /* n_embd, n_vocab, rows a block batch holds */
    /* the target's hidden rows and tokens of positions [r_lo, r_hi) (at
     * most B), position p at ring row p % B */
    float *h;
    int32_t *htok;
    int r_lo, r_hi;
    bool follow;          /* cache rows computed as batches come (else on demand) */
    /* the block's cache rows [0, kv_n) hold the target's tokens; the row at
     * first_pos was the first guess's, made from token first_tok */
    int kv_n, first_pos;
    int32_t first_tok;
    float *cat;           /* (B, 2 E) the block's input rows */
    uint8_t *act;         /* (B, act_stride) them prepared for eh_proj */
    const void **acts;
    size_t act_stride;
    float *hcur;          /* (E) the last guess's row after the layer */
    float *hn;            /* (E) its head norm */
    float *logits;        /* (V) */
} mtp;

/* The block's input rows: rows i < n of tokens and hidden (ldh apart) into
 * s->x through enorm / hnorm and eh_proj. */
static void mtp_input(mtp *d, const int32_t *tokens, const float *const *hid, int n)
{
    const sl_model *m = d->vm;
    const int E = d->E;
    const float eps = m->hp.rms_eps;
    sl_mat emb = sl_fwd_mat(m->nextn_embd.info ? &m->nextn_embd : &m->tok_embd);
    for (int i = 0; i < n; i++) {
        float *c = d->cat + (size_t)i * 2 * E;
        sl_mat_row_to_float(&emb, tokens[i], c + E); /* scratch: the embedding row */
        sl_rmsnorm(c, c + E, m->nextn_enorm.data, E, eps);
        sl_rmsnorm(c + E, hid[i], m->nextn_hnorm.data, E, eps);
    }
    sl_mat eh = sl_fwd_mat(&m->nextn_eh_proj);
    sl_prep p = {.mat = &eh, .x = d->cat, .ldx = (size_t)2 * E, .n = n, .act = d->act,
                 .stride = d->act_stride, .cap = d->act_stride * (size_t)d->B, .acts = d->acts};
    sl_fwd_prepare(d->vs, &p);
    sl_mm_item it = {.mat = &eh, .acts = d->acts, .n = n, .y = d->vs->x, .ldy = (size_t)E};
    sl_fwd_mm_run(d->vs, &it, 1);
}

/* n block rows at positions pos .. (n <= B). full: the whole layer, its
 * output rows left in s->x; else its attention only (the cache rows). */
static int mtp_rows(mtp *d, const int32_t *tokens, const float *const *hid, int n, int pos,
                    bool full, sl_err *err)
{
    sl_session *s = d->vs;
    const sl_layer *L = &d->vm->layers[0];
    s->n_past = pos;
    sl_session_batch_begin(s, n);
    mtp_input(d, tokens, hid, n);
    int rc = SL_OK;
    if (full) {
        rc = sl_block_forward(s, L, 0, n, NULL, err);
    } else {
        const int E = d->E;
        for (int t = 0; t < n; t++)
            sl_rmsnorm(s->xb + (size_t)t * E, s->x + (size_t)t * E, L->attn_norm.data, E,
                       d->vm->hp.rms_eps);
        sl_mixer_of(L->d.mixer)->forward(s, L, 0, n, s->tmp);
    }
    if (!rc) rc = sl_check_hidden(s->x, n, d->E, pos, d->vm->hp.n_layer, err);
    sl_session_batch_end(s, n, rc);
    return rc;
}

/* The hidden row of the target at position p, from the ring; NULL when
 * it does not hold it. */
static const float *hidden_at(const mtp *d, int p)
{
    if (p < d->r_lo || p >= d->r_hi) return NULL;
    return d->h + (size_t)(p % d->B) * d->E;
}

/* The block's cache rows of positions [from, to) from the ring (which
 * holds positions up to to, the tokens after them included). */
static int rows_from_ring(mtp *d, int from, int to, sl_err *err)
{
    const float *hid[64];
    int32_t tok[64];
    int p = from;
    while (p < to) {
        int k = 0;
        const int start = p;
        while (k < 64 && k < d->B && p < to) {
            hid[k] = hidden_at(d, p);
            tok[k] = d->htok[(p + 1) % d->B];
            k++;
            p++;
        }
        int rc = mtp_rows(d, tok, hid, k, start, false, err);
        if (rc) return rc;
    }
    return SL_OK;
}

/* The missing cache rows before position to - 1 (whose row the next
 * proposal computes), at most back as far as window positions; rows before
 * that stay as they were. */
static int catch_up(mtp *d, int to, int window, sl_err *err)
{
    int from = d->kv_n;
    if (from < to - window) from = to - window;
    if (from < d->r_lo) from = d->r_lo;
    if (to > d->r_hi - 1) to = d->r_hi - 1; /* a row needs the token after it */
    if (from >= to) return SL_OK;
    const int rc = rows_from_ring(d, from, to, err);
    if (!rc && to > d->kv_n) d->kv_n = to;
    return rc;
}

/* sl_session.on_hidden: the block's cache rows for the positions whose next
 * token this batch shows (from the last row known up to the batch's
 * second-to-last), then the batch's hidden rows kept for the next guess. */
static int on_hidden(void *ud, sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    mtp *d = ud;
    const int P = s->n_past, E = d->E;
    /* rows at P - 1 and beyond were guesses or are gone, unless the first
     * guess's row read the token this batch starts with */
    if (d->kv_n > P - 1 && !(d->kv_n >= P && d->first_pos == P - 1 && d->first_tok == tokens[0]))
        d->kv_n = P - 1 > 0 ? P - 1 : 0;
    if (d->kv_n > P) d->kv_n = P;
    /* the ring's rows at P and beyond were guesses or are gone; when the
     * session moved without a batch (a restored state) it holds nothing
     * before P: what it does not cover stays a gap, nothing can fill it */
    if (d->r_hi > P) d->r_hi = P;
    if (d->r_hi < P || d->r_lo > d->r_hi) d->r_lo = d->r_hi = P;
    int p = d->kv_n;
    if (p < d->r_lo) p = P > d->r_lo ? d->r_lo : P;
    const float *hid[64];
    int32_t tok[64];
    while (d->follow && p <= P + n - 2) {
        int k = 0;
        const int start = p;
        while (k < 64 && k < d->B && p <= P + n - 2) {
            hid[k] = p < P ? hidden_at(d, p) : s->x + (size_t)(p - P) * E;
            tok[k] = p + 1 < P ? d->htok[(p + 1) % d->B] : tokens[p + 1 - P];
            k++;
            p++;
        }
        int rc = mtp_rows(d, tok, hid, k, start, false, err);
        if (rc) return rc;
    }
    if (d->follow && p > d->kv_n) d->kv_n = p;
    /* into the ring: the batch's last B rows */
    for (int i = n > d->B ? n - d->B : 0; i < n; i++) {
        const int q = (P + i) % d->B;
        memcpy(d->h + (size_t)q * E, s->x + (size_t)i * E, (size_t)E * sizeof *d->h);
        d->htok[q] = tokens[i];
    }
    d->r_hi = P + n;
    if (d->r_lo < d->r_hi - d->B) d->r_lo = d->r_hi - d->B;
    d->first_pos = -1;
    return SL_OK;
}

static int32_t argmax(const float *x, int n)
{
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* The greedy guess of the block's row just run (s->x row 0); the row kept
 * for the next. */
static int32_t mtp_guess(mtp *d)
{
    const sl_model *m = d->vm;
    sl_session *s = d->vs;
    memcpy(d->hcur, s->x, (size_t)d->E * sizeof *d->hcur);
    const sl_tensor *norm = m->nextn_head_norm.info ? &m->nextn_head_norm : &m->output_norm;
    sl_rmsnorm(d->hn, d->hcur, norm->data, d->E, m->hp.rms_eps);
    sl_fwd_mm_tensor(s, m->nextn_head.info ? &m->nextn_head : &m->output, d->hn, 1, d->logits);
    return argmax(d->logits, d->V);
}

static int mtp_propose(sl_draft_src *src, const int32_t *hist, int n, int32_t *out, int max)
{
    mtp *d = (mtp *)src;
    const int P = sl_session_n_past(d->t); /* hist[n - 1] goes there */
    const float *h = hidden_at(d, P - 1);
    if (n < 1 || max < 1 || !h) return 0;
    sl_err err = {0};
    if (catch_up(d, P - 1, d->follow ? d->B : SL_DRAFT_PROBE_BACK, &err)) return 0;
    int32_t tok = hist[n - 1];
    const float *hid = h;
    int k = 0;
    for (; k < max; k++) {
        if (mtp_rows(d, &tok, &hid, 1, P - 1 + k, true, &err)) break;
        if (k == 0) {
            d->first_pos = P - 1;
            d->first_tok = tok;
            if (d->kv_n >= P - 1) d->kv_n = P;
        }
        out[k] = tok = mtp_guess(d);
        hid = d->hcur;
    }
    return k;
}

const float *sl_draft_mtp_logits(const sl_draft_src *d) { return ((const mtp *)d)->logits; }

static void mtp_follow(sl_draft_src *src, bool on, const int32_t *hist, int n)
{
    mtp *d = (mtp *)src;
    if (on && !d->follow && hist) {
        sl_err err = {0};
        catch_up(d, sl_session_n_past(d->t) - 1, SL_DRAFT_CATCHUP, &err);
    }
    d->follow = on;
}

static void mtp_destroy(sl_draft_src *src)
{
    mtp *d = (mtp *)src;
    if (d->t && d->t->on_hidden_ud == d) {
        d->t->on_hidden = NULL;
        d->t->on_hidden_ud = NULL;
    }
    sl_session_free(d->vs);
    if (d->own) sl_draft_mtp_block_free(d->vm);
    free(d->h);
    free(d->htok);
    free(d->cat);
    free(d->act);
    free(d->acts);
    free(d->hcur);
    free(d->hn);
    free(d->logits);
    free(d);
}

void sl_draft_mtp_block_free(sl_model *block)
{
    if (!block) return;
    block->rt->pool = NULL; /* the target's, not ours */
    sl_model_free(block);
}

int sl_draft_mtp_block_load(sl_model **out, const sl_session *s, const sl_model_params *mp,
                            sl_err *err)
{
    *out = NULL;
    sl_model *tm = s->m;
    if (tm->hp.n_nextn < 1)
        return sl_err_set(err, SL_EUNSUPPORTED, "the model has no MTP block "
                          "(nextn_predict_layers): it cannot draft with --spec-type draft-mtp");
    if (sl_block_stream(tm)->head || sl_block_stream(tm)->embed)
        return sl_err_set(err, SL_EUNSUPPORTED, "--spec-type draft-mtp: the %s family's "
                          "residual stream is not one row a token; its MTP block does not run "
                          "yet", tm->arch->name);
    for (int il = 0; il < tm->hp.n_layer; il++)
        if (!sl_mixer_of(tm->layers[il].d.mixer)->truncatable)
            return sl_err_set(err, SL_EUNSUPPORTED, "--spec-type draft-mtp: the model's "
                              "recurrent layers cannot go back to a drafted position");
    sl_model_params p = mp ? *mp : sl_model_default_params();
    p.nextn_block = 1;
    p.stream = SL_STREAM_OFF; /* the block's experts stay resident */
    p.n_ctx_hint = s->n_ctx;
    p.n_logits_hint = 1;
    p.cache_bytes = 0; /* no expert cache: nothing of the target's streaming applies */
    p.cache_experts = 0;
    p.cache_route_keep = 0;
    p.cache_route_from = 0;
    p.io_trace_path = NULL;
    p.host_cache_bytes = 0;
    p.host_cache_seqs = 0;
    p.drafter_bytes = 0; /* this is the drafter */
    p.n_threads = 1; /* its own pool is replaced by the target's */
    sl_model *vm = NULL;
    int rc = sl_model_load(&vm, sl_gguf_file_path(tm->gguf, 0), &p, err);
    if (rc) {
        sl_err_prefix(err, "loading the MTP block");
        return rc;
    }
    sl_pool_free(vm->rt->pool);
    vm->rt->pool = tm->rt->pool;
    *out = vm;
    return SL_OK;
}

int sl_draft_mtp_create_on(sl_draft_src **out, sl_session *s, sl_model *block, sl_err *err)
{
    *out = NULL;
    if (s->on_hidden)
        return sl_err_set(err, SL_EINVAL, "the session already feeds a drafter");
    if (block->rt->pool != s->m->rt->pool || block->hp.n_embd != s->m->hp.n_embd ||
        block->hp.n_vocab != s->m->hp.n_vocab)
        return sl_err_set(err, SL_EINVAL, "the MTP block was not loaded for this session's "
                          "model (sl_draft_mtp_block_load)");
    mtp *d = calloc(1, sizeof *d);
    if (!d) return sl_err_set(err, SL_ENOMEM, "out of memory for the MTP drafter");
    d->base = (sl_draft_src){"draft-mtp", mtp_propose, mtp_destroy, mtp_follow};
    d->first_pos = -1;
    d->follow = true;
    d->vm = block;
    d->E = s->m->hp.n_embd;
    d->V = s->m->hp.n_vocab;
    d->B = s->n_batch_max + 1;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = s->n_ctx;
    sp.n_batch_max = d->B;
    sp.type_k = (int)s->type_k;
    sp.type_v = (int)s->type_v;
    int rc = sl_session_create(&d->vs, d->vm, &sp, err);
    if (rc) {
        mtp_destroy(&d->base);
        return rc;
    }
    const size_t E = (size_t)d->E, B = (size_t)d->B;
    d->act_stride = sl_fwd_act_stride(d->vm->nextn_eh_proj.type, (int64_t)(2 * E));
    d->h = malloc(B * E * sizeof *d->h);
    d->htok = malloc(B * sizeof *d->htok);
    d->cat = malloc(B * 2 * E * sizeof *d->cat);
    d->act = malloc(B * d->act_stride + 64);
    d->acts = malloc(B * sizeof *d->acts);
    d->hcur = malloc(E * sizeof *d->hcur);
    d->hn = malloc(E * sizeof *d->hn);
    d->logits = malloc((size_t)d->V * sizeof *d->logits);
    if (!d->h || !d->htok || !d->cat || !d->act || !d->acts || !d->hcur || !d->hn || !d->logits) {
        mtp_destroy(&d->base);
        return sl_err_set(err, SL_ENOMEM, "out of memory for the MTP drafter");
    }
    d->t = s;
    s->on_hidden = on_hidden;
    s->on_hidden_ud = d;
    *out = &d->base;
    return SL_OK;
}

int sl_draft_mtp_create(sl_draft_src **out, sl_session *s, const sl_model_params *mp,
                        sl_err *err)
{
    *out = NULL;
    if (s->on_hidden)
        return sl_err_set(err, SL_EINVAL, "the session already feeds a drafter");
    sl_model *vm = NULL;
    int rc = sl_draft_mtp_block_load(&vm, s, mp, err);
    if (!rc && (rc = sl_draft_mtp_create_on(out, s, vm, err))) sl_draft_mtp_block_free(vm);
    if (!rc) ((mtp *)*out)->own = true;
    return rc;
}
