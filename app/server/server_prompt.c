/* server_prompt.c - turning a request into a job, for every API of
 * `sluice serve` (server.h): messages rendered with the model's chat
 * template, the prompt tokenized and checked against a slot's context,
 * sampling, limits and stop texts read from the body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "server_req.h"

#define MSG_CAP 512

/* The text of a message's content: a string, or an array of parts of
 * which the {"type": "text"} ones count. *out is malloc'd. */
static bool content_text(const json_t *c, int idx, char **out, char *msg)
{
    char where[48];
    if (idx < 0) snprintf(where, sizeof where, "system");
    else snprintf(where, sizeof where, "messages[%d].content", idx);
    if (!c || json_is_null(c)) {
        *out = strdup("");
        return *out != NULL;
    }
    if (json_is_string(c)) {
        if (memchr(json_string_value(c), 0, json_string_length(c))) {
            snprintf(msg, MSG_CAP, "%s holds a NUL character", where);
            return false;
        }
        *out = strdup(json_string_value(c));
        return *out != NULL;
    }
    if (!json_is_array(c)) {
        snprintf(msg, MSG_CAP, "%s must be a string or an array of parts, got %s", where,
                 req_type_name(c));
        return false;
    }
    size_t total = 1, i;
    const json_t *p;
    json_array_foreach(c, i, p) {
        const json_t *t = json_object_get(p, "type"), *x = json_object_get(p, "text");
        if (!json_is_object(p) || !json_is_string(t)) {
            snprintf(msg, MSG_CAP, "%s[%zu] must be an object with a 'type'", where, i);
            return false;
        }
        if (strcmp(json_string_value(t), "text")) {
            const char *ty = json_string_value(t);
            bool media = !strcmp(ty, "image_url") || !strcmp(ty, "image") ||
                         !strcmp(ty, "input_audio") || !strcmp(ty, "document") ||
                         !strcmp(ty, "file");
            snprintf(msg, MSG_CAP, "%s[%zu] is a part of type '%.40s': %s (only 'text' parts)",
                     where, i, ty, media ? "this server's models read text only, not images, "
                     "audio or files" : "not supported");
            return false;
        }
        if (!json_is_string(x) || memchr(json_string_value(x), 0, json_string_length(x))) {
            snprintf(msg, MSG_CAP, "%s[%zu].text must be a string", where, i);
            return false;
        }
        total += json_string_length(x);
    }
    char *buf = malloc(total);
    if (!buf) return false;
    size_t n = 0;
    json_array_foreach(c, i, p) {
        const json_t *x = json_object_get(p, "text");
        memcpy(buf + n, json_string_value(x), json_string_length(x));
        n += json_string_length(x);
    }
    buf[n] = '\0';
    *out = buf;
    return true;
}

/* An assistant message's tool_calls (OpenAI: [{id, type, function: {name,
 * arguments}}], arguments a JSON string or object) into calls[]; the
 * argument texts of objects (Ollama's and Anthropic's form) are dumped into
 * *owned (freed by the caller). */
static bool read_calls(const json_t *tc, size_t idx, sl_chat_tool_call **calls, size_t *n,
                       char ***owned, size_t *n_owned, char *msg)
{
    *calls = NULL;
    *n = 0;
    if (!tc || json_is_null(tc)) return true;
    if (!json_is_array(tc) || json_array_size(tc) > 64) {
        snprintf(msg, MSG_CAP, "messages[%zu].tool_calls must be an array (of at most 64)", idx);
        return false;
    }
    if (json_array_size(tc) == 0) return true;
    *calls = calloc(json_array_size(tc), sizeof **calls);
    char **o = realloc(*owned, (*n_owned + json_array_size(tc)) * sizeof *o);
    if (!*calls || !o) {
        if (o) *owned = o;
        snprintf(msg, MSG_CAP, "out of memory");
        return false;
    }
    *owned = o;
    size_t i;
    const json_t *c;
    json_array_foreach(tc, i, c) {
        const json_t *f = json_object_get(c, "function");
        const json_t *name = json_object_get(f, "name"), *args = json_object_get(f, "arguments");
        const json_t *id = json_object_get(c, "id");
        if (!json_is_object(f) || !json_is_string(name) ||
            !(json_is_string(args) || json_is_object(args))) {
            snprintf(msg, MSG_CAP, "messages[%zu].tool_calls[%zu] must have a function with a "
                     "string 'name' and 'arguments' (a JSON string or an object)", idx, i);
            return false;
        }
        (*calls)[i].id = json_is_string(id) ? json_string_value(id) : NULL;
        (*calls)[i].name = json_string_value(name);
        if (json_is_string(args)) {
            (*calls)[i].arguments = json_string_value(args);
        } else {
            /* as a template's tojson writes it: ", " and ": " between items */
            char *t = json_dumps(args, JSON_REAL_PRECISION(15));
            if (!t) {
                snprintf(msg, MSG_CAP, "out of memory");
                return false;
            }
            (*owned)[(*n_owned)++] = t;
            (*calls)[i].arguments = t;
        }
        (*n)++;
    }
    return true;
}

/* The tools of body as JSON text for the template (NULL: none), after
 * checking their shape. */
static bool read_tools(const json_t *body, char **out, char *msg)
{
    *out = NULL;
    const json_t *tools = json_object_get(body, "tools");
    if (!tools || json_is_null(tools)) return true;
    if (!json_is_array(tools)) {
        snprintf(msg, MSG_CAP, "'tools' must be an array, got %s", req_type_name(tools));
        return false;
    }
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        const json_t *f = json_object_get(t, "function");
        const json_t *ty = json_object_get(t, "type");
        if (!json_is_object(t) || !json_is_string(ty) || strcmp(json_string_value(ty), "function") ||
            !json_is_object(f) || !json_is_string(json_object_get(f, "name"))) {
            snprintf(msg, MSG_CAP, "tools[%zu] must be {\"type\": \"function\", \"function\": "
                     "{\"name\": ...}}", i);
            return false;
        }
        const json_t *params = json_object_get(f, "parameters");
        if (params && !json_is_null(params) && !json_is_object(params)) {
            snprintf(msg, MSG_CAP, "tools[%zu].function.parameters must be an object", i);
            return false;
        }
    }
    const json_t *choice = json_object_get(body, "tool_choice");
    if (choice && !json_is_null(choice)) {
        if (json_is_string(choice)) {
            const char *c = json_string_value(choice);
            if (!strcmp(c, "none")) return true;
            if (strcmp(c, "auto") && strcmp(c, "required")) {
                snprintf(msg, MSG_CAP, "'tool_choice' '%.20s' is not none, auto, required or "
                         "a function", c);
                return false;
            }
        } else if (!json_is_object(choice)) {
            snprintf(msg, MSG_CAP, "'tool_choice' must be a string or an object");
            return false;
        }
    }
    if (json_array_size(tools) == 0) return true;
    *out = sl_json_dump_text(tools, false);
    if (!*out) {
        snprintf(msg, MSG_CAP, "out of memory");
        return false;
    }
    return true;
}

/* What a forcing tool_choice asks: 0 nothing (absent, auto, none), 1 a
 * call of any tool ("required"), 2 a call of *name (an object naming one of
 * tools). False with msg on a malformed choice or an unknown name. */
static bool forced_choice(const json_t *body, int *mode, const char **name, char *msg)
{
    *mode = 0;
    *name = NULL;
    const json_t *c = json_object_get(body, "tool_choice");
    const json_t *tools = json_object_get(body, "tools");
    if (!c || json_is_null(c) || !json_is_array(tools) || json_array_size(tools) == 0) return true;
    if (json_is_string(c)) {
        if (!strcmp(json_string_value(c), "required")) *mode = 1;
        return true;
    }
    const json_t *f = json_object_get(c, "function");
    const json_t *nm = json_object_get(f, "name");
    const json_t *ty = json_object_get(c, "type");
    if (!json_is_string(ty) || strcmp(json_string_value(ty), "function") || !json_is_string(nm)) {
        snprintf(msg, MSG_CAP, "'tool_choice' as an object must be {\"type\": \"function\", "
                 "\"function\": {\"name\": ...}}");
        return false;
    }
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        const json_t *tn = json_object_get(json_object_get(t, "function"), "name");
        if (json_is_string(tn) && !strcmp(json_string_value(tn), json_string_value(nm))) {
            *mode = 2;
            *name = json_string_value(nm);
            return true;
        }
    }
    snprintf(msg, MSG_CAP, "'tool_choice' names the function '%.80s', which is not in 'tools'",
             json_string_value(nm));
    return false;
}

/* Appends the opening of a forced call to *prompt (an open <think> block
 * closed first); its length in *len. False when out of memory. */
static bool add_prime(char **prompt, sl_chat_family fam, int mode, const char *name, size_t *len)
{
    const size_t pl = strlen(*prompt);
    const bool think_open = (pl >= 8 && !memcmp(*prompt + pl - 8, "<think>\n", 8)) ||
                            (pl >= 7 && !memcmp(*prompt + pl - 7, "<think>", 7));
    char *nm = NULL;
    if (mode == 2) { /* the name as a JSON string (XML form: as it is) */
        json_t *js = json_string(name);
        nm = js ? (fam == SL_CHAT_QWEN35 ? strdup(name) : json_dumps(js, JSON_ENCODE_ANY | JSON_ENSURE_ASCII)) : NULL;
        json_decref(js);
        if (!nm) return false;
    }
    char tail[512];
    int n;
    if (fam == SL_CHAT_QWEN35)
        n = snprintf(tail, sizeof tail, "%s<tool_call>\n%s%s%s", think_open ? "\n</think>\n\n" : "",
                     nm ? "<function=" : "", nm ? nm : "", nm ? ">\n" : "");
    else
        n = snprintf(tail, sizeof tail, "%s<tool_call>\n%s%s%s", think_open ? "\n</think>\n\n" : "",
                     nm ? "{\"name\": " : "", nm ? nm : "", nm ? ", \"arguments\": " : "");
    free(nm);
    if (n < 0 || (size_t)n >= sizeof tail) return false;
    char *np = realloc(*prompt, pl + (size_t)n + 1);
    if (!np) return false;
    memcpy(np + pl, tail, (size_t)n + 1);
    *prompt = np;
    *len = (size_t)n;
    return true;
}

srv_reply srv_render_chat(srv *s, srv_api api, const json_t *system, const json_t *messages,
                          const json_t *body, bool *has_tools, char **prompt, size_t *prime_len)
{
    int forced = 0;
    const char *forced_name = NULL;
    if (prime_len) *prime_len = 0;
    char msg[MSG_CAP] = "";
    if (has_tools) *has_tools = false;
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return srv_error(api, 400, "'messages' must be a non-empty array");
    const size_t n_sys = system && !json_is_null(system) ? 1 : 0;
    size_t n = json_array_size(messages) + n_sys;
    if (n > 100000) return srv_error(api, 400, "'messages' holds more than 100000");
    sl_chat_turn *msgs = calloc(n, sizeof *msgs);
    char **texts = calloc(n, sizeof *texts);
    char **owned = NULL, *tools = NULL;
    size_t n_owned = 0;
    srv_reply r = {0, NULL, NULL};
    const char *effort = NULL; /* NULL, -1: the chat's own */
    int thinking = -1;
    const sl_chat_family fam = sl_chat_family_of(s->chat);
    if (!msgs || !texts) {
        r = srv_error(api, 500, "out of memory");
        goto out;
    }
    if (body) {
        const char *eff = NULL;
        size_t el = 0;
        if (!req_str(body, "reasoning_effort", &eff, &el, msg, sizeof msg)) {
            r = srv_error(api, 400, "%s", msg);
            goto out;
        }
        if (eff) {
            /* OpenAI's levels; harmony has low, medium and high: the others
             * go to the nearest (other templates have no effort) */
            static const char *const levels[][2] = {{"none", "low"}, {"minimal", "low"},
                                                    {"low", "low"}, {"medium", "medium"},
                                                    {"high", "high"}, {"xhigh", "high"}};
            size_t k = 0;
            while (k < sizeof levels / sizeof levels[0] && strcmp(eff, levels[k][0])) k++;
            if (k == sizeof levels / sizeof levels[0]) {
                r = srv_error(api, 400, "'reasoning_effort' must be none, minimal, low, medium, "
                              "high or xhigh, got '%.20s'", eff);
                goto out;
            }
            effort = levels[k][1];
        }
        const json_t *kw = json_object_get(body, "chat_template_kwargs");
        if (kw && !json_is_null(kw)) {
            bool think = s->thinking;
            if (!json_is_object(kw) ||
                !req_bool(kw, "enable_thinking", &think, msg, sizeof msg)) {
                r = srv_error(api, 400, "'chat_template_kwargs' must be an object (of which "
                              "'enable_thinking', true or false, is read)%s%s",
                              msg[0] ? ": " : "", msg);
                goto out;
            }
            thinking = think;
        }
        if (!read_tools(body, &tools, msg)) {
            r = srv_error(api, 400, "%s", msg);
            goto out;
        }
        if (tools && !sl_chat_takes_tools(s->chat)) {
            r = srv_error(api, 400, "the chat template %s has no form for tools",
                          sl_chat_family_name(fam));
            goto out;
        }
        if (tools && !forced_choice(body, &forced, &forced_name, msg)) {
            r = srv_error(api, 400, "%s", msg);
            goto out;
        }
        if (forced && fam != SL_CHAT_CHATML && fam != SL_CHAT_QWEN3 && fam != SL_CHAT_QWEN35) {
            r = srv_error(api, 400, "a forcing 'tool_choice' needs a chat template with "
                          "<tool_call> calls (chatml, qwen3, qwen35), not %s: use \"auto\"",
                          sl_chat_family_name(fam));
            goto out;
        }
    }
    if (n_sys) {
        if (!content_text(system, -1, &texts[0], msg)) {
            r = texts[0] || msg[0] ? srv_error(api, 400, "%s", msg)
                                   : srv_error(api, 500, "out of memory");
            goto out;
        }
        msgs[0].role = "system";
        msgs[0].content = texts[0];
    }
    for (size_t i = n_sys; i < n; i++) {
        const json_t *m = json_array_get(messages, i - n_sys);
        const json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role)) {
            r = srv_error(api, 400, "messages[%zu] must be an object with a string "
                          "'role'", i - n_sys);
            goto out;
        }
        const char *rs = json_string_value(role);
        bool is_tool = !strcmp(rs, "tool");
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") &&
            strcmp(rs, "developer") && !is_tool) {
            r = srv_error(api, 400, "messages[%zu].role '%.40s' is not supported "
                          "(system, developer, user, assistant, tool)", i - n_sys, rs);
            goto out;
        }
        if (!content_text(json_object_get(m, "content"), (int)(i - n_sys), &texts[i], msg)) {
            r = texts[i] || msg[0] ? srv_error(api, 400, "%s", msg)
                                   : srv_error(api, 500, "out of memory");
            goto out;
        }
        msgs[i].role = rs;
        msgs[i].content = texts[i];
        if (!strcmp(rs, "assistant")) {
            const json_t *rc = json_object_get(m, "reasoning_content");
            if (json_is_string(rc)) msgs[i].reasoning = json_string_value(rc);
            sl_chat_tool_call *calls = NULL;
            if (!read_calls(json_object_get(m, "tool_calls"), i - n_sys, &calls,
                            &msgs[i].n_tool_calls, &owned, &n_owned, msg)) {
                free(calls);
                r = srv_error(api, strcmp(msg, "out of memory") ? 400 : 500, "%s", msg);
                goto out;
            }
            msgs[i].tool_calls = calls;
        }
        if (is_tool) {
            /* the function's name: the earlier call with this id, or the name field */
            const json_t *id = json_object_get(m, "tool_call_id"), *nm = json_object_get(m, "name");
            if (json_is_string(nm)) msgs[i].name = json_string_value(nm);
            for (size_t k = i; k-- > n_sys && json_is_string(id) && !msgs[i].name;)
                for (size_t c = 0; c < msgs[k].n_tool_calls; c++)
                    if (msgs[k].tool_calls[c].id &&
                        !strcmp(msgs[k].tool_calls[c].id, json_string_value(id)))
                        msgs[i].name = msgs[k].tool_calls[c].name;
        }
    }
    sl_err err = {0};
    if (sl_chat_format_turns(s->chat, msgs, n, tools, thinking, effort, true, prompt, &err))
        r = srv_error(api, err.code == SL_ENOMEM ? 500 : 400,
                      "the messages do not fit the chat template %s: %s",
                      sl_chat_family_name(fam), err.msg);
    else if (forced && !add_prime(prompt, fam, forced, forced_name,
                                  prime_len ? prime_len : &(size_t){0}))
        r = srv_error(api, 500, "out of memory");
    if (!r.status && has_tools)
        *has_tools = tools != NULL;
out:
    for (size_t i = 0; texts && i < n; i++) free(texts[i]);
    for (size_t i = 0; msgs && i < n; i++) free((void *)msgs[i].tool_calls);
    for (size_t i = 0; i < n_owned; i++) free(owned[i]);
    free(owned);
    free(tools);
    free(texts);
    free(msgs);
    return r;
}

srv_reply srv_prepare_job(srv *s, srv_api api, const json_t *body, const char *prompt, bool chat,
                          const char *stop_key, srv_job **out)
{
    char msg[MSG_CAP] = "";
    *out = NULL;
    sl_sampling_params sp = s->sp;
    if (!req_sampling(body, &sp, msg, sizeof msg)) return srv_error(api, 400, "%s", msg);
    sl_err err = {0};
    int32_t *ids = NULL;
    unsigned flags = SL_TOKENIZE_PARSE_SPECIAL | (sl_model_add_bos(s->m) ? SL_TOKENIZE_ADD_BOS : 0u);
    int n = gen_tokenize(s->m, prompt, strlen(prompt), flags, &ids, &err);
    if (n < 0) return srv_error(api, 400, "cannot tokenize the prompt: %s", err.msg);
    if (n == 0) {
        free(ids);
        return srv_error(api, 400, "the prompt is empty");
    }
    srv_job *j = srv_job_new(ids, n);
    if (!j) {
        free(ids);
        return srv_error(api, 500, "out of memory");
    }
    j->chat = chat;
    j->sp = sp;
    bool truncate = false;
    if (!req_limits(body, j, s->n_predict, stop_key, msg, sizeof msg) ||
        !req_bool(body, "truncate", &truncate, msg, sizeof msg)) {
        srv_job_unref(j);
        return srv_error(api, 400, "%s", msg);
    }
    if (j->max_tokens > s->n_ctx) {
        const int asked = j->max_tokens;
        srv_job_unref(j);
        return srv_error(api, 400, "'max_tokens' is %d but a slot's context holds %d tokens, the "
                         "prompt's %d included: ask for at most %d (the answer then stops when "
                         "the context is full), or start the server with a larger -c",
                         asked, s->n_ctx, n, s->n_ctx);
    }
    if (n > s->n_ctx && !truncate) {
        srv_job_unref(j);
        /* OpenAI's wording and code, which clients (litellm, LibreChat) map
         * to their context-window error */
        srv_reply r = srv_error(api, 400, "This model's maximum context length is %d tokens (a "
                                "slot's -c), but the prompt has %d tokens: shorten it, or send "
                                "\"truncate\": true to keep its last tokens", s->n_ctx, n);
        json_t *e = api == SRV_API_OPENAI ? json_object_get(r.body, "error") : NULL;
        if (e) json_object_set_new(e, "code", json_string("context_length_exceeded"));
        return r;
    }
    if (n > s->n_ctx) {
        /* as `sluice run --truncate`: BOS (if the prompt starts with it) and
         * the last tokens, leaving min(max tokens, half the context) free */
        int room = j->max_tokens < 0 || j->max_tokens > s->n_ctx / 2 ? s->n_ctx / 2 : j->max_tokens;
        int keep = s->n_ctx - room > 0 ? s->n_ctx - room : 1;
        int32_t bos = sl_model_token_bos(s->m);
        if ((flags & SL_TOKENIZE_ADD_BOS) && ids[0] == bos && keep >= 2)
            memmove(ids + 1, ids + n - (keep - 1), (size_t)(keep - 1) * sizeof *ids);
        else
            memmove(ids, ids + n - keep, (size_t)keep * sizeof *ids);
        j->n_ids = keep;
        j->truncated_from = n;
    }
    *out = j;
    return (srv_reply){0, NULL, NULL};
}

bool srv_prompt_thinks(const srv *s, const char *prompt, size_t prime_len, bool *inside)
{
    bool in = false; /* the template's own end, before a forced call */
    const bool thinks = sl_answer_thinks(sl_chat_family_of(s->chat), prompt, strlen(prompt) - prime_len, &in);
    if (inside) *inside = in;
    return thinks;
}

void *srv_split_job_new(srv_job *j, size_t size, const srv_format *fmt, const char *prompt,
                        size_t prime_len, srv_api api, srv_reply *r)
{
    srv_split *sp = calloc(1, size);
    if (sp && prime_len && !(sp->prime = strdup(prompt + strlen(prompt) - prime_len))) {
        free(sp);
        sp = NULL;
    }
    if (!sp) {
        srv_job_unref(j);
        *r = srv_error(api, 500, "out of memory");
        return NULL;
    }
    j->api = sp;
    j->api_free = srv_split_job_free;
    j->fmt = fmt;
    return sp;
}

int srv_split_start(srv_split *sp, const srv *s, bool think_enabled, bool think_inside,
                    bool tools, sl_answer_out out, void *ud)
{
    if (sl_answer_create(&sp->ans, s->harmony, think_enabled, think_inside, tools, out, ud))
        return SL_ENOMEM;
    if (sp->prime) sl_answer_feed(sp->ans, sp->prime, strlen(sp->prime));
    return SL_OK;
}

const sl_answer_call *srv_split_calls(const srv_split *sp, int *n)
{
    *n = 0;
    return sp->ans ? sl_answer_calls(sp->ans, n) : NULL;
}

json_t *srv_call_args_json(const sl_answer_call *c)
{
    json_t *v = NULL;
    sl_err err = {0};
    if (sl_json_parse(c->arguments, strlen(c->arguments), SL_JSON_MAX_DEPTH, &v, &err) ||
        !json_is_object(v)) {
        json_decref(v);
        return json_object();
    }
    return v;
}

void srv_split_job_free(void *job)
{
    srv_split *sp = job;
    if (sp) {
        sl_answer_free(sp->ans);
        free(sp->prime);
    }
    free(job);
}

bool srv_answer_job(srv *s, srv_api api, srv_job *j, bool stream, srv_reply *r)
{
    if (!srv_pool_submit(&s->pool, j)) {
        srv_job_unref(j);
        *r = srv_error(api, 503, "every slot is busy and the queue is full; try again later");
        return true;
    }
    if (stream) {
        *r = (srv_reply){200, NULL, j};
        return true;
    }
    srv_job_wait(j);
    if (j->finish != SRV_FINISH_ERROR && j->finish != SRV_FINISH_CANCELLED) return false;
    *r = j->finish == SRV_FINISH_ERROR
        ? srv_error(api, 500, "generation failed: %s", j->error)
        : srv_error(api, 503, "the server is stopping");
    srv_job_unref(j);
    return true;
}
