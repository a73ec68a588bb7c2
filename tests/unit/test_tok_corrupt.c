/* test_tok_corrupt.c - tokenizer metadata that is inconsistent or hostile
 * (issue 10, item 4): every case either fails with a message naming the key
 * and the value, or is handled the way llama.cpp handles it (llama-vocab.cpp:
 * special ids out of range keep the default with a warning, scores/types
 * shorter than the vocabulary are refused, longer ones cut, merges that are
 * not "left right" are unusable, a merge whose result is not a token falls
 * back to single-byte tokens). Files are written with the project's GGUF
 * writer and read back through sl_tokenizer_load, as a model load does.
 * Expected ids are worked out by hand in the comment above each check. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "test.h"
#include "tok/tokenizer.h"

/* What a test file holds: the tokenizer keys; an empty field is left out. */
typedef struct meta {
    const char *model;               /* tokenizer.ggml.model */
    const char *pre;                 /* tokenizer.ggml.pre */
    const char *const *tokens;       /* tokenizer.ggml.tokens (NULL: absent) */
    uint64_t n_tokens;
    const float *scores;             /* tokenizer.ggml.scores */
    uint64_t n_scores;
    const int32_t *types;            /* tokenizer.ggml.token_type */
    uint64_t n_types;
    const float *types_as_f32;       /* token_type written with the wrong type */
    const char *const *merges;       /* tokenizer.ggml.merges (NULL: absent) */
    uint64_t n_merges;
    int64_t bos, eos, unk;           /* -1: absent */
    const char *bos_as_str;          /* bos_token_id written as a string */
} meta;

static meta meta_init(void)
{
    meta m;
    memset(&m, 0, sizeof m);
    m.bos = m.eos = m.unk = -1;
    return m;
}

/* Writes m to a file and loads its tokenizer; returns the load's code. */
static int load(const char *name, const meta *m, sl_tokenizer **tok, sl_err *err)
{
    char path[512];
    t_path(path, sizeof path, name);
    sl_gguf_writer *w;
    *tok = NULL;
    if (sl_gguf_writer_open(&w, path, err)) return -100;
    sl_gguf_writer_set_str(w, "general.architecture", "llama");
    if (m->model) sl_gguf_writer_set_str(w, "tokenizer.ggml.model", m->model);
    if (m->pre) sl_gguf_writer_set_str(w, "tokenizer.ggml.pre", m->pre);
    if (m->tokens) sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", m->tokens, m->n_tokens);
    if (m->scores) sl_gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", m->scores, m->n_scores);
    if (m->types) sl_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", m->types, m->n_types);
    if (m->types_as_f32)
        sl_gguf_writer_set_arr_f32(w, "tokenizer.ggml.token_type", m->types_as_f32, m->n_types);
    if (m->merges) sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", m->merges, m->n_merges);
    if (m->bos >= 0) sl_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)m->bos);
    if (m->eos >= 0) sl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)m->eos);
    if (m->unk >= 0) sl_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)m->unk);
    if (m->bos_as_str) sl_gguf_writer_set_str(w, "tokenizer.ggml.bos_token_id", m->bos_as_str);
    if (sl_gguf_writer_close(w, err)) return -101;
    sl_gguf *g;
    if (sl_gguf_open(&g, path, err)) return -102;
    int rc = sl_tokenizer_load(tok, g, err);
    sl_gguf_close(g);
    return rc;
}

static bool encodes_to(const sl_tokenizer *tok, const char *text, const int32_t *want, size_t n)
{
    sl_tok_ids ids = {0};
    sl_err err = {0};
    int rc = sl_tokenizer_encode(tok, text, strlen(text), 0, &ids, &err);
    bool ok = rc == 0 && ids.n == n && (n == 0 || !memcmp(ids.ids, want, n * sizeof *want));
    if (!ok) {
        fprintf(stderr, "  \"%s\": rc %d (%s), got", text, rc, err.msg);
        for (size_t i = 0; i < ids.n; i++) fprintf(stderr, " %d", ids.ids[i]);
        fputc('\n', stderr);
    }
    sl_tok_ids_free(&ids);
    return ok;
}

#define ENC(tok, text, ...)                                                    \
    do {                                                                       \
        const int32_t w_[] = {__VA_ARGS__};                                    \
        CHECK(encodes_to(tok, text, w_, sizeof w_ / sizeof *w_));              \
    } while (0)

static const char *const k_ab[] = {"a", "b", "c", "ab"};
static const char *const k_ab_merges[] = {"a b"};

TEST(empty_vocabulary_is_refused_naming_the_key)
{
    meta m = meta_init();
    m.model = "gpt2";
    m.tokens = k_ab;
    m.n_tokens = 0;
    m.merges = k_ab_merges;
    m.n_merges = 1;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("empty.gguf", &m, &tok, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tokenizer.ggml.tokens at byte");
    CHECK_STR_CONTAINS(err.msg, "is an empty array");
    CHECK(tok == NULL);
    /* no tokens key at all */
    m.tokens = NULL;
    CHECK_EQ_INT(load("notokens.gguf", &m, &tok, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "the file has no tokenizer.ggml.tokens");
    /* byte-level BPE without merges */
    m.tokens = k_ab;
    m.n_tokens = 4;
    m.merges = NULL;
    CHECK_EQ_INT(load("nomerges.gguf", &m, &tok, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "the file has no tokenizer.ggml.merges");
}

TEST(per_token_arrays_shorter_than_the_vocabulary_are_refused)
{
    static const float scores[4] = {0, 0, 0, 0};
    static const int32_t types[6] = {1, 1, 1, 1, 1, 1};
    meta m = meta_init();
    m.model = "gpt2";
    m.tokens = k_ab;
    m.n_tokens = 4;
    m.merges = k_ab_merges;
    m.n_merges = 1;
    m.scores = scores;
    m.n_scores = 3;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("shortscores.gguf", &m, &tok, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tokenizer.ggml.scores has 3 entries, expected 4");
    m.scores = NULL;
    m.types = types;
    m.n_types = 2;
    CHECK_EQ_INT(load("shorttypes.gguf", &m, &tok, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tokenizer.ggml.token_type has 2 entries, expected 4");
    /* longer than the vocabulary: the extra entries are ignored (llama.cpp) */
    m.n_types = 6;
    CHECK_EQ_INT(load("longtypes.gguf", &m, &tok, &err), SL_OK);
    CHECK(tok && sl_tokenizer_n_tokens(tok) == 4);
    sl_tokenizer_free(tok);
    /* the wrong element type names the key and the type seen */
    static const float ftypes[4] = {1, 1, 1, 1};
    m.types = NULL;
    m.types_as_f32 = ftypes;
    m.n_types = 4;
    CHECK_EQ_INT(load("ftypes.gguf", &m, &tok, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tokenizer.ggml.token_type at byte");
    CHECK_STR_CONTAINS(err.msg, "expected an array of int32");
}

TEST(token_types_out_of_range_read_as_undefined)
{
    /* 99 and -5 are no token type: UNDEFINED (llama.cpp's default case);
     * 3 is control */
    static const int32_t types[4] = {99, -5, 3, 1};
    meta m = meta_init();
    m.model = "gpt2";
    m.tokens = k_ab;
    m.n_tokens = 4;
    m.merges = k_ab_merges;
    m.n_merges = 1;
    m.types = types;
    m.n_types = 4;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("types.gguf", &m, &tok, &err), SL_OK);
    if (!tok) return;
    CHECK_EQ_INT(sl_tokenizer_token_type(tok, 0), SL_TOK_TYPE_UNDEFINED);
    CHECK_EQ_INT(sl_tokenizer_token_type(tok, 1), SL_TOK_TYPE_UNDEFINED);
    CHECK_EQ_INT(sl_tokenizer_token_type(tok, 2), SL_TOK_TYPE_CONTROL);
    sl_tokenizer_free(tok);
}

TEST(special_ids_out_of_range_keep_the_default_with_a_warning)
{
    /* SentencePiece defaults: bos 1, eos 2, unk 0. bos 70000 and eos 4 are
     * outside the 4-token vocabulary: both ignored, defaults kept; unk 3 is
     * in range and taken. */
    static const char *const spm[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81"};
    meta m = meta_init();
    m.model = "llama";
    m.tokens = spm;
    m.n_tokens = 4;
    m.bos = 70000;
    m.eos = 4;
    m.unk = 3;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("ids.gguf", &m, &tok, &err), SL_OK);
    if (!tok) return;
    CHECK_EQ_INT(sl_tokenizer_bos(tok), 1);
    CHECK_EQ_INT(sl_tokenizer_eos(tok), 2);
    CHECK_EQ_INT(sl_tokenizer_unk(tok), 3);
    const char *w = sl_tokenizer_id_warning(tok);
    CHECK_STR_CONTAINS(w, "tokenizer.ggml.bos_token_id is 70000, outside the 4-token "
                          "vocabulary: ignored (default: 1)");
    CHECK_STR_CONTAINS(w, "; tokenizer.ggml.eos_token_id is 4, outside the 4-token "
                          "vocabulary: ignored (default: 2)");
    CHECK(w && !strstr(w, "unknown_token_id"));
    sl_tokenizer_free(tok);

    /* byte-level BPE has no default: an out-of-range EOS leaves none */
    meta b = meta_init();
    b.model = "gpt2";
    b.tokens = k_ab;
    b.n_tokens = 4;
    b.merges = k_ab_merges;
    b.n_merges = 1;
    b.eos = 4;
    CHECK_EQ_INT(load("bpeids.gguf", &b, &tok, &err), SL_OK);
    if (!tok) return;
    CHECK_EQ_INT(sl_tokenizer_eos(tok), SL_TOK_NONE);
    CHECK_STR_CONTAINS(sl_tokenizer_id_warning(tok),
                       "tokenizer.ggml.eos_token_id is 4, outside the 4-token vocabulary: "
                       "ignored (default: none)");
    sl_tokenizer_free(tok);

    /* an id that is not an integer is refused, naming the key and type */
    b.eos = -1;
    b.bos_as_str = "1";
    CHECK_EQ_INT(load("strid.gguf", &b, &tok, &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "tokenizer.ggml.bos_token_id at byte");
    CHECK_STR_CONTAINS(err.msg, "is a string, expected a token id (uint32)");
}

TEST(in_range_ids_give_no_warning)
{
    meta m = meta_init();
    m.model = "gpt2";
    m.tokens = k_ab;
    m.n_tokens = 4;
    m.merges = k_ab_merges;
    m.n_merges = 1;
    m.eos = 3;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("okids.gguf", &m, &tok, &err), SL_OK);
    if (!tok) return;
    CHECK_EQ_INT(sl_tokenizer_eos(tok), 3);
    CHECK(sl_tokenizer_id_warning(tok) == NULL);
    sl_tokenizer_free(tok);
}

TEST(duplicate_tokens_first_id_wins)
{
    /* "a" at 0 and again at 2: encoding "a" gives 0; "ab" merges (rank 0)
     * to "ab", the first of its two copies, id 3; id 2 still decodes as "a" */
    static const char *const dup[] = {"a", "b", "a", "ab", "ab"};
    meta m = meta_init();
    m.model = "gpt2";
    m.tokens = dup;
    m.n_tokens = 5;
    m.merges = k_ab_merges;
    m.n_merges = 1;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("dup.gguf", &m, &tok, &err), SL_OK);
    if (!tok) return;
    ENC(tok, "a", 0);
    ENC(tok, "ab", 3);
    ENC(tok, "ba", 1, 0);
    size_t len = 0;
    const char *t = sl_tokenizer_token_text(tok, 2, &len);
    CHECK(t && len == 1 && t[0] == 'a');
    CHECK_EQ_INT(sl_tokenizer_find(tok, "a", 1), 0);
    sl_tokenizer_free(tok);
}

TEST(merges_naming_missing_tokens_or_malformed_are_harmless)
{
    /* vocabulary a b c ab; merges, in rank order:
     *   0 "b c"  -> "bc" is not a token
     *   1 "abc"  no space: unusable (llama.cpp keeps it as ("", ""))
     *   2 " a"   a leading space is part of the left side, no split: unusable
     *   3 ""     empty: unusable
     *   4 "x y"  names tokens that do not exist
     *   5 "a b"  -> "ab" (id 3)
     * "abc" = a|b|c: the lowest rank among (a,b)=5 and (b,c)=0 is (b,c):
     * a|bc, then (a,bc) has no rank. "bc" is no token: it falls back to its
     * single-byte tokens b, c (llama.cpp's rule). So [0, 1, 2].
     * "ab" = (a,b) rank 5 -> [3]. "xy" has no tokens at all: [] */
    static const char *const merges[] = {"b c", "abc", " a", "", "x y", "a b"};
    meta m = meta_init();
    m.model = "gpt2";
    m.tokens = k_ab;
    m.n_tokens = 4;
    m.merges = merges;
    m.n_merges = 6;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("merges.gguf", &m, &tok, &err), SL_OK);
    if (!tok) return;
    ENC(tok, "abc", 0, 1, 2);
    ENC(tok, "ab", 3);
    CHECK(encodes_to(tok, "xy", NULL, 0));
    sl_tokenizer_free(tok);
}

TEST(nan_scores_do_not_break_sentencepiece)
{
    /* scores decide the merge order only; with NaN ones any order is
     * allowed, but the pieces must still cover the text exactly: the texts
     * of the ids, joined, are "\xe2\x96\x81ab" (space prefix + "ab") */
    static const char *const spm[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "a", "b",
                                      "\xe2\x96\x81" "a", "ab", "\xe2\x96\x81" "ab"};
    static const float scores[9] = {0, 0, 0, -1, -2, -3, NAN, NAN, INFINITY};
    meta m = meta_init();
    m.model = "llama";
    m.tokens = spm;
    m.n_tokens = 9;
    m.scores = scores;
    m.n_scores = 9;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("nan.gguf", &m, &tok, &err), SL_OK);
    if (!tok) return;
    sl_tok_ids ids = {0};
    CHECK_EQ_INT(sl_tokenizer_encode(tok, "ab", 2, 0, &ids, &err), SL_OK);
    char joined[64] = "";
    for (size_t i = 0; i < ids.n; i++) {
        size_t len;
        const char *t = sl_tokenizer_token_text(tok, ids.ids[i], &len);
        CHECK(t != NULL);
        if (t && strlen(joined) + len < sizeof joined) strncat(joined, t, len);
    }
    CHECK_MSG(strcmp(joined, "\xe2\x96\x81" "ab") == 0, "joined \"%s\"", joined);
    sl_tok_ids_free(&ids);
    sl_tokenizer_free(tok);
}

TEST(hostile_names_in_messages_are_escaped)
{
    /* an unknown tokenizer model full of escape sequences: the error names
     * it escaped; an unknown pre-tokenizer of 300 ESC bytes: the error
     * shows at most 80 bytes of it, escaped, then "..." */
    meta m = meta_init();
    m.model = "\x1b[31mevil\x1b[0m";
    m.tokens = k_ab;
    m.n_tokens = 4;
    sl_tokenizer *tok;
    sl_err err = {0};
    CHECK_EQ_INT(load("evilmodel.gguf", &m, &tok, &err), SL_EUNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "tokenizer model '\\x1b[31mevil\\x1b[0m' is not supported");
    CHECK(strchr(err.msg, 0x1b) == NULL);

    char pre[301];
    memset(pre, 0x1b, 300);
    pre[300] = '\0';
    m.model = "gpt2";
    m.pre = pre;
    m.merges = k_ab_merges;
    m.n_merges = 1;
    CHECK_EQ_INT(load("evilpre.gguf", &m, &tok, &err), SL_EUNSUPPORTED);
    CHECK(strchr(err.msg, 0x1b) == NULL);
    /* 80 bytes hold 20 escapes of 4 bytes */
    char want[128] = "unknown pre-tokenizer '";
    for (int i = 0; i < 20; i++) strcat(want, "\\x1b");
    strcat(want, "...'");
    CHECK_STR_CONTAINS(err.msg, want);
}

int main(void)
{
    RUN(empty_vocabulary_is_refused_naming_the_key);
    RUN(per_token_arrays_shorter_than_the_vocabulary_are_refused);
    RUN(token_types_out_of_range_read_as_undefined);
    RUN(special_ids_out_of_range_keep_the_default_with_a_warning);
    RUN(in_range_ids_give_no_warning);
    RUN(duplicate_tokens_first_id_wins);
    RUN(merges_naming_missing_tokens_or_malformed_are_harmless);
    RUN(nan_scores_do_not_break_sentencepiece);
    RUN(hostile_names_in_messages_are_escaped);
    return TEST_REPORT();
}
