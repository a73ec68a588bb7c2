/* bench_multi.c - where a step of sl_session_eval_multi (the server's
 * batched decode, issue 13) spends its time, one session vs K together.
 *
 *   make build/rel/bench/bench_multi
 *   build/rel/bench/bench_multi MODEL.gguf [-k SLOTS] [-s STEPS] [-r ROUNDS]
 *       [-p PROMPT] [-t THREADS] [--stream] [--mem MIB] [--cache-experts N]
 *       [--route-trace FILE]
 *
 * K member sessions (default 4) each evaluate a different prompt of PROMPT
 * tokens (default 8) on their own; then ROUNDS rounds (default 3) each run
 * STEPS decode steps (default 8) of member 0 alone and STEPS steps of all K
 * members together, alternated so that both see the same machine load.
 * Every step is one sl_session_eval_multi call of one token per member,
 * greedy (each member's next token is the argmax of its logits). Prints,
 * for 1 and K members: ms per step, aggregate tok/s, their ratio, and the
 * step split into phases (fwd_mm.h's profile): mixer (q/k/v/o products vs
 * the rest: attention, norms, rope), FFN (router products, expert
 * products, activation quantising, the rest), lm head, other; and the
 * distinct experts computed per routed layer and step. With -t 1 every
 * figure is the calling thread's CPU time (it does all the compute), so
 * the split holds on a busy machine; else wall time.
 * --route-trace FILE (streamed): the experts come from a recorded routing
 * (route_trace.h) instead of the router; member i replays it on its own
 * from generation step i * G / K of the trace (G its generation steps,
 * sl_session_set_route_step): K users of the recorded model at different
 * points of their answers.
 * Not a test: nothing is asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fwd_mm.h"
#include "engine/model_runtime.h"
#include "experts/route_trace.h"
#include "experts/streamer.h"
#include "model/model.h"
#include "sluice.h"

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

static void print_prof(const char *name, const sl_fwd_prof *p, int members, double secs)
{
    const double st = (double)p->steps, ms = 1e3 / st;
    printf("%s: %lld steps, %.1f ms/step, %.2f tok/s aggregate\n", name, p->steps, secs * ms,
           (double)members * st / secs);
    printf("  mixer %.1f ms (q/k/v/o products %.1f, quantise %.1f, attention and rest %.1f)\n",
           p->total[SL_PROF_MIXER] * ms, p->mm_dense[SL_PROF_MIXER] * ms,
           p->prepare[SL_PROF_MIXER] * ms,
           (p->total[SL_PROF_MIXER] - p->mm_dense[SL_PROF_MIXER] - p->prepare[SL_PROF_MIXER]) * ms);
    printf("  ffn   %.1f ms (router %.1f, experts %.1f, quantise %.1f, rest %.1f)\n",
           p->total[SL_PROF_FFN] * ms, p->mm_dense[SL_PROF_FFN] * ms,
           p->mm_expert[SL_PROF_FFN] * ms, p->prepare[SL_PROF_FFN] * ms,
           (p->total[SL_PROF_FFN] - p->mm_dense[SL_PROF_FFN] - p->mm_expert[SL_PROF_FFN] -
            p->prepare[SL_PROF_FFN]) * ms);
    printf("  head  %.1f ms (product %.1f, quantise %.1f); other %.1f ms\n",
           p->total[SL_PROF_HEAD] * ms, p->mm_dense[SL_PROF_HEAD] * ms,
           p->prepare[SL_PROF_HEAD] * ms, p->total[SL_PROF_OTHER] * ms);
    if (p->hook_calls > 0)
        printf("  shared projections: %lld member mixers, q/k/v taken %lld, o taken %lld\n",
               p->hook_calls, p->hook_pre, p->hook_def);
    if (p->layer_steps > 0)
        printf("  experts per routed layer and step: %.2f distinct of %.2f chosen\n",
               (double)p->experts / (double)p->layer_steps,
               (double)p->choices / (double)p->layer_steps);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_multi MODEL.gguf [-k SLOTS] [-s STEPS] [-r ROUNDS] "
                        "[-p PROMPT] [-t THREADS] [--stream] [--mem MIB] [--cache-experts N] "
                        "[--route-trace FILE]\n");
        return 2;
    }
    int K = 4, steps = 8, rounds = 3, prompt = 8, threads = 2;
    const char *trace_path = NULL;
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_OFF;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const bool more = i + 1 < argc;
        if (!strcmp(a, "-k") && more) K = atoi(argv[++i]);
        else if (!strcmp(a, "-s") && more) steps = atoi(argv[++i]);
        else if (!strcmp(a, "-r") && more) rounds = atoi(argv[++i]);
        else if (!strcmp(a, "-p") && more) prompt = atoi(argv[++i]);
        else if (!strcmp(a, "-t") && more) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--stream")) mp.stream = SL_STREAM_ON;
        else if (!strcmp(a, "--mem") && more) mp.mem_budget = (uint64_t)atoll(argv[++i]) << 20;
        else if (!strcmp(a, "--cache-experts") && more) mp.cache_experts = atoi(argv[++i]);
        else if (!strcmp(a, "--route-trace") && more) {
            trace_path = argv[++i];
            mp.stream = SL_STREAM_ON;
        }
        else {
            fprintf(stderr, "bench_multi: unknown or incomplete option %s\n", a);
            return 2;
        }
    }
    if (K < 1 || K > 16 || steps < 1 || rounds < 1 || prompt < 1 || prompt > 64) {
        fprintf(stderr, "bench_multi: -k 1..16, -p 1..64, -s and -r >= 1\n");
        return 2;
    }
    mp.n_threads = threads;
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, argv[1], &mp, &err)) {
        fprintf(stderr, "bench_multi: %s\n", err.msg);
        return 1;
    }
    sl_route_trace *trace = NULL;
    if (trace_path) {
        if (sl_route_trace_load(&trace, trace_path, &err) ||
            sl_route_trace_check(trace, m->hp.n_layer, m->layers[0].d.ffn.router.n_expert,
                                 m->layers[0].d.ffn.router.top_k, &err)) {
            fprintf(stderr, "bench_multi: --route-trace: %s\n", err.msg);
            return 1;
        }
        sl_runtime_replay(m->rt, trace); /* the routing owns it */
    }
    const int V = sl_model_n_vocab(m);
    const int n_ctx = prompt + 2 * rounds * steps + 8;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = n_ctx;
    sp.n_batch_max = 64;
    sl_session *mem[16], *batch = NULL;
    int32_t next[16];
    for (int i = 0; i < K; i++)
        if (sl_session_create(&mem[i], m, &sp, &err)) {
            fprintf(stderr, "bench_multi: session: %s\n", err.msg);
            return 1;
        }
    sl_session_params bp = sp;
    bp.n_ctx = 1;
    bp.all_logits = true;
    if (sl_session_create(&batch, m, &bp, &err)) {
        fprintf(stderr, "bench_multi: batch session: %s\n", err.msg);
        return 1;
    }
    for (int i = 0; trace && i < K; i++) {
        const int np = sl_route_trace_n_prompt(trace), ng = sl_route_trace_n_steps(trace) - np;
        if (sl_session_set_route_step(mem[i], np + (int64_t)i * ng / K, &err)) {
            fprintf(stderr, "bench_multi: %s\n", err.msg);
            return 1;
        }
    }
    for (int i = 0; i < K; i++) { /* distinct prompts, evaluated alone */
        int32_t toks[64];
        for (int t = 0; t < prompt; t++)
            toks[t] = (int32_t)(10 + (i * 7919 + t * 104729) % (V - 20));
        if (sl_session_eval(mem[i], toks, prompt, &err)) {
            fprintf(stderr, "bench_multi: prompt: %s\n", err.msg);
            return 1;
        }
        next[i] = argmax(sl_session_logits(mem[i]), V);
    }
    sl_fwd_prof prof[2];
    memset(prof, 0, sizeof prof);
    prof[0].cpu = prof[1].cpu = threads == 1; /* one thread: its CPU time */
    double secs[2] = {0, 0};
    double io[2][4] = {{0}}; /* streamed: hits, misses, bytes read, stall s */
    unsigned long long slots = 0;
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < 2; c++) {
            const int count = c == 0 ? 1 : K;
            sl_stream_stats io0, io1;
            sl_model_stream_stats(m, &io0);
            sl_fwd_prof_set(&prof[c]);
            const double t0 = sl_fwd_prof_now(&prof[c]);
            for (int s = 0; s < steps; s++) {
                const int32_t *tp[16];
                int n[16];
                for (int i = 0; i < count; i++) {
                    tp[i] = &next[i];
                    n[i] = 1;
                }
                if (sl_session_eval_multi(batch, mem, tp, n, count, &err)) {
                    fprintf(stderr, "bench_multi: step: %s\n", err.msg);
                    return 1;
                }
                for (int i = 0; i < count; i++) next[i] = argmax(sl_session_logits(mem[i]), V);
            }
            secs[c] += sl_fwd_prof_now(&prof[c]) - t0;
            sl_fwd_prof_set(NULL);
            sl_model_stream_stats(m, &io1);
            io[c][0] += (double)(io1.hits - io0.hits);
            io[c][1] += (double)(io1.misses - io0.misses);
            io[c][2] += (double)(io1.read_bytes - io0.read_bytes);
            io[c][3] += io1.stall_s - io0.stall_s;
            slots = io1.n_slots;
        }
    print_prof("1 member", &prof[0], 1, secs[0]);
    char name[32];
    snprintf(name, sizeof name, "%d members", K);
    print_prof(name, &prof[1], K, secs[1]);
    printf("aggregate ratio %d / 1: %.2fx\n", K,
           ((double)K * (double)prof[1].steps / secs[1]) / ((double)prof[0].steps / secs[0]));
    for (int c = 0; c < 2 && m->rt->streamer; c++) {
        const double st = (double)prof[c].steps, look = io[c][0] + io[c][1];
        printf("streamed, %s: %.1f %% hits, %.1f experts read and %.1f MiB per step, "
               "stall %.1f ms per step (cache of %llu experts)\n",
               c ? "K members" : "1 member", look > 0 ? 100.0 * io[c][0] / look : 0.0,
               io[c][1] / st, io[c][2] / st / 1048576.0, 1e3 * io[c][3] / st,
               (unsigned long long)slots);
    }
    for (int i = 0; i < K; i++) sl_session_free(mem[i]);
    sl_session_free(batch);
    sl_model_free(m);
    return 0;
}
