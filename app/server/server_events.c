/* server_events.c - GET /api/events of `sluice serve` (server_web.h): the
 * telemetry the page plots, as server-sent events any client can read
 * (`curl -N`).
 *
 * A stream opens with a comment line and one "plan" event (the memory plan
 * of sl_stream_stats, the slots and the model), then sends one "tick"
 * event per interval: the rates over that interval, from the counters the
 * server already keeps (the batcher's evaluated tokens, the streamer's
 * hits, misses, bytes and stall, the pool's slots and queue) and the
 * process's RSS. A figure that has no value over an interval (a hit rate
 * with no expert lookup, MiB per token with no token) is null. The stream
 * ends when the server stops; a client that goes away ends it at its next
 * tick (the HTTP layer frees it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server_web.h"

#define MIB (1024.0 * 1024.0)
#define DEFAULT_INTERVAL_MS 500
#define MIN_INTERVAL_MS 50
#define MAX_INTERVAL_MS 10000
/* how often a wait looks whether the server is stopping */
#define WAKE_MS 100

/* The counters at one moment. */
typedef struct ev_sample {
    uint64_t t_ns;
    uint64_t tok_one, tok_many; /* decoded, prompt tokens evaluated */
    uint64_t hits, misses, window_bytes;
    double stall_s;
} ev_sample;

struct srv_events {
    srv *s;
    unsigned interval_ms;
    uint64_t t0_ns, next_ns;
    ev_sample prev;
    bool plan_sent;
    char *pend;             /* formatted bytes not yet handed out (malloc'd) */
    size_t pend_len, pend_off;
};

static uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

static void sample(srv *s, ev_sample *out)
{
    sl_stream_stats st;
    sl_model_stream_stats(s->m, &st);
    out->t_ns = sl_now_ns();
    out->tok_one = load(&s->pool.batch.tokens_one);
    out->tok_many = load(&s->pool.batch.tokens_many);
    out->hits = st.hits;
    out->misses = st.misses;
    out->window_bytes = st.window_bytes;
    out->stall_s = st.stall_s;
}

/* v to five significant digits (the figures are rates, not counts). */
static double sig5(double v)
{
    char b[32];
    snprintf(b, sizeof b, "%.5g", v);
    return strtod(b, NULL);
}

/* A number, or null when it has no value (ok false). */
static json_t *num(bool ok, double v) { return ok ? json_real(sig5(v)) : json_null(); }

/* The drive's rate in bytes a second: a calibration (serve --stats) or a
 * kept `sluice iobench --expert` result; 0 when unknown or not streamed. */
static double drive_bps(const srv *s)
{
    sl_stream_stats st;
    sl_model_stream_stats(s->m, &st);
    return st.drive_bps;
}

/* The "plan" event's object: where the memory goes. */
static json_t *plan_json(srv *s, unsigned interval_ms)
{
    sl_stream_stats st;
    sl_model_stream_stats(s->m, &st);
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:f, s:f, s:f, s:f, s:i, s:f, s:f, s:f, "
                     "s:I, s:f, s:s, s:s, s:i}",
                     "model", s->model_name, "arch", sl_model_arch_name(s->m), "template",
                     sl_chat_name(s->chat), "slots", s->pool.n_slots, "n_ctx", s->n_ctx,
                     "streaming", st.streaming, "budget_mib", sig5(st.budget_bytes / MIB),
                     "dense_mib", sig5(st.dense_bytes / MIB), "reserved_mib",
                     sig5(st.reserved_bytes / MIB), "kv_mib", sig5(st.kv_bytes / MIB), "kv_ctx",
                     st.kv_ctx, "experts_mib", sig5(st.expert_bytes / MIB), "expert_cycle_mib",
                     sig5(st.expert_cycle_bytes / MIB), "cache_mib", sig5(st.cache_bytes / MIB),
                     "cache_experts", (json_int_t)st.n_slots, "prompt_cache_mib",
                     sig5(st.host_cache_bytes / MIB),
                     "io_mode", st.streaming ? st.io_mode : "", "warning", st.warning,
                     "interval_ms", (int)interval_ms);
}

/* The "tick" event's object: the rates between a and b. */
static json_t *tick_json(srv *s, const ev_sample *a, const ev_sample *b, double t_s)
{
    const double dt = 1e-9 * (double)(b->t_ns - a->t_ns);
    const double one = (double)(b->tok_one - a->tok_one);
    const double many = (double)(b->tok_many - a->tok_many);
    const double lookups = (double)(b->hits - a->hits) + (double)(b->misses - a->misses);
    const double bytes = (double)(b->window_bytes - a->window_bytes);
    const double stall = b->stall_s - a->stall_s;
    const double drive = drive_bps(s);
    uint64_t rss = 0, peak = 0;
    sl_mem_rss(&rss, &peak);
    sl_stream_stats st;
    sl_model_stream_stats(s->m, &st);
    srv_pool *p = &s->pool;
    int queued = 0, busy = 0;
    srv_pool_counts(p, &busy, &queued);
    srv_ramcache_stats rc = {0};
    if (p->ram) srv_ramcache_get_stats(p->ram, &rc);
    return json_pack("{s:f, s:f, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:f, "
                     "s:f, s:i, s:i, s:i, s:f, s:I}",
                     "t", t_s, "dt", sig5(dt), "gen_tok_s", num(dt > 0, one / dt), "prompt_tok_s",
                     num(dt > 0, many / dt), "decoded_total", (json_int_t)b->tok_one,
                     "prompt_total", (json_int_t)b->tok_many, "hit_rate",
                     num(lookups > 0, lookups > 0 ? (double)(b->hits - a->hits) / lookups : 0),
                     "mib_per_token", num(one + many > 0, bytes / MIB / (one + many > 0 ? one + many : 1)),
                     "read_mib_s", num(dt > 0, bytes / MIB / dt), "drive_mib_s",
                     num(drive > 0, drive / MIB), "stall_ms_per_token",
                     num(one + many > 0, 1e3 * stall / (one + many > 0 ? one + many : 1)),
                     "stall_share", num(dt > 0, stall / dt), "rss_mib", sig5((double)rss / MIB),
                     "peak_rss_mib", sig5((double)peak / MIB), "budget_mib",
                     sig5(st.budget_bytes / MIB),
                     "slots", p->n_slots, "slots_busy", busy, "queued", queued,
                     "prompt_cache_mib", sig5((double)rc.bytes / MIB), "requests",
                     (json_int_t)load(&s->n_requests));
}

/* Queues "event: NAME\ndata: JSON\n\n" (v stolen; NULL: out of memory,
 * false) after a prefix (may be ""). */
static bool queue_event(srv_events *e, const char *prefix, const char *name, json_t *v)
{
    char *text = v ? sl_json_dump_text(v, false) : NULL;
    json_decref(v);
    if (!text) return false;
    size_t n = strlen(prefix) + strlen(name) + strlen(text) + 32;
    char *buf = malloc(n);
    if (!buf) {
        free(text);
        return false;
    }
    int k = snprintf(buf, n, "%sevent: %s\ndata: %s\n\n", prefix, name, text);
    free(text);
    free(e->pend);
    e->pend = buf;
    e->pend_len = k > 0 ? (size_t)k : 0;
    e->pend_off = 0;
    return k > 0;
}

static bool stopping(srv *s)
{
    pthread_mutex_lock(&s->pool.mu);
    bool stop = s->pool.stopping;
    pthread_mutex_unlock(&s->pool.mu);
    return stop;
}

/* Sleeps until the monotonic clock reaches t_ns; false when the server
 * began stopping meanwhile. */
static bool wait_until(srv *s, uint64_t t_ns)
{
    for (;;) {
        if (stopping(s)) return false;
        const uint64_t now = sl_now_ns();
        if (now >= t_ns) return true;
        uint64_t left = t_ns - now;
        if (left > (uint64_t)WAKE_MS * 1000000u) left = (uint64_t)WAKE_MS * 1000000u;
        struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

srv_events *srv_events_open(srv *s, const char *interval, srv_reply *refusal)
{
    long ms = DEFAULT_INTERVAL_MS;
    if (interval) {
        char *end = NULL;
        ms = strtol(interval, &end, 10);
        if (!*interval || *end || ms < MIN_INTERVAL_MS || ms > MAX_INTERVAL_MS) {
            *refusal = srv_error(SRV_API_OPENAI, 400, "interval_ms must be a whole number of "
                                 "milliseconds from %d to %d, got '%.40s'", MIN_INTERVAL_MS,
                                 MAX_INTERVAL_MS, interval);
            return NULL;
        }
    }
    srv_events *e = calloc(1, sizeof *e);
    if (!e) {
        *refusal = srv_error(SRV_API_OPENAI, 500, "out of memory");
        return NULL;
    }
    e->s = s;
    e->interval_ms = (unsigned)ms;
    return e;
}

size_t srv_events_read(srv_events *e, char *buf, size_t max)
{
    if (e->pend_off >= e->pend_len) {
        if (!e->plan_sent) {
            e->plan_sent = true;
            sample(e->s, &e->prev);
            e->t0_ns = e->prev.t_ns;
            e->next_ns = e->t0_ns + (uint64_t)e->interval_ms * 1000000u;
            if (!queue_event(e, ": sluice telemetry\n\n", "plan", plan_json(e->s, e->interval_ms)))
                return 0;
        } else {
            if (!wait_until(e->s, e->next_ns)) return 0;
            ev_sample now;
            sample(e->s, &now);
            /* on time, the next tick an interval after this one's due time; a
             * tick late by more than half an interval (a busy machine) starts
             * the count again, so that no tick covers only a moment */
            const uint64_t iv = (uint64_t)e->interval_ms * 1000000u;
            e->next_ns += iv;
            if (e->next_ns < now.t_ns + iv / 2) e->next_ns = now.t_ns + iv;
            /* t: milliseconds since the stream opened, as seconds */
            json_t *t = tick_json(e->s, &e->prev, &now,
                                  (double)((now.t_ns - e->t0_ns) / 1000000u) / 1e3);
            e->prev = now;
            if (!queue_event(e, "", "tick", t)) return 0;
        }
    }
    size_t n = e->pend_len - e->pend_off;
    if (n > max) n = max;
    memcpy(buf, e->pend + e->pend_off, n);
    e->pend_off += n;
    return n;
}

void srv_events_close(srv_events *e)
{
    if (!e) return;
    free(e->pend);
    free(e);
}
