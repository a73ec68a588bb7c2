/* test_tok_pretok_golden.c - the BPE pre-tokenizers against llama.cpp,
 * on 332 strings (tests/data/pretok/pretok.inp: unicode, spaces, newline
 * runs, code, digits, emoji, Han and kana, invalid UTF-8).
 *
 * kimi-k2.split holds llama.cpp's own pieces for "kimi-k2" (Kimi K2): its
 * unicode_regex_split, exported by libllama, with the pattern list
 * llama-vocab.cpp gives that name, run by tests/data/gemma4/llsplit.cpp;
 * the split is compared piece by piece. gpt2-as-NAME.out is llama.cpp's
 * ids for the same strings with the GPT-2 vocabulary and merges of
 * tests/data/tokenizers relabelled tokenizer.ggml.pre NAME, one file per
 * pattern set sluice knows and per name of the 2026 families (deepseek-v3,
 * glm4, qwen35, gpt-4o, kimi-k2): the merges run inside the pieces, so the
 * ids show the cuts (tests/data/pretok/make_golden.py says how). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/golden.h"
#include "common/testutil.h"
#include "test.h"
#include "gguf/gguf.h"
#include "tok/tok_internal.h"
#include "tok/tokenizer.h"

static void data_path(char *out, size_t cap, const char *name)
{
    const char *d = getenv("SLUICE_TEST_DATA");
    snprintf(out, cap, "%s/%s", d ? d : "tests/data", name);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* True if s holds a sequence that llama.cpp reads as one code point but
 * that is not well-formed UTF-8 (an overlong form, a surrogate): sluice's
 * byte-level BPE turns each of its bytes into U+FFFD instead, a known
 * difference on ill-formed input only (the regex engine must see valid
 * UTF-8). */
static bool read_differently(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = sl_tok_utf8_valid_len(u + i, n - i);
        if (k) {
            i += k;
            continue;
        }
        if (sl_tok_utf8_decode(u + i, n - i, &cp)) return true;
        i++;
    }
    return false;
}

/* Each string's split (sluice's invalid UTF-8 is made valid first, as the
 * BPE encoder does; the strings that are not UTF-8 are skipped here) equals
 * llama.cpp's pieces. */
TEST(kimi_split_golden)
{
    int set;
    bool im, ab;
    CHECK(sl_tok_pre_lookup("kimi-k2", &set, &im, &ab) != NULL);
    CHECK(!im && !ab);
    sl_tok_pretok p;
    sl_err err = {0};
    CHECK(sl_tok_pretok_init(&p, set, &err) == 0);
    char inp_path[512], split_path[512];
    data_path(inp_path, sizeof inp_path, "pretok/pretok.inp");
    data_path(split_path, sizeof split_path, "pretok/kimi-k2.split");
    t_golden g;
    int opened = t_golden_open(&g, inp_path, split_path);
    CHECK(opened == 0);
    if (opened) return;
    int n_cases = 0, n_pass = 0, n_skipped = 0;
    sl_tok_spans spans = {0};
    static char want[1 << 16];
    while (t_golden_next_line(&g)) {
        const char *s0 = g.text;
        size_t slen = g.len;
        bool valid = true;
        for (size_t i = 0; i < slen;) {
            size_t k = sl_tok_utf8_valid_len((const unsigned char *)s0 + i, slen - i);
            if (!k) {
                valid = false;
                break;
            }
            i += k;
        }
        if (!valid) {
            n_skipped++;
            continue;
        }
        n_cases++;
        CHECK(sl_tok_pretok_split(&p, s0, slen, &spans, &err) == 0);
        /* rebuild the expected pieces as "len:bytes" runs and compare */
        bool same = true;
        size_t k = 0, at = 0;
        for (const char *q = g.out_line; *q && same;) {
            size_t n = 0;
            while (q[0] && q[0] != ' ') {
                want[n++] = (char)(hexval(q[0]) * 16 + hexval(q[1]));
                q += 2;
            }
            if (*q == ' ') q++;
            same = k < spans.n && spans.v[k].off == at && spans.v[k].len == n &&
                   !memcmp(s0 + at, want, n);
            at += n;
            k++;
        }
        same = same && k == spans.n;
        if (same) {
            n_pass++;
        } else {
            fprintf(stderr, "  case %d \"%.*s\": sluice cut", n_cases, (int)(slen < 60 ? slen : 60),
                    s0);
            for (size_t i = 0; i < spans.n; i++)
                fprintf(stderr, " [%.*s]", (int)spans.v[i].len, s0 + spans.v[i].off);
            fprintf(stderr, "\n    llama.cpp: %s\n", g.out_line);
        }
    }
    CHECK(!g.out_short);
    printf("     kimi-k2 split: %d/%d strings match llama.cpp (%d not UTF-8)\n", n_pass, n_cases,
           n_skipped);
    CHECK_EQ_INT(n_pass, n_cases);
    CHECK(n_cases >= 300);
    sl_tok_spans_free(&spans);
    sl_tok_pretok_free(&p);
    t_golden_close(&g);
}

/* The GPT-2 vocabulary with pre-tokenizer NAME: every string (the invalid
 * UTF-8 ones too) encodes to llama.cpp's ids, those of gpt2-as-FILE.out. */
static void gpt2_as_file(const char *name, const char *file_name)
{
    char path[512];
    data_path(path, sizeof path, "tokenizers/ggml-vocab-gpt-2.gguf");
    sl_err err = {0};
    sl_gguf *g = NULL;
    CHECK_MSG(sl_gguf_open(&g, path, &err) == 0, "%s", err.msg);
    if (!g) return;
    /* the file's own tokens and merges, the pre name replaced */
    const sl_gguf_array *tk = sl_gguf_get_arr(g, "tokenizer.ggml.tokens");
    const sl_gguf_array *mg = sl_gguf_get_arr(g, "tokenizer.ggml.merges");
    CHECK(tk && mg);
    if (!tk || !mg) {
        sl_gguf_close(g);
        return;
    }
    sl_tok_str *tokens = calloc(tk->n, sizeof *tokens), *merges = calloc(mg->n, sizeof *merges);
    for (uint64_t i = 0; i < tk->n; i++) {
        const sl_gguf_str *x = sl_gguf_arr_str(tk, i);
        tokens[i] = (sl_tok_str){x->ptr, (size_t)x->len};
    }
    for (uint64_t i = 0; i < mg->n; i++) {
        const sl_gguf_str *x = sl_gguf_arr_str(mg, i);
        merges[i] = (sl_tok_str){x->ptr, (size_t)x->len};
    }
    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = "gpt2";
    spec.pre = name;
    spec.n_tokens = (uint32_t)tk->n;
    spec.tokens = tokens;
    spec.n_merges = (uint32_t)mg->n;
    spec.merges = merges;
    spec.bos = spec.eos = 50256;
    sl_tokenizer *tok = NULL;
    CHECK_MSG(sl_tokenizer_build(&tok, &spec, &err) == 0, "%s", err.msg);
    free(tokens);
    free(merges);
    sl_gguf_close(g);
    if (!tok) return;
    CHECK(sl_tokenizer_pre_warning(tok) == NULL);

    char inp_path[512], file[128];
    data_path(inp_path, sizeof inp_path, "pretok/pretok.inp");
    snprintf(file, sizeof file, "pretok/gpt2-as-%s.out", file_name);
    data_path(path, sizeof path, file);
    t_golden gd;
    int opened = t_golden_open(&gd, inp_path, path);
    CHECK(opened == 0);
    int n_cases = 0, n_pass = 0, n_skipped = 0;
    sl_tok_ids ids = {0};
    while (!opened && t_golden_next(&gd)) {
        if (read_differently(gd.text, gd.len)) {
            n_skipped++;
            continue;
        }
        n_cases++;
        if (t_golden_encode_check(&gd, tok, SL_TOK_PARSE_SPECIAL, &ids, name, n_cases, NULL))
            n_pass++;
    }
    CHECK(!gd.out_short);
    printf("     %-15s %d/%d strings match llama.cpp (%d overlong/surrogate skipped)\n", name,
           n_pass, n_cases, n_skipped);
    CHECK(n_skipped == 3);
    CHECK_EQ_INT(n_pass, n_cases);
    CHECK(n_cases >= 300);
    sl_tok_ids_free(&ids);
    t_golden_close(&gd);
    sl_tokenizer_free(tok);
}

/* Kimi K2's markers end generation; a kimi-k2 file may come without
 * merges (llama.cpp accepts it): pieces then fall back to byte tokens. */
TEST(kimi_specials_and_no_merges)
{
    const sl_tok_bytemap_entry *b2u = sl_tok_byte_to_unicode();
    static char texts[256][2];
    sl_tok_str toks[259];
    int32_t types[259];
    for (int b = 0; b < 256; b++) {
        memcpy(texts[b], b2u[b].s, b2u[b].len);
        toks[b] = (sl_tok_str){texts[b], b2u[b].len};
        types[b] = SL_TOK_TYPE_NORMAL;
    }
    toks[256] = (sl_tok_str){"[BOS]", 5};
    toks[257] = (sl_tok_str){"[EOS]", 5};
    toks[258] = (sl_tok_str){"[EOT]", 5};
    types[256] = types[257] = types[258] = SL_TOK_TYPE_CONTROL;
    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = "gpt2";
    spec.pre = "kimi-k2";
    spec.n_tokens = 259;
    spec.tokens = toks;
    spec.types = types;
    spec.bos = 256;
    sl_tokenizer *tok = NULL;
    sl_err err = {0};
    CHECK_MSG(sl_tokenizer_build(&tok, &spec, &err) == 0, "%s", err.msg);
    if (!tok) return;
    CHECK(sl_tokenizer_is_eog(tok, 257));
    CHECK(sl_tokenizer_is_eog(tok, 258));
    CHECK(!sl_tokenizer_is_eog(tok, 256));
    sl_tok_ids ids = {0};
    CHECK(sl_tokenizer_encode(tok, "ab[EOT]", 7, SL_TOK_PARSE_SPECIAL, &ids, &err) == 0);
    /* token b is byte b's stand-in character */
    CHECK(ids.n == 3 && ids.ids[0] == 'a' && ids.ids[1] == 'b' && ids.ids[2] == 258);
    sl_tok_ids_free(&ids);
    sl_tokenizer_free(tok);
}

static void gpt2_as(const char *name) { gpt2_as_file(name, name); }

/* Each line of aliases.txt, "ALIAS NAME": llama.cpp gives ALIAS the ids it
 * gives NAME (checked when the file was written); so must sluice. */
TEST(gpt2_as_aliases)
{
    char path[512];
    size_t len;
    data_path(path, sizeof path, "pretok/aliases.txt");
    char *text = t_read_all(path, &len);
    CHECK_MSG(text != NULL, "missing %s", path);
    if (!text) return;
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        *sp = '\0';
        char alias[64], base[64];
        snprintf(alias, sizeof alias, "%s", line);
        snprintf(base, sizeof base, "%s", sp + 1);
        gpt2_as_file(alias, base);
        n++;
    }
    CHECK(n >= 13);
    free(text);
}

TEST(gpt2_as_default) { gpt2_as("default"); }
TEST(gpt2_as_gpt2) { gpt2_as("gpt-2"); }
TEST(gpt2_as_llama_bpe) { gpt2_as("llama-bpe"); }
TEST(gpt2_as_qwen2) { gpt2_as("qwen2"); }
TEST(gpt2_as_qwen35) { gpt2_as("qwen35"); }
TEST(gpt2_as_deepseek_llm) { gpt2_as("deepseek-llm"); }
TEST(gpt2_as_deepseek_coder) { gpt2_as("deepseek-coder"); }
TEST(gpt2_as_starcoder) { gpt2_as("starcoder"); }
TEST(gpt2_as_falcon) { gpt2_as("falcon"); }
TEST(gpt2_as_gpt4o) { gpt2_as("gpt-4o"); }
TEST(gpt2_as_deepseek_v3) { gpt2_as("deepseek-v3"); }
TEST(gpt2_as_glm4) { gpt2_as("glm4"); }
TEST(gpt2_as_kimi_k2) { gpt2_as("kimi-k2"); }

/* Fill-in-the-middle pad, repository and file-separator tokens end
 * generation, as in llama.cpp (lleog.c beside lltok.c asked
 * llama_vocab_is_eog on such a vocabulary): found by text (and made
 * control) when the metadata names none (Qwen's <|fim_pad|>, <|repo_name|>,
 * <|file_sep|>, Kimi's [PAD]); <|fim_prefix|> does not end generation. With
 * two pad texts in one vocabulary llama.cpp takes whichever its hash map
 * yields first, so each case here has one. */
static sl_tokenizer *fim_vocab(const char *pad, int64_t fim_pad_id)
{
    sl_tok_str toks[] = {{"a", 1}, {"<|fim_prefix|>", 14}, {pad, strlen(pad)},
                         {"<|repo_name|>", 13}, {"<|file_sep|>", 12}, {"b", 1}};
    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = "gpt2";
    spec.pre = "qwen2";
    spec.n_tokens = 6;
    spec.tokens = toks;
    spec.fim_pad = fim_pad_id;
    sl_tokenizer *tok = NULL;
    sl_err err = {0};
    CHECK_MSG(sl_tokenizer_build(&tok, &spec, &err) == 0, "%s", err.msg);
    return tok;
}

TEST(fim_tokens_end_generation)
{
    const char *pads[] = {"<|fim_pad|>", "[PAD]"};
    for (int k = 0; k < 2; k++) {
        sl_tokenizer *tok = fim_vocab(pads[k], -1);
        if (!tok) return;
        CHECK(!sl_tokenizer_is_eog(tok, 0));
        CHECK(!sl_tokenizer_is_eog(tok, 1));
        CHECK(sl_tokenizer_is_eog(tok, 2) && sl_tokenizer_is_control(tok, 2));
        CHECK(sl_tokenizer_is_eog(tok, 3) && sl_tokenizer_is_control(tok, 3));
        CHECK(sl_tokenizer_is_eog(tok, 4) && sl_tokenizer_is_control(tok, 4));
        CHECK(!sl_tokenizer_is_eog(tok, 5));
        sl_tokenizer_free(tok);
    }
    /* the metadata's id wins over the texts */
    sl_tokenizer *tok = fim_vocab("<|fim_pad|>", 5);
    if (!tok) return;
    CHECK(sl_tokenizer_is_eog(tok, 5));
    CHECK(!sl_tokenizer_is_eog(tok, 2));
    sl_tokenizer_free(tok);
}

/* Long runs (tok_bpe.c shortens runs of one code point or of blanks before
 * the regex): for the kimi-k2 and gemma4 patterns the shortened split
 * equals the regex on the whole text, for runs of each kind between
 * different neighbours. */
TEST(long_runs_kimi_gemma4)
{
    static const char *const sets[] = {"kimi-k2", "gemma4", "deepseek-v3"};
    static const char *const unit[] = {" ", "\t", "\xe3\x80\x80", "\n", "a", "\xe4\xb8\xad",
                                       "7", "!", "'", "\xef\xbf\xbd", "\xe3\x81\x82"};
    static const char *const edge[] = {"", "x", "'s", "12", "\n", " ", "\xe4\xb8\xad", "A"};
    const size_t n_unit = sizeof unit / sizeof *unit, n_edge = sizeof edge / sizeof *edge;
    char *buf = malloc(64 + 3 * 3000);
    int n_cmp = 0;
    for (size_t si = 0; si < 3; si++) {
        int set;
        bool im, ab;
        CHECK(sl_tok_pre_lookup(sets[si], &set, &im, &ab) != NULL);
        sl_tok_pretok p;
        sl_err err = {0};
        CHECK(sl_tok_pretok_init(&p, set, &err) == 0);
        for (size_t u = 0; u < n_unit; u++)
            for (size_t e = 0; e < n_edge; e++) {
                size_t n = 0, ul = strlen(unit[u]);
                memcpy(buf, edge[e], strlen(edge[e]));
                n += strlen(edge[e]);
                for (int k = 0; k < 2500; k++, n += ul) memcpy(buf + n, unit[u], ul);
                memcpy(buf + n, edge[n_edge - 1 - e], strlen(edge[n_edge - 1 - e]));
                n += strlen(edge[n_edge - 1 - e]);
                sl_tok_spans a = {0}, b = {0};
                CHECK(sl_tok_pretok_split(&p, buf, n, &a, &err) == 0);
                CHECK(sl_tok_bpe_pretok_split(&p, buf, n, &b, &err) == 0);
                bool same = a.n == b.n;
                for (size_t i = 0; same && i < a.n; i++)
                    same = a.v[i].off == b.v[i].off && a.v[i].len == b.v[i].len;
                CHECK_MSG(same, "%s: run of '%s' after '%s'", sets[si], unit[u], edge[e]);
                n_cmp++;
                sl_tok_spans_free(&a);
                sl_tok_spans_free(&b);
            }
        sl_tok_pretok_free(&p);
    }
    CHECK(n_cmp == 3 * 11 * 8);
    free(buf);
}

int main(void)
{
    RUN(kimi_split_golden);
    RUN(gpt2_as_default);
    RUN(gpt2_as_gpt2);
    RUN(gpt2_as_llama_bpe);
    RUN(gpt2_as_qwen2);
    RUN(gpt2_as_qwen35);
    RUN(gpt2_as_deepseek_llm);
    RUN(gpt2_as_deepseek_coder);
    RUN(gpt2_as_starcoder);
    RUN(gpt2_as_falcon);
    RUN(gpt2_as_gpt4o);
    RUN(gpt2_as_deepseek_v3);
    RUN(gpt2_as_glm4);
    RUN(gpt2_as_kimi_k2);
    RUN(gpt2_as_aliases);
    RUN(kimi_specials_and_no_merges);
    RUN(fim_tokens_end_generation);
    RUN(long_runs_kimi_gemma4);
    return TEST_REPORT();
}
