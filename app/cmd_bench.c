/* cmd_bench.c - `sluice bench`: prompt and generation speed of a model, like
 * llama-bench, and `--kernels`: matvec GB/s per weight type against the
 * machine's measured memory bandwidth. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "model_flags.h"
#include "commands.h"
#include "engine/session.h"
#include "model/model.h"
#include "quant/quant.h"
#include "sluice.h"
#include "util/pool.h"
#include "util/timer.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice bench -m MODEL.gguf [options]\n"
            "       sluice bench --kernels [-t N] [--mb N] [--kernel-types LIST [--rounds N]]\n"
            "\n"
            "Measures prompt processing (pp) and token generation (tg) speed.\n"
            "\n"
            "  -m, --model FILE   model to run\n"
            "  -p, --n-prompt N   prompt tokens per pp test (default 512; 0 skips pp)\n"
            "  -n, --n-gen N      generated tokens per tg test (default 128; 0 skips tg)\n"
            "  -r, --repetitions N  runs of each test (default 3)\n"
            "      --no-warmup    time from the first run (by default each test runs\n"
            "                     once untimed first, as llama-bench does)\n"
            "  -d, --n-depth N[,N...]  tokens of existing context before each test,\n"
            "                     evaluated untimed once per depth and kept between runs\n"
            "                     (llama-bench's depth; default 0). With several depths\n"
            "                     the runs alternate between them, so their ratio is\n"
            "                     measured over the same stretch of time\n"
            "  -b, -ub N         prompt micro-batch: tokens evaluated together, each\n"
            "                     expert's weights read once per micro-batch (default 512)\n"
            "      --json         one JSON object per test instead of the table\n"
            "      --kernels      matvec GB/s per weight type vs measured memory bandwidth\n"
            "      --mb N         weight bytes per kernel matrix, MiB (default 256)\n"
            "      --kernel-types LIST  with --kernels: only these types (comma-separated,\n"
            "                     TYPE or TYPE:x8 for the eight-row interleaved layout, e.g.\n"
            "                     q4_K,mxfp4:x8), all in memory at once and timed in turn,\n"
            "                     round after round, with a read sweep: medians of GB/s and\n"
            "                     of each round's ratio to the first type (ratios that hold\n"
            "                     while the machine's memory bandwidth moves)\n"
            "      --rounds N     rounds for --kernel-types (default 15)\n"
            "\nModel and streaming options:\n");
    model_flags_help(f);
}

typedef struct stats {
    double mean, sd;
} stats;

static stats summarise(const double *v, int n)
{
    stats s = {0, 0};
    for (int i = 0; i < n; i++) s.mean += v[i];
    s.mean /= n;
    for (int i = 0; i < n; i++) s.sd += (v[i] - s.mean) * (v[i] - s.mean);
    s.sd = n > 1 ? sqrt(s.sd / (n - 1)) : 0.0;
    return s;
}

/* Deterministic pseudo-random token ids (benchmarks need no tokenizer). */
static void fill_tokens(int32_t *t, int n, int n_vocab, uint64_t seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = (int32_t)((seed >> 33) % (uint64_t)n_vocab);
    }
}

/* The type holding most weight bytes, as llama-bench's "type" column. */
static const char *dominant_type(const sl_model *m)
{
    uint64_t bytes[SL_TYPE_COUNT] = {0};
    for (uint64_t i = 0; i < sl_gguf_tensor_count(m->gguf); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(m->gguf, i);
        if (t->type < SL_TYPE_COUNT) bytes[t->type] += t->nbytes;
    }
    int best = 0;
    for (int i = 1; i < SL_TYPE_COUNT; i++)
        if (bytes[i] > bytes[best]) best = i;
    return sl_type_name((uint32_t)best);
}

/* Evaluates toks[0..n) in micro-batches of batch tokens. */
static int eval_all(sl_session *s, const int32_t *toks, int n, int batch, sl_err *err)
{
    int rc = 0;
    for (int i = 0; i < n && !rc; i += batch)
        rc = sl_session_eval(s, toks + i, n - i < batch ? n - i : batch, err);
    return rc;
}

/* CPU seconds the process has used (every thread; the pool's waits spin,
 * so waiting threads count too). */
static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The most depths one `-d` list may name. */
#define MAX_DEPTHS 16

/* The largest of the n depths d[]. */
static int deepest(const int *d, int n)
{
    int m = 0;
    for (int k = 0; k < n; k++) m = d[k] > m ? d[k] : m;
    return m;
}

/* Brings s to the depth tokens of context toks[0..depth): back to them by
 * truncation when the session still holds them, else (the first time, or
 * a recurrent or sliding-window layer that cannot go back that far)
 * evaluated again from empty, untimed. */
static int to_depth(sl_session *s, const int32_t *toks, int depth, int batch, sl_err *err)
{
    sl_err refused;
    if (depth > 0 && sl_session_n_past(s) >= depth &&
        sl_session_truncate_err(s, depth, &refused) == 0)
        return 0;
    sl_session_truncate(s, 0);
    sl_session_set_prompt(s, depth);
    return depth > 0 ? eval_all(s, toks, depth, batch, err) : 0;
}

/* The sessions of a depth list, one per depth, each holding its depth
 * tokens of context (evaluated once, kept between runs and between the pp
 * and tg tests) and room for the longer test after them; ctx the context
 * tokens (the deepest depth's; a shallower one takes its first tokens),
 * test room for one test's tokens. */
typedef struct depth_set {
    sl_session *s[MAX_DEPTHS];
    int depth[MAX_DEPTHS];
    int n;
    int32_t *ctx, *test;
} depth_set;

static void depth_set_free(depth_set *d)
{
    for (int k = 0; k < d->n; k++) sl_session_free(d->s[k]);
    free(d->ctx);
}

/* Creates a session for each of nd depths with room for depth + n_test + 1
 * tokens, warmed by one token (so first-touch costs do not land in run 1).
 * On failure frees what it made and returns the error. */
static int depth_set_open(depth_set *d, sl_model *m, const int *depths, int nd, int n_test,
                          int batch, sl_err *err)
{
    memset(d, 0, sizeof *d);
    const int n_vocab = sl_model_n_vocab(m), max_depth = deepest(depths, nd);
    d->ctx = malloc(sizeof(int32_t) * ((size_t)max_depth + (size_t)n_test + 1));
    if (!d->ctx) return sl_err_set(err, SL_ENOMEM, "out of memory");
    d->test = d->ctx + max_depth;
    fill_tokens(d->ctx, max_depth, n_vocab, 1000);
    int rc = 0;
    for (int k = 0; k < nd && !rc; k++) {
        sl_session_params sp = sl_session_default_params();
        sp.n_ctx = depths[k] + n_test + 1;
        sp.n_batch_max = batch;
        if ((rc = sl_session_create(&d->s[k], m, &sp, err))) break;
        d->depth[k] = depths[k];
        d->n = k + 1;
        fill_tokens(d->test, 1, n_vocab, 99);
        rc = sl_session_eval(d->s[k], d->test, 1, err);
    }
    if (rc) depth_set_free(d);
    return rc;
}

/* One test (pp n_prompt or tg n_gen) at each depth of the set, reps times,
 * after an untimed warm-up run at each depth (warmup: first touches,
 * streamed experts' first reads and a cold CPU do not land in run 0); the
 * runs alternate between the depths (run r at every depth, then run r
 * + 1), so a ratio between depths is measured in one stretch of time even
 * where the machine's speed drifts. tps[k reps + r] is the rate of run r
 * at depth k, cpu[k reps + r] its process CPU milliseconds per token (less
 * sensitive than the rate to other jobs on a shared machine). */
static int run_tests(sl_model *m, const model_flags *mf, depth_set *d, int n_prompt, int n_gen,
                     int batch, int reps, bool warmup, double *tps, double *cpu, sl_err *err)
{
    const int n_test = n_prompt + n_gen;
    int rc = 0;
    for (int r = warmup ? -1 : 0; r < reps && !rc; r++) {
        fill_tokens(d->test, n_test, sl_model_n_vocab(m), 2000 + (uint64_t)r);
        for (int k = 0; k < d->n && !rc; k++) {
            sl_session *s = d->s[k];
            if ((rc = to_depth(s, d->ctx, d->depth[k], batch, err))) break;
            /* attention as llama.cpp's for a prompt of the context and the
             * pp test, or for tokens generated after the context */
            sl_session_set_prompt(s, d->depth[k] + n_prompt);
            const double c0 = process_cpu_s();
            uint64_t t0 = sl_now_ns();
            const bool timed = r >= 0; /* the warm-up run reports nothing */
            double rate;
            if (n_prompt > 0) {
                rc = eval_all(s, d->test, n_prompt, batch, err);
                rate = n_prompt / sl_ns_to_s(sl_now_ns() - t0);
            } else {
                /* a --stats-csv row for what came before */
                if (timed) model_flags_progress(mf, m, 0, 0.0);
                for (int i = 0; i < n_gen && !rc; i++) {
                    rc = sl_session_eval(s, d->test + i, 1, err);
                    if (timed) model_flags_progress(mf, m, i + 1, sl_ns_to_s(sl_now_ns() - t0));
                }
                if (timed) model_flags_progress_end(mf);
                rate = n_gen / sl_ns_to_s(sl_now_ns() - t0);
            }
            if (!timed) continue;
            tps[(size_t)k * reps + r] = rate;
            cpu[(size_t)k * reps + r] = 1e3 * (process_cpu_s() - c0) / n_test;
        }
    }
    return rc;
}

/* One result line: the table's row, or a JSON object (--json). */
static void print_row(const sl_model *m, const char *path, int nth, int depth, int np, int ng,
                      int reps, const double *tps, const double *cpu, int tw, bool json)
{
    stats st = summarise(tps, reps), sc = summarise(cpu, reps);
    const double gib = (double)(m->dense_bytes + m->expert_bytes) / (1u << 30);
    char test[32];
    if (depth > 0) /* llama-bench's name for a test at depth */
        snprintf(test, sizeof test, "%s%d @ d%d", np ? "pp" : "tg", np ? np : ng, depth);
    else
        snprintf(test, sizeof test, "%s%d", np ? "pp" : "tg", np ? np : ng);
    if (json)
        printf("{\"model\":\"%s\",\"arch\":\"%s\",\"size_bytes\":%llu,\"type\":\"%s\","
               "\"threads\":%d,\"test\":\"%s\",\"n_prompt\":%d,\"n_gen\":%d,"
               "\"n_depth\":%d,\"repetitions\":%d,\"tps_mean\":%.4f,\"tps_sd\":%.4f,"
               "\"cpu_ms_per_token\":%.4f}\n",
               path, sl_model_arch_name(m),
               (unsigned long long)(m->dense_bytes + m->expert_bytes), dominant_type(m), nth,
               test, np, ng, depth, reps, st.mean, st.sd, sc.mean);
    else
        printf("| %-10s | %6.2f GiB | %-6s | %7d | %*s | %11.2f ± %6.2f |\n",
               sl_model_arch_name(m), gib, dominant_type(m), nth, tw, test, st.mean, st.sd);
}

static int bench_model(const char *path, const int *depths, int nd, int n_prompt, int n_gen,
                       int reps, const model_flags *mf, int batch, bool json, bool warmup)
{
    sl_model *m = model_flags_load(mf, "bench", path);
    if (!m) return 1;
    sl_err err;
    const int threads = mf->params.n_threads;
    const int nth = threads > 0 ? threads : sl_cpu_core_count();
    run_totals totals = {0, 0, 0, NULL};
    long depth_sum = 0;
    for (int k = 0; k < nd; k++) depth_sum += depths[k];
    const bool deep = deepest(depths, nd) > 0;
    const int tw = deep ? 14 : 8;
    if (!json) {
        /* the test column widens for names with a depth ("pp512 @ d4096") */
        printf("| %-10s | %10s | %-6s | %7s | %*s | %20s |\n", "model", "size", "type",
               "threads", tw, "test", "t/s");
        printf("| %-10s | %10s | %-6s | %7s | %*s | %20s |\n", "----------", "---------:",
               "------", "------:", tw, deep ? "-------------:" : "-------:",
               "-------------------:");
    }
    depth_set set;
    uint64_t t_open = sl_now_ns();
    int rc = depth_set_open(&set, m, depths, nd, n_prompt > n_gen ? n_prompt : n_gen, batch, &err);
    totals.seconds += sl_ns_to_s(sl_now_ns() - t_open);
    totals.tokens += nd;
    if (rc) {
        fprintf(stderr, "sluice bench: %s\n", err.msg);
        model_flags_report(mf, "bench", m, &totals);
        sl_model_free(m);
        return 1;
    }
    for (int which = 0; which < 2 && !rc; which++) {
        int np = which == 0 ? n_prompt : 0, ng = which == 1 ? n_gen : 0;
        if (np == 0 && ng == 0) continue;
        double *tps = calloc(2 * (size_t)nd * (size_t)reps, sizeof *tps);
        double *cpu = tps ? tps + (size_t)nd * reps : NULL;
        if (!tps) {
            fprintf(stderr, "sluice bench: out of memory\n");
            rc = 1;
            break;
        }
        uint64_t t0 = sl_now_ns();
        rc = run_tests(m, mf, &set, np, ng, batch, reps, warmup, tps, cpu, &err);
        totals.seconds += sl_ns_to_s(sl_now_ns() - t0);
        const long runs = reps + (warmup ? 1 : 0);
        totals.tokens += (long)nd * runs * (np + ng);
        totals.generated += runs * nd * ng;
        if (rc) {
            fprintf(stderr, "sluice bench: %s\n", err.msg);
            free(tps);
            break;
        }
        for (int k = 0; k < nd; k++)
            print_row(m, path, nth, depths[k], np, ng, reps, tps + (size_t)k * reps,
                      cpu + (size_t)k * reps, tw, json);
        free(tps);
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "sluice bench: cannot write standard output: %s\n",
                    errno ? strerror(errno) : "an earlier write failed");
            rc = 1;
        }
    }
    depth_set_free(&set);
    totals.tokens += depth_sum; /* the contexts, evaluated once (to_depth may redo some) */
    if (!model_flags_report(mf, "bench", m, &totals)) rc = 1;
    sl_model_free(m);
    return rc ? 1 : 0;
}

/* Parses -d's comma-separated depths ("0,4096,8192") into d[0..*nd). */
static bool parse_depths(const char *flag, const char *v, int *d, int *nd)
{
    char buf[256];
    if (strlen(v) >= sizeof buf) {
        fprintf(stderr, "sluice bench: %s: list too long\n", flag);
        return false;
    }
    strcpy(buf, v);
    *nd = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        long x;
        if (*nd == MAX_DEPTHS) {
            fprintf(stderr, "sluice bench: %s takes at most %d depths\n", flag, MAX_DEPTHS);
            return false;
        }
        if (!arg_int("bench", flag, tok, 0, 1 << 22, &x)) return false;
        d[(*nd)++] = (int)x;
    }
    if (*nd == 0) return arg_int("bench", flag, v, 0, 1 << 22, &(long){0}); /* "" or "," */
    return true;
}

int bench_kernels(int threads, int mb); /* bench_kernels.c */
int bench_kernels_paired(int threads, int mb, const char *types, int rounds);

int cmd_bench(int argc, char **argv)
{
    const char *model = NULL;
    long n_prompt = 512, n_gen = 128, reps = 3, batch = 512, mb = 256, rounds = 15;
    int depths[MAX_DEPTHS] = {0}, nd = 1;
    const char *kernel_types = NULL;
    model_flags mf;
    model_flags_init(&mf);
    bool json = false, kernels = false, warmup = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int shared = model_flags_parse(&mf, "bench", argc, argv, &i);
        if (shared < 0) return 2;
        if (shared > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--no-warmup")) {
            warmup = false;
        } else if (!strcmp(a, "--kernels")) {
            kernels = true;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = arg_value("bench", argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) {
            if (!(v = arg_value("bench", argc, argv, &i)) ||
                !arg_int("bench", a, v, 0, 1 << 20, &n_prompt))
                return 2;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) {
            if (!(v = arg_value("bench", argc, argv, &i)) ||
                !arg_int("bench", a, v, 0, 1 << 20, &n_gen))
                return 2;
        } else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) {
            if (!(v = arg_value("bench", argc, argv, &i)) || !parse_depths(a, v, depths, &nd))
                return 2;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            if (!(v = arg_value("bench", argc, argv, &i)) || !arg_int("bench", a, v, 1, 1000, &reps))
                return 2;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch") || !strcmp(a, "-ub") ||
                   !strcmp(a, "--ubatch") || !strcmp(a, "--ubatch-size")) {
            if (!(v = arg_value("bench", argc, argv, &i)) || !arg_int("bench", a, v, 1, 1 << 16, &batch))
                return 2;
        } else if (!strcmp(a, "--kernel-types")) {
            if (!(kernel_types = arg_value("bench", argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--rounds")) {
            if (!(v = arg_value("bench", argc, argv, &i)) || !arg_int("bench", a, v, 1, 10000, &rounds))
                return 2;
        } else if (!strcmp(a, "--mb")) {
            if (!(v = arg_value("bench", argc, argv, &i)) || !arg_int("bench", a, v, 1, 1 << 16, &mb))
                return 2;
        } else {
            fprintf(stderr, "sluice bench: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (kernel_types && !kernels) {
        fprintf(stderr, "sluice bench: --kernel-types needs --kernels\n");
        return 2;
    }
    if (kernels) {
        /* which kernel set the dispatch chose: avx2, neon, neon+dotprod, ref */
        printf("kernels: %s\n", sl_quant_kernel_set());
        if (kernel_types)
            return bench_kernels_paired(mf.params.n_threads, (int)mb, kernel_types, (int)rounds);
        return bench_kernels(mf.params.n_threads, (int)mb);
    }
    if (!model) {
        fprintf(stderr, "sluice bench: no model given (-m FILE); see --help\n");
        return 2;
    }
    if (n_prompt == 0 && n_gen == 0) {
        fprintf(stderr, "sluice bench: nothing to do: -p and -n are both 0\n");
        return 2;
    }
    mf.params.n_ctx_hint = (int)(deepest(depths, nd) + (n_prompt > n_gen ? n_prompt : n_gen) + 1);
    return bench_model(model, depths, nd, (int)n_prompt, (int)n_gen, (int)reps, &mf, (int)batch,
                       json, warmup);
}
