/* server_llama.c - llama-server's own endpoints of `sluice serve`, for the
 * front-ends that speak them (SillyTavern's llama.cpp backend and others):
 * GET /props and POST /completion (server.h).
 *
 * /completion takes "prompt" (text, or an array of one text), n_predict,
 * stop, stream and the sampling fields of the other endpoints; fields of
 * llama-server's that change nothing here (cache_prompt: a slot always
 * reuses its prefix; id_slot, samplers, ...) are ignored, and those whose
 * absence would change the answer silently (grammar, json_schema, a
 * non-empty logit_bias, n_probs) are refused with a 400. The answer is
 * {"content", "stop": true, "stop_type", "stopping_word",
 * "tokens_predicted", "tokens_evaluated", "tokens_cached", "truncated",
 * "model"}; streamed, one "data: {"content": PIECE, "stop": false}" event
 * per piece and a last event with "stop": true and the counts (no [DONE],
 * as llama-server). Errors are in the OpenAI shape llama-server uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "server_req.h"

#define MSG_CAP 512

typedef struct llama_job {
    srv *s;
    bool stream;
} llama_job;

/* The answer's end: content (text, len) with stop true and the counts. */
static json_t *final_obj(const srv_job *j, const char *text, size_t len)
{
    const llama_job *a = j->api;
    const bool word = j->finish == SRV_FINISH_STOP && j->matched_stop >= 0;
    const char *type = j->finish == SRV_FINISH_LENGTH ? "limit" : word ? "word" : "eos";
    return json_pack("{s:s%, s:i, s:b, s:s, s:s, s:s, s:i, s:i, s:i, s:b}", "content", text, len,
                     "index", 0, "stop", 1, "model", a->s->model_name, "stop_type", type,
                     "stopping_word", word ? j->stops[j->matched_stop] : "", "tokens_predicted",
                     j->n_gen, "tokens_evaluated", j->n_prompt, "tokens_cached", j->n_cached,
                     "truncated", j->truncated_from > 0);
}

static void fmt_begin(srv_job *j)
{
    (void)j;
}

static void fmt_piece(srv_job *j, const char *text, size_t len)
{
    const llama_job *a = j->api;
    if (a->stream)
        srv_emit_data(j, json_pack("{s:s%, s:i, s:b}", "content", text, len, "index", 0, "stop", 0));
}

static void fmt_end(srv_job *j)
{
    const llama_job *a = j->api;
    if (!a->stream || j->finish == SRV_FINISH_CANCELLED) return;
    if (j->finish == SRV_FINISH_ERROR)
        srv_emit_data(j, srv_error(SRV_API_OPENAI, 500, "generation failed: %s", j->error).body);
    else
        srv_emit_data(j, final_obj(j, "", 0));
}

static const srv_format llama_format = {fmt_begin, fmt_piece, fmt_end};

srv_reply srv_llama_completion(srv *s, json_t *body)
{
    char msg[MSG_CAP] = "";
    const json_t *p = json_object_get(body, "prompt");
    if (json_is_array(p) && json_array_size(p) == 1) p = json_array_get(p, 0);
    if (!json_is_string(p))
        return srv_error(SRV_API_OPENAI, 400, "'prompt' must be a string (or an array of one; "
                         "token arrays are not supported)");
    if (memchr(json_string_value(p), 0, json_string_length(p)))
        return srv_error(SRV_API_OPENAI, 400, "'prompt' holds a NUL character");
    bool stream = false;
    long n_probs = 0;
    if (!req_bool(body, "stream", &stream, msg, sizeof msg) ||
        !req_int(body, "n_probs", 0, 1 << 20, &n_probs, msg, sizeof msg) ||
        !req_refuse_unsupported(body, true, msg, sizeof msg))
        return srv_error(SRV_API_OPENAI, 400, "%s", msg);
    if (n_probs > 0)
        return srv_error(SRV_API_OPENAI, 400, "'n_probs' is not supported on /completion: ask "
                         "/v1/completions with 'logprobs'");
    srv_job *j;
    srv_reply r = srv_prepare_job(s, SRV_API_OPENAI, body, json_string_value(p), false, "stop", &j);
    if (r.status) return r;
    llama_job *a = calloc(1, sizeof *a);
    if (!a) {
        srv_job_unref(j);
        return srv_error(SRV_API_OPENAI, 500, "out of memory");
    }
    a->s = s;
    a->stream = stream;
    j->api = a;
    j->api_free = free;
    j->fmt = &llama_format;
    if (srv_answer_job(s, SRV_API_OPENAI, j, stream, &r)) return r;
    json_t *o = final_obj(j, j->text ? j->text : "", j->text_len);
    r = o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
    srv_job_unref(j);
    return r;
}

srv_reply srv_props(srv *s)
{
    const sl_sampling_params *sp = &s->sp;
    json_t *params = json_pack("{s:f, s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:I, s:i}", "temperature",
                               (double)sp->temp, "top_k", sp->top_k, "top_p", (double)sp->top_p,
                               "min_p", (double)sp->min_p, "repeat_penalty",
                               (double)sp->repeat_penalty, "presence_penalty",
                               (double)sp->presence_penalty, "frequency_penalty",
                               (double)sp->frequency_penalty, "repeat_last_n", sp->penalty_last_n,
                               "seed", (json_int_t)sp->seed, "n_predict", s->n_predict);
    json_t *o = json_pack("{s:{s:i, s:o}, s:i, s:s, s:s, s:s, s:{s:b, s:b}, s:s}",
                          "default_generation_settings", "n_ctx", s->n_ctx, "params", params,
                          "total_slots", s->pool.n_slots, "model_alias", s->model_name,
                          "model_path", s->model_name, "chat_format", sl_chat_name(s->chat),
                          "modalities", "vision", 0, "audio", 0, "build_info", "sluice");
    return o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OPENAI, 500, "out of memory");
}
