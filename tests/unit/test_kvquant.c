/* test_kvquant.c - quantised KV caches (-ctk / -ctv: q8_0, q4_0, mixed
 * with f16): every token's logits are bit-identical for any thread count
 * and batch split; the distributions stay close to the f16 cache's (mean
 * KL divergence bounds) but are not identical to them; the
 * position-by-position attention over quantised rows agrees with a plain
 * double-precision softmax over the same (dequantised) values; a session
 * saved with a quantised cache comes back bit-identical and is refused by
 * a session of another cache type; head sizes that are not multiples of
 * 32 are refused with a message; the running sum is rescaled as llama.cpp's
 * one-chunk loop does it, S x ms + w in two roundings (an FMA there gives
 * other bits; bench/llama_fattn.c compares with llama.cpp's op itself);
 * the attention rotation of quantised caches is part of what a saved
 * session holds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "engine/kv_rows.h"
#include "ops/attn_kernels.h"
#include "quant/quant.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_TOK 40

static int32_t prompt[N_TOK];
static char model_k[512];   /* qwen3moe tiny-k: head size 64 */
static char model_tiny[512]; /* qwen3moe tiny: head size 16 */

static int generate(const char *preset, const char *name, char *path, size_t cap)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen3moe", preset, &err)) return -1;
    c.type = SL_SYNTH_Q8_0;
    c.seed = 11;
    t_path(path, cap, name);
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static sl_model *load(const char *path, int threads)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = threads;
    sl_model *m = NULL;
    sl_err err;
    if (sl_model_load(&m, path, &mp, &err)) fprintf(stderr, "  load: %s\n", err.msg);
    return m;
}

static sl_session *session_rot(sl_model *m, int tk, int tv, int batch, bool all, bool rot_off)
{
    sl_session_params sp = sl_session_default_params();
    sp.attn_rot_off = rot_off;
    sp.n_ctx = 64;
    sp.n_batch_max = batch;
    sp.all_logits = all;
    sp.type_k = tk;
    sp.type_v = tv;
    sl_session *s = NULL;
    sl_err err;
    if (sl_session_create(&s, m, &sp, &err)) fprintf(stderr, "  session: %s\n", err.msg);
    return s;
}

static sl_session *session(sl_model *m, int tk, int tv, int batch, bool all)
{
    return session_rot(m, tk, tv, batch, all, false);
}

/* Every token's logits of the prompt, in batches of `batch` tokens. */
static float *logits(int threads, int tk, int tv, int batch)
{
    sl_model *m = load(model_k, threads);
    if (!m) return NULL;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = batch;
    sp.all_logits = true;
    sp.type_k = tk;
    sp.type_v = tv;
    float *out = t_session_logits(m, &sp, prompt, N_TOK, batch, -1);
    sl_model_free(m);
    return out;
}

static int n_vocab(void)
{
    sl_model_params mp = sl_model_default_params();
    mp.describe_only = true;
    sl_model *m = NULL;
    sl_err err;
    if (sl_model_load(&m, model_k, &mp, &err)) return 0;
    const int v = sl_model_n_vocab(m);
    sl_model_free(m);
    return v;
}

/* Mean over tokens of KL(p || q), p and q the softmax of each row. */
static double mean_kld(const float *p, const float *q, int V)
{
    double total = 0.0;
    for (int t = 0; t < N_TOK; t++) {
        const float *a = p + (size_t)t * V, *b = q + (size_t)t * V;
        double ma = a[0], mb = b[0], za = 0.0, zb = 0.0, kl = 0.0;
        for (int i = 1; i < V; i++) {
            ma = fmax(ma, a[i]);
            mb = fmax(mb, b[i]);
        }
        for (int i = 0; i < V; i++) {
            za += exp(a[i] - ma);
            zb += exp(b[i] - mb);
        }
        for (int i = 0; i < V; i++) {
            const double la = a[i] - ma - log(za), lb = b[i] - mb - log(zb);
            kl += exp(la) * (la - lb);
        }
        total += kl;
    }
    return total / N_TOK;
}

static const int combos[][2] = {{SL_KV_Q8_0, SL_KV_Q8_0}, {SL_KV_Q4_0, SL_KV_Q4_0},
                                {SL_KV_Q8_0, SL_KV_F16},  {SL_KV_F16, SL_KV_Q4_0}};

TEST(bits_across_threads_and_batches)
{
    const int V = n_vocab();
    CHECK(V > 0);
    for (size_t c = 0; c < sizeof combos / sizeof combos[0]; c++) {
        const int tk = combos[c][0], tv = combos[c][1];
        float *one = logits(1, tk, tv, N_TOK), *two = logits(2, tk, tv, N_TOK);
        float *split = logits(2, tk, tv, 7), *single = logits(1, tk, tv, 1);
        CHECK(one && two && split && single);
        if (one && two && split && single) {
            const size_t bytes = sizeof(float) * (size_t)V * N_TOK;
            CHECK_MSG(!memcmp(one, two, bytes), "K %s V %s: 1 vs 2 threads",
                      sl_kv_type_name(tk), sl_kv_type_name(tv));
            CHECK_MSG(!memcmp(one, split, bytes), "K %s V %s: one batch vs batches of 7",
                      sl_kv_type_name(tk), sl_kv_type_name(tv));
            CHECK_MSG(!memcmp(one, single, bytes), "K %s V %s: one batch vs token by token",
                      sl_kv_type_name(tk), sl_kv_type_name(tv));
        }
        free(one);
        free(two);
        free(split);
        free(single);
    }
}

TEST(kld_against_f16)
{
    const int V = n_vocab();
    float *f16 = logits(2, SL_KV_F16, SL_KV_F16, N_TOK);
    float *q8 = logits(2, SL_KV_Q8_0, SL_KV_Q8_0, N_TOK);
    float *q4 = logits(2, SL_KV_Q4_0, SL_KV_Q4_0, N_TOK);
    CHECK(V > 0 && f16 && q8 && q4);
    if (V > 0 && f16 && q8 && q4) {
        const double k8 = mean_kld(f16, q8, V), k4 = mean_kld(f16, q4, V);
        printf("  mean KLD against the f16 cache: q8_0 %.3g, q4_0 %.3g\n", k8, k4);
        /* the cache is really quantised, and costs what its bits say */
        CHECK(memcmp(f16, q8, sizeof(float) * (size_t)V * N_TOK) != 0);
        CHECK_MSG(k8 <= 1e-3, "q8_0 mean KLD %g", k8); /* measured 3.5e-4 here */
        CHECK_MSG(k4 <= 1e-1, "q4_0 mean KLD %g", k4); /* measured 0.041 here */
        CHECK_MSG(k4 > k8, "q4_0 (%g) should cost more than q8_0 (%g)", k4, k8);
    }
    free(f16);
    free(q8);
    free(q4);
}

/* softmax(q.k * scale) . v in double over given float rows (the
 * expectation written independently of the kernel). */
static void naive(const float *q, const float *k, const float *v, int n_pos, int dk, int dv,
                  float scale, double *out)
{
    double *s = malloc(sizeof(double) * (size_t)n_pos), mx = -INFINITY, z = 0.0;
    for (int p = 0; p < n_pos; p++) {
        double d = 0.0;
        for (int i = 0; i < dk; i++) d += (double)q[i] * k[(size_t)p * dk + i];
        s[p] = d * scale;
        mx = fmax(mx, s[p]);
    }
    for (int i = 0; i < dv; i++) out[i] = 0.0;
    for (int p = 0; p < n_pos; p++) {
        const double w = exp(s[p] - mx);
        z += w;
        for (int i = 0; i < dv; i++) out[i] += w * v[(size_t)p * dv + i];
    }
    for (int i = 0; i < dv; i++) out[i] /= z;
    free(s);
}

TEST(seq_kernel_matches_naive)
{
    enum { D = 64, P = 75, NQ = 3 };
    const sl_kv_type types[] = {SL_KV_Q8_0, SL_KV_Q4_0, SL_KV_F16, SL_KV_F32};
    float *kf = malloc(sizeof(float) * P * D), *vf = malloc(sizeof(float) * P * D);
    float q[NQ * D], qr[D];
    uint8_t *kb = malloc(P * D * 4), *vb = malloc(P * D * 4);
    for (int i = 0; i < P * D; i++) {
        kf[i] = sinf(0.37f * (float)i) * 1.5f;
        vf[i] = cosf(0.11f * (float)i + 0.3f);
    }
    for (int i = 0; i < NQ * D; i++) q[i] = sinf(0.05f * (float)i + 1.0f);
    const sl_attn_kernels *sets[2] = {sl_attn_kernels_ref(), sl_attn_kernels_avx2()};
    for (size_t ti = 0; ti < 4; ti++) {
        const sl_kv_type t = types[ti];
        const uint64_t rb = sl_kv_row_bytes(t, D);
        for (int p = 0; p < P; p++) {
            sl_kv_row_store(t, kf + p * D, kb + p * rb, D);
            sl_kv_row_store(t, vf + p * D, vb + p * rb, D);
        }
        /* the rows as the cache holds them, back in f32 */
        float *kd = malloc(sizeof(float) * P * D), *vd = malloc(sizeof(float) * P * D);
        const sl_type_traits *tr = sl_type_get(sl_kv_quant_type(t));
        for (int p = 0; p < P; p++) {
            tr->to_float(kb + p * rb, kd + p * D, D);
            tr->to_float(vb + p * rb, vd + p * D, D);
        }
        float out[2][NQ * D];
        for (int k = 0; k < 2; k++) {
            if (!sets[k]) continue;
            float *scratch = malloc(sizeof(float) * sl_attn_scratch_floats(D, D, NQ));
            sl_attn_block b = {.q = q, .q_stride = D, .k = kb, .v = vb, .k_stride = rb,
                               .v_stride = rb, .dk = D, .dv = D, .n_q = NQ, .n_pos = P,
                               .scale = 0.125f, .out = out[k], .out_stride = D,
                               .scratch = scratch, .pos_lo = 5};
            sl_attn_attend_seq(sets[k], &b, (int)sl_kv_quant_type(t), (int)sl_kv_quant_type(t));
            free(scratch);
        }
        if (sets[1]) CHECK_MSG(!memcmp(out[0], out[1], sizeof out[0]), "%s: ref vs avx2 bits",
                               sl_kv_type_name(t));
        for (int r = 0; r < NQ; r++) {
            /* the query as K's dot product sees it */
            memcpy(qr, q + r * D, sizeof qr);
            if (sl_kv_type_quantized(t)) {
                uint8_t qq[D * 2];
                sl_type_get(SL_TYPE_Q8_0)->from_float(q + r * D, qq, D);
                sl_type_get(SL_TYPE_Q8_0)->to_float(qq, qr, D);
            } else if (t == SL_KV_F16) {
                for (int i = 0; i < D; i++) qr[i] = sl_fp16_to_f32(sl_f32_to_fp16(qr[i]));
            }
            double want[D];
            naive(qr, kd + 5 * D, vd + 5 * D, P - 5, D, D, 0.125f, want);
            double err = 0.0;
            for (int i = 0; i < D; i++) err = fmax(err, fabs(want[i] - out[0][r * D + i]));
            /* an f16 V accumulates in f16 (as the reference does) */
            CHECK_MSG(err < (t == SL_KV_F16 ? 2e-3 : 2e-5), "%s row %d: max error %g",
                      sl_kv_type_name(t), r, err);
        }
        free(kd);
        free(vd);
    }
    free(kf);
    free(vf);
    free(kb);
    free(vb);
}

/* llama.cpp's one-chunk loop for one query row with q = 1, scale 1 and
 * dk = dv = 1 (so the score is the key itself), written out: a new maximum
 * rescales the value and the sum by expf(old - new), otherwise the weight
 * is expf(s - max); S = S x ms + vs, two roundings when fused is 0, one
 * (an FMA) when 1. Returns the output value. */
static float one_chunk_row(const float *k, const float *v, int n, int fused)
{
    float M = -INFINITY, S = 0.0f, acc = 0.0f;
    for (int i = 0; i < n; i++) {
        float ms = 1.0f, vs = 1.0f;
        if (k[i] > M) {
            ms = expf(M - k[i]);
            M = k[i];
            acc *= ms;
        } else {
            vs = expf(k[i] - M);
        }
        acc = fmaf(v[i], vs, acc);
        S = fused ? fmaf(S, ms, vs) : S * ms + vs;
    }
    return acc * (S == 0.0f ? 0.0f : 1.0f / S);
}

TEST(seq_sum_rescaled_in_two_roundings)
{
    /* scores where a later maximum rescales a sum that is not 1: find
     * inputs on which the fused and two-rounding sums give other outputs,
     * then the kernel must give the two-rounding one */
    uint32_t st = 5;
    int found = 0;
    float one = 1.0f, scratch[4096];
    for (int trial = 0; trial < 20000 && found < 20; trial++) {
        float k[4], v[4], out;
        for (int i = 0; i < 4; i++) {
            st = st * 1664525u + 1013904223u;
            k[i] = (float)(st >> 8) / 16777216.0f * 4.0f;
            st = st * 1664525u + 1013904223u;
            v[i] = (float)(st >> 8) / 16777216.0f - 0.5f;
        }
        const float want = one_chunk_row(k, v, 4, 0), fused = one_chunk_row(k, v, 4, 1);
        if (!memcmp(&want, &fused, sizeof want)) continue;
        sl_attn_block b = {.q = &one, .q_stride = 1, .k = k, .v = v, .k_stride = sizeof(float),
                           .v_stride = sizeof(float), .dk = 1, .dv = 1, .n_q = 1, .n_pos = 4,
                           .scale = 1.0f, .out = &out, .out_stride = 1, .scratch = scratch};
        sl_attn_attend_seq(sl_attn_kernels_get(), &b, SL_TYPE_F32, SL_TYPE_F32);
        CHECK_MSG(!memcmp(&out, &want, sizeof out), "trial %d: %.9g, two roundings %.9g, fused %.9g",
                  trial, (double)out, (double)want, (double)fused);
        found++;
    }
    CHECK(found == 20); /* the search found cases that tell the two apart */
}

/* A session of cache types tk / tv (rotation off with rot_off) refuses the
 * saved file, saying why (why: a part of the message), and stays empty. */
static void check_refuses(sl_model *m, const char *file, int tk, int tv, bool rot_off,
                          const char *why)
{
    sl_session *c = session_rot(m, tk, tv, 32, false, rot_off);
    CHECK(c);
    if (!c) return;
    sl_err err;
    int32_t got[64];
    CHECK_EQ_INT(sl_session_load(c, file, got, 64, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, why);
    CHECK_EQ_INT(sl_session_n_past(c), 0);
    sl_session_free(c);
}

TEST(save_load_carries_the_type)
{
    sl_model *m = load(model_k, 2);
    CHECK(m);
    if (!m) return;
    const int V = sl_model_n_vocab(m);
    char file[512];
    t_path(file, sizeof file, "state-q8.bin");
    sl_err err;
    sl_session *a = session(m, SL_KV_Q8_0, SL_KV_Q4_0, 32, false);
    CHECK(a && sl_session_eval(a, prompt, 20, &err) == 0);
    CHECK_MSG(sl_session_save(a, file, prompt, 20, &err) == 0, "%s", err.msg);
    int32_t next = 77;
    CHECK(sl_session_eval(a, &next, 1, &err) == 0);
    float *want = malloc(sizeof(float) * (size_t)V);
    memcpy(want, sl_session_logits(a), sizeof(float) * (size_t)V);

    sl_session *b = session(m, SL_KV_Q8_0, SL_KV_Q4_0, 32, false);
    int32_t got[64];
    CHECK_EQ_INT(sl_session_load(b, file, got, 64, &err), 20);
    CHECK(sl_session_eval(b, &next, 1, &err) == 0);
    CHECK(!memcmp(sl_session_logits(b), want, sizeof(float) * (size_t)V));

    /* a session of other cache types refuses the file and stays empty */
    check_refuses(m, file, SL_KV_F16, SL_KV_F16, false, "K q8_0, V q4_0");
    check_refuses(m, file, SL_KV_Q8_0, SL_KV_Q8_0, false, "K q8_0, V q4_0");
    free(want);
    sl_session_free(a);
    sl_session_free(b);
    sl_model_free(m);
}

/* The rotation (head size 64 here) changes what a quantised cache holds:
 * rotated and unrotated sessions give other logits, and a file saved by
 * one is refused by the other, naming the rotation, while one of the same
 * kind loads it. */
TEST(rotation_is_part_of_the_cache)
{
    sl_model *m = load(model_k, 2);
    CHECK(m);
    if (!m) return;
    const int V = sl_model_n_vocab(m);
    char file[512];
    t_path(file, sizeof file, "state-q8-norot.bin");
    sl_err err;
    sl_session *plain = session_rot(m, SL_KV_Q8_0, SL_KV_Q8_0, 32, false, true);
    sl_session *rot = session(m, SL_KV_Q8_0, SL_KV_Q8_0, 32, false);
    CHECK(plain && rot);
    if (!plain || !rot) goto out;
    CHECK(sl_session_eval(plain, prompt, 20, &err) == 0);
    CHECK(sl_session_eval(rot, prompt, 20, &err) == 0);
    CHECK(memcmp(sl_session_logits(plain), sl_session_logits(rot), sizeof(float) * (size_t)V));
    CHECK_MSG(sl_session_save(plain, file, prompt, 20, &err) == 0, "%s", err.msg);
    check_refuses(m, file, SL_KV_Q8_0, SL_KV_Q8_0, false, "rotation");
    sl_session *d = session_rot(m, SL_KV_Q8_0, SL_KV_Q8_0, 32, false, true);
    int32_t got[64];
    CHECK(d);
    if (d) CHECK_EQ_INT(sl_session_load(d, file, got, 64, &err), 20);
    sl_session_free(d);
out:
    sl_session_free(plain);
    sl_session_free(rot);
    sl_model_free(m);
}

TEST(head_size_not_a_block_multiple_is_refused)
{
    sl_model *m = load(model_tiny, 1);
    CHECK(m);
    if (!m) return;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 16;
    sp.type_k = SL_KV_Q8_0;
    sl_session *s = NULL;
    sl_err err;
    CHECK_EQ_INT(sl_session_create(&s, m, &sp, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "blocks of 32");
    CHECK(s == NULL);
    sp.type_k = SL_KV_F16; /* f16 works */
    CHECK(sl_session_create(&s, m, &sp, &err) == 0);
    sl_session_free(s);
    sl_model_free(m);

    /* the model's default (-ctk) is refused at load, before anything is planned */
    sl_model_params mp = sl_model_default_params();
    mp.cache_type_v = SL_KV_Q4_0;
    CHECK(sl_model_load(&m, model_tiny, &mp, &err) != 0);
    CHECK_STR_CONTAINS(err.msg, "blocks of 32");
}

TEST(model_default_types_reach_sessions)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 1;
    mp.cache_type_k = SL_KV_Q8_0;
    mp.cache_type_v = SL_KV_Q8_0;
    sl_model *m = NULL;
    sl_err err;
    CHECK(sl_model_load(&m, model_k, &mp, &err) == 0);
    if (!m) return;
    /* a session that does not choose takes the load's types: same bits as
     * a session that asks for them on a model loaded without them */
    sl_session *s = session(m, -1, -1, N_TOK, false);
    CHECK(s && sl_session_eval(s, prompt, N_TOK, &err) == 0);
    const int V = sl_model_n_vocab(m);
    float *dflt = malloc(sizeof(float) * (size_t)V);
    memcpy(dflt, sl_session_logits(s), sizeof(float) * (size_t)V);
    float *asked = logits(1, SL_KV_Q8_0, SL_KV_Q8_0, N_TOK);
    CHECK(asked && !memcmp(dflt, asked + (size_t)(N_TOK - 1) * V, sizeof(float) * (size_t)V));
    free(asked);
    free(dflt);
    sl_session_free(s);
    sl_model_free(m);
}

int main(void)
{
    for (int i = 0; i < N_TOK; i++) prompt[i] = (int32_t)(3 + (i * 37) % 500);
    if (generate("tiny-k", "kvq-k.gguf", model_k, sizeof model_k) ||
        generate("tiny", "kvq-tiny.gguf", model_tiny, sizeof model_tiny))
        return 1;
    RUN(bits_across_threads_and_batches);
    RUN(kld_against_f16);
    RUN(seq_kernel_matches_naive);
    RUN(seq_sum_rescaled_in_two_roundings);
    RUN(save_load_carries_the_type);
    RUN(rotation_is_part_of_the_cache);
    RUN(head_size_not_a_block_multiple_is_refused);
    RUN(model_default_types_reach_sessions);
    return TEST_REPORT();
}
