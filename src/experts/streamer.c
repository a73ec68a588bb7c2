/* streamer.c - the streamer's demand protocol (streamer.h): a layer's set
 * of experts, the reads it waits for, the cache's slots, read latency and
 * the drive calibration. Read-ahead is streamer_ahead.c's. */
#include "experts/streamer_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/timer.h"

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* Bytes read for projection p of one expert of layer L. */
static uint64_t slice_len(const sl_expert_layout *L, int p)
{
    return L->len[p] ? L->len[p] : L->stride[p];
}

/* Room a slot keeps for projection p: the largest slice of any layer, as a
 * window at any offset (at most align_up(len) + align bytes). */
static uint64_t proj_cap(const sl_expert_layout *layers, int n_layer, int p, uint32_t align)
{
    uint64_t mx = 0;
    for (int l = 0; l < n_layer; l++)
        if (slice_len(&layers[l], p) > mx) mx = slice_len(&layers[l], p);
    return align_up(mx, align) + align;
}

uint64_t sl_streamer_slot_bytes(const sl_expert_layout *layers, int n_layer, uint32_t align)
{
    uint64_t total = 0;
    for (int p = 0; p < SL_N_PROJ; p++) total += proj_cap(layers, n_layer, p, align);
    return total;
}

int sl_streamer_create(sl_streamer **out, const sl_streamer_config *cfg, sl_err *err)
{
    *out = NULL;
    if (cfg->n_slots < 1 || cfg->n_layer < 1 || cfg->n_expert < 1)
        return sl_err_set(err, SL_EINVAL, "expert streamer needs at least one slot, layer and "
                          "expert (got %d, %d, %d)", cfg->n_slots, cfg->n_layer, cfg->n_expert);
    sl_streamer *st = calloc(1, sizeof *st);
    if (!st) return sl_err_set(err, SL_ENOMEM, "out of memory");
    st->n_layer = cfg->n_layer;
    st->n_expert = cfg->n_expert;
    st->overlap = cfg->overlap;
    st->trace = cfg->trace;
    st->t_origin = sl_now_ns();
    int rc;
    sl_io_config io = cfg->io;
    /* a whole set plus a layer's worth of prefetches, and the preload */
    if (io.max_inflight == 0)
        io.max_inflight = (unsigned)(SL_N_PROJ * (2 * cfg->n_expert + WARM_INFLIGHT) + 16);
    st->max_reads = (int)io.max_inflight;
    if ((rc = sl_io_open(&st->io, &io, cfg->paths, cfg->n_paths, err))) goto fail;
    const sl_io_info *info = sl_io_get_info(st->io);
    const uint32_t align = info->align > info->mem_align ? info->align : info->mem_align;

    st->layers = malloc(sizeof *st->layers * (size_t)cfg->n_layer);
    st->set = calloc((size_t)cfg->n_expert, sizeof *st->set);
    st->entry_of_slot = malloc(sizeof(int) * (size_t)cfg->n_slots);
    st->entry_of_expert = malloc(sizeof(int) * (size_t)cfg->n_expert);
    st->ready = malloc(sizeof(int) * (size_t)cfg->n_expert);
    st->slot_w = calloc((size_t)cfg->n_slots, sizeof *st->slot_w);
    st->reqs = calloc(SL_N_PROJ, sizeof *st->reqs);
    st->pf = calloc((size_t)cfg->n_slots, sizeof *st->pf);
    st->pf_unused = calloc((size_t)cfg->n_slots, sizeof *st->pf_unused);
    st->guess = calloc((size_t)cfg->n_expert, sizeof *st->guess);
    st->want = calloc((size_t)cfg->n_expert, sizeof *st->want);
    st->guess_layer = -1;
    st->lg_layer = -1;
    st->guess_acc = GUESS_START;
    /* unions start trusted: a micro-batch's union is mostly right, its
     * reads wait behind every demand read, and a prefill has few layers'
     * worth of calls to open a closed gate with */
    st->union_acc = UNION_START;
    st->guess_min = cfg->prefetch_min_right != 0.0 ? cfg->prefetch_min_right : GUESS_MIN;
    st->guesses = cfg->guesses;
    if (!st->layers || !st->set || !st->entry_of_slot || !st->entry_of_expert || !st->ready ||
        !st->slot_w || !st->reqs || !st->pf || !st->pf_unused || !st->guess ||
        !st->want) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(st->layers, cfg->layers, sizeof *st->layers * (size_t)cfg->n_layer);
    for (int i = 0; i < cfg->n_slots; i++) st->entry_of_slot[i] = -1;
    for (int i = 0; i < cfg->n_expert; i++) st->entry_of_expert[i] = -1;

    uint64_t off = 0;
    for (int p = 0; p < SL_N_PROJ; p++) {
        st->proj_off[p] = off;
        off += proj_cap(cfg->layers, cfg->n_layer, p, align);
    }
    sl_cache_policy pol;
    if ((rc = sl_policy_lru_create(&pol, cfg->n_slots, err))) goto fail;
    if ((rc = sl_cache_create(&st->cache, cfg->n_slots, (size_t)off, align, cfg->n_layer,
                              cfg->n_expert, pol, err)))
        goto fail;
    *out = st;
    return SL_OK;
fail:
    sl_streamer_free(st);
    return rc;
}

void sl_streamer_free(sl_streamer *st)
{
    if (!st) return;
    sl_io_close(st->io); /* before the cache: lanes may still write into slots */
    sl_cache_free(st->cache);
    free(st->layers);
    free(st->set);
    free(st->entry_of_slot);
    free(st->entry_of_expert);
    free(st->ready);
    free(st->slot_w);
    free(st->reqs);
    free(st->pf);
    free(st->pf_unused);
    free(st->guess);
    sl_next_guess_free(st->ng);
    free(st->lg);
    free(st->warm_layer);
    free(st->warm_expert);
    free(st->want);
    free(st);
}

const sl_io_info *sl_streamer_io_info(const sl_streamer *st) { return sl_io_get_info(st->io); }
int sl_streamer_n_slots(const sl_streamer *st) { return sl_cache_n_slots(st->cache); }

uint64_t sl_streamer_cache_bytes(const sl_streamer *st)
{
    return (uint64_t)sl_cache_n_slots(st->cache) * sl_cache_slot_bytes(st->cache);
}

static void reset_set(sl_streamer *st)
{
    for (int i = 0; i < st->set_n; i++) {
        st->entry_of_slot[st->set[i].slot] = -1;
        st->entry_of_expert[st->set[i].expert] = -1;
    }
    st->set_n = 0;
    st->ready_head = st->ready_tail = 0;
    st->loading = 0;
}

/* The read of projection p of (layer, expert) into its place in slot. */
static void make_req(sl_streamer *st, int layer, int slot, int expert, int p, sl_io_req *r)
{
    const sl_expert_layout *L = &st->layers[layer];
    uint8_t *mem = sl_cache_slot_data(st->cache, slot);
    const uint64_t cap = sl_cache_slot_bytes(st->cache);
    r->file = L->file[p];
    r->offset = L->base[p] + (uint64_t)expert * L->stride[p];
    r->len = slice_len(L, p);
    r->dst = mem + st->proj_off[p];
    r->dst_cap = (p + 1 < SL_N_PROJ ? st->proj_off[p + 1] : cap) - st->proj_off[p];
    r->tag = (uint64_t)slot * SL_N_PROJ + (uint64_t)p;
    r->ahead = false;
}

/* The three reads of an expert; ahead: queued behind every demand read
 * (a guess or a preload), see sl_io_promote. */
int sl_stream_submit_reads(sl_streamer *st, int layer, int slot, int expert, bool ahead,
                        sl_err *err)
{
    for (int p = 0; p < SL_N_PROJ; p++) {
        make_req(st, layer, slot, expert, p, &st->reqs[p]);
        st->reqs[p].ahead = ahead;
    }
    return sl_io_submit_many(st->io, st->reqs, SL_N_PROJ, err);
}

/* The histogram bin of a latency of ns nanoseconds. */
static int lat_bin(uint64_t ns)
{
    const double us = (double)ns / 1e3;
    const int b = us < 1.0 ? 0 : (int)(log(us) / log(LAT_STEP));
    return b >= LAT_BINS ? LAT_BINS - 1 : b;
}

static void record_latency(sl_streamer *st, const sl_io_done *d, int layer, int expert)
{
    st->lat_hist[lat_bin(d->t_end_ns - d->t_submit_ns)]++;
    /* a read that failed before its lane started it has no start time */
    const uint64_t start = d->t_start_ns >= d->t_submit_ns && d->t_start_ns <= d->t_end_ns
                               ? d->t_start_ns : d->t_end_ns;
    st->queue_hist[lat_bin(start - d->t_submit_ns)]++;
    st->drive_hist[lat_bin(d->t_end_ns - start)]++;
    st->drive_ns += d->t_end_ns - start;
    if (st->trace) {
        const int proj = (int)(d->tag % SL_N_PROJ);
        fprintf(st->trace,
                "layer=%d expert=%d proj=%s file=%u offset=%" PRIu64 " bytes=%" PRIu64
                " lane=%u submit_us=%.1f start_us=%.1f end_us=%.1f\n",
                layer, expert, proj == 0 ? "gate" : proj == 1 ? "up" : "down", d->file,
                d->offset, d->len, d->lane, (double)(d->t_submit_ns - st->t_origin) / 1e3,
                (double)(d->t_start_ns - st->t_origin) / 1e3,
                (double)(d->t_end_ns - st->t_origin) / 1e3);
    }
}

static void count_read(sl_streamer *st, int slot, const sl_io_done *d)
{
    st->slot_w[slot][d->tag % SL_N_PROJ] = d->data;
    st->st.reads++;
    st->st.read_bytes += d->len;
    st->st.window_bytes += d->window_bytes;
}

/* A prefetch read landed. A failure only drops the expert from the cache:
 * if a set needs it later, it is read again then. */
static void prefetch_done(sl_streamer *st, int slot, const sl_io_done *d)
{
    pf_entry *pf = &st->pf[slot];
    SL_ASSERT(pf->reads_left > 0);
    if (d->cancelled) pf->cancelled = true;
    else record_latency(st, d, pf->layer, pf->expert);
    if (d->status != SL_OK) pf->failed = true;
    else count_read(st, slot, d);
    if (pf->warm && d->status == SL_OK) {
        st->st.warm_bytes += d->window_bytes;
        if (d->t_end_ns > st->st.warm_last_ns) st->st.warm_last_ns = d->t_end_ns;
    }
    if (--pf->reads_left > 0) return;
    st->pf_inflight--;
    if (pf->warm) st->warm_inflight--;
    if (pf->failed) {
        sl_cache_mark_failed(st->cache, slot);
        if (pf->cancelled) st->st.prefetch_dropped++;
        else st->st.prefetch_failed++;
    } else {
        sl_cache_mark_ready(st->cache, slot);
        st->pf_unused[slot] = true;
        if (pf->warm) st->st.warm_loaded++;
    }
    sl_cache_unpin(st->cache, slot);
}

/* Files one completion under its set entry or prefetch. Returns SL_OK, or
 * a set read's failure code with err filled: the caller must pass it on,
 * since a failed set entry is never handed out (so only next() and begin()
 * file completions while a set's reads are in flight). */
static int file_done(sl_streamer *st, const sl_io_done *d, sl_err *err)
{
    const int slot = (int)(d->tag / SL_N_PROJ);
    const int ei = st->entry_of_slot[slot];
    if (ei < 0) {
        prefetch_done(st, slot, d);
        return SL_OK;
    }
    set_entry *en = &st->set[ei];
    record_latency(st, d, st->layer, en->expert);
    int rc = SL_OK;
    if (d->status != SL_OK && en->adopted && !en->failed) {
        /* a prefetch read that failed after its set took it over: the set
         * had not asked for it yet when it was issued, so ask once more */
        en->adopted = false;
        sl_io_req r;
        make_req(st, st->layer, slot, en->expert, (int)(d->tag % SL_N_PROJ), &r);
        st->st.prefetch_failed++;
        if (sl_io_submit(st->io, &r, err) == SL_OK) return SL_OK;
    }
    if (d->status != SL_OK) {
        if (!en->failed) {
            en->failed = true;
            sl_cache_mark_failed(st->cache, slot);
        }
        rc = sl_err_set(err, d->status, "reading expert %d of layer %d failed: %s", en->expert,
                        st->layer, d->err.msg);
    } else {
        count_read(st, slot, d);
    }
    if (--en->reads_left == 0) {
        st->loading--;
        if (en->failed) {
            sl_cache_unpin(st->cache, slot);
            en->pinned = false;
        } else {
            sl_cache_mark_ready(st->cache, slot);
            st->ready[st->ready_tail++] = ei;
        }
    }
    return rc;
}

/* Waits for one completion (the wait is stall time) and files it. While
 * demand reads are queued and none has landed, the compute thread reads
 * one itself instead of waiting for a lane thread to be scheduled (on a
 * busy CPU, reads queued over 10 ms found half the lanes idle). */
static int wait_one(sl_streamer *st, sl_err *err)
{
    sl_io_done d;
    const uint64_t t0 = sl_now_ns();
    int rc = sl_io_wait_reading(st->io, &d, err);
    st->st.stall_ns += sl_now_ns() - t0;
    return rc ? rc : file_done(st, &d, err);
}

/* Files the prefetch completions that are there, without waiting. Only
 * between sets: no read of a set may be in flight (its error would be
 * lost here). */
static void file_landed_prefetches(sl_streamer *st)
{
    SL_ASSERT(st->loading == 0);
    sl_io_done d;
    sl_err unused;
    while (sl_io_poll(st->io, &d) == 1) {
        const int rc = file_done(st, &d, &unused); /* a prefetch's: never fails */
        SL_ASSERT(rc == SL_OK);
    }
}

/* sl_cache_claim, counting a slot that a prefetch filled and no set used as
 * wasted when it is evicted. -1 when every slot is pinned. */
int sl_stream_claim(sl_streamer *st, int layer, int expert)
{
    const int slot = sl_cache_claim(st->cache, layer, expert);
    if (slot >= 0) {
        if (st->pf_unused[slot]) st->st.prefetch_wasted++;
        st->pf_unused[slot] = false;
    }
    return slot;
}

/* A slot for a miss of the set: a free or evictable one; while every slot
 * is pinned and prefetches hold some, waits for those to land. */
static int claim_slot(sl_streamer *st, int layer, int expert, sl_err *err, int *rc)
{
    for (;;) {
        const int slot = sl_stream_claim(st, layer, expert);
        if (slot >= 0 || st->pf_inflight == 0) return slot;
        if ((*rc = wait_one(st, err))) return -1;
    }
}




int sl_streamer_begin(sl_streamer *st, int layer, const int *ids, int n, int *taken,
                      sl_err *err)
{
    const uint64_t t0 = sl_now_ns();
    SL_ASSERT(layer >= 0 && layer < st->n_layer && st->loading == 0);
    for (int i = 0; i < st->set_n; i++) SL_ASSERT(!st->set[i].pinned);
    reset_set(st);
    st->layer = layer;
    const bool lg_score = sl_ahead_score(st, layer, ids, n);
    file_landed_prefetches(st);
    int rc = SL_OK, i;
    for (i = 0; !rc && i < n; i++) {
        const int e = ids[i];
        SL_ASSERT(e >= 0 && e < st->n_expert && st->entry_of_expert[e] < 0);
        /* a prefetch of it that failed: let it finish, then read it afresh */
        const int s0 = sl_cache_find(st->cache, layer, e);
        while (!rc && s0 >= 0 && st->pf[s0].reads_left > 0 && st->pf[s0].failed)
            rc = wait_one(st, err);
        if (rc) break;
        int slot = sl_cache_pin(st->cache, layer, e);
        const bool hit = slot >= 0;
        if (!hit) slot = claim_slot(st, layer, e, err, &rc);
        if (slot < 0) break; /* every slot pinned: the caller drains and comes back */
        set_entry *en = &st->set[st->set_n];
        *en = (set_entry){.expert = e, .slot = slot, .reads_left = 0, .failed = false,
                          .pinned = true};
        st->entry_of_slot[slot] = st->set_n;
        st->entry_of_expert[e] = st->set_n;
        st->set_n++;
        if (hit && st->pf[slot].reads_left > 0) {
            /* prefetched and still in flight: its reads now belong to the
             * set (file_done finds the set entry first), its pin goes; the
             * ones still queued behind demand reads become demand reads */
            for (int p = 0; p < SL_N_PROJ; p++)
                sl_io_promote(st->io, (uint64_t)slot * SL_N_PROJ + (uint64_t)p);
            if (st->pf[slot].warm) {
                st->warm_inflight--;
                st->st.warm_used++;
            }
            en->reads_left = st->pf[slot].reads_left;
            en->adopted = true;
            st->pf[slot].reads_left = 0;
            st->pf_inflight--;
            sl_cache_unpin(st->cache, slot);
            st->loading++;
            st->st.prefetch_used++;
            continue;
        }
        if (hit) {
            SL_ASSERT(sl_cache_state(st->cache, slot) == SL_SLOT_READY);
            if (st->pf_unused[slot]) {
                st->st.prefetch_used++;
                if (st->pf[slot].warm) st->st.warm_used++;
            }
            st->pf_unused[slot] = false;
            st->ready[st->ready_tail++] = st->set_n - 1;
            continue;
        }
        if ((rc = sl_stream_submit_reads(st, layer, slot, e, false, err))) {
            sl_cache_mark_failed(st->cache, slot);
            sl_cache_unpin(st->cache, slot);
            en->pinned = false;
            break;
        }
        if (lg_score) st->st.learned_set_misses++;
        en->reads_left = SL_N_PROJ;
        st->loading++;
    }
    *taken = i;
    if (!rc) {
        sl_ahead_drop_late(st, layer, ids, n);
        sl_ahead_warm_pump(st);
    }
    st->st.manage_ns += sl_now_ns() - t0;
    return rc;
}



int sl_streamer_next(sl_streamer *st, int *expert, const void *w[SL_N_PROJ], sl_err *err)
{
    for (;;) {
        if (st->loading > 0 && (!st->overlap || st->ready_head == st->ready_tail)) {
            /* the set's misses are all submitted: the preload may take the
             * slots still free (its reads queue behind the set's) */
            if (st->warm_next < st->warm_n && st->warm_inflight * 2 < sl_ahead_warm_limit(st)) {
                const uint64_t t0 = sl_now_ns();
                sl_ahead_warm_pump(st);
                st->st.manage_ns += sl_now_ns() - t0;
            }
            int rc = wait_one(st, err);
            if (rc) return rc;
            continue;
        }
        if (st->ready_head == st->ready_tail) return 0;
        const set_entry *en = &st->set[st->ready[st->ready_head++]];
        *expert = en->expert;
        for (int p = 0; p < SL_N_PROJ; p++) w[p] = st->slot_w[en->slot][p];
        return 1;
    }
}





int sl_streamer_ready(const sl_streamer *st)
{
    /* without overlap next() first waits for every read of the set */
    if (st->loading > 0 && !st->overlap) return 0;
    return st->ready_tail - st->ready_head;
}

void sl_streamer_release(sl_streamer *st, int expert)
{
    const int ei = st->entry_of_expert[expert];
    SL_ASSERT(ei >= 0 && st->set[ei].pinned);
    sl_cache_unpin(st->cache, st->set[ei].slot);
    st->set[ei].pinned = false;
}

void sl_streamer_abort(sl_streamer *st)
{
    while (st->loading > 0) {
        sl_err ignored;
        wait_one(st, &ignored);
    }
    for (int i = 0; i < st->set_n; i++)
        if (st->set[i].pinned) {
            sl_cache_unpin(st->cache, st->set[i].slot);
            st->set[i].pinned = false;
        }
    reset_set(st);
}

/* The q-quantile of hist less base (NULL: nothing), in microseconds. */
static double quantile(const uint32_t *hist, const uint32_t *base, double q)
{
    uint64_t total = 0;
    for (int b = 0; b < LAT_BINS; b++) total += hist[b] - (base ? base[b] : 0);
    if (total == 0) return 0.0;
    const uint64_t want = (uint64_t)ceil(q * (double)total);
    uint64_t acc = 0;
    for (int b = 0; b < LAT_BINS; b++) {
        acc += hist[b] - (base ? base[b] : 0);
        if (acc >= want) return pow(LAT_STEP, b + 0.5); /* bin centre (log scale) */
    }
    return pow(LAT_STEP, LAT_BINS);
}

void sl_streamer_mark(sl_streamer *st)
{
    memcpy(st->queue_mark, st->queue_hist, sizeof st->queue_mark);
    memcpy(st->drive_mark, st->drive_hist, sizeof st->drive_mark);
    st->drive_ns_mark = st->drive_ns;
    st->t_mark = sl_now_ns();
}

void sl_streamer_get_stats(const sl_streamer *st, sl_streamer_stats *out)
{
    *out = st->st;
    sl_cache_get_stats(st->cache, &out->cache);
    out->lat_p50_us = quantile(st->lat_hist, NULL, 0.50);
    out->lat_p90_us = quantile(st->lat_hist, NULL, 0.90);
    out->lat_p99_us = quantile(st->lat_hist, NULL, 0.99);
    if (!st->t_mark) return;
    for (int b = 0; b < LAT_BINS; b++) out->mark_reads += st->drive_hist[b] - st->drive_mark[b];
    out->mark_queue_p50_us = quantile(st->queue_hist, st->queue_mark, 0.50);
    out->mark_queue_p90_us = quantile(st->queue_hist, st->queue_mark, 0.90);
    out->mark_queue_p99_us = quantile(st->queue_hist, st->queue_mark, 0.99);
    out->mark_drive_p50_us = quantile(st->drive_hist, st->drive_mark, 0.50);
    out->mark_drive_p90_us = quantile(st->drive_hist, st->drive_mark, 0.90);
    out->mark_drive_p99_us = quantile(st->drive_hist, st->drive_mark, 0.99);
    const uint64_t span = sl_now_ns() - st->t_mark;
    const unsigned lanes = sl_io_get_info(st->io)->lanes;
    if (span > 0 && lanes > 0)
        out->mark_lanes_busy = (double)(st->drive_ns - st->drive_ns_mark) /
                               ((double)span * (double)lanes);
}

int sl_streamer_set_policy(sl_streamer *st, const char *name, sl_err *err)
{
    sl_cache_policy p;
    int rc = sl_policy_create(&p, name, sl_cache_n_slots(st->cache), st->n_layer, st->n_expert,
                              err);
    if (rc) return rc;
    return sl_cache_set_policy(st->cache, p, err);
}

const char *sl_streamer_policy_name(const sl_streamer *st)
{
    return sl_cache_policy_name(st->cache);
}

void sl_streamer_replaying(sl_streamer *st, bool on)
{
    /* the model's own router knows nothing of a replayed trace; learned
     * guesses only when asked to read guesses ahead always (--prefetch):
     * on the shared test machine they measured slower than none
     * (docs/perf-log.md, issue 14 session 7) */
    if (on && st->guesses && st->guess_min < 0) {
        sl_err ignored;
        sl_streamer_set_learned_guess(st, true, &ignored); /* out of memory: no guesses */
    }
}

bool sl_streamer_has(const sl_streamer *st, int layer, int expert)
{
    return sl_cache_find(st->cache, layer, expert) >= 0;
}




/* The k-th expert the calibration reads: spread over the routed layers and
 * experts as a token's misses are, each (layer, expert) once before any
 * repeats (37 is prime, so the experts' walk covers all of them). */
static void cal_expert(const sl_streamer *st, const int *routed, int nr, int k, int *layer,
                       int *expert)
{
    *layer = routed[k % nr];
    *expert = (int)(((long long)(k / nr) * 37 + 11) % st->n_expert);
}

int sl_streamer_calibrate(sl_streamer *st, uint64_t min_bytes, double max_s,
                          double *bytes_per_s, sl_err *err)
{
    *bytes_per_s = 0;
    if (sl_io_outstanding(st->io) != 0 || st->set_n != 0)
        return sl_err_set(err, SL_EINVAL, "the drive calibration runs only before any expert "
                          "is read (reads are in flight)");
    const int ns = sl_cache_n_slots(st->cache);
    const unsigned lanes = sl_io_get_info(st->io)->lanes;
    /* enough experts in flight that no lane waits for the next submit */
    int cap = (int)(CAL_PER_LANE * (lanes > 0 ? lanes : 1));
    if (cap * SL_N_PROJ > st->max_reads) cap = st->max_reads / SL_N_PROJ;
    int *slots = malloc(sizeof(int) * (size_t)(cap > 0 ? cap : 1));
    int *left = calloc((size_t)ns, sizeof(int)); /* reads in flight, by slot */
    int *routed = malloc(sizeof(int) * (size_t)st->n_layer);
    if (!slots || !left || !routed) {
        free(slots);
        free(left);
        free(routed);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    int nr = 0, n = 0;
    for (int l = 0; l < st->n_layer; l++)
        if (st->layers[l].stride[SL_PROJ_GATE] != 0) routed[nr++] = l;
    for (int s = 0; s < ns && n < cap; s++)
        if (sl_cache_state(st->cache, s) == SL_SLOT_FREE && sl_cache_pins(st->cache, s) == 0)
            slots[n++] = s;
    /* every streamed expert once at most: a small model ends early */
    const long long most = (long long)nr * st->n_expert;
    const uint64_t t0 = sl_now_ns(), max_ns = (uint64_t)(max_s * 1e9);
    int rc = SL_OK, outstanding = 0, k = 0;
    for (int i = 0; i < n && nr > 0 && !rc && k < most; i++) {
        int l, e;
        cal_expert(st, routed, nr, k++, &l, &e);
        rc = sl_stream_submit_reads(st, l, slots[i], e, false, err);
        if (!rc) {
            outstanding += SL_N_PROJ;
            left[slots[i]] = SL_N_PROJ;
        }
    }
    uint64_t bytes = 0, first = UINT64_MAX, last = 0;
    while (outstanding > 0) {
        sl_io_done d;
        sl_err werr;
        if (sl_io_wait(st->io, &d, &werr)) {
            if (!rc) rc = sl_err_set(err, werr.code, "drive calibration: %s", werr.msg);
            break;
        }
        outstanding--;
        const int slot = (int)(d.tag / SL_N_PROJ);
        if (d.status != SL_OK) {
            if (!rc) rc = sl_err_set(err, d.status, "drive calibration: %s", d.err.msg);
        } else {
            bytes += d.window_bytes;
            if (d.t_submit_ns < first) first = d.t_submit_ns;
            if (d.t_end_ns > last) last = d.t_end_ns;
        }
        /* the slot's expert is in: read the next one into it while the
         * bytes and the time allow, keeping every lane busy */
        if (--left[slot] == 0 && !rc && bytes < min_bytes && k < most &&
            sl_now_ns() - t0 < max_ns) {
            int l, e;
            cal_expert(st, routed, nr, k++, &l, &e);
            if (!(rc = sl_stream_submit_reads(st, l, slot, e, false, err))) {
                outstanding += SL_N_PROJ;
                left[slot] = SL_N_PROJ;
            }
        }
    }
    free(slots);
    free(left);
    free(routed);
    if (rc) return rc;
    if (bytes == 0 || last <= first)
        return sl_err_set(err, SL_EINVAL, "drive calibration read nothing (%d free slots, %d "
                          "layers with streamed experts)", n, nr);
    *bytes_per_s = (double)bytes / ((double)(last - first) * 1e-9);
    st->st.drive_bps = *bytes_per_s;
    st->st.drive_cal_bytes = bytes;
    st->st.drive_cal_lanes = lanes;
    return SL_OK;
}

void sl_streamer_set_drive_rate(sl_streamer *st, double bytes_per_s)
{
    SL_ASSERT(bytes_per_s > 0);
    st->st.drive_bps = bytes_per_s;
    st->st.drive_cal_bytes = 0;
    st->st.drive_cached = true;
}
