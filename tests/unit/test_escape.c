/* test_escape.c - util/escape.h (terminal-safe copies of a file's bytes) and
 * its use by sl_err_set / sl_err_prefix (util/status.h).
 *
 * Every expected string is written out by hand from the rule in escape.h. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util/escape.h"
#include "util/status.h"

/* Escapes src[0..n) into a buffer of cap bytes and compares with want. */
static void expect(const char *src, size_t n, size_t cap, const char *want, size_t want_used)
{
    char out[513]; /* cap <= 512, plus one byte that must stay untouched */
    memset(out, 'Z', sizeof out);
    size_t used = 12345;
    size_t len = sl_escape(out, cap, src, n, &used);
    CHECK_MSG(strcmp(out, want) == 0, "got \"%s\", want \"%s\"", out, want);
    CHECK_EQ_INT(len, strlen(want));
    CHECK_EQ_INT(used, want_used);
    CHECK(len < cap);
    CHECK(out[cap] == 'Z'); /* nothing written past cap */
}

#define EXPECT_ALL(lit, want) expect(lit, sizeof(lit) - 1, 512, want, sizeof(lit) - 1)

/* True if no byte of s is a C0 control, DEL, or the 0xc2 0x80..0x9f pair. */
static bool terminal_safe(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) return false;
        if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) return false;
    }
    return true;
}

TEST(plain_ascii_and_backslash_are_copied)
{
    EXPECT_ALL("llama.block_count", "llama.block_count");
    /* the backslash stays as it is (escape.h: readable, idempotent) */
    EXPECT_ALL("C:\\models\\x1b", "C:\\models\\x1b");
    EXPECT_ALL("", "");
}

TEST(escape_sequences_become_hex)
{
    EXPECT_ALL("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m");
    /* OSC 52 (clipboard write), terminated by BEL */
    EXPECT_ALL("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07");
    EXPECT_ALL("a\nb\tc\rd", "a\\x0ab\\x09c\\x0dd");
    EXPECT_ALL("del\x7f", "del\\x7f");
    /* an embedded NUL is shown, not a terminator */
    expect("a\0b", 3, 512, "a\\x00b", 3);
}

TEST(c1_controls_in_utf8_form_are_escaped)
{
    /* U+009B (CSI) is 0xc2 0x9b; U+0085 (NEL) 0xc2 0x85; U+00A0 is printable */
    EXPECT_ALL("\xc2\x9b" "31m", "\\xc2\\x9b31m");
    EXPECT_ALL("x\xc2\x85y", "x\\xc2\\x85y");
    EXPECT_ALL("\xc2\xa0\xc2\xbf", "\xc2\xa0\xc2\xbf");
    /* a raw C1 byte (Latin-1 style) is invalid UTF-8 */
    EXPECT_ALL("\x9b" "2J", "\\x9b2J");
}

TEST(invalid_utf8_bytes_become_hex)
{
    EXPECT_ALL("\xff\xfe", "\\xff\\xfe");
    EXPECT_ALL("\xc0\xaf", "\\xc0\\xaf");             /* overlong '/' */
    EXPECT_ALL("\xe0\x80\xaf", "\\xe0\\x80\\xaf");    /* overlong, 3 bytes */
    EXPECT_ALL("\xed\xa0\x80", "\\xed\\xa0\\x80");    /* surrogate U+D800 */
    EXPECT_ALL("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
    EXPECT_ALL("\xe4\xb8", "\\xe4\\xb8");             /* cut short at the end */
    EXPECT_ALL("\xe4" "a", "\\xe4a");                 /* cut short by ASCII */
    EXPECT_ALL("\x80x", "\\x80x");                    /* stray continuation */
}

TEST(valid_printable_utf8_is_untouched)
{
    /* CJK token text, U+2581 (SentencePiece space), an emoji, accents */
    EXPECT_ALL("\xe4\xbd\xa0\xe5\xa5\xbd", "\xe4\xbd\xa0\xe5\xa5\xbd");
    EXPECT_ALL("\xe2\x96\x81the", "\xe2\x96\x81the");
    EXPECT_ALL("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");
    EXPECT_ALL("caf\xc3\xa9", "caf\xc3\xa9");
    CHECK(!sl_escape_needed("\xe4\xbd\xa0\xe5\xa5\xbd", 6));
    CHECK(sl_escape_needed("ok\x1b", 3));
    CHECK(sl_escape_needed("\xc2\x9b", 2));
    CHECK(!sl_escape_needed("", 0));
}

TEST(truncation_never_splits_a_unit)
{
    /* "ab" + a 3-byte CJK character: cap 5 leaves 4 bytes, so the character
     * (2 + 3 = 5) is left out whole; cap 6 takes it */
    expect("ab\xe4\xbd\xa0", 5, 5, "ab", 2);
    expect("ab\xe4\xbd\xa0", 5, 6, "ab\xe4\xbd\xa0", 5);
    /* an escape is 4 bytes: cap 6 leaves room for "a" + nothing of "\x1b" */
    expect("a\x1b" "b", 3, 5, "a", 1);
    expect("a\x1b" "b", 3, 6, "a\\x1b", 2);
    expect("a\x1b" "b", 3, 7, "a\\x1bb", 3);
    /* cap 1: only the NUL; cap 0: nothing written at all */
    expect("abc", 3, 1, "", 0);
    char z = 'Z';
    size_t used = 9;
    CHECK_EQ_INT(sl_escape(&z, 0, "abc", 3, &used), 0);
    CHECK(z == 'Z');
    CHECK_EQ_INT(used, 0);
    CHECK_EQ_INT(sl_escape(&z, 1, NULL, 0, NULL), 0);
    CHECK(z == '\0');
}

TEST(escaping_is_idempotent)
{
    const char src[] = "k\x1b[1m\xff\xc2\x9b\xe4\xbd\xa0\\x41";
    char once[128], twice[128];
    sl_escape(once, sizeof once, src, sizeof src - 1, NULL);
    sl_escape(twice, sizeof twice, once, strlen(once), NULL);
    CHECK_MSG(strcmp(once, twice) == 0, "\"%s\" then \"%s\"", once, twice);
    CHECK(terminal_safe(once));
}

TEST(error_messages_are_stored_escaped)
{
    sl_err err = {0};
    const char *key = "general.\x1b[31mname\x1b[0m";
    CHECK_EQ_INT(sl_err_set(&err, SL_EFORMAT, "key '%s' at byte %d", key, 40), SL_EFORMAT);
    CHECK_EQ_INT(err.code, SL_EFORMAT);
    CHECK(strcmp(err.msg, "key 'general.\\x1b[31mname\\x1b[0m' at byte 40") == 0);
    CHECK(terminal_safe(err.msg));

    /* a prefix from a file is escaped too; the old message stays as it was */
    sl_err_prefix(&err, "tensor '%s'", "blk.0.\xc2\x9b" "2J");
    CHECK_MSG(strcmp(err.msg, "tensor 'blk.0.\\xc2\\x9b2J': key 'general.\\x1b[31mname"
                              "\\x1b[0m' at byte 40") == 0, "%s", err.msg);
    CHECK_EQ_INT(err.code, SL_EFORMAT);

    /* CJK in a message is kept */
    sl_err_set(&err, SL_EINVAL, "token '%s'", "\xe4\xbd\xa0");
    CHECK(strcmp(err.msg, "token '\xe4\xbd\xa0'") == 0);

    /* NULL err is allowed */
    CHECK_EQ_INT(sl_err_set(NULL, SL_EIO, "x %s", "\x1b"), SL_EIO);
}

TEST(long_error_messages_are_cut_safely)
{
    /* 600 bytes of CJK (200 characters): vsnprintf cuts at 511 bytes, inside
     * the 171st character (511 = 170*3 + 1); the stored message must end on
     * the boundary, 510 bytes, with no "\xe4" escape of the cut piece. */
    char big[601];
    for (int i = 0; i < 200; i++) memcpy(big + 3 * i, "\xe4\xbd\xa0", 3);
    big[600] = '\0';
    sl_err err = {0};
    sl_err_set(&err, SL_EFORMAT, "%s", big);
    CHECK_EQ_INT(strlen(err.msg), 510);
    CHECK(strstr(err.msg, "\\x") == NULL);

    /* 300 ESC bytes expand to 1200: cut after whole escapes (127 of them) */
    char esc[301];
    memset(esc, 0x1b, 300);
    esc[300] = '\0';
    sl_err_set(&err, SL_EFORMAT, "%s", esc);
    CHECK_EQ_INT(strlen(err.msg), 127 * 4);
    CHECK(terminal_safe(err.msg));

    /* a long prefix in front of a long message still fits and is safe */
    sl_err_prefix(&err, "%s", big);
    CHECK(strlen(err.msg) < SL_ERR_MSG_MAX);
    CHECK(!sl_escape_needed(err.msg, strlen(err.msg))); /* no cut character */
    CHECK(terminal_safe(err.msg));
}

TEST(every_byte_pair_gives_terminal_safe_output)
{
    /* all 65536 two-byte inputs, each with a CJK tail, in a tight buffer */
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++) {
            char in[5] = {(char)a, (char)b, '\xe4', '\xbd', '\xa0'};
            char out[16];
            for (size_t cap = 1; cap <= sizeof out; cap += 5) {
                size_t used;
                size_t len = sl_escape(out, cap, in, sizeof in, &used);
                if (len >= cap || out[len] != '\0' || !terminal_safe(out) || used > sizeof in) {
                    CHECK_MSG(0, "bytes %02x %02x cap %zu", a, b, cap);
                    return;
                }
            }
        }
}

int main(void)
{
    RUN(plain_ascii_and_backslash_are_copied);
    RUN(escape_sequences_become_hex);
    RUN(c1_controls_in_utf8_form_are_escaped);
    RUN(invalid_utf8_bytes_become_hex);
    RUN(valid_printable_utf8_is_untouched);
    RUN(truncation_never_splits_a_unit);
    RUN(escaping_is_idempotent);
    RUN(error_messages_are_stored_escaped);
    RUN(long_error_messages_are_cut_safely);
    RUN(every_byte_pair_gives_terminal_safe_output);
    return TEST_REPORT();
}
