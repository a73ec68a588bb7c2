/* test_tok_pretok.c - the BPE pre-tokenizers' split patterns.
 *
 * Each case lists the pieces a pre-tokenizer must cut a text into. The
 * expected pieces are derived by hand from the published patterns (written
 * out in each comment), applying them as llama.cpp does: patterns run in
 * sequence, and each cuts every current piece into its matches and the gaps
 * between them. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tok/tok_internal.h"

static void expect_split(const char *pre, const char *text, const char *const *want, size_t n_want)
{
    int set;
    bool im, ab;
    const char *name = sl_tok_pre_lookup(pre, &set, &im, &ab);
    CHECK_MSG(name != NULL, "pre-tokenizer %s unknown", pre);
    if (!name) return;
    sl_tok_pretok p;
    sl_err err = {0};
    CHECK(sl_tok_pretok_init(&p, set, &err) == 0);
    sl_tok_spans spans = {0};
    CHECK(sl_tok_pretok_split(&p, text, strlen(text), &spans, &err) == 0);
    bool same = spans.n == n_want;
    for (size_t i = 0; same && i < n_want; i++)
        same = spans.v[i].len == strlen(want[i]) &&
               memcmp(text + spans.v[i].off, want[i], spans.v[i].len) == 0;
    if (!same) {
        fprintf(stderr, "  %s split of \"%s\":\n   got ", pre, text);
        for (size_t i = 0; i < spans.n; i++)
            fprintf(stderr, "[%.*s]", (int)spans.v[i].len, text + spans.v[i].off);
        fprintf(stderr, "\n   want");
        for (size_t i = 0; i < n_want; i++) fprintf(stderr, "[%s]", want[i]);
        fprintf(stderr, "\n");
    }
    CHECK_MSG(same, "%s", pre);
    /* The pieces always tile the text. */
    size_t at = 0;
    for (size_t i = 0; i < spans.n; i++) {
        CHECK(spans.v[i].off == at);
        at += spans.v[i].len;
    }
    CHECK(at == strlen(text));
    sl_tok_spans_free(&spans);
    sl_tok_pretok_free(&p);
}

#define SPLIT(pre, text, ...)                                                  \
    do {                                                                       \
        static const char *const w_[] = {__VA_ARGS__};                         \
        expect_split(pre, text, w_, sizeof w_ / sizeof *w_);                   \
    } while (0)

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
 * "  test": \s+ takes both spaces, (?!\S) fails before 't', backtracking to
 * one space succeeds; the second space then joins " test". */
TEST(gpt2_basic)
{
    SPLIT("gpt-2", "Hello world's  test123 !!", "Hello", " world", "'s", " ", " test", "123",
          " !!");
    /* The same patterns under the names that share them. */
    SPLIT("mpt", "a  b", "a", " ", " b");
    /* A single "\n" before a letter matches nothing (" ?" is a space only)
     * and stays a gap. */
    SPLIT("gpt-neox", "x\n\ny", "x", "\n", "\n", "y");
}

/* U+0085 (NEXT LINE) is whitespace to llama.cpp (Unicode White_Space), so it
 * is neither part of "[^\s\p{L}\p{N}]+" nor matched by "\s+(?!\S)" before
 * '!': it stays a gap of its own. (PCRE2's own \s would not count it, and
 * would glue it to the '!'.) */
TEST(gpt2_nel_is_whitespace)
{
    SPLIT("gpt-2", "a\xC2\x85!b", "a", "\xC2\x85", "!", "b");
}

/* Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *          ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * " 12345": the space precedes a digit, so only the final \s+ takes it;
 * digits go in threes; "\n\n" is one \s*[\r\n]+ match. */
TEST(llama3)
{
    SPLIT("llama-bpe", "I'M 12345 go\n\n", "I", "'M", " ", "123", "45", " go", "\n\n");
    /* [^\r\n\p{L}\p{N}]?\p{L}+ lets one punctuation mark lead a word. */
    SPLIT("llama3", "(hello)", "(hello", ")");
}

/* Qwen2: as Llama 3 but \p{N} alone: one digit per piece. */
TEST(qwen2)
{
    SPLIT("qwen2", "I'M 12345 go\n\n", "I", "'M", " ", "1", "2", "3", "4", "5", " go", "\n\n");
}

/* Qwen 3.5: as qwen2, but a combining mark (U+0301 here) belongs to its
 * word: "cafe" + U+0301 is one piece (qwen2 cuts the mark off as
 * punctuation), and so is a space, a mark and a letter. Digits stay single. */
TEST(qwen35)
{
    SPLIT("qwen35", "cafe\xcc\x81 x \xcc\x81" "a 12", "cafe\xcc\x81", " x", " \xcc\x81" "a", " ",
          "1", "2");
    SPLIT("qwen2", "cafe\xcc\x81 x \xcc\x81" "a 12", "cafe", "\xcc\x81", " x", " \xcc\x81", "a",
          " ", "1", "2");
}

/* DeepSeek LLM, in order: [\r\n] | \s?[cased letters]+ | \s?[punctuation]+ |
 * \s+$ | [CJK ranges]+ | \p{N}+
 * "Hello 世界 123\n": [\r\n] splits off "\n"; the letter pattern takes
 * "Hello"; \s+$ claims the lone "\n"; the CJK pattern cuts "世界" out of
 * " 世界 123"; \p{N}+ cuts "123" out of " 123". */
TEST(deepseek_llm)
{
    SPLIT("deepseek-llm", "Hello \xE4\xB8\x96\xE7\x95\x8C 123\n", "Hello", " ",
          "\xE4\xB8\x96\xE7\x95\x8C", " ", "123", "\n");
    /* U+3000 lies inside the CJK range U+0800-U+4E00, but llama.cpp turns
     * non-ASCII whitespace into U+000B before matching, so it never joins
     * a CJK run. */
    SPLIT("deepseek-llm", "\xE4\xB8\x96\xE3\x80\x80\xE7\x95\x8C", "\xE4\xB8\x96",
          "\xE3\x80\x80", "\xE7\x95\x8C");
}

/* DeepSeek Coder: [\r\n] | \s?\p{L}+ | \s?\p{P}+ | [CJK]+ | \p{N} */
TEST(deepseek_coder)
{
    SPLIT("deepseek-coder", "ab12 cd.", "ab", "1", "2", " cd", ".");
}

/* StarCoder (and refact): \p{N} first, then the GPT-2 pattern. */
TEST(starcoder)
{
    SPLIT("starcoder", "x 2024", "x", " ", "2", "0", "2", "4");
    SPLIT("refact", "v12", "v", "1", "2");
}

/* Falcon: [\p{P}\$\+<=>\^~\|`]+ | GPT-2 | [0-9][0-9][0-9] */
TEST(falcon)
{
    SPLIT("falcon", "a+b=1234", "a", "+", "b", "=", "123", "4");
}

/* Default: [\p{P}\$\+<=>\^~\|]+ | GPT-2 | \p{N}+ | [0-9][0-9][0-9]
 * " 12345" survives GPT-2 whole (" ?\p{N}+"), then \p{N}+ separates the
 * space, then the digits go in threes from the left. */
TEST(default_set)
{
    SPLIT("default", "Hi!! 12345", "Hi", "!!", " ", "123", "45");
}

TEST(unknown_name)
{
    int set = -1;
    bool im = true, ab = true;
    CHECK(sl_tok_pre_lookup("no-such-pre", &set, &im, &ab) == NULL);
    CHECK(sl_tok_pre_lookup("llama-bpe", &set, &im, &ab) != NULL);
    CHECK(im && ab); /* llama3 skips merges for whole tokens and adds BOS */
    CHECK(sl_tok_pre_lookup("qwen2", &set, &im, &ab) != NULL);
    CHECK(!im && !ab);
}

/* A long run of whitespace and a long word stay linear and exact. */
TEST(long_runs)
{
    size_t n = 100000;
    char *t = malloc(n + 2);
    memset(t, ' ', n);
    t[n] = 'x';
    t[n + 1] = '\0';
    int set;
    bool im, ab;
    sl_tok_pre_lookup("llama3", &set, &im, &ab);
    sl_tok_pretok p;
    sl_err err = {0};
    CHECK(sl_tok_pretok_init(&p, set, &err) == 0);
    sl_tok_spans spans = {0};
    CHECK(sl_tok_pretok_split(&p, t, n + 1, &spans, &err) == 0);
    /* \s+(?!\S) leaves the last space to join "x" via [^\r\n\p{L}\p{N}]?\p{L}+ */
    CHECK_EQ_INT(spans.n, 2);
    if (spans.n == 2) {
        CHECK_EQ_INT(spans.v[0].len, n - 1);
        CHECK_EQ_INT(spans.v[1].len, 2);
    }
    sl_tok_spans_free(&spans);
    sl_tok_pretok_free(&p);
    free(t);
}

int main(void)
{
    RUN(gpt2_basic);
    RUN(gpt2_nel_is_whitespace);
    RUN(llama3);
    RUN(qwen2);
    RUN(qwen35);
    RUN(deepseek_llm);
    RUN(deepseek_coder);
    RUN(starcoder);
    RUN(falcon);
    RUN(default_set);
    RUN(unknown_name);
    RUN(long_runs);
    return TEST_REPORT();
}
