/* escape.h - making bytes from a file safe to show on a terminal.
 *
 * Owns: the one rule by which text that came from a file (GGUF keys and
 * string values, tensor names, tokenizer and architecture names, chat
 * templates) is made printable before it reaches stderr, stdout or an error
 * message. Must not know: where the bytes came from or where they go.
 *
 * The rule, per input byte sequence:
 *   - printable ASCII (0x20..0x7e) is copied, the backslash included: the
 *     escaping exists so that nothing from a file can drive the terminal,
 *     not to make the output reversible, and leaving '\' alone keeps paths,
 *     Jinja text and messages that already hold "\xNN" readable. Hence the
 *     function is idempotent: escaping escaped text changes nothing;
 *   - well-formed UTF-8 of a printable code point (U+00A0 and above: CJK,
 *     accents, U+2581, emoji) is copied unchanged;
 *   - C0 controls (0x00..0x1f: NUL, TAB, LF, ESC, ...), DEL (0x7f), the C1
 *     controls U+0080..U+009F written in UTF-8 (0xc2 0x80..0x9f: a terminal
 *     may take U+009B as CSI) and every byte that is not part of a
 *     well-formed UTF-8 sequence (Unicode Table 3-7: overlongs, surrogates,
 *     > U+10FFFF, stray continuations, truncated sequences) become "\xNN",
 *     one escape per byte, lowercase hex.
 * The output is therefore printable ASCII plus well-formed printable UTF-8. */
#ifndef SL_UTIL_ESCAPE_H
#define SL_UTIL_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* Length (2..4) of the well-formed multi-byte UTF-8 sequence at s[0..n),
 * 1 for an ASCII byte, 0 if the bytes there are ill-formed or cut short. */
size_t sl_utf8_seq_len(const unsigned char *s, size_t n);

/* Escapes src[0..n) by the rule above into dst, which holds cap bytes, and
 * NUL-terminates it (nothing is written if cap is 0). When the escaped text
 * does not fit, it is cut after the last whole unit that fits, so neither a
 * UTF-8 sequence nor a "\xNN" escape is ever split. src may be NULL when n
 * is 0; dst and src must not overlap. Returns the length written (without
 * the NUL). *consumed, if not NULL, receives how many bytes of src were
 * represented (n unless the output was cut). Cannot fail. */
size_t sl_escape(char *dst, size_t cap, const char *src, size_t n, size_t *consumed);

/* True if sl_escape would change src[0..n) (some byte needs an escape). */
bool sl_escape_needed(const char *src, size_t n);

#endif
