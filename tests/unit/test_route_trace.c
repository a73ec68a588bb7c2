/* test_route_trace.c - the route trace parser: a good trace's choices come
 * back as written (and wrap), every kind of damage is refused with a message
 * naming its line and field, and a trace is checked against a model's shape. */
#include <stdlib.h>
#include <string.h>

#include "experts/route_trace.h"
#include "test.h"

#define HEAD                                                                   \
    "# route_trace v1\n"                                                       \
    "# model=/x/m.gguf arch=qwen3moe n_layer=2 n_expert=4 n_expert_used=2\n"   \
    "# layer=0 expert_bytes=10 dense_bytes=20\n"                              \
    "# layer=1 expert_bytes=10 dense_bytes=20\n"                              \
    "turn,phase,step,layer,slot,expert,weight,residency,expert_bytes\n"

/* 2 prompt steps (step 0 lacks the last layer, as llama.cpp records it),
 * then 2 generation steps. Lines: rows begin at line 6. */
#define ROWS                                                                   \
    "0,0,0,0,0,3,0.75,0,10\n" /* line 6 */                                     \
    "0,0,0,0,1,1,0.25,0,10\n"                                                  \
    "0,0,1,0,0,0,0.5,0,10\n"                                                   \
    "0,0,1,0,1,2,0.5,1,10\n"                                                   \
    "0,0,1,1,0,2,0.6,0,10\n" /* line 10 */                                     \
    "0,0,1,1,1,3,0.4,0,10\n"                                                   \
    "0,1,2,0,0,1,0.9,1,0\n"                                                    \
    "0,1,2,0,1,0,0.1,1,0\n"                                                    \
    "0,1,2,1,0,0,0.7,0,10\n"                                                   \
    "0,1,2,1,1,1,0.3,0,10\n" /* line 15 */                                     \
    "0,1,3,0,0,2,0.8,0,10\n"                                                   \
    "0,1,3,0,1,3,0.2,0,10\n"                                                   \
    "0,1,3,1,0,3,0.55,1,0\n"                                                   \
    "0,1,3,1,1,2,0.45,1,0\n"

static const char GOOD[] = HEAD ROWS;

static sl_route_trace *parse(const char *text, sl_err *err, int *rc)
{
    sl_route_trace *t = NULL;
    *rc = sl_route_trace_parse(&t, text, strlen(text), "t.csv", err);
    return t;
}

/* GOOD with the first occurrence of `from` replaced by `to`. */
static char *edit(const char *from, const char *to)
{
    const char *at = strstr(GOOD, from);
    if (!at) return NULL;
    size_t n = strlen(GOOD) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    size_t pre = (size_t)(at - GOOD);
    memcpy(s, GOOD, pre);
    strcpy(s + pre, to);
    strcat(s, at + strlen(from));
    return s;
}

/* Parsing the edited text fails with SL_EFORMAT and a message holding
 * each of the needles. */
static void refused(const char *from, const char *to, const char *n1, const char *n2)
{
    char *s = edit(from, to);
    CHECK_MSG(s != NULL, "'%s' not in the good trace", from);
    if (!s) return;
    sl_err err = {0};
    int rc;
    sl_route_trace *t = parse(s, &err, &rc);
    CHECK_MSG(rc == SL_EFORMAT && t == NULL, "'%s' -> '%s' accepted (rc %d)", from, to, rc);
    CHECK_STR_CONTAINS(err.msg, n1);
    if (n2) CHECK_STR_CONTAINS(err.msg, n2);
    sl_route_trace_free(t);
    free(s);
}

TEST(good_trace_replays_as_written)
{
    sl_err err = {0};
    int rc, ids[2];
    float w[2];
    sl_route_trace *t = parse(GOOD, &err, &rc);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (!t) return;
    CHECK_EQ_INT(sl_route_trace_n_layer(t), 2);
    CHECK_EQ_INT(sl_route_trace_n_expert(t), 4);
    CHECK_EQ_INT(sl_route_trace_top_k(t), 2);
    CHECK_EQ_INT(sl_route_trace_n_steps(t), 4);
    CHECK_EQ_INT(sl_route_trace_n_prompt(t), 2);
    CHECK_EQ_INT(sl_route_trace_n_filled(t), 1);
    sl_route_trace_choice(t, 0, 0, ids, w);
    CHECK(ids[0] == 3 && ids[1] == 1 && w[0] == 0.75f && w[1] == 0.25f);
    /* step 0 has no row for the last layer: the last prompt step's choice */
    sl_route_trace_choice(t, 0, 1, ids, w);
    CHECK(ids[0] == 2 && ids[1] == 3 && w[0] == 0.6f && w[1] == 0.4f);
    sl_route_trace_choice(t, 3, 1, ids, w);
    CHECK(ids[0] == 3 && ids[1] == 2 && w[0] == 0.55f && w[1] == 0.45f);
    /* past the end: step 6 is step 2 */
    sl_route_trace_choice(t, 6, 0, ids, w);
    CHECK(ids[0] == 1 && ids[1] == 0 && w[0] == 0.9f);
    CHECK_EQ_INT(sl_route_trace_cursor(t), 0);
    sl_route_trace_advance(t, 3);
    CHECK_EQ_INT(sl_route_trace_wraps(t), 0);
    sl_route_trace_advance(t, 1);
    CHECK_EQ_INT(sl_route_trace_wraps(t), 1);
    sl_route_trace_advance(t, 9); /* 13 = 3 x 4 + 1 */
    CHECK_EQ_INT(sl_route_trace_cursor(t), 13);
    CHECK_EQ_INT(sl_route_trace_wraps(t), 3);
    sl_route_trace_free(t);
}

/* The recorder writes a prompt layer by layer (all its tokens at layer 0,
 * then at layer 1 ...): any row order is accepted. */
TEST(rows_in_any_order_are_accepted)
{
    static const char text[] = HEAD
        "0,0,1,0,0,0,0.5,0,10\n"
        "0,0,0,0,0,3,0.75,0,10\n"
        "0,0,0,0,1,1,0.25,0,10\n"
        "0,0,1,0,1,2,0.5,1,10\n"
        "0,0,1,1,1,3,0.4,0,10\n"
        "0,0,1,1,0,2,0.6,0,10\n"
        "0,1,2,1,0,0,0.7,0,10\n"
        "0,1,2,1,1,1,0.3,0,10\n"
        "0,1,2,0,0,1,0.9,1,0\n"
        "0,1,2,0,1,0,0.1,1,0\n";
    sl_err err = {0};
    int rc, ids[2];
    float w[2];
    sl_route_trace *t = parse(text, &err, &rc);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (!t) return;
    CHECK_EQ_INT(sl_route_trace_n_steps(t), 3);
    CHECK_EQ_INT(sl_route_trace_n_prompt(t), 2);
    sl_route_trace_choice(t, 1, 1, ids, w);
    CHECK(ids[0] == 2 && ids[1] == 3 && w[0] == 0.6f);
    sl_route_trace_choice(t, 2, 0, ids, w);
    CHECK(ids[0] == 1 && ids[1] == 0 && w[1] == 0.1f);
    sl_route_trace_free(t);
}

TEST(crlf_lines_are_accepted)
{
    char buf[sizeof GOOD * 2];
    size_t n = 0;
    for (const char *p = GOOD; *p; p++) {
        if (*p == '\n') buf[n++] = '\r';
        buf[n++] = *p;
    }
    buf[n] = '\0';
    sl_err err = {0};
    int rc;
    sl_route_trace *t = parse(buf, &err, &rc);
    CHECK_MSG(rc == 0, "%s", err.msg);
    sl_route_trace_free(t);
}

TEST(model_shape_is_checked)
{
    sl_err err = {0};
    int rc;
    sl_route_trace *t = parse(GOOD, &err, &rc);
    if (!t) return;
    CHECK_EQ_INT(sl_route_trace_check(t, 2, 4, 2, &err), 0);
    CHECK_EQ_INT(sl_route_trace_check(t, 48, 4, 2, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "n_layer=2 but the model has 48 layers");
    CHECK_EQ_INT(sl_route_trace_check(t, 2, 128, 2, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "n_expert=4 but the model has 128");
    CHECK_EQ_INT(sl_route_trace_check(t, 2, 4, 8, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "n_expert_used=2 but the model uses top-8");
    CHECK_STR_CONTAINS(err.msg, "--top-k 2");
    sl_route_trace_free(t);
}

TEST(damaged_headers_are_refused)
{
    refused("# route_trace v1", "# route_trace v2", "line 1", "route_trace v1");
    refused("n_layer=2", "n_layer=x", "line 2", "n_layer='x'");
    refused("n_expert=4", "n_experts=4", "line 2", "no n_expert=");
    refused("n_expert_used=2", "n_expert_used=5", "line 2", "more than n_expert=4");
    refused("# layer=1 ", "# layer=2 ", "line 4 field 'layer'", "'2'");
    refused("# layer=1 ", "# note ", "line 4", "unknown header line");
    refused("turn,phase,step,layer,slot,expert,weight,residency,expert_bytes",
            "turn,phase,step,layer,slot,expert,weight", "line 5", "column line");
    refused(ROWS, "", "no rows", NULL);
}

TEST(damaged_rows_are_refused)
{
    refused("0,0,1,0,0,0,0.5,0,10\n", "0,0,1,0,0,0,0.5,0\n", "line 8", "fewer than 9 fields");
    refused("0,0,1,0,0,0,0.5,0,10\n", "0,0,1,0,0,0,0.5,0,10,1\n", "line 8", "more than 9");
    refused("0,0,1,0,0,0,0.5", "0,0,1,0,0,7,0.5", "line 8 field 'expert'", "n_expert=4");
    refused("0,0,1,0,0,0,0.5", "0,0,1,2,0,0,0.5", "line 8 field 'layer'", "n_layer=2");
    refused("0,0,1,0,0,0,0.5", "0,0,1,0,2,0,0.5", "line 8 field 'slot'", "n_expert_used=2");
    refused("0,0,1,0,0,0,0.5", "0,0,1,0,0,0,abc", "line 8 field 'weight'", "'abc'");
    refused("0,0,1,0,0,0,0.5", "0,0,1,0,0,0,1.5", "line 8 field 'weight'", "[0, 1]");
    refused("0,0,1,0,0,0,0.5", "0,0,1,0,0,0,nan", "line 8 field 'weight'", "'nan'");
    refused("0,0,1,0,0,0,0.5", "0,0,-1,0,0,0,0.5", "line 8 field 'step'", "'-1'");
    refused("0,0,1,0,0,0,0.5", "1,0,1,0,0,0,0.5", "line 8 field 'turn'", "single-turn");
    refused("0,0,1,0,1,2,0.5", "0,0,1,0,1,0,0.5", "line 9 field 'expert'", "already in slot 0");
    refused("0,0,1,0,1,2,0.5", "0,0,1,0,0,2,0.5", "line 9", "a second row for step 1");
    refused("0,0,1,0,1,2,0.5,1,", "0,0,1,0,1,2,0.5,2,", "line 9 field 'residency'", NULL);
    /* weights: rank order and a sum of 1 */
    refused("0,1,2,0,0,1,0.9,1,0\n0,1,2,0,1,0,0.1", "0,1,2,0,0,1,0.1,1,0\n0,1,2,0,1,0,0.9",
            "line 12 field 'weight'", "rank order");
    refused("0,1,2,0,1,0,0.1,", "0,1,2,0,1,0,0.2,", "line 12 field 'weight'", "sum to 1.1");
}

TEST(missing_and_misordered_steps_are_refused)
{
    /* a whole step gone */
    refused("0,1,2,0,0,1,0.9,1,0\n0,1,2,0,1,0,0.1,1,0\n0,1,2,1,0,0,0.7,0,10\n"
            "0,1,2,1,1,1,0.3,0,10\n", "", "step 2 has no rows", "steps 0..3 appear");
    /* a step number far beyond what the rows can hold (no huge table) */
    refused("0,1,3,1,1,2,0.45", "0,1,999999,1,1,2,0.45", "line 19 field 'step'",
            "step 999999, but the file's 14 rows hold at most 7 steps");
    /* one slot gone */
    refused("0,1,3,1,1,2,0.45,1,0\n", "", "step 3 layer 1 has 1 of its 2 slots", "slot 1");
    /* a layer gone in a generation step (the last-layer rule is for the prompt) */
    refused("0,1,2,1,0,0,0.7,0,10\n0,1,2,1,1,1,0.3,0,10\n", "",
            "step 2 (generation) has no rows for layer 1", NULL);
    /* a layer gone that is not the last */
    refused("0,0,1,0,0,0,0.5,0,10\n0,0,1,0,1,2,0.5,1,10\n", "",
            "step 1 (prompt) has no rows for layer 0", NULL);
    /* prompt rows after generation began */
    refused("0,1,3,0,0,2,0.8,0,10\n0,1,3,0,1,3,0.2,0,10\n0,1,3,1,0,3,0.55,1,0\n"
            "0,1,3,1,1,2,0.45,1,0\n",
            "0,0,3,0,0,2,0.8,0,10\n0,0,3,0,1,3,0.2,0,10\n0,0,3,1,0,3,0.55,1,0\n"
            "0,0,3,1,1,2,0.45,1,0\n", "line 16 field 'phase'", "prompt step 3 after generation");
    refused("0,1,2,0,0,1,0.9,1,0\n", "0,1,1,0,0,1,0.9,1,0\n", "line 12 field 'phase'",
            "step 1 is phase 1 here but phase 0 on line 8");
}

TEST(binary_and_odd_text_is_refused)
{
    sl_err err = {0};
    sl_route_trace *t = NULL;
    const char bin[] = "# route_trace v1\n\0\x01\x02";
    CHECK_EQ_INT(sl_route_trace_parse(&t, bin, sizeof bin - 1, "t.csv", &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "NUL");
    CHECK(t == NULL);
    CHECK_EQ_INT(sl_route_trace_parse(&t, "", 0, "t.csv", &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "before its column line");
    refused("0,0,1,0,0,0,0.5,0,10\n", "\n0,0,1,0,0,0,0.5,0,10\n", "line 8", "empty line");
    /* a truncated file: the last row cut in the middle */
    size_t n = strlen(GOOD) - 10;
    CHECK_EQ_INT(sl_route_trace_parse(&t, GOOD, n, "t.csv", &err), SL_EFORMAT);
    CHECK_STR_CONTAINS(err.msg, "line 19");
    char *longline = malloc(5000);
    memset(longline, '7', 4999);
    longline[4999] = '\0';
    refused("0,0,1,0,0,0,0.5,0,10", longline, "line 8", "longer than 4096");
    free(longline);
}

TEST(missing_file_is_an_io_error)
{
    sl_err err = {0};
    sl_route_trace *t = NULL;
    CHECK(sl_route_trace_load(&t, "/nonexistent/trace.csv", &err) < 0);
    CHECK_STR_CONTAINS(err.msg, "/nonexistent/trace.csv");
    CHECK(t == NULL);
}

int main(void)
{
    RUN(good_trace_replays_as_written);
    RUN(rows_in_any_order_are_accepted);
    RUN(crlf_lines_are_accepted);
    RUN(model_shape_is_checked);
    RUN(damaged_headers_are_refused);
    RUN(damaged_rows_are_refused);
    RUN(missing_and_misordered_steps_are_refused);
    RUN(binary_and_odd_text_is_refused);
    RUN(missing_file_is_an_io_error);
    return TEST_REPORT();
}
