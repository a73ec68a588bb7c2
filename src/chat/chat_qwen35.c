/* chat_qwen35.c - the Qwen3.5 / 3.6 chat format, read from its official
 * template (Qwen3.5-4B's tokenizer.chat_template): ChatML turns with every
 * content trimmed, the tools block first (system text after it), a think
 * block on every assistant turn after the last user query, and tool calls
 * in the XML form <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n
 * </parameter>\n</function>\n</tool_call>. */
#include "chat/chat_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"

#define put sl_sbuf_put
#define put_n sl_sbuf_put_n

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* s[0..*n) with ASCII whitespace trimmed both ends (Jinja's |trim) */
static const char *trim(const char *s, size_t *n)
{
    while (*n && is_ws(s[*n - 1])) (*n)--;
    while (*n && is_ws(*s)) s++, (*n)--;
    return s;
}

static bool starts_ends(const char *s, size_t n, const char *head, const char *tail)
{
    size_t hl = strlen(head), tl = strlen(tail);
    return n >= hl && n >= tl && !memcmp(s, head, hl) && !memcmp(s + n - tl, tail, tl);
}

/* The template's last_query_index: the last user message that is not just
 * a <tool_response> block; n - 1 when there is none (the template refuses
 * such a conversation; a continuation of tool results has none). */
static size_t last_query(const sl_chat_turn *m, const sl_chat_role *ro, size_t n)
{
    for (size_t k = n; k-- > 0;) {
        if (ro[k] != SL_ROLE_USER) continue;
        size_t len = strlen(m[k].content);
        const char *c = trim(m[k].content, &len);
        if (!starts_ends(c, len, "<tool_response>", "</tool_response>")) return k;
    }
    return n ? n - 1 : 0;
}

/* One argument value: strings as they are, objects and arrays as tojson,
 * other scalars as Jinja's |string writes Python values. */
static int put_arg_value(sl_sbuf *b, const json_t *v, sl_err *err)
{
    if (json_is_string(v)) {
        put_n(b, json_string_value(v), json_string_length(v));
        return SL_OK;
    }
    if (json_is_true(v)) return put(b, "True"), SL_OK;
    if (json_is_false(v)) return put(b, "False"), SL_OK;
    if (json_is_null(v)) return put(b, "None"), SL_OK;
    char *js = json_dumps(v, JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY);
    if (!js) return sl_err_set(err, SL_ENOMEM, "out of memory writing a tool call argument");
    put(b, js);
    free(js);
    return SL_OK;
}

static int put_call(sl_sbuf *b, const sl_chat_tool_call *c, sl_err *err)
{
    json_t *args = NULL;
    int rc = sl_json_parse(c->arguments, strlen(c->arguments), 64, &args, err);
    if (rc) return rc;
    if (!json_is_object(args)) {
        json_decref(args);
        return sl_err_set(err, SL_EINVAL, "the arguments of tool call '%.60s' are not a JSON object",
                          c->name);
    }
    put(b, "<tool_call>\n<function=");
    put(b, c->name);
    put(b, ">\n");
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        put(b, "<parameter=");
        put(b, key);
        put(b, ">\n");
        if ((rc = put_arg_value(b, v, err))) break;
        put(b, "\n</parameter>\n");
    }
    json_decref(args);
    if (!rc) put(b, "</function>\n</tool_call>");
    return rc;
}

static void put_tools(sl_sbuf *b, const json_t *tools, const char *system)
{
    put(b, "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n"
           "<tools>");
    size_t i;
    const json_t *tool;
    json_array_foreach(tools, i, tool) {
        char *js = json_dumps(tool, JSON_REAL_PRECISION(15));
        put(b, "\n");
        if (js) put(b, js);
        else b->oom = true;
        free(js);
    }
    put(b, "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format "
           "with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n"
           "<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
           "<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
           "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
           "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an "
           "inner <function=...></function> block must be nested within <tool_call></tool_call> "
           "XML tags\n- Required parameters MUST be specified\n- You may provide optional "
           "reasoning for your function call in natural language BEFORE the function call, but "
           "NOT after\n- If there is no function call available, answer the question like "
           "normal with your current knowledge and do not tell the user about function calls\n"
           "</IMPORTANT>");
    if (system) {
        size_t n = strlen(system);
        const char *s = trim(system, &n);
        if (n) {
            put(b, "\n\n");
            put_n(b, s, n);
        }
    }
    put(b, "<|im_end|>\n");
}

void sl_chat_split_think(const char *c, size_t cn, const char **r, size_t *rn,
                         const char **body, size_t *bn)
{
    const char *first = NULL, *last = NULL;
    for (const char *p = c; p + 8 <= c + cn; p++)
        if (!memcmp(p, "</think>", 8)) {
            if (!first) first = p;
            last = p;
        }
    *body = c;
    *bn = cn;
    *r = NULL;
    *rn = 0;
    if (!first) return;
    size_t head = (size_t)(first - c);
    while (head && c[head - 1] == '\n') head--;
    const char *s = c;
    for (const char *p = c; p + 7 <= c + head; p++)
        if (!memcmp(p, "<think>", 7)) s = p + 7;
    size_t sn = (size_t)(c + head - s);
    while (sn && *s == '\n') s++, sn--;
    *r = s;
    *rn = sn;
    *body = last + 8;
    *bn = (size_t)(c + cn - *body);
    while (*bn && **body == '\n') (*body)++, (*bn)--;
}

static int put_assistant(sl_sbuf *b, const sl_chat_turn *m, bool after_query, sl_err *err)
{
    size_t cn = strlen(m->content);
    const char *c = trim(m->content, &cn);
    const char *r = m->reasoning ? m->reasoning : "";
    size_t rn = strlen(r);
    if (!m->reasoning) {
        const char *s;
        size_t sn;
        sl_chat_split_think(c, cn, &s, &sn, &c, &cn);
        if (s) r = s, rn = sn;
    }
    r = trim(r, &rn);
    put(b, "<|im_start|>assistant\n");
    if (after_query) {
        put(b, "<think>\n");
        put_n(b, r, rn);
        put(b, "\n</think>\n\n");
    }
    put_n(b, c, cn);
    size_t tn = cn;
    trim(c, &tn);
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        put(b, k == 0 ? (tn ? "\n\n" : "") : "\n");
        int rc = put_call(b, &m->tool_calls[k], err);
        if (rc) return rc;
    }
    put(b, "<|im_end|>\n");
    return SL_OK;
}

int sl_chat_render_qwen35(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                          const sl_chat_role *ro, size_t n, bool cont, const void *tools,
                          sl_err *err)
{
    (void)t;
    size_t i = 0;
    if (!cont) {
        const char *sys = n > 0 && ro[0] == SL_ROLE_SYSTEM ? m[0].content : NULL;
        if (tools) {
            put_tools(b, tools, sys);
        } else if (sys) {
            size_t sn = strlen(sys);
            const char *s = trim(sys, &sn);
            put(b, "<|im_start|>system\n");
            put_n(b, s, sn);
            put(b, "<|im_end|>\n");
        }
        if (sys) i = 1;
    }
    const size_t lq = last_query(m, ro, n);
    for (; i < n; i++) {
        size_t cn = strlen(m[i].content);
        const char *c = trim(m[i].content, &cn);
        switch (ro[i]) {
        case SL_ROLE_SYSTEM:
        case SL_ROLE_DEVELOPER:
            return sl_err_set(err, SL_EINVAL,
                              "chat template qwen3.5 accepts a system message only as the first "
                              "message of a conversation (message %zu%s)",
                              i, cont ? " of a continuation" : "");
        case SL_ROLE_USER:
            put(b, "<|im_start|>user\n");
            put_n(b, c, cn);
            put(b, "<|im_end|>\n");
            break;
        case SL_ROLE_ASSISTANT: {
            int rc = put_assistant(b, &m[i], i > lq, err);
            if (rc) return rc;
            break;
        }
        case SL_ROLE_TOOL:
            /* consecutive results share one user turn */
            if ((i > 0 || cont) && (i == 0 || ro[i - 1] != SL_ROLE_TOOL))
                put(b, "<|im_start|>user");
            put(b, "\n<tool_response>\n");
            put_n(b, c, cn);
            put(b, "\n</tool_response>");
            if (i + 1 == n || ro[i + 1] != SL_ROLE_TOOL) put(b, "<|im_end|>\n");
            break;
        }
    }
    return SL_OK;
}
