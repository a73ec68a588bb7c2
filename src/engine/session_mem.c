/* session_mem.c - a session's state copied into memory and back
 * (sl_state_capture, sl_state_restore): the server's host-RAM prompt
 * cache, shared by sessions of one model created with the same
 * parameters.
 *
 * A capture of n positions holds, like a session file (session_save.c),
 * each layer's rows from the first position it still holds (a sliding
 * window's ring: only its last ones) to n, in position-major order, every
 * recurrent layer's sequence state at n, the recurrent snapshot when it
 * lies before n, and the last logits when they are current. No checksums
 * and no model identity: it never leaves the process, and a restore
 * checks only that the session's layers have the same shapes. */
#include <stdlib.h>
#include <string.h>

#include "engine/kv_ring.h"
#include "engine/session.h"
#include "util/checked.h"

struct sl_state {
    int n;             /* positions captured */
    int snap;          /* the recurrent snapshot's position (< n), or -1 */
    bool recurrent;    /* some layer cannot be cut back (a sequence state) */
    int n_layer;
    uint32_t *lo;      /* (n_layer) each layer's first captured position */
    size_t *row_bytes; /* (n_layer * 2) the shapes captured, checked at restore */
    size_t *seq_bytes; /* (n_layer) */
    int *ring_cap;     /* (n_layer) */
    int *n_swa;        /* (n_layer) each layer's sliding window, 0: none */
    uint8_t **rows;    /* (n_layer * 2) positions [lo, n) of each stream, or NULL */
    float *seq;        /* every layer's sequence state at n (layout seq_state) */
    float *seq_snap;   /* ... at snap */
    uint64_t seq_total;
    float *logits;     /* n_vocab, or NULL */
    int n_vocab;
    uint8_t *kinds;    /* (n) each row's kind (session.h SL_ROW_*: attention kernel, product forms) */
    uint64_t bytes;    /* everything above, for the cache's budget */
};

/* Layer il's sliding window (0: it attends to every position). */
static int layer_window(const sl_session *s, int il)
{
    const sl_layer_desc *d = &s->m->layers[il].d;
    return d->mixer == SL_MIXER_ATTN && d->attn.n_swa > 0 ? d->attn.n_swa : 0;
}

/* The first position a window of w needs before position n (0 for w 0). */
static uint32_t window_from(int w, uint32_t n)
{
    if (w <= 0) return 0;
    return n + 1 > (uint32_t)w ? n + 1 - (uint32_t)w : 0;
}

static bool has_recurrent(const sl_session *s)
{
    for (int il = 0; il < s->m->hp.n_layer; il++)
        if (!sl_mixer_of(s->m->layers[il].d.mixer)->truncatable) return true;
    return false;
}

void sl_state_free(sl_state *st)
{
    if (!st) return;
    for (int i = 0; st->rows && i < 2 * st->n_layer; i++) free(st->rows[i]);
    free(st->rows);
    free(st->lo);
    free(st->row_bytes);
    free(st->seq_bytes);
    free(st->ring_cap);
    free(st->n_swa);
    free(st->seq);
    free(st->seq_snap);
    free(st->logits);
    free(st->kinds);
    free(st);
}

int sl_state_capture(sl_session *s, int n, sl_state **out, sl_err *err)
{
    *out = NULL;
    if (n <= 0 || n > s->n_past)
        return sl_err_set(err, SL_EINVAL, "cannot capture %d positions of a session holding %d",
                          n, s->n_past);
    const int nl = s->m->hp.n_layer;
    const uint64_t seq_total = s->layout.bytes[SL_SB_seq_state];
    const float *seq_src = s->seq_state;
    int snap = -1;
    if (seq_total > 0) {
        if (n == s->n_past) {
            snap = s->snap_pos > 0 && s->snap_pos < n ? s->snap_pos : -1;
        } else if (n == s->snap_pos) {
            seq_src = s->seq_snap;
        } else {
            return sl_err_set(err, SL_EINVAL, "cannot capture the first %d of %d positions: "
                              "the recurrent layers keep their state only at %d and at the "
                              "snapshot %d", n, s->n_past, s->n_past, s->snap_pos);
        }
    }
    for (int il = 0; il < nl; il++) {
        const int lo = s->layer_state[il].ring_lo > 0 ? s->layer_state[il].ring_lo : 0;
        if ((uint32_t)lo > window_from(layer_window(s, il), (uint32_t)n))
            return sl_err_set(err, SL_EINVAL, "cannot capture the first %d of %d positions: "
                              "layer %d's sliding window holds positions from %d only", n,
                              s->n_past, il, lo);
    }
    sl_state *st = calloc(1, sizeof *st);
    if (!st) return sl_err_set(err, SL_ENOMEM, "out of memory");
    st->n = n;
    st->snap = snap;
    st->recurrent = has_recurrent(s);
    st->n_layer = nl;
    st->seq_total = seq_total;
    st->n_vocab = s->m->hp.n_vocab;
    st->lo = calloc((size_t)nl, sizeof *st->lo);
    st->row_bytes = calloc((size_t)nl * 2, sizeof *st->row_bytes);
    st->seq_bytes = calloc((size_t)nl, sizeof *st->seq_bytes);
    st->ring_cap = calloc((size_t)nl, sizeof *st->ring_cap);
    st->n_swa = calloc((size_t)nl, sizeof *st->n_swa);
    st->rows = calloc((size_t)nl * 2, sizeof *st->rows);
    st->kinds = malloc((size_t)n);
    bool ok = st->lo && st->row_bytes && st->seq_bytes && st->ring_cap && st->n_swa && st->rows &&
              st->kinds;
    if (ok) memcpy(st->kinds, s->row_kind, (size_t)n);
    uint64_t bytes = sizeof *st + (uint64_t)nl * 48 + (uint64_t)n;
    for (int il = 0; ok && il < nl; il++) {
        const sl_layer_state *ls = &s->layer_state[il];
        st->lo[il] = ls->ring_lo > 0 ? (uint32_t)ls->ring_lo : 0;
        st->seq_bytes[il] = ls->seq_bytes;
        st->ring_cap[il] = ls->ring_cap;
        st->n_swa[il] = layer_window(s, il);
        for (int r = 0; ok && r < 2; r++) {
            st->row_bytes[2 * il + r] = ls->row_bytes[r];
            if (!ls->row_bytes[r]) continue;
            uint64_t len;
            ok = sl_mul_u64(ls->row_bytes[r], (uint64_t)n - st->lo[il], &len) && len <= SIZE_MAX;
            uint8_t *buf = ok ? malloc(len ? (size_t)len : 1) : NULL;
            ok = buf != NULL;
            if (!ok) break;
            sl_kv_rows_get(ls, r, (int)st->lo[il], n - (int)st->lo[il], buf);
            st->rows[2 * il + r] = buf;
            bytes += len;
        }
    }
    if (ok && seq_total > 0) {
        st->seq = malloc((size_t)seq_total);
        ok = st->seq != NULL;
        if (ok) memcpy(st->seq, seq_src, (size_t)seq_total);
        bytes += seq_total;
        if (ok && snap >= 0) {
            st->seq_snap = malloc((size_t)seq_total);
            ok = st->seq_snap != NULL;
            if (ok) memcpy(st->seq_snap, s->seq_snap, (size_t)seq_total);
            bytes += seq_total;
        }
    }
    if (ok && n == s->n_past && s->n_logits > 0) {
        st->logits = malloc((size_t)st->n_vocab * sizeof *st->logits);
        ok = st->logits != NULL;
        if (ok) memcpy(st->logits, sl_session_logits(s), (size_t)st->n_vocab * sizeof(float));
        bytes += (uint64_t)st->n_vocab * sizeof(float);
    }
    if (!ok) {
        sl_state_free(st);
        return sl_err_set(err, SL_ENOMEM, "out of memory capturing %d positions", n);
    }
    st->bytes = bytes;
    *out = st;
    return SL_OK;
}

int sl_state_n(const sl_state *st) { return st->n; }

uint64_t sl_state_bytes(const sl_state *st) { return st->bytes; }

bool sl_state_has_logits(const sl_state *st) { return st->logits != NULL; }

bool sl_state_restorable(const sl_state *st, int k)
{
    if (k <= 0 || k > st->n) return false;
    /* the window before k must be among the captured rows */
    for (int il = 0; il < st->n_layer; il++)
        if (st->lo[il] > window_from(st->n_swa[il], (uint32_t)k)) return false;
    /* a recurrent state exists at n and at the snapshot only */
    return k == st->n || !st->recurrent || k == st->snap;
}

int sl_state_restore(sl_session *s, const sl_state *st, int k, sl_err *err)
{
    if (!sl_state_restorable(st, k))
        return sl_err_set(err, SL_EINVAL, "a state of %d positions cannot be restored at %d", st->n,
                          k);
    const int nl = s->m->hp.n_layer;
    bool same = nl == st->n_layer && s->layout.bytes[SL_SB_seq_state] == st->seq_total &&
                s->m->hp.n_vocab == st->n_vocab && k <= s->n_ctx;
    for (int il = 0; same && il < nl; il++) {
        const sl_layer_state *ls = &s->layer_state[il];
        same = ls->row_bytes[0] == st->row_bytes[2 * il] &&
               ls->row_bytes[1] == st->row_bytes[2 * il + 1] &&
               ls->seq_bytes == st->seq_bytes[il] && ls->ring_cap == st->ring_cap[il];
        /* the window k continues from must be captured */
        if (same && st->lo[il] > window_from(layer_window(s, il), (uint32_t)k)) same = false;
    }
    if (!same)
        return sl_err_set(err, SL_EINVAL, "the captured state does not fit this session's "
                          "layers (another context, cache type or window)");
    for (int il = 0; il < nl; il++) {
        sl_layer_state *ls = &s->layer_state[il];
        const uint32_t lo = st->lo[il];
        /* a ring keeps the last ring_cap of the positions before k */
        uint32_t keep = lo;
        if (ls->ring_cap > 0 && (uint32_t)k - keep > (uint32_t)ls->ring_cap)
            keep = (uint32_t)k - (uint32_t)ls->ring_cap;
        for (int r = 0; r < 2; r++) {
            if (!ls->row_bytes[r]) continue;
            const uint8_t *src = st->rows[2 * il + r] + (size_t)(keep - lo) * ls->row_bytes[r];
            sl_kv_rows_put(ls, r, (int)keep, k - (int)keep, src);
        }
        ls->ring_lo = (int)keep;
    }
    const size_t seq = (size_t)st->seq_total;
    s->snap_pos = -1;
    if (seq > 0) {
        const float *src = k == st->n ? st->seq : st->seq_snap;
        memcpy(s->seq_state, src, seq);
        if (k == st->n && st->snap >= 0) {
            memcpy(s->seq_snap, st->seq_snap, seq);
            s->snap_pos = st->snap;
        } else if (k < st->n) {
            memcpy(s->seq_snap, src, seq);
            s->snap_pos = k;
        }
    }
    s->n_logits = 0;
    if (k == st->n && st->logits) {
        memcpy(s->logits, st->logits, (size_t)st->n_vocab * sizeof(float));
        s->n_logits = 1;
    }
    memcpy(s->row_kind, st->kinds, (size_t)k);
    s->n_past = k;
    return SL_OK;
}

int sl_state_restorable_below(const sl_state *st, int k)
{
    if (k >= st->n) return st->n;
    if (k <= 0) return 0;
    if (st->recurrent) return st->snap > 0 && st->snap <= k && sl_state_restorable(st, st->snap)
                                  ? st->snap : 0;
    /* a window's first captured row lo allows every j >= lo + w - 1 */
    int floor = 1;
    for (int il = 0; il < st->n_layer; il++)
        if (st->lo[il] > 0 && st->n_swa[il] > 0) {
            const int f = (int)st->lo[il] + st->n_swa[il] - 1;
            if (f > floor) floor = f;
        }
    return k >= floor ? k : 0;
}
