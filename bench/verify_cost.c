/* verify_cost.c - what a speculative verify step costs against a plain
 * decode step on one model: the break-even acceptance of drafting.
 *
 *   make build/rel/bench/verify_cost
 *   build/rel/bench/verify_cost MODEL.gguf [-r ROUNDS] [-k MAXPOS] [-t THREADS]
 *       [--no-stream | --stream] [--random] [-p PROMPT]
 *
 * After PROMPT (default: a sentence repeated) each round evaluates, at the
 * reply's current position, batches of 1..MAXPOS positions (default 5):
 * the next greedy token and the drafts after it, each batch timed and cut
 * back, in an order rotated every round so that drift falls on every size
 * alike; then the next token is taken for good (untimed) and the reply
 * moves on. The drafts are the model's own greedy continuation (drafts
 * that hold), or with --random random token ids (drafts that fail: every
 * position routes its own way). Prints per size: the median step time,
 * the median of the rounds' ratios to one position, expert cache hits and
 * MiB read a step when streamed, and the break-even acceptance a: the
 * per-position chance at which 1 + a + ... + a^(K-1) tokens a step (drafts
 * held in a row) pay for the step's ratio. Streamed in a memory cgroup:
 * bench/cgroup_run.sh 2048 build/rel/bench/verify_cost MODEL.gguf.
 * Timed: run under `flock /work/timing.lock`. Not a test: nothing is
 * asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"
#include "util/timer.h"

#define MAX_POS 9
#define MAX_ROUNDS 256

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The a in [0, 1] with 1 + a + ... + a^(k-1) = ratio (1 when even all held
 * cannot pay: ratio >= k). */
static double break_even(int k, double ratio)
{
    if (ratio <= 1) return 0;
    if (ratio >= k) return 1;
    double lo = 0, hi = 1;
    for (int it = 0; it < 60; it++) {
        const double a = 0.5 * (lo + hi);
        double e = 0, p = 1;
        for (int i = 0; i < k; i++, p *= a) e += p;
        if (e < ratio) lo = a;
        else hi = a;
    }
    return 0.5 * (lo + hi);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: verify_cost MODEL.gguf [-r ROUNDS] [-k MAXPOS] [-t THREADS] "
                        "[--no-stream | --stream] [--random] [-p PROMPT]\n");
        return 2;
    }
    int rounds = 24, maxpos = 5, threads = 2;
    bool random_drafts = false;
    const char *prompt = "The cat sat on the mat. The cat sat on the mat. The cat sat on the "
                         "mat. The cat sat on the mat. The cat";
    sl_model_params mp = sl_model_default_params();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const bool more = i + 1 < argc;
        if (!strcmp(a, "-r") && more) rounds = atoi(argv[++i]);
        else if (!strcmp(a, "-k") && more) maxpos = atoi(argv[++i]);
        else if (!strcmp(a, "-t") && more) threads = atoi(argv[++i]);
        else if (!strcmp(a, "-p") && more) prompt = argv[++i];
        else if (!strcmp(a, "--stream")) mp.stream = SL_STREAM_ON;
        else if (!strcmp(a, "--no-stream")) mp.stream = SL_STREAM_OFF;
        else if (!strcmp(a, "--random")) random_drafts = true;
        else {
            fprintf(stderr, "verify_cost: unknown or incomplete option %s\n", a);
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || maxpos < 1 || maxpos > MAX_POS) {
        fprintf(stderr, "verify_cost: -r 1..%d, -k 1..%d\n", MAX_ROUNDS, MAX_POS);
        return 2;
    }
    mp.n_threads = threads;
    mp.n_logits_hint = maxpos;
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, argv[1], &mp, &err)) {
        fprintf(stderr, "verify_cost: %s\n", err.msg);
        return 1;
    }
    const int V = sl_model_n_vocab(m);
    int32_t ptoks[512];
    const int np = sl_tokenize(m, prompt, strlen(prompt), ptoks, 512, 0, &err);
    if (np <= 0) {
        fprintf(stderr, "verify_cost: the prompt: %s\n", np < 0 ? err.msg : "no tokens");
        return 1;
    }
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = np + 2 * rounds + 2 * MAX_POS + 8;
    sp.n_batch_max = 64;
    sp.n_logit_rows = maxpos;
    sl_session *s;
    if (sl_session_create(&s, m, &sp, &err) || sl_session_eval(s, ptoks, np, &err)) {
        fprintf(stderr, "verify_cost: %s\n", err.msg);
        return 1;
    }
    /* the greedy continuation, far enough for every round's drafts */
    const int n_cont = rounds + MAX_POS + 1;
    int32_t *cont = malloc(sizeof *cont * (size_t)n_cont);
    if (!cont) return 1;
    for (int i = 0; i < n_cont; i++) {
        cont[i] = argmax(sl_session_logits(s), V);
        if (sl_session_eval(s, &cont[i], 1, &err)) {
            fprintf(stderr, "verify_cost: %s\n", err.msg);
            return 1;
        }
    }
    sl_session_truncate(s, np);
    static double t[MAX_POS + 1][MAX_ROUNDS], ratio[MAX_POS + 1][MAX_ROUNDS];
    double hits[MAX_POS + 1] = {0}, look[MAX_POS + 1] = {0}, mib[MAX_POS + 1] = {0};
    sl_stream_stats st0, st1;
    for (int r = -1; r < rounds; r++) { /* round -1: warm-up, untimed */
        const int pos = sl_session_n_past(s), at = pos - np;
        int32_t batch[MAX_POS];
        for (int j = 0; j < maxpos; j++)
            batch[j] = j == 0 || !random_drafts ? cont[at + j] : (int32_t)(rnd() % (uint32_t)V);
        double tr[MAX_POS + 1];
        for (int q = 0; q < maxpos; q++) {
            const int k = 1 + (q + (r < 0 ? 0 : r)) % maxpos;
            sl_model_stream_stats(m, &st0);
            const uint64_t t0 = sl_now_ns();
            if (sl_session_eval(s, batch, k, &err)) {
                fprintf(stderr, "verify_cost: %s\n", err.msg);
                return 1;
            }
            tr[k] = sl_ns_to_s(sl_now_ns() - t0);
            sl_model_stream_stats(m, &st1);
            sl_session_truncate(s, pos);
            if (r < 0) continue;
            hits[k] += (double)(st1.hits - st0.hits);
            look[k] += (double)(st1.hits - st0.hits + st1.misses - st0.misses);
            mib[k] += (double)(st1.read_bytes - st0.read_bytes) / (1 << 20);
        }
        if (sl_session_eval(s, batch, 1, &err)) {
            fprintf(stderr, "verify_cost: %s\n", err.msg);
            return 1;
        }
        if (r < 0) continue;
        for (int k = 1; k <= maxpos; k++) {
            t[k][r] = tr[k];
            ratio[k][r] = tr[k] / tr[1];
        }
    }
    sl_model_stream_stats(m, &st1);
    printf("%s, %s, %d threads, %d rounds, drafts %s\n", argv[1],
           st1.streaming ? "streamed" : "resident", threads, rounds,
           random_drafts ? "random (they fail)" : "the greedy continuation (they hold)");
    printf("| positions | step ms | ratio to 1 | break-even a |%s\n",
           st1.streaming ? " hits | MiB read |" : "");
    printf("|---:|---:|---:|---:|%s\n", st1.streaming ? "---:|---:|" : "");
    for (int k = 1; k <= maxpos; k++) {
        const double ms = 1e3 * median(t[k], rounds), q = median(ratio[k], rounds);
        char be[16] = "-";
        if (k > 1) snprintf(be, sizeof be, "%s%.2f", q >= k ? ">= " : "", break_even(k, q));
        printf("| %d | %.1f | %.2f | %s |", k, ms, q, be);
        if (st1.streaming)
            printf(" %.1f %% | %.1f |", look[k] > 0 ? 100.0 * hits[k] / look[k] : 0.0,
                   mib[k] / rounds);
        printf("\n");
    }
    free(cont);
    sl_session_free(s);
    sl_model_free(m);
    return 0;
}
