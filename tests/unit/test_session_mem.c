/* test_session_mem.c - sl_state_capture / sl_state_restore (the server's
 * host-RAM prompt cache) on generated models of every layer kind:
 * qwen3moe (attention), qwen35moe (gated DeltaNet + attention), gpt-oss
 * (sliding-window rings), deepseek2 (MLA latents) and deepseek4
 * (compressed blocks). A state captured from one session and restored
 * into another continues with logits bit-identical to the session that
 * never stopped; the positions a capture can be restored at (any prefix
 * of an attention model, only the window a ring kept, only the end and
 * the snapshot of a recurrent state) are the ones that continue
 * bit-identical to a cold evaluation; a restore refused (a position not
 * kept, another cache type) leaves the session as it was. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "sluice.h"
#include "synth/synth.h"
#include "synth/synth_ds.h"
#include "test.h"

#define N_PROMPT 20
#define N_CONT 5
#define BATCH 4

static int32_t tok(int i) { return (int32_t)(5 + (i * 53) % 300); }

static int32_t prompt[N_PROMPT + 1];

static int generate(const char *arch, uint64_t seed, char *path, size_t cap)
{
    sl_err err;
    char name[64];
    snprintf(name, sizeof name, "%s.gguf", arch);
    if (sl_synth_ds_arch(arch)) {
        sl_synth_ds c;
        if (sl_synth_ds_init(&c, arch, "tiny", &err)) return -1;
        c.seed = seed;
        snprintf(name, sizeof name, "%s", arch);
        return t_write_synth_ds(&c, name, path, cap);
    }
    sl_synth_config c;
    if (sl_synth_config_init(&c, arch, "tiny", &err)) return -1;
    c.type = SL_SYNTH_Q8_0;
    c.seed = seed;
    t_path(path, cap, name);
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", arch, err.msg);
        return -1;
    }
    return 0;
}

static sl_session *session(sl_model *m, sl_kv_type kv)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = BATCH;
    sp.type_k = sp.type_v = (int)kv;
    sl_session *s = NULL;
    sl_err err;
    if (sl_session_create(&s, m, &sp, &err)) fprintf(stderr, "  session: %s\n", err.msg);
    return s;
}

/* Evaluates ids[0..n) in micro-batches of BATCH, as the server does. */
static int eval(sl_session *s, const int32_t *ids, int n)
{
    sl_err err;
    for (int i = 0; i < n; i += BATCH) {
        const int k = n - i < BATCH ? n - i : BATCH;
        if (sl_session_eval(s, ids + i, k, &err)) {
            fprintf(stderr, "  eval: %s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

static bool same_logits(const sl_session *a, const float *want, int V)
{
    const float *got = sl_session_logits(a);
    return got && want && memcmp(got, want, (size_t)V * sizeof *got) == 0;
}

/* The logits after evaluating the prompt's first n tokens cold, then
 * after each of N_CONT continuation tokens: rows 0..N_CONT. */
static float *cold(sl_model *m, int n)
{
    const int V = sl_model_n_vocab(m);
    float *out = malloc((size_t)V * (N_CONT + 1) * sizeof *out);
    sl_session *s = session(m, SL_KV_F16);
    bool ok = out && s && eval(s, prompt, n) == 0;
    if (ok) memcpy(out, sl_session_logits(s), (size_t)V * sizeof *out);
    for (int i = 0; ok && i < N_CONT; i++) {
        const int32_t t = tok(100 + i);
        ok = eval(s, &t, 1) == 0;
        if (ok) memcpy(out + (size_t)V * (i + 1), sl_session_logits(s), (size_t)V * sizeof *out);
    }
    sl_session_free(s);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* Restores st at k into a fresh session, evaluates the prompt from k to
 * n and the continuation; true when every logit row equals want's. */
static bool continues_as(sl_model *m, const sl_state *st, int k, int n, const float *want)
{
    const int V = sl_model_n_vocab(m);
    sl_session *s = session(m, SL_KV_F16);
    sl_err err;
    bool ok = s && sl_state_restore(s, st, k, &err) == SL_OK && sl_session_n_past(s) == k;
    if (ok && k < n) ok = eval(s, prompt + k, n - k) == 0;
    ok = ok && same_logits(s, want, V);
    for (int i = 0; ok && i < N_CONT; i++) {
        const int32_t t = tok(100 + i);
        ok = eval(s, &t, 1) == 0 && same_logits(s, want + (size_t)V * (i + 1), V);
    }
    sl_session_free(s);
    return ok;
}

typedef enum kind { ATTN, RING, RECURRENT } kind;

static void round_trip(const char *path, kind k)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 2;
    sl_model *m = NULL;
    sl_err err;
    CHECK_MSG(sl_model_load(&m, path, &mp, &err) == 0, "%s", err.msg);
    if (!m) return;
    const int V = sl_model_n_vocab(m);
    float *full = cold(m, N_PROMPT), *part = cold(m, 12), *past = cold(m, N_PROMPT + 1);
    sl_session *a = session(m, SL_KV_F16);
    sl_state *st = NULL, *st_snap = NULL;
    CHECK(full && part && past && a);
    if (!full || !part || !past || !a) goto done;
    /* the prompt, then one token alone: the snapshot stays at the prompt's end */
    CHECK(eval(a, prompt, N_PROMPT + 1) == 0);
    CHECK_MSG(sl_state_capture(a, N_PROMPT + 1, &st, &err) == 0, "%s", err.msg);
    if (!st) goto done;
    CHECK_EQ_INT(sl_state_n(st), N_PROMPT + 1);
    CHECK(sl_state_has_logits(st));
    CHECK(sl_state_bytes(st) > 0);
    /* the whole capture: the logits and the continuation of the session */
    CHECK_MSG(continues_as(m, st, N_PROMPT + 1, N_PROMPT + 1, past), "restore at the end");
    /* the prompt's end: every kind keeps it (the snapshot, the window) */
    CHECK(sl_state_restorable(st, N_PROMPT));
    if (k == RECURRENT) {
        /* the state at the snapshot has no logits: evaluate one token */
        sl_session *b = session(m, SL_KV_F16);
        CHECK(b && sl_state_restore(b, st, N_PROMPT, &err) == SL_OK);
        CHECK(b && sl_session_logits(b) == NULL);
        const int32_t t = prompt[N_PROMPT];
        CHECK(b && eval(b, &t, 1) == 0 && same_logits(b, past, V));
        sl_session_free(b);
        CHECK(!sl_state_restorable(st, 12));
    } else {
        /* evaluating the prompt's last token again gives its logits */
        CHECK_MSG(continues_as(m, st, N_PROMPT - 1, N_PROMPT, full), "restore at N - 1");
    }
    if (k == ATTN) {
        CHECK(sl_state_restorable(st, 12));
        CHECK_MSG(continues_as(m, st, 8, 12, part), "restore at 8, evaluate to 12");
    }
    if (k == RING) {
        /* batches of 4 and a window of 8: the ring keeps 11 positions */
        CHECK(!sl_state_restorable(st, 12));
        CHECK(sl_state_restorable(st, 18));
    }
    /* the largest restorable position at or below each k */
    for (int q = 0, best = 0; q <= N_PROMPT + 3; q++) {
        if (q <= N_PROMPT + 1 && sl_state_restorable(st, q)) best = q;
        CHECK_MSG(sl_state_restorable_below(st, q) == best, "below %d: %d, want %d", q,
                  sl_state_restorable_below(st, q), best);
    }
    /* refused: a position not kept, another cache type; the session is unchanged */
    sl_session *c = session(m, SL_KV_F32);
    CHECK(c && eval(c, prompt, 3) == 0);
    CHECK(c && sl_state_restore(c, st, N_PROMPT, &err) == SL_EINVAL);
    CHECK(c && sl_session_n_past(c) == 3);
    sl_session_free(c);
    if (k != ATTN) {
        sl_session *d = session(m, SL_KV_F16);
        CHECK(d && sl_state_restore(d, st, 12, &err) == SL_EINVAL && sl_session_n_past(d) == 0);
        sl_session_free(d);
        /* neither can such a prefix be captured */
        CHECK(sl_state_capture(a, 12, &st_snap, &err) == SL_EINVAL && st_snap == NULL);
    }
    if (k == RECURRENT) {
        /* the snapshot itself can be captured, and continues */
        CHECK_MSG(sl_state_capture(a, N_PROMPT, &st_snap, &err) == 0, "%s", err.msg);
        CHECK(st_snap && !sl_state_has_logits(st_snap));
        sl_session *b = session(m, SL_KV_F16);
        const int32_t t = prompt[N_PROMPT];
        CHECK(b && st_snap && sl_state_restore(b, st_snap, N_PROMPT, &err) == SL_OK);
        CHECK(b && eval(b, &t, 1) == 0 && same_logits(b, past, V));
        sl_session_free(b);
    }
done:
    sl_state_free(st);
    sl_state_free(st_snap);
    sl_session_free(a);
    free(full);
    free(part);
    free(past);
    sl_model_free(m);
}

static char m_q3[512], m_q35[512], m_oss[512], m_ds2[512], m_ds4[512];

TEST(qwen3moe_attention) { round_trip(m_q3, ATTN); }
TEST(qwen35moe_gated_deltanet) { round_trip(m_q35, RECURRENT); }
TEST(gpt_oss_sliding_window_rings) { round_trip(m_oss, RING); }
TEST(deepseek2_mla_latents) { round_trip(m_ds2, ATTN); }
TEST(deepseek4_compressed_blocks) { round_trip(m_ds4, RECURRENT); }

int main(void)
{
    for (int i = 0; i <= N_PROMPT; i++) prompt[i] = tok(i);
    if (generate("qwen3moe", 3, m_q3, sizeof m_q3) ||
        generate("qwen35moe", 8, m_q35, sizeof m_q35) ||
        generate("gpt-oss", 5, m_oss, sizeof m_oss) ||
        generate("deepseek2", 6, m_ds2, sizeof m_ds2) ||
        generate("deepseek4", 23, m_ds4, sizeof m_ds4)) {
        printf("  could not generate the models\n");
        return 1;
    }
    RUN(qwen3moe_attention);
    RUN(qwen35moe_gated_deltanet);
    RUN(gpt_oss_sliding_window_rings);
    RUN(deepseek2_mla_latents);
    RUN(deepseek4_compressed_blocks);
    return TEST_REPORT();
}
