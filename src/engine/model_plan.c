/* model_plan.c - deciding what stays in RAM, and starting the expert
 * streamer when routed experts must come from the file.
 *
 * The plan: budget = --mem-budget, or available memory (cgroup limits
 * honoured) minus a margin. Dense weights, the KV cache of the hinted
 * context and a scratch allowance are subtracted; what remains is the
 * expert cache. Streaming turns on by itself when the whole model does not
 * fit the budget. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_rows.h"
#include "engine/model_runtime.h"
#include "engine/session_layout.h"
#include "experts/route_trace.h"
#include "experts/streamer.h"
#include "util/checked.h"
#include "util/file.h"
#include "util/out_file.h"
#include "util/mem.h"
#include "util/pool.h"

#define MIB (1024.0 * 1024.0)
#define OTHER_BYTES (64ull << 20) /* thread stacks, tokenizer tables, allocator slack */
#define PLAN_BATCH 512             /* sessions' default micro-batch */
#define PLAN_ALIGN 4096u                 /* direct-I/O alignment assumed when planning */
/* Streamed experts' read lanes when the caller names none: the issue-33
 * drive served 5442 MiB/s on 2 lanes, 6571 on 4 and 7233 on 8, and a
 * layer's burst of misses is 8-24 reads, so 8 keep it busy. */
#define STREAM_LANES 8

static void build_layouts(const sl_model *m, sl_expert_layout *out)
{
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        const sl_tensor *t[SL_N_PROJ] = {&L->gate_exps, &L->up_exps, &L->down_exps};
        memset(&out[il], 0, sizeof out[il]);
        if (L->d.ffn.kind != SL_FFN_ROUTED) continue;
        for (int p = 0; p < SL_N_PROJ; p++) {
            /* a view (fused gate/up) reads its own rows of each fused expert */
            const uint64_t own = t[p]->nbytes / t[p]->ne[2];
            out[il].file[p] = t[p]->info->file_index;
            out[il].base[p] = t[p]->info->offset + (t[p]->view_of ? t[p]->view_offset : 0);
            out[il].stride[p] = t[p]->view_of && t[p]->expert_bytes ? t[p]->expert_bytes
                                : t[p]->info->nbytes / t[p]->info->ne[2];
            out[il].len[p] = own;
        }
    }
}

static int n_moe_layers(const sl_model *m)
{
    int n = 0;
    for (int il = 0; il < m->hp.n_layer; il++) n += m->layers[il].d.ffn.kind == SL_FFN_ROUTED;
    return n;
}

/* One token's expert cycle: top-k experts (gate + up + down) of every MoE
 * layer, summed per layer since quant mixes differ between layers. */
static uint64_t cycle_bytes(const sl_model *m)
{
    uint64_t total = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        if (L->d.ffn.kind != SL_FFN_ROUTED) continue;
        /* a fused gate/up's views count half of it each, not all of it twice */
        const uint64_t one = (L->gate_exps.nbytes + L->up_exps.nbytes + L->down_exps.nbytes) /
                             (uint64_t)m->hp.n_expert;
        total += (uint64_t)m->hp.n_expert_used * one;
    }
    return total;
}

/* The smallest expert cache a streamed model runs with: one layer's top-k
 * in slots (0 when nothing would stream). */
static uint64_t min_cache_bytes(const sl_model *m, const sl_model_params *p, int moe_layers)
{
    if (moe_layers == 0 || p->stream == SL_STREAM_OFF) return 0;
    sl_expert_layout *lay = malloc(sizeof *lay * (size_t)m->hp.n_layer);
    if (!lay) return 0;
    build_layouts(m, lay);
    const uint64_t slot = sl_streamer_slot_bytes(lay, m->hp.n_layer, PLAN_ALIGN);
    free(lay);
    return slot * (uint64_t)m->hp.n_expert_used;
}

/* KV bytes of a context of ctx positions with the plan's session dims d
 * (sliding-window rings as sessions store them); UINT64_MAX on overflow. */
static uint64_t kv_at(const sl_model *m, const sl_session_dims *d, int ctx)
{
    uint64_t b;
    return sl_session_kv_bytes_at(m, d->type_k, d->type_v, ctx, d->n_batch, !d->swa_full, &b)
               ? b : UINT64_MAX;
}

/* Refuses, up front, a context whose KV cache the budget cannot hold
 * beside the dense weights, the session's scratch and the smallest expert
 * cache, with the numbers and the largest context that fits (found by
 * bisection: with rings the KV bytes grow by the full layers' rows only,
 * past a constant). When even a one-token context does not fit, the
 * budget is the problem: the checks after this one say so. */
static int check_context(const sl_model *m, const sl_model_params *p, const sl_session_dims *d,
                         const sl_session_layout *sess, int ctx, int moe_layers, sl_err *err)
{
    const uint64_t budget = m->rt->budget_bytes;
    if (budget == UINT64_MAX || ctx <= 0) return SL_OK;
    /* what one more position costs at this context (every layer's row when
     * nothing is a ring) */
    const uint64_t below = ctx > 1 ? kv_at(m, d, ctx - 1) : 0;
    const uint64_t per_token = below <= sess->kv_bytes ? sess->kv_bytes - below : 0;
    const uint64_t base = m->dense_bytes + sess->scratch_bytes + OTHER_BYTES +
                          min_cache_bytes(m, p, moe_layers) + p->drafter_bytes;
    if (base + sess->kv_bytes <= budget || base + kv_at(m, d, 1) > budget || per_token == 0)
        return SL_OK;
    int lo = 1, hi = ctx; /* kv_at(lo) fits, kv_at(hi) does not */
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        const uint64_t kv = kv_at(m, d, mid);
        if (kv != UINT64_MAX && base + kv <= budget) lo = mid;
        else hi = mid;
    }
    return sl_err_set(err, SL_ENOMEM,
                      "a context of %d tokens needs %.0f MiB of KV cache (%llu bytes per token: "
                      "K %s, V %s), and with the dense weights (%.0f MiB), scratch (%.0f MiB)%s%s, "
                      "that exceeds the memory budget of %.0f MiB: the largest -c that fits is "
                      "%d (or quantise the cache with -ctk q8_0 -ctv q8_0, or raise "
                      "--mem-budget)", ctx, (double)sess->kv_bytes / MIB,
                      (unsigned long long)per_token, sl_kv_type_name(p->cache_type_k),
                      sl_kv_type_name(p->cache_type_v), (double)m->dense_bytes / MIB,
                      (double)(sess->scratch_bytes + OTHER_BYTES) / MIB,
                      min_cache_bytes(m, p, moe_layers) ? " and the smallest expert cache" : "",
                      p->drafter_bytes ? " and the drafter" : "", (double)budget / MIB, lo);
}

/* The caller's cache (sl_model_params.host_cache_bytes / _seqs): as
 * given, or sized like the planned context's state (KV rows of ctx
 * positions and host_cache_seqs recurrent states), a quarter of what the
 * budget leaves besides fixed when the whole model would not fit with it. */
static uint64_t host_cache(const sl_model *m, const sl_model_params *p, const sl_session_dims *d,
                           int ctx, uint64_t fixed, uint64_t budget)
{
    if (p->host_cache_bytes > 0 || p->host_cache_seqs <= 0) return p->host_cache_bytes;
    uint64_t rows[2] = {0, 0}, per_seq = 0, want = kv_at(m, d, ctx);
    sl_session_state_bytes(m, d->type_k, d->type_v, rows, &per_seq);
    if (want == UINT64_MAX || !sl_add_u64(want, 2 * per_seq * (uint64_t)p->host_cache_seqs, &want))
        want = UINT64_MAX;
    if (budget == UINT64_MAX) return want == UINT64_MAX ? 0 : want;
    uint64_t whole;
    if (sl_add_u64(fixed, m->expert_bytes, &whole) && sl_add_u64(whole, want, &whole) &&
        whole <= budget)
        return want;
    const uint64_t quarter = budget > fixed ? (budget - fixed) / 4 : 0;
    return want < quarter ? want : quarter;
}

int sl_model_plan(sl_model *m, const sl_model_params *pp, sl_err *err)
{
    sl_model_params p = pp ? *pp : sl_model_default_params();
    const sl_hparams *hp = &m->hp;
    const int moe_layers = n_moe_layers(m);

    uint64_t budget = p.mem_budget;
    if (budget == 0) {
        uint64_t avail, limit;
        if (sl_mem_available(&avail, &limit)) {
            budget = sl_mem_default_budget(avail);
        } else {
            budget = UINT64_MAX; /* unknown: plan as if everything fits */
        }
    }
    m->rt->budget_bytes = budget;
    m->rt->swa_full = p.swa_full;
    /* sessions that do not choose their cache types take the load's */
    m->rt->cache_type_k = p.cache_type_k;
    m->rt->cache_type_v = p.cache_type_v;
    const int ctx = p.n_ctx_hint > 0 ? p.n_ctx_hint : 4096;
    /* a session of the default micro-batch, keeping every token's logits
     * if the caller says so (perplexity): laid out exactly as
     * sl_session_create will lay it out */
    const int threads = m->rt->n_threads > 0 ? m->rt->n_threads : sl_cpu_core_count();
    const int logit_rows = p.n_logits_hint > 1 ? p.n_logits_hint : 1;
    const sl_session_dims dims = {.n_batch = logit_rows > PLAN_BATCH ? logit_rows : PLAN_BATCH,
                                  .n_ctx = ctx, .n_threads = threads,
                                  .n_logit_rows = logit_rows,
                                  .type_k = p.cache_type_k, .type_v = p.cache_type_v,
                                  .swa_full = p.swa_full};
    sl_session_layout sess;
    int rc = sl_session_layout_make(&sess, m, &dims, err);
    if (rc) return rc;
    const uint64_t kv = sess.kv_bytes, scratch = sess.scratch_bytes + OTHER_BYTES;
    const uint64_t host = host_cache(m, &p, &dims, ctx,
                                     m->dense_bytes + kv + scratch + p.drafter_bytes, budget);
    const uint64_t fixed = m->dense_bytes + kv + scratch + host + p.drafter_bytes;
    m->rt->drafter_bytes = p.drafter_bytes;
    m->rt->reserved_bytes = kv + scratch;
    m->rt->kv_bytes = kv;
    m->rt->kv_ctx = ctx;
    m->rt->host_cache_bytes = host;
    const uint64_t whole = fixed + m->expert_bytes;

    m->rt->streaming = false;
    m->rt->warning[0] = 0;
    if ((rc = check_context(m, &p, &dims, &sess, ctx, moe_layers, err))) return rc;
    if (moe_layers == 0 || p.stream == SL_STREAM_OFF) return SL_OK;
    if (p.stream == SL_STREAM_AUTO && whole <= budget) return SL_OK;
    m->rt->streaming = true;

    sl_expert_layout *lay = malloc(sizeof *lay * (size_t)hp->n_layer);
    if (!lay) return sl_err_set(err, SL_ENOMEM, "out of memory");
    build_layouts(m, lay);
    const uint64_t slot = sl_streamer_slot_bytes(lay, hp->n_layer, PLAN_ALIGN);
    free(lay);

    uint64_t cache = p.cache_experts > 0 ? (uint64_t)p.cache_experts * slot : p.cache_bytes;
    if (cache == 0) {
        if (budget <= fixed)
            return sl_err_set(err, SL_ENOMEM,
                              "memory budget %.0f MiB cannot hold the dense weights (%.0f MiB), "
                              "the KV cache for %llu tokens (%.0f MiB)%s and scratch (%.0f MiB); "
                              "raise --mem-budget or lower -c%s",
                              (double)budget / MIB, (double)m->dense_bytes / MIB,
                              (unsigned long long)ctx, (double)kv / MIB,
                              host ? ", the prompt cache" : "", (double)scratch / MIB,
                              host ? " or --cache-ram" : "");
        cache = budget - fixed;
    }
    uint64_t slots = p.cache_experts > 0 ? (uint64_t)p.cache_experts : cache / slot;
    const uint64_t all = (uint64_t)moe_layers * (uint64_t)hp->n_expert;
    if (slots > all) slots = all;
    if (slots < (uint64_t)hp->n_expert_used)
        return sl_err_set(err, SL_ENOMEM,
                          "the expert cache (%.1f MiB) cannot hold one layer's top-%d experts "
                          "(%d x %.2f MiB); raise --mem-budget or --cache-mb",
                          (double)cache / MIB, hp->n_expert_used, hp->n_expert_used,
                          (double)slot / MIB);
    m->rt->n_slots = (int)slots;
    const uint64_t cycle = (uint64_t)moe_layers * (uint64_t)hp->n_expert_used;
    if (slots < cycle)
        snprintf(m->rt->warning, sizeof m->rt->warning,
                 "the expert cache holds %llu experts, fewer than one token's cycle (%d layers "
                 "x top-%d = %llu, %.0f MiB): expect a low hit rate",
                 (unsigned long long)slots, moe_layers, hp->n_expert_used,
                 (unsigned long long)cycle, (double)cycle_bytes(m) / MIB);
    return SL_OK;
}

int sl_model_start_streamer(sl_model *m, const sl_model_params *pp,
                            const struct sl_io_fault *fault, sl_err *err)
{
    sl_model_params p = pp ? *pp : sl_model_default_params();
    const int n_layer = m->hp.n_layer;
    sl_expert_layout *lay = malloc(sizeof *lay * (size_t)n_layer);
    const uint32_t nf = sl_gguf_file_count(m->gguf);
    const char **paths = malloc(sizeof *paths * nf);
    int rc = SL_OK;
    if (!lay || !paths) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        goto done;
    }
    build_layouts(m, lay);
    for (uint32_t i = 0; i < nf; i++) paths[i] = sl_gguf_file_path(m->gguf, i);
    if (p.io_trace_path) {
        /* the trace must not be one of the files it traces (truncating it
         * would destroy the model being read) */
        sl_file_id tid, pid;
        if ((rc = sl_file_identity(p.io_trace_path, &tid, err))) goto done;
        for (uint32_t i = 0; i < nf; i++) {
            if ((rc = sl_file_identity(paths[i], &pid, err))) goto done;
            if (sl_file_id_same(&tid, &pid)) {
                rc = sl_err_set(err, SL_EINVAL, "the I/O trace '%s' is the model file '%s'; "
                                "give --io-trace another path", p.io_trace_path, paths[i]);
                goto done;
            }
        }
        if (!(m->rt->trace = sl_out_fopen_live(p.io_trace_path, &sl_out_text, err))) {
            rc = sl_err_prefix(err, "cannot write the I/O trace");
            goto done;
        }
    }
    sl_streamer_config cfg = {
        .n_layer = n_layer,
        .n_expert = m->hp.n_expert,
        .layers = lay,
        .paths = paths,
        .n_paths = nf,
        .n_slots = m->rt->n_slots,
        .overlap = !p.no_overlap,
        .trace = m->rt->trace,
        .guesses = !p.no_prefetch && !p.no_overlap,
        .prefetch_min_right = p.prefetch_always ? -1.0 : 0.0,
    };
    cfg.io.backend = p.io_backend == SL_IO_KIND_URING ? SL_IO_URING : SL_IO_PREAD;
    cfg.io.lanes = (unsigned)(p.io_threads > 0 ? p.io_threads : STREAM_LANES);
    cfg.io.queue_depth = (unsigned)(p.io_queue_depth > 0 ? p.io_queue_depth : 4);
    cfg.io.fault = fault;
    rc = sl_streamer_create(&m->rt->streamer, &cfg, err);
done:
    free(lay);
    free(paths);
    return rc;
}

void sl_model_stream_stats(const sl_model *m, sl_stream_stats *out)
{
    memset(out, 0, sizeof *out);
    out->streaming = m->rt->streaming;
    out->budget_bytes = m->rt->budget_bytes;
    out->reserved_bytes = m->rt->reserved_bytes;
    out->dense_bytes = m->dense_bytes;
    out->expert_bytes = m->expert_bytes;
    out->expert_cycle_bytes = cycle_bytes(m);
    out->kv_bytes = m->rt->kv_bytes;
    out->kv_ctx = m->rt->kv_ctx;
    out->host_cache_bytes = m->rt->host_cache_bytes;
    out->drafter_bytes = m->rt->drafter_bytes;
    snprintf(out->warning, sizeof out->warning, "%s", m->rt->warning);
    if (!m->rt->streamer) return;
    pthread_mutex_lock(&m->rt->mu); /* not counted: the figure is the others' */
    out->lock_takes = m->rt->lock_takes;
    pthread_mutex_unlock(&m->rt->mu);
    sl_streamer_stats st;
    sl_streamer_get_stats(m->rt->streamer, &st);
    out->cache_bytes = sl_streamer_cache_bytes(m->rt->streamer);
    out->n_slots = (uint64_t)sl_streamer_n_slots(m->rt->streamer);
    /* a prefetch's claim is a cache miss but no layer's lookup */
    out->hits = st.cache.hits;
    out->misses = st.cache.misses - st.prefetched;
    out->prefetched = st.prefetched;
    out->prefetch_used = st.prefetch_used;
    out->prefetch_wasted = st.prefetch_wasted;
    out->guessed = st.guessed;
    out->guessed_right = st.guessed_right;
    out->evictions = st.cache.evictions;
    out->rereads = st.cache.rereads;
    out->reads = st.reads;
    out->read_bytes = st.read_bytes;
    out->window_bytes = st.window_bytes;
    out->stall_s = (double)st.stall_ns * 1e-9;
    out->manage_s = (double)st.manage_ns * 1e-9;
    out->lat_p50_us = st.lat_p50_us;
    out->lat_p90_us = st.lat_p90_us;
    out->lat_p99_us = st.lat_p99_us;
    out->drive_bps = st.drive_bps;
    out->drive_cached = st.drive_cached;
    out->drive_cal_bytes = st.drive_cal_bytes;
    out->drive_cal_lanes = st.drive_cal_lanes;
    out->warm_planned = st.warm_planned;
    out->warm_loaded = st.warm_loaded;
    out->warm_used = st.warm_used;
    out->warm_bytes = st.warm_bytes;
    out->warm_s = st.warm_last_ns > st.warm_first_ns
                      ? (double)(st.warm_last_ns - st.warm_first_ns) * 1e-9 : 0.0;
    out->union_guessed = st.union_guessed;
    out->union_right = st.union_right;
    out->learned_guessed = st.learned_guessed;
    out->learned_right = st.learned_right;
    out->learned_sets = st.learned_sets;
    out->learned_set_misses = st.learned_set_misses;
    out->prefetch_dropped = st.prefetch_dropped;
    out->mark_reads = st.mark_reads;
    out->mark_queue_p50_us = st.mark_queue_p50_us;
    out->mark_queue_p90_us = st.mark_queue_p90_us;
    out->mark_queue_p99_us = st.mark_queue_p99_us;
    out->mark_drive_p50_us = st.mark_drive_p50_us;
    out->mark_drive_p90_us = st.mark_drive_p90_us;
    out->mark_drive_p99_us = st.mark_drive_p99_us;
    out->mark_lanes_busy = st.mark_lanes_busy;
    snprintf(out->cache_policy, sizeof out->cache_policy, "%s",
             sl_streamer_policy_name(m->rt->streamer));
    const sl_route_trace *rt = m->rt->routing.trace;
    if (rt) {
        out->replaying = true;
        out->replay_steps = sl_route_trace_n_steps(rt);
        out->replay_prompt = sl_route_trace_n_prompt(rt);
        out->replay_done = sl_route_trace_cursor(rt);
        out->replay_wraps = sl_route_trace_wraps(rt);
    }
    const sl_io_info *io = sl_streamer_io_info(m->rt->streamer);
    snprintf(out->io_direct_note, sizeof out->io_direct_note, "%s",
             io->direct_fell_back ? io->direct_reason : "");
    snprintf(out->io_uring_note, sizeof out->io_uring_note, "%s",
             io->uring_fell_back ? io->uring_reason : "");
    out->io_buffered_fallback = io->direct_fell_back;
    snprintf(out->io_mode, sizeof out->io_mode, "%s x%u%s, %s%s%s%s",
             sl_io_backend_name(io->backend), io->lanes,
             io->backend == SL_IO_URING ? " (qd per lane)" : "",
             io->direct ? sl_io_direct_flag : "buffered",
             io->direct_fell_back ? " (" : "", io->direct_fell_back ? sl_io_direct_flag : "",
             io->direct_fell_back ? " refused)" : "");
}
