/* test_fused_gate_up.c - the fused ffn_gate_up_exps form (issues 12, 18).
 *
 * Generated qwen3moe, qwen35moe and gemma4 files are rewritten with each
 * layer's split ffn_gate_exps and ffn_up_exps as one ffn_gate_up_exps
 * {E, 2F, X} (per expert: its F gate rows, then its F up rows, as llama.cpp
 * lays it out). For every family:
 *  - the fused file loads, and its logits are bit-identical to the split
 *    file's, resident and streamed through a small cache;
 *  - streamed, the fused file reads exactly the split file's bytes (each
 *    miss reads gate + up + down of one expert once, not the fused slice
 *    twice), and the plan's one-token expert cycle is the same. */
#include <stdlib.h>
#include <string.h>

#include "common/retype.h"
#include "common/testutil.h"
#include "engine/session.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "synth/synth.h"
#include "sluice.h"
#include "test.h"

#define N_PROMPT 24
#define N_GEN 4
#define BATCH 8

/* The fused name for gate tensor t (its "ffn_gate_exps.weight" at s) or,
 * with part "up", its up tensor's name, in nm. */
static void exps_name(char nm[160], const sl_gguf_tensor *t, const char *s, const char *part)
{
    snprintf(nm, 160, "%.*sffn_%s_exps.weight", (int)(s - t->name.ptr), t->name.ptr, part);
}

/* declare: the fused tensor where the gate was, the up dropped */
static int fuse_declare(void *ctx, const sl_gguf *g, sl_gguf_writer *w, const sl_gguf_tensor *t,
                        sl_err *err)
{
    if (strstr(t->name.ptr, "ffn_up_exps.weight")) return 0;
    const char *s = strstr(t->name.ptr, "ffn_gate_exps.weight");
    if (!s) return sl_gguf_writer_add_tensor(w, t->name.ptr, t->type, t->n_dims, t->ne, err);
    char nm[160];
    exps_name(nm, t, s, "gate_up");
    uint64_t ne[SL_GGUF_MAX_DIMS];
    memcpy(ne, t->ne, sizeof ne);
    ne[1] *= 2;
    return sl_gguf_writer_add_tensor(w, nm, t->type, t->n_dims, ne, err);
}

/* write: each expert's gate rows, then its up rows */
static int fuse_write(void *ctx, const sl_gguf *g, sl_gguf_writer *w, const sl_gguf_tensor *t,
                      sl_err *err)
{
    if (strstr(t->name.ptr, "ffn_up_exps.weight")) return 0;
    const char *s = strstr(t->name.ptr, "ffn_gate_exps.weight");
    const sl_gguf_tensor *up = NULL;
    if (s) {
        char nm[160];
        exps_name(nm, t, s, "up");
        up = sl_gguf_find_tensor(g, nm);
        if (!up || up->nbytes != t->nbytes || up->type != t->type) {
            fprintf(stderr, "  fuse: '%s' has no matching up tensor\n", t->name.ptr);
            return -1;
        }
    }
    uint8_t *a = malloc(t->nbytes ? t->nbytes : 1);
    uint8_t *b = up ? malloc(up->nbytes) : NULL;
    int rc = a && (!up || b) ? sl_gguf_read_tensor(g, t, 0, a, t->nbytes, err) : -1;
    if (!rc && up) rc = sl_gguf_read_tensor(g, up, 0, b, up->nbytes, err);
    if (!rc && !up) rc = sl_gguf_writer_write(w, a, t->nbytes, err);
    const uint64_t X = t->ne[2], slice = X ? t->nbytes / X : 0;
    for (uint64_t e = 0; !rc && up && e < X; e++) {
        rc = sl_gguf_writer_write(w, a + e * slice, slice, err);
        if (!rc) rc = sl_gguf_writer_write(w, b + e * slice, slice, err);
    }
    free(a);
    free(b);
    return rc;
}

/* Writes a copy of src to dst with every layer's gate and up experts
 * fused. Returns 0, or -1 with a message on stderr. */
static int fuse_file(const char *src, const char *dst)
{
    return t_gguf_rewrite(src, dst, "fuse", fuse_declare, fuse_write, NULL);
}

/* Bytes of one expert (gate + up + down) of the first routed layer of the
 * split file at path, or 0. */
static uint64_t expert_bytes(const char *path)
{
    sl_err err;
    sl_gguf *g;
    if (sl_gguf_open(&g, path, &err)) return 0;
    uint64_t sum = 0;
    static const char *const sfx[] = {"ffn_gate_exps.weight", "ffn_up_exps.weight",
                                      "ffn_down_exps.weight"};
    for (int l = 0; l < 8 && sum == 0; l++)
        for (int p = 0; p < 3; p++) {
            char nm[160];
            snprintf(nm, sizeof nm, "blk.%d.%s", l, sfx[p]);
            const sl_gguf_tensor *t = sl_gguf_find_tensor(g, nm);
            if (t) sum += t->nbytes / t->ne[2];
        }
    sl_gguf_close(g);
    return sum;
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Loads path (streamed through cache_experts slots when > 0), prefills and
 * decodes greedily; returns malloc'ed logits of every position, the stats
 * in *st and the vocabulary in *V, or NULL with err set. */
static float *run(const char *path, int cache_experts, sl_stream_stats *st, int *V, sl_err *err)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = cache_experts > 0 ? SL_STREAM_ON : SL_STREAM_OFF;
    mp.cache_experts = cache_experts;
    mp.no_prefetch = true; /* every read is a miss's: read_bytes = misses x expert */
    mp.n_threads = 2;
    sl_model *m;
    if (sl_model_load(&m, path, &mp, err)) return NULL;
    *V = sl_model_n_vocab(m);
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = N_PROMPT + N_GEN + 1;
    sp.n_batch_max = BATCH;
    sp.all_logits = true;
    sl_session *s = NULL;
    float *out = NULL;
    int rc = sl_session_create(&s, m, &sp, err);
    if (!rc) out = malloc(sizeof(float) * (size_t)*V * (N_PROMPT + N_GEN));
    if (!rc && !out) rc = -1;
    int32_t toks[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) toks[i] = (int32_t)(3 + (i * 37) % (*V - 3));
    int pos = 0;
    for (int i = 0; i < N_PROMPT && !rc; i += BATCH) {
        const int n = N_PROMPT - i < BATCH ? N_PROMPT - i : BATCH;
        rc = sl_session_eval(s, toks + i, n, err);
        for (int j = 0; j < n && !rc; j++, pos++)
            memcpy(out + (size_t)pos * *V, sl_session_logits_at(s, j), sizeof(float) * *V);
    }
    for (int k = 0; k < N_GEN && !rc; k++, pos++) {
        int32_t next = argmax(out + (size_t)(pos - 1) * *V, *V);
        rc = sl_session_eval(s, &next, 1, err);
        if (!rc) memcpy(out + (size_t)pos * *V, sl_session_logits(s), sizeof(float) * *V);
    }
    if (s) sl_session_free(s);
    sl_model_stream_stats(m, st);
    sl_model_free(m);
    if (rc) {
        free(out);
        return NULL;
    }
    return out;
}

/* Generates arch's tiny model split and fused and compares them. */
static void check_family(const char *arch)
{
    sl_synth_config c;
    sl_err err = {0};
    char split[512], fused[512], nm[64];
    CHECK_MSG(!sl_synth_config_init(&c, arch, "tiny", &err), "%s: %s", arch, err.msg);
    c.type = SL_SYNTH_Q8_0;
    c.seed = 7;
    snprintf(nm, sizeof nm, "fused-%s-split.gguf", arch);
    t_path(split, sizeof split, nm);
    snprintf(nm, sizeof nm, "fused-%s-fused.gguf", arch);
    t_path(fused, sizeof fused, nm);
    int rc = sl_synth_config_validate(&c, &err);
    if (!rc) rc = sl_synth_write(&c, split, NULL, NULL, NULL, &err);
    CHECK_MSG(!rc, "%s: mkmodel: %s", arch, err.msg);
    if (rc || fuse_file(split, fused)) {
        CHECK_MSG(0, "%s: no fused file", arch);
        return;
    }
    const uint64_t one = expert_bytes(split);
    CHECK(one > 0);
    const int slots = c.n_expert_used + 2; /* a little over one layer's top-k */
    sl_stream_stats s_res, f_res, s_str, f_str;
    int V = 0;
    float *a = run(split, 0, &s_res, &V, &err);
    CHECK_MSG(a, "%s split resident: %s", arch, err.msg);
    float *b = run(fused, 0, &f_res, &V, &err);
    CHECK_MSG(b, "%s fused resident: %s", arch, err.msg);
    float *cs = run(split, slots, &s_str, &V, &err);
    CHECK_MSG(cs, "%s split streamed: %s", arch, err.msg);
    float *d = run(fused, slots, &f_str, &V, &err);
    CHECK_MSG(d, "%s fused streamed: %s", arch, err.msg);
    const size_t n = (size_t)V * (N_PROMPT + N_GEN) * sizeof(float);
    if (a && b) CHECK_MSG(!memcmp(a, b, n), "%s: fused resident logits differ", arch);
    if (a && d) CHECK_MSG(!memcmp(a, d, n), "%s: fused streamed logits differ", arch);
    if (a && cs) CHECK_MSG(!memcmp(a, cs, n), "%s: split streamed logits differ", arch);
    if (cs && d) {
        CHECK(f_str.streaming && f_str.misses > 0);
        CHECK_EQ_INT(f_str.misses, s_str.misses);
        CHECK_EQ_INT(f_str.reads, 3 * f_str.misses);
        CHECK_EQ_INT(f_str.read_bytes, f_str.misses * one);
        CHECK_EQ_INT(f_str.read_bytes, s_str.read_bytes);
        CHECK_EQ_INT(f_str.expert_cycle_bytes, s_str.expert_cycle_bytes);
        CHECK_EQ_INT(f_str.expert_bytes, s_str.expert_bytes);
        printf("   %-10s misses %llu, %llu bytes read (%llu per expert)\n", arch,
               (unsigned long long)f_str.misses, (unsigned long long)f_str.read_bytes,
               (unsigned long long)one);
    }
    free(a);
    free(b);
    free(cs);
    free(d);
    remove(split);
    remove(fused);
}

TEST(qwen3moe_fused_matches_split) { check_family("qwen3moe"); }
TEST(qwen35moe_fused_matches_split) { check_family("qwen35moe"); }
TEST(gemma4_fused_matches_split) { check_family("gemma4"); }

int main(void)
{
    RUN(qwen3moe_fused_matches_split);
    RUN(qwen35moe_fused_matches_split);
    RUN(gemma4_fused_matches_split);
    return TEST_REPORT();
}
