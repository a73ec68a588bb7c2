/* test_eval_kld.c - KL-divergence base file (src/eval/kld_file.c) and
 * statistics (src/eval/kld.c). Layout sizes, offsets and expected values are
 * derived by hand in the comments from the layout in kld_file.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "eval/kld.h"
#include "eval/kld_file.h"
#include "test.h"

/* ---- small file helpers (test-only) ------------------------------------ */

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static int read_all(const char *path, uint8_t *buf, long cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = (long)fread(buf, 1, (size_t)cap, f);
    fclose(f);
    return (int)n;
}

static void write_all(const char *path, const uint8_t *buf, long n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(buf, 1, (size_t)n, f);
    fclose(f);
}

/* ---- the example file used by several tests ----------------------------
 * n_ctx 8 -> n_scored = 8 - 1 - 4 = 3 rows per chunk; n_vocab 5 (odd, so a
 * pad slot): nv = 2*((5+1)/2) + 4 = 10 uint16 = 20 bytes per row; n_chunk
 * 2. Size: 20 header + 4*8*2 = 64 token bytes + 2*3*20 = 120 row bytes
 * = 204; rows start at 20 + 64 = 84; chunk c row r at 84 + (3c + r)*20. */
enum { EX_CTX = 8, EX_VOCAB = 5, EX_CHUNK = 2, EX_ROWS = 3, EX_ROW_BYTES = 20, EX_SIZE = 204 };

static const int32_t ex_tokens[EX_CTX * EX_CHUNK] = {
    1, 4, 0, 2, 3, 3, 1, 0, /* chunk 0 */
    2, 2, 4, 1, 0, 3, 4, 1, /* chunk 1 */
};

/* Deterministic logits for chunk c, row r. */
static void ex_logits(int c, int r, float *l)
{
    for (int i = 0; i < EX_VOCAB; i++)
        l[i] = (float)(((c * 7 + r * 3 + i * 5) % 11) - 5) * 0.75f;
}

static int write_example(const char *path)
{
    sl_kld_writer w;
    sl_err err = {0};
    int rc = sl_kld_writer_open(&w, path, EX_CTX, EX_VOCAB, EX_CHUNK, ex_tokens, &err);
    if (rc) return rc;
    for (int c = 0; c < EX_CHUNK; c++)
        for (int r = 0; r < EX_ROWS; r++) {
            float l[EX_VOCAB];
            ex_logits(c, r, l);
            /* row r predicts token first + r + 1 of the chunk, first = 4 */
            rc = sl_kld_writer_add(&w, l, ex_tokens[c * EX_CTX + 4 + r + 1], NULL, &err);
            if (rc) return rc;
        }
    return sl_kld_writer_close(&w, &err);
}

TEST(layout_sizes_match_the_hand_derivation)
{
    CHECK_EQ_INT(sl_kld_row_bytes(EX_VOCAB), EX_ROW_BYTES);
    CHECK_EQ_INT(sl_kld_row_bytes(4), 2 * (4 + 4)); /* even vocab: no pad */
    CHECK_EQ_INT(sl_kld_rows_per_chunk(EX_CTX), EX_ROWS);
    CHECK_EQ_INT(sl_kld_rows_per_chunk(512), 255); /* llama.cpp default -c 512 */
}

TEST(round_trip_write_read)
{
    char path[512];
    t_path(path, sizeof path, "rt.kld");
    CHECK_EQ_INT(write_example(path), SL_OK);
    CHECK_EQ_INT(file_size(path), EX_SIZE);

    uint8_t raw[EX_SIZE];
    CHECK_EQ_INT(read_all(path, raw, EX_SIZE), EX_SIZE);
    /* header bytes: magic, then little-endian 8, 5, 2 */
    static const uint8_t hdr[20] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_', 8, 0, 0, 0,
                                    5,   0,   0,   0,   2,   0,   0,   0};
    CHECK(memcmp(raw, hdr, 20) == 0);
    /* token 9 (chunk 1 index 1) = 2 at offset 20 + 4*9 = 56 */
    CHECK(raw[56] == 2 && raw[57] == 0 && raw[58] == 0 && raw[59] == 0);

    sl_kld_base b;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_base_open(&b, path, EX_VOCAB, &err), SL_OK);
    CHECK_EQ_INT(b.n_ctx, EX_CTX);
    CHECK_EQ_INT(b.n_vocab, EX_VOCAB);
    CHECK_EQ_INT(b.n_chunk, EX_CHUNK);
    CHECK_EQ_INT(b.n_scored, EX_ROWS);
    CHECK_EQ_INT(b.rows_offset, 84);
    for (int i = 0; i < EX_CTX * EX_CHUNK; i++) CHECK_EQ_INT(b.tokens[i], ex_tokens[i]);
    CHECK_EQ_INT(sl_kld_base_chunk_tokens(&b, 1)[2], 4);
    for (int c = 0; c < EX_CHUNK; c++) {
        CHECK_EQ_INT(sl_kld_base_read_chunk(&b, c, &err), SL_OK);
        for (int r = 0; r < EX_ROWS; r++) {
            sl_kld_row row;
            CHECK_EQ_INT(sl_kld_base_row(&b, r, &row, &err), SL_OK);
            float l[EX_VOCAB];
            ex_logits(c, r, l);
            /* stored bytes are exactly the encoder's bytes */
            uint8_t enc[EX_ROW_BYTES];
            sl_kld_row_encode(l, EX_VOCAB, 0, enc);
            CHECK(memcmp(enc, raw + 84 + (3 * c + r) * EX_ROW_BYTES, EX_ROW_BYTES) == 0);
            /* decoded log-probs are the true log-softmax within half a
             * quantisation step (plus float rounding), except below the
             * -16 clamp which stores the bottom value */
            double mx = -1e30, s = 0;
            for (int i = 0; i < EX_VOCAB; i++) mx = l[i] > mx ? l[i] : mx;
            for (int i = 0; i < EX_VOCAB; i++) s += exp(l[i] - mx);
            for (int i = 0; i < EX_VOCAB; i++) {
                double truth = l[i] - mx - log(s);
                CHECK_NEAR(sl_kld_row_logprob(&row, i), truth, row.scale * 0.5 + 1e-5);
            }
        }
    }
    sl_kld_base_close(&b);
}

TEST(row_encoding_hand_examples)
{
    /* (a) logits 0 0 0: max = min = 0, min_l = max(0, -16) = 0, scale 0,
     * all q 0; lse = ln 3; min_log_prob = -ln 3 = -1.0986123 (float bytes
     * 54 9f 8c bf little-endian, i.e. 0xbf8c9f54). Decoded: ln(1/3). */
    const float a[3] = {0.0f, 0.0f, 0.0f};
    uint8_t row[16];
    memset(row, 0xee, sizeof row);
    double nll = sl_kld_row_encode(a, 3, 1, row);
    CHECK_EQ_INT(sl_kld_row_bytes(3), 16);
    CHECK(row[0] == 0 && row[1] == 0 && row[2] == 0 && row[3] == 0);
    CHECK(row[4] == 0x54 && row[5] == 0x9f && row[6] == 0x8c && row[7] == 0xbf);
    for (int i = 8; i < 16; i++) CHECK_MSG(row[i] == 0, "byte %d = %#x", i, row[i]); /* q, pad */
    CHECK_NEAR(nll, log(3.0), 1e-6);

    /* (b) logits 2 0 -20: max 2, min -20 clamps to 2 - 16 = -14, scale =
     * 16/65535; q0 = 16/scale = 65535, q1 = 14/scale = 57343.125 -> 57343,
     * q2: -20 <= -14 -> 0. lse = ln(1 + e^-2 + e^-22) = 0.126928, so
     * min_log_prob = -14 - 2 - 0.126928 = -16.126928 and token 0 decodes to
     * 16 - 16.126928 = -0.126928 = ln p0. */
    const float b[3] = {2.0f, 0.0f, -20.0f};
    nll = sl_kld_row_encode(b, 3, 0, row);
    sl_kld_row v;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_row_view(row, 3, &v, NULL, &err), SL_OK);
    CHECK_NEAR(v.scale, 16.0 / 65535.0, 1e-9);
    CHECK_NEAR(v.min_log_prob, -16.126928, 1e-5);
    CHECK_EQ_INT(sl_kld_row_q(&v, 0), 65535);
    CHECK_EQ_INT(sl_kld_row_q(&v, 1), 57343);
    CHECK_EQ_INT(sl_kld_row_q(&v, 2), 0);
    CHECK_NEAR(sl_kld_row_logprob(&v, 0), -0.126928, 1e-5);
    CHECK_NEAR(nll, 0.126928, 1e-5);
}

TEST(kld_of_identical_distributions_is_zero)
{
    const float l[6] = {1.5f, -0.25f, 3.0f, 0.0f, -7.0f, 2.0f};
    /* exact path: every term is p_i * (lp_i - lp_i) = 0 */
    CHECK(sl_kld_logits(l, l, 6) == 0.0);

    /* through a stored row: each decoded log-prob is off by at most half a
     * step, scale/2 = (3 - -7)/65535/2 = 7.6e-5, plus float rounding, so
     * KLD = sum p^_i * e_i is at most ~8e-5 in size; same argmax (token 2);
     * dp = p(2) * (1 - e^{e_2}) is at most ~1e-4. */
    uint8_t row[32];
    sl_kld_row_encode(l, 6, 2, row);
    sl_kld_row v;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_row_view(row, 6, &v, NULL, &err), SL_OK);
    sl_kld_token t;
    CHECK_EQ_INT(sl_kld_token_compare(l, 6, &v, 2, &t, &err), SL_OK);
    CHECK_NEAR(t.kld, 0.0, 1e-4);
    CHECK(t.same_top);
    CHECK_NEAR(t.p_diff, 0.0, 1e-4);
    CHECK_NEAR(t.nll, t.nll_base, 1e-4);
}

TEST(kld_hand_example_three_tokens)
{
    /* P = (.5, .25, .25), Q = (.25, .5, .25) as log-prob logits.
     * KL(P||Q) = .5 ln(.5/.25) + .25 ln(.25/.5) + .25 ln 1 = .25 ln 2
     *          = 0.1732868. Target 1: NLL = -ln .5 = 0.693147,
     * NLL_base = -ln .25 = 1.386294, dp = .5 - .25 = .25; argmax differs
     * (P: token 0, Q: token 1). */
    const float p[3] = {(float)log(0.5), (float)log(0.25), (float)log(0.25)};
    const float q[3] = {(float)log(0.25), (float)log(0.5), (float)log(0.25)};
    CHECK_NEAR(sl_kld_logits(p, q, 3), 0.1732868, 1e-6);
    /* KL is not symmetric: KL(Q||P) = .25 ln .5 + .5 ln 2 = .25 ln 2 too
     * here (by the symmetry of this example); use a third Q' = (.8,.1,.1):
     * KL(P||Q') = .5 ln(.5/.8) + 2 * .25 ln(.25/.1) = -0.235002 + 0.458145
     * = 0.223144. */
    const float q2[3] = {(float)log(0.8), (float)log(0.1), (float)log(0.1)};
    CHECK_NEAR(sl_kld_logits(p, q2, 3), 0.223144, 1e-5);

    /* through a stored base row of P: the range of P's logits is ln 2, so
     * steps are ln2/65535 = 1.06e-5 and the stored values are accurate to
     * ~5e-6 (token 1 and 2 sit exactly at min_l and decode to
     * min_log_prob = ln .25 up to float rounding). */
    uint8_t row[16];
    sl_kld_row_encode(p, 3, 1, row);
    sl_kld_row v;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_row_view(row, 3, &v, NULL, &err), SL_OK);
    sl_kld_token t;
    CHECK_EQ_INT(sl_kld_token_compare(q, 3, &v, 1, &t, &err), SL_OK);
    CHECK_NEAR(t.kld, 0.1732868, 2e-5);
    CHECK_NEAR(t.nll, 0.693147, 1e-6);
    CHECK_NEAR(t.nll_base, 1.386294, 2e-5);
    CHECK_NEAR(t.p_diff, 0.25, 2e-5);
    CHECK(!t.same_top);
}

TEST(stats_match_hand_values)
{
    /* 200 tokens: KLD_i = 0.01 i (i = 0..199), dp alternating +-0.01,
     * NLL = NLL_base = 1, same top for i < 150.
     *   mean KLD = 0.995; population var of 0.01*i = 0.0001 (200^2-1)/12
     *   = 0.333325; error = sqrt(0.333325/199) = 0.0409268
     *   median = (0.99 + 1.00)/2 = 0.995; 99% at p = .99*199 = 197.01 ->
     *   .99*1.97 + .01*1.98 = 1.9701; 10% at 19.9 -> .1*.19 + .9*.20 = .199
     *   max 1.99, min 0
     *   same top = 150/200 = .75 +- sqrt(.75*.25/199) = .0306955
     *   PPL = e^1 = 2.718282 (both), ratio 1 +- 0, ln ratio 0 +- 0
     *   mean dp = 0, RMS dp = 0.01 (every dp^2 is 1e-4: zero variance) */
    sl_kld_acc a;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_acc_init(&a, 200, &err), SL_OK);
    for (int i = 0; i < 200; i++) {
        /* added in a scrambled order: the statistics must not care */
        int k = (i * 73) % 200;
        sl_kld_token t = {0.01 * k, 1.0, 1.0, (k % 2) ? 0.01 : -0.01, k < 150};
        CHECK_EQ_INT(sl_kld_acc_add(&a, &t, &err), SL_OK);
    }
    sl_kld_token extra = {0, 1, 1, 0, 1};
    CHECK_EQ_INT(sl_kld_acc_add(&a, &extra, &err), SL_EINVAL); /* full */

    char line[512];
    sl_kld_format_chunk(line, sizeof line, 1, &a);
    CHECK_STR_CONTAINS(line, "   1       2.7183 ±    0.0000");
    CHECK_STR_CONTAINS(line, "0.99500 ±    0.04093");
    CHECK_STR_CONTAINS(line, "75.000 ±  3.070 %");

    sl_kld_stats st;
    CHECK_EQ_INT(sl_kld_acc_stats(&a, &st, &err), SL_OK);
    CHECK_EQ_INT(st.count, 200);
    CHECK_NEAR(st.kld.value, 0.995, 1e-12);
    CHECK_NEAR(st.kld.err, 0.0409268, 1e-6);
    CHECK_NEAR(st.kld_median, 0.995, 1e-6);
    CHECK_NEAR(st.kld_p99, 1.9701, 1e-6);
    CHECK_NEAR(st.kld_p10, 0.199, 1e-6);
    CHECK_NEAR(st.kld_max, 1.99, 1e-6);
    CHECK_NEAR(st.kld_min, 0.0, 1e-12);
    CHECK_NEAR(st.same_top.value, 0.75, 1e-12);
    CHECK_NEAR(st.same_top.err, 0.0306955, 1e-6);
    CHECK_NEAR(st.ppl.value, exp(1.0), 1e-9);
    CHECK_NEAR(st.ppl_ratio.value, 1.0, 1e-12);
    CHECK_NEAR(st.ln_ppl_ratio.value, 0.0, 1e-12);
    CHECK_NEAR(st.ln_ppl_ratio.err, 0.0, 1e-9);
    CHECK_NEAR(st.p_diff.value, 0.0, 1e-12);
    CHECK_NEAR(st.rms_p_diff.value, 0.01, 1e-9);
    CHECK_NEAR(st.dp_max, 0.01, 1e-7);
    CHECK_NEAR(st.dp_min, -0.01, 1e-7);

    char rep[4096];
    int n = sl_kld_format_stats(rep, sizeof rep, &st);
    CHECK(n > 0 && n < (int)sizeof rep);
    CHECK_STR_CONTAINS(rep, "Mean    KLD:   0.995000 ±   0.040927\n");
    CHECK_STR_CONTAINS(rep, "99.0%   KLD:   1.970100\n");
    CHECK_STR_CONTAINS(rep, "Median  KLD:   0.995000\n");
    CHECK_STR_CONTAINS(rep, "Same top p: 75.000 ± 3.070 %\n");
    CHECK_STR_CONTAINS(rep, "RMS Δp    :  1.000 ± 0.000 %\n");
    CHECK_STR_CONTAINS(rep, "Mean PPL(Q)/PPL(base)         :   1.000000 ±   0.000000\n");
    /* a short buffer truncates but still reports the full length */
    char small[32];
    CHECK_EQ_INT(sl_kld_format_stats(small, sizeof small, &st), n);
    CHECK(strlen(small) == sizeof small - 1);
    sl_kld_acc_free(&a);
}

TEST(percentile_definition)
{
    /* sorted 1 2 3 4 (n = 4): fraction .5 -> p = 1.5 -> 2.5; .999 -> p =
     * 2.997 -> .003*3 + .997*4 = 3.997; 0 -> 1; 1 -> 4 */
    const float v[4] = {1, 2, 3, 4};
    CHECK_NEAR(sl_kld_percentile(v, 4, 0.5), 2.5, 1e-12);
    CHECK_NEAR(sl_kld_percentile(v, 4, 0.999), 3.997, 1e-9);
    CHECK_NEAR(sl_kld_percentile(v, 4, 0.0), 1.0, 0);
    CHECK_NEAR(sl_kld_percentile(v, 4, 1.0), 4.0, 0);
}

TEST(file_level_kld_matches_exact_kld)
{
    /* Write a base file from logits A, then compare logits B against it;
     * the mean of the per-token KLD must equal the mean exact KL(A||B)
     * within the quantisation bound (8 tokens, logits within [-4, 4]: step
     * 8/65535, error per log-prob <= 6.2e-5, so per-token KLD within ~1e-4). */
    char path[512];
    t_path(path, sizeof path, "ab.kld");
    enum { V = 8, CTX = 6, CH = 3, R = 2 }; /* rows per chunk: 6 - 1 - 3 = 2 */
    int32_t toks[CTX * CH];
    for (int i = 0; i < CTX * CH; i++) toks[i] = (i * 5 + 1) % V;
    float A[CH][R][V], B[CH][R][V];
    for (int c = 0; c < CH; c++)
        for (int r = 0; r < R; r++)
            for (int i = 0; i < V; i++) {
                A[c][r][i] = (float)(((c * 3 + r * 5 + i * 7) % 9) - 4);
                B[c][r][i] = A[c][r][i] + (float)((i * 3 + c + r) % 5 - 2) * 0.3f;
            }
    sl_kld_writer w;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_writer_open(&w, path, CTX, V, CH, toks, &err), SL_OK);
    for (int c = 0; c < CH; c++)
        for (int r = 0; r < R; r++)
            CHECK_EQ_INT(sl_kld_writer_add(&w, A[c][r], toks[c * CTX + 3 + r + 1], NULL, &err),
                         SL_OK);
    CHECK_EQ_INT(sl_kld_writer_close(&w, &err), SL_OK);

    sl_kld_base b;
    CHECK_EQ_INT(sl_kld_base_open(&b, path, V, &err), SL_OK);
    sl_kld_acc acc;
    CHECK_EQ_INT(sl_kld_acc_init(&acc, CH * R, &err), SL_OK);
    double exact = 0.0;
    for (int c = 0; c < CH; c++) {
        CHECK_EQ_INT(sl_kld_base_read_chunk(&b, c, &err), SL_OK);
        for (int r = 0; r < R; r++) {
            sl_kld_row row;
            CHECK_EQ_INT(sl_kld_base_row(&b, r, &row, &err), SL_OK);
            sl_kld_token t;
            int32_t target = sl_kld_base_chunk_tokens(&b, c)[3 + r + 1];
            CHECK_EQ_INT(sl_kld_token_compare(B[c][r], V, &row, target, &t, &err), SL_OK);
            double k = sl_kld_logits(A[c][r], B[c][r], V);
            CHECK_NEAR(t.kld, k, 1e-4);
            exact += k;
            sl_kld_acc_add(&acc, &t, &err);
        }
    }
    sl_kld_stats st;
    CHECK_EQ_INT(sl_kld_acc_stats(&acc, &st, &err), SL_OK);
    CHECK_NEAR(st.kld.value, exact / (CH * R), 1e-4);
    CHECK(st.kld.value > 0.01); /* B really differs from A */
    sl_kld_acc_free(&acc);
    sl_kld_base_close(&b);
}

/* Writes the example, applies a corruption, and expects open to fail with
 * code and a message containing `needle`. */
static void expect_open_fails(const char *name, void (*corrupt)(uint8_t *, long *), int model_vocab,
                              int code, const char *needle)
{
    char path[512];
    t_path(path, sizeof path, name);
    CHECK_EQ_INT(write_example(path), SL_OK);
    uint8_t buf[EX_SIZE + 16];
    long n = read_all(path, buf, sizeof buf);
    CHECK_EQ_INT(n, EX_SIZE);
    corrupt(buf, &n);
    write_all(path, buf, n);
    sl_kld_base b;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_base_open(&b, path, model_vocab, &err), code);
    CHECK_STR_CONTAINS(err.msg, needle);
    CHECK(b.tokens == NULL && b.chunk == NULL && b.f.fd < 0); /* closed on failure */
}

static void bad_magic(uint8_t *b, long *n) { (void)n; b[1] = 'L'; }
static void short_header(uint8_t *b, long *n) { (void)b; *n = 10; }
static void tiny_ctx(uint8_t *b, long *n) { (void)n; b[8] = 2; }
static void neg_chunks(uint8_t *b, long *n) { (void)n; memset(b + 16, 0xff, 4); }
/* token index 3 (offset 20 + 4*3 = 32) set to 5 = n_vocab: out of range */
static void token_oob(uint8_t *b, long *n) { (void)n; b[32] = 5; }
/* cut inside the tokens at 40 bytes: token (40-20)/4 = 5 is the first missing */
static void cut_tokens(uint8_t *b, long *n) { (void)b; *n = 40; }
/* cut to 174: (174 - 84)/20 = 4.5 -> row index 4 = chunk 1 row 1 at 84 + 80 = 164 */
static void cut_rows(uint8_t *b, long *n) { (void)b; *n = 174; }
static void trailing(uint8_t *b, long *n) { memset(b + *n, 0, 3); *n += 3; }
static void nothing(uint8_t *b, long *n) { (void)b; (void)n; }
/* a fork's "_logits_v2" magic: 10 bytes, then another header */
static void v2_magic(uint8_t *b, long *n) { (void)n; b[8] = 'v'; b[9] = '2'; }

TEST(corrupt_base_files_are_rejected_with_clear_messages)
{
    expect_open_fails("c1", bad_magic, 0, SL_EFORMAT, "magic at offset 0 is \\x5f\\x4c");
    expect_open_fails("c2", short_header, 0, SL_EFORMAT, "10 bytes, the header alone needs 20");
    expect_open_fails("c3", tiny_ctx, 0, SL_EFORMAT, "n_ctx at offset 8 is 2, expected >= 3");
    expect_open_fails("c4", neg_chunks, 0, SL_EFORMAT, "n_chunk at offset 16 is -1");
    expect_open_fails("c5", token_oob, 0, SL_EFORMAT,
                      "token 3 (chunk 0) at offset 32 is 5, outside the vocabulary [0, 5)");
    expect_open_fails("c6", cut_tokens, 0, SL_EFORMAT, "token 5 at offset 40 is incomplete");
    expect_open_fails("c7", cut_rows, 0, SL_EFORMAT,
                      "174 bytes, expected 204; chunk 1 row 1 at offset 164 is incomplete");
    expect_open_fails("c8", trailing, 0, SL_EFORMAT, "3 unexpected bytes after its last row, at offset 204");
    expect_open_fails("c10", v2_magic, 0, SL_EUNSUPPORTED, "\"_logits_v2\" (sliding-window)");
    expect_open_fails("c9", nothing, 6, SL_EINVAL,
                      "n_vocab at offset 12 is 5 but the model's vocabulary has 6 tokens");
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}
/* n_ctx, n_vocab and n_chunk all 2^31 - 1: 2^30 rows of 2^32 + 8 bytes in
 * each of 2^31 chunks, about 2^93 bytes: refused before any allocation */
static void absurd_all(uint8_t *b, long *n) { (void)n; put32(b + 8, INT32_MAX); put32(b + 12, INT32_MAX); put32(b + 16, INT32_MAX); }
/* n_ctx 2^31 - 1 with 2 chunks in a 204-byte file: the tokens take
 * 20 + 2 * 2147483647 * 4 = 17179869196 bytes, the rows 2 chunks x
 * (2147483647 - 1 - 1073741823 = 1073741823) rows x 20 bytes = 42949672920,
 * 60129542116 in all; truncated at token (204 - 20)/4 = 46, offset 204 */
static void absurd_ctx(uint8_t *b, long *n) { (void)n; put32(b + 8, INT32_MAX); }
static void absurd_chunks(uint8_t *b, long *n) { (void)n; put32(b + 16, INT32_MAX); }
/* n_vocab 2^31 - 1 (the model pin is off): each row 2^32 + 6 bytes; the
 * tokens (64 bytes) fit, the first row does not */
static void absurd_vocab(uint8_t *b, long *n) { (void)n; put32(b + 12, INT32_MAX); }
/* token 3 at offset 32 = 0xffffffff, read as -1 */
static void token_neg(uint8_t *b, long *n) { (void)n; put32(b + 32, 0xffffffffu); }

TEST(absurd_header_counts_are_refused_before_allocating)
{
    expect_open_fails("a1", absurd_all, 0, SL_EFORMAT,
                      "n_ctx 2147483647, n_vocab 2147483647 and n_chunk 2147483647 describe a "
                      "file of more than 2^64 bytes (the file has 204)");
    expect_open_fails("a2", absurd_ctx, 0, SL_EFORMAT,
                      "truncated in the tokens: 204 bytes, expected 60129542116");
    expect_open_fails("a2b", absurd_ctx, 0, SL_EFORMAT, "token 46 at offset 204 is incomplete");
    expect_open_fails("a3", absurd_chunks, 0, SL_EFORMAT, "truncated in the tokens");
    expect_open_fails("a4", absurd_vocab, 0, SL_EFORMAT, "chunk 0 row 0 at offset 84 is incomplete");
    /* with the model's vocabulary given, the mismatch is named first */
    expect_open_fails("a5", absurd_vocab, EX_VOCAB, SL_EINVAL,
                      "n_vocab at offset 12 is 2147483647 but the model's vocabulary has 5");
    expect_open_fails("a6", token_neg, 0, SL_EFORMAT,
                      "token 3 (chunk 0) at offset 32 is -1, outside the vocabulary [0, 5)");
}

TEST(non_finite_log_probabilities_are_refused_when_read)
{
    /* chunk 0: row 0 (offset 84) min_log_prob = -inf; row 1 (offset 104)
     * scale = FLT_MAX, so q = 65535 decodes to +inf; row 2 (offset 124)
     * min_log_prob = NaN */
    char path[512];
    t_path(path, sizeof path, "infrow.kld");
    CHECK_EQ_INT(write_example(path), SL_OK);
    uint8_t buf[EX_SIZE];
    read_all(path, buf, EX_SIZE);
    const float ninf = -INFINITY, big = 3.4028235e38f, nan_f = NAN;
    memcpy(buf + 88, &ninf, 4);
    memcpy(buf + 104, &big, 4);
    memcpy(buf + 128, &nan_f, 4);
    write_all(path, buf, EX_SIZE);
    sl_kld_base b;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_base_open(&b, path, EX_VOCAB, &err), SL_OK);
    CHECK_EQ_INT(sl_kld_base_read_chunk(&b, 0, &err), SL_OK);
    sl_kld_row row;
    CHECK_EQ_INT(sl_kld_base_row(&b, 0, &row, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "chunk 0 row 0 at offset 84: min_log_prob is -inf");
    CHECK_EQ_INT(sl_kld_base_row(&b, 1, &row, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "chunk 0 row 1 at offset 104: scale 3.40282e+38");
    CHECK_STR_CONTAINS(err.msg, "decodes to a non-finite log-probability");
    CHECK_EQ_INT(sl_kld_base_row(&b, 2, &row, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "min_log_prob is nan");
    /* chunk 1 is intact */
    CHECK_EQ_INT(sl_kld_base_read_chunk(&b, 1, &err), SL_OK);
    for (int r = 0; r < EX_ROWS; r++) CHECK_EQ_INT(sl_kld_base_row(&b, r, &row, &err), SL_OK);
    sl_kld_base_close(&b);
}

TEST(corrupt_row_is_rejected_when_read)
{
    /* chunk 0 row 2 starts at 84 + 2*20 = 124: its scale becomes NaN */
    char path[512];
    t_path(path, sizeof path, "nanrow.kld");
    CHECK_EQ_INT(write_example(path), SL_OK);
    uint8_t buf[EX_SIZE];
    read_all(path, buf, EX_SIZE);
    const float nan_f = NAN;
    memcpy(buf + 124, &nan_f, 4); /* the test host is little-endian like the file */
    write_all(path, buf, EX_SIZE);
    sl_kld_base b;
    sl_err err = {0};
    CHECK_EQ_INT(sl_kld_base_open(&b, path, 0, &err), SL_OK);
    CHECK_EQ_INT(sl_kld_base_read_chunk(&b, 0, &err), SL_OK);
    sl_kld_row row;
    CHECK_EQ_INT(sl_kld_base_row(&b, 1, &row, &err), SL_OK);
    CHECK_EQ_INT(sl_kld_base_row(&b, 2, &row, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "chunk 0 row 2 at offset 124");
    CHECK_STR_CONTAINS(err.msg, "scale is nan");
    CHECK_EQ_INT(sl_kld_base_row(&b, 3, &row, &err), SL_EINVAL);
    CHECK_EQ_INT(sl_kld_base_read_chunk(&b, 2, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "chunk 2 is outside [0, 2)");
    sl_kld_base_close(&b);
}

TEST(writer_rejects_misuse)
{
    char path[512];
    t_path(path, sizeof path, "w.kld");
    sl_kld_writer w;
    sl_err err = {0};
    int32_t bad[EX_CTX * EX_CHUNK];
    memcpy(bad, ex_tokens, sizeof bad);
    bad[11] = -1;
    CHECK_EQ_INT(sl_kld_writer_open(&w, path, EX_CTX, EX_VOCAB, EX_CHUNK, bad, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "token 11 is -1");

    CHECK_EQ_INT(sl_kld_writer_open(&w, path, EX_CTX, EX_VOCAB, EX_CHUNK, ex_tokens, &err), SL_OK);
    float l[EX_VOCAB] = {0, 1, 2, 3, 4};
    CHECK_EQ_INT(sl_kld_writer_add(&w, l, 5, NULL, &err), SL_EINVAL);
    l[2] = NAN;
    CHECK_EQ_INT(sl_kld_writer_add(&w, l, 1, NULL, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "logit of token 2 is nan");
    l[2] = 2;
    double nll = 0;
    CHECK_EQ_INT(sl_kld_writer_add(&w, l, 4, &nll, &err), SL_OK);
    /* logits 0..4: NLL of token 4 = ln(sum e^(i-4)) = ln(1 + .367879 +
     * .135335 + .049787 + .018316) = ln 1.571317 = 0.451914 */
    CHECK_NEAR(nll, 0.451914, 1e-5);
    CHECK_EQ_INT(sl_kld_writer_add(&w, l, 0, NULL, &err), SL_OK);
    CHECK_EQ_INT(sl_kld_writer_close(&w, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "incomplete: 2 of 6 rows written");
    /* and the incomplete file never took the name */
    sl_kld_base b;
    CHECK_EQ_INT(sl_kld_base_open(&b, path, 0, &err), SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "No such file");

    CHECK_EQ_INT(sl_kld_writer_open(&w, path, 2, EX_VOCAB, 1, ex_tokens, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "n_ctx is 2");
    /* a full writer refuses one more row: 2 chunks * 3 rows = 6 */
    CHECK_EQ_INT(sl_kld_writer_open(&w, path, EX_CTX, EX_VOCAB, EX_CHUNK, ex_tokens, &err), SL_OK);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(sl_kld_writer_add(&w, l, 0, NULL, &err), SL_OK);
    CHECK_EQ_INT(sl_kld_writer_add(&w, l, 0, NULL, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "all 6 rows are already written");
    CHECK_EQ_INT(sl_kld_writer_close(&w, &err), SL_OK);
}

TEST(random_corruptions_never_crash)
{
    /* 300 deterministic mutations of the example file (byte flips in the
     * header, tokens and rows; truncations; extensions): opening, reading
     * every chunk and comparing every row must either succeed or fail with
     * a message, never read out of bounds (ASan checks that). */
    char path[512];
    t_path(path, sizeof path, "fuzz.kld");
    CHECK_EQ_INT(write_example(path), SL_OK);
    uint8_t orig[EX_SIZE], buf[EX_SIZE + 64];
    CHECK_EQ_INT(read_all(path, orig, EX_SIZE), EX_SIZE);
    uint32_t st = 2024;
    int opened = 0, refused = 0;
    for (int it = 0; it < 300; it++) {
        memcpy(buf, orig, EX_SIZE);
        long n = EX_SIZE;
        st = st * 1664525u + 1013904223u;
        int kind = (int)(st >> 28) % 3;
        if (kind == 0) {
            for (int k = 0; k < 3; k++) {
                st = st * 1664525u + 1013904223u;
                buf[(st >> 8) % EX_SIZE] ^= (uint8_t)(1u << ((st >> 4) & 7));
            }
        } else if (kind == 1) {
            st = st * 1664525u + 1013904223u;
            n = (long)((st >> 8) % EX_SIZE);
        } else {
            st = st * 1664525u + 1013904223u;
            long extra = (long)((st >> 8) % 64);
            memset(buf + EX_SIZE, 0x5a, (size_t)extra);
            n = EX_SIZE + extra;
        }
        write_all(path, buf, n);
        sl_kld_base b;
        sl_err err = {0};
        /* the model's vocabulary pins n_vocab: the logits below have 5 */
        if (sl_kld_base_open(&b, path, EX_VOCAB, &err) != SL_OK) {
            CHECK(err.msg[0] != '\0');
            refused++;
            continue;
        }
        opened++;
        for (int c = 0; c < b.n_chunk; c++) {
            if (sl_kld_base_read_chunk(&b, c, &err)) break;
            for (int r = 0; r < b.n_scored; r++) {
                sl_kld_row row;
                if (sl_kld_base_row(&b, r, &row, &err)) continue;
                float l[EX_VOCAB] = {0.5f, -1.0f, 2.0f, 0.0f, 1.0f};
                sl_kld_token t;
                sl_kld_token_compare(l, EX_VOCAB, &row, 0, &t, &err);
            }
        }
        sl_kld_base_close(&b);
    }
    CHECK(opened > 0 && refused > 0); /* both paths were exercised */
}

int main(void)
{
    RUN(layout_sizes_match_the_hand_derivation);
    RUN(round_trip_write_read);
    RUN(row_encoding_hand_examples);
    RUN(kld_of_identical_distributions_is_zero);
    RUN(kld_hand_example_three_tokens);
    RUN(stats_match_hand_values);
    RUN(percentile_definition);
    RUN(file_level_kld_matches_exact_kld);
    RUN(corrupt_base_files_are_rejected_with_clear_messages);
    RUN(corrupt_row_is_rejected_when_read);
    RUN(absurd_header_counts_are_refused_before_allocating);
    RUN(non_finite_log_probabilities_are_refused_when_read);
    RUN(writer_rejects_misuse);
    RUN(random_corruptions_never_crash);
    return TEST_REPORT();
}
