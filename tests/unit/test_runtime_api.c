/* test_runtime_api.c - what a caller sets on a loaded model's runtime
 * through include/sluice.h alone: the cache policy, a route trace, the
 * drive rate, the usage history; each refused on a resident model, each
 * visible in sl_model_stream_stats after it is set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_LAYER 3
#define N_EXPERT 16
#define TOP_K 4

static char model_path[512];

static int make_model(void)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen3moe", "tiny", &err)) return -1;
    c.n_layer = N_LAYER;
    c.n_expert = N_EXPERT;
    c.n_expert_used = TOP_K;
    c.seed = 5;
    t_path(model_path, sizeof model_path, "runtime-api-qwen3moe.gguf");
    if (sl_synth_config_validate(&c, &err) ||
        sl_synth_write(&c, model_path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static sl_model *load(sl_stream_mode mode)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = mode;
    mp.cache_experts = 8;
    mp.n_threads = 1;
    sl_model *m = NULL;
    sl_err err;
    if (sl_model_load(&m, model_path, &mp, &err)) {
        fprintf(stderr, "  load: %s\n", err.msg);
        return NULL;
    }
    return m;
}

/* A route trace of one prompt step: n_layer layers of experts 0..k-1. */
static void write_trace(const char *path, int n_layer, int n_expert, int k)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "# route_trace v1\n# model=t arch=qwen3moe n_layer=%d n_expert=%d "
            "n_expert_used=%d\nturn,phase,step,layer,slot,expert,weight,residency,expert_bytes\n",
            n_layer, n_expert, k);
    for (int l = 0; l < n_layer; l++)
        for (int s = 0; s < k; s++)
            fprintf(f, "0,0,0,%d,%d,%d,%f,0,1000\n", l, s, s, 1.0 / k);
    fclose(f);
}

TEST(resident_model_refuses_each_setter)
{
    sl_model *m = load(SL_STREAM_OFF);
    CHECK(m != NULL);
    if (!m) return;
    sl_err err;
    double bps;
    bool found;
    char path[512];
    t_path(path, sizeof path, "runtime-api-resident.usage");
    CHECK_EQ_INT(sl_model_set_cache_policy(m, "lru", &err), SL_EUNSUPPORTED);
    CHECK(strstr(err.msg, "resident") != NULL);
    CHECK_EQ_INT(sl_model_set_route_trace(m, path, &err), SL_EUNSUPPORTED);
    CHECK_EQ_INT(sl_model_set_drive_rate(m, 1e9, &err), SL_EUNSUPPORTED);
    CHECK_EQ_INT(sl_model_calibrate_drive(m, 1 << 20, 1.0, &bps, &err), SL_EUNSUPPORTED);
    CHECK_EQ_INT(sl_model_usage_start(m, path, "id", 0.5, true, &found, &err), SL_EUNSUPPORTED);
    CHECK_EQ_INT(sl_model_usage_save(m, path, &err), SL_EUNSUPPORTED);
    CHECK_EQ_INT(sl_model_io_trace_flush(m, &err), SL_OK);
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    CHECK(!st.streaming && st.cache_policy[0] == '\0' && !st.replaying);
    sl_model_free(m);
}

TEST(policy_and_drive_rate_show_in_the_stats)
{
    sl_model *m = load(SL_STREAM_ON);
    CHECK(m != NULL);
    if (!m) return;
    sl_err err;
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    CHECK(st.streaming);
    CHECK_MSG(!strcmp(st.cache_policy, "lru"), "default policy '%s'", st.cache_policy);
    CHECK_EQ_INT(sl_model_set_cache_policy(m, "lfu", &err), SL_OK);
    CHECK_EQ_INT(sl_model_set_cache_policy(m, "fifo-ish", &err), SL_EINVAL);
    CHECK_EQ_INT(sl_model_set_drive_rate(m, 0.0, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_model_set_drive_rate(m, 123456789.0, &err), SL_OK);
    sl_model_stream_stats(m, &st);
    CHECK(!strcmp(st.cache_policy, "lfu"));
    CHECK(st.drive_cached && st.drive_bps == 123456789.0);
    sl_model_free(m);
}

TEST(route_trace_fits_or_is_refused)
{
    sl_model *m = load(SL_STREAM_ON);
    CHECK(m != NULL);
    if (!m) return;
    sl_err err;
    char bad[512], good[512], none[512];
    t_path(bad, sizeof bad, "runtime-api-bad.route.csv");
    t_path(good, sizeof good, "runtime-api-good.route.csv");
    t_path(none, sizeof none, "runtime-api-missing.route.csv");
    remove(none);
    write_trace(bad, N_LAYER + 2, N_EXPERT, TOP_K);
    write_trace(good, N_LAYER, N_EXPERT, TOP_K);
    CHECK(sl_model_set_route_trace(m, none, &err) != SL_OK);
    CHECK(sl_model_set_route_trace(m, bad, &err) != SL_OK);
    CHECK_MSG(strstr(err.msg, "does not fit the model") != NULL, "%s", err.msg);
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    CHECK(!st.replaying);
    CHECK_EQ_INT(sl_model_set_route_trace(m, good, &err), SL_OK);
    sl_model_stream_stats(m, &st);
    CHECK(st.replaying && st.replay_steps == 1 && st.replay_prompt == 1 && st.replay_done == 0);
    sl_model_free(m);
}

TEST(usage_history_saves_and_loads)
{
    char path[512];
    t_path(path, sizeof path, "runtime-api.usage");
    remove(path);
    sl_err err;
    bool found = true;
    sl_model *m = load(SL_STREAM_ON);
    CHECK(m != NULL);
    if (!m) return;
    CHECK_EQ_INT(sl_model_usage_start(m, path, "runtime-api", 0.5, true, &found, &err), SL_OK);
    CHECK(!found);
    CHECK_EQ_INT(sl_model_usage_save(m, path, &err), SL_OK);
    sl_model_free(m);

    m = load(SL_STREAM_ON);
    CHECK(m != NULL);
    if (!m) return;
    CHECK_EQ_INT(sl_model_usage_start(m, path, "runtime-api", 0.5, false, &found, &err), SL_OK);
    CHECK(found);
    sl_model_free(m);

    /* a damaged file fails, and the empty history kept instead rewrites it */
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("sluice-usage 1\nmodel runtime-api\nbroken line\n", f);
        fclose(f);
    }
    m = load(SL_STREAM_ON);
    CHECK(m != NULL);
    if (!m) return;
    CHECK(sl_model_usage_start(m, path, "runtime-api", 0.5, true, &found, &err) != SL_OK);
    CHECK(!found);
    const int src = sl_model_usage_save(m, path, &err);
    CHECK_MSG(src == SL_OK, "%s", err.msg);
    sl_model_free(m);
    m = load(SL_STREAM_ON);
    CHECK(m != NULL);
    if (!m) return;
    const int lrc = sl_model_usage_start(m, path, "runtime-api", 0.5, false, &found, &err);
    CHECK_MSG(lrc == SL_OK, "%s", err.msg);
    CHECK(found);
    sl_model_free(m);
}

int main(void)
{
    if (make_model()) return 1;
    RUN(resident_model_refuses_each_setter);
    RUN(policy_and_drive_rate_show_in_the_stats);
    RUN(route_trace_fits_or_is_refused);
    RUN(usage_history_saves_and_loads);
    return TEST_REPORT();
}
