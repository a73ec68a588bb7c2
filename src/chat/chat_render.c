/* chat_render.c - the hand-written renderers of each chat family (formats in
 * chat.h). One function renders both a whole conversation and a
 * continuation; the continuation differs only in its start (turn end
 * instead of BOS / default system) and in what counts as "first". Harmony
 * lives in chat_harmony.c, Qwen3's tool blocks in chat_tools.c. */
#include "chat/chat_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"

typedef sl_sbuf sbuf;

void sl_sbuf_put_n(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sl_sbuf_put(sbuf *b, const char *s)
{
    sl_sbuf_put_n(b, s, strlen(s));
}

#define put_n sl_sbuf_put_n
#define put sl_sbuf_put

/* Jinja's |trim and Python's str.strip(): ASCII whitespace both ends. */
static void put_trimmed(sbuf *b, const char *s)
{
    const char *ws = " \t\n\r\v\f";
    size_t n = strlen(s);
    while (n && strchr(ws, s[n - 1])) n--;
    size_t i = 0;
    while (i < n && strchr(ws, s[i])) i++;
    put_n(b, s + i, n - i);
}

/* Strips leading (lead) and/or trailing (trail) '\n' of s[0..n). */
static void put_strip_nl(sbuf *b, const char *s, size_t n, bool lead, bool trail)
{
    size_t i = 0;
    if (lead)
        while (i < n && s[i] == '\n') i++;
    if (trail)
        while (n > i && s[n - 1] == '\n') n--;
    put_n(b, s + i, n - i);
}

static const char *last_occurrence(const char *s, const char *needle, const char *limit)
{
    const char *found = NULL;
    for (const char *p = strstr(s, needle); p && (!limit || p < limit); p = strstr(p + 1, needle))
        found = p;
    return found;
}

/* Qwen3's assistant message, following its template:
 *   reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
 *   content   = content.split('</think>')[-1].lstrip('\n')
 * before the last user message: just content; after it: the think block
 * when there is reasoning or this is the final message. */
static void put_qwen3_assistant(sbuf *b, const char *content, bool after_last_user, bool is_last)
{
    const char *close = strstr(content, "</think>");
    const char *body = content;
    const char *r = "";
    size_t rn = 0;
    if (close) {
        const char *last_close = last_occurrence(content, "</think>", NULL);
        body = last_close + strlen("</think>");
        while (*body == '\n') body++;
        size_t head = (size_t)(close - content); /* split('</think>')[0] */
        while (head && content[head - 1] == '\n') head--;
        const char *open = last_occurrence(content, "<think>", content + head);
        r = open ? open + strlen("<think>") : content;
        rn = (size_t)(content + head - r);
        if (open && open + strlen("<think>") > content + head) rn = 0;
        while (rn && *r == '\n') r++, rn--;
    }
    if (after_last_user && (is_last || rn > 0)) {
        put(b, "<think>\n");
        put_strip_nl(b, r, rn, true, true);
        put(b, "\n</think>\n\n");
        put_strip_nl(b, body, strlen(body), true, false);
    } else {
        put(b, body);
    }
}

typedef sl_chat_role role;
#define R_SYSTEM SL_ROLE_SYSTEM
#define R_USER SL_ROLE_USER
#define R_ASSISTANT SL_ROLE_ASSISTANT
#define R_DEVELOPER SL_ROLE_DEVELOPER
#define R_TOOL SL_ROLE_TOOL

static bool family_has_tools(sl_chat_family f)
{
    return f == SL_CHAT_CHATML || f == SL_CHAT_QWEN3 || f == SL_CHAT_HARMONY ||
           f == SL_CHAT_QWEN35;
}

bool sl_chat_has_tools(const sl_chat_template *t)
{
    return family_has_tools(t->family);
}

/* Roles of the messages; families without a developer role read it as
 * system (harmony keeps it), tool messages only where the family has them. */
static int parse_roles(const sl_chat_template *t, const sl_chat_turn *msgs, size_t n,
                       role *roles, sl_err *err)
{
    for (size_t i = 0; i < n; i++) {
        const char *r = msgs[i].role ? msgs[i].role : "(null)";
        if (!strcmp(r, "system")) roles[i] = R_SYSTEM;
        else if (!strcmp(r, "user")) roles[i] = R_USER;
        else if (!strcmp(r, "assistant")) roles[i] = R_ASSISTANT;
        else if (!strcmp(r, "developer"))
            roles[i] = t->family == SL_CHAT_HARMONY ? R_DEVELOPER : R_SYSTEM;
        else if (!strcmp(r, "tool") && family_has_tools(t->family)) roles[i] = R_TOOL;
        else if (!strcmp(r, "tool"))
            return sl_err_set(err, SL_EINVAL,
                              "chat message %zu is a tool result, but the chat template %s "
                              "has no form for tool messages",
                              i, sl_chat_family_name(t->family));
        else
            return sl_err_set(err, SL_EINVAL,
                              "chat message %zu has role '%s'; expected system, developer, "
                              "user, assistant or tool",
                              i, r);
        if (!msgs[i].content)
            return sl_err_set(err, SL_EINVAL, "chat message %zu (%s) has no content", i, r);
        if (msgs[i].n_tool_calls && !family_has_tools(t->family))
            return sl_err_set(err, SL_EINVAL,
                              "chat message %zu has tool calls, but the chat template %s has "
                              "no form for them",
                              i, sl_chat_family_name(t->family));
        for (size_t k = 0; k < msgs[i].n_tool_calls; k++)
            if (!msgs[i].tool_calls[k].name || !msgs[i].tool_calls[k].arguments)
                return sl_err_set(err, SL_EINVAL,
                                  "chat message %zu: tool call %zu has no name or arguments", i,
                                  k);
    }
    return SL_OK;
}

static const char *role_name(role r)
{
    return r == R_SYSTEM || r == R_DEVELOPER ? "system" : r == R_USER ? "user" : "assistant";
}

static int render_chatml(sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                         const role *ro, size_t n, bool cont, const json_t *tools, sl_err *err)
{
    const bool qwen3 = t->family == SL_CHAT_QWEN3;
    size_t i = 0;
    if (!cont && tools) {
        /* Qwen3: the system text goes into the tools block */
        const char *sys = n > 0 && ro[0] == R_SYSTEM ? m[i++].content : NULL;
        int rc = sl_chat_put_qwen3_tools(b, sys, tools, err);
        if (rc) return rc;
    } else if (!cont && t->default_system && (n == 0 || ro[0] != R_SYSTEM)) {
        put(b, "<|im_start|>system\n");
        put(b, t->default_system);
        put(b, "<|im_end|>\n");
    }
    size_t last_user = (size_t)-1;
    for (size_t k = 0; k < n; k++)
        if (ro[k] == R_USER) last_user = k;
    for (; i < n; i++) {
        if (ro[i] == R_TOOL) {
            /* consecutive tool results share one user turn */
            if (i == 0 || ro[i - 1] != R_TOOL) put(b, "<|im_start|>user");
            put(b, "\n<tool_response>\n");
            put(b, m[i].content);
            put(b, "\n</tool_response>");
            if (i + 1 == n || ro[i + 1] != R_TOOL) put(b, "<|im_end|>\n");
            continue;
        }
        put(b, "<|im_start|>");
        put(b, role_name(ro[i]));
        put(b, "\n");
        if (qwen3 && ro[i] == R_ASSISTANT && m[i].reasoning) {
            /* an explicit reasoning field stands for the think block */
            bool after = last_user == (size_t)-1 || i > last_user;
            if (after) {
                put(b, "<think>\n");
                put_strip_nl(b, m[i].reasoning, strlen(m[i].reasoning), true, true);
                put(b, "\n</think>\n\n");
                put_strip_nl(b, m[i].content, strlen(m[i].content), true, false);
            } else {
                put(b, m[i].content);
            }
        } else if (qwen3 && ro[i] == R_ASSISTANT) {
            put_qwen3_assistant(b, m[i].content, last_user == (size_t)-1 || i > last_user,
                                i + 1 == n);
        } else {
            put(b, m[i].content);
        }
        for (size_t k = 0; k < m[i].n_tool_calls; k++) {
            if (k > 0 || m[i].content[0]) put(b, "\n");
            sl_chat_put_qwen3_call(b, &m[i].tool_calls[k]);
        }
        put(b, "<|im_end|>\n");
    }
    return SL_OK;
}

static void render_llama3(sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                          const role *ro, size_t n, bool cont)
{
    size_t i = 0;
    if (t->date && !cont) {
        /* Llama 3.1+: the system block is always there, dated */
        put(b, "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
               "December 2023\nToday Date: ");
        put(b, t->date);
        put(b, "\n\n");
        if (n > 0 && ro[0] == R_SYSTEM) put_trimmed(b, m[i++].content);
        put(b, "<|eot_id|>");
    }
    for (; i < n; i++) {
        put(b, "<|start_header_id|>");
        put(b, role_name(ro[i]));
        put(b, "<|end_header_id|>\n\n");
        put_trimmed(b, m[i].content);
        put(b, "<|eot_id|>");
    }
}

static int render_mistral(sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                          const role *ro, size_t n, bool cont, sl_err *err)
{
    const bool v1 = t->family == SL_CHAT_MISTRAL;
    const char *system = NULL;
    for (size_t i = 0; i < n; i++) {
        switch (ro[i]) {
        case R_DEVELOPER: /* read as system (parse_roles) */
        case R_TOOL:      /* refused (parse_roles) */
        case R_SYSTEM:
            if (cont || i != 0)
                return sl_err_set(err, SL_EINVAL,
                                  "chat template %s accepts a system message only as the "
                                  "first message of a conversation (message %zu%s)",
                                  sl_chat_family_name(t->family), i,
                                  cont ? " of a continuation" : "");
            system = m[i].content;
            break;
        case R_USER:
            put(b, v1 ? " [INST] " : "[INST] ");
            if (system) {
                put(b, system);
                put(b, "\n\n");
                system = NULL;
            }
            put(b, m[i].content);
            put(b, v1 ? " [/INST]" : "[/INST]");
            break;
        case R_ASSISTANT:
            put(b, " ");
            if (v1) put(b, m[i].content);
            else put_trimmed(b, m[i].content);
            put(b, t->eos_text);
            break;
        }
    }
    return SL_OK;
}

static void render_tulu(sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                        const role *ro, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (ro[i]) {
        case R_DEVELOPER:
        case R_TOOL:
        case R_SYSTEM: put(b, "<|system|>\n"); break;
        case R_USER: put(b, "<|user|>\n"); break;
        case R_ASSISTANT: put(b, "<|assistant|>\n"); break;
        }
        put(b, m[i].content);
        if (ro[i] == R_ASSISTANT) {
            put(b, t->eos_text);
            if (i + 1 < n) put(b, "\n");
        } else {
            put(b, "\n");
        }
    }
}

static void render_plain(sbuf *b, const sl_chat_turn *m, const role *ro, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        put(b, ro[i] == R_SYSTEM ? "System: " : ro[i] == R_USER ? "User: " : "Assistant: ");
        put(b, m[i].content);
        put(b, "\n");
    }
}

static bool family_has_bos(sl_chat_family f)
{
    return f == SL_CHAT_LLAMA3 || f == SL_CHAT_MISTRAL || f == SL_CHAT_MISTRAL_V3 ||
           f == SL_CHAT_TULU || f == SL_CHAT_DEEPSEEK_V3 || f == SL_CHAT_DEEPSEEK_V31 ||
           f == SL_CHAT_DEEPSEEK_R1 || f == SL_CHAT_GEMMA4;
}

static int render(const sl_chat_template *t, const sl_chat_turn *msgs, size_t n,
                  const char *tools_json, bool gen, bool cont, char **out, sl_err *err)
{
    *out = NULL;
    json_t *tools = NULL;
    if (tools_json) {
        if (!family_has_tools(t->family))
            return sl_err_set(err, SL_EINVAL, "the chat template %s has no form for tools",
                              sl_chat_family_name(t->family));
        int prc = sl_json_parse(tools_json, strlen(tools_json), 64, &tools, err);
        if (prc) return prc;
        if (!json_is_array(tools)) {
            json_decref(tools);
            return sl_err_set(err, SL_EINVAL, "the tools are not a JSON array");
        }
        if (json_array_size(tools) == 0) {
            json_decref(tools);
            tools = NULL;
        }
    }
    role stack_roles[16];
    role *ro = n <= 16 ? stack_roles : malloc(n * sizeof *ro);
    if (!ro) {
        json_decref(tools);
        return sl_err_set(err, SL_ENOMEM, "chat: out of memory for %zu messages", n);
    }
    int rc = parse_roles(t, msgs, n, ro, err);
    sbuf b = {0};
    if (rc) goto done;

    if (cont) put(&b, t->turn_end);
    else if (family_has_bos(t->family)) put(&b, t->bos_text);

    switch (t->family) {
    case SL_CHAT_CHATML:
    case SL_CHAT_QWEN3:
        rc = render_chatml(&b, t, msgs, ro, n, cont, tools, err);
        if (gen) {
            put(&b, "<|im_start|>assistant\n");
            if (t->family == SL_CHAT_QWEN3 && !t->enable_thinking)
                put(&b, "<think>\n\n</think>\n\n");
            else if (t->think_prefix)
                put(&b, "<think>\n");
        }
        break;
    case SL_CHAT_QWEN35:
        rc = sl_chat_render_qwen35(&b, t, msgs, ro, n, cont, tools, err);
        if (gen)
            put(&b, t->enable_thinking ? "<|im_start|>assistant\n<think>\n"
                                       : "<|im_start|>assistant\n<think>\n\n</think>\n\n");
        break;
    case SL_CHAT_DEEPSEEK_V3:
    case SL_CHAT_DEEPSEEK_V31:
    case SL_CHAT_DEEPSEEK_R1:
        sl_chat_render_deepseek(&b, t, msgs, ro, n, cont, gen);
        break;
    case SL_CHAT_KIMI:
    case SL_CHAT_KIMI_THINKING:
        sl_chat_render_kimi(&b, t, msgs, ro, n, cont, gen);
        break;
    case SL_CHAT_GEMMA4:
        sl_chat_render_gemma4(&b, t, msgs, ro, n, cont, gen);
        break;
    case SL_CHAT_GLM4:
    case SL_CHAT_GLM47:
        sl_chat_render_glm(&b, t, msgs, ro, n, cont, gen);
        break;
    case SL_CHAT_HARMONY:
        rc = sl_chat_render_harmony(&b, t, msgs, ro, n, cont, tools, err);
        if (gen) put(&b, "<|start|>assistant");
        break;
    case SL_CHAT_LLAMA3:
        render_llama3(&b, t, msgs, ro, n, cont);
        if (gen) put(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case SL_CHAT_MISTRAL:
    case SL_CHAT_MISTRAL_V3:
        /* "[/INST]" already hands the turn to the assistant */
        rc = render_mistral(&b, t, msgs, ro, n, cont, err);
        break;
    case SL_CHAT_TULU:
        render_tulu(&b, t, msgs, ro, n);
        /* the template emits it inside its loop, so never for zero messages */
        if (gen && (n > 0 || cont)) put(&b, "<|assistant|>\n");
        break;
    case SL_CHAT_PLAIN:
        render_plain(&b, msgs, ro, n);
        if (gen) put(&b, "Assistant:");
        break;
    }
    if (!rc && b.oom) rc = sl_err_set(err, SL_ENOMEM, "chat: out of memory rendering the prompt");
    if (!rc && !b.p) put(&b, ""); /* an empty render is still a string */
    if (!rc && b.oom) rc = sl_err_set(err, SL_ENOMEM, "chat: out of memory rendering the prompt");
done:
    json_decref(tools);
    if (ro != stack_roles) free(ro);
    if (rc) {
        free(b.p);
        return rc;
    }
    *out = b.p;
    return SL_OK;
}

static int render_msgs(const sl_chat_template *t, const sl_chat_msg *msgs, size_t n, bool gen,
                       bool cont, char **out, sl_err *err)
{
    sl_chat_turn stack[16] = {{0}};
    sl_chat_turn *tu = n <= 16 ? stack : calloc(n, sizeof *tu);
    if (!tu) return sl_err_set(err, SL_ENOMEM, "chat: out of memory for %zu messages", n);
    for (size_t i = 0; i < n; i++) {
        memset(&tu[i], 0, sizeof tu[i]);
        tu[i].role = msgs[i].role;
        tu[i].content = msgs[i].content;
    }
    int rc = render(t, tu, n, NULL, gen, cont, out, err);
    if (tu != stack) free(tu);
    return rc;
}

int sl_chat_render(const sl_chat_template *t, const sl_chat_msg *msgs, size_t n,
                   bool add_generation_prompt, char **out, sl_err *err)
{
    return render_msgs(t, msgs, n, add_generation_prompt, false, out, err);
}

int sl_chat_render_continue(const sl_chat_template *t, const sl_chat_msg *msgs, size_t n,
                            bool add_generation_prompt, char **out, sl_err *err)
{
    return render_msgs(t, msgs, n, add_generation_prompt, true, out, err);
}

int sl_chat_render_turns(const sl_chat_template *t, const sl_chat_turn *turns, size_t n,
                         const char *tools_json, bool add_generation_prompt, bool cont,
                         char **out, sl_err *err)
{
    if (!turns && n) return sl_err_set(err, SL_EINVAL, "chat: NULL messages");
    return render(t, turns, n, tools_json, add_generation_prompt, cont, out, err);
}
