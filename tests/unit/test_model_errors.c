/* test_model_errors.c - a model file that is valid GGUF but not a valid
 * model must fail to load with a message naming the problem: an unknown
 * architecture, a missing tensor, a tensor of the wrong shape, a missing
 * hyperparameter, absurd hyperparameters. Each case copies a generated
 * f32 tiny model through the GGUF writer with one thing changed. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "synth/synth.h"
#include "sluice.h"
#include "test.h"

static char base[512];

typedef struct change {
    const char *drop_tensor;   /* leave this tensor out */
    const char *transpose;     /* swap ne[0] and ne[1] of this 2-D tensor */
    const char *drop_key;      /* leave this key out */
    const char *set_key;       /* replace this key's value ... */
    const char *set_str;       /* ... by this string, or */
    int64_t set_u32;           /* ... by this uint32 (when set_str is NULL) */
} change;

/* Copies base into path with one change; returns 0 on success. */
static int copy_with(const char *path, const change *c)
{
    sl_gguf *g;
    sl_gguf_writer *w;
    sl_err err;
    if (sl_gguf_open(&g, base, &err)) return -1;
    if (sl_gguf_writer_open(&w, path, &err)) {
        sl_gguf_close(g);
        return -1;
    }
    int rc = 0;
    for (uint64_t i = 0; i < sl_gguf_kv_count(g) && !rc; i++) {
        const sl_gguf_kv *kv = sl_gguf_kv_at(g, i);
        const char *key = kv->key.ptr;
        if (c->drop_key && !strcmp(key, c->drop_key)) continue;
        if (c->set_key && !strcmp(key, c->set_key)) {
            rc = c->set_str ? sl_gguf_writer_set_str(w, key, c->set_str)
                            : sl_gguf_writer_set_u32(w, key, (uint32_t)c->set_u32);
            continue;
        }
        rc = sl_gguf_writer_set_value(w, key, &kv->value);
    }
    for (uint64_t i = 0; i < sl_gguf_tensor_count(g) && !rc; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (c->drop_tensor && !strcmp(t->name.ptr, c->drop_tensor)) continue;
        uint64_t ne[4];
        memcpy(ne, t->ne, sizeof ne);
        if (c->transpose && !strcmp(t->name.ptr, c->transpose)) {
            ne[0] = t->ne[1];
            ne[1] = t->ne[0];
        }
        rc = sl_gguf_writer_add_tensor(w, t->name.ptr, t->type, t->n_dims, ne, &err);
    }
    for (uint64_t i = 0; i < sl_gguf_tensor_count(g) && !rc; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (c->drop_tensor && !strcmp(t->name.ptr, c->drop_tensor)) continue;
        void *buf = malloc(t->nbytes);
        rc = !buf || sl_gguf_read_tensor(g, t, 0, buf, t->nbytes, &err) ||
             sl_gguf_writer_write(w, buf, t->nbytes, &err);
        free(buf);
    }
    sl_gguf_close(g);
    if (rc) {
        sl_gguf_writer_abort(w);
        return -1;
    }
    return sl_gguf_writer_close(w, &err) ? -1 : 0;
}

/* Loads the changed copy; returns the load's code and its message in err. */
static int load_changed(const change *c, const char *name, sl_err *err)
{
    char path[512];
    t_path(path, sizeof path, name);
    if (copy_with(path, c)) {
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

TEST(unchanged_copy_loads)
{
    change c = {0};
    sl_err err;
    CHECK_MSG(load_changed(&c, "same.gguf", &err) == 0, "%s", err.msg);
}

TEST(unknown_architecture)
{
    change c = {.set_key = "general.architecture", .set_str = "mamba9"};
    sl_err err;
    CHECK(load_changed(&c, "arch.gguf", &err) == SL_EUNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "architecture 'mamba9' is not supported");
    CHECK_STR_CONTAINS(err.msg, "qwen3moe"); /* lists what is supported */
}

TEST(missing_tensor)
{
    change c = {.drop_tensor = "blk.1.ffn_down_exps.weight"};
    sl_err err;
    CHECK(load_changed(&c, "missing.gguf", &err) == SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tensor 'blk.1.ffn_down_exps.weight' is missing");
}

TEST(wrong_shape)
{
    /* tiny: n_embd 64, 2 kv heads x 16 = 32, so attn_k is [64, 32] */
    change c = {.transpose = "blk.0.attn_k.weight"};
    sl_err err;
    CHECK(load_changed(&c, "shape.gguf", &err) == SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tensor 'blk.0.attn_k.weight' has shape [32, 64], expected [64, 32]");
}

TEST(missing_hyperparameter)
{
    change c = {.drop_key = "qwen3moe.block_count"};
    sl_err err;
    CHECK(load_changed(&c, "nolayers.gguf", &err) == SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "qwen3moe.block_count");
}

TEST(absurd_hyperparameters)
{
    sl_err err;
    change heads = {.set_key = "qwen3moe.attention.head_count_kv", .set_u32 = 3};
    CHECK(load_changed(&heads, "heads.gguf", &err) == SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "not a multiple of head_count_kv 3");
    change topk = {.set_key = "qwen3moe.expert_used_count", .set_u32 = 99};
    CHECK(load_changed(&topk, "topk.gguf", &err) == SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "expert_used_count 99");
    change zero = {.set_key = "qwen3moe.embedding_length", .set_u32 = 0};
    CHECK(load_changed(&zero, "zero.gguf", &err) == SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "embedding_length");
}

/* llama.cpp's dense1-Q8_0 file (one expert stored 2-D; tests/data) with
 * llama.context_length 4 once overflowed a session buffer in a plain run
 * (issue 10): now the default session has a context of 4, runs 4 tokens,
 * and refuses the fifth cleanly. */
TEST(reference_file_with_a_four_token_context)
{
    char saved[sizeof base];
    memcpy(saved, base, sizeof base);
    snprintf(base, sizeof base, "tests/data/reference/dense1-Q8_0.gguf");
    char path[512];
    t_path(path, sizeof path, "dense1-ctx4.gguf");
    change c = {.set_key = "llama.context_length", .set_u32 = 4};
    CHECK(copy_with(path, &c) == 0);
    memcpy(base, saved, sizeof base);
    sl_model *m = NULL;
    sl_err err;
    CHECK_MSG(sl_model_load(&m, path, NULL, &err) == 0, "%s", err.msg);
    if (!m) return;
    sl_session *s = NULL;
    CHECK(sl_session_create(&s, m, NULL, &err) == 0);
    if (s) {
        CHECK_EQ_INT(sl_session_n_ctx(s), 4);
        const int32_t prompt[3] = {1, 72, 101}, next = 108;
        CHECK(sl_session_eval(s, prompt, 3, &err) == 0);
        CHECK(sl_session_eval(s, &next, 1, &err) == 0);
        CHECK_EQ_INT(sl_session_eval(s, &next, 1, &err), SL_EINVAL);
        CHECK_STR_CONTAINS(err.msg, "context is full");
        CHECK_EQ_INT(sl_session_n_past(s), 4);
    }
    sl_session_free(s);
    sl_model_free(m);
}

int main(void)
{
    sl_synth_config c;
    sl_err err;
    t_path(base, sizeof base, "base.gguf");
    if (sl_synth_config_init(&c, "qwen3moe", "tiny", &err) || sl_synth_config_validate(&c, &err) ||
        sl_synth_write(&c, base, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(unchanged_copy_loads);
    RUN(unknown_architecture);
    RUN(missing_tensor);
    RUN(wrong_shape);
    RUN(missing_hyperparameter);
    RUN(absurd_hyperparameters);
    RUN(reference_file_with_a_four_token_context);
    return TEST_REPORT();
}
