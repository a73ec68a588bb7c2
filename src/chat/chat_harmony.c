/* chat_harmony.c - OpenAI's harmony format (gpt-oss), rendered as its
 * specification describes it (github.com/openai/harmony, docs/format.md):
 *
 *   system message: identity, knowledge cutoff, current date, reasoning
 *     effort, the valid channels (and, with function tools, that calls go
 *     to the commentary channel);
 *   developer message: "# Instructions\n\n" + the conversation's system or
 *     developer text, then "# Tools\n\n## functions\n\nnamespace functions
 *     {\n\n" + one TypeScript-like type per function + "} // namespace
 *     functions";
 *   user: <|start|>user<|message|>{text}<|end|>
 *   assistant: its analysis (kept only for turns after the last user
 *     message or with tool calls: earlier chain of thought is dropped),
 *     its text on the final channel (commentary when it precedes tool
 *     calls: a preamble), each call as
 *     <|start|>assistant<|channel|>commentary to=functions.NAME
 *     <|constrain|>json<|message|>{arguments}<|call|>
 *   tool result: <|start|>functions.NAME to=assistant<|channel|>commentary
 *     <|message|>{output}<|end|>
 *
 * Messages follow each other without separators. */
#include "chat/chat_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/json.h"

#define put sl_sbuf_put

static void put_ts_type(sl_sbuf *b, const json_t *s);

/* A JSON value as the spec's comments show defaults: strings bare. */
static void put_plain_value(sl_sbuf *b, const json_t *v)
{
    if (json_is_string(v)) {
        put(b, json_string_value(v));
        return;
    }
    char *js = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
    if (js) put(b, js);
    else b->oom = true;
    free(js);
}

static void put_json_literal(sl_sbuf *b, const json_t *v)
{
    char *js = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
    if (js) put(b, js);
    else b->oom = true;
    free(js);
}

static void put_type_name(sl_sbuf *b, const char *t, const json_t *s)
{
    if (!strcmp(t, "string") || !strcmp(t, "boolean") || !strcmp(t, "null")) put(b, t);
    else if (!strcmp(t, "number") || !strcmp(t, "integer")) put(b, "number");
    else if (!strcmp(t, "array")) {
        const json_t *items = json_object_get(s, "items");
        if (json_is_object(items)) {
            put_ts_type(b, items);
        } else {
            put(b, "any");
        }
        put(b, "[]");
    } else if (!strcmp(t, "object")) {
        const json_t *props = json_object_get(s, "properties");
        if (!json_is_object(props) || json_object_size(props) == 0) {
            put(b, "object");
            return;
        }
        put(b, "{\n");
        const json_t *req = json_object_get(s, "required");
        const char *key;
        const json_t *p;
        json_object_foreach((json_t *)props, key, p) {
            const json_t *d = json_object_get(p, "description");
            if (json_is_string(d)) {
                put(b, "// ");
                put(b, json_string_value(d));
                put(b, "\n");
            }
            bool required = false;
            size_t k;
            const json_t *r;
            json_array_foreach(req, k, r)
                if (json_is_string(r) && !strcmp(json_string_value(r), key)) required = true;
            put(b, key);
            put(b, required ? ": " : "?: ");
            put_ts_type(b, p);
            put(b, ",");
            const json_t *dflt = json_object_get(p, "default");
            if (dflt) {
                put(b, " // default: ");
                put_plain_value(b, dflt);
            }
            put(b, "\n");
        }
        put(b, "}");
    } else {
        put(b, "any");
    }
}

/* A JSON schema as a TypeScript-like type: enums as unions of literals,
 * arrays as T[], objects as { field: type, ... } with optional fields
 * marked "?", descriptions as comments above fields, defaults after them. */
static void put_ts_type(sl_sbuf *b, const json_t *s)
{
    const json_t *en = json_object_get(s, "enum");
    if (json_is_array(en) && json_array_size(en) > 0) {
        size_t i;
        const json_t *v;
        json_array_foreach(en, i, v) {
            if (i) put(b, " | ");
            put_json_literal(b, v);
        }
        return;
    }
    const json_t *any = json_object_get(s, "anyOf");
    if (!json_is_array(any)) any = json_object_get(s, "oneOf");
    if (json_is_array(any) && json_array_size(any) > 0) {
        size_t i;
        const json_t *v;
        json_array_foreach(any, i, v) {
            if (i) put(b, " | ");
            put_ts_type(b, v);
        }
        return;
    }
    const json_t *t = json_object_get(s, "type");
    if (json_is_string(t)) {
        put_type_name(b, json_string_value(t), s);
    } else if (json_is_array(t) && json_array_size(t) > 0) {
        size_t i;
        const json_t *v;
        json_array_foreach(t, i, v) {
            if (i) put(b, " | ");
            put_type_name(b, json_is_string(v) ? json_string_value(v) : "", s);
        }
    } else {
        put(b, "any");
    }
}

static int put_functions(sl_sbuf *b, const json_t *tools, sl_err *err)
{
    put(b, "## functions\n\nnamespace functions {\n\n");
    size_t i;
    const json_t *tool;
    json_array_foreach(tools, i, tool) {
        const json_t *f = json_object_get(tool, "function");
        if (!json_is_object(f)) f = tool; /* {"name", ...} without the wrapper */
        const json_t *name = json_object_get(f, "name");
        if (!json_is_string(name))
            return sl_err_set(err, SL_EINVAL, "tools[%zu] has no function name", i);
        const json_t *d = json_object_get(f, "description");
        if (json_is_string(d)) {
            put(b, "// ");
            put(b, json_string_value(d));
            put(b, "\n");
        }
        put(b, "type ");
        put(b, json_string_value(name));
        const json_t *params = json_object_get(f, "parameters");
        const json_t *props = json_object_get(params, "properties");
        if (json_is_object(props) && json_object_size(props) > 0) {
            put(b, " = (_: ");
            put_type_name(b, "object", params);
            put(b, ") => any;\n\n");
        } else {
            put(b, " = () => any;\n\n");
        }
    }
    put(b, "} // namespace functions");
    return SL_OK;
}

static void put_today(sl_sbuf *b)
{
    time_t now = time(NULL);
    struct tm tm;
    char d[16];
    if (gmtime_r(&now, &tm) && strftime(d, sizeof d, "%Y-%m-%d", &tm)) put(b, d);
}

static void put_system(sl_sbuf *b, const sl_chat_template *t, bool tools)
{
    put(b, "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
           "OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: ");
    if (t->date) put(b, t->date);
    else put_today(b);
    put(b, "\n\nReasoning: ");
    put(b, t->effort[0] ? t->effort : "medium");
    put(b, "\n\n# Valid channels: analysis, commentary, final. Channel must be included for "
           "every message.");
    if (tools) put(b, "\nCalls to these tools must go to the commentary channel: 'functions'.");
    put(b, "<|end|>");
}

static void put_msg(sl_sbuf *b, const char *head, const char *text, const char *end)
{
    put(b, "<|start|>");
    put(b, head);
    put(b, "<|message|>");
    put(b, text);
    put(b, end);
}

int sl_chat_render_harmony(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                           const sl_chat_role *ro, size_t n, bool cont, const void *tools_v,
                           sl_err *err)
{
    const json_t *tools = tools_v;
    size_t i = 0;
    if (!cont) {
        put_system(b, t, tools != NULL);
        const char *dev = NULL;
        if (n > 0 && (ro[0] == SL_ROLE_SYSTEM || ro[0] == SL_ROLE_DEVELOPER)) dev = m[i++].content;
        if (dev || tools) {
            put(b, "<|start|>developer<|message|>");
            if (dev) {
                put(b, "# Instructions\n\n");
                put(b, dev);
            }
            if (dev && tools) put(b, "\n\n");
            if (tools) {
                put(b, "# Tools\n\n");
                int rc = put_functions(b, tools, err);
                if (rc) return rc;
            }
            put(b, "<|end|>");
        }
    }
    size_t last_user = (size_t)-1;
    for (size_t k = 0; k < n; k++)
        if (ro[k] == SL_ROLE_USER) last_user = k;
    /* a tool result names its function; OpenAI's tool messages carry only
     * the call id, so take the name of the call with that id (or the
     * latest call) when the turn gives none */
    const char *last_call = NULL;
    for (; i < n; i++) {
        switch (ro[i]) {
        case SL_ROLE_USER:
            put_msg(b, "user", m[i].content, "<|end|>");
            break;
        case SL_ROLE_SYSTEM:
        case SL_ROLE_DEVELOPER:
            put(b, "<|start|>developer<|message|># Instructions\n\n");
            put(b, m[i].content);
            put(b, "<|end|>");
            break;
        case SL_ROLE_ASSISTANT: {
            bool calls = m[i].n_tool_calls > 0;
            bool recent = last_user == (size_t)-1 || i > last_user;
            if (m[i].reasoning && m[i].reasoning[0] && (calls || recent))
                put_msg(b, "assistant<|channel|>analysis", m[i].reasoning, "<|end|>");
            if (m[i].content[0] || !calls)
                put_msg(b, calls ? "assistant<|channel|>commentary" : "assistant<|channel|>final",
                        m[i].content, "<|end|>");
            for (size_t k = 0; k < m[i].n_tool_calls; k++) {
                const sl_chat_tool_call *c = &m[i].tool_calls[k];
                put(b, "<|start|>assistant<|channel|>commentary to=functions.");
                put(b, c->name);
                put(b, " <|constrain|>json<|message|>");
                put(b, c->arguments);
                put(b, "<|call|>");
                last_call = c->name;
            }
            break;
        }
        case SL_ROLE_TOOL: {
            const char *name = m[i].name ? m[i].name : last_call;
            if (!name)
                return sl_err_set(err, SL_EINVAL,
                                  "chat message %zu is a tool result but no function name is "
                                  "known for it (no earlier tool call)",
                                  i);
            put(b, "<|start|>functions.");
            put(b, name);
            put(b, " to=assistant<|channel|>commentary<|message|>");
            put(b, m[i].content);
            put(b, "<|end|>");
            break;
        }
        }
    }
    return SL_OK;
}
