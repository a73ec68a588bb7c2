/* server_anthropic.c - the Anthropic Messages endpoints of `sluice serve`:
 * POST /v1/messages and /v1/messages/count_tokens.
 *
 * A request: max_tokens (required), system (a string or text blocks),
 * messages of user/assistant turns whose content is a string or text
 * blocks, stop_sequences, temperature, top_p, top_k, stream. Tool blocks
 * are refused (400) in this increment. The answer is one message object,
 * or, streamed, the events message_start, content_block_start,
 * content_block_delta (text_delta) per piece, content_block_stop,
 * message_delta (stop_reason, usage), message_stop; each as
 * "event: NAME" and "data: {json}". Usage: input_tokens are the prompt
 * tokens evaluated, cache_read_input_tokens those reused from the slot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "server_req.h"

#define MSG_CAP 512

typedef struct ant_job {
    srv *s;
    char id[64];
    bool stream;
} ant_job;

static const char *stop_reason(const srv_job *j)
{
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
    char *t = v ? sl_json_dump_text(v, false) : NULL;
    json_decref(v);
    if (!t) {
        j->oom = true;
        return;
    }
    size_t ln = strlen(name), n = strlen(t);
    char *ev = malloc(ln + n + 17);
    if (ev) {
        int k = snprintf(ev, ln + n + 17, "event: %s\ndata: %s\n\n", name, t);
        srv_job_emit(j, ev, (size_t)k);
    } else {
        j->oom = true;
    }
    free(ev);
    free(t);
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
    /* n_cached is known once the slot has looked at its prefix: the
     * worker calls begin before that, so message_start counts the whole
     * prompt as input; message_delta's usage has the split */
    emit(j, "message_start", json_pack("{s:s, s:o}", "type", "message_start", "message",
                                       message_obj(j, json_array(), true)));
    emit(j, "content_block_start", json_pack("{s:s, s:i, s:{s:s, s:s}}", "type",
                                             "content_block_start", "index", 0, "content_block",
                                             "type", "text", "text", ""));
}

static void fmt_piece(srv_job *j, const char *text, size_t len)
{
    const ant_job *a = j->api;
    if (!a->stream) return;
    emit(j, "content_block_delta", json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type",
                                             "content_block_delta", "index", 0, "delta", "type",
                                             "text_delta", "text", text, len));
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
    emit(j, "content_block_stop", json_pack("{s:s, s:i}", "type", "content_block_stop", "index", 0));
    emit(j, "message_delta", json_pack("{s:s, s:{s:s, s:o}, s:o}", "type", "message_delta",
                                       "delta", "stop_reason", stop_reason(j), "stop_sequence",
                                       stop_sequence(j), "usage", usage_obj(j, false)));
    emit(j, "message_stop", json_pack("{s:s}", "type", "message_stop"));
}

static const srv_format ant_format = {fmt_begin, fmt_piece, fmt_end};

/* Renders the request's system and messages into *prompt. */
static srv_reply render(srv *s, const json_t *body, char **prompt)
{
    const json_t *tools = json_object_get(body, "tools");
    if (json_is_array(tools) && json_array_size(tools) > 0)
        return srv_error(SRV_API_ANTHROPIC, 400, "'tools' are not supported yet by this server");
    return srv_render_chat(s, SRV_API_ANTHROPIC, json_object_get(body, "system"),
                           json_object_get(body, "messages"), NULL, NULL, prompt);
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
    srv_reply r = render(s, body, &prompt);
    if (r.status) return r;
    srv_job *j;
    r = srv_prepare_job(s, SRV_API_ANTHROPIC, body, prompt, true, "stop_sequences", &j);
    free(prompt);
    if (r.status) return r;
    ant_job *a = calloc(1, sizeof *a);
    if (!a) {
        srv_job_unref(j);
        return srv_error(SRV_API_ANTHROPIC, 500, "out of memory");
    }
    j->api = a;
    j->api_free = free;
    j->fmt = &ant_format;
    a->s = s;
    a->stream = stream;
    snprintf(a->id, sizeof a->id, "msg_%lu", __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED));
    if (!srv_pool_submit(&s->pool, j)) {
        srv_job_unref(j);
        return srv_error(SRV_API_ANTHROPIC, 503, "every slot is busy and the queue is full; "
                         "try again later");
    }
    if (stream) return (srv_reply){200, NULL, j};
    srv_job_wait(j);
    if (j->finish == SRV_FINISH_ERROR) {
        r = srv_error(SRV_API_ANTHROPIC, 500, "generation failed: %s", j->error);
    } else if (j->finish == SRV_FINISH_CANCELLED) {
        r = srv_error(SRV_API_ANTHROPIC, 503, "the server is stopping");
    } else {
        json_t *content = json_pack("[{s:s, s:s%}]", "type", "text", "text",
                                    j->text ? j->text : "", j->text_len);
        json_t *o = message_obj(j, content, false);
        r = o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_ANTHROPIC, 500, "out of memory");
    }
    srv_job_unref(j);
    return r;
}

srv_reply srv_count_tokens(srv *s, json_t *body)
{
    char *prompt = NULL;
    srv_reply r = render(s, body, &prompt);
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
