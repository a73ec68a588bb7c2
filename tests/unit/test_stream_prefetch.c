/* test_stream_prefetch.c - the streamer's read-ahead (sl_streamer_prefetch)
 * on a small file whose every byte says where it came from: a prefetched
 * expert is found by its layer's set with the right bytes (landed or still
 * in flight), a failed prefetch read is harmless (the set reads it again),
 * a prefetch never takes a pinned slot, and one evicted before use counts
 * as wasted; learned next-layer guesses read ahead what the routing seen
 * so far predicts and are scored against the next set. Also built under ThreadSanitizer (make tsan: test_stream*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/testutil.h"
#include "experts/streamer.h"
#include "io/io_internal.h"
#include "test.h"

#define LAYERS 2
#define EXPERTS 4
#define SLICE 8192 /* bytes per projection slice */

/* byte i of projection p of expert e of layer l: a function of all four,
 * so a slice read from the wrong place cannot pass */
static uint8_t pattern(int l, int e, int p, size_t i)
{
    return (uint8_t)(l * 71 + e * 13 + p * 5 + (int)(i % 251));
}

static const char *model_file(void)
{
    static char path[512];
    if (path[0]) return path;
    t_path(path, sizeof path, "experts.bin");
    FILE *f = fopen(path, "wb");
    /* layout: layer, then projection, then expert (like stacked tensors) */
    for (int l = 0; l < LAYERS; l++)
        for (int p = 0; p < SL_N_PROJ; p++)
            for (int e = 0; e < EXPERTS; e++)
                for (size_t i = 0; i < SLICE; i++) fputc(pattern(l, e, p, i), f);
    fclose(f);
    return path;
}

/* min_right: the read-ahead gate's bar (negative: always read ahead) */
static sl_streamer *open_streamer_lanes(int slots, const sl_io_fault *fault, double min_right,
                                        unsigned lanes)
{
    sl_expert_layout lay[LAYERS];
    for (int l = 0; l < LAYERS; l++)
        for (int p = 0; p < SL_N_PROJ; p++) {
            lay[l].file[p] = 0;
            lay[l].base[p] = ((uint64_t)l * SL_N_PROJ + (uint64_t)p) * EXPERTS * SLICE;
            lay[l].stride[p] = SLICE;
            lay[l].len[p] = 0; /* the whole stride */
        }
    const char *paths[1] = {model_file()};
    sl_streamer_config cfg = {.n_layer = LAYERS, .n_expert = EXPERTS, .layers = lay,
                              .paths = paths, .n_paths = 1, .n_slots = slots,
                              .overlap = true, .trace = NULL, .guesses = true,
                              .prefetch_min_right = min_right};
    cfg.io.backend = SL_IO_PREAD;
    cfg.io.lanes = lanes;
    cfg.io.fault = fault;
    sl_streamer *st = NULL;
    sl_err err;
    if (sl_streamer_create(&st, &cfg, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return NULL;
    }
    return st;
}

static sl_streamer *open_streamer(int slots, const sl_io_fault *fault, double min_right)
{
    return open_streamer_lanes(slots, fault, min_right, 2);
}

static bool slice_ok(const void *w, int l, int e, int p)
{
    const uint8_t *b = w;
    for (size_t i = 0; i < SLICE; i++)
        if (b[i] != pattern(l, e, p, i)) return false;
    return true;
}

/* Runs one set of layer l to the end; returns how many experts came out
 * with every byte right, or -1 on an error. */
static int run_set(sl_streamer *st, int l, const int *ids, int n)
{
    sl_err err;
    int taken = 0, good = 0, e, rc;
    if (sl_streamer_begin(st, l, ids, n, &taken, &err) || taken != n) return -1;
    const void *w[SL_N_PROJ];
    while ((rc = sl_streamer_next(st, &e, w, &err)) == 1) {
        bool ok = true;
        for (int p = 0; p < SL_N_PROJ; p++) ok = ok && slice_ok(w[p], l, e, p);
        good += ok;
        sl_streamer_release(st, e);
    }
    if (rc < 0) {
        fprintf(stderr, "  %s\n", err.msg);
        sl_streamer_abort(st);
        return -1;
    }
    return good;
}

static sl_streamer_stats stats(sl_streamer *st)
{
    sl_streamer_stats s;
    sl_streamer_get_stats(st, &s);
    return s;
}

TEST(prefetched_experts_are_hits_with_the_right_bytes)
{
    sl_streamer *st = open_streamer(4, NULL, -1.0);
    CHECK(st != NULL);
    if (!st) return;
    const int set0[2] = {0, 3}, ahead[2] = {1, 2}, set1[2] = {2, 3};
    CHECK_EQ_INT(run_set(st, 0, set0, 2), 2);
    /* two slots are free, two hold layer 0's experts (unpinned now) */
    CHECK_EQ_INT(sl_streamer_prefetch(st, 1, ahead, 2), 2);
    CHECK_EQ_INT(sl_streamer_prefetch(st, 1, ahead, 2), 0); /* already on their way */
    CHECK_EQ_INT(run_set(st, 1, set1, 2), 2);
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.prefetched, 2);
    CHECK_EQ_INT(s.prefetch_used, 1);  /* expert 2; expert 3 of layer 1 was a miss */
    CHECK_EQ_INT(s.cache.misses, 5);   /* 2 (layer 0) + 2 prefetches + 1 */
    CHECK_EQ_INT(s.cache.hits, 1);
    sl_streamer_free(st);
}

TEST(prefetch_still_in_flight_is_waited_for)
{
    /* every read delayed up to 20 ms: the set starts before its prefetch lands */
    sl_io_fault slow = {.seed = 3, .delay_p = 1.0, .delay_us_max = 20000};
    sl_streamer *st = open_streamer(4, &slow, -1.0);
    CHECK(st != NULL);
    if (!st) return;
    const int ahead[3] = {0, 1, 2};
    CHECK_EQ_INT(sl_streamer_prefetch(st, 1, ahead, 3), 3);
    CHECK_EQ_INT(run_set(st, 1, ahead, 3), 3);
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.prefetch_used, 3);
    CHECK_EQ_INT(s.reads, 9);
    sl_streamer_free(st);
}

TEST(failed_prefetch_read_is_read_again)
{
    /* request 2 is the second read of the prefetched expert; with every read
     * delayed, its failure lands after the set took the prefetch over */
    const sl_io_fault faults[2] = {{.seed = 1, .eio_nth = 2},
                                   {.seed = 1, .eio_nth = 2, .delay_p = 1.0,
                                    .delay_us_max = 20000}};
    for (int f = 0; f < 2; f++) {
        sl_streamer *st = open_streamer(4, &faults[f], -1.0);
        CHECK(st != NULL);
        if (!st) return;
        const int ahead[1] = {1};
        CHECK_EQ_INT(sl_streamer_prefetch(st, 0, ahead, 1), 1);
        CHECK_EQ_INT(run_set(st, 0, ahead, 1), 1); /* no error, right bytes */
        sl_streamer_stats s = stats(st);
        /* the failure landed before the set asked (the expert is read
         * afresh: 2 good reads + 3) or after it took the prefetch over (the
         * one read is tried again: 2 + 1) */
        CHECK_EQ_INT(s.prefetch_failed, 1);
        CHECK_MSG(s.reads == 5 || s.reads == 3, "reads %llu", (unsigned long long)s.reads);
        sl_streamer_free(st);
    }
}

TEST(prefetch_takes_no_pinned_slot_and_waste_is_counted)
{
    sl_streamer *st = open_streamer(2, NULL, -1.0);
    CHECK(st != NULL);
    if (!st) return;
    sl_err err;
    const int both[2] = {0, 1}, other[1] = {3};
    int taken = 0;
    CHECK(sl_streamer_begin(st, 0, both, 2, &taken, &err) == 0 && taken == 2);
    /* both slots pinned by the set: nothing to claim */
    CHECK_EQ_INT(sl_streamer_prefetch(st, 1, other, 1), 0);
    int e;
    const void *w[SL_N_PROJ];
    while (sl_streamer_next(st, &e, w, &err) == 1) sl_streamer_release(st, e);
    /* now a prefetch may evict; then two other experts evict it unused */
    CHECK_EQ_INT(sl_streamer_prefetch(st, 1, other, 1), 1);
    const int later[2] = {0, 1};
    CHECK_EQ_INT(run_set(st, 1, later, 2), 2);
    sl_streamer_stats s = stats(st);
    /* landed before layer 1 came: evicted unused; still queued then:
     * dropped as too late */
    CHECK_EQ_INT(s.prefetch_wasted + s.prefetch_dropped, 1);
    CHECK_EQ_INT(s.prefetch_used, 0);
    sl_streamer_free(st);
}

/* Wrong guesses close the gate (guesses are still scored, nothing is read
 * ahead, a guess is asked for only now and then); right ones open it. */
TEST(wrong_guesses_stop_reading_ahead)
{
    /* bar 0.5, the running share starts at 0.5: open */
    sl_streamer *st = open_streamer(4, NULL, 0.5);
    CHECK(st != NULL);
    if (!st) return;
    const int set[1] = {3};
    int started = 0;
    for (int i = 0; i < 6; i++) {
        const int wrong[1] = {i % 3};
        started += sl_streamer_prefetch(st, 1, wrong, 1);
        CHECK_EQ_INT(run_set(st, 1, set, 1), 1);
    }
    CHECK_EQ_INT(started, 1); /* the first guess, before any was scored */
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.guessed, 6);
    CHECK_EQ_INT(s.guessed_right, 0);
    int wanted = 0;
    for (int i = 0; i < 32; i++) wanted += sl_streamer_wants_guess(st);
    CHECK_EQ_INT(wanted, 2); /* one call in 16 */
    /* right guesses (expert 3 is resident: nothing to read) reopen it */
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(sl_streamer_prefetch(st, 1, set, 1), 0);
        CHECK_EQ_INT(run_set(st, 1, set, 1), 1);
    }
    CHECK(sl_streamer_wants_guess(st));
    const int fresh[1] = {2};
    CHECK_EQ_INT(sl_streamer_prefetch(st, 0, fresh, 1), 1);
    sl_streamer_free(st);
}

TEST(default_gate_starts_closed)
{
    sl_streamer *st = open_streamer(4, NULL, 0.0);
    CHECK(st != NULL);
    if (!st) return;
    const int guess[1] = {1};
    CHECK_EQ_INT(sl_streamer_prefetch(st, 0, guess, 1), 0);
    CHECK_EQ_INT(run_set(st, 0, guess, 1), 1);
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.guessed, 1);
    CHECK_EQ_INT(s.guessed_right, 1);
    CHECK_EQ_INT(s.prefetched, 0);
    sl_streamer_free(st);
}

/* A read of the layer's own set that fails while a guess is being read
 * ahead still reaches the caller through next() (it must not be filed, and
 * its expert silently dropped, by the read-ahead). */
TEST(set_read_error_survives_a_read_ahead)
{
    const sl_io_fault bad = {.seed = 1, .eio_nth = 1}; /* the set's first read */
    sl_streamer *st = open_streamer(4, &bad, -1.0);
    CHECK(st != NULL);
    if (!st) return;
    sl_err err;
    const int set[1] = {0}, ahead[1] = {1};
    int taken = 0;
    CHECK(sl_streamer_begin(st, 0, set, 1, &taken, &err) == 0 && taken == 1);
    struct timespec ts = {0, 50 * 1000 * 1000}; /* let the failure land */
    nanosleep(&ts, NULL);
    CHECK_EQ_INT(sl_streamer_prefetch(st, 1, ahead, 1), 1);
    int e, rc;
    const void *w[SL_N_PROJ];
    while ((rc = sl_streamer_next(st, &e, w, &err)) == 1) sl_streamer_release(st, e);
    CHECK(rc < 0);
    if (rc < 0) CHECK_STR_CONTAINS(err.msg, "reading expert 0 of layer 0");
    sl_streamer_abort(st);
    sl_streamer_free(st);
}

/* A fault seed under which each of the first n requests sleeps at least
 * min_us before its read (so a lane stays busy while the test submits). */
static sl_io_fault slow_reads(int n, uint64_t min_us)
{
    sl_io_fault f = {.delay_p = 1.0, .delay_us_max = 40000};
    for (f.seed = 1;; f.seed++) {
        int ok = 1;
        for (int q = 1; q <= n && ok; q++) ok = sl_io_fault_delay_ns(&f, (uint64_t)q) >= min_us * 1000;
        if (ok) return f;
    }
}

/* Guesses for a layer that are still queued when the layer comes without
 * them are dropped (counted), a wanted one still queued is taken over, and
 * the dropped experts are read afresh, right, when asked for later. */
TEST(late_guesses_are_dropped)
{
    const sl_io_fault f = slow_reads(12, 3000);
    /* one lane: busy with the set's reads while the guesses queue */
    sl_streamer *st = open_streamer_lanes(8, &f, -1.0, 1);
    CHECK(st != NULL);
    if (!st) return;
    sl_err err;
    const int set0[1] = {0}, guess[3] = {1, 2, 3}, set1[1] = {3}, rest[2] = {1, 2};
    int taken = 0;
    CHECK(sl_streamer_begin(st, 0, set0, 1, &taken, &err) == 0 && taken == 1);
    CHECK_EQ_INT(sl_streamer_prefetch(st, 1, guess, 3), 3);
    int e, rc;
    const void *w[SL_N_PROJ];
    while ((rc = sl_streamer_next(st, &e, w, &err)) == 1) sl_streamer_release(st, e);
    CHECK_EQ_INT(rc, 0);
    /* the lane has started at most the first read ahead */
    CHECK_EQ_INT(run_set(st, 1, set1, 1), 1);
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.prefetch_dropped, 2);
    CHECK_EQ_INT(s.prefetch_used, 1);
    CHECK_EQ_INT(run_set(st, 1, rest, 2), 2);
    s = stats(st);
    CHECK_EQ_INT(s.cache.hits, 1); /* 1 and 2 were read again: misses */
    sl_streamer_free(st);
}

/* The warm start preloads the history's hottest experts into free slots
 * (never evicting), and a set finds them as hits with the right bytes,
 * landed or still in flight. */
TEST(warm_start_preloads_the_hottest)
{
    sl_streamer *st = open_streamer(8, NULL, 0.0);
    CHECK(st != NULL);
    if (!st) return;
    sl_usage *u = NULL;
    sl_err err;
    CHECK(sl_usage_create(&u, "t", LAYERS, EXPERTS, &err) == SL_OK);
    if (!u) return;
    sl_usage_add(u, 1, 2, 5);
    sl_usage_add(u, 0, 3, 4);
    sl_usage_add(u, 1, 0, 3);
    sl_usage_add(u, 0, 1, 2);
    sl_usage_add(u, 1, 3, 1);
    CHECK_EQ_INT(sl_streamer_warm_start(st, u, 3), 3); /* at most 3 asked for */
    sl_usage_free(u); /* read at the start only */
    /* two preloads in flight at most (a quarter of the slots): each begin
     * keeps the list going */
    const int other[1] = {0}, a[1] = {2}, b[2] = {1, 3};
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (int i = 0; i < 3; i++) {
        nanosleep(&ts, NULL);
        CHECK_EQ_INT(run_set(st, 0, other, 1), 1);
    }
    CHECK_EQ_INT(run_set(st, 1, a, 1), 1);
    CHECK_EQ_INT(run_set(st, 0, b, 2), 2);
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.warm_planned, 3);
    CHECK_EQ_INT(s.warm_started, 3);
    CHECK_EQ_INT(s.warm_loaded, 3);
    CHECK_EQ_INT(s.warm_used, 2);       /* (1, 2) and (0, 3); (1, 0) was not asked for */
    CHECK_EQ_INT(s.cache.hits, 2 + 2);  /* and expert 0 of layer 0, twice */
    CHECK_EQ_INT(s.cache.misses, 3 + 2); /* 3 preloads; (0, 0) and (0, 1) */
    CHECK_EQ_INT(s.cache.evictions, 0);
    sl_streamer_free(st);

    /* a full cache: the preload reads nothing and evicts nothing */
    st = open_streamer(2, NULL, 0.0);
    if (!st) return;
    CHECK(sl_usage_create(&u, "t", LAYERS, EXPERTS, &err) == SL_OK);
    sl_usage_add(u, 1, 1, 1);
    const int both[2] = {0, 1};
    CHECK_EQ_INT(run_set(st, 0, both, 2), 2);
    CHECK_EQ_INT(sl_streamer_warm_start(st, u, 0), 1);
    sl_usage_free(u);
    s = stats(st);
    CHECK_EQ_INT(s.warm_started, 0);
    CHECK_EQ_INT(s.cache.evictions, 0);
    sl_streamer_free(st);
}

/* The drive calibration reads whole experts without caching them. */
TEST(calibration_caches_nothing)
{
    sl_streamer *st = open_streamer(4, NULL, 0.0);
    CHECK(st != NULL);
    if (!st) return;
    double bps = 0;
    sl_err err;
    /* asks for far more than the file holds: every expert once, then stops */
    CHECK(sl_streamer_calibrate(st, 1ull << 40, 30.0, &bps, &err) == SL_OK);
    CHECK(bps > 0);
    sl_streamer_stats s = stats(st);
    CHECK(s.drive_bps == bps);
    /* 4 free slots refilled until every streamed expert was read once:
     * each of 3 slices, each window at least a slice */
    CHECK(s.drive_cal_bytes >= (uint64_t)LAYERS * EXPERTS * SL_N_PROJ * SLICE);
    CHECK(s.drive_cal_lanes >= 1);
    CHECK_EQ_INT(s.reads, 0);
    CHECK_EQ_INT(s.cache.misses, 0);
    const int a[1] = {1};
    CHECK_EQ_INT(run_set(st, 0, a, 1), 1);
    s = stats(st);
    CHECK_EQ_INT(s.cache.misses, 1);
    sl_streamer_free(st);
}

/* A long preload list: a quarter of the slots (up to 256) is read at once,
 * not 32, and the rest follows from later calls until every listed expert
 * is in, each with its own bytes. Uses its own wider file (MANY experts a
 * layer; the pattern is the same function of layer, expert, projection). */
#define MANY 160
static const char *many_file(void)
{
    static char path[512];
    if (path[0]) return path;
    t_path(path, sizeof path, "many.bin");
    FILE *f = fopen(path, "wb");
    for (int l = 0; l < LAYERS; l++)
        for (int p = 0; p < SL_N_PROJ; p++)
            for (int e = 0; e < MANY; e++)
                for (size_t i = 0; i < SLICE; i++) fputc(pattern(l, e, p, i), f);
    fclose(f);
    return path;
}

TEST(warm_start_reads_a_quarter_of_the_slots_at_once)
{
    sl_expert_layout lay[LAYERS];
    for (int l = 0; l < LAYERS; l++)
        for (int p = 0; p < SL_N_PROJ; p++) {
            lay[l].file[p] = 0;
            lay[l].base[p] = ((uint64_t)l * SL_N_PROJ + (uint64_t)p) * MANY * SLICE;
            lay[l].stride[p] = SLICE;
            lay[l].len[p] = 0;
        }
    const char *paths[1] = {many_file()};
    sl_streamer_config cfg = {.n_layer = LAYERS, .n_expert = MANY, .layers = lay,
                              .paths = paths, .n_paths = 1, .n_slots = 2 * MANY,
                              .overlap = true, .guesses = false};
    cfg.io.backend = SL_IO_PREAD;
    cfg.io.lanes = 2;
    sl_streamer *st = NULL;
    sl_err err;
    CHECK(sl_streamer_create(&st, &cfg, &err) == SL_OK);
    if (!st) return;
    sl_usage *u = NULL;
    CHECK(sl_usage_create(&u, "t", LAYERS, MANY, &err) == SL_OK);
    if (!u) return;
    for (int l = 0; l < LAYERS; l++) /* 240 experts, layer 1's hottest */
        for (int e = 0; e < (l ? MANY : 80); e++) sl_usage_add(u, l, e, 1000.0 * l + e + 1);
    CHECK_EQ_INT(sl_streamer_warm_start(st, u, 0), 240);
    sl_usage_free(u);
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.warm_started, 2 * MANY / 4); /* 80 at once: a quarter of 320 slots */
    /* sets of layer 0's expert 100 (never preloaded) keep the preload going */
    const int probe[1] = {100};
    for (int i = 0; i < 2000 && stats(st).warm_loaded < 240; i++) {
        CHECK_EQ_INT(run_set(st, 0, probe, 1), 1);
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    s = stats(st);
    CHECK_EQ_INT(s.warm_started, 240);
    CHECK_EQ_INT(s.warm_loaded, 240);
    CHECK_EQ_INT(s.cache.evictions, 0);
    /* every preloaded expert is a hit with its own bytes */
    sl_streamer_stats before = stats(st);
    for (int l = 0; l < LAYERS; l++) {
        int ids[MANY], n = 0;
        for (int e = 0; e < (l ? MANY : 80); e++) ids[n++] = e;
        for (int k = 0; k < n; k += 40) {
            sl_err e2;
            int taken = 0, good = 0, x, rc;
            const int cnt = n - k < 40 ? n - k : 40;
            CHECK(sl_streamer_begin(st, l, ids + k, cnt, &taken, &e2) == SL_OK);
            CHECK_EQ_INT(taken, cnt);
            const void *w[SL_N_PROJ];
            while ((rc = sl_streamer_next(st, &x, w, &e2)) == 1) {
                const uint8_t *b[SL_N_PROJ] = {w[0], w[1], w[2]};
                bool ok = true;
                for (int p = 0; p < SL_N_PROJ; p++)
                    for (size_t i = 0; i < SLICE; i++) ok = ok && b[p][i] == pattern(l, x, p, i);
                good += ok;
                sl_streamer_release(st, x);
            }
            CHECK_EQ_INT(rc, 0);
            CHECK_EQ_INT(good, cnt);
        }
    }
    s = stats(st);
    CHECK_EQ_INT(s.cache.hits - before.cache.hits, 240);
    CHECK_EQ_INT(s.cache.misses - before.cache.misses, 0);
    sl_streamer_free(st);
}

/* A rate handed in (a kept iobench result) is the stats' drive rate. */
TEST(kept_drive_rate_is_the_stats_rate)
{
    sl_streamer *st = open_streamer(4, NULL, 0.0);
    CHECK(st != NULL);
    if (!st) return;
    CHECK(!stats(st).drive_cached);
    sl_streamer_set_drive_rate(st, 3.0e9);
    sl_streamer_stats s = stats(st);
    CHECK(s.drive_bps == 3.0e9);
    CHECK(s.drive_cached);
    CHECK_EQ_INT(s.drive_cal_bytes, 0);
    sl_streamer_free(st);
}

/* Learned guesses (sl_streamer_set_learned_guess): after twice 0 -> 2 from
 * layer 0 to layer 1, a token choosing 0 at layer 0 gets expert 2 of layer
 * 1 read ahead, found by layer 1's set with its bytes; the router's guesses
 * are no longer wanted; each set after a guess is scored. */
TEST(learned_guess_reads_ahead_what_the_routing_predicts)
{
    sl_streamer *st = open_streamer(2, NULL, 0.0);
    CHECK(st != NULL);
    if (!st) return;
    sl_err err;
    CHECK(sl_streamer_wants_guess(st)); /* the router's, first probe */
    CHECK(!sl_streamer_learned_guess(st));
    CHECK_EQ_INT(sl_streamer_prefetch_learned(st, 0), 0); /* off */
    CHECK(sl_streamer_set_learned_guess(st, true, &err) == SL_OK);
    CHECK(sl_streamer_learned_guess(st));
    CHECK(!sl_streamer_wants_guess(st));
    const int e0[1] = {0}, e2[1] = {2}, other[2] = {1, 3};
    for (int r = 0; r < 2; r++) {
        sl_streamer_observe_route(st, 0, e0, 1, 1);
        CHECK_EQ_INT(run_set(st, 0, e0, 1), 1);
        CHECK_EQ_INT(sl_streamer_prefetch_learned(st, 0), 0); /* seen fewer than twice */
        sl_streamer_observe_route(st, 1, e2, 1, 1);
        CHECK_EQ_INT(run_set(st, 1, e2, 1), 1);
    }
    CHECK_EQ_INT(run_set(st, 1, other, 2), 2); /* not observed: evicts both */
    sl_streamer_observe_route(st, 0, e0, 1, 1);
    CHECK_EQ_INT(run_set(st, 0, e0, 1), 1);
    CHECK_EQ_INT(sl_streamer_prefetch_learned(st, 0), 1);
    CHECK_EQ_INT(sl_streamer_prefetch_learned(st, 1), 0); /* last layer: nothing after */
    sl_streamer_observe_route(st, 1, e2, 1, 1);
    CHECK_EQ_INT(run_set(st, 1, e2, 1), 1); /* the right bytes */
    sl_streamer_stats s = stats(st);
    CHECK_EQ_INT(s.learned_guessed, 1);
    CHECK_EQ_INT(s.learned_right, 1);
    CHECK_EQ_INT(s.learned_sets, 3);
    CHECK_EQ_INT(s.learned_set_misses, 1); /* the first round's layer 1 */
    CHECK_EQ_INT(s.prefetched, 1);
    CHECK_EQ_INT(s.prefetch_used, 1);
    CHECK(sl_streamer_set_learned_guess(st, false, &err) == SL_OK);
    CHECK_EQ_INT(sl_streamer_prefetch_learned(st, 0), 0);
    sl_streamer_free(st);
}

int main(void)
{
    RUN(prefetched_experts_are_hits_with_the_right_bytes);
    RUN(prefetch_still_in_flight_is_waited_for);
    RUN(failed_prefetch_read_is_read_again);
    RUN(prefetch_takes_no_pinned_slot_and_waste_is_counted);
    RUN(wrong_guesses_stop_reading_ahead);
    RUN(default_gate_starts_closed);
    RUN(set_read_error_survives_a_read_ahead);
    RUN(late_guesses_are_dropped);
    RUN(warm_start_preloads_the_hottest);
    RUN(calibration_caches_nothing);
    RUN(warm_start_reads_a_quarter_of_the_slots_at_once);
    RUN(kept_drive_rate_is_the_stats_rate);
    RUN(learned_guess_reads_ahead_what_the_routing_predicts);
    return TEST_REPORT();
}
