/* model_runtime.h - the runtime beside an immutable model: what the engine
 * makes at load to run a model read from its file (model_open.c), and the
 * memory plan and expert streamer in it (model_plan.c).
 *
 * Thread-safety, stated here once for the whole runtime: a model's
 * sessions, on any threads, share one runtime (m->rt).
 *  - Fixed at load, read without a lock: the plan (budget .. warning),
 *    n_threads, the knobs' settings, the streamer's existence, the pool.
 *  - The pool takes its jobs in turns itself (util/pool.h).
 *  - Everything the streamer holds (cache, reads, guesses, policy, drive
 *    rate) and the routing's usage history are touched only under `mu`:
 *    the engine takes it once per routed layer (moe.c's sl_moe_block,
 *    around the routing's knobs, the guess and the set); the
 *    setters after load (runtime.c, public in include/sluice.h) take it
 *    themselves.
 *  - The knobs count their cost under their own lock; a replayed route
 *    trace's cursor moves with one session at a time (route_trace.h), or
 *    by each session's own step in a multi-session batch.
 *  - The --io-trace file is written by the streamer under `mu`, and
 *    flushed under it (sl_model_io_trace_flush). */
#ifndef SL_ENGINE_MODEL_RUNTIME_H
#define SL_ENGINE_MODEL_RUNTIME_H

#include <pthread.h>
#include <stdio.h>

#include "model/model.h"

/* What decides a routed layer's experts beyond its router, apart from the
 * streamer that reads them: the lossy knobs, the route trace replayed
 * instead of the routers, and the usage history every set of experts adds
 * to (the warm start's). The MoE block (moe.c, expert_src.c) reads and
 * feeds it; the streamer never sees it. */
typedef struct sl_routing {
    struct sl_route_knobs *knobs; /* NULL: exact routing (engine/route_knobs.h) */
    struct sl_route_trace *trace; /* NULL: the routers decide (experts/route_trace.h) */
    struct sl_usage *usage;       /* NULL: none kept (experts/usage_history.h) */
} sl_routing;

typedef struct sl_runtime {
    /* the memory plan (sl_model_plan) */
    uint64_t budget_bytes;  /* memory budget the plan used */
    uint64_t reserved_bytes; /* of it, set aside for a session: KV cache and scratch */
    uint64_t kv_bytes;      /* of reserved_bytes, the planned context's KV cache */
    int kv_ctx;             /* that context */
    uint64_t host_cache_bytes; /* planned for the caller's cache (sl_model_params) */
    uint64_t drafter_bytes;    /* planned for a drafter (sl_model_params) */
    bool swa_full;          /* sliding-window layers keep every position (no ring) */
    sl_kv_type cache_type_k, cache_type_v; /* sessions that do not choose cache in these
                               (sl_model_params; f16 for a described model) */
    bool streaming;         /* routed experts come from the streamer */
    int n_slots;            /* expert cache slots when streaming */
    char warning[256];      /* set by planning, shown by front-ends */
    int n_threads;          /* sl_model_params.n_threads (0: one per core) */
    /* The compute threads every session of the model runs on (n_threads, or
     * one per core), so that N sessions do not start N pools on the same
     * cores. NULL for a described-only model. */
    struct sl_pool *pool;
    struct sl_streamer *streamer; /* NULL: every expert resident */
    /* The streamer serves one caller at a time: sessions on other threads
     * take turns per routed layer (sl_moe_block takes it once, from the
     * routing to the last release). Initialised with the streamer. */
    pthread_mutex_t mu;
    uint64_t lock_takes;    /* under mu: times sl_runtime_lock took it */
    sl_routing routing;     /* owned; under mu once sessions run */
    FILE *trace;            /* --io-trace output */
} sl_runtime;

/* Takes the runtime's lock (mu), counted in lock_takes (sl_stream_stats'
 * figure: a routed layer takes it once), and gives it back. */
static inline void sl_runtime_lock(sl_runtime *rt)
{
    pthread_mutex_lock(&rt->mu);
    rt->lock_takes++;
}

static inline void sl_runtime_unlock(sl_runtime *rt) { pthread_mutex_unlock(&rt->mu); }

/* Decides residency from params and the measured sizes (dense_bytes,
 * expert_bytes): fills streaming, n_slots, budget_bytes and warning. Fails
 * when the budget cannot hold the dense weights or one layer's top-k
 * experts. (model_plan.c) */
int sl_model_plan(sl_model *m, const sl_model_params *p, sl_err *err);

struct sl_io_fault; /* io/io.h */

/* Replays t (owned from now; a previous trace is freed; NULL: the routers
 * decide again) and tells the streamer's read-ahead. The caller holds
 * rt->mu, or no session runs. */
void sl_runtime_replay(sl_runtime *rt, struct sl_route_trace *t);

/* Starts the expert streamer for a planned, streaming model; fault (NULL:
 * none) is injected into its reads (sl_model_load_hooked). */
int sl_model_start_streamer(sl_model *m, const sl_model_params *p,
                            const struct sl_io_fault *fault, sl_err *err);

/* What a test may add to a load beyond the public sl_model_params: the
 * seam that keeps test hooks out of include/sluice.h. */
typedef struct sl_model_test_hooks {
    const struct sl_io_fault *io_fault; /* faults injected into the streamed
                                           expert reads (src/io/io.h; copied
                                           at open); NULL: none */
} sl_model_test_hooks;

/* sl_model_load with test hooks (NULL: none, exactly sl_model_load). The
 * caller owns hooks; the model keeps no pointer into it. */
int sl_model_load_hooked(sl_model **out, const char *path, const sl_model_params *params,
                         const sl_model_test_hooks *hooks, sl_err *err);

#endif
