/* test_forward_multi.c - sl_session_eval_multi (continuous batching across
 * sessions): each member's logits after every step are bit-identical to the
 * same tokens evaluated on a session of its own, step by step, for
 * attention MoE models (q8_0 and q4_k_m, resident and streamed), a dense
 * model and qwen35moe's recurrent layers; members of
 * different lengths (a prompt chunk beside decode tokens) share one step;
 * gemma4's sandwich-norm layers too; members keeping several logit rows
 * (a token and its drafts) get each of them the same; each member's
 * on_hidden hook (a drafter following it) sees the same positions, tokens
 * and hidden rows as on its own; bad calls are refused and leave the
 * sessions unchanged. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "engine/model_runtime.h"
#include "engine/session.h"
#include "experts/route_trace.h"
#include "experts/streamer.h"
#include "model/model.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_MEM 3
#define N_STEPS 4

static int gen_model(char *path, size_t cap, const char *arch, sl_synth_type type)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, arch, "tiny", &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", arch, err.msg);
        return -1;
    }
    c.type = type;
    c.seed = 13;
    char name[64];
    snprintf(name, sizeof name, "%s-%d.gguf", arch, (int)type);
    t_path(path, cap, name);
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", arch, err.msg);
        return -1;
    }
    return 0;
}

/* Step k of member i: how many tokens it evaluates (a prompt first, of
 * different lengths; then decode tokens, except member 2 which adds a
 * second chunk at step 2), and which. */
static int step_len(int i, int k)
{
    static const int len[N_MEM][N_STEPS] = {{5, 1, 1, 1}, {1, 1, 1, 1}, {3, 1, 4, 1}};
    return k < N_STEPS ? len[i][k] : 1;
}
static int32_t tok_at(int i, int pos) { return (int32_t)(5 + (i * 101 + pos * 37) % 400); }

static int g_rows = 1; /* logit rows a member session keeps */
static bool g_hook;     /* sessions get a hidden-rows hook (hook_seen) */
static bool g_prompt;   /* each member's first step is its whole prompt */

/* What a session's on_hidden hook saw: its calls, and an FNV-1a hash over
 * each call's position, tokens and hidden rows. */
typedef struct hook_seen {
    int calls;
    uint64_t hash;
} hook_seen;

static void fnv(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ c[i]) * 1099511628211ull;
}

static int hook_record(void *ud, sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    (void)err;
    hook_seen *h = ud;
    h->calls++;
    fnv(&h->hash, &s->n_past, sizeof s->n_past);
    fnv(&h->hash, &n, sizeof n);
    fnv(&h->hash, tokens, sizeof *tokens * (size_t)n);
    fnv(&h->hash, s->x, sizeof *s->x * (size_t)n * (size_t)s->m->hp.n_embd);
    return SL_OK;
}

static sl_session *new_session(sl_model *m, int batch, bool all)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = all ? 1 : 32;
    sp.n_logit_rows = all ? 1 : g_rows;
    sp.n_batch_max = batch;
    sp.all_logits = all;
    sl_session *s = NULL;
    sl_err err;
    if (sl_session_create(&s, m, &sp, &err)) fprintf(stderr, "  session: %s\n", err.msg);
    return s;
}

/* Runs n_steps steps (the first N_STEPS as step_len says, then one token
 * each) both ways on the model at path; returns the number of (member,
 * step) logit rows, positions or earliest truncation points (a sliding
 * window's ring) that differ, or -1 on a failure. */
static int compare_steps(const char *path, int cache_experts, int threads, int n_steps)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    if (cache_experts > 0) {
        mp.stream = SL_STREAM_ON;
        mp.cache_experts = cache_experts;
    }
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, path, &mp, &err)) {
        fprintf(stderr, "  load: %s\n", err.msg);
        return -1;
    }
    const size_t V = (size_t)sl_model_n_vocab(m);
    sl_session *solo[N_MEM], *mem[N_MEM], *batch = new_session(m, 16, true);
    for (int i = 0; i < N_MEM; i++) {
        solo[i] = new_session(m, 8, false);
        mem[i] = new_session(m, 8, false);
    }
    for (int i = 0; i < N_MEM && g_prompt; i++) {
        sl_session_set_prompt(solo[i], step_len(i, 0));
        sl_session_set_prompt(mem[i], step_len(i, 0));
    }
    hook_seen seen[2][N_MEM];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N_MEM && g_hook; i++) {
        solo[i]->on_hidden = mem[i]->on_hidden = hook_record;
        solo[i]->on_hidden_ud = &seen[0][i];
        mem[i]->on_hidden_ud = &seen[1][i];
    }
    int bad = 0, pos[N_MEM] = {0};
    for (int k = 0; k < n_steps && bad >= 0; k++) {
        int32_t toks[N_MEM][8];
        const int32_t *tp[N_MEM];
        int n[N_MEM];
        for (int i = 0; i < N_MEM; i++) {
            n[i] = step_len(i, k);
            for (int t = 0; t < n[i]; t++) toks[i][t] = tok_at(i, pos[i] + t);
            tp[i] = toks[i];
            if (sl_session_eval(solo[i], toks[i], n[i], &err)) {
                fprintf(stderr, "  solo eval: %s\n", err.msg);
                bad = -1;
            }
            pos[i] += n[i];
        }
        if (bad < 0) break;
        if (sl_session_eval_multi(batch, mem, tp, n, N_MEM, &err)) {
            fprintf(stderr, "  multi eval: %s\n", err.msg);
            bad = -1;
            break;
        }
        for (int i = 0; i < N_MEM; i++) {
            bad += sl_session_n_past(mem[i]) != pos[i];
            bad += sl_session_truncate_floor(mem[i]) != sl_session_truncate_floor(solo[i]);
            /* each row it keeps: a prompt's last row alone, else its last g_rows */
            const int rows = g_prompt && k == 0 ? 1 : n[i] < g_rows ? n[i] : g_rows;
            for (int t = 0; t < rows; t++) {
                const float *a = sl_session_logits_at(solo[i], t);
                const float *b = sl_session_logits_at(mem[i], t);
                bad += !a || !b || memcmp(a, b, V * sizeof(float)) != 0;
            }
            bad += sl_session_logits_at(solo[i], rows) != NULL;
            bad += sl_session_logits_at(mem[i], rows) != NULL;
        }
    }
    for (int i = 0; i < N_MEM && g_hook && bad >= 0; i++)
        bad += seen[0][i].calls != n_steps || seen[1][i].calls != n_steps ||
               seen[0][i].hash != seen[1][i].hash;
    for (int i = 0; i < N_MEM; i++) {
        sl_session_free(solo[i]);
        sl_session_free(mem[i]);
    }
    sl_session_free(batch);
    sl_model_free(m);
    return bad;
}

static int compare(const char *path, int cache_experts, int threads)
{
    return compare_steps(path, cache_experts, threads, N_STEPS);
}

static char p_moe8[512], p_moe4k[512], p_dense[512], p_q35[512], p_g4[512], p_go[512],
    p_moe32[512];

TEST(members_keep_their_logit_rows)
{
    /* a token and its drafts to verify: steps of 5, 3 and 4 tokens keep 4, 3, 4 rows */
    g_rows = 4;
    CHECK(compare(p_moe8, 0, 2) == 0);
    CHECK(compare(p_moe4k, 3, 2) == 0);
    g_rows = 1;
}

/* A prompt's last row goes on alone past the last layer's mixer, with a
 * micro-batch of one's product forms (engine/out_rows.h; f32 matrices
 * heed them), in a shared step as in the member's own */
TEST(members_ending_their_prompts_bit_identical)
{
    g_prompt = true;
    CHECK(compare(p_moe32, 0, 2) == 0);
    g_rows = 4;
    CHECK(compare(p_moe32, 0, 2) == 0);
    g_rows = 1;
    CHECK(compare(p_g4, 0, 2) == 0); /* gemma4: every row to the head */
    g_prompt = false;
}

TEST(members_hand_their_hidden_rows_over)
{
    g_hook = true;
    CHECK(compare(p_moe8, 0, 2) == 0);
    g_hook = false;
}

TEST(attention_moe_q8_0_bit_identical)
{
    CHECK(compare(p_moe8, 0, 2) == 0);
    CHECK(compare(p_moe8, 0, 1) == 0);
}

TEST(attention_moe_q4_k_m_bit_identical)
{
    CHECK(compare(p_moe4k, 0, 2) == 0);
}

TEST(streamed_experts_bit_identical)
{
    CHECK(compare(p_moe4k, 6, 2) == 0);
}

TEST(dense_and_recurrent_bit_identical)
{
    CHECK(compare(p_dense, 0, 2) == 0);
    CHECK(compare(p_q35, 0, 2) == 0);
}

/* gpt-oss: sliding layers (window 8) kept as rings of 8 + 8 - 1 rows in
 * 32-position sessions; 20 steps run every member past its ring, so the
 * rings' bookkeeping (the earliest truncation point) must follow batched
 * steps as it follows single ones. */
TEST(sliding_window_rings_bit_identical)
{
    CHECK(compare_steps(p_go, 0, 2, 20) == 0);
}

TEST(bad_calls_are_refused_and_change_nothing)
{
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, p_moe8, NULL, &err) == 0);
    CHECK(sl_model_multi_ok(m));
    sl_session *b = new_session(m, 4, true), *nob = new_session(m, 4, false);
    sl_session *a = new_session(m, 8, false), *c = new_session(m, 8, false);
    const int32_t t5[5] = {5, 6, 7, 8, 9}, bad_id[1] = {-3};
    sl_session *pair[2] = {a, c}, *twice[2] = {a, a};
    const int32_t *tp[2] = {t5, t5};
    int n2[2] = {2, 2}, n_big[2] = {3, 2};
    CHECK(sl_session_eval_multi(b, twice, tp, n2, 2, &err) == SL_EINVAL);
    CHECK(sl_session_eval_multi(nob, pair, tp, n2, 2, &err) == SL_EINVAL);
    CHECK(sl_session_eval_multi(b, pair, tp, n_big, 2, &err) == SL_EINVAL); /* 5 > 4 */
    const int32_t *tbad[2] = {t5, bad_id};
    int n_one[2] = {1, 1};
    CHECK(sl_session_eval_multi(b, pair, tbad, n_one, 2, &err) == SL_EINVAL);
    CHECK(strstr(err.msg, "outside the vocabulary") != NULL);
    CHECK(sl_session_n_past(a) == 0 && sl_session_n_past(c) == 0);
    CHECK(sl_session_eval_multi(b, pair, tp, n2, 2, &err) == SL_OK);
    CHECK(sl_session_n_past(a) == 2 && sl_session_n_past(c) == 2);
    sl_session_free(a);
    sl_session_free(c);
    sl_session_free(b);
    sl_session_free(nob);
    sl_model_free(m);
}

/* gemma4: sandwich norms around the mixer and the FFN (the part after the
 * mixer runs once over every member's rows), full layers with v taken from
 * k (two shared projections, not three), sliding layers as rings; 12 steps
 * run the members past the tiny preset's window. */
TEST(sandwich_norm_models_bit_identical)
{
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, p_g4, NULL, &err) == 0);
    CHECK(sl_model_multi_ok(m));
    sl_model_free(m);
    CHECK(compare_steps(p_g4, 0, 2, 12) == 0);
}

/* A route trace for m: n_steps generation steps, every layer's top-k
 * experts chosen by a fixed hash of (step, layer), weights 0.5, 0.25, ...
 * with the rest on the last slot (not increasing, summing to 1). NULL on a
 * failure. */
static sl_route_trace *make_trace(const sl_model *m, int n_steps)
{
    const int L = m->hp.n_layer, X = m->layers[0].d.ffn.router.n_expert;
    const int K = m->layers[0].d.ffn.router.top_k;
    size_t cap = (size_t)n_steps * (size_t)L * (size_t)K * 48 + 4096, len = 0;
    char *text = malloc(cap);
    if (!text) return NULL;
    len += (size_t)snprintf(text + len, cap - len,
                            "# route_trace v1\n# model=t arch=qwen3moe n_layer=%d n_expert=%d "
                            "n_expert_used=%d\nturn,phase,step,layer,slot,expert,weight,"
                            "residency,expert_bytes\n", L, X, K);
    for (int st = 0; st < n_steps; st++)
        for (int l = 0; l < L; l++) {
            int first = (st * 7 + l * 3) % X;
            float left = 1.0f;
            for (int k = 0; k < K; k++) {
                const float w = k + 1 < K ? left / 2 : left;
                left -= w;
                len += (size_t)snprintf(text + len, cap - len, "0,1,%d,%d,%d,%d,%.6f,0,0\n", st,
                                        l, k, (first + k * 5) % X, (double)w);
            }
        }
    sl_route_trace *t = NULL;
    sl_err err;
    if (sl_route_trace_parse(&t, text, len, "test.csv", &err))
        fprintf(stderr, "  trace: %s\n", err.msg);
    free(text);
    return t;
}

/* --route-trace with batched members: each member replays the trace from
 * its own step (sl_session_set_route_step), batched or alone, so the
 * logits of every step are bit-identical; the offset is in effect (the
 * same tokens from another step give other logits); a member on the
 * shared cursor is refused, and so is a step on a model without a trace. */
TEST(route_trace_members_replay_their_own_steps)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 2;
    mp.stream = SL_STREAM_ON;
    mp.cache_experts = 6;
    sl_model *m;
    sl_err err;
    CHECK(sl_model_load(&m, p_moe4k, &mp, &err) == 0);
    sl_route_trace *tr = make_trace(m, 11);
    CHECK(tr != NULL);
    if (!tr) {
        sl_model_free(m);
        return;
    }
    sl_runtime_replay(m->rt, tr); /* owned by the routing now */
    CHECK(!sl_model_multi_ok(m)); /* not for shared-cursor callers (the server) */
    const size_t V = (size_t)sl_model_n_vocab(m);
    sl_session *solo[N_MEM], *mem[N_MEM], *batch = new_session(m, 16, true);
    for (int i = 0; i < N_MEM; i++) {
        solo[i] = new_session(m, 8, false);
        mem[i] = new_session(m, 8, false);
    }
    const int32_t one = 7;
    const int32_t *tp1[N_MEM] = {&one, &one, &one};
    int n1[N_MEM] = {1, 1, 1};
    CHECK(sl_session_eval_multi(batch, mem, tp1, n1, N_MEM, &err) == SL_EINVAL);
    CHECK(strstr(err.msg, "sl_session_set_route_step") != NULL);
    CHECK(sl_session_set_route_step(mem[0], -2, &err) == SL_EINVAL);
    for (int i = 0; i < N_MEM; i++) {
        CHECK(sl_session_set_route_step(solo[i], 4 * i, &err) == SL_OK);
        CHECK(sl_session_set_route_step(mem[i], 4 * i, &err) == SL_OK);
    }
    int bad = 0, pos[N_MEM] = {0}, differ = 0;
    for (int k = 0; k < 6; k++) {
        int32_t toks[N_MEM][8];
        const int32_t *tp[N_MEM];
        int n[N_MEM];
        for (int i = 0; i < N_MEM; i++) {
            n[i] = step_len(i, k);
            for (int t = 0; t < n[i]; t++) toks[i][t] = tok_at(0, pos[i] + t); /* same tokens */
            tp[i] = toks[i];
            bad += sl_session_eval(solo[i], toks[i], n[i], &err) != SL_OK;
            pos[i] += n[i];
        }
        bad += sl_session_eval_multi(batch, mem, tp, n, N_MEM, &err) != SL_OK;
        for (int i = 0; i < N_MEM; i++)
            bad += memcmp(sl_session_logits(solo[i]), sl_session_logits(mem[i]),
                          V * sizeof(float)) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    /* the same 5 tokens replayed from steps 0 and 4: other experts, other logits */
    sl_session *x = new_session(m, 8, false), *y = new_session(m, 8, false);
    const int32_t t5[5] = {5, 6, 7, 8, 9};
    CHECK(sl_session_set_route_step(x, 0, &err) == SL_OK);
    CHECK(sl_session_set_route_step(y, 4, &err) == SL_OK);
    CHECK(sl_session_eval(x, t5, 5, &err) == SL_OK && sl_session_eval(y, t5, 5, &err) == SL_OK);
    differ = memcmp(sl_session_logits(x), sl_session_logits(y), V * sizeof(float)) != 0;
    CHECK(differ);
    sl_session_free(x);
    sl_session_free(y);
    CHECK(sl_route_trace_cursor(tr) == 0); /* the shared cursor never moved */
    for (int i = 0; i < N_MEM; i++) {
        sl_session_free(solo[i]);
        sl_session_free(mem[i]);
    }
    sl_session_free(batch);
    sl_model_free(m);
    CHECK(sl_model_load(&m, p_moe4k, NULL, &err) == 0);
    sl_session *s = new_session(m, 8, false);
    CHECK(sl_session_set_route_step(s, 0, &err) == SL_EINVAL);
    sl_session_free(s);
    sl_model_free(m);
}

int main(void)
{
    if (gen_model(p_moe8, sizeof p_moe8, "qwen3moe", SL_SYNTH_Q8_0) ||
        gen_model(p_moe4k, sizeof p_moe4k, "qwen3moe", SL_SYNTH_Q4_K_M) ||
        gen_model(p_dense, sizeof p_dense, "qwen3", SL_SYNTH_Q8_0) ||
        gen_model(p_q35, sizeof p_q35, "qwen35moe", SL_SYNTH_Q8_0) ||
        gen_model(p_g4, sizeof p_g4, "gemma4", SL_SYNTH_Q8_0) ||
        gen_model(p_go, sizeof p_go, "gpt-oss", SL_SYNTH_MXFP4) ||
        gen_model(p_moe32, sizeof p_moe32, "qwen3moe", SL_SYNTH_F32)) {
        printf("cannot generate the test models\n");
        return 1;
    }
    RUN(attention_moe_q8_0_bit_identical);
    RUN(attention_moe_q4_k_m_bit_identical);
    RUN(streamed_experts_bit_identical);
    RUN(dense_and_recurrent_bit_identical);
    RUN(sliding_window_rings_bit_identical);
    RUN(bad_calls_are_refused_and_change_nothing);
    RUN(sandwich_norm_models_bit_identical);
    RUN(route_trace_members_replay_their_own_steps);
    RUN(members_keep_their_logit_rows);
    RUN(members_hand_their_hidden_rows_over);
    RUN(members_ending_their_prompts_bit_identical);
    return TEST_REPORT();
}
