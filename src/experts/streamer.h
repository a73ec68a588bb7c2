/* streamer.h - routed experts fetched from the model file into the expert
 * cache on demand, with reads overlapped with compute.
 *
 * Owns: the expert cache, the I/O lanes, where each (layer, expert) slice
 * lies in the file(s) (the expert index), the in-flight reads of the
 * current expert set, stall accounting, read latency statistics and the
 * optional read trace. Knows nothing about architectures or tensor names:
 * the model gives it per-layer byte layouts.
 *
 * Protocol, for one layer's set of experts (distinct ids):
 *
 *     sl_streamer_begin(st, layer, ids, n, &taken)   pins hits, submits misses
 *     while (sl_streamer_next(st, &e, w) == 1) {      resident first, then each
 *         compute expert e from w[0..2]               read as it lands
 *         sl_streamer_release(st, e);
 *     }
 *     if taken < n: begin again with ids + taken      (cache smaller than the set)
 *
 * Every expert handed out by next() is pinned until its release. If next()
 * fails (a read failed), call sl_streamer_abort, which drains the reads in
 * flight and drops every pin of the set. Not thread-safe: one compute
 * thread drives a streamer (the I/O lanes are its own threads). */
#ifndef SL_EXPERTS_STREAMER_H
#define SL_EXPERTS_STREAMER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "experts/expert_cache.h"
#include "experts/usage_history.h"
#include "io/io.h"
#include "util/status.h"

enum { SL_PROJ_GATE = 0, SL_PROJ_UP = 1, SL_PROJ_DOWN = 2, SL_N_PROJ = 3 };

/* Where one layer's stacked expert tensors lie: the slice of expert e for
 * projection p is bytes [base[p] + e * stride[p], + len[p]) of file[p],
 * len[p] 0 meaning stride[p] (the plain stacked layout). A fused
 * ffn_gate_up_exps gives gate and up the same stride (the fused expert)
 * and half of it each as len, up's base F rows further. A layer without
 * routed experts has stride 0. */
typedef struct sl_expert_layout {
    uint32_t file[SL_N_PROJ];
    uint64_t base[SL_N_PROJ];
    uint64_t stride[SL_N_PROJ];
    uint64_t len[SL_N_PROJ];
} sl_expert_layout;

typedef struct sl_streamer_config {
    int n_layer, n_expert;
    const sl_expert_layout *layers;  /* n_layer entries, copied */
    const char *const *paths;        /* model files, as the layouts index them */
    uint32_t n_paths;
    int n_slots;                     /* cache slots (experts held at once) */
    sl_io_config io;                 /* lanes, backend, faults ... */
    bool overlap;                    /* compute hits while misses are read */
    FILE *trace;                     /* one line per read, or NULL */
    bool guesses;                    /* guess the next layer's experts at all
                                        (sl_streamer_wants_guess) */
    double prefetch_min_right;       /* share of right guesses above which experts
                                        are read ahead; 0: the default (0.8);
                                        negative: always (tests) */
} sl_streamer_config;

typedef struct sl_streamer_stats {
    sl_cache_stats cache;
    uint64_t reads;          /* completed reads (3 per expert miss) */
    uint64_t read_bytes;     /* wanted bytes of those reads */
    uint64_t window_bytes;   /* bytes actually read (aligned windows) */
    uint64_t stall_ns;       /* compute thread blocked waiting for reads */
    uint64_t manage_ns;      /* cache bookkeeping and submission */
    uint64_t prefetched;     /* experts read ahead of their set (each also a cache miss) */
    uint64_t prefetch_used;  /* of those, found by a set (each also a cache hit) */
    uint64_t prefetch_wasted; /* evicted before any set used them */
    uint64_t prefetch_failed; /* a read failed: dropped, read again if needed */
    uint64_t guessed;        /* experts guessed for a layer (sl_streamer_prefetch) */
    uint64_t guessed_right;  /* of those, asked for by the layer's set */
    double lat_p50_us, lat_p90_us, lat_p99_us; /* read latency (submit to end) */
    uint64_t prefetch_dropped; /* read ahead still queued when its layer came
                                  without asking for it: cancelled (too late) */
    /* warm start (each preload also counts in prefetched, and in
     * prefetch_used / prefetch_wasted) */
    uint64_t warm_planned;   /* experts on the preload list */
    uint64_t warm_started;   /* of those, read (not already cached, room left) */
    uint64_t warm_loaded;    /* their reads landed */
    uint64_t warm_bytes;     /* window bytes of the preload reads */
    uint64_t warm_used;      /* preloaded experts a set then asked for */
    uint64_t warm_first_ns, warm_last_ns; /* first submit, last byte (sl_now_ns) */
    double drive_bps;        /* sl_streamer_calibrate's rate, 0 if not run */
    uint64_t drive_cal_bytes; /* bytes it read */
    unsigned drive_cal_lanes; /* on this many lanes */
    uint64_t union_guessed, union_right; /* the same as guessed / guessed_right
                                            for batches' unions (prefill) */
    bool drive_cached;       /* drive_bps came from sl_streamer_set_drive_rate
                                (a kept iobench result), not a calibration */
    /* learned next-layer guesses (sl_streamer_prefetch_learned) */
    uint64_t learned_guessed;    /* experts guessed (not cached when guessed) */
    uint64_t learned_right;      /* of those, asked for by their layer's set */
    uint64_t learned_sets;       /* sets that followed a learned guess */
    uint64_t learned_set_misses; /* those sets' misses read on demand: the
                                    share of misses guessed is right / (right
                                    + set_misses) */
    /* the reads that landed since sl_streamer_mark (none before a mark):
     * submit to start (queued for a lane) and start to end (at the
     * drive), and the share of lane time they kept the drive busy */
    uint64_t mark_reads;
    double mark_queue_p50_us, mark_queue_p90_us, mark_queue_p99_us;
    double mark_drive_p50_us, mark_drive_p90_us, mark_drive_p99_us;
    double mark_lanes_busy;  /* summed drive time / (lanes x time since the mark) */
} sl_streamer_stats;

typedef struct sl_streamer sl_streamer;

/* Bytes one slot needs to hold the largest expert (three aligned windows)
 * with direct-I/O alignment `align`. */
uint64_t sl_streamer_slot_bytes(const sl_expert_layout *layers, int n_layer, uint32_t align);

/* Opens the I/O lanes and allocates the cache. Fails if a file cannot be
 * opened, memory cannot be had, or n_slots < 1. */
int sl_streamer_create(sl_streamer **out, const sl_streamer_config *cfg, sl_err *err);
void sl_streamer_free(sl_streamer *st);

const sl_io_info *sl_streamer_io_info(const sl_streamer *st);
int sl_streamer_n_slots(const sl_streamer *st);
uint64_t sl_streamer_cache_bytes(const sl_streamer *st);

/* Starts fetching experts ids[0..n) of layer. Takes a prefix of ids as long
 * as slots can be pinned or claimed; *taken says how many (0 only if some
 * other expert is still pinned, i.e. the previous set was not drained). */
int sl_streamer_begin(sl_streamer *st, int layer, const int *ids, int n, int *taken,
                      sl_err *err);

/* Next expert of the set whose bytes are in memory (see the protocol).
 * Returns 1 and fills *expert and w[SL_N_PROJ]; 0 when the set is done;
 * a negative SL_E* code if a read failed (err names the expert, file and
 * offset). */
int sl_streamer_next(sl_streamer *st, int *expert, const void *w[SL_N_PROJ], sl_err *err);

/* A guess that the next begin() of layer will ask for experts ids[0..n):
 * the guess is scored against that begin (guessed / guessed_right), and
 * while guesses have mostly been right, the experts are read ahead.
 * Skips experts resident or on their way; claims slots only from unpinned
 * ones, never waits, and stops when none is left or the I/O queue is full.
 * A read that fails just leaves the expert out of the cache. A later
 * begin() of the layer finds prefetched experts as hits, waiting for those
 * still in flight. Returns how many experts it started reading. */
int sl_streamer_prefetch(sl_streamer *st, int layer, const int *ids, int n);

/* The same for a micro-batch: ids are the union of the experts guessed
 * for its tokens. Scored and gated apart from single-token guesses (a
 * union of many tokens' guesses is right far more often). */
int sl_streamer_prefetch_union(sl_streamer *st, int layer, const int *ids, int n);
bool sl_streamer_wants_union_guess(sl_streamer *st);

/* Whether a guess is worth making now: never when the config turned
 * guesses off; always while they pay off; else now and then to keep
 * scoring them (a guess costs the caller a router product). */
bool sl_streamer_wants_guess(sl_streamer *st);

/* How many experts of the set next() can hand out now without waiting for
 * a read (those already landed; more may land meanwhile). */
int sl_streamer_ready(const sl_streamer *st);

/* Unpins an expert handed out by next(). */
void sl_streamer_release(sl_streamer *st, int expert);

/* Error path: waits for reads in flight, drops every pin of the set. */
void sl_streamer_abort(sl_streamer *st);

void sl_streamer_get_stats(const sl_streamer *st, sl_streamer_stats *out);

/* Marks the start of a phase (a decode after its prompt): the mark_*
 * statistics count the reads that land from now on, until the next mark. */
void sl_streamer_mark(sl_streamer *st);

/* Replaces the cache's eviction policy by the one called name
 * (sl_policy_create). Only before the first expert is read (SL_EINVAL);
 * SL_EINVAL for an unknown name. */
int sl_streamer_set_policy(sl_streamer *st, const char *name, sl_err *err);
const char *sl_streamer_policy_name(const sl_streamer *st);

/* Route replay (the trace itself is the routing's, engine/model_runtime.h):
 * on says the choices now come from a recorded trace, which the model's
 * routers cannot guess; learned guesses then turn on when guesses are on
 * and read ahead always (config prefetch_min_right < 0, the app's
 * --prefetch). */
void sl_streamer_replaying(sl_streamer *st, bool on);

/* Next-layer guesses learned online from the routing seen in this run
 * (next_guess.h) instead of the router's: on turns them on (a fresh table;
 * SL_ENOMEM if it cannot be had, then they stay off), off turns them off.
 * Replay (sl_streamer_replaying) turns them on when guesses
 * are on and read ahead always (config prefetch_min_right < 0, the app's
 * --prefetch): the model's router cannot guess a replayed choice. While
 * on, sl_streamer_wants_guess says no. */
int sl_streamer_set_learned_guess(sl_streamer *st, bool on, sl_err *err);
bool sl_streamer_learned_guess(const sl_streamer *st);

/* The choice the n tokens of a batch made at layer (ids[t * k + j]): what
 * the learned guesses learn from. Call once per routed layer, in layer
 * order, before that layer's begin (or right after it). Does nothing while
 * learned guesses are off. */
void sl_streamer_observe_route(sl_streamer *st, int layer, const int *ids, int n, int k);

/* After begin() of layer with one token's set: reads ahead (as
 * sl_streamer_prefetch does: idle lanes only, overtaken by demand reads,
 * dropped when late) up to two of the experts the learned table guesses
 * for layer + 1 that are not cached, and scores the guess against layer +
 * 1's begin (learned_* in the stats). Returns how many it started; 0 when
 * learned guesses or guesses are off, or the last observed choice was not
 * one token's at layer. */
int sl_streamer_prefetch_learned(sl_streamer *st, int layer);

/* Whether expert (layer, expert) is in the cache or on its way there (READY
 * or LOADING): a look, not a use (no pin, no counting, no policy touch).
 * For --cache-route; the caller holds whatever lock serialises the
 * streamer's users. */
bool sl_streamer_has(const sl_streamer *st, int layer, int expert);

/* Warm start: starts preloading the hottest experts of the usage history u
 * (read now; not kept) (at most
 * max_experts, 0: as many as the cache holds) in the background: reads
 * ahead, served only by lanes with no demand read to do, into free slots
 * only (nothing is evicted). A set that asks for a preload in flight takes
 * it over (its queued reads become demand reads). Kept going from each
 * begin() until the list is read or the cache is full. Returns how many
 * experts are on the list (0 without a history of this shape). */
int sl_streamer_warm_start(sl_streamer *st, const sl_usage *u, int max_experts);

/* Measures the drive as the streamer reads it: whole experts (gate, up,
 * down at their offsets, spread over the layers), several per lane in
 * flight on every lane, each slot refilled with the next expert as soon as
 * its reads land, until min_bytes have landed, max_s have passed or every
 * streamed expert was read once; into free slots, which stay free (nothing
 * is cached or counted). A short burst measures the drive's start-up, not
 * its rate: the figure agrees with `sluice iobench --expert` at the same
 * lanes only when it is long (docs/perf.md). *bytes_per_s: window bytes over
 * first submit to last byte; also kept in the stats (drive_bps,
 * drive_cal_bytes, drive_cal_lanes). Only before any expert is read
 * (SL_EINVAL); SL_EIO if a read fails. */
int sl_streamer_calibrate(sl_streamer *st, uint64_t min_bytes, double max_s,
                          double *bytes_per_s, sl_err *err);

/* Takes the drive's rate from elsewhere (a kept `sluice iobench` result for
 * this device) instead of sl_streamer_calibrate: it goes into
 * the stats as drive_bps with drive_cached set. bytes_per_s must be > 0. */
void sl_streamer_set_drive_rate(sl_streamer *st, double bytes_per_s);

#endif
