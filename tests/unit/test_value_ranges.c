/* test_value_ranges.c - the loader's sane ranges (model/value_ranges.h) at
 * their boundaries, the run-time guard's scan (sl_first_beyond) at its
 * limit, and each family's keys wired to them: a generated tiny model
 * copied through the GGUF writer with one float key (or one tensor value)
 * changed loads at a range's edge and is refused one float beyond it,
 * with the key, the value and the range in the message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "model/value_ranges.h"
#include "ops/ops.h"
#include "synth/synth.h"
#include "synth/synth_ds.h"
#include "sluice.h"
#include "test.h"

/* ---- the ranges themselves -------------------------------------------- */

/* lo and hi are in, the floats just beyond them out (but 0 when the range
 * takes 0 for "off"), NaN and the infinities out. */
static void check_edges(const sl_f32_range *r, const char *name)
{
    CHECK_MSG(sl_in_range(r, r->lo), "%s: lo %g", name, (double)r->lo);
    CHECK_MSG(sl_in_range(r, r->hi), "%s: hi %g", name, (double)r->hi);
    const float below = nextafterf(r->lo, -INFINITY), above = nextafterf(r->hi, INFINITY);
    CHECK_MSG(sl_in_range(r, below) == (r->zero_off && below == 0.0f), "%s: below %g", name,
              (double)below);
    CHECK_MSG(!sl_in_range(r, above), "%s: above %g", name, (double)above);
    CHECK_MSG(sl_in_range(r, 0.0) == (r->zero_off || r->lo == 0.0f), "%s: zero", name);
    CHECK_MSG(!sl_in_range(r, NAN) && !sl_in_range(r, INFINITY) && !sl_in_range(r, -INFINITY),
              "%s: non-finite", name);
}

TEST(each_range_has_closed_edges)
{
    check_edges(&SL_RANGE_EPS, "eps");
    check_edges(&SL_RANGE_SOFTCAP, "softcap");
    check_edges(&SL_RANGE_ROPE_BASE, "rope base");
    check_edges(&SL_RANGE_ROPE_FACTOR, "rope factor");
    check_edges(&SL_RANGE_YARN_LOG_MUL, "yarn log multiplier");
    check_edges(&SL_RANGE_EXPERT_SCALE, "expert scale");
    check_edges(&SL_RANGE_CLAMP, "clamp");
}

/* The values of the published models and of the reference fixtures
 * (../shared/ARCHS.md) are inside; the hostile ones outside. */
TEST(real_values_in_absurd_ones_out)
{
    const float eps[] = {1e-5f, 1e-6f, 1e-12f};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) CHECK(sl_in_range(&SL_RANGE_EPS, eps[i]));
    CHECK(!sl_in_range(&SL_RANGE_EPS, 1e30f));
    CHECK(!sl_in_range(&SL_RANGE_EPS, 0.0));
    CHECK(sl_in_range(&SL_RANGE_SOFTCAP, 30.0f) && sl_in_range(&SL_RANGE_SOFTCAP, 50.0f));
    CHECK(!sl_in_range(&SL_RANGE_SOFTCAP, 1e-30f));
    const float bases[] = {10000.0f, 150000.0f, 160000.0f, 1e6f, 1e7f, 3.58e9f};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++)
        CHECK(sl_in_range(&SL_RANGE_ROPE_BASE, bases[i]));
    const float factors[] = {4.0f, 8.0f, 16.0f, 32.0f, 40.0f, 64.0f};
    for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++)
        CHECK(sl_in_range(&SL_RANGE_ROPE_FACTOR, factors[i]));
    CHECK(sl_in_range(&SL_RANGE_YARN_LOG_MUL, 0.1f) && sl_in_range(&SL_RANGE_YARN_LOG_MUL, 0.0707f));
    const float scales[] = {1.0f, 1.5f, 2.5f, 2.827f, 16.0f};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
        CHECK(sl_in_range(&SL_RANGE_EXPERT_SCALE, scales[i]));
    CHECK(sl_in_range(&SL_RANGE_CLAMP, 10.0f) && sl_in_range(&SL_RANGE_CLAMP, 2.5f));
}

TEST(the_message_names_key_value_and_range)
{
    sl_err err;
    CHECK_EQ_INT(sl_check_range(&SL_RANGE_EPS, "a.b", 1e30, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "metadata 'a.b' = 1e+30 is out of range [1e-12, 0.01]");
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK_EQ_INT(sl_check_range(&SL_RANGE_SOFTCAP, "g.cap", 0.5, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "metadata 'g.cap' = 0.5 is out of range [1, 10000] (or 0: off)");
    CHECK_EQ_INT(sl_check_range(&SL_RANGE_SOFTCAP, "g.cap", 0.0, &err), SL_OK);
}

/* ---- the run-time guard's scan ----------------------------------------- */

TEST(first_beyond_finds_the_first_value_at_the_limit)
{
    enum { N = 200 }; /* three 64-value blocks and a tail */
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (i % 2 ? -1.0f : 1.0f) * (float)i;
    CHECK_EQ_INT(sl_first_beyond(x, N, SL_HIDDEN_MAX), -1);
    CHECK_EQ_INT(sl_first_nonfinite(x, N), -1);
    const int at[] = {0, 63, 64, 130, 191, 192, 199};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        const int i = at[k];
        const float keep = x[i];
        x[i] = nextafterf(SL_HIDDEN_MAX, 0.0f); /* the largest value allowed */
        CHECK_EQ_INT(sl_first_beyond(x, N, SL_HIDDEN_MAX), -1);
        x[i] = -SL_HIDDEN_MAX; /* the limit itself, either sign */
        CHECK_EQ_INT(sl_first_beyond(x, N, SL_HIDDEN_MAX), i);
        CHECK_EQ_INT(sl_first_nonfinite(x, N), -1);
        x[i] = 3.4e38f;
        CHECK_EQ_INT(sl_first_beyond(x, N, SL_HIDDEN_MAX), i);
        x[i] = NAN;
        CHECK_EQ_INT(sl_first_beyond(x, N, SL_HIDDEN_MAX), i);
        CHECK_EQ_INT(sl_first_nonfinite(x, N), i);
        x[i] = -INFINITY;
        CHECK_EQ_INT(sl_first_nonfinite(x, N), i);
        x[i] = keep;
    }
    x[150] = INFINITY;
    x[170] = NAN;
    CHECK_EQ_INT(sl_first_beyond(x, N, SL_HIDDEN_MAX), 150);
    CHECK_EQ_INT(sl_first_beyond(x + 151, N - 151, SL_HIDDEN_MAX), 19);
}

/* ---- the families' keys and tensors ------------------------------------ */

typedef struct change {
    const char *key;    /* set this float32 key (added when absent) ... */
    const char *str_key; /* ... and this string key, when not NULL */
    const char *str;
    float value;
    const char *tensor; /* or set entry `entry` of this f32 tensor to value */
    int entry;
} change;

/* Copies the GGUF file src into "<tmpdir>/<name>" with c applied; the path
 * in path. 0 on success. */
static int copy_with(const char *src, const char *name, const change *c, char *path, size_t cap)
{
    t_path(path, cap, name);
    sl_gguf *g;
    sl_gguf_writer *w;
    sl_err err;
    if (sl_gguf_open(&g, src, &err)) return -1;
    if (sl_gguf_writer_open(&w, path, &err)) {
        sl_gguf_close(g);
        return -1;
    }
    int rc = 0;
    bool key_seen = false, str_seen = false;
    for (uint64_t i = 0; i < sl_gguf_kv_count(g) && !rc; i++) {
        const sl_gguf_kv *kv = sl_gguf_kv_at(g, i);
        const char *key = kv->key.ptr;
        if (c->key && !strcmp(key, c->key)) {
            rc = sl_gguf_writer_set_f32(w, key, c->value);
            key_seen = true;
        } else if (c->str_key && !strcmp(key, c->str_key)) {
            rc = sl_gguf_writer_set_str(w, key, c->str);
            str_seen = true;
        } else {
            rc = sl_gguf_writer_set_value(w, key, &kv->value);
        }
    }
    if (!rc && c->key && !key_seen) rc = sl_gguf_writer_set_f32(w, c->key, c->value);
    if (!rc && c->str_key && !str_seen) rc = sl_gguf_writer_set_str(w, c->str_key, c->str);
    for (uint64_t i = 0; i < sl_gguf_tensor_count(g) && !rc; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        rc = sl_gguf_writer_add_tensor(w, t->name.ptr, t->type, t->n_dims, t->ne, &err);
    }
    for (uint64_t i = 0; i < sl_gguf_tensor_count(g) && !rc; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        float *buf = malloc(t->nbytes);
        rc = !buf || sl_gguf_read_tensor(g, t, 0, buf, t->nbytes, &err);
        if (!rc && c->tensor && !strcmp(t->name.ptr, c->tensor)) buf[c->entry] = c->value;
        if (!rc) rc = sl_gguf_writer_write(w, buf, t->nbytes, &err);
        free(buf);
    }
    sl_gguf_close(g);
    if (rc) {
        sl_gguf_writer_abort(w);
        return -1;
    }
    return sl_gguf_writer_close(w, &err) ? -1 : 0;
}

/* Loads src with c applied (the whole model, so the tensor check runs);
 * returns the load's code, its message in err. */
static int load_with(const char *src, const change *c, sl_err *err)
{
    char path[512];
    if (copy_with(src, "changed.gguf", c, path, sizeof path)) {
        snprintf(err->msg, sizeof err->msg, "could not write the test file");
        return 99;
    }
    sl_model *m = NULL;
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 1;
    int rc = sl_model_load(&m, path, &mp, err);
    sl_model_free(m);
    return rc;
}

/* key at the range's edge edge loads; at beyond it is refused naming the
 * key and the range text want. */
static void check_key(const char *src, const char *key, float edge, float beyond,
                      const char *want)
{
    sl_err err;
    change c = {.key = key, .value = edge};
    int rc = load_with(src, &c, &err);
    CHECK_MSG(rc == SL_OK, "%s = %g: %s", key, (double)edge, err.msg);
    c.value = beyond;
    rc = load_with(src, &c, &err);
    CHECK_MSG(rc == SL_EFORMAT, "%s = %g loaded (%d)", key, (double)beyond, rc);
    char quoted[160];
    snprintf(quoted, sizeof quoted, "metadata '%s' = ", key);
    CHECK_STR_CONTAINS(err.msg, quoted);
    CHECK_STR_CONTAINS(err.msg, want);
}

static char llama_path[512], ds2_path[512], ds4_path[512], gemma_path[512], oss_path[512];

TEST(common_keys)
{
    check_key(llama_path, "qwen3moe.attention.layer_norm_rms_epsilon", 0.01f,
              nextafterf(0.01f, 1.0f), "out of range [1e-12, 0.01]");
    check_key(llama_path, "qwen3moe.attention.layer_norm_rms_epsilon", 1e-12f,
              nextafterf(1e-12f, 0.0f), "out of range [1e-12, 0.01]");
    check_key(llama_path, "qwen3moe.rope.freq_base", 1e11f, nextafterf(1e11f, INFINITY),
              "out of range [2, 1e+11]");
    check_key(llama_path, "qwen3moe.rope.freq_base", 2.0f, nextafterf(2.0f, 0.0f),
              "out of range [2, 1e+11]");
    /* a rope scaling factor is read only with a scaling type */
    sl_err err;
    change c = {.key = "qwen3moe.rope.scaling.factor", .str_key = "qwen3moe.rope.scaling.type",
                .str = "yarn", .value = 1024.0f};
    CHECK_MSG(load_with(llama_path, &c, &err) == SL_OK, "%s", err.msg);
    c.value = 1025.0f;
    CHECK_EQ_INT(load_with(llama_path, &c, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "metadata 'qwen3moe.rope.scaling.factor' = 1025 is out of range "
                                "[1, 1024]");
}

TEST(deepseek2_routing_and_yarn_keys)
{
    check_key(ds2_path, "deepseek2.expert_weights_scale", 100.0f, nextafterf(100.0f, 1e3f),
              "out of range [0.01, 100] (or 0: off)");
    check_key(ds2_path, "deepseek2.expert_weights_scale", 0.0f, 1e-30f,
              "out of range [0.01, 100] (or 0: off)");
    check_key(ds2_path, "deepseek2.rope.scaling.yarn_log_multiplier", 1.0f,
              nextafterf(1.0f, 2.0f), "out of range [0, 1]");
}

TEST(deepseek4_hyper_connection_epsilon_and_compress_base)
{
    check_key(ds4_path, "deepseek4.hyper_connection.epsilon", 0.01f, 1e30f,
              "= 1e+30 is out of range [1e-12, 0.01]");
    check_key(ds4_path, "deepseek4.attention.compress_rope_freq_base", 1e11f, 1e30f,
              "out of range [2, 1e+11]");
}

TEST(gemma4_softcap_and_sliding_base)
{
    check_key(gemma_path, "gemma4.final_logit_softcapping", 1.0f, 1e-30f,
              "= 1e-30 is out of range [1, 10000] (or 0: off)");
    check_key(gemma_path, "gemma4.final_logit_softcapping", 10000.0f, 10001.0f,
              "out of range [1, 10000] (or 0: off)");
    check_key(gemma_path, "gemma4.rope.freq_base_swa", 2.0f, 1.5f, "out of range [2, 1e+11]");
    sl_err err;
    change off = {.key = "gemma4.final_logit_softcapping", .value = 0.0f};
    CHECK_MSG(load_with(gemma_path, &off, &err) == SL_OK, "%s", err.msg);
}

/* A small f32 tensor with a huge finite value (the gpt-oss
 * attention-output bias of 3.4e38) is refused at load naming the tensor;
 * just below the bound it loads. */
TEST(gptoss_bias_of_huge_magnitude)
{
    sl_err err;
    change c = {.tensor = "blk.0.attn_output.bias", .entry = 5,
                .value = nextafterf(SL_SMALL_TENSOR_MAX, 0.0f)};
    CHECK_MSG(load_with(oss_path, &c, &err) == SL_OK, "%s", err.msg);
    c.value = -SL_SMALL_TENSOR_MAX;
    CHECK_EQ_INT(load_with(oss_path, &c, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tensor 'blk.0.attn_output.bias' holds -1e+06 at entry 5");
    c.value = 3.4028235e38f;
    c.tensor = "blk.1.post_attention_norm.weight";
    CHECK_EQ_INT(load_with(oss_path, &c, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tensor 'blk.1.post_attention_norm.weight' holds 3.40282e+38");
    CHECK_STR_CONTAINS(err.msg, "the file is damaged");
}

static int write_synth(const char *arch, char *path, size_t cap)
{
    sl_synth_config c;
    sl_err err;
    char name[64];
    snprintf(name, sizeof name, "%s.gguf", arch);
    t_path(path, cap, name);
    if (sl_synth_config_init(&c, arch, "tiny", &err) || sl_synth_config_validate(&c, &err) ||
        sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  %s: %s\n", arch, err.msg);
        return -1;
    }
    return 0;
}

static int write_ds(const char *arch, char *path, size_t cap)
{
    sl_synth_ds c;
    sl_err err;
    if (sl_synth_ds_init(&c, arch, "tiny", &err)) {
        fprintf(stderr, "  %s: %s\n", arch, err.msg);
        return -1;
    }
    c.type = SL_SYNTH_Q8_0; /* deepseek4's tiny is 20 MB in f32 */
    return t_write_synth_ds(&c, arch, path, cap);
}

int main(void)
{
    RUN(each_range_has_closed_edges);
    RUN(real_values_in_absurd_ones_out);
    RUN(the_message_names_key_value_and_range);
    RUN(first_beyond_finds_the_first_value_at_the_limit);
    if (write_synth("qwen3moe", llama_path, sizeof llama_path) ||
        write_synth("gemma4", gemma_path, sizeof gemma_path) ||
        write_synth("gpt-oss", oss_path, sizeof oss_path) ||
        write_ds("deepseek2", ds2_path, sizeof ds2_path) ||
        write_ds("deepseek4", ds4_path, sizeof ds4_path)) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(common_keys);
    RUN(deepseek2_routing_and_yarn_keys);
    RUN(deepseek4_hyper_connection_epsilon_and_compress_base);
    RUN(gemma4_softcap_and_sliding_base);
    RUN(gptoss_bias_of_huge_magnitude);
    return TEST_REPORT();
}
