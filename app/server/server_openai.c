/* server_openai.c - the OpenAI-style endpoints of `sluice serve`
 * (/v1/chat/completions, /v1/completions, /v1/models, /health) and
 * llama-server's /tokenize and /detokenize.
 *
 * A generation request is checked here on the connection's thread (its
 * fields, the chat template, the prompt's length against the context) and
 * answered 400 when wrong; then it becomes a job for the slots. Its
 * formatter (below) turns the job's text into the API's bytes: for a
 * stream, one server-sent event per piece ("data: {chunk}"), a last chunk
 * with the finish reason, the usage chunk when stream_options.include_usage,
 * and "data: [DONE]"; otherwise the handler waits and answers one object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"
#include "server_req.h"

#define MSG_CAP 512

typedef struct oai_job {
    srv_split sp; /* first: the answer's parser, a forced call's opening */
    srv *s;
    char id[64];
    bool chat;
    bool stream;
    bool include_usage;
    bool think_enabled, think_inside, tools;
    int lp_next;            /* the first token whose logprobs no chunk carried yet */
} oai_job;

static const char *finish_name(srv_finish f)
{
    return f == SRV_FINISH_LENGTH ? "length" : "stop";
}

/* OpenAI's tool_calls array of the calls found (stream: with indexes). */
static json_t *tool_calls_json(const oai_job *a, const sl_answer_call *calls, int n, bool stream)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
        char id[96];
        snprintf(id, sizeof id, "call_%s_%d", a->id, i);
        json_t *c = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type", "function",
                              "function", "name", calls[i].name, "arguments",
                              calls[i].arguments);
        if (c && stream) json_object_set_new(c, "index", json_integer(i));
        json_array_append_new(arr, c);
    }
    return arr;
}

static json_t *usage_obj(const srv_job *j)
{
    return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", j->n_prompt,
                     "completion_tokens", j->n_gen, "total_tokens", j->n_prompt + j->n_gen,
                     "prompt_tokens_details", "cached_tokens", j->n_cached);
}

void srv_emit_framed(srv_job *j, const char *head, json_t *v, const char *tail)
{
    char *t = v ? sl_json_dump_text(v, false) : NULL;
    json_decref(v);
    const size_t nh = strlen(head), nt = strlen(tail), n = t ? strlen(t) : 0;
    char *piece = t ? malloc(nh + n + nt) : NULL;
    if (piece) {
        memcpy(piece, head, nh);
        memcpy(piece + nh, t, n);
        memcpy(piece + nh + n, tail, nt);
        srv_job_emit(j, piece, nh + n + nt);
    } else {
        j->oom = true;
    }
    free(piece);
    free(t);
}

void srv_emit_data(srv_job *j, json_t *v)
{
    srv_emit_framed(j, "data: ", v, "\n\n");
}

/* The logprobs of tokens v[from..to) in the API's form, or null when they
 * were not asked for. text_base: where their text starts (completions). */
static json_t *logprobs_of(const srv_job *j, int from, int to, size_t text_base)
{
    const oai_job *a = j->api;
    if (j->lps.n_top < 0) return json_null();
    if (a->chat) return json_pack("{s:o}", "content", srv_lps_chat(a->s->m, &j->lps, from, to));
    return srv_lps_completion(a->s->m, &j->lps, from, to, text_base);
}

/* One streamed chunk: delta (chat: steals it) or text (completion), with
 * lp (stolen; NULL: null) as its logprobs. */
static json_t *chunk(const srv_job *j, json_t *delta, const char *text, size_t len,
                     const char *finish, json_t *lp)
{
    const oai_job *a = j->api;
    if (!lp) lp = json_null();
    json_t *choice = a->chat
        ? json_pack("{s:i, s:o, s:o, s:o}", "index", 0, "delta", delta, "logprobs", lp,
                    "finish_reason", finish ? json_string(finish) : json_null())
        : json_pack("{s:i, s:s%, s:o, s:o}", "index", 0, "text", text ? text : "",
                    text ? len : 0, "logprobs", lp, "finish_reason",
                    finish ? json_string(finish) : json_null());
    return json_pack("{s:s, s:s, s:i, s:s, s:[o]}", "id", a->id, "object",
                     a->chat ? "chat.completion.chunk" : "text_completion", "created",
                     (json_int_t)a->s->created, "model", a->s->model_name, "choices", choice);
}

static void fmt_begin(srv_job *j)
{
    const oai_job *a = j->api;
    if (a->stream && a->chat)
        srv_emit_data(j, chunk(j, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL,
                            0, NULL, NULL));
}

/* A chat delta of reasoning or content, with the logprobs of the tokens
 * sent since the last chunk. */
static void chat_delta(void *ud, bool reasoning, const char *text, size_t len)
{
    srv_job *j = ud;
    oai_job *a = j->api;
    json_t *lp = logprobs_of(j, a->lp_next, j->lps.n_sent, 0);
    a->lp_next = j->lps.n_sent;
    srv_emit_data(j, chunk(j, json_pack("{s:s%}", reasoning ? "reasoning_content" : "content", text,
                                     len), NULL, 0, NULL, lp));
}

static void fmt_piece(srv_job *j, const char *text, size_t len)
{
    oai_job *a = j->api;
    if (!a->stream) return;
    if (a->chat) {
        sl_answer_feed(a->sp.ans, text, len);
        return;
    }
    json_t *lp = logprobs_of(j, a->lp_next, j->lps.n_sent, j->text_len - len);
    a->lp_next = j->lps.n_sent;
    srv_emit_data(j, chunk(j, NULL, text, len, NULL, lp));
}

static void fmt_end(srv_job *j)
{
    const oai_job *a = j->api;
    if (!a->stream) return;
    if (j->finish == SRV_FINISH_ERROR) {
        srv_emit_data(j, srv_error(SRV_API_OPENAI, 500, "generation failed: %s", j->error).body);
    } else if (j->finish != SRV_FINISH_CANCELLED) {
        const char *f = finish_name(j->finish);
        if (a->chat) {
            oai_job *w = j->api;
            sl_answer_finish(w->sp.ans);
            int nc;
            const sl_answer_call *cs = srv_split_calls(&w->sp, &nc);
            if (nc) {
                srv_emit_data(j, chunk(j, json_pack("{s:o}", "tool_calls",
                                                 tool_calls_json(w, cs, nc, true)),
                                    NULL, 0, NULL, NULL));
                f = "tool_calls";
            }
        }
        srv_emit_data(j, a->chat ? chunk(j, json_object(), NULL, 0, f, NULL)
                              : chunk(j, NULL, "", 0, f, NULL));
        if (a->include_usage) {
            json_t *u = chunk(j, a->chat ? json_object() : NULL, "", 0, NULL, NULL);
            json_array_clear(json_object_get(u, "choices"));
            json_object_set_new(u, "usage", usage_obj(j));
            srv_emit_data(j, u);
        }
    }
    srv_job_emit(j, "data: [DONE]\n\n", 14);
}

static const srv_format oai_format = {fmt_begin, fmt_piece, fmt_end};

/* The chat answer's message object: content, and reasoning_content when
 * there was any; *calls: it holds tool calls (its finish reason). */
static json_t *chat_message(const srv_job *j, bool *calls_out)
{
    const oai_job *a = j->api;
    sl_answer_text b;
    sl_answer *t = sl_answer_whole(&b, a->s->harmony, a->think_enabled, a->think_inside,
                                   a->tools, a->sp.prime, j->text, j->text_len);
    int nc = 0;
    const sl_answer_call *cs = t ? sl_answer_calls(t, &nc) : NULL;
    bool calls = nc > 0;
    *calls_out = calls;
    if (calls) /* the text around calls: trailing blank space dropped */
        while (b.n[0] && strchr(" \t\r\n", b.p[0][b.n[0] - 1])) b.n[0]--;
    json_t *m = b.oom ? NULL
                      : json_pack("{s:s, s:o}", "role", "assistant", "content",
                                  calls && !b.n[0] ? json_null()
                                                   : json_stringn(b.p[0] ? b.p[0] : "", b.n[0]));
    if (m && b.n[1]) json_object_set_new(m, "reasoning_content", json_stringn(b.p[1], b.n[1]));
    if (m && calls) json_object_set_new(m, "tool_calls", tool_calls_json(a, cs, nc, false));
    sl_answer_free(t);
    sl_answer_text_free(&b);
    return m;
}

srv_reply srv_health(srv *s)
{
    (void)s;
    return (srv_reply){200, json_pack("{s:s}", "status", "ok"), NULL};
}

/* The model's object of /v1/models. */
static json_t *model_obj(srv *s)
{
    json_t *meta = json_pack("{s:s, s:i, s:i, s:i, s:i}", "arch", sl_model_arch_name(s->m),
                             "n_ctx", s->n_ctx, "n_ctx_train", sl_model_n_ctx_train(s->m),
                             "n_vocab", sl_model_n_vocab(s->m), "n_slots", s->pool.n_slots);
    /* Anthropic's model fields too (type, display_name, created_at), for
     * its SDK's models.list; OpenAI clients ignore them */
    char when[32] = "1970-01-01T00:00:00Z";
    struct tm tm;
    time_t t = (time_t)s->created;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:s, s:s, s:i, s:s, s:o, s:s, s:s, s:s}", "id", s->model_name, "object",
                     "model", "created", (json_int_t)s->created, "owned_by", "sluice", "meta",
                     meta, "type", "model", "display_name", s->model_name, "created_at", when);
}

srv_reply srv_models(srv *s)
{
    json_t *o = json_pack("{s:s, s:[o], s:b, s:s, s:s}", "object", "list", "data", model_obj(s),
                          "has_more", 0, "first_id", s->model_name, "last_id", s->model_name);
    return o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
}

srv_reply srv_model_one(srv *s, const char *id)
{
    if (strcmp(id, s->model_name)) {
        srv_reply r = srv_error(SRV_API_OPENAI, 404, "the model '%.200s' does not exist: this "
                                "server has '%.200s'", id, s->model_name);
        json_t *e = json_object_get(r.body, "error");
        if (e) json_object_set_new(e, "code", json_string("model_not_found"));
        return r;
    }
    json_t *o = model_obj(s);
    return o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
}

/* Queues the job of an OpenAI request and answers (streaming, or
 * waiting for the whole answer). */
static srv_reply generate(srv *s, const json_t *body, const char *prompt, bool chat,
                          bool think_enabled, bool think_inside, bool tools, size_t prime_len)
{
    char msg[MSG_CAP] = "";
    bool stream = false, include_usage = false;
    if (!req_bool(body, "stream", &stream, msg, sizeof msg))
        return srv_error(SRV_API_OPENAI, 400, "%s", msg);
    const json_t *so = json_object_get(body, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so))
            return srv_error(SRV_API_OPENAI, 400, "'stream_options' must be an object");
        if (!req_bool(so, "include_usage", &include_usage, msg, sizeof msg))
            return srv_error(SRV_API_OPENAI, 400, "stream_options.%s", msg);
    }
    if (!req_refuse_unsupported(body, chat, msg, sizeof msg))
        return srv_error(SRV_API_OPENAI, 400, "%s", msg);
    /* logprobs: chat {logprobs: true, top_logprobs: 0..20}; completions
     * {logprobs: 0..20} (alternatives per token) */
    long n_top = -1;
    if (chat) {
        bool want = false;
        long top = -1;
        if (!req_bool(body, "logprobs", &want, msg, sizeof msg) ||
            !req_int(body, "top_logprobs", 0, SRV_MAX_TOP_LOGPROBS, &top, msg, sizeof msg))
            return srv_error(SRV_API_OPENAI, 400, "%s", msg);
        if (top >= 0 && !want)
            return srv_error(SRV_API_OPENAI, 400, "'top_logprobs' needs 'logprobs': true");
        if (want) n_top = top < 0 ? 0 : top;
    } else if (!req_int(body, "logprobs", 0, SRV_MAX_TOP_LOGPROBS, &n_top, msg, sizeof msg)) {
        return srv_error(SRV_API_OPENAI, 400, "%s", msg);
    }
    srv_job *j;
    srv_reply r = srv_prepare_job(s, SRV_API_OPENAI, body, prompt, chat, "stop", &j);
    if (r.status) return r;
    j->lps.n_top = (int)n_top;
    oai_job *a = srv_split_job_new(j, sizeof *a, &oai_format, prompt, prime_len, SRV_API_OPENAI, &r);
    if (!a) return r;
    a->s = s;
    a->chat = chat;
    a->stream = stream;
    a->include_usage = include_usage;
    a->think_enabled = think_enabled;
    a->think_inside = think_inside;
    a->tools = tools;
    if (srv_split_start(&a->sp, s, think_enabled, think_inside, tools, chat_delta, j)) {
        srv_job_unref(j);
        return srv_error(SRV_API_OPENAI, 500, "out of memory");
    }
    snprintf(a->id, sizeof a->id, "%s-%lu", chat ? "chatcmpl" : "cmpl",
             __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED));
    if (srv_answer_job(s, SRV_API_OPENAI, j, stream, &r)) return r;
    const char *text = j->text ? j->text : "";
    bool calls = false;
    json_t *message = chat ? chat_message(j, &calls) : NULL; /* the answer parsed once */
    json_t *choice = chat
        ? json_pack("{s:i, s:o, s:o, s:s}", "index", 0, "message", message,
                    "logprobs", logprobs_of(j, 0, j->lps.n_sent, 0), "finish_reason",
                    calls ? "tool_calls" : finish_name(j->finish))
        : json_pack("{s:i, s:s%, s:o, s:s}", "index", 0, "text", text, j->text_len,
                    "logprobs", logprobs_of(j, 0, j->lps.n_sent, 0), "finish_reason",
                    finish_name(j->finish));
    json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:[o], s:o}", "id", a->id, "object",
                          chat ? "chat.completion" : "text_completion", "created",
                          (json_int_t)s->created, "model", s->model_name, "choices", choice,
                          "usage", usage_obj(j));
    r = o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
    srv_job_unref(j);
    return r;
}

srv_reply srv_chat_completions(srv *s, json_t *body)
{
    char *prompt = NULL;
    bool tools = false;
    size_t prime = 0;
    srv_reply r = srv_render_chat(s, SRV_API_OPENAI, NULL, json_object_get(body, "messages"),
                                  body, &tools, &prompt, &prime);
    if (r.status) return r;
    /* reasoning apart when the template knows thinking, unless
     * reasoning_format is "none" (llama-server's switch) */
    const char *rf = NULL;
    size_t rfl = 0;
    char msg[MSG_CAP];
    if (!req_str(body, "reasoning_format", &rf, &rfl, msg, sizeof msg)) {
        free(prompt);
        return srv_error(SRV_API_OPENAI, 400, "%s", msg);
    }
    bool inside = false;
    bool enabled = srv_prompt_thinks(s, prompt, prime, &inside) && !(rf && !strcmp(rf, "none"));
    r = generate(s, body, prompt, true, enabled, enabled && inside, tools, prime);
    free(prompt);
    return r;
}

srv_reply srv_completions(srv *s, json_t *body)
{
    const json_t *p = json_object_get(body, "prompt");
    if (json_is_array(p) && json_array_size(p) == 1) p = json_array_get(p, 0);
    if (!json_is_string(p))
        return srv_error(SRV_API_OPENAI, 400, "'prompt' must be a string (or an array of one)");
    if (memchr(json_string_value(p), 0, json_string_length(p)))
        return srv_error(SRV_API_OPENAI, 400, "'prompt' holds a NUL character");
    return generate(s, body, json_string_value(p), false, false, false, false, 0);
}

srv_reply srv_apply_template(srv *s, json_t *body)
{
    char *prompt = NULL;
    srv_reply r = srv_render_chat(s, SRV_API_OPENAI, NULL, json_object_get(body, "messages"),
                                  body, NULL, &prompt, NULL);
    if (r.status) return r;
    json_t *o = json_pack("{s:s}", "prompt", prompt);
    free(prompt);
    return o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
}

srv_reply srv_tokenize(srv *s, json_t *body)
{
    char msg[MSG_CAP];
    const char *text = NULL;
    size_t len = 0;
    bool add_special = false, parse_special = true, with_pieces = false;
    if (!req_str(body, "content", &text, &len, msg, sizeof msg) ||
        !req_bool(body, "add_special", &add_special, msg, sizeof msg) ||
        !req_bool(body, "parse_special", &parse_special, msg, sizeof msg) ||
        !req_bool(body, "with_pieces", &with_pieces, msg, sizeof msg))
        return srv_error(SRV_API_OPENAI, 400, "%s", msg);
    if (!text) return srv_error(SRV_API_OPENAI, 400, "'content' (a string) is required");
    unsigned flags = (parse_special ? SL_TOKENIZE_PARSE_SPECIAL : 0u) |
                     (add_special && sl_model_add_bos(s->m) ? SL_TOKENIZE_ADD_BOS : 0u);
    int32_t *ids = NULL;
    sl_err err = {0};
    int n = gen_tokenize(s->m, text, len, flags, &ids, &err);
    if (n < 0) return srv_error(SRV_API_OPENAI, 400, "cannot tokenize: %s", err.msg);
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
        if (!with_pieces) {
            json_array_append_new(arr, json_integer(ids[i]));
            continue;
        }
        size_t pl = 0;
        const char *piece = sl_token_piece(s->m, ids[i], true, &pl);
        json_t *pv = json_stringn(piece ? piece : "", pl);
        if (!pv) { /* a fragment of a character: its bytes */
            pv = json_array();
            for (size_t b = 0; b < pl; b++)
                json_array_append_new(pv, json_integer((unsigned char)piece[b]));
        }
        json_array_append_new(arr, json_pack("{s:i, s:o}", "id", ids[i], "piece", pv));
    }
    free(ids);
    json_t *o = json_pack("{s:o}", "tokens", arr);
    return o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
}

srv_reply srv_detokenize(srv *s, json_t *body)
{
    const json_t *t = json_object_get(body, "tokens");
    if (!json_is_array(t))
        return srv_error(SRV_API_OPENAI, 400, "'tokens' (an array of token ids) is required");
    size_t n = json_array_size(t);
    if (n > (1u << 24)) return srv_error(SRV_API_OPENAI, 400, "'tokens' holds more than 2^24 ids");
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return srv_error(SRV_API_OPENAI, 500, "out of memory");
    const int n_tok = sl_model_n_tokens(s->m);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(t, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= n_tok) {
            free(ids);
            return srv_error(SRV_API_OPENAI, 400, "tokens[%zu] must be a token id from 0 to %d",
                             i, n_tok - 1);
        }
        ids[i] = (int32_t)json_integer_value(e);
    }
    sl_err err = {0};
    int len = sl_detokenize(s->m, ids, (int)n, NULL, 0, 0, &err);
    char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (len < 0 || !buf ||
        sl_detokenize(s->m, ids, (int)n, buf, (size_t)len + 1, 0, &err) != len) {
        free(ids);
        free(buf);
        return srv_error(SRV_API_OPENAI, len < 0 ? 400 : 500, "cannot detokenize: %s",
                         len < 0 ? err.msg : "out of memory");
    }
    free(ids);
    json_t *o = json_pack("{s:s%}", "content", buf, (size_t)len);
    free(buf);
    return o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
}
