/* streamer_internal.h - the streamer's state, shared by its two halves:
 * the demand protocol (streamer.c: a layer's set, the reads it waits for,
 * the cache, calibration) and read-ahead (streamer_ahead.c: guesses of the
 * next layer's experts, their gates and scores, learned guesses, the
 * warm-start preload). Both halves run on the one compute thread that
 * drives the streamer. Not for use outside src/experts/streamer*.c. */
#ifndef SL_EXPERTS_STREAMER_INTERNAL_H
#define SL_EXPERTS_STREAMER_INTERNAL_H

#include "experts/next_guess.h"
#include "experts/streamer.h"

/* Read-ahead gate. A wrong guess costs a read (bandwidth, and CPU in the
 * I/O lanes) and may evict an expert that was about to hit; a right one
 * hides a read behind compute. Reads ahead are issued while the running
 * share of guessed experts that their layer then asked for (weight 1/8 per
 * guess) is at least the configured minimum (GUESS_MIN by default); below
 * it, one call in GUESS_PROBE still guesses (without reading) so the share
 * keeps being measured and the gate can open. It starts closed. Measured on
 * the generated 30B-A3B-shaped model: guesses 55 % right, and reading them
 * ahead cost 12 % of decode speed with a large cache and 43 % with a small
 * one (docs/perf-log.md), hence a high bar. */
#define GUESS_MIN 0.8
#define GUESS_START 0.5
#define GUESS_WEIGHT 0.125
#define GUESS_PROBE 16u
#define UNION_START 0.9

/* Learned next-layer guesses (next_guess.h): the table's candidates, most
 * confident first, of which at most LEARNED_READS not already cached are
 * read ahead. More reads per layer cost more than they give on the
 * recorded Qwen3-30B-A3B routing: each wrong one takes drive time and
 * evicts an expert (bench/replay_floor.py --guess). */
#define LEARNED_CANDIDATES 16
#define LEARNED_READS 2

/* Warm start: preloads in flight at most (experts), and never more than
 * this share of the slots, so a set always finds room. The preload is
 * topped up only when the compute thread calls in (each begin, and before
 * each wait in next), so what is in flight must cover the longest stretch
 * of compute between two calls: a prefill layer of a long batch takes tens
 * of milliseconds, in which the drive reads ~100 MB. With 32 in flight (93
 * MB of 2.9 MB experts) the lanes ran dry within each prefill layer and
 * the preload ran at a third of the drive's rate (docs/perf-log.md). */
#define WARM_INFLIGHT 256
#define WARM_SLOT_SHARE 4

/* Drive calibration: experts in flight per lane (a lane never waits for
 * the compute thread to submit its next read). */
#define CAL_PER_LANE 4

#define LAT_BINS 320
#define LAT_STEP 1.05 /* bin b holds latencies in [STEP^b, STEP^(b+1)) us */

typedef struct set_entry {
    int expert;
    int slot;
    int reads_left;  /* reads still in flight for this expert */
    bool failed;
    bool pinned;     /* holds a pin the caller has not released */
    bool adopted;    /* its reads were started by a prefetch: a failed one is
                        tried once more before the set fails */
} set_entry;

/* A read started ahead of its set (sl_streamer_prefetch), by slot. The
 * prefetch holds one pin on the slot until its reads are in. */
typedef struct pf_entry {
    int layer, expert;
    int reads_left;  /* > 0 while in flight */
    bool failed;
    bool warm;       /* a warm-start preload, not a guess: never dropped as late */
    bool cancelled;  /* a read of it was dropped from the queue (too late) */
} pf_entry;

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

    /* prefetches */
    pf_entry *pf;         /* (n_slots) */
    bool *pf_unused;      /* (n_slots) filled by a prefetch, not used by a set yet */
    int pf_inflight;      /* prefetched experts with reads in flight */
    int max_reads;        /* reads the I/O layer holds in flight at most */
    /* how good the guesses are: the last one, and a running share right */
    int *guess;           /* (n_expert) experts guessed for guess_layer */
    int guess_n, guess_layer;
    double guess_acc;
    double guess_min;     /* the gate's bar (config, or GUESS_MIN) */
    bool guess_union;     /* the last guess is a batch's union (its own gate) */
    double union_acc;     /* the running share right of union guesses */
    unsigned union_calls;
    bool guesses;         /* guessing at all (config) */
    unsigned guess_calls;
    /* learned guesses (sl_streamer_set_learned_guess): the table, and the
     * last guess, scored at the begin of its layer */
    sl_next_guess *ng;
    int *lg;              /* (LEARNED_CANDIDATES) */
    int lg_n, lg_layer;

    sl_streamer_stats st;
    uint32_t lat_hist[LAT_BINS];   /* submit to end, every read */
    /* split at the lane's start: queued (submit to start) and at the drive
     * (start to end), cumulative; *_mark: the counts at sl_streamer_mark */
    uint32_t queue_hist[LAT_BINS], drive_hist[LAT_BINS];
    uint32_t queue_mark[LAT_BINS], drive_mark[LAT_BINS];
    uint64_t drive_ns, drive_ns_mark; /* summed start-to-end time of the reads */
    uint64_t t_mark;                  /* sl_now_ns() at the mark, 0: none */

    /* warm start */
    int *warm_layer, *warm_expert; /* the preload list, in reading order */
    int warm_n, warm_next, warm_inflight;
    bool *want;            /* (n_expert) scratch: the experts of a begin */
};

/* ---- the demand half (streamer.c), for read-ahead --------------------- */

/* Submits the three reads of (layer, expert) into slot; ahead: queued
 * behind every demand read (a guess or a preload), see sl_io_promote. */
int sl_stream_submit_reads(sl_streamer *st, int layer, int slot, int expert, bool ahead,
                           sl_err *err);

/* A slot for (layer, expert) from the cache (sl_cache_claim), counting a
 * slot that a prefetch filled and no set used as wasted when it is
 * evicted. -1 when every slot is pinned. */
int sl_stream_claim(sl_streamer *st, int layer, int expert);

/* ---- the read-ahead half (streamer_ahead.c), for the demand protocol -- */

/* At the begin of layer's set ids[0..n): scores the guesses made for it.
 * True when the set followed a learned guess. */
bool sl_ahead_score(sl_streamer *st, int layer, const int *ids, int n);

/* After the set of layer is submitted: drops the guesses for it that it
 * did not ask for and no lane has started (too late to help). */
void sl_ahead_drop_late(sl_streamer *st, int layer, const int *ids, int n);

/* Keeps the warm-start preload going (free slots only, within
 * sl_ahead_warm_limit preloads in flight). */
void sl_ahead_warm_pump(sl_streamer *st);
int sl_ahead_warm_limit(const sl_streamer *st);

#endif
