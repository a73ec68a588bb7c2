/* test_synth_vocab.c - the synthetic tokenizer: byte map, vocabulary layout,
 * merges that a BPE encoder can apply. Expected byte spellings come from
 * GPT-2's published byte-to-unicode rule (printable '!'..'~', 0xA1..0xAC,
 * 0xAE..0xFF stand for themselves; the 68 others take U+0100, U+0101, ...
 * in byte order), worked out by hand in the comments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_vocab.h"
#include "test.h"

TEST(byte_map)
{
    char s[3];
    /* 0x00 is the first non-printable -> U+0100 = C4 80 */
    CHECK_EQ_INT(sl_synth_byte_to_utf8(0x00, s), 2);
    CHECK(!memcmp(s, "\xC4\x80", 3));
    /* 0x21 '!' is printable -> itself */
    CHECK_EQ_INT(sl_synth_byte_to_utf8(0x21, s), 1);
    CHECK(!strcmp(s, "!"));
    /* 0x20: 0x00..0x20 are the first 33 -> U+0120 = C4 A0 ("Ġ") */
    sl_synth_byte_to_utf8(0x20, s);
    CHECK(!strcmp(s, "\xC4\xA0"));
    /* 0xA0: 33 (0x00-0x20) + 1 (0x7F) + 33 (0x80-0xA0) = 67th -> U+0142 = C5 82 */
    sl_synth_byte_to_utf8(0xA0, s);
    CHECK(!strcmp(s, "\xC5\x82"));
    /* 0xAD: the 68th and last -> U+0143 = C5 83 */
    sl_synth_byte_to_utf8(0xAD, s);
    CHECK(!strcmp(s, "\xC5\x83"));
    /* 0xFF is printable -> U+00FF = C3 BF */
    sl_synth_byte_to_utf8(0xFF, s);
    CHECK(!strcmp(s, "\xC3\xBF"));
    /* Bijective: 256 distinct spellings, exactly 68 of them above U+00FF
     * (two bytes starting C4 or C5). */
    char all[256][3];
    int high = 0, dups = 0;
    for (int b = 0; b < 256; b++) {
        sl_synth_byte_to_utf8((uint8_t)b, all[b]);
        high += (uint8_t)all[b][0] == 0xC4 || (uint8_t)all[b][0] == 0xC5;
        for (int k = 0; k < b; k++) dups += !strcmp(all[k], all[b]);
    }
    CHECK_EQ_INT(high, 68);
    CHECK_EQ_INT(dups, 0);
}

static int find_tok(const sl_synth_vocab *v, const char *s)
{
    for (uint32_t i = 0; i < v->n_tokens; i++)
        if (!strcmp(v->tokens[i], s)) return (int)i;
    return -1;
}

/* Textbook BPE on one pre-tokenizer piece: spell its bytes, then merge the
 * adjacent pair of lowest merge rank until none applies. Returns the count
 * of resulting tokens, their spellings in out. */
static int bpe(const sl_synth_vocab *v, const char *piece, char out[][64], int cap)
{
    int n = 0;
    for (const char *p = piece; *p && n < cap; p++) sl_synth_byte_to_utf8((uint8_t)*p, out[n++]);
    for (;;) {
        int best = -1;
        uint32_t best_rank = UINT32_MAX;
        for (int i = 0; i + 1 < n; i++) {
            char m[130];
            snprintf(m, sizeof m, "%s %s", out[i], out[i + 1]);
            for (uint32_t r = 0; r < v->n_merges && r < best_rank; r++)
                if (!strcmp(v->merges[r], m)) {
                    best_rank = r;
                    best = i;
                }
        }
        if (best < 0) return n;
        size_t la = strlen(out[best]), lb = strlen(out[best + 1]);
        if (la + lb >= 64) return -1;
        memcpy(out[best] + la, out[best + 1], lb + 1);
        memmove(out[best + 1], out[best + 2], (size_t)(n - best - 2) * 64);
        n--;
    }
}

TEST(layout_and_merges)
{
    sl_synth_vocab v;
    sl_err err = {0};
    CHECK(!sl_synth_vocab_build(&v, 2000, &err));
    CHECK_EQ_INT(v.n_tokens, 2000);
    /* The corpus runs out of pairs seen twice long before 2000 - 259
     * tokens, so the layout ends in pads. */
    CHECK(v.n_learnt > 100 && v.n_learnt < 2000 - 259);
    CHECK_EQ_INT(v.eot_id, 256 + (int)v.n_learnt);
    CHECK(!strcmp(v.tokens[v.eot_id], "<|endoftext|>"));
    CHECK(!strcmp(v.tokens[v.im_start_id], "<|im_start|>"));
    CHECK(!strcmp(v.tokens[v.im_end_id], "<|im_end|>"));
    CHECK_EQ_INT(v.bos_id, v.eot_id);
    CHECK_EQ_INT(v.pad_id, v.eot_id);
    CHECK_EQ_INT(v.eos_id, v.im_end_id);
    CHECK(!strcmp(v.tokens[v.im_end_id + 1], "<|pad_0|>"));
    char last[32];
    snprintf(last, sizeof last, "<|pad_%d|>", 2000 - 1 - (v.im_end_id + 1));
    CHECK(!strcmp(v.tokens[1999], last));
    for (uint32_t i = 0; i < v.n_tokens; i++) {
        int want = (int)i < v.eot_id ? SL_SYNTH_TOK_NORMAL
                   : (int)i <= v.im_end_id ? SL_SYNTH_TOK_CONTROL
                                           : SL_SYNTH_TOK_UNUSED;
        if (v.types[i] != want) {
            CHECK_MSG(0, "token %u type %d, want %d", i, v.types[i], want);
            break;
        }
    }
    /* Training runs until no pair is left, so with this budget BPE turns
     * every word of the corpus, common or rare, into a single token ("Ġ" is
     * the space), and never yields an unknown token. */
    static const char *const words[] = {" the",          " river",      " and", " water", "The",
                                        " centimetres", " na\xC3\xAFve", " April"};
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        char out[32][64];
        int n = bpe(&v, words[w], out, 32);
        CHECK_MSG(n == 1, "'%s' -> %d tokens", words[w], n);
        for (int k = 0; k < n; k++) CHECK(find_tok(&v, out[k]) >= 0);
    }
    /* A word absent from the corpus falls apart into known pieces. */
    char out[32][64];
    int n = bpe(&v, " zyzzyva", out, 32);
    CHECK(n >= 2);
    for (int k = 0; k < n; k++) CHECK(find_tok(&v, out[k]) >= 0);
    sl_synth_vocab_free(&v);
}

TEST(deterministic_and_prefix)
{
    /* Greedy training: the same budget gives identical output, and a
     * smaller budget gives a prefix of a larger one's merges and tokens. */
    sl_synth_vocab a, b, c;
    sl_err err = {0};
    CHECK(!sl_synth_vocab_build(&a, 400, &err));
    CHECK(!sl_synth_vocab_build(&b, 400, &err));
    CHECK(!sl_synth_vocab_build(&c, 3000, &err));
    CHECK_EQ_INT(a.n_learnt, 400 - 259);
    CHECK_EQ_INT(a.n_merges, b.n_merges);
    int diff = 0;
    for (uint32_t i = 0; i < a.n_merges && i < b.n_merges; i++)
        diff += strcmp(a.merges[i], b.merges[i]) != 0;
    for (uint32_t i = 0; i < a.n_tokens; i++) diff += strcmp(a.tokens[i], b.tokens[i]) != 0;
    CHECK_EQ_INT(diff, 0);
    CHECK(c.n_merges > a.n_merges);
    for (uint32_t i = 0; i < a.n_merges && i < c.n_merges; i++)
        diff += strcmp(a.merges[i], c.merges[i]) != 0;
    for (int i = 0; i < 256 + (int)a.n_learnt; i++) diff += strcmp(a.tokens[i], c.tokens[i]) != 0;
    CHECK_EQ_INT(diff, 0);
    sl_synth_vocab_free(&a);
    sl_synth_vocab_free(&b);
    sl_synth_vocab_free(&c);
}

TEST(minimum_vocab)
{
    sl_synth_vocab v;
    sl_err err = {0};
    CHECK(sl_synth_vocab_build(&v, 259, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "259");
    /* 260 = 256 bytes + 1 merge + 3 specials */
    CHECK(!sl_synth_vocab_build(&v, 260, &err));
    CHECK_EQ_INT(v.n_learnt, 1);
    CHECK(v.n_merges >= 1);
    CHECK_EQ_INT(v.eot_id, 257);
    CHECK_EQ_INT(v.im_end_id, 259);
    sl_synth_vocab_free(&v);
    sl_synth_vocab_free(&v); /* idempotent */
}

TEST(corpus_and_template)
{
    const char *c = sl_synth_corpus();
    CHECK(strlen(c) > 2000);
    CHECK(strstr(c, "sluice") != NULL);
    CHECK(strstr(c, "caf\xC3\xA9") != NULL); /* non-ASCII letters are present */
    const char *t = sl_synth_chat_template();
    CHECK_STR_CONTAINS(t, "'<|im_start|>' + message['role']");
    CHECK_STR_CONTAINS(t, "'<|im_end|>'");
    CHECK_STR_CONTAINS(t, "{% if add_generation_prompt %}");
}

int main(void)
{
    RUN(byte_map);
    RUN(layout_and_merges);
    RUN(deterministic_and_prefix);
    RUN(minimum_vocab);
    RUN(corpus_and_template);
    return TEST_REPORT();
}
