/* server_anthropic.c - the Anthropic Messages endpoints of `sluice serve`:
 * POST /v1/messages and /v1/messages/count_tokens.
 *
 * A request: max_tokens (required), system (a string or text blocks),
 * messages of user/assistant turns whose content is a string or text
 * blocks, stop_sequences, temperature, top_p, top_k, stream; tools
 * ({name, description, input_schema}), tool_choice, and tool_use /
 * tool_result blocks, converted to OpenAI's form for srv_render_chat
 * (assistant tool_calls, tool messages). The answer is one message object,
 * or, streamed, the events message_start, content_block_start,
 * content_block_delta (text_delta) per piece, content_block_stop,
 * message_delta (stop_reason, usage), message_stop; each as
 * "event: NAME" and "data: {json}". Usage: input_tokens are the prompt
 * tokens evaluated, cache_read_input_tokens those reused from the slot.
 * On a thinking template (as the chat endpoint decides) the reasoning is
 * split off: with "thinking": {"type": "enabled"} it comes first as a
 * thinking block (thinking_delta events, an empty signature), else it is
 * left out; blocks are opened as their text arrives (thinking, text, then
 * one tool_use block per call). Earlier turns' thinking blocks are
 * dropped, as Anthropic's API drops them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "server_req.h"

#define MSG_CAP 512

typedef struct ant_job {
    srv_split sp; /* first: the answer's parser, a forced call's opening */
    srv *s;
    char id[64];
    bool stream;
    bool tools;        /* the request declared tools: calls are parsed out */
    bool split;        /* the answer goes through sl_answer (tools, harmony, thinking) */
    bool think_enabled, think_inside; /* the template thinks (as the chat endpoint's) */
    bool show_thinking; /* "thinking": {"type": "enabled"}: reasoning as thinking blocks,
                           else it is left out */
    bool calls;        /* the answer held tool calls */
    int open_kind;     /* stream: the open content block: 0 none, 1 thinking, 2 text */
    int n_blocks;      /* stream: content blocks started */
} ant_job;

static const char *stop_reason(const srv_job *j)
{
    const ant_job *a = j->api;
    if (a->calls) return "tool_use";
    if (j->finish == SRV_FINISH_LENGTH) return "max_tokens";
    return j->matched_stop >= 0 ? "stop_sequence" : "end_turn";
}

static json_t *stop_sequence(const srv_job *j)
{
    return j->finish == SRV_FINISH_STOP && j->matched_stop >= 0
               ? json_string(j->stops[j->matched_stop])
               : json_null();
}

static json_t *usage_obj(const srv_job *j, bool input_only)
{
    return json_pack("{s:i, s:i, s:i, s:i}", "input_tokens", j->n_prompt - j->n_cached,
                     "cache_creation_input_tokens", 0, "cache_read_input_tokens", j->n_cached,
                     "output_tokens", input_only ? 0 : j->n_gen);
}

/* "event: NAME\ndata: JSON\n\n" (steals v). */
static void emit(srv_job *j, const char *name, json_t *v)
{
    char head[64];
    snprintf(head, sizeof head, "event: %s\ndata: ", name);
    srv_emit_framed(j, head, v, "\n\n");
}

static json_t *message_obj(const srv_job *j, json_t *content, bool started)
{
    const ant_job *a = j->api;
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "id", a->id, "type", "message",
                     "role", "assistant", "model", a->s->model_name, "content", content,
                     "stop_reason", started ? json_null() : json_string(stop_reason(j)),
                     "stop_sequence", started ? json_null() : stop_sequence(j), "usage",
                     usage_obj(j, started));
}

static void fmt_begin(srv_job *j)
{
    const ant_job *a = j->api;
    if (!a->stream) return;
    /* the worker calls begin once the slot has found its prefix, so
     * message_start's usage has the split of cached and new input */
    emit(j, "message_start", json_pack("{s:s, s:o}", "type", "message_start", "message",
                                       message_obj(j, json_array(), true)));
}

/* Streaming: closes the open content block, if any. */
static void close_block(srv_job *j)
{
    ant_job *a = j->api;
    if (!a->open_kind) return;
    emit(j, "content_block_stop", json_pack("{s:s, s:i}", "type", "content_block_stop", "index",
                                            a->n_blocks - 1));
    a->open_kind = 0;
}

/* Streaming: makes the open block one of kind (1 thinking, 2 text),
 * closing another first. */
static void open_block(srv_job *j, int kind)
{
    ant_job *a = j->api;
    if (a->open_kind == kind) return;
    close_block(j);
    emit(j, "content_block_start",
         kind == 1 ? json_pack("{s:s, s:i, s:{s:s, s:s, s:s}}", "type", "content_block_start",
                               "index", a->n_blocks, "content_block", "type", "thinking",
                               "thinking", "", "signature", "")
                   : json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_start", "index",
                               a->n_blocks, "content_block", "type", "text", "text", ""));
    a->n_blocks++;
    a->open_kind = kind;
}

/* A text (or, reasoning, thinking) delta in its own block. */
static void text_delta(srv_job *j, bool reasoning, const char *text, size_t len)
{
    ant_job *a = j->api;
    open_block(j, reasoning ? 1 : 2);
    emit(j, "content_block_delta", json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type",
                                             "content_block_delta", "index", a->n_blocks - 1,
                                             "delta", "type", reasoning ? "thinking_delta"
                                                                        : "text_delta",
                                             reasoning ? "thinking" : "text", text, len));
}

/* sl_answer's output while streaming: reasoning only when asked for */
static void answer_out(void *ud, bool reasoning, const char *text, size_t len)
{
    srv_job *j = ud;
    const ant_job *a = j->api;
    if (len && (!reasoning || a->show_thinking)) text_delta(j, reasoning, text, len);
}

static void fmt_piece(srv_job *j, const char *text, size_t len)
{
    ant_job *a = j->api;
    if (!a->stream) return;
    if (a->split) sl_answer_feed(a->sp.ans, text, len);
    else if (len) text_delta(j, false, text, len);
}

static void call_id(const ant_job *a, int i, char *id, size_t cap)
{
    snprintf(id, cap, "toolu_%s_%d", a->id, i);
}

static void fmt_end(srv_job *j)
{
    const ant_job *a = j->api;
    if (!a->stream) return;
    if (j->finish == SRV_FINISH_ERROR) {
        emit(j, "error", srv_error(SRV_API_ANTHROPIC, 500, "generation failed: %s", j->error).body);
        return;
    }
    if (j->finish == SRV_FINISH_CANCELLED) return;
    ant_job *w = j->api;
    if (w->split) sl_answer_finish(w->sp.ans);
    int nc;
    const sl_answer_call *cs = srv_split_calls(&w->sp, &nc);
    if (!w->n_blocks && !nc) open_block(j, 2); /* an empty answer: one empty text */
    close_block(j);
    for (int i = 0; i < nc; i++) {
        const sl_answer_call *c = &cs[i];
        char id[96];
        call_id(w, i, id, sizeof id);
        w->calls = true;
        emit(j, "content_block_start", json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:{}}}", "type",
                                                 "content_block_start", "index", w->n_blocks,
                                                 "content_block", "type", "tool_use", "id", id,
                                                 "name", c->name, "input"));
        emit(j, "content_block_delta", json_pack("{s:s, s:i, s:{s:s, s:s}}", "type",
                                                 "content_block_delta", "index", w->n_blocks, "delta",
                                                 "type", "input_json_delta", "partial_json",
                                                 c->arguments));
        emit(j, "content_block_stop", json_pack("{s:s, s:i}", "type", "content_block_stop",
                                                "index", w->n_blocks));
        w->n_blocks++;
    }
    emit(j, "message_delta", json_pack("{s:s, s:{s:s, s:o}, s:o}", "type", "message_delta",
                                       "delta", "stop_reason", stop_reason(j), "stop_sequence",
                                       stop_sequence(j), "usage", usage_obj(j, false)));
    emit(j, "message_stop", json_pack("{s:s}", "type", "message_stop"));
}

static const srv_format ant_format = {fmt_begin, fmt_piece, fmt_end};

/* The text of a tool_result block's content: a string or text blocks. */
static json_t *result_text(const json_t *c)
{
    if (json_is_string(c)) return json_copy((json_t *)c);
    json_t *parts = json_array();
    size_t i;
    const json_t *p;
    json_array_foreach(c, i, p) {
        const json_t *t = json_object_get(p, "text");
        if (json_is_string(t)) json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text",
                                                                       "text", t));
    }
    return parts;
}

/* Anthropic messages and tools in OpenAI's form (new references in *msgs
 * and *oai_body), or a 400. Blocks of types text, tool_use (assistant) and
 * tool_result (user) are taken; a tool_result becomes a tool message. */
static srv_reply convert(const json_t *body, json_t **msgs, json_t **oai_body)
{
    *msgs = json_array();
    *oai_body = json_object();
    const json_t *in = json_object_get(body, "messages");
    if (!json_is_array(in)) return (srv_reply){0, NULL, NULL}; /* srv_render_chat says why */
    size_t i;
    const json_t *m;
    json_array_foreach(in, i, m) {
        const json_t *role = json_object_get(m, "role"), *c = json_object_get(m, "content");
        if (!json_is_object(m) || !json_is_string(role) || !json_is_array(c)) {
            json_array_append(*msgs, (json_t *)m); /* checked there */
            continue;
        }
        bool assistant = !strcmp(json_string_value(role), "assistant");
        json_t *text = json_array(), *calls = json_array();
        size_t k;
        const json_t *blk;
        json_array_foreach(c, k, blk) {
            const json_t *ty = json_object_get(blk, "type");
            const char *t = json_is_string(ty) ? json_string_value(ty) : "";
            if (!strcmp(t, "tool_use") && assistant) {
                const json_t *id = json_object_get(blk, "id"), *name = json_object_get(blk, "name");
                const json_t *input = json_object_get(blk, "input");
                if (!json_is_string(id) || !json_is_string(name) || !json_is_object(input)) {
                    json_decref(text);
                    json_decref(calls);
                    return srv_error(SRV_API_ANTHROPIC, 400, "messages[%zu].content[%zu]: a "
                                     "tool_use block needs a string id and name and an object "
                                     "input", i, k);
                }
                json_array_append_new(calls, json_pack("{s:O, s:s, s:{s:O, s:O}}", "id", id,
                                                       "type", "function", "function", "name",
                                                       name, "arguments", input));
            } else if (!strcmp(t, "tool_result") && !assistant) {
                const json_t *id = json_object_get(blk, "tool_use_id");
                const json_t *rc = json_object_get(blk, "content");
                if (!json_is_string(id) || (rc && !json_is_string(rc) && !json_is_array(rc))) {
                    json_decref(text);
                    json_decref(calls);
                    return srv_error(SRV_API_ANTHROPIC, 400, "messages[%zu].content[%zu]: a "
                                     "tool_result block needs a string tool_use_id and a "
                                     "string or text-block content", i, k);
                }
                json_array_append_new(*msgs, json_pack("{s:s, s:O, s:o}", "role", "tool",
                                                       "tool_call_id", id, "content",
                                                       rc ? result_text(rc) : json_string("")));
            } else if ((!strcmp(t, "thinking") || !strcmp(t, "redacted_thinking")) && assistant) {
                /* earlier turns' thinking: dropped, as Anthropic's API drops it */
            } else {
                json_array_append(text, (json_t *)blk); /* text, or refused there */
            }
        }
        if (json_array_size(text) || json_array_size(calls) || !json_array_size(c)) {
            json_t *om = json_pack("{s:O, s:o}", "role", role, "content", text);
            if (json_array_size(calls)) json_object_set(om, "tool_calls", calls);
            json_array_append_new(*msgs, om);
        } else {
            json_decref(text);
        }
        json_decref(calls);
    }
    const json_t *tools = json_object_get(body, "tools");
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools))
            return srv_error(SRV_API_ANTHROPIC, 400, "'tools' must be an array");
        json_t *ot = json_array();
        const json_t *t;
        json_array_foreach(tools, i, t) {
            const json_t *name = json_object_get(t, "name"), *sch = json_object_get(t, "input_schema");
            const json_t *d = json_object_get(t, "description");
            if (!json_is_object(t) || !json_is_string(name) || (sch && !json_is_object(sch))) {
                json_decref(ot);
                return srv_error(SRV_API_ANTHROPIC, 400, "tools[%zu] must be an object with a "
                                 "string 'name' and an object 'input_schema'", i);
            }
            json_t *f = json_pack("{s:O}", "name", name);
            if (json_is_string(d)) json_object_set(f, "description", (json_t *)d);
            if (sch) json_object_set(f, "parameters", (json_t *)sch);
            json_array_append_new(ot, json_pack("{s:s, s:o}", "type", "function", "function", f));
        }
        json_object_set_new(*oai_body, "tools", ot);
    }
    const json_t *tc = json_object_get(body, "tool_choice");
    if (tc && !json_is_null(tc)) {
        const json_t *ty = json_object_get(tc, "type");
        if (!json_is_object(tc) || !json_is_string(ty))
            return srv_error(SRV_API_ANTHROPIC, 400, "'tool_choice' must be an object with a "
                             "'type'");
        const char *t = json_string_value(ty);
        if (strcmp(t, "auto") && strcmp(t, "any") && strcmp(t, "tool") && strcmp(t, "none"))
            return srv_error(SRV_API_ANTHROPIC, 400, "tool_choice.type '%.20s' is not auto, any, "
                             "tool or none", t);
        json_t *oc; /* OpenAI's form: any -> required, tool -> that function */
        if (!strcmp(t, "tool")) {
            const json_t *nm = json_object_get(tc, "name");
            if (!json_is_string(nm))
                return srv_error(SRV_API_ANTHROPIC, 400, "tool_choice of type 'tool' needs a "
                                 "string 'name'");
            oc = json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name", nm);
        } else {
            oc = json_string(!strcmp(t, "any") ? "required" : !strcmp(t, "none") ? "none" : "auto");
        }
        json_object_set_new(*oai_body, "tool_choice", oc);
    }
    return (srv_reply){0, NULL, NULL};
}

/* Renders the request's system and messages into *prompt. */
static srv_reply render(srv *s, const json_t *body, bool *has_tools, char **prompt,
                        size_t *prime_len)
{
    json_t *msgs = NULL, *ob = NULL;
    srv_reply r = convert(body, &msgs, &ob);
    if (!r.status)
        r = srv_render_chat(s, SRV_API_ANTHROPIC, json_object_get(body, "system"),
                            json_is_array(json_object_get(body, "messages")) ? msgs
                                                                              : json_object_get(body, "messages"),
                            ob, has_tools, prompt, prime_len);
    json_decref(msgs);
    json_decref(ob);
    return r;
}

srv_reply srv_messages(srv *s, json_t *body)
{
    char msg[MSG_CAP] = "";
    bool stream = false;
    if (!req_bool(body, "stream", &stream, msg, sizeof msg))
        return srv_error(SRV_API_ANTHROPIC, 400, "%s", msg);
    const json_t *mt = json_object_get(body, "max_tokens");
    if (!json_is_integer(mt) || json_integer_value(mt) < 1)
        return srv_error(SRV_API_ANTHROPIC, 400, "'max_tokens' (an integer >= 1) is required");
    char *prompt = NULL;
    bool tools = false;
    size_t prime_len = 0;
    srv_reply r = render(s, body, &tools, &prompt, &prime_len);
    if (r.status) return r;
    srv_job *j;
    r = srv_prepare_job(s, SRV_API_ANTHROPIC, body, prompt, true, "stop_sequences", &j);
    /* a thinking template (as the chat endpoint decides): reasoning apart */
    bool inside = false;
    const bool think = srv_prompt_thinks(s, prompt, prime_len, &inside);
    ant_job *a = r.status ? NULL
                          : srv_split_job_new(j, sizeof *a, &ant_format, prompt, prime_len,
                                              SRV_API_ANTHROPIC, &r);
    free(prompt);
    if (!a) return r;
    const json_t *th = json_object_get(body, "thinking");
    const json_t *tht = json_is_object(th) ? json_object_get(th, "type") : NULL;
    if (th && !json_is_null(th) && !json_is_string(tht)) {
        srv_job_unref(j);
        return srv_error(SRV_API_ANTHROPIC, 400, "'thinking' must be an object with a 'type' "
                         "(enabled or disabled)");
    }
    a->s = s;
    a->stream = stream;
    a->tools = tools;
    a->think_enabled = think;
    a->think_inside = think && inside;
    a->show_thinking = tht && !strcmp(json_string_value(tht), "enabled");
    a->split = tools || s->harmony || think;
    if (srv_split_start(&a->sp, s, a->think_enabled, a->think_inside, tools, answer_out, j)) {
        srv_job_unref(j);
        return srv_error(SRV_API_ANTHROPIC, 500, "out of memory");
    }
    snprintf(a->id, sizeof a->id, "msg_%lu", __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED));
    if (srv_answer_job(s, SRV_API_ANTHROPIC, j, stream, &r)) return r;
    json_t *content = json_array();
    if (a->split) {
        sl_answer_text b;
        sl_answer *t = sl_answer_whole(&b, s->harmony, a->think_enabled, a->think_inside,
                                       a->tools, a->sp.prime, j->text, j->text_len);
        int nc = 0;
        const sl_answer_call *cs = t ? sl_answer_calls(t, &nc) : NULL;
        if (a->show_thinking && b.n[1])
            json_array_append_new(content, json_pack("{s:s, s:s%, s:s}", "type", "thinking",
                                                     "thinking", b.p[1], b.n[1], "signature",
                                                     ""));
        if (nc) /* the text before calls: trailing blank space dropped */
            while (b.n[0] && strchr(" \t\r\n", b.p[0][b.n[0] - 1])) b.n[0]--;
        if (b.n[0] || nc == 0)
            json_array_append_new(content, json_pack("{s:s, s:s%}", "type", "text", "text",
                                                     b.p[0] ? b.p[0] : "", b.n[0]));
        for (int i = 0; i < nc; i++) {
            char id[96];
            call_id(a, i, id, sizeof id);
            json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:o}", "type",
                                                     "tool_use", "id", id, "name",
                                                     cs[i].name, "input",
                                                     srv_call_args_json(&cs[i])));
        }
        a->calls = nc > 0;
        sl_answer_free(t);
        sl_answer_text_free(&b);
    } else {
        json_array_append_new(content, json_pack("{s:s, s:s%}", "type", "text", "text",
                                                 j->text ? j->text : "", j->text_len));
    }
    json_t *o = message_obj(j, content, false);
    r = o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_ANTHROPIC, 500, "out of memory");
    srv_job_unref(j);
    return r;
}

srv_reply srv_count_tokens(srv *s, json_t *body)
{
    char *prompt = NULL;
    srv_reply r = render(s, body, NULL, &prompt, NULL);
    if (r.status) return r;
    sl_err err = {0};
    int32_t *ids = NULL;
    unsigned flags = SL_TOKENIZE_PARSE_SPECIAL | (sl_model_add_bos(s->m) ? SL_TOKENIZE_ADD_BOS : 0u);
    int n = gen_tokenize(s->m, prompt, strlen(prompt), flags, &ids, &err);
    free(prompt);
    free(ids);
    if (n < 0) return srv_error(SRV_API_ANTHROPIC, 400, "cannot tokenize the prompt: %s", err.msg);
    return (srv_reply){200, json_pack("{s:i}", "input_tokens", n), NULL};
}
