/* test_tok_runs.c - long runs of one character class in byte-level BPE
 * pre-tokenization (issue 10, D10).
 *
 * tok_bpe.c shortens runs of >= 1024 characters (one repeated code point,
 * or whitespace other than \r\n) before the regex and stretches the pieces
 * back. The reference is the regex on the whole text (sl_tok_pretok_split),
 * which succeeds on these lengths: for every pattern set, every run kind and
 * every neighbour, the pieces must be the same, so the tokens are too. Then
 * the 10 MB whitespace run on which the regex alone stops at PCRE2's match
 * limit, with its pieces worked out by hand from the qwen2/llama3 pattern. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tok/tok_internal.h"


static const char *const g_sets[] = {"default", "gpt-2", "llama3", "qwen2", "qwen35", "deepseek-llm",
                                     "deepseek-coder", "starcoder", "falcon", "gpt-4o", "deepseek-v3",
                                     "kimi-k2", "gemma4"};

static bool init_set(const char *name, sl_tok_pretok *p)
{
    int set;
    bool im, ab;
    sl_err err = {0};
    if (!sl_tok_pre_lookup(name, &set, &im, &ab)) return false;
    return sl_tok_pretok_init(p, set, &err) == 0;
}

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

/* A run of n units: each unit is one of the strings of alts, picked by a
 * fixed sequence (several alternatives make a mixed run). */
static void put_run(buf *b, const char *const *alts, size_t n_alts, size_t n)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        const char *a = alts[(x >> 16) % n_alts];
        put(b, a, strlen(a));
    }
}

/* Compares the shortened split with the whole-text regex; returns true if
 * they agree (and says where they differ if not). */
static bool same_split(const sl_tok_pretok *p, const char *set, const char *what, const buf *t)
{
    sl_err e1 = {0}, e2 = {0};
    sl_tok_spans a = {0}, b = {0};
    int r1 = sl_tok_pretok_split(p, t->s, t->n, &a, &e1);
    int r2 = sl_tok_bpe_pretok_split(p, t->s, t->n, &b, &e2);
    bool same = r1 == 0 && r2 == 0 && a.n == b.n;
    for (size_t i = 0; same && i < a.n; i++)
        same = a.v[i].off == b.v[i].off && a.v[i].len == b.v[i].len;
    if (!same) {
        fprintf(stderr, "  %s, %s (%zu bytes): regex rc %d, %zu pieces; shortened rc %d, %zu "
                "pieces\n", set, what, t->n, r1, a.n, r2, b.n);
        for (size_t i = 0; i < a.n && i < b.n; i++)
            if (a.v[i].off != b.v[i].off || a.v[i].len != b.v[i].len) {
                fprintf(stderr, "    piece %zu: [%zu,+%zu) vs [%zu,+%zu)\n", i, a.v[i].off,
                        a.v[i].len, b.v[i].off, b.v[i].len);
                break;
            }
    }
    sl_tok_spans_free(&a);
    sl_tok_spans_free(&b);
    return same;
}

typedef struct run_kind {
    const char *name;
    const char *alts[4];
    size_t n_alts;
} run_kind;

static const run_kind g_kinds[] = {
    {"spaces", {" "}, 1},
    {"tabs", {"\t"}, 1},
    {"mixed blanks", {" ", "\t", "\xe3\x80\x80", "\xc2\xa0"}, 4}, /* U+3000, U+00A0 */
    {"ideographic spaces", {"\xe3\x80\x80"}, 1},
    {"newlines", {"\n"}, 1},
    {"CR LF", {"\r\n"}, 1},
    {"blanks and newlines", {" ", " ", " ", "\n"}, 4},
    {"letters a", {"a"}, 1},
    {"letters s", {"s"}, 1},
    {"mixed letters", {"a", "b", "Z", "\xc3\xa9"}, 4}, /* e-acute */
    {"digits", {"7"}, 1},
    {"mixed digits", {"1", "2", "3"}, 3},
    {"punctuation", {"!"}, 1},
    {"mixed punctuation", {"!", "?", ".", "$"}, 4},
    {"apostrophes", {"'"}, 1},
    {"CJK", {"\xe4\xb8\xad"}, 1}, /* U+4E2D */
    {"U+FFFD", {"\xef\xbf\xbd"}, 1},
};

static const char *const g_before[] = {"", "x", "Hello,", "'", "12", "\n", " ", "\xe4\xb8\xad"};
static const char *const g_after[] = {"", "x", "!", "1", "\n", " y", "\t\n", "'s", "\xe4\xb8\xad"};

TEST(runs_match_the_regex)
{
    const size_t lengths[] = {1023, 1024, 1031, 3001};
    for (size_t si = 0; si < sizeof g_sets / sizeof *g_sets; si++) {
        sl_tok_pretok p;
        CHECK_MSG(init_set(g_sets[si], &p), "%s", g_sets[si]);
        int bad = 0;
        for (size_t k = 0; k < sizeof g_kinds / sizeof *g_kinds; k++)
            for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++)
                for (size_t bi = 0; bi < sizeof g_before / sizeof *g_before; bi++)
                    for (size_t ai = 0; ai < sizeof g_after / sizeof *g_after; ai++) {
                        buf t = {0};
                        put(&t, g_before[bi], strlen(g_before[bi]));
                        put_run(&t, g_kinds[k].alts, g_kinds[k].n_alts, lengths[li]);
                        put(&t, g_after[ai], strlen(g_after[ai]));
                        if (!same_split(&p, g_sets[si], g_kinds[k].name, &t)) bad++;
                        free(t.s);
                    }
        CHECK_MSG(bad == 0, "%s: %d texts split differently", g_sets[si], bad);
        sl_tok_pretok_free(&p);
    }
}

/* Several runs in one text, with ordinary text between them. */
TEST(several_runs)
{
    for (size_t si = 0; si < sizeof g_sets / sizeof *g_sets; si++) {
        sl_tok_pretok p;
        CHECK(init_set(g_sets[si], &p));
        buf t = {0};
        for (size_t k = 0; k < sizeof g_kinds / sizeof *g_kinds; k++) {
            put(&t, "Hello world, it's 2024! ", 24);
            put_run(&t, g_kinds[k].alts, g_kinds[k].n_alts, 1500 + 7 * k);
        }
        put(&t, " end", 4);
        CHECK_MSG(same_split(&p, g_sets[si], "several runs", &t), "%s", g_sets[si]);
        free(t.s);
        sl_tok_pretok_free(&p);
    }
}

/* qwen2 and llama3: "x" + 10 million spaces + "y". The whole-text regex
 * stops at the match limit (its \s*[\r\n]+ alternative backtracks over the
 * run). By hand from the pattern: [^\r\n\p{L}\p{N}]?\p{L}+ takes "x";
 * \s+(?!\S) takes the spaces but the last, which joins "y" (" y"). */
TEST(ten_megabytes_of_spaces)
{
    const size_t n = 10 * 1000 * 1000;
    char *t = malloc(n + 3);
    t[0] = 'x';
    memset(t + 1, ' ', n);
    t[n + 1] = 'y';
    t[n + 2] = '\0';
    const char *sets[] = {"qwen2", "llama3"};
    for (int i = 0; i < 2; i++) {
        sl_tok_pretok p;
        CHECK(init_set(sets[i], &p));
        sl_tok_spans s = {0};
        sl_err err = {0};
        int rc = sl_tok_bpe_pretok_split(&p, t, n + 2, &s, &err);
        CHECK_MSG(rc == 0, "%s: %s", sets[i], err.msg);
        CHECK_EQ_INT(s.n, 3);
        if (s.n == 3) {
            CHECK(s.v[0].off == 0 && s.v[0].len == 1);
            CHECK(s.v[1].off == 1 && s.v[1].len == n - 1);
            CHECK(s.v[2].off == n && s.v[2].len == 2);
        }
        sl_tok_spans_free(&s);
        sl_tok_pretok_free(&p);
    }
    free(t);
}

int main(void)
{
    RUN(runs_match_the_regex);
    RUN(several_runs);
    RUN(ten_megabytes_of_spaces);
    return TEST_REPORT();
}
