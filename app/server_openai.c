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
#include "server_think.h"
#include "util/escape.h"

#define MSG_CAP 512

typedef struct oai_job {
    srv *s;
    char id[64];
    bool chat;
    bool stream;
    bool include_usage;
    srv_think think;        /* chat: reasoning apart from content (stream) */
    bool think_enabled, think_inside;
    int lp_next;            /* the first token whose logprobs no chunk carried yet */
} oai_job;

static const char *finish_name(srv_finish f)
{
    return f == SRV_FINISH_LENGTH ? "length" : "stop";
}

static json_t *usage_obj(const srv_job *j)
{
    return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", j->n_prompt,
                     "completion_tokens", j->n_gen, "total_tokens", j->n_prompt + j->n_gen,
                     "prompt_tokens_details", "cached_tokens", j->n_cached);
}

/* "data: JSON\n\n" (steals v). */
static void emit_event(srv_job *j, json_t *v)
{
    char *t = v ? sl_json_dump_text(v, false) : NULL;
    json_decref(v);
    if (!t) {
        j->oom = true;
        return;
    }
    size_t n = strlen(t);
    char *ev = malloc(n + 9);
    if (!ev) {
        free(t);
        j->oom = true;
        return;
    }
    memcpy(ev, "data: ", 6);
    memcpy(ev + 6, t, n);
    memcpy(ev + 6 + n, "\n\n", 2);
    srv_job_emit(j, ev, n + 8);
    free(ev);
    free(t);
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
        emit_event(j, chunk(j, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL,
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
    emit_event(j, chunk(j, json_pack("{s:s%}", reasoning ? "reasoning_content" : "content", text,
                                     len), NULL, 0, NULL, lp));
}

static void fmt_piece(srv_job *j, const char *text, size_t len)
{
    oai_job *a = j->api;
    if (!a->stream) return;
    if (a->chat) {
        srv_think_feed(&a->think, text, len, chat_delta, j);
        return;
    }
    json_t *lp = logprobs_of(j, a->lp_next, j->lps.n_sent, j->text_len - len);
    a->lp_next = j->lps.n_sent;
    emit_event(j, chunk(j, NULL, text, len, NULL, lp));
}

static void fmt_end(srv_job *j)
{
    const oai_job *a = j->api;
    if (!a->stream) return;
    if (j->finish == SRV_FINISH_ERROR) {
        emit_event(j, srv_error(SRV_API_OPENAI, 500, "generation failed: %s", j->error).body);
    } else if (j->finish != SRV_FINISH_CANCELLED) {
        if (a->chat) srv_think_flush(&((oai_job *)j->api)->think, chat_delta, j);
        const char *f = finish_name(j->finish);
        emit_event(j, a->chat ? chunk(j, json_object(), NULL, 0, f, NULL)
                              : chunk(j, NULL, "", 0, f, NULL));
        if (a->include_usage) {
            json_t *u = chunk(j, a->chat ? json_object() : NULL, "", 0, NULL, NULL);
            json_array_clear(json_object_get(u, "choices"));
            json_object_set_new(u, "usage", usage_obj(j));
            emit_event(j, u);
        }
    }
    srv_job_emit(j, "data: [DONE]\n\n", 14);
}

static const srv_format oai_format = {fmt_begin, fmt_piece, fmt_end};

/* The whole answer split into reasoning and content (the same splitter
 * as the stream's). */
typedef struct split_buf {
    char *p[2];      /* [0] content, [1] reasoning */
    size_t n[2];
    bool oom;
} split_buf;

static void collect(void *ud, bool reasoning, const char *text, size_t len)
{
    split_buf *b = ud;
    int k = reasoning ? 1 : 0;
    char *np = realloc(b->p[k], b->n[k] + len + 1);
    if (!np) {
        b->oom = true;
        return;
    }
    memcpy(np + b->n[k], text, len);
    b->n[k] += len;
    np[b->n[k]] = '\0';
    b->p[k] = np;
}

/* The chat answer's message object: content, and reasoning_content when
 * there was any. */
static json_t *chat_message(const srv_job *j)
{
    const oai_job *a = j->api;
    split_buf b = {{NULL, NULL}, {0, 0}, false};
    srv_think t;
    srv_think_init(&t, a->think_enabled, a->think_inside);
    srv_think_feed(&t, j->text ? j->text : "", j->text_len, collect, &b);
    srv_think_flush(&t, collect, &b);
    json_t *m = b.oom ? NULL
                      : json_pack("{s:s, s:s%}", "role", "assistant", "content",
                                  b.p[0] ? b.p[0] : "", b.n[0]);
    if (m && b.n[1]) json_object_set_new(m, "reasoning_content", json_stringn(b.p[1], b.n[1]));
    free(b.p[0]);
    free(b.p[1]);
    return m;
}

srv_reply srv_health(srv *s)
{
    (void)s;
    return (srv_reply){200, json_pack("{s:s}", "status", "ok"), NULL};
}

srv_reply srv_models(srv *s)
{
    json_t *meta = json_pack("{s:s, s:i, s:i, s:i, s:i}", "arch", sl_model_arch_name(s->m),
                             "n_ctx", s->n_ctx, "n_ctx_train", sl_model_n_ctx_train(s->m),
                             "n_vocab", sl_model_n_vocab(s->m), "n_slots", s->pool.n_slots);
    json_t *model = json_pack("{s:s, s:s, s:i, s:s, s:o}", "id", s->model_name, "object", "model",
                              "created", (json_int_t)s->created, "owned_by", "sluice", "meta",
                              meta);
    return (srv_reply){200, json_pack("{s:s, s:[o]}", "object", "list", "data", model), NULL};
}

static void oai_free(void *p)
{
    free(p);
}

/* Queues the job of an OpenAI request and answers (streaming, or
 * waiting for the whole answer). */
static srv_reply generate(srv *s, const json_t *body, const char *prompt, bool chat,
                          bool think_enabled, bool think_inside)
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
    long n_choices = 1;
    if (!req_int(body, "n", 1, 1, &n_choices, msg, sizeof msg))
        return srv_error(SRV_API_OPENAI, 400, "%s (one choice per request)", msg);
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
    oai_job *a = calloc(1, sizeof *a);
    if (!a) {
        srv_job_unref(j);
        return srv_error(SRV_API_OPENAI, 500, "out of memory");
    }
    j->api = a;
    j->api_free = oai_free;
    j->fmt = &oai_format;
    a->s = s;
    a->chat = chat;
    a->stream = stream;
    a->include_usage = include_usage;
    a->think_enabled = think_enabled;
    a->think_inside = think_inside;
    srv_think_init(&a->think, think_enabled, think_inside);
    snprintf(a->id, sizeof a->id, "%s-%lu", chat ? "chatcmpl" : "cmpl",
             __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED));
    if (!srv_pool_submit(&s->pool, j)) {
        srv_job_unref(j);
        return srv_error(SRV_API_OPENAI, 503, "every slot is busy and the queue is full; "
                         "try again later");
    }
    if (stream) return (srv_reply){200, NULL, j};

    srv_job_wait(j);
    if (j->finish == SRV_FINISH_ERROR) {
        r = srv_error(SRV_API_OPENAI, 500, "generation failed: %s", j->error);
    } else if (j->finish == SRV_FINISH_CANCELLED) {
        r = srv_error(SRV_API_OPENAI, 503, "the server is stopping");
    } else {
        const char *text = j->text ? j->text : "";
        json_t *choice = chat
            ? json_pack("{s:i, s:o, s:o, s:s}", "index", 0, "message", chat_message(j),
                        "logprobs", logprobs_of(j, 0, j->lps.n_sent, 0), "finish_reason",
                        finish_name(j->finish))
            : json_pack("{s:i, s:s%, s:o, s:s}", "index", 0, "text", text, j->text_len,
                        "logprobs", logprobs_of(j, 0, j->lps.n_sent, 0), "finish_reason",
                        finish_name(j->finish));
        json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:[o], s:o}", "id", a->id, "object",
                              chat ? "chat.completion" : "text_completion", "created",
                              (json_int_t)s->created, "model", s->model_name, "choices", choice,
                              "usage", usage_obj(j));
        r = o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
    }
    srv_job_unref(j);
    return r;
}

srv_reply srv_chat_completions(srv *s, json_t *body)
{
    const json_t *tools = json_object_get(body, "tools");
    if (json_is_array(tools) && json_array_size(tools) > 0)
        return srv_error(SRV_API_OPENAI, 400, "'tools' are not supported yet by this server");
    char *prompt = NULL;
    srv_reply r = srv_render_chat(s, SRV_API_OPENAI, NULL, json_object_get(body, "messages"),
                                  &prompt);
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
    size_t pl = strlen(prompt);
    bool inside = (pl >= 8 && !memcmp(prompt + pl - 8, "<think>\n", 8)) ||
                  (pl >= 7 && !memcmp(prompt + pl - 7, "<think>", 7));
    bool enabled = !(rf && !strcmp(rf, "none")) &&
                   (inside || !strcmp(sl_chat_name(s->chat), "qwen3"));
    r = generate(s, body, prompt, true, enabled, enabled && inside);
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
    return generate(s, body, json_string_value(p), false, false, false);
}

srv_reply srv_apply_template(srv *s, json_t *body)
{
    char *prompt = NULL;
    srv_reply r = srv_render_chat(s, SRV_API_OPENAI, NULL, json_object_get(body, "messages"),
                                  &prompt);
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
