/* test_x8_engine.c - the load-time eight-row interleave (x8) of the
 * matrices that take the reference's repacked Q4_0 / IQ4_NL / MXFP4 order
 * (model_load.c, quant/vec_dot_rp.h) through the whole engine.
 *
 * A generated Mixtral-style Q4_0 model (tiny: every projection has a
 * multiple of 8 rows). Asserted: a resident load marks the attention,
 * expert and output matrices x8 and leaves the embedding as it is, a
 * mapped load (read-only) and a streamed one leave the mapped / streamed
 * matrices plain; and every token's logits are bit-identical between the
 * x8 engine and the plain-layout engines (mapped weights; experts streamed
 * through a small cache), for batches of 1, 7 and 40 and 1 or 2 threads. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "model/model.h"
#include "ops/ops.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

enum { N_TOK = 40 };

static char g_path[512];
static int g_vocab;

static int32_t tok(int i) { return (int32_t)(3 + (i * 53) % 400); }

/* every token's logits (N_TOK x g_vocab, malloc'ed), the tokens evaluated
 * in batches of `batch`; cache > 0 streams the experts through that many
 * slots, mmap maps the dense weights */
static float *logits(int batch, int threads, int cache, bool mmap)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    mp.dense = mmap ? SL_DENSE_MMAP : SL_DENSE_ANON;
    mp.stream = cache > 0 ? SL_STREAM_ON : SL_STREAM_OFF;
    mp.cache_experts = cache;
    sl_model *m = NULL;
    sl_session *s = NULL;
    sl_err err = {0};
    float *out = NULL;
    if (sl_model_load(&m, g_path, &mp, &err)) goto done;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = batch;
    sp.all_logits = true;
    if (sl_session_create(&s, m, &sp, &err)) goto done;
    const size_t V = (size_t)sl_model_n_vocab(m);
    out = malloc(sizeof *out * V * N_TOK);
    for (int i = 0; out && i < N_TOK; i += batch) {
        int32_t ids[N_TOK];
        const int n = N_TOK - i < batch ? N_TOK - i : batch;
        for (int j = 0; j < n; j++) ids[j] = tok(i + j);
        if (sl_session_eval(s, ids, n, &err)) {
            free(out);
            out = NULL;
            break;
        }
        for (int j = 0; j < n; j++) memcpy(out + (size_t)(i + j) * V, sl_session_logits_at(s, j), V * sizeof *out);
    }
done:
    CHECK_MSG(out, "batch %d, %d threads, cache %d, mmap %d: %s", batch, threads, cache, (int)mmap,
              err.msg);
    sl_session_free(s);
    sl_model_free(m);
    return out;
}

static sl_model *load(int dense, int stream)
{
    sl_model_params p = sl_model_default_params();
    p.n_threads = 1;
    p.dense = (sl_dense_mode)dense;
    p.stream = (sl_stream_mode)stream;
    if (stream == SL_STREAM_ON) p.cache_experts = 4;
    sl_model *m = NULL;
    sl_err err = {0};
    CHECK_MSG(!sl_model_load(&m, g_path, &p, &err), "load: %s", err.msg);
    return m;
}

TEST(layouts_after_load)
{
    sl_model *m = load(SL_DENSE_ANON, SL_STREAM_OFF);
    if (!m) return;
    const sl_layer *L = &m->layers[0];
    CHECK(L->wq.type == SL_TYPE_Q4_0 && L->wq.layout == SL_MAT_X8);
    CHECK(L->wo.layout == SL_MAT_X8);
    CHECK(L->gate_exps.type == SL_TYPE_Q4_0 && L->gate_exps.layout == SL_MAT_X8);
    CHECK(L->down_exps.layout == SL_MAT_X8);
    CHECK(m->tok_embd.layout == SL_MAT_ROWS); /* read by rows (the embedding) */
    if (m->output.info && !m->output_tied && m->output.type == SL_TYPE_Q4_0)
        CHECK(m->output.layout == SL_MAT_X8);
    sl_model_free(m);
    m = load(SL_DENSE_MMAP, SL_STREAM_OFF);
    if (!m) return;
    CHECK(m->layers[0].wq.layout == SL_MAT_ROWS); /* mapped read-only: left as is */
    CHECK(m->layers[0].gate_exps.layout == SL_MAT_ROWS);
    sl_model_free(m);
    m = load(SL_DENSE_ANON, SL_STREAM_ON);
    if (!m) return;
    CHECK(m->layers[0].wq.layout == SL_MAT_X8);
    CHECK(m->layers[0].gate_exps.layout == SL_MAT_ROWS); /* streamed: as the file has it */
    sl_model_free(m);
}

TEST(logits_bit_identical)
{
    float *ref = logits(7, 2, 0, false); /* resident: every eligible matrix x8 */
    if (!ref) return;
    struct { int batch, threads, cache; bool mmap; } runs[] = {
        {1, 1, 0, false}, {40, 2, 0, false}, {7, 1, 0, false}, /* x8, other splits */
        {7, 2, 0, true},  {1, 1, 0, true},                     /* plain: mapped weights */
        {7, 2, 4, false}, {1, 2, 3, false}, {40, 1, 4, true}}; /* plain streamed experts */
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        float *got = logits(runs[i].batch, runs[i].threads, runs[i].cache, runs[i].mmap);
        if (!got) continue;
        CHECK_MSG(memcmp(got, ref, sizeof(float) * (size_t)N_TOK * (size_t)g_vocab) == 0,
                  "batch %d, %d threads, cache %d, mmap %d: logits differ from resident x8",
                  runs[i].batch, runs[i].threads, runs[i].cache, (int)runs[i].mmap);
        free(got);
    }
    free(ref);
}

int main(void)
{
    sl_synth_config c;
    sl_err err = {0};
    t_path(g_path, sizeof g_path, "x8-mixtral-q4_0.gguf");
    int rc = sl_synth_config_init(&c, "mixtral", "tiny", &err);
    if (!rc) {
        c.type = SL_SYNTH_Q4_0;
        c.seed = 11;
        rc = sl_synth_config_validate(&c, &err);
    }
    if (!rc) rc = sl_synth_write(&c, g_path, NULL, NULL, NULL, &err);
    CHECK_MSG(!rc, "mkmodel: %s", err.msg);
    if (rc) return TEST_REPORT();
    g_vocab = (int)c.n_vocab;
    RUN(layouts_after_load);
    RUN(logits_bit_identical);
    return TEST_REPORT();
}
