/* streamer.c - see streamer.h. */
#include "experts/streamer.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/timer.h"

#define LAT_BINS 320
#define LAT_STEP 1.05 /* bin b holds latencies in [STEP^b, STEP^(b+1)) us */

typedef struct set_entry {
    int expert;
    int slot;
    int reads_left;  /* reads still in flight for this expert */
    bool failed;
    bool pinned;     /* holds a pin the caller has not released */
} set_entry;

struct sl_streamer {
    int n_layer, n_expert;
    sl_expert_layout *layers;
    sl_io *io;
    sl_expert_cache *cache;
    bool overlap;
    FILE *trace;
    uint64_t t_origin;
    uint64_t proj_off[SL_N_PROJ]; /* where each projection's window starts in a slot */
    const void *(*slot_w)[SL_N_PROJ]; /* wanted bytes of each slot's projections */

    /* the current set */
    int layer;
    set_entry *set;    /* (n_expert) */
    int set_n;
    int *entry_of_slot;   /* (n_slots) -> index in set, -1 */
    int *entry_of_expert; /* (n_expert) -> index in set, -1 */
    int *ready;           /* (n_expert) queue of set indices */
    int ready_head, ready_tail;
    int loading;          /* entries with reads in flight */
    sl_io_req *reqs;      /* (3) scratch for one expert's reads */

    sl_streamer_stats st;
    uint32_t lat_hist[LAT_BINS];
};

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* Room a slot keeps for projection p: the largest slice of any layer, as a
 * window at any offset (at most align_up(len) + align bytes). */
static uint64_t proj_cap(const sl_expert_layout *layers, int n_layer, int p, uint32_t align)
{
    uint64_t mx = 0;
    for (int l = 0; l < n_layer; l++)
        if (layers[l].stride[p] > mx) mx = layers[l].stride[p];
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
    if (io.max_inflight == 0) io.max_inflight = (unsigned)(SL_N_PROJ * cfg->n_expert + 16);
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
    if (!st->layers || !st->set || !st->entry_of_slot || !st->entry_of_expert || !st->ready ||
        !st->slot_w || !st->reqs) {
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

static int submit_reads(sl_streamer *st, int slot, int expert, sl_err *err)
{
    const sl_expert_layout *L = &st->layers[st->layer];
    uint8_t *mem = sl_cache_slot_data(st->cache, slot);
    const uint64_t cap = sl_cache_slot_bytes(st->cache);
    for (int p = 0; p < SL_N_PROJ; p++) {
        sl_io_req *r = &st->reqs[p];
        r->file = L->file[p];
        r->offset = L->base[p] + (uint64_t)expert * L->stride[p];
        r->len = L->stride[p];
        r->dst = mem + st->proj_off[p];
        r->dst_cap = (p + 1 < SL_N_PROJ ? st->proj_off[p + 1] : cap) - st->proj_off[p];
        r->tag = (uint64_t)slot * SL_N_PROJ + (uint64_t)p;
    }
    return sl_io_submit_many(st->io, st->reqs, SL_N_PROJ, err);
}

int sl_streamer_begin(sl_streamer *st, int layer, const int *ids, int n, int *taken,
                      sl_err *err)
{
    const uint64_t t0 = sl_now_ns();
    SL_ASSERT(layer >= 0 && layer < st->n_layer && st->loading == 0);
    for (int i = 0; i < st->set_n; i++) SL_ASSERT(!st->set[i].pinned);
    reset_set(st);
    st->layer = layer;
    int rc = SL_OK, i;
    for (i = 0; i < n; i++) {
        const int e = ids[i];
        SL_ASSERT(e >= 0 && e < st->n_expert && st->entry_of_expert[e] < 0);
        int slot = sl_cache_pin(st->cache, layer, e);
        const bool hit = slot >= 0;
        if (!hit) slot = sl_cache_claim(st->cache, layer, e);
        if (slot < 0) break; /* every slot pinned: the caller drains and comes back */
        set_entry *en = &st->set[st->set_n];
        *en = (set_entry){.expert = e, .slot = slot, .reads_left = 0, .failed = false,
                          .pinned = true};
        st->entry_of_slot[slot] = st->set_n;
        st->entry_of_expert[e] = st->set_n;
        st->set_n++;
        if (hit) {
            SL_ASSERT(sl_cache_state(st->cache, slot) == SL_SLOT_READY);
            st->ready[st->ready_tail++] = st->set_n - 1;
            continue;
        }
        if ((rc = submit_reads(st, slot, e, err))) {
            sl_cache_mark_failed(st->cache, slot);
            sl_cache_unpin(st->cache, slot);
            en->pinned = false;
            break;
        }
        en->reads_left = SL_N_PROJ;
        st->loading++;
    }
    *taken = i;
    st->st.manage_ns += sl_now_ns() - t0;
    return rc;
}

static void record_latency(sl_streamer *st, const sl_io_done *d)
{
    const double us = (double)(d->t_end_ns - d->t_submit_ns) / 1e3;
    int b = us < 1.0 ? 0 : (int)(log(us) / log(LAT_STEP));
    if (b >= LAT_BINS) b = LAT_BINS - 1;
    st->lat_hist[b]++;
    if (st->trace) {
        const int proj = (int)(d->tag % SL_N_PROJ);
        fprintf(st->trace,
                "layer=%d expert=%d proj=%s file=%u offset=%" PRIu64 " bytes=%" PRIu64
                " lane=%u submit_us=%.1f start_us=%.1f end_us=%.1f\n",
                st->layer, st->set[st->entry_of_slot[d->tag / SL_N_PROJ]].expert,
                proj == 0 ? "gate" : proj == 1 ? "up" : "down", d->file, d->offset, d->len,
                d->lane, (double)(d->t_submit_ns - st->t_origin) / 1e3,
                (double)(d->t_start_ns - st->t_origin) / 1e3,
                (double)(d->t_end_ns - st->t_origin) / 1e3);
    }
}

/* Waits for one completion (the wait is stall time) and files it. Returns
 * SL_OK, or the read's failure code with err filled. */
static int wait_one(sl_streamer *st, sl_err *err)
{
    sl_io_done d;
    const uint64_t t0 = sl_now_ns();
    int rc = sl_io_wait(st->io, &d, err);
    st->st.stall_ns += sl_now_ns() - t0;
    if (rc) return rc;
    const int slot = (int)(d.tag / SL_N_PROJ), proj = (int)(d.tag % SL_N_PROJ);
    const int ei = st->entry_of_slot[slot];
    SL_ASSERT(ei >= 0);
    set_entry *en = &st->set[ei];
    record_latency(st, &d);
    if (d.status != SL_OK) {
        if (!en->failed) {
            en->failed = true;
            sl_cache_mark_failed(st->cache, slot);
        }
        rc = sl_err_set(err, d.status, "reading expert %d of layer %d failed: %s", en->expert,
                        st->layer, d.err.msg);
    } else {
        st->slot_w[slot][proj] = d.data;
        st->st.reads++;
        st->st.read_bytes += d.len;
        st->st.window_bytes += d.window_bytes;
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

int sl_streamer_next(sl_streamer *st, int *expert, const void *w[SL_N_PROJ], sl_err *err)
{
    for (;;) {
        if (st->loading > 0 && (!st->overlap || st->ready_head == st->ready_tail)) {
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

static double quantile(const uint32_t *hist, uint64_t total, double q)
{
    if (total == 0) return 0.0;
    const uint64_t want = (uint64_t)ceil(q * (double)total);
    uint64_t acc = 0;
    for (int b = 0; b < LAT_BINS; b++) {
        acc += hist[b];
        if (acc >= want) return pow(LAT_STEP, b + 0.5); /* bin centre (log scale) */
    }
    return pow(LAT_STEP, LAT_BINS);
}

void sl_streamer_get_stats(const sl_streamer *st, sl_streamer_stats *out)
{
    *out = st->st;
    sl_cache_get_stats(st->cache, &out->cache);
    uint64_t total = 0;
    for (int b = 0; b < LAT_BINS; b++) total += st->lat_hist[b];
    out->lat_p50_us = quantile(st->lat_hist, total, 0.50);
    out->lat_p90_us = quantile(st->lat_hist, total, 0.90);
    out->lat_p99_us = quantile(st->lat_hist, total, 0.99);
}
