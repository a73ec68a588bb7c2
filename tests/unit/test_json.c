/* test_json.c - util/json: the limits sluice puts on JSON from outside. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util/json.h"

static int parse(const char *s, json_t **v, sl_err *err)
{
    return sl_json_parse(s, strlen(s), SL_JSON_MAX_DEPTH, v, err);
}

TEST(valid_object_is_parsed)
{
    json_t *v = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(parse("{\"a\": [1, 2.5, \"x\\u00e9\"], \"b\": null}", &v, &err), SL_OK);
    CHECK(json_is_object(v));
    json_t *a = json_object_get(v, "a");
    CHECK(json_is_array(a) && json_array_size(a) == 3);
    CHECK_EQ_INT(json_integer_value(json_array_get(a, 0)), 1);
    CHECK(json_real_value(json_array_get(a, 1)) == 2.5);
    CHECK(!strcmp(json_string_value(json_array_get(a, 2)), "x\xc3\xa9"));
    CHECK(json_is_null(json_object_get(v, "b")));
    json_decref(v);
}

TEST(duplicate_keys_are_refused)
{
    json_t *v = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(parse("{\"a\": 1, \"a\": 2}", &v, &err), SL_EFORMAT);
    CHECK(v == NULL);
    CHECK_STR_CONTAINS(err.msg, "duplicate");
}

TEST(malformed_and_trailing_bytes_are_refused)
{
    const char *bad[] = {"{", "{\"a\" 1}", "[1,]", "{\"a\":1} x", "",
                         "[\"\xff\"]", "nul", "[01]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = NULL;
        sl_err err = {0};
        CHECK_MSG(parse(bad[i], &v, &err) == SL_EFORMAT, "accepted '%s'", bad[i]);
        CHECK(v == NULL);
        CHECK_STR_CONTAINS(err.msg, "malformed JSON at line");
    }
}

static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 1);
    for (int i = 0; i < depth; i++) s[i] = '[';
    for (int i = 0; i < depth; i++) s[depth + i] = ']';
    s[2 * depth] = '\0';
    return s;
}

TEST(depth_limit_is_exact)
{
    json_t *v = NULL;
    sl_err err = {0};
    char *ok64 = nested(SL_JSON_MAX_DEPTH), *bad65 = nested(SL_JSON_MAX_DEPTH + 1);
    CHECK_EQ_INT(parse(ok64, &v, &err), SL_OK);
    json_decref(v);
    v = NULL;
    CHECK_EQ_INT(parse(bad65, &v, &err), SL_EFORMAT);
    CHECK(v == NULL);
    CHECK_STR_CONTAINS(err.msg, "65 arrays/objects deep");
    free(ok64);
    free(bad65);
    /* a million brackets are refused without parsing them */
    size_t n = 1000000;
    char *deep = malloc(n);
    memset(deep, '{', n);
    CHECK_EQ_INT(sl_json_parse(deep, n, SL_JSON_MAX_DEPTH, &v, &err), SL_EFORMAT);
    free(deep);
}

TEST(brackets_in_strings_do_not_count)
{
    CHECK_EQ_INT(sl_json_depth("[\"[[[{{\\\"[[\"]", 13), 1);
    CHECK_EQ_INT(sl_json_depth("{\"a\":{\"b\":[]}}", 14), 3);
    CHECK_EQ_INT(sl_json_depth("1", 1), 0);
}

TEST(compact_dump_is_one_line)
{
    json_t *v = json_pack("{s:i, s:s, s:[b, n]}", "n", 3, "t", "a\"\n", "l", 1);
    char *s = sl_json_dump_text(v, false);
    CHECK(s && !strcmp(s, "{\"n\":3,\"t\":\"a\\\"\\n\",\"l\":[true,null]}"));
    free(s);
    json_decref(v);
}

static bool dumps_as(json_t *v, bool pretty, const char *want)
{
    char *s = sl_json_dump_text(v, pretty);
    bool ok = s && !strcmp(s, want);
    if (!ok) fprintf(stderr, "  got '%s', want '%s'\n", s ? s : "(null)", want);
    free(s);
    json_decref(v);
    return ok;
}

TEST(numbers_are_shortest_round_trip)
{
    CHECK(dumps_as(json_real(0.1), false, "0.1"));
    CHECK(dumps_as(json_real(1.0 / 3.0), false, "0.3333333333333333"));
    CHECK(dumps_as(json_real(2.5), false, "2.5"));
    CHECK(dumps_as(json_integer(-12345678901234LL), false, "-12345678901234"));
    /* a float prints as its shortest float decimal, not the double's */
    CHECK(dumps_as(sl_json_real_f32(0.1f), false, "0.1"));
    CHECK(dumps_as(sl_json_real_f32(1e-6f), false, "1e-6"));
    CHECK(dumps_as(sl_json_real_f32(16777216.0f), false, "16777216.0"));
    CHECK(dumps_as(sl_json_real_f32(NAN), false, "null"));
    /* each double reads back exactly */
    const double vals[] = {1e-300, 123456.789, 5e-324, 1.7976931348623157e308, -0.0};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        json_t *v = json_real(vals[i]);
        char *s = sl_json_dump_text(v, false);
        CHECK_MSG(s && strtod(s, NULL) == vals[i], "%.17g printed as %s", vals[i], s);
        free(s);
        json_decref(v);
    }
}

TEST(text_is_plain_ascii)
{
    /* ESC, DEL, a C1 control (U+009B), CJK and an invalid byte (jansson
     * writes hex digits in upper case) */
    json_t *v = sl_json_string_lossy("a\x1b\x7f\xc2\x9b\xe4\xbd\xa0\xff", 9);
    CHECK(dumps_as(v, false, "\"a\\u001B\\u007F\\u009B\\u4F60\\uFFFD\""));
    /* NUL bytes are kept (escaped) */
    CHECK(dumps_as(sl_json_string_lossy("x\0y", 3), false, "\"x\\u0000y\""));
}

TEST(pretty_layout)
{
    json_t *v = json_pack("{s:[i,i], s:{s:[{s:i}], s:{}}, s:s}", "a", 1, 2, "b", "c", "d", 1, "e",
                          "k", "v");
    CHECK(dumps_as(v, true,
                   "{\n"
                   "  \"a\": [1, 2],\n"
                   "  \"b\": {\n"
                   "    \"c\": [\n"
                   "      {\"d\": 1}\n"
                   "    ],\n"
                   "    \"e\": {}\n"
                   "  },\n"
                   "  \"k\": \"v\"\n"
                   "}"));
    v = json_pack("{s:[i,i], s:{}}", "a", 1, 2, "e");
    CHECK(dumps_as(v, false, "{\"a\":[1,2],\"e\":{}}"));
}

/* A "\u0000" escape (a model's byte token 0, sent back by a client) reads
 * as U+FFFD; an escaped backslash before "u0000" leaves it literal text. */
TEST(nul_escape_reads_as_replacement_character)
{
    json_t *v;
    sl_err err;
    CHECK_EQ_INT(parse("{\"a\": \"x\\u0000y\", \"b\": \"\\\\u0000\"}", &v, &err), 0);
    const json_t *a = json_object_get(v, "a"), *b = json_object_get(v, "b");
    CHECK(json_string_length(a) == 5);
    CHECK(!strcmp(json_string_value(a), "x\xef\xbf\xbdy"));
    CHECK(!strcmp(json_string_value(b), "\\u0000"));
    json_decref(v);
}

int main(void)
{
    RUN(valid_object_is_parsed);
    RUN(duplicate_keys_are_refused);
    RUN(malformed_and_trailing_bytes_are_refused);
    RUN(depth_limit_is_exact);
    RUN(brackets_in_strings_do_not_count);
    RUN(compact_dump_is_one_line);
    RUN(numbers_are_shortest_round_trip);
    RUN(text_is_plain_ascii);
    RUN(pretty_layout);
    RUN(nul_escape_reads_as_replacement_character);
    return TEST_REPORT();
}
