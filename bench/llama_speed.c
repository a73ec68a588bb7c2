/* llama_speed.c - llama.cpp's prompt and generation speed on a GGUF file,
 * timed the way llama-bench times it, so that `sluice bench` can be compared
 * with llama.cpp row by row (bench/depth_curve.sh):
 *
 *   llama_speed -m MODEL [-p N] [-n M] [-d D] [-r R] [-t T] [-b 2048] [-ub 512]
 *               [-ctk TYPE] [-ctv TYPE] [-fa auto|on|off] [--no-repack] [--lazy] [--json]
 *
 * --no-repack keeps the weights in llama.cpp's mapping of the file instead
 * of the CPU backend's repacked copy (which is as large as the weights, so a
 * memory cgroup smaller than the model cannot hold it); --lazy asks for
 * llama.cpp's on-demand reading of the tensors its arch marks. *
 * As llama-bench, two tests (defaults -p 512 -n 128; 0 skips one): pp N (N
 * prompt tokens submitted in batches of -b, which llama.cpp splits into
 * micro-batches of -ub), then tg M (M single-token decodes); each after D
 * tokens of context evaluated untimed (llama-bench's -d), R times. Tokens are
 * pseudo-random ids (BOS first, as llama-bench), the context holds exactly
 * D + N + M tokens, and a warm-up batch of 32 tokens runs first so
 * first-touch costs of the mapped file do not land in the timed run. Prints
 * one llama-bench table row per test ("pp512 @ d4096", tok/s mean ± sd over
 * the R runs), or with --json one object per test with tps_mean / tps_sd.
 * Built by bench/depth_curve.sh (as bench/llama_ref.sh builds llama_kld)
 * against the node-llama-cpp npm package's llama.cpp libraries, installed
 * into build/llama-ref; LLAMA_CPU_BACKEND names the CPU backend library
 * (unset: the CPU backend linked in, as in a static build of llama.cpp).
 * Flash attention is llama.cpp's default (auto: on for the CPU). A
 * developer tool: not part of the library or the suite. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

typedef struct opts {
    const char *model;
    int n_prompt, n_gen, depth, reps, threads, n_batch, n_ubatch;
    enum ggml_type type_k, type_v;
    enum llama_flash_attn_type fa;
    int json, no_repack, lazy;
} opts;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool no_progress(float progress, void *ud)
{
    (void)progress;
    (void)ud;
    return true;
}

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* The ggml type of a cache type name; -1 for an unknown name. */
static int cache_type(const char *v, enum ggml_type *out)
{
    if (!strcmp(v, "f16")) *out = GGML_TYPE_F16;
    else if (!strcmp(v, "f32")) *out = GGML_TYPE_F32;
    else if (!strcmp(v, "q8_0")) *out = GGML_TYPE_Q8_0;
    else if (!strcmp(v, "q4_0")) *out = GGML_TYPE_Q4_0;
    else return -1;
    return 0;
}

/* A non-negative integer option value in [lo, hi]; -1 when malformed. */
static int int_arg(const char *name, const char *v, int lo, int hi)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < lo || x > hi) {
        fprintf(stderr, "llama_speed: %s needs an integer in [%d, %d], not '%s'\n", name, lo, hi,
                v ? v : "");
        return -1;
    }
    return (int)x;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){NULL, 512, 128, 0, 3, 2, 2048, 512, GGML_TYPE_F16, GGML_TYPE_F16,
                LLAMA_FLASH_ATTN_TYPE_AUTO, 0, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *dst = NULL, lo = 0, hi = 1 << 22;
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--no-repack")) { o->no_repack = 1; continue; }
        if (!strcmp(a, "--lazy")) { o->lazy = 1; continue; }
        if (!strcmp(a, "-m")) {
            if (!v) break;
            o->model = v;
            i++;
            continue;
        }
        if (!strcmp(a, "-ctk") || !strcmp(a, "-ctv")) {
            if (!v || cache_type(v, a[3] == 'k' ? &o->type_k : &o->type_v)) {
                fprintf(stderr, "llama_speed: %s must be f16, f32, q8_0 or q4_0\n", a);
                return -1;
            }
            i++;
            continue;
        }
        if (!strcmp(a, "-fa")) {
            if (v && !strcmp(v, "on")) o->fa = LLAMA_FLASH_ATTN_TYPE_ENABLED;
            else if (v && !strcmp(v, "off")) o->fa = LLAMA_FLASH_ATTN_TYPE_DISABLED;
            else if (v && !strcmp(v, "auto")) o->fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
            else {
                fprintf(stderr, "llama_speed: -fa must be on, off or auto\n");
                return -1;
            }
            i++;
            continue;
        }
        if (!strcmp(a, "-p")) dst = &o->n_prompt;
        else if (!strcmp(a, "-n")) dst = &o->n_gen;
        else if (!strcmp(a, "-d")) dst = &o->depth;
        else if (!strcmp(a, "-r")) dst = &o->reps, lo = 1, hi = 1000;
        else if (!strcmp(a, "-t")) dst = &o->threads, lo = 1, hi = 1024;
        else if (!strcmp(a, "-b")) dst = &o->n_batch, lo = 1;
        else if (!strcmp(a, "-ub")) dst = &o->n_ubatch, lo = 1;
        else {
            fprintf(stderr, "llama_speed: unknown option '%s'\n", a);
            return -1;
        }
        if ((*dst = int_arg(a, v, lo, hi)) < 0) return -1;
        i++;
    }
    if (!o->model) {
        fprintf(stderr, "usage: llama_speed -m MODEL [-p N] [-n M] [-d D] [-r R] [-t T] [-b B] "
                        "[-ub U] [-ctk T] [-ctv T] [-fa auto|on|off] [--no-repack] [--lazy] [--json]\n");
        return -1;
    }
    if (o->n_prompt == 0 && o->n_gen == 0) {
        fprintf(stderr, "llama_speed: nothing to do: -p and -n are both 0\n");
        return -1;
    }
    if (o->n_ubatch > o->n_batch) o->n_ubatch = o->n_batch;
    return 0;
}

/* Deterministic pseudo-random token ids, BOS first when the vocabulary adds
 * one and first is set. */
static void fill(llama_token *t, int n, const struct llama_vocab *vocab, int first,
                 uint64_t *seed)
{
    const int n_vocab = llama_vocab_n_tokens(vocab);
    for (int i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = (llama_token)((*seed >> 33) % (uint64_t)n_vocab);
    }
    if (first && n > 0 && llama_vocab_get_add_bos(vocab)) t[0] = llama_vocab_bos(vocab);
}

/* Evaluates n tokens in batches of n_batch (llama-bench's test_prompt). */
static int prompt(struct llama_context *ctx, llama_token *buf, int n, int n_batch, int first,
                  uint64_t *seed)
{
    const struct llama_vocab *vocab = llama_model_get_vocab(llama_get_model(ctx));
    for (int done = 0; done < n;) {
        const int k = n - done < n_batch ? n - done : n_batch;
        fill(buf, k, vocab, first && done == 0, seed);
        if (llama_decode(ctx, llama_batch_get_one(buf, k))) return -1;
        done += k;
    }
    llama_synchronize(ctx);
    return 0;
}

/* n single-token decodes (llama-bench's test_gen). */
static int gen(struct llama_context *ctx, int n, uint64_t *seed)
{
    const struct llama_vocab *vocab = llama_model_get_vocab(llama_get_model(ctx));
    llama_token t;
    for (int i = 0; i < n; i++) {
        fill(&t, 1, vocab, 0, seed);
        if (llama_decode(ctx, llama_batch_get_one(&t, 1))) return -1;
        llama_synchronize(ctx);
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o)) return 2;
    const char *backend = getenv("LLAMA_CPU_BACKEND");
    llama_log_set(quiet, NULL);
    /* A static build of llama.cpp (GGML_BACKEND_DL off) registers its CPU
     * backend itself; the npm package's libraries need it loaded. */
    if (backend ? !ggml_backend_load(backend)
                : !ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) {
        fprintf(stderr, "llama_speed: cannot load the CPU backend '%s' (set LLAMA_CPU_BACKEND)\n",
                backend ? backend : "");
        return 1;
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.progress_callback = no_progress; /* the default prints dots */
    if (o.no_repack) mp.use_extra_bufts = false; /* weights stay in the file's mapping */
    if (o.lazy) mp.lazy_mode = LLAMA_LAZY_MODE_ON;
    struct llama_model *model = llama_model_load_from_file(o.model, mp);
    if (!model) {
        fprintf(stderr, "llama_speed: llama.cpp cannot load %s\n", o.model);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(o.depth + o.n_prompt + o.n_gen);
    if (cp.n_ctx < 64) cp.n_ctx = 64; /* room for the warm-up batch */
    cp.n_batch = (uint32_t)o.n_batch;
    cp.n_ubatch = (uint32_t)o.n_ubatch;
    cp.n_threads = cp.n_threads_batch = o.threads;
    cp.type_k = o.type_k;
    cp.type_v = o.type_v;
    cp.flash_attn_type = o.fa;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_speed: cannot make a context of %u tokens\n", cp.n_ctx);
        return 1;
    }
    const int buf_n = o.n_batch > 32 ? o.n_batch : 32;
    llama_token *buf = malloc(sizeof *buf * (size_t)buf_n);
    double *tps = calloc((size_t)o.reps, sizeof *tps);
    if (!buf || !tps) return 1;
    char desc[128];
    llama_model_desc(model, desc, sizeof desc);
    uint64_t seed = 99;
    int rc = prompt(ctx, buf, 32, 32, 1, &seed); /* warm-up */
    for (int which = 0; which < 2 && !rc; which++) { /* pp, then tg */
        const int np = which == 0 ? o.n_prompt : 0, ng = which == 1 ? o.n_gen : 0;
        if (np == 0 && ng == 0) continue;
        for (int r = 0; r < o.reps && !rc; r++) {
            llama_memory_clear(llama_get_memory(ctx), false);
            seed = 1000 + (uint64_t)r;
            if (o.depth > 0 && (rc = prompt(ctx, buf, o.depth, o.n_batch, 1, &seed))) break;
            const uint64_t t0 = now_ns();
            rc = np > 0 ? prompt(ctx, buf, np, o.n_batch, o.depth == 0, &seed) : gen(ctx, ng, &seed);
            tps[r] = (np + ng) / ((now_ns() - t0) * 1e-9);
        }
        if (rc) break;
        double mean = 0, sd = 0;
        for (int r = 0; r < o.reps; r++) mean += tps[r];
        mean /= o.reps;
        for (int r = 0; r < o.reps; r++) sd += (tps[r] - mean) * (tps[r] - mean);
        sd = o.reps > 1 ? sqrt(sd / (o.reps - 1)) : 0.0;
        char test[48];
        if (o.depth > 0)
            snprintf(test, sizeof test, "%s%d @ d%d", np ? "pp" : "tg", np ? np : ng, o.depth);
        else
            snprintf(test, sizeof test, "%s%d", np ? "pp" : "tg", np ? np : ng);
        if (o.json)
            printf("{\"engine\":\"llama.cpp\",\"model\":\"%s\",\"desc\":\"%s\",\"threads\":%d,"
                   "\"test\":\"%s\",\"n_prompt\":%d,\"n_gen\":%d,\"n_depth\":%d,\"n_batch\":%d,"
                   "\"n_ubatch\":%d,\"repetitions\":%d,\"tps_mean\":%.4f,\"tps_sd\":%.4f}\n",
                   o.model, desc, o.threads, test, np, ng, o.depth, o.n_batch, o.n_ubatch, o.reps,
                   mean, sd);
        else
            printf("| %-24s | %7d | %14s | %11.2f ± %6.2f |\n", desc, o.threads, test, mean, sd);
        fflush(stdout);
    }
    if (rc) {
        fprintf(stderr, "llama_speed: llama_decode failed\n");
        return 1;
    }
    free(tps);
    free(buf);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
