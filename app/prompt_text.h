/* prompt_text.h - a prompt's or a text's bytes as llama.cpp's tools take
 * them from the command line: backslash escapes in -p and -f text turned
 * into the bytes they name (its default; --no-escape keeps them), and one
 * final newline of a -f file dropped. Without these, the same command line
 * would give llama.cpp and sluice different tokens. */
#ifndef SL_APP_PROMPT_TEXT_H
#define SL_APP_PROMPT_TEXT_H

#include <stddef.h>

/* Rewrites s[0..len) in place, each escape as the byte it names: \n \r \t
 * \' \" \\, and \x followed by two characters that strtol reads whole in
 * base 16 (as llama.cpp reads them); a backslash before anything else, or
 * last, stays as it is. Returns the new length (<= len); never fails. */
size_t prompt_unescape(char *s, size_t len);

/* The length of s[0..len) without one final '\n' (a -f file's, which
 * llama.cpp drops). */
size_t prompt_file_len(const char *s, size_t len);

#endif
