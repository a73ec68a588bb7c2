/* draft_model.c - the draft-model drafter (llama.cpp's -md): a smaller
 * model with the same vocabulary runs on a session of its own and guesses
 * greedily. Its session follows the target's history: at each proposal the
 * tokens it holds are compared with the history, it is cut back to the
 * common prefix (less the last token, whose logits the first guess needs)
 * and evaluates the rest, then one guess at a time. While the generator
 * does not draft (sl_draft_follow off) a proposal that would evaluate more
 * than SL_DRAFT_PROBE_BACK tokens starts the session afresh on the last
 * SL_DRAFT_PROBE_BACK of the history instead (SL_DRAFT_CATCHUP when it
 * follows again; its positions then count from there: guesses may be
 * worse). Drafts never change the reply: the target
 * verifies each one (generate.c). */
#include <stdlib.h>
#include <string.h>

#include "engine/draft.h"
#include "engine/session.h"
#include "util/status.h"

typedef struct dmodel {
    sl_draft_src base;
    sl_model *m;          /* owned when own */
    bool own;
    sl_session *s;
    int32_t *toks;        /* what s holds: toks[0 .. sl_session_n_past(s)) */
    int cap;
    int off;              /* the history's index of s's position 0 */
    bool follow;          /* catch up with all of the history (else a window) */
} dmodel;

static int32_t argmax(const float *x, int n)
{
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Appends tokens[0..n) to the draft session in batches it takes. */
static int feed(dmodel *d, const int32_t *tokens, int n, sl_err *err)
{
    const int B = d->s->n_batch_max;
    for (int i = 0; i < n; i += B) {
        const int k = n - i < B ? n - i : B;
        const int at = sl_session_n_past(d->s);
        int rc = sl_session_eval(d->s, tokens + i, k, err);
        if (rc) return rc;
        memcpy(d->toks + at, tokens + i, (size_t)k * sizeof *d->toks);
    }
    return SL_OK;
}

/* The session brought to the history hist[0..n) (its part from off on;
 * while not following, started afresh on its last back tokens when more
 * than that are missing): false when it failed (the session then
 * emptied). */
static bool sync(dmodel *d, const int32_t *hist, int n, int back)
{
    if (n <= d->off) d->off = 0; /* the history went back before the window */
    int held = sl_session_n_past(d->s), lcp = 0;
    while (lcp < held && lcp < n - d->off && d->toks[lcp] == hist[d->off + lcp]) lcp++;
    if (!d->follow && n - d->off - lcp > back) {
        d->off = n - back;
        lcp = 0;
    }
    if (lcp == n - d->off) lcp--; /* the last token again: its logits are the first guess's */
    sl_err err = {0};
    if (sl_session_truncate_err(d->s, lcp, &err) ||
        feed(d, hist + d->off + lcp, n - d->off - lcp, &err)) {
        sl_session_truncate(d->s, 0);
        return false;
    }
    return true;
}

static int dm_propose(sl_draft_src *src, const int32_t *hist, int n, int32_t *out, int max)
{
    dmodel *d = (dmodel *)src;
    const int n_ctx = sl_session_n_ctx(d->s);
    if (n < 1 || max < 1) return 0;
    if (n - d->off + max > n_ctx) return 0;
    if (!sync(d, hist, n, SL_DRAFT_PROBE_BACK)) return 0;
    sl_err err = {0};
    int k = 0;
    for (; k < max; k++) {
        out[k] = argmax(sl_session_logits(d->s), sl_model_n_vocab(d->m));
        if (k + 1 < max && feed(d, &out[k], 1, &err)) {
            k++;
            break;
        }
    }
    return k;
}

static void dm_follow(sl_draft_src *src, bool on, const int32_t *hist, int n)
{
    dmodel *d = (dmodel *)src;
    if (on && !d->follow && hist && n >= 1 && n - d->off <= sl_session_n_ctx(d->s)) {
        sync(d, hist, n, SL_DRAFT_CATCHUP); /* still not following: a window back */
    }
    d->follow = on;
}

static void dm_destroy(sl_draft_src *src)
{
    dmodel *d = (dmodel *)src;
    sl_session_free(d->s);
    if (d->own) sl_model_free(d->m);
    free(d->toks);
    free(d);
}

/* Whether the two models' vocabularies are the same: size and every token's
 * text; else the error says how they differ. */
static int same_vocab(const sl_model *a, const sl_model *b, const char *path, sl_err *err)
{
    const int na = sl_model_n_tokens(a), nb = sl_model_n_tokens(b);
    if (na != nb || sl_model_n_vocab(a) != sl_model_n_vocab(b))
        return sl_err_set(err, SL_EINVAL, "draft model '%s': its vocabulary (%d tokens, %d "
                          "rows) is not the model's (%d tokens, %d rows)", path, nb,
                          sl_model_n_vocab(b), na, sl_model_n_vocab(a));
    for (int i = 0; i < na; i++) {
        size_t la, lb;
        const char *pa = sl_token_piece(a, i, true, &la), *pb = sl_token_piece(b, i, true, &lb);
        if (la != lb || (la && memcmp(pa, pb, la)))
            return sl_err_set(err, SL_EINVAL, "draft model '%s': token %d differs from the "
                              "model's: not the same vocabulary", path, i);
    }
    return SL_OK;
}

int sl_draft_model_load(sl_model **out, const sl_session *s, const char *path,
                        const sl_model_params *mp, sl_err *err)
{
    *out = NULL;
    sl_model_params p = mp ? *mp : sl_model_default_params();
    p.nextn_block = 0;
    p.drafter_bytes = 0; /* this is the drafter */
    p.n_ctx_hint = s->n_ctx;
    p.n_logits_hint = 1;
    sl_model *m = NULL;
    int rc = sl_model_load(&m, path, &p, err);
    if (rc) {
        sl_err_prefix(err, "draft model");
        return rc;
    }
    if ((rc = same_vocab(s->m, m, path, err))) {
        sl_model_free(m);
        return rc;
    }
    *out = m;
    return SL_OK;
}

int sl_draft_model_create_on(sl_draft_src **out, sl_session *s, sl_model *dm, sl_err *err)
{
    *out = NULL;
    if (sl_model_n_vocab(dm) != sl_model_n_vocab(s->m))
        return sl_err_set(err, SL_EINVAL, "the draft model's vocabulary is not the model's");
    dmodel *d = calloc(1, sizeof *d);
    if (!d) return sl_err_set(err, SL_ENOMEM, "out of memory for the draft model");
    d->base = (sl_draft_src){"draft-model", dm_propose, dm_destroy, dm_follow};
    d->m = dm;
    d->follow = true;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = s->n_ctx;
    sp.n_batch_max = s->n_batch_max;
    d->cap = s->n_ctx;
    d->toks = malloc((size_t)d->cap * sizeof *d->toks);
    if (!d->toks) {
        dm_destroy(&d->base);
        return sl_err_set(err, SL_ENOMEM, "out of memory for the draft model");
    }
    int rc = sl_session_create(&d->s, d->m, &sp, err);
    if (rc) {
        dm_destroy(&d->base);
        return rc;
    }
    *out = &d->base;
    return SL_OK;
}

int sl_draft_model_create(sl_draft_src **out, sl_session *s, const char *path,
                          const sl_model_params *mp, sl_err *err)
{
    *out = NULL;
    sl_model *dm = NULL;
    int rc = sl_draft_model_load(&dm, s, path, mp, err);
    if (!rc && (rc = sl_draft_model_create_on(out, s, dm, err))) sl_model_free(dm);
    if (!rc) ((dmodel *)*out)->own = true;
    return rc;
}
