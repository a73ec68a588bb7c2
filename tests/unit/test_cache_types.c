/* test_cache_types.c - the cache types as one setting (sl_session_params.type_k
 * / type_v, sl_model_params.cache_type_k / _v; the CLI's -ctk / -ctv, and
 * --kv-type T as both): what every layer kind caches follows them, as in
 * llama.cpp, where the kinds without a V (MLA's latent and indexer keys,
 * deepseek4's window and compressed rows) live in the K cache of type_k.
 * On deepseek2, glm-dsa and deepseek4: an f32 K alone caches those rows in
 * f32 (twice the f16 bytes, other logits than f16's, the same as f32 K and
 * V: the V type reaches no row), a session that does not choose takes the
 * load's types, a quantised K is refused naming the layer, and the cache's
 * description names what each kind holds. A session file saved with
 * -ctk f32 -ctv f32 before the K-only rows followed type_k (header field
 * 0x602: f16 plain rows, K f32, V f32) restores where no layer has such
 * rows, and is refused where one does (its rows were f16). */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "engine/session.h"
#include "sluice.h"
#include "test.h"

#define N_TOK 12

/* The models whose kinds keep K-only rows, and the kind's name. */
static const char *const plain_archs[][2] = {
    {"deepseek2", "mla"},
    {"glm-dsa", "mla"},
    {"deepseek4", "ds4"},
};

/* Every token's logits of N_TOK tokens in batches of 5 in a session of m
 * with cache types tk and tv (-1: the model's); malloc'ed, NULL on failure. */
static float *logits(sl_model *m, int tk, int tv)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 5;
    sp.all_logits = true;
    sp.type_k = tk;
    sp.type_v = tv;
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = (int32_t)(7 + (i * 41) % 300);
    return t_session_logits(m, &sp, ids, N_TOK, 5, -1);
}

/* Writes arch's tiny generated model as "<name>.gguf" (its path into path)
 * and loads it on one thread with K cache type tk at load; NULL after
 * printing why. */
static sl_model *tiny(const char *arch, const char *name, sl_kv_type tk, char *path, size_t cap)
{
    sl_synth_ds c;
    sl_err err;
    if (sl_synth_ds_init(&c, arch, "tiny", &err)) {
        fprintf(stderr, "  %s: %s\n", arch, err.msg);
        return NULL;
    }
    if (t_write_synth_ds(&c, name, path, cap)) return NULL;
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 1;
    mp.cache_type_k = tk;
    sl_model *m = NULL;
    if (sl_model_load(&m, path, &mp, &err)) fprintf(stderr, "  load: %s\n", err.msg);
    return m;
}

static bool same_bits(const float *a, const float *b, size_t n)
{
    return a && b && memcmp(a, b, n * sizeof *a) == 0;
}

/* An f32 K caches the K-only rows in f32: other logits than f16's, the
 * same whatever the V type, and twice the bytes per token. */
TEST(f32_k_reaches_k_only_rows)
{
    for (size_t a = 0; a < sizeof plain_archs / sizeof plain_archs[0]; a++) {
        char path[512];
        sl_model *m = tiny(plain_archs[a][0], plain_archs[a][0], SL_KV_F16, path, sizeof path);
        CHECK(m != NULL);
        if (!m) continue;
        const size_t n = (size_t)sl_model_n_vocab(m) * N_TOK;
        float *f16 = logits(m, SL_KV_F16, SL_KV_F16);
        float *k32 = logits(m, SL_KV_F32, SL_KV_F16);
        float *kv32 = logits(m, SL_KV_F32, SL_KV_F32);
        float *v32 = logits(m, SL_KV_F16, SL_KV_F32);
        CHECK_MSG(f16 && k32 && !same_bits(f16, k32, n), "%s: f32 K = f16", plain_archs[a][0]);
        CHECK_MSG(same_bits(k32, kv32, n), "%s: the V type changed the logits",
                  plain_archs[a][0]);
        CHECK_MSG(same_bits(f16, v32, n), "%s: an f32 V changed the logits", plain_archs[a][0]);
        const uint64_t b16 = sl_model_kv_bytes_per_token(m, SL_KV_F16, SL_KV_F16);
        const uint64_t b32 = sl_model_kv_bytes_per_token(m, SL_KV_F32, SL_KV_F16);
        CHECK_MSG(b16 > 0 && b32 == 2 * b16, "%s: %llu bytes a token in f16, %llu with f32 K",
                  plain_archs[a][0], (unsigned long long)b16, (unsigned long long)b32);
        free(f16);
        free(k32);
        free(kv32);
        free(v32);
        sl_model_free(m);
    }
}

/* A session that does not choose takes the load's types (-ctk at load);
 * the description says what each kind caches. */
TEST(session_takes_the_loads_types)
{
    char path[512];
    sl_model *m = tiny("deepseek2", "ds2-load", SL_KV_F16, path, sizeof path);
    CHECK(m != NULL);
    if (!m) return;
    const size_t n = (size_t)sl_model_n_vocab(m) * N_TOK;
    float *chosen = logits(m, SL_KV_F32, SL_KV_F32);
    sl_model_free(m);

    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 1;
    mp.cache_type_k = SL_KV_F32;
    sl_err err;
    CHECK(sl_model_load(&m, path, &mp, &err) == SL_OK);
    float *loaded = logits(m, -1, -1);
    CHECK(same_bits(chosen, loaded, n));

    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 16;
    sl_session *s;
    CHECK(sl_session_create(&s, m, &sp, &err) == SL_OK);
    char text[128];
    CHECK_STR_CONTAINS(sl_session_cache_text(s, text, sizeof text), "mla K f32");
    CHECK(strstr(text, "V") == NULL); /* MLA has no V cache */
    sl_kv_type tk, tv;
    sl_session_kv_types(s, &tk, &tv);
    CHECK_EQ_INT(tk, SL_KV_F32);
    CHECK_EQ_INT(tv, SL_KV_F16);
    sl_session_free(s);
    free(chosen);
    free(loaded);
    sl_model_free(m);
}

/* A quantised K on a kind with plain rows is refused, at the session and
 * at the load, naming the layer and what it can cache; sizes say 0. */
TEST(quantised_k_refused_on_k_only_rows)
{
    for (size_t a = 0; a < sizeof plain_archs / sizeof plain_archs[0]; a++) {
        char name[64], path[512];
        snprintf(name, sizeof name, "%s-q", plain_archs[a][0]);
        sl_model *m = tiny(plain_archs[a][0], name, SL_KV_F16, path, sizeof path);
        CHECK(m != NULL);
        if (!m) continue;
        sl_session_params sp = sl_session_default_params();
        sp.n_ctx = 16;
        sp.type_k = SL_KV_Q8_0;
        sl_session *s = NULL;
        sl_err err = {0};
        CHECK_EQ_INT(sl_session_create(&s, m, &sp, &err), SL_EINVAL);
        CHECK(s == NULL);
        CHECK_STR_CONTAINS(err.msg, "a q8_0 K cache: layer ");
        CHECK_STR_CONTAINS(err.msg, plain_archs[a][1]);
        CHECK_STR_CONTAINS(err.msg, "f16 or f32");
        CHECK_EQ_INT(sl_model_kv_bytes_per_token(m, SL_KV_Q4_0, SL_KV_F16), 0);
        CHECK_EQ_INT(sl_model_kv_bytes_at(m, SL_KV_Q8_0, SL_KV_F16, 64, 8, false), 0);
        /* a quantised V reaches no row of these kinds: accepted */
        sp.type_k = SL_KV_F16;
        sp.type_v = SL_KV_Q8_0;
        CHECK(sl_session_create(&s, m, &sp, &err) == SL_OK);
        sl_session_free(s);
        sl_model_free(m);

        sl_model_params mp = sl_model_default_params();
        mp.n_threads = 1;
        mp.cache_type_k = SL_KV_Q4_0;
        m = NULL;
        CHECK_EQ_INT(sl_model_load(&m, path, &mp, &err), SL_EINVAL);
        CHECK(m == NULL);
        CHECK_STR_CONTAINS(err.msg, "a q4_0 K cache: layer ");
    }
}

/* Attention layers keep K and V of their own types; a recurrent kind
 * keeps no rows and is left out of the description. */
TEST(attention_description)
{
    sl_model *m = t_load_tiny("qwen35moe", "q35.gguf", false);
    CHECK(m != NULL);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 16;
    sp.type_k = SL_KV_F32;
    sl_session *s;
    sl_err err;
    CHECK(sl_session_create(&s, m, &sp, &err) == SL_OK);
    char text[128];
    CHECK(strcmp(sl_session_cache_text(s, text, sizeof text), "attention K f32, V f16") == 0);
    char small[12];
    CHECK_EQ_INT(strlen(sl_session_cache_text(s, small, sizeof small)), sizeof small - 1);
    sl_session_free(s);
    sl_model_free(m);
}

/* Saves a session of m (f32 K and V) after N_TOK tokens, rewrites the
 * header's cache field as a sluice before this setting wrote it under
 * -ctk f32 -ctv f32 (plain rows f16, K f32, V f32: 2 | (1 + 1 + 4 * 1) << 8)
 * and loads it into a fresh f32 session: the load's result (tokens or an
 * SL_E* code), the message in err. */
static int old_field_round_trip(sl_model *m, const char *name, sl_err *err)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 32;
    sp.type_k = sp.type_v = SL_KV_F32;
    sl_session *s;
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = (int32_t)(9 + i * 13);
    if (sl_session_create(&s, m, &sp, err) || sl_session_eval(s, ids, N_TOK, err)) return -100;
    char path[512];
    t_path(path, sizeof path, name);
    const int saved = sl_session_save(s, path, ids, N_TOK, err);
    sl_session_free(s);
    if (saved) return -100;
    size_t len;
    uint8_t *b = (uint8_t *)t_read_all(path, &len);
    if (!b || len < 96) return -100;
    const uint32_t field = 2u | (1u + 1u + 4u * 1u) << 8;
    const uint64_t was = (uint64_t)b[40] | (uint64_t)b[41] << 8;
    for (int i = 0; i < 4; i++) b[40 + i] = (uint8_t)(field >> (8 * i));
    const uint64_t h = sl_session_file_hash(0, b, 88);
    for (int i = 0; i < 8; i++) b[88 + i] = (uint8_t)(h >> (8 * i));
    FILE *f = fopen(path, "wb");
    const bool ok = f && fwrite(b, 1, len, f) == len;
    if (f) fclose(f);
    free(b);
    if (!ok || was != 4) return -100; /* f32 K and V today: the plain field 4 */
    if (sl_session_create(&s, m, &sp, err)) return -100;
    int32_t got[N_TOK];
    const int rc = sl_session_load(s, path, got, N_TOK, err);
    sl_session_free(s);
    return rc;
}

TEST(old_f32_saves)
{
    sl_model *m = t_load_tiny("qwen3moe", "q3.gguf", false);
    CHECK(m != NULL);
    if (!m) return;
    sl_err err = {0};
    CHECK_MSG(old_field_round_trip(m, "q3.state", &err) == N_TOK, "%s", err.msg);
    sl_model_free(m);

    char path[512];
    m = tiny("deepseek2", "ds2-save", SL_KV_F16, path, sizeof path);
    CHECK(m != NULL);
    if (!m) return;
    CHECK_EQ_INT(old_field_round_trip(m, "ds2.state", &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "(mla rows f16) values, this session K f32, V f32 (mla rows f32)");
    sl_model_free(m);
}

int main(void)
{
    RUN(f32_k_reaches_k_only_rows);
    RUN(session_takes_the_loads_types);
    RUN(quantised_k_refused_on_k_only_rows);
    RUN(attention_description);
    RUN(old_f32_saves);
    return TEST_REPORT();
}
