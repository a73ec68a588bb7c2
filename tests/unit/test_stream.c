/* test_stream.c - byte-identity gates for expert streaming.
 *
 * One generated MoE model is run fully resident and then streamed under
 * many configurations: cache of exactly one layer's top-k, small, medium and
 * full; 1 and 4 lanes; overlap on and off; pread and io_uring; dense
 * weights anonymous and memory-mapped; injected short reads and delays.
 * Each run prefills a long prompt in micro-batches and decodes greedily;
 * every logit of every step must be bit-identical to the resident run.
 * Then: a read error surfaces as a clean failure, and a budget too small
 * for one layer's top-k is refused at load. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "engine/model_runtime.h"
#include "engine/session.h"
#include "experts/streamer.h"
#include "io/io.h"
#include "model/model.h"
#include "synth/synth.h"
#include "sluice.h"
#include "test.h"

#define N_PROMPT 40
#define N_GEN 8
#define BATCH 16

static char model_path[512];
static int n_vocab;

static int make_model(void)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen3moe", "tiny", &err)) return -1;
    c.type = SL_SYNTH_Q4_K;
    c.n_embd = 256;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.head_dim = 64;
    c.n_ff_exp = 256;
    c.n_layer = 3;
    c.n_expert = 16;
    c.n_expert_used = 4;
    c.seed = 11;
    t_path(model_path, sizeof model_path, "stream-qwen3moe-q4k.gguf");
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, model_path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Prefill + greedy decode in a new session on m; returns malloc'ed logits
 * of every position ((N_PROMPT + N_GEN) * n_vocab) or NULL, with the eval
 * error in err. */
static float *run_session(sl_model *m, sl_err *err)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = N_PROMPT + N_GEN + 1;
    sp.n_batch_max = BATCH;
    sp.all_logits = true;
    sl_session *s;
    if (sl_session_create(&s, m, &sp, err)) return NULL;
    const int V = sl_model_n_vocab(m);
    float *out = malloc(sizeof(float) * (size_t)V * (N_PROMPT + N_GEN));
    int32_t toks[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) toks[i] = (int32_t)((i * 37 + 11) % V);
    int pos = 0, rc = 0;
    for (int i = 0; i < N_PROMPT && !rc; i += BATCH) {
        int n = N_PROMPT - i < BATCH ? N_PROMPT - i : BATCH;
        rc = sl_session_eval(s, toks + i, n, err);
        for (int j = 0; j < n && !rc; j++, pos++)
            memcpy(out + (size_t)pos * V, sl_session_logits_at(s, j), sizeof(float) * V);
    }
    for (int g = 0; g < N_GEN && !rc; g++, pos++) {
        int32_t next = argmax(out + (size_t)(pos - 1) * V, V);
        rc = sl_session_eval(s, &next, 1, err);
        if (!rc) memcpy(out + (size_t)pos * V, sl_session_logits(s), sizeof(float) * V);
    }
    sl_session_free(s);
    if (rc) {
        free(out);
        return NULL;
    }
    return out;
}

/* A warm start before the run: a usage history in which every expert has
 * some use (higher for some than others) and the preload of the hottest,
 * which then races the run's own reads. */
static void warm_start(sl_model *m)
{
    sl_usage *u = NULL;
    sl_err err;
    if (!m->rt->streamer || sl_usage_create(&u, "test-stream", m->hp.n_layer, m->hp.n_expert, &err))
        return;
    for (int l = 0; l < m->hp.n_layer; l++)
        for (int e = 0; e < m->hp.n_expert; e++) sl_usage_add(u, l, e, (e * 7 + l) % 16 + 1);
    sl_usage_free(m->rt->routing.usage);
    m->rt->routing.usage = u;
    sl_streamer_warm_start(m->rt->streamer, u, 0);
}

static bool warm_next_run;

/* run_session on a freshly loaded model, with its streaming stats. */
static float *run(const sl_model_params *mp, const sl_io_fault *fault, sl_stream_stats *stats,
                  sl_err *err)
{
    sl_model *m;
    const sl_model_test_hooks hooks = {.io_fault = fault};
    if (sl_model_load_hooked(&m, model_path, mp, &hooks, err)) return NULL;
    n_vocab = sl_model_n_vocab(m);
    if (warm_next_run) warm_start(m);
    float *out = run_session(m, err);
    if (stats) sl_model_stream_stats(m, stats);
    sl_model_free(m);
    return out;
}

static float *resident;

TEST(resident_baseline)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_OFF;
    mp.n_threads = 2;
    sl_err err;
    sl_stream_stats st;
    resident = run(&mp, NULL, &st, &err);
    CHECK_MSG(resident != NULL, "%s", err.msg);
    CHECK(!st.streaming);
}

typedef struct variant {
    const char *name;
    int cache_experts;  /* 4 = one layer's top-k; 48 = every expert */
    int lanes;
    sl_io_kind backend;
    bool no_overlap;
    sl_dense_mode dense;
    bool faults;
    bool no_prefetch;
    bool warm;          /* a warm start's preload before the run */
} variant;

static const variant variants[] = {
    {"one layer's top-k, 1 lane", 4, 1, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, false, false, false},
    {"small cache, 4 lanes", 10, 4, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, false, false, false},
    {"medium cache, no overlap", 24, 4, SL_IO_KIND_PREAD, true, SL_DENSE_ANON, false, false, false},
    {"full cache", 48, 2, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, false, false, false},
    {"io_uring", 10, 2, SL_IO_KIND_URING, false, SL_DENSE_ANON, false, false, false},
    {"dense mmap", 10, 4, SL_IO_KIND_PREAD, false, SL_DENSE_MMAP, false, false, false},
    {"short reads and delays", 6, 4, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, true, false, false},
    {"short reads, io_uring, no overlap", 6, 3, SL_IO_KIND_URING, true, SL_DENSE_MMAP, true, false, false},
    {"small cache, no prefetch", 10, 4, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, false, true, false},
    {"one layer's top-k, no prefetch", 4, 2, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, false, true, false},
    {"warm start, small cache", 10, 2, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, false, false, true},
    {"warm start, full cache, io_uring", 48, 2, SL_IO_KIND_URING, false, SL_DENSE_ANON, false,
     false, true},
    {"warm start, delays, no prefetch", 6, 4, SL_IO_KIND_PREAD, false, SL_DENSE_ANON, true, true,
     true},
};

TEST(streamed_runs_are_bit_identical)
{
    if (!resident) {
        CHECK_MSG(0, "no baseline");
        return;
    }
    const size_t n = (size_t)n_vocab * (N_PROMPT + N_GEN);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        const variant *V = &variants[v];
        sl_io_fault fault = {.seed = 5, .short_p = 0.3, .delay_p = 0.3, .delay_us_max = 300};
        sl_model_params mp = sl_model_default_params();
        mp.stream = SL_STREAM_ON;
        mp.n_threads = 2;
        mp.cache_experts = V->cache_experts;
        mp.io_threads = V->lanes;
        mp.io_backend = V->backend;
        mp.no_overlap = V->no_overlap;
        mp.dense = V->dense;
        mp.no_prefetch = V->no_prefetch;
        mp.prefetch_always = !V->no_prefetch; /* exercise reading ahead */
        sl_err err;
        sl_stream_stats st;
        warm_next_run = V->warm;
        float *got = run(&mp, V->faults ? &fault : NULL, &st, &err);
        warm_next_run = false;
        if (!got && V->dense == SL_DENSE_MMAP && err.code == SL_EUNSUPPORTED) {
            /* Windows: a model file is never mapped (util/file_win.c) */
            printf("   %-36s (no mapping on this platform: skipped)\n", V->name);
            continue;
        }
        CHECK_MSG(got != NULL, "%s: %s", V->name, got ? "" : err.msg);
        if (!got) continue;
        CHECK_MSG(memcmp(got, resident, n * sizeof(float)) == 0, "%s: logits differ", V->name);
        CHECK_MSG(st.streaming && st.misses > 0, "%s: nothing streamed", V->name);
        CHECK_EQ_INT(st.n_slots, V->cache_experts);
        if (V->cache_experts < 48) CHECK_MSG(st.evictions > 0, "%s: no eviction", V->name);
        else CHECK_EQ_INT(st.evictions, 0);
        /* three reads per expert read: every miss, and the prefetches that
         * landed before the run ended */
        CHECK(st.reads >= st.misses * 3 && st.reads <= (st.misses + st.prefetched) * 3);
        CHECK(st.prefetch_used + st.prefetch_wasted <= st.prefetched);
        if ((V->no_prefetch || V->no_overlap) && !V->warm) CHECK_EQ_INT(st.prefetched, 0);
        if (V->warm) CHECK_MSG(st.prefetched > 0, "%s: nothing preloaded", V->name);
        printf("   %-36s hits %4llu misses %4llu evictions %4llu rereads %4llu prefetched %3llu "
               "used %3llu  %s\n", V->name,
               (unsigned long long)st.hits, (unsigned long long)st.misses,
               (unsigned long long)st.evictions, (unsigned long long)st.rereads,
               (unsigned long long)st.prefetched, (unsigned long long)st.prefetch_used,
               st.io_mode);
        free(got);
    }
}

typedef struct session_thread {
    sl_model *m;
    float *out;
    sl_err err;
} session_thread;

static void *session_main(void *arg)
{
    session_thread *t = arg;
    t->out = run_session(t->m, &t->err);
    return NULL;
}

/* Sessions on different threads share one streamed model: they take turns
 * at each layer's experts, and each gets the resident logits. */
TEST(sessions_on_two_threads_share_a_streamed_model)
{
    if (!resident) {
        CHECK_MSG(0, "no baseline");
        return;
    }
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.n_threads = 2;
    mp.cache_experts = 6;
    mp.prefetch_always = true;
    sl_err err;
    sl_model *m;
    CHECK(sl_model_load(&m, model_path, &mp, &err) == 0);
    session_thread t[2] = {{m, NULL, {0}}, {m, NULL, {0}}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, session_main, &t[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    const size_t n = (size_t)n_vocab * (N_PROMPT + N_GEN);
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(t[i].out != NULL, "session %d: %s", i, t[i].out ? "" : t[i].err.msg);
        if (t[i].out) CHECK_MSG(memcmp(t[i].out, resident, n * sizeof(float)) == 0,
                                "session %d: logits differ", i);
        free(t[i].out);
    }
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    CHECK(st.misses > 0);
    sl_model_free(m);
}

TEST(read_error_fails_cleanly)
{
    sl_io_fault fault = {.seed = 1, .eio_nth = 7};
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 4;
    sl_err err = {0};
    float *got = run(&mp, &fault, NULL, &err);
    CHECK(got == NULL);
    CHECK_STR_CONTAINS(err.msg, "reading expert");
    free(got);
}

TEST(cache_below_one_layer_is_refused)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 3; /* top-k is 4 */
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, model_path, &mp, &err) == SL_ENOMEM);
    CHECK_STR_CONTAINS(err.msg, "cannot hold one layer's top-4 experts");
}

TEST(cache_below_token_cycle_warns)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 6; /* 3 layers x top-4 = 12 */
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, model_path, &mp, &err) == 0);
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    CHECK_STR_CONTAINS(st.warning, "fewer than one token's cycle");
    sl_model_free(m);
}

TEST(auto_mode_streams_only_when_over_budget)
{
    sl_model_params mp = sl_model_default_params();
    sl_model *m;
    sl_err err;
    sl_stream_stats st;
    mp.mem_budget = 1ull << 34; /* 16 GiB: fits */
    CHECK(sl_model_load(&m, model_path, &mp, &err) == 0);
    sl_model_stream_stats(m, &st);
    CHECK(!st.streaming);
    sl_model_free(m);
    mp.mem_budget = st.dense_bytes + (200ull << 20); /* dense + KV + scratch fit, experts not */
    mp.n_ctx_hint = 64;
    mp.cache_bytes = 0;
    CHECK_MSG(sl_model_load(&m, model_path, &mp, &err) == 0, "%s", err.msg);
    sl_model_stream_stats(m, &st);
    CHECK(st.streaming || st.expert_bytes + st.dense_bytes + (128ull << 20) <= mp.mem_budget);
    sl_model_free(m);
}

/* A session that keeps every token's logits (perplexity) gets them out of
 * the budget: the expert cache shrinks by those bytes (to a slot). */
TEST(kept_logits_come_out_of_the_cache)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.n_ctx_hint = 64;
    sl_model *m;
    sl_err err;
    sl_stream_stats a, b;
    CHECK(sl_model_load(&m, model_path, &mp, &err) == 0);
    sl_model_stream_stats(m, &a);
    const int V = sl_model_n_vocab(m);
    sl_model_free(m);
    /* a budget with room for 4 MiB of experts beyond dense, KV and scratch */
    mp.mem_budget = a.dense_bytes + a.reserved_bytes + (4ull << 20);
    CHECK_MSG(sl_model_load(&m, model_path, &mp, &err) == 0, "%s", err.msg);
    sl_model_stream_stats(m, &a);
    sl_model_free(m);
    mp.n_logits_hint = 512; /* 512 rows of V floats */
    CHECK_MSG(sl_model_load(&m, model_path, &mp, &err) == 0, "%s", err.msg);
    sl_model_stream_stats(m, &b);
    sl_model_free(m);
    const double want = 512.0 * V * 4.0, slot = (double)a.cache_bytes / (double)a.n_slots;
    CHECK_MSG(want > 2 * slot, "the kept logits (%.0f bytes) must outweigh slots (%.0f)", want,
              slot);
    const double got = (double)a.cache_bytes - (double)b.cache_bytes;
    CHECK_MSG(got >= want - slot && got <= want + slot, "cache shrank %.0f bytes, want %.0f (slot %.0f)",
              got, want, slot);
}

/* The plan reserves what a session of its dimensions really takes: a
 * default session (micro-batch 512, one row of logits) and one keeping
 * every token's logits, checked against sessions created afterwards (the
 * plan adds a fixed 64 MiB for stacks and tables). */
TEST(session_memory_is_what_the_plan_reserves)
{
    const int hints[2] = {0, 512};
    for (int h = 0; h < 2; h++) {
        sl_model_params mp = sl_model_default_params();
        mp.stream = SL_STREAM_OFF;
        mp.n_threads = 3;
        mp.n_ctx_hint = 256;
        mp.n_logits_hint = hints[h];
        sl_model *m;
        sl_err err;
        CHECK(sl_model_load(&m, model_path, &mp, &err) == 0);
        sl_session_params sp = sl_session_default_params();
        sp.n_ctx = 256;
        sp.n_batch_max = 512;
        sp.all_logits = hints[h] > 0;
        sl_session *s;
        CHECK(sl_session_create(&s, m, &sp, &err) == 0);
        const uint64_t kv = s->layout.kv_bytes;
        CHECK_MSG(m->rt->reserved_bytes == kv + s->scratch_bytes + (64ull << 20),
                  "hint %d: reserved %llu, session %llu + KV %llu + 64 MiB", hints[h],
                  (unsigned long long)m->rt->reserved_bytes, (unsigned long long)s->scratch_bytes,
                  (unsigned long long)kv);
        /* every token's logits are the largest scratch term of this model */
        if (hints[h]) CHECK(s->scratch_bytes >= 512ull * (uint64_t)m->hp.n_vocab * 4);
        sl_session_free(s);
        sl_model_free(m);
    }
}

/* Every expert a streamed layer begins is a use in the routing's usage
 * history (the warm start's): a one-token step adds its top-k per routed
 * layer, nothing elsewhere. */
TEST(each_streamed_set_counts_in_the_usage_history)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 8;
    mp.n_threads = 1;
    sl_model *m = NULL;
    sl_err err;
    CHECK_MSG(sl_model_load(&m, model_path, &mp, &err) == SL_OK, "%s", err.msg);
    if (!m) return;
    sl_usage *u = NULL;
    CHECK(sl_usage_create(&u, "usage-count", m->hp.n_layer, m->hp.n_expert, &err) == SL_OK);
    m->rt->routing.usage = u; /* freed with the model */
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 8;
    sl_session *s = NULL;
    CHECK(sl_session_create(&s, m, &sp, &err) == SL_OK);
    for (int step = 1; s && u && step <= 2; step++) {
        const int32_t tok = (int32_t)(step * 5);
        CHECK_MSG(sl_session_eval(s, &tok, 1, &err) == SL_OK, "%s", err.msg);
        for (int il = 0; il < m->hp.n_layer; il++) {
            double sum = 0.0;
            for (int e = 0; e < m->hp.n_expert; e++) sum += sl_usage_get(u, il, e);
            const sl_ffn_desc *f = &m->layers[il].d.ffn;
            const double want = f->kind == SL_FFN_ROUTED ? (double)(step * f->router.top_k) : 0.0;
            CHECK_MSG(sum == want, "layer %d after %d steps: %g uses, expected %g", il, step, sum,
                      want);
        }
    }
    sl_session_free(s);
    sl_model_free(m);
}

/* The figures after sl_model_stream_mark count the reads that land after
 * it, and only those: none before a mark, none right after it, then every
 * read of the next step (a cache of one layer's top-k misses each time). */
TEST(mark_counts_the_reads_after_it)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 4;
    mp.no_prefetch = true;
    mp.n_threads = 1;
    sl_model *m = NULL;
    sl_err err;
    CHECK_MSG(sl_model_load(&m, model_path, &mp, &err) == SL_OK, "%s", err.msg);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 8;
    sl_session *s = NULL;
    CHECK(sl_session_create(&s, m, &sp, &err) == SL_OK);
    sl_stream_stats a, b, c;
    const int32_t t1 = 5, t2 = 9;
    CHECK_MSG(s && sl_session_eval(s, &t1, 1, &err) == SL_OK, "%s", err.msg);
    sl_model_stream_stats(m, &a);
    CHECK(a.reads > 0);
    CHECK(a.mark_reads == 0 && a.mark_drive_p50_us == 0.0);
    sl_model_stream_mark(m);
    sl_model_stream_stats(m, &b);
    CHECK(b.mark_reads == 0);
    CHECK_MSG(s && sl_session_eval(s, &t2, 1, &err) == SL_OK, "%s", err.msg);
    sl_model_stream_stats(m, &c);
    CHECK(c.reads > b.reads);
    CHECK_MSG(c.mark_reads == c.reads - b.reads, "%llu reads after the mark, counted %llu",
              (unsigned long long)(c.reads - b.reads), (unsigned long long)c.mark_reads);
    CHECK(c.mark_drive_p50_us > 0.0 && c.mark_drive_p99_us >= c.mark_drive_p50_us);
    CHECK(c.mark_queue_p99_us >= c.mark_queue_p50_us);
    CHECK(c.mark_lanes_busy > 0.0 && c.mark_lanes_busy <= 1.0);
    sl_session_free(s);
    sl_model_free(m);
}

int main(void)
{
    if (make_model()) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(resident_baseline);
    RUN(streamed_runs_are_bit_identical);
    RUN(sessions_on_two_threads_share_a_streamed_model);
    RUN(read_error_fails_cleanly);
    RUN(kept_logits_come_out_of_the_cache);
    RUN(session_memory_is_what_the_plan_reserves);
    RUN(cache_below_one_layer_is_refused);
    RUN(cache_below_token_cycle_warns);
    RUN(auto_mode_streams_only_when_over_budget);
    RUN(each_streamed_set_counts_in_the_usage_history);
    RUN(mark_counts_the_reads_after_it);
    free(resident);
    return TEST_REPORT();
}
