/* test_tok.c - the tokenizer's algorithms on small vocabularies built here.
 *
 * Every expected id list is derived by hand from the rules (written in the
 * comment above each check): BPE applies the lowest-ranked adjacent pair
 * first, leftmost on ties; SentencePiece applies the highest-scoring pair
 * first; special tokens are cut out longest text first; the decoder emits
 * only complete UTF-8 and U+FFFD for each maximal ill-formed subpart. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tok/tokenizer.h"

/* ---- vocabulary builder ---------------------------------------------------- */

typedef struct vocab {
    sl_tok_str tok[512];
    float score[512];
    int32_t type[512];
    uint32_t n;
    sl_tok_str merge[64];
    uint32_t n_merges;
    int32_t bos_plus1; /* BOS id + 1; 0: none given */
} vocab;

static int32_t add(vocab *v, const char *text, float score, int type)
{
    v->tok[v->n].ptr = text;
    v->tok[v->n].len = strlen(text);
    v->score[v->n] = score;
    v->type[v->n] = type;
    return (int32_t)v->n++;
}

static void merge(vocab *v, const char *m)
{
    v->merge[v->n_merges].ptr = m;
    v->merge[v->n_merges].len = strlen(m);
    v->n_merges++;
}

static sl_tokenizer *build(vocab *v, const char *model, const char *pre)
{
    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = model;
    spec.pre = pre;
    spec.n_tokens = v->n;
    spec.tokens = v->tok;
    spec.scores = v->score;
    spec.types = v->type;
    spec.n_merges = v->n_merges;
    spec.merges = v->merge;
    spec.bos = (int64_t)v->bos_plus1 - 1;
    sl_tokenizer *tok = NULL;
    sl_err err = {0};
    if (sl_tokenizer_build(&tok, &spec, &err)) fprintf(stderr, "  build: %s\n", err.msg);
    return tok;
}

static bool encodes_to(const sl_tokenizer *tok, const char *text, unsigned flags,
                       const int32_t *want, size_t n_want)
{
    sl_tok_ids ids = {0};
    sl_err err = {0};
    int rc = sl_tokenizer_encode(tok, text, strlen(text), flags, &ids, &err);
    bool ok = rc == 0 && ids.n == n_want && (n_want == 0 || !memcmp(ids.ids, want, n_want * 4));
    if (!ok) {
        fprintf(stderr, "  \"%s\": got", text);
        for (size_t i = 0; i < ids.n; i++) fprintf(stderr, " %d", ids.ids[i]);
        fprintf(stderr, ", want");
        for (size_t i = 0; i < n_want; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "%s%s\n", rc ? " / " : "", rc ? err.msg : "");
    }
    sl_tok_ids_free(&ids);
    return ok;
}

#define ENC(tok, text, flags, ...)                                             \
    do {                                                                       \
        const int32_t w_[] = {__VA_ARGS__};                                    \
        CHECK(encodes_to(tok, text, flags, w_, sizeof w_ / sizeof *w_));       \
    } while (0)
#define ENC_NONE(tok, text, flags) CHECK(encodes_to(tok, text, flags, NULL, 0))

enum { N = SL_TOK_TYPE_NORMAL, C = SL_TOK_TYPE_CONTROL, U = SL_TOK_TYPE_USER_DEFINED,
       B = SL_TOK_TYPE_BYTE };

/* ---- byte-level BPE -------------------------------------------------------- */

/* "abc" starts as a|b|c. With "b c" ranked before "a b", (b,c) merges first,
 * and no rank exists for (a,bc): [a, bc]. With the ranks swapped, (a,b)
 * merges first and (ab,c) has no rank: [ab, c]. */
TEST(bpe_rank_order)
{
    vocab v = {0};
    int32_t a = add(&v, "a", 0, N), b = add(&v, "b", 0, N), c = add(&v, "c", 0, N);
    int32_t ab = add(&v, "ab", 0, N), bc = add(&v, "bc", 0, N);
    merge(&v, "b c");
    merge(&v, "a b");
    sl_tokenizer *t1 = build(&v, "gpt2", "gpt-2");
    CHECK(t1 != NULL);
    if (t1) {
        int32_t want[] = {a, bc};
        CHECK(encodes_to(t1, "abc", 0, want, 2));
    }
    v.n_merges = 0;
    merge(&v, "a b");
    merge(&v, "b c");
    sl_tokenizer *t2 = build(&v, "gpt2", "gpt-2");
    CHECK(t2 != NULL);
    if (t2) {
        int32_t want[] = {ab, c};
        CHECK(encodes_to(t2, "abc", 0, want, 2));
    }
    (void)b;
    sl_tokenizer_free(t1);
    sl_tokenizer_free(t2);
}

/* "aaa" with the single merge "a a": both pairs have rank 0, the leftmost
 * merges first, leaving (aa, a) which has no rank: [aa, a]. "aaaa" merges
 * (0,1) then (2,3): [aa, aa]. */
TEST(bpe_tie_leftmost)
{
    vocab v = {0};
    int32_t a = add(&v, "a", 0, N), aa = add(&v, "aa", 0, N);
    merge(&v, "a a");
    sl_tokenizer *t = build(&v, "gpt2", "gpt-2");
    CHECK(t != NULL);
    if (!t) return;
    {
        int32_t want[] = {aa, a};
        CHECK(encodes_to(t, "aaa", 0, want, 2));
    }
    {
        int32_t want[] = {aa, aa};
        CHECK(encodes_to(t, "aaaa", 0, want, 2));
    }
    sl_tokenizer_free(t);
}

/* Byte-level: a space is the stand-in U+0120 "Ġ" (byte 0x20 is the 33rd
 * byte outside the printable ranges: 256 + 32). With merge "Ġ h", " hi"
 * (one GPT-2 piece " hi") becomes Ġh|i. Ill-formed input is first turned
 * into U+FFFD = EF BF BD, whose stand-ins are ï (U+00EF), ¿ (U+00BF) and
 * ½ (U+00BD), all printable so they stand for themselves. */
TEST(bpe_byte_level)
{
    vocab v = {0};
    int32_t sp = add(&v, "\xC4\xA0", 0, N), h = add(&v, "h", 0, N), i = add(&v, "i", 0, N);
    int32_t sph = add(&v, "\xC4\xA0h", 0, N);
    int32_t e_ef = add(&v, "\xC3\xAF", 0, N), e_bf = add(&v, "\xC2\xBF", 0, N),
            e_bd = add(&v, "\xC2\xBD", 0, N);
    merge(&v, "\xC4\xA0 h");
    sl_tokenizer *t = build(&v, "gpt2", "gpt-2");
    CHECK(t != NULL);
    if (!t) return;
    {
        int32_t want[] = {sph, i};
        CHECK(encodes_to(t, " hi", 0, want, 2));
    }
    {
        int32_t want[] = {h, i, sp};
        CHECK(encodes_to(t, "hi ", 0, want, 3));
    }
    {
        int32_t want[] = {e_ef, e_bf, e_bd};
        CHECK(encodes_to(t, "\xFF", 0, want, 3));
    }
    /* The pieces come back as the original bytes. */
    size_t len;
    const char *p = sl_tokenizer_piece(t, sph, false, &len);
    CHECK(len == 2 && !memcmp(p, " h", 2));
    p = sl_tokenizer_piece(t, e_ef, false, &len);
    CHECK(len == 1 && (unsigned char)p[0] == 0xEF);
    sl_tokenizer_free(t);
}

/* llama3's ignore_merges: a pre-tokenized piece that is itself a token is
 * emitted whole even if the merges would not build it. "ab" has no merges
 * here, so gpt-2 gives [a, b] and llama-bpe gives [ab]. */
TEST(bpe_ignore_merges)
{
    vocab v = {0};
    int32_t a = add(&v, "a", 0, N), b = add(&v, "b", 0, N), ab = add(&v, "ab", 0, N);
    v.bos_plus1 = add(&v, "<|begin_of_text|>", 0, C) + 1;
    sl_tokenizer *t1 = build(&v, "gpt2", "gpt-2");
    sl_tokenizer *t2 = build(&v, "gpt2", "llama-bpe");
    CHECK(t1 && t2);
    if (t1 && t2) {
        int32_t w1[] = {a, b}, w2[] = {ab};
        CHECK(encodes_to(t1, "ab", 0, w1, 2));
        CHECK(encodes_to(t2, "ab", 0, w2, 1));
        CHECK(sl_tokenizer_pre_warning(t2) == NULL);
        CHECK(!strcmp(sl_tokenizer_pre_name(t2), "llama3"));
        /* the llama3 family adds BOS by default, gpt-2 does not */
        CHECK(sl_tokenizer_add_bos(t2) && !sl_tokenizer_add_bos(t1));
    }
    sl_tokenizer_free(t1);
    sl_tokenizer_free(t2);
}

/* An unknown pre-tokenizer name is an error (as in llama.cpp); a file
 * that names none splits with the default patterns, with a warning. */
TEST(bpe_unknown_pre_is_refused)
{
    vocab v = {0};
    add(&v, "a", 0, N);
    sl_tokenizer *t = build(&v, "gpt2", "no-such-pre");
    CHECK(t == NULL);
    sl_tokenizer_free(t);
    t = build(&v, "gpt2", NULL);
    CHECK(t && sl_tokenizer_pre_warning(t) != NULL);
    if (t) CHECK(!strcmp(sl_tokenizer_pre_name(t), "default"));
    sl_tokenizer_free(t);
}

/* ---- special tokens -------------------------------------------------------- */

/* Control <|im_end|> is matched only with PARSE_SPECIAL; user-defined
 * <tool> always. Without PARSE_SPECIAL "<|im_end|>" is plain text: the
 * GPT-2 pattern cuts it into "<|", "im", "_", "end", "|>" and, with no
 * merges, every byte is its own token. */
TEST(special_tokens)
{
    vocab v = {0};
    int32_t x = add(&v, "x", 0, N), y = add(&v, "y", 0, N);
    int32_t lt = add(&v, "<", 0, N), bar = add(&v, "|", 0, N), gt = add(&v, ">", 0, N);
    int32_t i = add(&v, "i", 0, N), m = add(&v, "m", 0, N), us = add(&v, "_", 0, N);
    int32_t e = add(&v, "e", 0, N), n = add(&v, "n", 0, N), d = add(&v, "d", 0, N);
    int32_t end = add(&v, "<|im_end|>", 0, C), tool = add(&v, "<tool>", 0, U);
    sl_tokenizer *t = build(&v, "gpt2", "gpt-2");
    CHECK(t != NULL);
    if (!t) return;
    ENC(t, "x<|im_end|>y", SL_TOK_PARSE_SPECIAL, x, end, y);
    ENC(t, "x<|im_end|>y", 0, x, lt, bar, i, m, us, e, n, d, bar, gt, y);
    ENC(t, "x<tool>y", 0, x, tool, y);
    ENC(t, "<tool><tool>", 0, tool, tool);
    CHECK(sl_tokenizer_is_control(t, end));
    CHECK(!sl_tokenizer_is_control(t, tool));
    /* <|im_end|> ends generation (known end-of-turn text) and is the EOT. */
    CHECK(sl_tokenizer_is_eog(t, end));
    CHECK_EQ_INT(sl_tokenizer_eot(t), end);
    CHECK(!sl_tokenizer_is_eog(t, tool));
    /* Control pieces are hidden unless asked for. */
    size_t len;
    sl_tokenizer_piece(t, end, false, &len);
    CHECK_EQ_INT(len, 0);
    const char *p = sl_tokenizer_piece(t, end, true, &len);
    CHECK(len == 10 && !memcmp(p, "<|im_end|>", 10));
    sl_tokenizer_free(t);
}

/* Longest text first, over the whole text: with user-defined "bcd" and
 * "ab", "abcd" first loses "bcd" (the longer), leaving "a": [a, bcd] (a
 * left-to-right scan would have taken "ab" first). "abcab" with "abc" and
 * "ab": "abc" is cut first, then the remaining "ab": [abc, ab]. */
TEST(special_longest_first)
{
    vocab v = {0};
    int32_t a = add(&v, "a", 0, N);
    add(&v, "b", 0, N);
    add(&v, "c", 0, N);
    add(&v, "d", 0, N);
    int32_t bcd = add(&v, "bcd", 0, U), ab = add(&v, "ab", 0, U), abc = add(&v, "abc", 0, U);
    sl_tokenizer *t = build(&v, "gpt2", "gpt-2");
    CHECK(t != NULL);
    if (!t) return;
    ENC(t, "abcd", 0, a, bcd);
    ENC(t, "abcab", 0, abc, ab);
    sl_tokenizer_free(t);
}

/* ---- SentencePiece --------------------------------------------------------- */

static char g_hex[256][7];

/* <unk> <s> </s>, 256 byte tokens, then the given normal pieces. */
static void spm_base(vocab *v)
{
    add(v, "<unk>", 0, SL_TOK_TYPE_UNKNOWN);
    add(v, "<s>", 0, C);
    add(v, "</s>", 0, C);
    for (int b = 0; b < 256; b++) {
        snprintf(g_hex[b], sizeof g_hex[b], "<0x%02X>", b);
        add(v, g_hex[b], 0, B);
    }
}
#define BYTE(b) (3 + (b))

/* "abc" -> "▁abc" = ▁|a|b|c. The pairs forming tokens are (a,b) "ab" and
 * (b,c) "bc"; the higher score merges first. ab=-1 > bc=-2 gives
 * [▁, ab, c]; with the scores swapped, [▁, a, bc]. (▁a is not a token.) */
TEST(spm_score_order)
{
    for (int swap = 0; swap < 2; swap++) {
        vocab v = {0};
        spm_base(&v);
        int32_t sp = add(&v, "\xE2\x96\x81", -10, N);
        int32_t a = add(&v, "a", -10, N), b = add(&v, "b", -10, N), c = add(&v, "c", -10, N);
        int32_t ab = add(&v, "ab", swap ? -2.f : -1.f, N);
        int32_t bc = add(&v, "bc", swap ? -1.f : -2.f, N);
        sl_tokenizer *t = build(&v, "llama", NULL);
        CHECK(t != NULL);
        if (!t) continue;
        if (!swap) {
            int32_t want[] = {sp, ab, c};
            CHECK(encodes_to(t, "abc", 0, want, 3));
        } else {
            int32_t want[] = {sp, a, bc};
            CHECK(encodes_to(t, "abc", 0, want, 3));
        }
        (void)b;
        sl_tokenizer_free(t);
    }
}

/* Spaces become ▁ and one ▁ is prefixed: "a b" -> "▁a▁b" = [▁a, ▁b].
 * "é" is not a piece: its bytes C3 A9 fall back to <0xC3> <0xA9> after
 * the prefix ▁. BOS/EOS come from the SPM defaults (1 and 2). After a
 * special token the text gets a prefix space again: "<s>a" parsed is
 * [<s>, ▁a]. */
TEST(spm_space_and_bytes)
{
    vocab v = {0};
    spm_base(&v);
    int32_t sp = add(&v, "\xE2\x96\x81", -10, N);
    add(&v, "a", -10, N);
    add(&v, "b", -10, N);
    int32_t spa = add(&v, "\xE2\x96\x81" "a", -1, N), spb = add(&v, "\xE2\x96\x81" "b", -1, N);
    sl_tokenizer *t = build(&v, "llama", NULL);
    CHECK(t != NULL);
    if (!t) return;
    ENC(t, "a b", 0, spa, spb);
    ENC(t, "\xC3\xA9", 0, sp, BYTE(0xC3), BYTE(0xA9));
    CHECK(sl_tokenizer_add_bos(t));
    CHECK_EQ_INT(sl_tokenizer_bos(t), 1);
    CHECK_EQ_INT(sl_tokenizer_eos(t), 2);
    ENC(t, "a", SL_TOK_ADD_BOS | SL_TOK_ADD_EOS, 1, spa, 2);
    ENC(t, "<s>a", SL_TOK_PARSE_SPECIAL, 1, spa);
    ENC_NONE(t, "", 0);
    /* Decoding strips the prefix space only when asked. */
    int32_t ids[] = {spa, spb};
    char *out;
    size_t len;
    sl_err err = {0};
    CHECK(sl_tokenizer_decode(t, ids, 2, SL_TOK_DECODE_STRIP_PREFIX_SPACE, &out, &len, &err) == 0);
    CHECK(len == 3 && !strcmp(out, "a b"));
    free(out);
    CHECK(sl_tokenizer_decode(t, ids, 2, 0, &out, &len, &err) == 0);
    CHECK(len == 4 && !strcmp(out, " a b"));
    free(out);
    sl_tokenizer_free(t);
}

/* Without byte tokens an unknown character becomes <unk> per byte. */
TEST(spm_unknown)
{
    vocab v = {0};
    int32_t unk = add(&v, "<unk>", 0, SL_TOK_TYPE_UNKNOWN);
    add(&v, "<s>", 0, C);
    add(&v, "</s>", 0, C);
    int32_t sp = add(&v, "\xE2\x96\x81", -1, N);
    sl_tokenizer *t = build(&v, "llama", NULL);
    CHECK(t != NULL);
    if (!t) return;
    {
        int32_t want[] = {sp, unk, unk};
        CHECK(encodes_to(t, "\xC3\xA9", 0, want, 3));
    }
    sl_tokenizer_free(t);
}

/* ---- streaming decoder ------------------------------------------------------ */

typedef struct stream {
    sl_tok_decoder d;
    char out[256];
    size_t n;
} stream;

static size_t push(stream *s, int32_t id)
{
    const char *t;
    size_t len;
    sl_err err = {0};
    if (sl_tok_decoder_push(&s->d, id, &t, &len, &err)) return (size_t)-1;
    memcpy(s->out + s->n, t, len);
    s->n += len;
    return len;
}

static size_t flush(stream *s)
{
    const char *t;
    size_t len;
    sl_tok_decoder_flush(&s->d, &t, &len);
    memcpy(s->out + s->n, t, len);
    s->n += len;
    return len;
}

#define FFFD "\xEF\xBF\xBD"

TEST(decoder_utf8)
{
    vocab v = {0};
    spm_base(&v);
    int32_t a = add(&v, "a", -1, N);
    sl_tokenizer *t = build(&v, "llama", NULL);
    CHECK(t != NULL);
    if (!t) return;
    stream s = {0};
    sl_err err = {0};
    CHECK(sl_tok_decoder_init(&s.d, t, 0, &err) == 0);

    /* € = E2 82 AC arrives one byte token at a time: nothing until the
     * sequence is complete. */
    CHECK_EQ_INT(push(&s, BYTE(0xE2)), 0);
    CHECK_EQ_INT(push(&s, BYTE(0x82)), 0);
    CHECK_EQ_INT(push(&s, BYTE(0xAC)), 3);
    CHECK(s.n == 3 && !memcmp(s.out, "\xE2\x82\xAC", 3));

    /* E2 then 'a': E2 alone is the maximal ill-formed subpart -> U+FFFD,
     * then 'a'. */
    s.n = 0;
    push(&s, BYTE(0xE2));
    push(&s, a);
    CHECK(s.n == 4 && !memcmp(s.out, FFFD "a", 4));

    /* Bytes that can never start a sequence: FF, C0 (overlong lead). */
    s.n = 0;
    push(&s, BYTE(0xFF));
    push(&s, BYTE(0xC0));
    CHECK(s.n == 6 && !memcmp(s.out, FFFD FFFD, 6));

    /* A surrogate ED A0 80: ED allows only 80..9F next, so ED, A0 and 80
     * are three maximal subparts (Unicode's own example gives 3 x U+FFFD). */
    s.n = 0;
    push(&s, BYTE(0xED));
    push(&s, BYTE(0xA0));
    push(&s, BYTE(0x80));
    CHECK(s.n == 9 && !memcmp(s.out, FFFD FFFD FFFD, 9));

    /* F0 9F 98 is a valid prefix of a 4-byte emoji; the stream ends: one
     * U+FFFD at flush. */
    s.n = 0;
    push(&s, BYTE(0xF0));
    push(&s, BYTE(0x9F));
    push(&s, BYTE(0x98));
    CHECK_EQ_INT(s.n, 0);
    CHECK_EQ_INT(flush(&s), 3);
    CHECK(s.n == 3 && !memcmp(s.out, FFFD, 3));

    /* Out of range ids are an error, not garbage. */
    const char *txt;
    size_t len;
    CHECK(sl_tok_decoder_push(&s.d, (int32_t)v.n, &txt, &len, &err) == SL_EINVAL);
    CHECK(sl_tok_decoder_push(&s.d, -5, &txt, &len, &err) == SL_EINVAL);

    /* Control tokens are silent unless SL_TOK_DECODE_SPECIAL. */
    s.n = 0;
    push(&s, 1);
    CHECK_EQ_INT(s.n, 0);
    sl_tok_decoder_free(&s.d);
    CHECK(sl_tok_decoder_init(&s.d, t, SL_TOK_DECODE_SPECIAL, &err) == 0);
    s.n = 0;
    push(&s, 1);
    CHECK(s.n == 3 && !memcmp(s.out, "<s>", 3));
    sl_tok_decoder_free(&s.d);
    sl_tokenizer_free(t);
}

/* ---- metadata handling ----------------------------------------------------- */

TEST(build_errors)
{
    vocab v = {0};
    add(&v, "a", 0, N);
    sl_tok_spec spec;
    sl_tok_spec_init(&spec);
    spec.model = "bert";
    spec.n_tokens = v.n;
    spec.tokens = v.tok;
    sl_tokenizer *t = NULL;
    sl_err err = {0};
    CHECK(sl_tokenizer_build(&t, &spec, &err) == SL_EUNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "bert");
    CHECK(t == NULL);
    spec.model = "gpt2";
    spec.n_tokens = 0;
    CHECK(sl_tokenizer_build(&t, &spec, &err) == SL_EFORMAT);
    /* add_bos without a BOS id is inconsistent metadata. */
    spec.n_tokens = v.n;
    spec.add_bos = 1;
    CHECK(sl_tokenizer_build(&t, &spec, &err) == SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "bos");
    /* An out-of-range id in metadata is ignored (BPE has no default). */
    spec.add_bos = -1;
    spec.bos = 99;
    CHECK(sl_tokenizer_build(&t, &spec, &err) == 0);
    CHECK(t && sl_tokenizer_bos(t) == SL_TOK_NONE);
    sl_tokenizer_free(t);
}

int main(void)
{
    RUN(bpe_rank_order);
    RUN(bpe_tie_leftmost);
    RUN(bpe_byte_level);
    RUN(bpe_ignore_merges);
    RUN(bpe_unknown_pre_is_refused);
    RUN(special_tokens);
    RUN(special_longest_first);
    RUN(spm_score_order);
    RUN(spm_space_and_bytes);
    RUN(spm_unknown);
    RUN(decoder_utf8);
    RUN(build_errors);
    return TEST_REPORT();
}
