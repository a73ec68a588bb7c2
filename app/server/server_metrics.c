/* server_metrics.c - GET /metrics (Prometheus text format) and GET /slots
 * of `sluice serve`: requests, tokens in and out, speeds, the slots and
 * the queue, and the expert streaming figures of sl_model_stream_stats
 * (cache hit rate, MiB read per token, flash stall). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

typedef struct text {
    char *p;
    size_t n, cap;
    bool oom;
} text;

__attribute__((format(printf, 2, 3))) static void add(text *t, const char *fmt, ...)
{
    if (t->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            t->oom = true;
            return;
        }
        if (t->p && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        size_t nc = t->cap ? t->cap * 2 : 4096;
        while (nc < t->n + (size_t)k + 1) nc *= 2;
        char *np = realloc(t->p, nc);
        if (!np) {
            t->oom = true;
            return;
        }
        t->p = np;
        t->cap = nc;
    }
}

/* One metric: its HELP and TYPE lines and the value. */
static void metric(text *t, const char *name, const char *type, const char *help, double v)
{
    add(t, "# HELP sluice_%s %s\n# TYPE sluice_%s %s\nsluice_%s %.17g\n", name, help, name, type,
        name, v);
}

static uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

char *srv_metrics_text(srv *s, size_t *len)
{
    text t = {0};
    srv_pool *p = &s->pool;
    int queued = 0, busy = 0;
    srv_pool_counts(p, &busy, &queued);
    const double gen = (double)load(&p->gen_tokens), gen_s = 1e-6 * (double)load(&p->gen_us);
    const double pr = (double)load(&p->prompt_tokens), pr_s = 1e-6 * (double)load(&p->prompt_us);
    sl_stream_stats st;
    sl_model_stream_stats(s->m, &st);
    const double lookups = (double)(st.hits + st.misses);
    const double toks = gen + pr > 0 ? gen + pr : 1;
    metric(&t, "requests_total", "counter", "HTTP requests answered.", (double)load(&s->n_requests));
    metric(&t, "requests_4xx_total", "counter", "Requests answered with a 4xx status.",
           (double)load(&s->n_4xx));
    metric(&t, "requests_5xx_total", "counter", "Requests answered with a 5xx status.",
           (double)load(&s->n_5xx));
    metric(&t, "generations_total", "counter", "Generation jobs finished.", (double)load(&p->jobs_done));
    metric(&t, "batch_steps_total", "counter",
           "Batched evaluation steps (one forward pass for every busy slot).",
           (double)load(&p->batch.steps));
    metric(&t, "batch_step_members_total", "counter",
           "Slot evaluations in those steps (divided by the steps: the mean batch).",
           (double)load(&p->batch.members));
    metric(&t, "prompt_tokens_total", "counter", "Prompt tokens evaluated.", pr);
    metric(&t, "prompt_tokens_cached_total", "counter",
           "Prompt tokens reused from a slot or a prompt cache.", (double)load(&p->cached_tokens));
    srv_ramcache_stats rc = {0};
    if (p->ram) srv_ramcache_get_stats(p->ram, &rc);
    metric(&t, "prompt_cache_ram_bytes", "gauge", "Bytes of prompt states kept in memory.",
           (double)rc.bytes);
    metric(&t, "prompt_cache_ram_budget_bytes", "gauge", "Their limit (--cache-ram).",
           (double)rc.budget);
    metric(&t, "prompt_cache_ram_entries", "gauge", "Prompt states kept in memory.", rc.entries);
    metric(&t, "prompt_cache_ram_hits_total", "counter",
           "Requests that started from a prompt state kept in memory.", (double)rc.hits);
    metric(&t, "prompt_cache_ram_evictions_total", "counter",
           "Prompt states dropped for room (least recently used first).", (double)rc.evictions);
    metric(&t, "generated_tokens_total", "counter", "Tokens generated.", gen);
    metric(&t, "prompt_tokens_per_second", "gauge", "Prompt tokens per second of prompt evaluation.",
           pr_s > 0 ? pr / pr_s : 0);
    metric(&t, "generated_tokens_per_second", "gauge", "Generated tokens per second of generation.",
           gen_s > 0 ? gen / gen_s : 0);
    metric(&t, "slots", "gauge", "Slots.", p->n_slots);
    metric(&t, "slots_busy", "gauge", "Slots generating now.", busy);
    metric(&t, "queue_length", "gauge", "Requests waiting for a slot.", queued);
    metric(&t, "experts_streamed", "gauge", "1 when routed experts are read from the file.",
           st.streaming ? 1 : 0);
    metric(&t, "expert_cache_hit_rate", "gauge", "Share of expert lookups found in the cache.",
           lookups > 0 ? (double)st.hits / lookups : 1);
    metric(&t, "expert_read_bytes_total", "counter", "Bytes of experts read from the file.",
           (double)st.window_bytes);
    metric(&t, "expert_read_mib_per_token", "gauge", "MiB of experts read per evaluated token.",
           (double)st.window_bytes / (1024.0 * 1024.0) / toks);
    metric(&t, "flash_stall_seconds_total", "counter", "Seconds compute waited on expert reads.",
           st.stall_s);
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    *len = t.n;
    return t.p;
}

srv_reply srv_slots(srv *s)
{
    srv_pool *p = &s->pool;
    srv_slot_view *v = calloc((size_t)p->n_slots, sizeof *v);
    int queued = 0;
    if (!v) return srv_error(SRV_API_OPENAI, 500, "out of memory");
    srv_pool_view(p, v, &queued);
    json_t *arr = json_array();
    for (int i = 0; arr && i < p->n_slots; i++)
        json_array_append_new(arr, json_pack("{s:i, s:i, s:b, s:i}", "id", i, "n_ctx", s->n_ctx,
                                             "is_processing", (int)v[i].busy, "n_tokens",
                                             v[i].n_held));
    free(v);
    return arr ? (srv_reply){200, arr, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
}

/* Whether name is a plain file name: not empty, no slash or backslash, not
 * "." or "..", no control character, at most 200 bytes. */
static bool plain_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 200 || !strcmp(name, ".") || !strcmp(name, "..")) return false;
    for (size_t i = 0; i < n; i++)
        if (name[i] == '/' || name[i] == '\\' || (unsigned char)name[i] < 0x20) return false;
    return !strstr(name, "..");
}

srv_reply srv_slot_action(srv *s, const char *id_text, const char *action, json_t *body)
{
    const srv_api api = SRV_API_OPENAI;
    char *end = NULL;
    long id = id_text && *id_text ? strtol(id_text, &end, 10) : -1;
    if (!end || *end || id < 0 || id >= s->pool.n_slots)
        return srv_error(api, 404, "no slot '%.40s' (slots are 0 to %d)", id_text ? id_text : "",
                         s->pool.n_slots - 1);
    const bool save = action && !strcmp(action, "save");
    if (!save && !(action && !strcmp(action, "restore")))
        return srv_error(api, 400, "action must be 'save' or 'restore' (?action=save)");
    if (!s->slot_dir)
        return srv_error(api, 501, "slot save and restore need --slot-save-path DIR");
    const json_t *fn = json_object_get(body, "filename");
    if (!json_is_string(fn) || memchr(json_string_value(fn), 0, json_string_length(fn)) ||
        !plain_name(json_string_value(fn)))
        return srv_error(api, 400, "'filename' must be a plain file name inside the slot save "
                         "directory (no '/', no '..')");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", s->slot_dir, json_string_value(fn));
    if (!save && access(path, F_OK) != 0)
        return srv_error(api, 404, "no saved slot '%s' in the slot save directory",
                         json_string_value(fn));
    sl_err err = {0};
    if (save && sl_session_save_check(path, &err)) /* a model or other file: left alone */
        return srv_error(api, 400, "%s", err.msg);
    int n = 0;
    srv_slot *slot = &s->pool.slots[id];
    const uint64_t t0 = sl_now_ns();
    int rc = save ? srv_slot_save(slot, path, &n, &err) : srv_slot_restore(slot, path, &n, &err);
    const double ms = (double)(sl_now_ns() - t0) / 1e6;
    if (rc) {
        if (!save) fprintf(stderr, "sluice serve: slot %ld restore: %s\n", id, err.msg);
        return srv_error(api, rc == SL_EFORMAT || rc == SL_EINVAL ? 400 : 500, "%s", err.msg);
    }
    json_t *r = json_pack("{s:i, s:s, s:i, s:{s:f}}", "id_slot", (int)id, "filename",
                          json_string_value(fn), save ? "n_saved" : "n_restored", n, "timings",
                          save ? "save_ms" : "restore_ms", ms);
    return r ? (srv_reply){200, r, NULL} : srv_error(api, 500, "out of memory");
}
