/* json.h - sluice's one JSON library: jansson, with the limits sluice puts
 * on JSON it reads from outside (request bodies) and one way to write it.
 *
 * Values are jansson's json_t (reference counted: json_decref frees).
 * Reading is strict: duplicate keys in an object, nesting deeper than a
 * limit, invalid UTF-8, "\u0000" in strings, and anything after the value
 * are refused. */
#ifndef SL_UTIL_JSON_H
#define SL_UTIL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sluice.h"

/* Default nesting limit for JSON from outside (arrays and objects). */
#define SL_JSON_MAX_DEPTH 64

/* Parses text[0..len) (not NUL-terminated) into *out, owned by the caller
 * (json_decref). Fails with SL_EFORMAT and a message naming the line,
 * column and problem: malformed JSON, a duplicate key, more than max_depth
 * nested arrays/objects (checked before parsing, so a deep input costs no
 * recursion), trailing bytes. SL_ENOMEM when jansson runs out of memory
 * (reported as a parse error by jansson: the message says so). A "\u0000"
 * escape reads as U+FFFD: strings are handed on as C strings, and a model's
 * byte token 0 comes back as that escape when a client returns an answer. */
int sl_json_parse(const char *text, size_t len, int max_depth, json_t **out, sl_err *err);

/* The nesting depth of the JSON text: the largest number of '[' / '{' open
 * at once outside strings. Does not validate the text. */
int sl_json_depth(const char *text, size_t len);

/* A JSON string holding s[0..n) (any bytes, NULs included): each byte that
 * is not part of well-formed UTF-8 becomes U+FFFD, so a reader cannot tell
 * which invalid byte it was. NULL when out of memory. */
json_t *sl_json_string_lossy(const char *s, size_t n);

/* A JSON number for a float that prints as the shortest decimal that reads
 * back as the same float (0.1f prints 0.1, not 0.100000001); null for NaN
 * and infinities. NULL when out of memory. */
json_t *sl_json_real_f32(float v);

/* Serialises v for files and terminals: keys in insertion order; each
 * number in the shortest form that reads back as the same double (as
 * jansson formats it at that precision); every character outside printable
 * ASCII escaped (\uXXXX, control characters, DEL, C1 controls and
 * non-ASCII alike), so the text is plain ASCII whatever the strings hold.
 * pretty: two-space indentation, a container of scalars on one line;
 * otherwise one line without spaces. Returns a NUL-terminated string the
 * caller frees with free(), NULL when out of memory. */
char *sl_json_dump_text(const json_t *v, bool pretty);

#endif
