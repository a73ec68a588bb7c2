/* streamer_ahead.c - the streamer's read-ahead (streamer.h): the next
 * layer's experts guessed by the router (one token's, or a batch's union)
 * or learned from the routing seen so far, gated by how often such
 * guesses were right, and the warm-start preload of the hottest experts of
 * the usage history. Reads ahead queue behind every demand read, take only
 * unpinned slots and never make a set wait. */
#include <stdlib.h>
#include <string.h>

#include "experts/streamer_internal.h"
#include "util/timer.h"

/* Scores the guesses made for layer against its set ids[0..n): the
 * router's (single or union, which feeds their gates) and the learned
 * ones. True when the set followed a learned guess (its misses count as
 * learned_set_misses). */
bool sl_ahead_score(sl_streamer *st, int layer, const int *ids, int n)
{
    if (st->guess_layer == layer) {
        int right = 0;
        for (int g = 0; g < st->guess_n; g++)
            for (int k = 0; k < n; k++) right += ids[k] == st->guess[g];
        if (st->guess_union) {
            st->st.union_guessed += (uint64_t)st->guess_n;
            st->st.union_right += (uint64_t)right;
            st->union_acc += GUESS_WEIGHT * ((double)right / st->guess_n - st->union_acc);
        } else {
            st->st.guessed += (uint64_t)st->guess_n;
            st->st.guessed_right += (uint64_t)right;
            st->guess_acc += GUESS_WEIGHT * ((double)right / st->guess_n - st->guess_acc);
        }
        st->guess_layer = -1;
    }
    if (st->lg_layer == layer) {
        for (int g = 0; g < st->lg_n; g++)
            for (int k = 0; k < n; k++) st->st.learned_right += ids[k] == st->lg[g];
        st->st.learned_sets++;
        st->lg_layer = -1;
        return true;
    }
    return false;
}

/* Guesses for this layer that its set did not ask for and whose reads no
 * lane has started yet are dropped (cancelled in the I/O queue): they
 * arrive too late to help and would only take the drive from demand reads.
 * Their completions come back cancelled and free the slot. */
void sl_ahead_drop_late(sl_streamer *st, int layer, const int *ids, int n)
{
    if (st->pf_inflight <= st->warm_inflight) return;
    for (int k = 0; k < n; k++) st->want[ids[k]] = true;
    const int ns = sl_cache_n_slots(st->cache);
    for (int slot = 0; slot < ns; slot++) {
        const pf_entry *pf = &st->pf[slot];
        if (pf->reads_left == 0 || pf->warm || pf->layer != layer || st->want[pf->expert])
            continue;
        for (int p = 0; p < SL_N_PROJ; p++)
            sl_io_cancel(st->io, (uint64_t)slot * SL_N_PROJ + (uint64_t)p);
    }
    for (int k = 0; k < n; k++) st->want[ids[k]] = false;
}

/* Preloads in flight at most: WARM_INFLIGHT, and a share of the slots. */
int sl_ahead_warm_limit(const sl_streamer *st)
{
    int lim = sl_cache_n_slots(st->cache) / WARM_SLOT_SHARE;
    if (lim > WARM_INFLIGHT) lim = WARM_INFLIGHT;
    return lim < 1 ? 1 : lim;
}

/* Keeps the warm-start preload going: while the list has experts, free
 * slots remain and fewer than the allowance are in flight, submits the
 * next ones as reads ahead (behind every demand read). Never evicts. */
void sl_ahead_warm_pump(sl_streamer *st)
{
    const int lim = sl_ahead_warm_limit(st);
    sl_err ignored;
    while (st->warm_next < st->warm_n && st->warm_inflight < lim) {
        const int l = st->warm_layer[st->warm_next], e = st->warm_expert[st->warm_next];
        if (sl_cache_find(st->cache, l, e) >= 0) {
            st->warm_next++;
            continue;
        }
        if ((int)sl_io_outstanding(st->io) + SL_N_PROJ > st->max_reads) return;
        if (!sl_cache_has_free(st->cache)) { /* the cache is full: the preload ends */
            st->warm_n = st->warm_next;
            return;
        }
        const int slot = sl_stream_claim(st, l, e);
        SL_ASSERT(slot >= 0);
        if (sl_stream_submit_reads(st, l, slot, e, true, &ignored)) {
            sl_cache_mark_failed(st->cache, slot);
            sl_cache_unpin(st->cache, slot);
            st->warm_n = st->warm_next;
            return;
        }
        if (st->st.warm_first_ns == 0) st->st.warm_first_ns = sl_now_ns();
        st->pf[slot] = (pf_entry){.layer = l, .expert = e, .reads_left = SL_N_PROJ,
                                  .warm = true};
        st->pf_inflight++;
        st->warm_inflight++;
        st->st.prefetched++;
        st->st.warm_started++;
        st->warm_next++;
    }
}

/* Reads ahead, behind every demand read, up to max of experts ids[0..n)
 * of layer that are neither resident nor on their way. Claims slots only
 * from unpinned ones and stops when none is left or the I/O queue is full.
 * Returns how many it started. */
static int read_ahead(sl_streamer *st, int layer, const int *ids, int n, int max)
{
    /* No filing of completions here: this layer's set is in flight, and a
     * failed read of it must reach the caller through next(). */
    sl_err ignored;
    int started = 0;
    for (int i = 0; i < n && started < max; i++) {
        const int e = ids[i];
        SL_ASSERT(e >= 0 && e < st->n_expert);
        if (sl_cache_find(st->cache, layer, e) >= 0) continue; /* resident or on its way */
        if ((int)sl_io_outstanding(st->io) + SL_N_PROJ > st->max_reads) break;
        const int slot = sl_stream_claim(st, layer, e);
        if (slot < 0) break; /* nothing evictable: the set comes first */
        if (sl_stream_submit_reads(st, layer, slot, e, true, &ignored)) {
            sl_cache_mark_failed(st->cache, slot);
            sl_cache_unpin(st->cache, slot);
            break;
        }
        st->pf[slot] = (pf_entry){.layer = layer, .expert = e, .reads_left = SL_N_PROJ};
        st->pf_inflight++;
        st->st.prefetched++;
        started++;
    }
    return started;
}

static int prefetch_guess(sl_streamer *st, int layer, const int *ids, int n, bool uni)
{
    SL_ASSERT(layer >= 0 && layer < st->n_layer && n <= st->n_expert);
    const uint64_t t0 = sl_now_ns();
    memcpy(st->guess, ids, sizeof(int) * (size_t)n);
    st->guess_n = n;
    st->guess_layer = n > 0 ? layer : -1;
    st->guess_union = uni;
    if ((uni ? st->union_acc : st->guess_acc) < st->guess_min) return 0; /* only scored */
    const int started = read_ahead(st, layer, ids, n, n);
    st->st.manage_ns += sl_now_ns() - t0;
    return started;
}

int sl_streamer_prefetch(sl_streamer *st, int layer, const int *ids, int n)
{
    return prefetch_guess(st, layer, ids, n, false);
}

int sl_streamer_prefetch_union(sl_streamer *st, int layer, const int *ids, int n)
{
    return prefetch_guess(st, layer, ids, n, true);
}

bool sl_streamer_wants_union_guess(sl_streamer *st)
{
    if (!st->guesses) return false;
    return st->union_acc >= st->guess_min || st->union_calls++ % GUESS_PROBE == 0;
}

bool sl_streamer_wants_guess(sl_streamer *st)
{
    if (!st->guesses || st->ng) return false; /* learned guesses replace the router's */
    return st->guess_acc >= st->guess_min || st->guess_calls++ % GUESS_PROBE == 0;
}

int sl_streamer_set_learned_guess(sl_streamer *st, bool on, sl_err *err)
{
    sl_next_guess_free(st->ng);
    st->ng = NULL;
    st->lg_layer = -1;
    if (!on) return SL_OK;
    if (!st->lg) st->lg = malloc(sizeof(int) * LEARNED_CANDIDATES);
    if (!st->lg) return sl_err_set(err, SL_ENOMEM, "out of memory");
    return sl_next_guess_create(&st->ng, st->n_layer, st->n_expert, err);
}

bool sl_streamer_learned_guess(const sl_streamer *st) { return st->ng != NULL; }

void sl_streamer_observe_route(sl_streamer *st, int layer, const int *ids, int n, int k)
{
    if (st->ng) sl_next_guess_observe(st->ng, layer, ids, n, k);
}

int sl_streamer_prefetch_learned(sl_streamer *st, int layer)
{
    if (!st->ng || !st->guesses || layer + 1 >= st->n_layer ||
        st->layers[layer + 1].stride[SL_PROJ_GATE] == 0)
        return 0;
    const uint64_t t0 = sl_now_ns();
    int cand[LEARNED_CANDIDATES];
    const int nc = sl_next_guess_predict(st->ng, layer, cand, LEARNED_CANDIDATES);
    /* not a single token's choice (a batch): nothing guessed, nothing scored */
    if (nc == 0 && !sl_next_guess_has_token(st->ng, layer)) return 0;
    st->lg_n = 0;
    for (int i = 0; i < nc && st->lg_n < LEARNED_READS; i++)
        if (sl_cache_find(st->cache, layer + 1, cand[i]) < 0) st->lg[st->lg_n++] = cand[i];
    st->lg_layer = layer + 1;
    st->st.learned_guessed += (uint64_t)st->lg_n;
    const int started = read_ahead(st, layer + 1, st->lg, st->lg_n, LEARNED_READS);
    st->st.manage_ns += sl_now_ns() - t0;
    return started;
}

int sl_streamer_warm_start(sl_streamer *st, const sl_usage *u, int max_experts)
{
    if (!u || sl_usage_n_layer(u) != st->n_layer || sl_usage_n_expert(u) != st->n_expert)
        return 0;
    int cap = sl_cache_n_slots(st->cache);
    if (max_experts > 0 && max_experts < cap) cap = max_experts;
    free(st->warm_layer);
    free(st->warm_expert);
    st->warm_layer = malloc(sizeof(int) * (size_t)cap);
    st->warm_expert = malloc(sizeof(int) * (size_t)cap);
    st->warm_n = st->warm_next = 0;
    if (!st->warm_layer || !st->warm_expert) return 0;
    const int k = sl_usage_top(u, cap, st->warm_layer, st->warm_expert);
    /* only layers with streamed experts */
    int n = 0;
    for (int i = 0; i < k; i++)
        if (st->layers[st->warm_layer[i]].stride[SL_PROJ_GATE] != 0) {
            st->warm_layer[n] = st->warm_layer[i];
            st->warm_expert[n++] = st->warm_expert[i];
        }
    st->warm_n = n;
    st->st.warm_planned = (uint64_t)n;
    const uint64_t t0 = sl_now_ns();
    sl_ahead_warm_pump(st);
    st->st.manage_ns += sl_now_ns() - t0;
    return n;
}
