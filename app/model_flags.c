/* model_flags.c - see model_flags.h. */
#include "model_flags.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "draft_figures.h"
#include "drive_rate.h"
#include "engine/kv_rows.h"
#include "gguf/gguf.h"
#include "llama_flags.h"
#include "model/llama_rev.h"
#include "model/model.h"
#include "stats_csv.h"
#include "util/file.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/timer.h"
#include "warm_start.h"

/* The drive calibration (no lane curve kept): whole experts on every lane
 * until this many MiB have landed or this many seconds have passed (0.3 s
 * at 7 GB/s). 61 MiB in one burst measured half of iobench's rate (issue
 * 33): a virtual disk's rate moves within a second, so the calibration
 * averages over about as long as one of iobench's rows (docs/perf.md). */
#define CAL_MIB 2048
#define CAL_MAX_S 1.0

void model_flags_init(model_flags *f)
{
    memset(f, 0, sizeof *f);
    f->params = sl_model_default_params();
}

void model_flags_help(FILE *out)
{
    fprintf(out,
            "  -t, --threads N        compute threads (default: physical cores)\n"
            "      --mem-budget MB    memory the process may use (default: available memory,\n"
            "                         cgroup limits honoured, minus a margin)\n"
            "      --cache-mb N       expert cache size (default: what the budget leaves)\n"
            "      --cache-experts N  expert cache size in experts\n"
            "      --moe-stream       always stream routed experts from the file\n"
            "      --no-stream        keep every expert in RAM\n"
            "      --io-threads N     I/O lanes for expert reads (default 8, or more when the\n"
            "                         lane curve `sluice iobench --expert` kept for the\n"
            "                         drive needs more to reach its best point)\n"
            "      --io-backend B     pread (default) or uring\n"
            "      --io-qd N          reads in flight per io_uring lane (default 4)\n"
            "      --overlap / --no-overlap  compute resident experts while others load (on)\n"
            "      --prefetch / --no-prefetch  guess the next layer's experts with its router\n"
            "                         and read them while this layer computes: always /\n"
            "                         never (default: while >= 80 %% of guesses are right)\n"
            "      --dense-weights M  anon (read into RAM, default) or mmap\n"
            "      --load-plain       read the weights at load tensor by tensor, buffered\n"
            "                         (the old path, for comparisons; default: direct reads\n"
            "                         on every I/O lane into huge pages)\n"
            "      --io-trace FILE    log every expert read (created empty when no expert\n"
            "                         is streamed)\n"
            "      --cache-policy P   expert cache eviction: lru (default), slru, lfu or\n"
            "                         layer (an equal share per layer); only hit rates change\n"
            "      --route-trace FILE replay a recorded expert choice (route_trace v1) instead\n"
            "                         of the router, token by token, wrapping at its end: the\n"
            "                         cache and I/O see real routing (needs streamed experts)\n"
            "      --n-expert-used K  lossy: route each token to K experts, fewer than the\n"
            "                         file's top-k (the cost is printed at the end)\n"
            "      --cache-route J,M  lossy: keep the router's top J experts and fill the\n"
            "                         other slots with the best-ranked of its top M already\n"
            "                         in the expert cache (streamed experts only; on a\n"
            "                         resident model it changes nothing)\n"
            "  -ctk, --cache-type-k T K cache: f16 (default), f32, q8_0 or q4_0; also what\n"
            "                         layers without a V cache (MLA's latent, deepseek4's\n"
            "                         rows: f16 or f32 only) keep, as llama.cpp does\n"
            "  -ctv, --cache-type-v T attention V cache: the same types (quantised types\n"
            "                         need head sizes that are multiples of 32). f32 keeps\n"
            "                         f32 in the attention; llama.cpp's reads an f32 cache\n"
            "                         as f16, so its -ctk f32 numbers are sluice's f16 ones\n"
            "      --kv-type T        the same as -ctk T -ctv T\n"
            "      --swa-full         sliding-window layers keep every position instead of\n"
            "                         a ring of their window and one batch (same output, more\n"
            "                         memory; any earlier position can be returned to)\n"
            "      --stats            print where the time and memory went, at the end\n"
            "      --stats-json FILE  write the same as JSON\n"
            "      --stats-csv FILE   one CSV row per decoded token (run, chat, bench): time\n"
            "                         split, hits, misses, bytes read, read-ahead, faults, RSS\n"
            "      --progress         a live status line on stderr\n"
            "      --no-warm          streamed experts: keep no usage history and preload\n"
            "                         nothing (default: the hottest experts of earlier runs,\n"
            "                         $XDG_CACHE_HOME/sluice/MODEL.usage, are read in the\n"
            "                         background at start)\n");
    /* --llama-ref */
    fprintf(out,
            "      --llama-ref REV    the llama.cpp build whose last-bit arithmetic to follow\n"
            "                         where builds differ (qwen35moe's DeltaNet q/k norm,\n"
            "                         IQ4_XS's panel order, deepseek4's clamped SwiGLU and its\n"
            "                         stream sums on models of 4 layers, 8 experts, top 2 or\n"
            "                         fewer): 2026-08\n"
            "                         (default, the reference fixtures') or 2026-09\n"
            "                         (node-llama-cpp 3.22.1's); SLUICE_LLAMA_REF is not read\n"
            "  llama.cpp's -fa on|auto, --jinja, -cb and --no-mmap are taken as what sluice\n"
            "  does anyway, --mmap as --dense-weights mmap; -ngl, -tb, --mlock and --numa are\n"
            "  ignored with a note; -fa off is refused (sluice computes only as -fa on)\n");
}

static bool mb_arg(const char *cmd, const char *flag, const char *v, uint64_t *out)
{
    long mb;
    if (!arg_int(cmd, flag, v, 1, 1L << 30, &mb)) return false;
    *out = (uint64_t)mb << 20;
    return true;
}

int model_flags_parse(model_flags *f, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    sl_model_params *p = &f->params;
    long n;
#define VALUE()                                                                \
    do {                                                                       \
        if (!(v = arg_value(cmd, argc, argv, i))) return -1;                   \
    } while (0)
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        VALUE();
        if (!arg_int(cmd, a, v, 1, 1024, &n)) return -1;
        p->n_threads = (int)n;
    } else if (!strcmp(a, "--mem-budget")) {
        VALUE();
        if (!mb_arg(cmd, a, v, &p->mem_budget)) return -1;
    } else if (!strcmp(a, "--cache-mb")) {
        VALUE();
        if (!mb_arg(cmd, a, v, &p->cache_bytes)) return -1;
    } else if (!strcmp(a, "--cache-experts")) {
        VALUE();
        if (!arg_int(cmd, a, v, 1, 1 << 24, &n)) return -1;
        p->cache_experts = (int)n;
    } else if (!strcmp(a, "--moe-stream")) {
        p->stream = SL_STREAM_ON;
    } else if (!strcmp(a, "--no-stream")) {
        p->stream = SL_STREAM_OFF;
    } else if (!strcmp(a, "--io-threads")) {
        VALUE();
        if (!arg_int(cmd, a, v, 1, 64, &n)) return -1;
        p->io_threads = (int)n;
    } else if (!strcmp(a, "--io-qd")) {
        VALUE();
        if (!arg_int(cmd, a, v, 1, 256, &n)) return -1;
        p->io_queue_depth = (int)n;
    } else if (!strcmp(a, "--io-backend")) {
        VALUE();
        if (!strcmp(v, "pread")) p->io_backend = SL_IO_KIND_PREAD;
        else if (!strcmp(v, "uring")) p->io_backend = SL_IO_KIND_URING;
        else {
            fprintf(stderr, "sluice %s: --io-backend expects pread or uring, got '%s'\n", cmd, v);
            return -1;
        }
    } else if (!strcmp(a, "--overlap")) {
        p->no_overlap = false;
    } else if (!strcmp(a, "--no-overlap")) {
        p->no_overlap = true;
    } else if (!strcmp(a, "--prefetch")) {
        p->no_prefetch = false;
        p->prefetch_always = true;
    } else if (!strcmp(a, "--no-prefetch")) {
        p->no_prefetch = true;
        p->prefetch_always = false;
    } else if (!strcmp(a, "--dense-weights")) {
        VALUE();
        if (!strcmp(v, "anon")) p->dense = SL_DENSE_ANON;
        else if (!strcmp(v, "mmap")) p->dense = SL_DENSE_MMAP;
        else {
            fprintf(stderr, "sluice %s: --dense-weights expects anon or mmap, got '%s'\n", cmd, v);
            return -1;
        }
    } else if (!strcmp(a, "--load-plain")) {
        p->load_plain = true;
    } else if (!strcmp(a, "--io-trace")) {
        VALUE();
        p->io_trace_path = v;
    } else if (!strcmp(a, "--route-trace")) {
        VALUE();
        f->route_trace = v;
    } else if (!strcmp(a, "--cache-policy")) {
        VALUE();
        f->cache_policy = v;
    } else if (!strcmp(a, "--n-expert-used")) {
        VALUE();
        if (!arg_int(cmd, a, v, 1, 4096, &n)) return -1;
        p->n_expert_used = (int)n;
    } else if (!strcmp(a, "--cache-route")) {
        VALUE();
        int j, mm, used = 0;
        if (sscanf(v, "%d,%d%n", &j, &mm, &used) != 2 || v[used] != '\0' || j < 0 ||
            mm < 1 || mm > 4096) {
            fprintf(stderr, "sluice %s: --cache-route expects J,M (keep the router's top J, "
                    "fill from its top M; 0 <= J < experts used < M), got '%s'\n", cmd, v);
            return -1;
        }
        p->cache_route_keep = j;
        p->cache_route_from = mm;
    } else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "-ctv") ||
               !strcmp(a, "--cache-type-v") || !strcmp(a, "--kv-type")) {
        VALUE();
        /* --kv-type T: -ctk T -ctv T, the one setting (sl_model_params) */
        const bool k = strcmp(a, "-ctv") && strcmp(a, "--cache-type-v");
        const bool both = !strcmp(a, "--kv-type");
        sl_kv_type t;
        if (!sl_kv_type_parse(v, &t)) {
            fprintf(stderr, "sluice %s: %s expects f16, f32, q8_0 or q4_0, got '%s'\n", cmd, a, v);
            return -1;
        }
        if (k) p->cache_type_k = t;
        if (!k || both) p->cache_type_v = t;
    } else if (!strcmp(a, "--swa-full")) {
        p->swa_full = true;
    } else if (!strcmp(a, "--stats")) {
        f->stats = true;
    } else if (!strcmp(a, "--stats-json")) {
        VALUE();
        f->stats_json = v;
    } else if (!strcmp(a, "--stats-csv")) {
        VALUE();
        f->stats_csv = v;
    } else if (!strcmp(a, "--progress")) {
        f->progress = true;
    } else if (!strcmp(a, "--no-warm")) {
        f->no_warm = true;
    } else if (!strcmp(a, "--llama-ref")) {
        VALUE();
        sl_err err;
        if (sl_llama_rev_parse(v, &p->llama_rev, &err)) {
            fprintf(stderr, "sluice %s: --llama-ref: %s\n", cmd, err.msg);
            return -1;
        }
    } else {
        return llama_flags_parse(f, cmd, argc, argv, i);
    }
#undef VALUE
    return 1;
}

void model_flags_add_input(model_flags *f, const char *what, const char *path)
{
    if (path && f->n_inputs < (int)(sizeof f->inputs / sizeof f->inputs[0]))
        f->inputs[f->n_inputs++] = (file_role){what, path};
}

void model_flags_add_output(model_flags *f, const char *what, const char *path)
{
    if (path && f->n_outputs < (int)(sizeof f->outputs / sizeof f->outputs[0]))
        f->outputs[f->n_outputs++] = (file_role){what, path};
}

/* The outputs: --stats-json, --io-trace and the recorded ones. */
static size_t all_outputs(const model_flags *f, file_role *out)
{
    size_t n = 0;
    out[n++] = (file_role){"--stats-json", f->stats_json};
    out[n++] = (file_role){"--io-trace", f->params.io_trace_path};
    out[n++] = (file_role){"--stats-csv", f->stats_csv};
    for (int i = 0; i < f->n_outputs; i++) out[n++] = f->outputs[i];
    return n;
}

bool model_flags_check_outputs(const model_flags *f, const char *cmd, const char *path)
{
    file_role in[9], out[9];
    size_t n_in = 0;
    in[n_in++] = (file_role){"the model (-m)", path};
    if (f->route_trace) in[n_in++] = (file_role){"--route-trace", f->route_trace};
    for (int i = 0; i < f->n_inputs; i++) in[n_in++] = f->inputs[i];
    return outputs_check(cmd, in, n_in, out, all_outputs(f, out));
}

/* After loading: every part of a split model against the outputs. */
static bool check_parts(const model_flags *f, const char *cmd, const sl_model *m)
{
    file_role out[9];
    const size_t n_out = all_outputs(f, out);
    const uint32_t nf = sl_gguf_file_count(m->gguf);
    for (uint32_t i = 1; i < nf; i++) {
        file_role part = {"a part of the model (-m)", sl_gguf_file_path(m->gguf, i)};
        if (!outputs_check(cmd, &part, 1, out, n_out)) return false;
    }
    return true;
}

/* Where --stats' drive rate comes from, for the bound's line: the kept
 * lane curve (looked up before the load, which reads on its lanes) or why
 * not. */
static drive_rate kept_curve;
static bool kept_ok;
static char kept_why[4400];

/* The bound's drive rate: the best point of the kept lane curve, else a
 * calibration at start long enough to agree with iobench (docs/perf.md). */
static void drive_rate_for_bound(const char *cmd, sl_model *m)
{
    sl_err err;
    if (kept_ok && !sl_model_set_drive_rate(m, kept_curve.bps, &err)) return;
    if (!strncmp(kept_why, "ignoring", 8))
        fprintf(stderr, "sluice %s: warning: %s\n", cmd, kept_why);
    double bps;
    if (sl_model_calibrate_drive(m, (uint64_t)CAL_MIB << 20, CAL_MAX_S, &bps, &err))
        fprintf(stderr, "sluice %s: note: the drive calibration failed (%s); --stats "
                "prints no bound\n", cmd, err.msg);
}

/* --cache-policy and --route-trace, on the loaded model's runtime: the
 * trace must fit the model (layers, experts, every routed layer's top-k). */
static bool replay_setup(const model_flags *f, const char *cmd, sl_model *m, bool streaming)
{
    sl_err err;
    const char *flag = f->route_trace ? "--route-trace" : "--cache-policy";
    if (!streaming) {
        fprintf(stderr, "sluice %s: %s works on streamed experts, and this model is fully "
                "resident: add --moe-stream (and --cache-experts N or --cache-mb N for the "
                "cache size)\n", cmd, flag);
        return false;
    }
    if (f->cache_policy && sl_model_set_cache_policy(m, f->cache_policy, &err)) {
        fprintf(stderr, "sluice %s: --cache-policy: %s\n", cmd, err.msg);
        return false;
    }
    if (f->route_trace && sl_model_set_route_trace(m, f->route_trace, &err)) {
        fprintf(stderr, "sluice %s: --route-trace: %s\n", cmd, err.msg);
        return false;
    }
    return true;
}

/* --progress while the weights are read: at most 4 lines a second. */
typedef struct load_line {
    uint64_t t0, last;
    bool drawn;
} load_line;

static void load_progress(void *ud, uint64_t done, uint64_t total)
{
    load_line *l = ud;
    const uint64_t now = sl_now_ns();
    if (done < total && now - l->last < 250000000u) return;
    l->last = now;
    const double s = sl_ns_to_s(now - l->t0);
    fprintf(stderr, "\r[loading the weights: %.0f of %.0f MiB, %.0f MiB/s]  ",
            (double)done / (1024.0 * 1024.0), (double)total / (1024.0 * 1024.0),
            s > 0 ? (double)done / (1024.0 * 1024.0) / s : 0.0);
    l->drawn = true;
}

sl_model *model_flags_load(const model_flags *f, const char *cmd, const char *path)
{
    sl_model *m;
    sl_err err;
    if (!model_flags_check_outputs(f, cmd, path)) return NULL;
    if (getenv("SLUICE_LLAMA_REF")) /* read by earlier releases */
        fprintf(stderr, "sluice %s: warning: SLUICE_LLAMA_REF is set but no longer read; "
                "pass --llama-ref %s to follow that llama.cpp revision (this run follows "
                "%s)\n", cmd, getenv("SLUICE_LLAMA_REF"),
                sl_llama_rev_name(f->params.llama_rev));
    sl_model_params params = f->params;
    kept_ok = drive_rate_kept(path, &kept_curve, kept_why, sizeof kept_why);
    /* more lanes when the drive's curve wants them, never fewer than the
     * default 8: the load shares the count, and it faults its fresh pages
     * in on the lanes (8 loaded 1.3-3.4x faster than 4, docs/perf-log.md) */
    if (kept_ok && params.io_threads == 0 && kept_curve.lanes > DRIVE_MIN_LANES)
        params.io_threads = (int)kept_curve.lanes;
    load_line line = {sl_now_ns(), 0, false};
    if (f->progress) {
        params.load_progress = load_progress;
        params.load_progress_ud = &line;
    }
    const int lrc = sl_model_load(&m, path, &params, &err);
    if (line.drawn) fputc('\n', stderr);
    if (lrc) {
        /* the loader's messages often name the file already ("M: bad magic",
         * "cannot open 'M'"): say it once */
        size_t pl = strlen(path);
        if (!strncmp(err.msg, path, pl) && !strncmp(err.msg + pl, ": ", 2))
            fprintf(stderr, "sluice %s: cannot load '%s': %s\n", cmd, path, err.msg + pl + 2);
        else if (strstr(err.msg, path))
            fprintf(stderr, "sluice %s: cannot load the model: %s\n", cmd, err.msg);
        else
            fprintf(stderr, "sluice %s: cannot load '%s': %s\n", cmd, path, err.msg);
        return NULL;
    }
    if (!check_parts(f, cmd, m)) {
        sl_model_free(m);
        return NULL;
    }
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    if (f->params.io_trace_path && !st.streaming &&
        !outputs_write_file(cmd, "--io-trace", f->params.io_trace_path, "", 0)) {
        sl_model_free(m);
        return NULL;
    }
    if ((f->route_trace || f->cache_policy) && !replay_setup(f, cmd, m, st.streaming)) {
        sl_model_free(m);
        return NULL;
    }
    if (st.streaming && (f->stats || f->stats_json)) drive_rate_for_bound(cmd, m);
    if (st.streaming && !f->no_warm) warm_start_begin(cmd, m, path, true);
    if (f->params.cache_route_from && !st.streaming)
        fprintf(stderr, "sluice %s: note: --cache-route changes nothing here: every expert is "
                "resident (the model is not streamed), so each candidate counts as cached and "
                "the router's own choice is kept; add --moe-stream to route by the cache\n", cmd);
    if (f->stats_csv && !stats_csv_open(cmd, f->stats_csv, m)) {
        sl_model_free(m);
        return NULL;
    }
    if (st.warning[0]) fprintf(stderr, "sluice %s: warning: %s\n", cmd, st.warning);
    for (int i = 0; sl_model_warning(m, i); i++)
        fprintf(stderr, "sluice %s: warning: %s\n", cmd, sl_model_warning(m, i));
    if (st.io_direct_note[0]) fprintf(stderr, "sluice %s: note: %s\n", cmd, st.io_direct_note);
    if (st.io_uring_note[0])
        fprintf(stderr, "sluice %s: note: io_uring unavailable: %s\n", cmd, st.io_uring_note);
    return m;
}

#define MIB (1024.0 * 1024.0)

static double last_progress = -1.0;

/* The decode phase for the printed bound: the sums over every decoded
 * token (model_flags_progress with done > 0) of its wall time, stall,
 * cache management and bytes read. */
typedef struct decode_sums {
    uint64_t t_prev;        /* sl_now_ns() at the previous progress call */
    sl_stream_stats prev;   /* the counters then */
    long tokens;
    double wall_s, stall_s, manage_s;
    uint64_t bytes;
    bool marked;            /* sl_model_stream_mark was called */
} decode_sums;
static decode_sums dec;

static void decode_account(const sl_model *m, long done)
{
    /* the first prompt is in: the reads' queue and drive times from here
     * on are the decode's */
    if (done == 0 && !dec.marked) {
        sl_model_stream_mark(m);
        dec.marked = true;
    }
    sl_stream_stats now;
    sl_model_stream_stats(m, &now);
    const uint64_t t = sl_now_ns();
    if (done > 0 && dec.t_prev) {
        dec.tokens++;
        dec.wall_s += sl_ns_to_s(t - dec.t_prev);
        dec.stall_s += now.stall_s - dec.prev.stall_s;
        dec.manage_s += now.manage_s - dec.prev.manage_s;
        dec.bytes += now.window_bytes - dec.prev.window_bytes;
    }
    dec.t_prev = t;
    dec.prev = now;
}

void model_flags_progress(const model_flags *f, const sl_model *m, long done, double seconds)
{
    if (f->stats_csv) stats_csv_row(m, done);
    if (f->stats || f->stats_json) decode_account(m, done);
    if (!f->no_warm) warm_start_save(NULL, (sl_model *)m, false);
    if (done == 0) return; /* the prompt is done: a mark for --stats-csv */
    if (!f->progress || (last_progress >= 0 && seconds - last_progress < 0.5)) return;
    last_progress = seconds;
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    uint64_t rss = 0, peak = 0;
    sl_mem_rss(&rss, &peak);
    const uint64_t lookups = st.hits + st.misses;
    fprintf(stderr, "\r[%ld tokens, %.2f tok/s", done, seconds > 0 ? done / seconds : 0.0);
    if (st.streaming)
        fprintf(stderr, ", hit %.1f%%, stall %.1f ms/token",
                lookups ? 100.0 * (double)st.hits / (double)lookups : 100.0,
                done > 0 ? 1e3 * st.stall_s / (double)done : 0.0);
    fprintf(stderr, ", RSS %.0f MiB]  ", (double)rss / MIB);
    fflush(stderr);
}

void model_flags_progress_end(const model_flags *f)
{
    if (f->progress && last_progress >= 0) fputc('\n', stderr);
    last_progress = -1.0;
}

/* The trace lines the streamer wrote so far must have reached the file. */
static bool trace_ok(const model_flags *f, const char *cmd, const sl_model *m)
{
    sl_err err;
    if (!sl_model_io_trace_flush(m, &err)) return true;
    fprintf(stderr, "sluice %s: writing the I/O trace '%s' failed: %s\n", cmd,
            f->params.io_trace_path, err.msg);
    return false;
}

/* What the lossy knobs cost, one line (without a newline). */
static void knob_cost(FILE *out, const sl_knob_stats *k)
{
    fprintf(out, "experts used %d of the file's %d", k->n_expert_used, k->file_top_k);
    if (k->cache_route_from)
        fprintf(out, ", cache-route %d,%d", k->cache_route_keep, k->cache_route_from);
    fprintf(out, ": %.2f%% of the routing weight kept, %.2f%% of the router's choices changed",
            100.0 * k->weight_kept,
            k->choices ? 100.0 * (double)k->changed / (double)k->choices : 0.0);
    if (k->cache_route_from)
        fprintf(out, " (%llu experts taken for being cached)", (unsigned long long)k->substituted);
}

typedef struct bound_figures {
    bool decode;        /* of the decode phase (else of the whole run) */
    double achieved, bound; /* tok/s */
    double compute_s, io_s; /* per token */
    double bytes;       /* read per token */
    double drive_bps;
} bound_figures;

/* The figures of the bound; false without a drive calibration. */
static bool bound_of(const sl_model *m, const run_totals *t, const sl_stream_stats *st,
                     bound_figures *b)
{
    if (st->drive_bps <= 0) return false;
    b->decode = dec.tokens > 0;
    const double n = b->decode ? (double)dec.tokens : (t->tokens > 0 ? (double)t->tokens : 1.0);
    const double wall = b->decode ? dec.wall_s : t->seconds;
    b->compute_s = (b->decode ? dec.wall_s - dec.stall_s - dec.manage_s
                              : t->seconds - st->stall_s - st->manage_s) / n;
    b->bytes = (b->decode ? (double)dec.bytes : (double)st->window_bytes) / n;
    b->drive_bps = st->drive_bps;
    b->io_s = b->bytes / st->drive_bps;
    const double worst = b->compute_s > b->io_s ? b->compute_s : b->io_s;
    b->bound = worst > 0 ? 1.0 / worst : 0.0;
    b->achieved = wall > 0 ? n / wall : 0.0;
    return true;
}

/* The bound `1 / max(compute per token, bytes read per token / drive
 * rate)` of the decode phase (or of the whole run when nothing was
 * decoded one token at a time), beside the rate achieved, and the warm
 * start's preload. */
static void print_bound(const sl_model *m, const run_totals *t, const sl_stream_stats *st)
{
    if (st->warm_planned)
        fprintf(stderr, "warm start      %llu of %llu hottest experts preloaded (%.0f MiB in "
                "%.2f s: %.0f MiB/s), %llu of them used; history %s\n",
                (unsigned long long)st->warm_loaded, (unsigned long long)st->warm_planned,
                (double)st->warm_bytes / MIB,
                st->warm_s, st->warm_s > 0 ? (double)st->warm_bytes / MIB / st->warm_s : 0.0,
                (unsigned long long)st->warm_used, warm_start_path());
    else if (warm_start_path()[0])
        fprintf(stderr, "warm start      no history yet (cold start); it is kept in %s\n",
                warm_start_path());
    if (st->union_guessed)
        fprintf(stderr, "prefill ahead   each micro-batch's union for the next layer guessed "
                "%.1f%% right (%llu experts guessed)\n",
                100.0 * (double)st->union_right / (double)st->union_guessed,
                (unsigned long long)st->union_guessed);
    if (st->learned_sets)
        fprintf(stderr, "learned guesses %llu experts guessed for the next layer (%.2f per "
                "layer), %.1f%% right; %.1f%% of those layers' misses guessed (%llu of %llu)\n",
                (unsigned long long)st->learned_guessed,
                (double)st->learned_guessed / (double)st->learned_sets,
                st->learned_guessed ? 100.0 * (double)st->learned_right / (double)st->learned_guessed
                                   : 0.0,
                st->learned_right + st->learned_set_misses
                    ? 100.0 * (double)st->learned_right /
                          (double)(st->learned_right + st->learned_set_misses)
                    : 0.0,
                (unsigned long long)st->learned_right,
                (unsigned long long)(st->learned_right + st->learned_set_misses));
    if (st->prefetch_dropped)
        fprintf(stderr, "read ahead      %llu guesses dropped as too late (still queued when "
                "their layer came without them)\n", (unsigned long long)st->prefetch_dropped);
    bound_figures b;
    if (!bound_of(m, t, st, &b)) return;
    const bool decode = b.decode;
    const double got = b.achieved, bound = b.bound, compute = b.compute_s, io = b.io_s,
                 bytes = b.bytes;
    char src[4700];
    if (st->drive_cached)
        snprintf(src, sizeof src, "drive rate kept by `sluice iobench --expert` for this "
                 "device: the best point of its lane curve (%u lanes), measured %.1f h ago "
                 "(%s)", kept_curve.best_lanes, kept_curve.age_s / 3600.0, kept_curve.path);
    else
        snprintf(src, sizeof src, "drive calibrated on %.0f MiB of whole experts on %u lanes "
                 "at start (%s; `sluice iobench --model FILE --expert --lanes 1,2,4,8,16` "
                 "keeps a lane curve for this device)",
                 (double)st->drive_cal_bytes / MIB, st->drive_cal_lanes,
                 kept_why[0] ? kept_why : "no lane curve kept");
    fprintf(stderr, "bound           %s: %.2f tok/s achieved, bound %.2f tok/s = 1 / max(compute "
            "%.2f ms, %.2f MiB / %.0f MiB/s = %.2f ms) per token: %.0f%% of the bound (%s); "
            "%s\n",
            decode ? "decode" : "whole run", got, bound, 1e3 * compute, bytes / MIB,
            st->drive_bps / MIB, 1e3 * io, bound > 0 ? 100.0 * got / bound : 0.0,
            compute > io ? "compute-bound" : "I/O-bound", src);
}

/* --stats-json's drafting keys: the figures --stats prints on its draft
 * lines (draft_figures.h), and the counts behind them. */
static void draft_json(json_t *o, const sl_gen_draft_stats *d)
{
    if (d->off) {
        json_object_set_new(o, "draft_off", json_string(d->off));
        return;
    }
    draft_figures f;
    draft_figures_of(d, &f);
    const struct { const char *k; long v; } n[] = {
        {"draft_drafted", d->drafted},           {"draft_accepted", d->accepted},
        {"draft_verify_steps", d->verify_steps}, {"draft_evaluations", d->steps},
        {"draft_plain_timed", d->plain_timed},   {"draft_verify_timed", d->verify_timed},
        {"draft_switched_off", d->switched_off}, {"draft_probes", d->probes}};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        json_object_set_new(o, n[i].k, json_integer((json_int_t)n[i].v));
    const struct { const char *k; double v; } r[] = {
        {"draft_acceptance", f.acceptance},
        {"draft_tokens_per_verify", f.tokens_per_verify},
        {"draft_plain_step_ms", 1e3 * f.plain_step_s},
        {"draft_verify_step_ms", 1e3 * f.verify_step_s},
        {"draft_verify_tokens", f.verify_tokens},
        {"draft_gain", f.gain}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        json_object_set_new(o, r[i].k, json_real(r[i].v));
    json_t *held = json_array(), *at = json_array(), *acc = json_array();
    for (int i = 0; i < f.n_positions; i++) {
        json_array_append_new(held, json_real(f.held_at[i]));
        json_array_append_new(at, json_integer((json_int_t)d->drafted_at[i]));
        json_array_append_new(acc, json_integer((json_int_t)d->accepted_at[i]));
    }
    json_object_set_new(o, "draft_held_by_position", held);
    json_object_set_new(o, "draft_drafted_at", at);
    json_object_set_new(o, "draft_accepted_at", acc);
}

bool model_flags_report(const model_flags *f, const char *cmd, const sl_model *m,
                        const run_totals *t)
{
    if (!f->no_warm) warm_start_save(cmd, (sl_model *)m, true);
    const bool csv_ok = stats_csv_close(cmd);
    const bool trace = trace_ok(f, cmd, m) && csv_ok;
    sl_knob_stats ks;
    sl_model_knob_stats(m, &ks);
    if (ks.active && !f->stats) { /* every run with a lossy knob says what it cost */
        fprintf(stderr, "sluice %s: lossy routing: ", cmd);
        knob_cost(stderr, &ks);
        fputc('\n', stderr);
    }
    if (!f->stats && !f->stats_json) return trace;
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    uint64_t rss = 0, peak = 0, majflt = 0;
    double cpu = 0.0;
    sl_mem_rss(&rss, &peak);
    sl_proc_usage(&majflt, &cpu);
    const double toks = t->tokens > 0 ? (double)t->tokens : 1.0;
    const uint64_t lookups = st.hits + st.misses;
    const double hit_rate = lookups ? (double)st.hits / (double)lookups : 1.0;
    const double compute = t->seconds - st.stall_s - st.manage_s;
    if (f->stats) {
        fprintf(stderr, "\n--- sluice stats ---\n");
        fprintf(stderr, "mode            %s\n",
                st.streaming ? "streaming routed experts" : "fully resident");
        fprintf(stderr, "memory          budget %.0f MiB, dense %.0f MiB, KV and scratch %.0f MiB, ",
                (double)st.budget_bytes / MIB, (double)st.dense_bytes / MIB,
                (double)st.reserved_bytes / MIB);
        if (st.drafter_bytes)
            fprintf(stderr, "drafter %.1f MiB, ", (double)st.drafter_bytes / MIB);
        fprintf(stderr, "experts %.0f MiB (one token's cycle %.0f MiB)\n",
                (double)st.expert_bytes / MIB, (double)st.expert_cycle_bytes / MIB);
        if (st.kv_ctx > 0)
            fprintf(stderr, "kv cache        %.1f MiB for a context of %d (sliding-window "
                    "layers: %s)\n", (double)st.kv_bytes / MIB, st.kv_ctx,
                    f->params.swa_full ? "every position, --swa-full" : "a ring of their window");
        sl_load_stats ls;
        sl_model_load_stats(m, &ls);
        if (ls.seconds > 0)
            fprintf(stderr, "load            %.0f MiB of weights in %.3f s: %.0f MiB/s (%s)\n",
                    (double)ls.bytes / MIB, ls.seconds, (double)ls.bytes / MIB / ls.seconds,
                    ls.mode);
        if (st.streaming)
            fprintf(stderr, "expert cache    %llu experts, %.0f MiB; I/O %s\n",
                    (unsigned long long)st.n_slots, (double)st.cache_bytes / MIB, st.io_mode);
        fprintf(stderr, "tokens          %ld evaluated (%ld generated) in %.2f s: %.2f tok/s\n",
                t->tokens, t->generated, t->seconds, t->tokens / (t->seconds > 0 ? t->seconds : 1));
        fprintf(stderr, "time per token  %.2f ms: compute %.2f, cache management %.2f, "
                "flash stall %.2f\n",
                1e3 * t->seconds / toks, 1e3 * compute / toks, 1e3 * st.manage_s / toks,
                1e3 * st.stall_s / toks);
        if (st.streaming) {
            fprintf(stderr, "experts         hit rate %.1f%% (%llu hits, %llu misses), "
                    "%llu evictions, %llu re-reads\n",
                    100.0 * hit_rate, (unsigned long long)st.hits, (unsigned long long)st.misses,
                    (unsigned long long)st.evictions, (unsigned long long)st.rereads);
            if (st.guessed)
                fprintf(stderr, "prefetch        next layer's experts guessed %.1f%% right; "
                        "%llu read ahead: %llu used, %llu evicted unused\n",
                        100.0 * (double)st.guessed_right / (double)st.guessed,
                        (unsigned long long)st.prefetched, (unsigned long long)st.prefetch_used,
                        (unsigned long long)st.prefetch_wasted);
            fprintf(stderr, "cache policy    %s\n", st.cache_policy);
            if (st.replaying) {
                const int64_t wraps = st.replay_wraps;
                fprintf(stderr, "route replay    %s: %d steps (%d prompt, %d generated); "
                        "%lld replayed, ", f->route_trace, (int)st.replay_steps,
                        (int)st.replay_prompt, (int)(st.replay_steps - st.replay_prompt),
                        (long long)st.replay_done);
                if (wraps)
                    fprintf(stderr, "wrapped %lld time%s: past step %d the trace repeats, "
                            "which flatters the cache\n", (long long)wraps, wraps > 1 ? "s" : "",
                            (int)st.replay_steps);
                else
                    fprintf(stderr, "within the first pass\n");
            }
            fprintf(stderr, "flash           %.2f MiB/token (%.0f MiB read in %llu reads), "
                    "latency p50 %.0f us, p90 %.0f us, p99 %.0f us\n",
                    (double)st.window_bytes / MIB / toks, (double)st.window_bytes / MIB,
                    (unsigned long long)st.reads, st.lat_p50_us, st.lat_p90_us, st.lat_p99_us);
            if (st.mark_reads)
                fprintf(stderr, "decode reads    %llu after the prompt: queued for a lane p50 %.0f "
                        "us, p90 %.0f us, p99 %.0f us; at the drive p50 %.0f us, p90 %.0f us, "
                        "p99 %.0f us; lanes busy %.1f%%\n",
                        (unsigned long long)st.mark_reads, st.mark_queue_p50_us,
                        st.mark_queue_p90_us, st.mark_queue_p99_us, st.mark_drive_p50_us,
                        st.mark_drive_p90_us, st.mark_drive_p99_us, 100.0 * st.mark_lanes_busy);
            print_bound(m, t, &st);
        } else if (dec.tokens > 0) {
            /* the decode phase alone, as the streamed bound's compute is taken: the
             * time per token above averages the prompt's batched tokens in */
            fprintf(stderr, "decode          %.2f tok/s: %.2f ms per decoded token (%ld "
                    "tokens; compare with a streamed run's bound compute)\n",
                    dec.wall_s > 0 ? (double)dec.tokens / dec.wall_s : 0.0,
                    1e3 * dec.wall_s / (double)dec.tokens, dec.tokens);
        }
        if (ks.active) {
            fprintf(stderr, "lossy routing   ");
            knob_cost(stderr, &ks);
            fputc('\n', stderr);
        }
        fprintf(stderr, "process         RSS %.0f MiB (peak %.0f MiB), %llu major faults, "
                "%.3f CPU s/token\n",
                (double)rss / MIB, (double)peak / MIB, (unsigned long long)majflt, cpu / toks);
    }
    if (f->stats_json) {
        /* one line, on jansson (util/json.h); integers exact, reals shortest */
#define U(x) (json_int_t)(x)
        json_t *o = json_object();
        json_t *more = json_pack(
            "{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f}",
            "streaming", (int)st.streaming, "budget_bytes", U(st.budget_bytes), "dense_bytes",
            U(st.dense_bytes), "drafter_bytes", U(st.drafter_bytes), "expert_bytes", U(st.expert_bytes), "expert_cycle_bytes",
            U(st.expert_cycle_bytes), "cache_bytes", U(st.cache_bytes), "cache_experts",
            U(st.n_slots), "tokens", U(t->tokens), "generated", U(t->generated), "seconds",
            t->seconds, "compute_s", compute, "manage_s", st.manage_s, "stall_s", st.stall_s);
        json_t *io = json_pack(
            "{s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f}",
            "hits", U(st.hits), "misses", U(st.misses), "hit_rate", hit_rate, "evictions",
            U(st.evictions), "rereads", U(st.rereads), "reads", U(st.reads), "read_bytes",
            U(st.read_bytes), "window_bytes", U(st.window_bytes), "mib_per_token",
            (double)st.window_bytes / MIB / toks, "lat_p50_us", st.lat_p50_us, "lat_p90_us",
            st.lat_p90_us, "lat_p99_us", st.lat_p99_us);
        json_t *proc = json_pack(
            "{s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I}",
            "rss_bytes", U(rss), "peak_rss_bytes", U(peak), "major_faults", U(majflt),
            "cpu_s_per_token", cpu / toks, "prefetched", U(st.prefetched), "prefetch_used",
            U(st.prefetch_used), "prefetch_wasted", U(st.prefetch_wasted), "guessed",
            U(st.guessed), "guessed_right", U(st.guessed_right));
#undef U
        /* one flat object, the keys in the order above */
        char *json = NULL;
        sl_load_stats lj;
        sl_model_load_stats(m, &lj);
        if (proc) {
            json_object_set_new(proc, "load_bytes", json_integer((json_int_t)lj.bytes));
            json_object_set_new(proc, "load_s", json_real(lj.seconds));
        }
        bound_figures bf;
        if (proc && st.streaming && bound_of(m, t, &st, &bf)) {
            json_object_set_new(proc, "drive_bytes_per_s", json_real(bf.drive_bps));
            json_object_set_new(proc, "drive_source",
                                json_string(st.drive_cached ? "iobench" : "calibration"));
            json_object_set_new(proc, "drive_lanes",
                                json_integer(st.drive_cached ? kept_curve.best_lanes
                                                             : st.drive_cal_lanes));
            json_object_set_new(proc, "bound_phase", json_string(bf.decode ? "decode" : "run"));
            json_object_set_new(proc, "bound_tok_s", json_real(bf.bound));
            json_object_set_new(proc, "achieved_tok_s", json_real(bf.achieved));
        }
        if (proc && st.streaming) {
            json_object_set_new(proc, "warm_planned", json_integer((json_int_t)st.warm_planned));
            json_object_set_new(proc, "warm_loaded", json_integer((json_int_t)st.warm_loaded));
            json_object_set_new(proc, "warm_used", json_integer((json_int_t)st.warm_used));
            json_object_set_new(proc, "warm_bytes", json_integer((json_int_t)st.warm_bytes));
            json_object_set_new(proc, "prefetch_dropped",
                                json_integer((json_int_t)st.prefetch_dropped));
            if (st.mark_reads) {
                const struct { const char *k; double v; } dr[] = {
                    {"dec_queue_p50_us", st.mark_queue_p50_us},
                    {"dec_queue_p90_us", st.mark_queue_p90_us},
                    {"dec_queue_p99_us", st.mark_queue_p99_us},
                    {"dec_drive_p50_us", st.mark_drive_p50_us},
                    {"dec_drive_p90_us", st.mark_drive_p90_us},
                    {"dec_drive_p99_us", st.mark_drive_p99_us},
                    {"dec_lanes_busy", st.mark_lanes_busy}};
                json_object_set_new(proc, "dec_reads", json_integer((json_int_t)st.mark_reads));
                for (size_t i = 0; i < sizeof dr / sizeof dr[0]; i++)
                    json_object_set_new(proc, dr[i].k, json_real(dr[i].v));
            }
        }
        if (ks.active && proc) {
            json_object_set_new(proc, "knob_experts_used", json_integer(ks.n_expert_used));
            json_object_set_new(proc, "knob_cache_route_keep", json_integer(ks.cache_route_keep));
            json_object_set_new(proc, "knob_cache_route_from", json_integer(ks.cache_route_from));
            json_object_set_new(proc, "knob_weight_kept", json_real(ks.weight_kept));
            json_object_set_new(proc, "knob_choices", json_integer((json_int_t)ks.choices));
            json_object_set_new(proc, "knob_changed", json_integer((json_int_t)ks.changed));
            json_object_set_new(proc, "knob_substituted", json_integer((json_int_t)ks.substituted));
        }
        if (proc && t->draft) draft_json(proc, t->draft);
        if (o && more && io && proc && !json_object_update(o, more) &&
            !json_object_update(o, io) && !json_object_update(o, proc))
            json = sl_json_dump_text(o, false);
        json_decref(o);
        json_decref(more);
        json_decref(io);
        json_decref(proc);
        char *line = json ? realloc(json, strlen(json) + 2) : NULL;
        if (!line) {
            free(json);
            fprintf(stderr, "sluice %s: --stats-json: out of memory\n", cmd);
            return false;
        }
        size_t n = strlen(line);
        line[n++] = '\n';
        line[n] = '\0';
        bool wrote = outputs_write_file(cmd, "--stats-json", f->stats_json, line, n);
        free(line);
        if (!wrote) return false;
    }
    return trace;
}
