/* test_tok_golden.c - the tokenizer against llama.cpp's vocabulary fixtures.
 *
 * For each vocabulary in tests/data/tokenizers, every string of the .inp
 * file must encode (no BOS/EOS, special tokens not parsed, as llama.cpp's
 * test-tokenizer-0 runs them) to exactly the ids on the matching line of the
 * .out file. The expected ids were produced by the models' own Hugging Face
 * tokenizers, not by this code. Each string that is valid UTF-8 must also
 * decode back to itself (SPM: with the prefix space removed), and a few
 * extra texts (multi-byte, emoji, CJK, whitespace runs) are round-tripped
 * through every vocabulary.
 *
 * Run from the repository root (make check does), or set SLUICE_TEST_DATA to
 * the tests/data directory. */
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "common/golden.h"
#include "common/testutil.h"
#include "test.h"
#include "tok/tok_internal.h" /* spm_word_split, for the equivalence test */
#include "tok/tokenizer.h"

static const char *const k_vocabs[] = {"gpt-2", "deepseek-llm", "starcoder", "llama-spm", "phi-3"};
#define N_VOCABS (sizeof k_vocabs / sizeof *k_vocabs)

static const char *data_dir(void)
{
    const char *d = getenv("SLUICE_TEST_DATA");
    return d ? d : "tests/data";
}

static sl_tokenizer *load_vocab(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizers/ggml-vocab-%s.gguf", data_dir(), name);
    sl_err err = {0};
    sl_gguf *g = NULL;
    if (sl_gguf_open(&g, path, &err)) {
        fprintf(stderr, "  cannot open %s: %s\n", path, err.msg);
        return NULL;
    }
    sl_tokenizer *tok = NULL;
    if (sl_tokenizer_load(&tok, g, &err)) fprintf(stderr, "  %s: %s\n", path, err.msg);
    sl_gguf_close(g);
    return tok;
}

/* Length of the well-formed UTF-8 sequence at p[0..n) per Unicode Table
 * 3-7, or 0 if the bytes there are ill-formed. */
static size_t seq_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t k;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c == 0xE0) { k = 3; lo = 0xA0; }
    else if (c == 0xED) { k = 3; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) k = 3;
    else if (c == 0xF0) { k = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) k = 4;
    else if (c == 0xF4) { k = 4; hi = 0x8F; }
    else return 0;
    if (n < k || p[1] < lo || p[1] > hi) return 0;
    for (size_t j = 2; j < k; j++)
        if ((p[j] & 0xC0) != 0x80) return 0;
    return k;
}

static bool valid_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = seq_len(p + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

static int g_lines_total, g_lines_pass;

/* Decodes ids with the prefix space stripped and compares with text. */
static bool round_trips(const sl_tokenizer *tok, const char *text, size_t len,
                        const int32_t *ids, size_t n)
{
    char *out = NULL;
    size_t out_len = 0;
    sl_err err = {0};
    if (sl_tokenizer_decode(tok, ids, n, SL_TOK_DECODE_STRIP_PREFIX_SPACE, &out, &out_len, &err))
        return false;
    bool ok = out_len == len && memcmp(out, text, len) == 0;
    free(out);
    return ok;
}

static void check_vocab(const char *name)
{
    sl_tokenizer *tok = load_vocab(name);
    CHECK_MSG(tok != NULL, "vocabulary %s did not load", name);
    if (!tok) return;

    char inp_path[512], out_path[512];
    snprintf(inp_path, sizeof inp_path, "%s/tokenizers/ggml-vocab-%s.gguf.inp", data_dir(), name);
    snprintf(out_path, sizeof out_path, "%s/tokenizers/ggml-vocab-%s.gguf.out", data_dir(), name);
    t_golden g;
    if (t_golden_open(&g, inp_path, out_path)) {
        CHECK_MSG(0, "missing fixture files for %s", name);
        sl_tokenizer_free(tok);
        return;
    }

    int n_cases = 0, n_pass = 0, n_rt = 0, n_rt_pass = 0;
    sl_tok_ids ids = {0};
    while (t_golden_next(&g)) {
        int rc;
        n_cases++;
        if (t_golden_encode_check(&g, tok, 0, &ids, name, n_cases, &rc)) n_pass++;
        if (rc == 0 && valid_utf8(g.text, g.len)) {
            n_rt++;
            if (round_trips(tok, g.text, g.len, ids.ids, ids.n)) n_rt_pass++;
            else fprintf(stderr, "  %s case %d does not round-trip\n", name, n_cases);
        }
    }
    CHECK_MSG(!g.out_short, "%s: .out has fewer lines than .inp has strings", name);
    printf("     %s: %d/%d strings match, %d/%d round-trip\n", name, n_pass, n_cases, n_rt_pass,
           n_rt);
    CHECK_EQ_INT(n_pass, n_cases);
    CHECK_EQ_INT(n_rt_pass, n_rt);
    /* Every fixture holds 46 strings; a parse that found fewer would pass
     * vacuously. */
    CHECK_EQ_INT(n_cases, 46);
    g_lines_total += n_cases;
    g_lines_pass += n_pass;
    sl_tok_ids_free(&ids);
    t_golden_close(&g);
    sl_tokenizer_free(tok);
}

TEST(golden_gpt2) { check_vocab("gpt-2"); }
TEST(golden_deepseek_llm) { check_vocab("deepseek-llm"); }
TEST(golden_starcoder) { check_vocab("starcoder"); }
TEST(golden_llama_spm) { check_vocab("llama-spm"); }
TEST(golden_phi3) { check_vocab("phi-3"); }

/* Texts chosen to stress the byte paths: 2-, 3- and 4-byte UTF-8, ZWJ emoji
 * sequences, combining marks, CJK, Hangul, runs and mixes of whitespace,
 * and digits of every grouping. */
static const char *const k_roundtrip[] = {
    "",
    " ",
    "   \t\t \n\n\r\n   ",
    "Hello, world! How's it going?",
    "caf\xC3\xA9 na\xC3\xAF" "ve r\xC3\xA9sum\xC3\xA9 \xC3\x85ngstr\xC3\xB6m \xC3\xB8re",
    "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82 "
    "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF",
    "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB \xF0\x9F\x98\x80\xF0\x9F\x98\x81 "
    "\xF0\x9F\x87\xAF\xF0\x9F\x87\xB5 \xF0\x9F\xA6\x99",
    "e\xCC\x81 a\xCC\x8A \xE1\x84\x80\xE1\x85\xA1",
    "1 12 123 1234 12345 123456 3.14159 1,000,000 \xD9\xA1\xD9\xA2\xD9\xA3",
    "int main(void) {\n    return 0;\n}\n",
    "\xE2\x80\x83\xE3\x80\x80\xC2\xA0 mixed\xE2\x80\x82spaces",
    "<|endoftext|> <s> [PAD] literally",
};

static void roundtrip_vocab(const char *name)
{
    sl_tokenizer *tok = load_vocab(name);
    CHECK(tok != NULL);
    if (!tok) return;
    sl_tok_ids ids = {0};
    for (size_t i = 0; i < sizeof k_roundtrip / sizeof *k_roundtrip; i++) {
        const char *t = k_roundtrip[i];
        ids.n = 0;
        sl_err err = {0};
        CHECK(sl_tokenizer_encode(tok, t, strlen(t), 0, &ids, &err) == 0);
        CHECK_MSG(round_trips(tok, t, strlen(t), ids.ids, ids.n), "%s: text %zu", name, i);
    }
    sl_tok_ids_free(&ids);
    sl_tokenizer_free(tok);
}

TEST(roundtrip_all_vocabs)
{
    for (size_t i = 0; i < N_VOCABS; i++) roundtrip_vocab(k_vocabs[i]);
}

/* SentencePiece may encode word by word when no token has U+2581 after
 * another character (both SPM fixtures qualify). The shortcut must give the
 * same ids as merging the whole text at once: compare both on every .inp
 * file taken as one text (all scripts, whitespace runs, separators). */
TEST(spm_word_split_equivalence)
{
    const char *names[] = {"llama-spm", "phi-3"};
    for (int v = 0; v < 2; v++) {
        sl_tokenizer *tok = load_vocab(names[v]);
        CHECK(tok != NULL);
        if (!tok) continue;
        CHECK(tok->spm_word_split);
        for (size_t f = 0; f < N_VOCABS; f++) {
            char path[512];
            size_t len;
            snprintf(path, sizeof path, "%s/tokenizers/ggml-vocab-%s.gguf.inp", data_dir(),
                     k_vocabs[f]);
            char *text = t_read_all(path, &len);
            CHECK(text != NULL);
            if (!text) continue;
            sl_tok_ids a = {0}, b = {0};
            sl_err err = {0};
            tok->spm_word_split = true;
            CHECK(sl_tokenizer_encode(tok, text, len, 0, &a, &err) == 0);
            tok->spm_word_split = false;
            CHECK(sl_tokenizer_encode(tok, text, len, 0, &b, &err) == 0);
            CHECK_MSG(a.n == b.n && !memcmp(a.ids, b.ids, a.n * sizeof *a.ids),
                      "%s on %s: %zu vs %zu ids", names[v], k_vocabs[f], a.n, b.n);
            CHECK(a.n > 300);
            sl_tok_ids_free(&a);
            sl_tok_ids_free(&b);
            free(text);
        }
        sl_tokenizer_free(tok);
    }
}

/* xorshift64*: a fixed stream of test inputs. */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (uint32_t)((g_rng * 0x2545F4914F6CDD1Dull) >> 33) % n;
}

/* Random texts built from pieces that stress every path: ASCII words and
 * digits, whitespace runs, 2/3/4-byte characters, bytes that cannot start
 * or finish a sequence, special-token texts and their fragments. */
static size_t random_text(char *buf, size_t cap)
{
    static const char *const pieces[] = {
        "a", "Hello", " world", "'s", "'LL", "123", "4", " ", "  ", "\t", "\n", "\r\n", "\n\n",
        "\xC3\xA9", "\xC3\xB8", "\xE4\xB8\x96", "\xE3\x80\x80", "\xF0\x9F\xA6\x99",
        "\xE2\x80\x8D", "\xC2\x85", "\xD9\xA3", "!", "...", "<|", "|>", "<|endoftext|>",
        "<s>", "[PAD100015]", "\x80", "\xC3", "\xE4\xB8", "\xF0\x9F", "\xFF", "\xED\xA0\x80",
    };
    size_t n = 0, parts = rnd(12);
    for (size_t i = 0; i < parts; i++) {
        const char *p = pieces[rnd(sizeof pieces / sizeof *pieces)];
        size_t l = strlen(p);
        if (n + l >= cap) break;
        memcpy(buf + n, p, l);
        n += l;
    }
    buf[n] = '\0';
    return n;
}

/* text with every byte that is not part of a well-formed sequence replaced
 * by U+FFFD: what byte-level BPE encodes (llama.cpp's rule). */
static size_t sanitize(const char *t, size_t n, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t k = seq_len((const unsigned char *)t + i, n - i);
        if (k) {
            memcpy(out + w, t + i, k);
            w += k;
            i += k;
        } else {
            memcpy(out + w, "\xEF\xBF\xBD", 3);
            w += 3;
            i++;
        }
    }
    return w;
}

/* For every vocabulary and 400 random texts: encoding succeeds with and
 * without special-token parsing, ids are in range, decoding always yields
 * valid UTF-8; BPE decodes to the text with ill-formed bytes as U+FFFD,
 * SPM decodes valid texts back exactly. */
TEST(random_texts)
{
    for (size_t v = 0; v < N_VOCABS; v++) {
        sl_tokenizer *tok = load_vocab(k_vocabs[v]);
        CHECK(tok != NULL);
        if (!tok) continue;
        bool spm = sl_tokenizer_model(tok) == SL_TOK_MODEL_SPM;
        int bad = 0;
        for (int r = 0; r < 400; r++) {
            char text[256], want[768];
            size_t n = random_text(text, sizeof text);
            for (unsigned flags = 0; flags <= SL_TOK_PARSE_SPECIAL; flags += SL_TOK_PARSE_SPECIAL) {
                sl_tok_ids ids = {0};
                sl_err err = {0};
                if (sl_tokenizer_encode(tok, text, n, flags, &ids, &err)) {
                    bad++;
                    continue;
                }
                for (size_t i = 0; i < ids.n; i++)
                    if (ids.ids[i] < 0 || (uint32_t)ids.ids[i] >= sl_tokenizer_n_tokens(tok)) bad++;
                char *out = NULL;
                size_t out_len = 0;
                if (sl_tokenizer_decode(tok, ids.ids, ids.n, SL_TOK_DECODE_STRIP_PREFIX_SPACE, &out,
                                        &out_len, &err)) {
                    bad++;
                } else if (!valid_utf8(out, out_len)) {
                    bad++;
                } else if (flags == 0) {
                    size_t wl = spm ? n : sanitize(text, n, want);
                    const char *w = spm ? text : want;
                    bool check = !spm || valid_utf8(text, n);
                    if (check && (out_len != wl || memcmp(out, w, wl) != 0)) {
                        fprintf(stderr, "  %s: round trip of random text %d differs\n", k_vocabs[v], r);
                        bad++;
                    }
                }
                free(out);
                sl_tok_ids_free(&ids);
            }
        }
        CHECK_MSG(bad == 0, "%s: %d failures", k_vocabs[v], bad);
        sl_tokenizer_free(tok);
    }
}

int main(void)
{
    RUN(golden_gpt2);
    RUN(golden_deepseek_llm);
    RUN(golden_starcoder);
    RUN(golden_llama_spm);
    RUN(golden_phi3);
    RUN(roundtrip_all_vocabs);
    RUN(spm_word_split_equivalence);
    RUN(random_texts);
    printf("     fixture strings: %d/%d match\n", g_lines_pass, g_lines_total);
    return TEST_REPORT();
}
