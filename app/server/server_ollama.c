/* server_ollama.c - the Ollama API of `sluice serve` (server_ollama.h).
 *
 * A request's Ollama fields are mapped to the OpenAI form the shared path
 * reads (server_prompt.c): messages with "thinking" as reasoning_content,
 * tool_calls with object arguments, tool messages' tool_name as the
 * function's name; "options" (temperature, top_p, top_k, min_p, seed,
 * repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty,
 * num_predict, stop) as the sampling and limit fields; "think" as the
 * template's thinking switch (a level: harmony's reasoning effort). What
 * the server cannot do is refused with a 400 rather than ignored: "format"
 * (no constrained sampling), images, mirostat, typical_p, a num_ctx above
 * a slot's context, /api/generate's suffix, template and context.
 * Load-time options (num_gpu, num_thread, use_mmap, ...) and keep_alive
 * change nothing here and are ignored. Any model name is answered by the
 * one model (as the OpenAI endpoints do); /api/show knows only its own.
 *
 * The answer streams by default, one JSON object a line: pieces of
 * message.content (chat) or response (generate), reasoning as "thinking",
 * tool calls as one object with message.tool_calls (arguments as objects)
 * once the answer is whole, then the last object with done: true,
 * done_reason ("stop", "length"), the counts and the durations in
 * nanoseconds (load_duration: waiting for a slot and its prefix;
 * prompt_eval_count: the prompt's tokens, a reused prefix included).
 * "stream": false answers one object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"
#include "server_ollama.h"
#include "server_req.h"

#define MSG_CAP 512
/* what /api/version says: clients check it against the Ollama release
 * that brought the features they use (tools, thinking) */
#define OLLAMA_VERSION "0.12.0"

typedef struct oll_job {
    srv_split sp; /* first: the answer's parser, a forced call's opening */
    srv *s;
    bool chat, stream;
    bool split;                        /* through sl_answer (tools, harmony, thinking) */
    bool think_enabled, think_inside, tools;
    char id[48];
    uint64_t t_start, t_begin, t_first, t_end; /* sl_now_ns: request, slot, first piece, end */
} oll_job;

/* ---- the model ------------------------------------------------------------ */

/* The name clients list and send: the model's name with a tag. */
static void tagged_name(const srv *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", s->model_name, strchr(s->model_name, ':') ? "" : ":latest");
}

/* Whether name is this server's model (with or without ":latest"). */
static bool is_our_model(const srv *s, const char *name)
{
    char tagged[512];
    tagged_name(s, tagged, sizeof tagged);
    return !strcmp(name, s->model_name) || !strcmp(name, tagged);
}

/* A time as Ollama writes it: RFC 3339 in UTC with nanoseconds. */
static void rfc3339(const struct timespec *ts, char *buf, size_t cap)
{
    struct tm tm;
    time_t t = ts->tv_sec;
    char day[32] = "1970-01-01T00:00:00";
    if (gmtime_r(&t, &tm)) strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%09ldZ", day, (long)ts->tv_nsec);
}

static void now_rfc3339(char *buf, size_t cap)
{
    struct timespec ts = {0, 0};
    timespec_get(&ts, TIME_UTC);
    rfc3339(&ts, buf, cap);
}

static const char *fact_str(const srv *s, const char *key, const char *def)
{
    const json_t *v = json_object_get(s->model_facts, key);
    return json_is_string(v) ? json_string_value(v) : def;
}

/* Ollama's "details" of the model. */
static json_t *details_obj(const srv *s)
{
    const char *fam = fact_str(s, "family", sl_model_arch_name(s->m));
    if (!fam[0]) fam = sl_model_arch_name(s->m);
    return json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "parent_model", "", "format", "gguf",
                     "family", fam, "families", fam, "parameter_size",
                     fact_str(s, "parameter_size", ""), "quantization_level",
                     fact_str(s, "quantization_level", "unknown"));
}

/* The model's entry in /api/tags (ps: with /api/ps's fields too). */
static json_t *model_entry(const srv *s, bool ps)
{
    char name[512], when[64];
    tagged_name(s, name, sizeof name);
    const struct timespec created = {(time_t)s->created, 0};
    rfc3339(&created, when, sizeof when);
    const json_t *size = json_object_get(s->model_facts, "size");
    json_t *e = json_pack("{s:s, s:s, s:s, s:I, s:s, s:o}", "name", name, "model", name,
                          "modified_at", when, "size",
                          (json_int_t)(json_is_integer(size) ? json_integer_value(size) : 0),
                          "digest", fact_str(s, "digest", ""), "details", details_obj(s));
    if (e && ps) {
        /* loaded until the server stops: no expiry */
        json_object_set_new(e, "expires_at", json_string("9999-12-31T23:59:59Z"));
        json_object_set_new(e, "size_vram", json_integer(0));
        json_object_set_new(e, "context_length", json_integer(s->n_ctx));
    }
    return e;
}

static srv_reply ok_or_oom(json_t *o)
{
    return o ? (srv_reply){200, o, NULL} : srv_error(SRV_API_OLLAMA, 500, "out of memory");
}

srv_reply srv_ollama_version(srv *s)
{
    (void)s;
    return ok_or_oom(json_pack("{s:s}", "version", OLLAMA_VERSION));
}

srv_reply srv_ollama_tags(srv *s)
{
    return ok_or_oom(json_pack("{s:[o]}", "models", model_entry(s, false)));
}

srv_reply srv_ollama_ps(srv *s)
{
    return ok_or_oom(json_pack("{s:[o]}", "models", model_entry(s, true)));
}

/* Whether the template has a thinking mode (a reasoning block the
 * "think" field can turn on or off). */
static bool template_thinks(const srv *s)
{
    switch (sl_chat_family_of(s->chat)) {
    case SL_CHAT_QWEN3:
    case SL_CHAT_QWEN35:
    case SL_CHAT_DEEPSEEK_V31:
    case SL_CHAT_DEEPSEEK_R1:
    case SL_CHAT_KIMI_THINKING:
    case SL_CHAT_GLM4:
    case SL_CHAT_GLM47:
    case SL_CHAT_GEMMA4:
    case SL_CHAT_HARMONY:
        return true;
    default:
        return sl_chat_think_prefix(s->chat);
    }
}

/* The model name of a request ("model", or the older "name"): required. */
static bool request_model(const json_t *body, const char **name, char *msg)
{
    const json_t *m = json_object_get(body, "model");
    if (!m || json_is_null(m)) m = json_object_get(body, "name");
    if (!json_is_string(m) || json_string_length(m) == 0) {
        snprintf(msg, MSG_CAP, "model is required (a string)");
        return false;
    }
    *name = json_string_value(m);
    return true;
}

srv_reply srv_ollama_show(srv *s, json_t *body)
{
    char msg[MSG_CAP];
    const char *name = NULL;
    if (!request_model(body, &name, msg)) return srv_error(SRV_API_OLLAMA, 400, "%s", msg);
    if (!is_our_model(s, name))
        return srv_error(SRV_API_OLLAMA, 404, "model '%.200s' not found: this server has "
                         "'%.200s'", name, s->model_name);
    json_t *caps = json_pack("[s]", "completion");
    if (sl_chat_takes_tools(s->chat)) json_array_append_new(caps, json_string("tools"));
    if (template_thinks(s)) json_array_append_new(caps, json_string("thinking"));
    const json_t *fi = json_object_get(s->model_facts, "model_info");
    json_t *info = fi ? json_deep_copy(fi) : json_object();
    const char *arch = sl_model_arch_name(s->m);
    char key[160];
    /* what a request can use: a slot's context, not the training length
     * (clients size their prompts by it) */
    snprintf(key, sizeof key, "%s.context_length", arch);
    json_object_set_new(info, key, json_integer(s->n_ctx));
    if (!json_object_get(info, "general.architecture"))
        json_object_set_new(info, "general.architecture", json_string(arch));
    const sl_sampling_params *sp = &s->sp;
    char params[512], mf[768], when[64];
    snprintf(params, sizeof params,
             "temperature %g\ntop_k %d\ntop_p %g\nmin_p %g\nrepeat_penalty %g\nnum_ctx %d\n"
             "num_predict %d", (double)sp->temp, sp->top_k, (double)sp->top_p,
             (double)sp->min_p, (double)sp->repeat_penalty, s->n_ctx, s->n_predict);
    snprintf(mf, sizeof mf, "# served by sluice; the model file is fixed by `sluice serve -m`\n"
             "FROM %.300s\nPARAMETER num_ctx %d\n", s->model_name, s->n_ctx);
    const struct timespec created = {(time_t)s->created, 0};
    rfc3339(&created, when, sizeof when);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:s}", "license", "",
                          "modelfile", mf, "parameters", params, "template",
                          fact_str(s, "template", ""), "system", "", "details", details_obj(s),
                          "model_info", info, "capabilities", caps, "modified_at", when);
    return ok_or_oom(o);
}

/* ---- the answer ------------------------------------------------------------ */

/* One NDJSON line (steals v; NULL marks the job oom). */
static void emit_line(srv_job *j, json_t *v)
{
    srv_emit_framed(j, "", v, "\n");
}

/* An object of the answer: model, created_at, the text (message or
 * response) and done. */
static json_t *answer_obj(const oll_job *a, json_t *text_field, bool done)
{
    char when[64];
    now_rfc3339(when, sizeof when);
    return a->chat ? json_pack("{s:s, s:s, s:o, s:b}", "model", a->s->model_name, "created_at",
                               when, "message", text_field, "done", done)
                   : json_pack("{s:s, s:s, s:o, s:b}", "model", a->s->model_name, "created_at",
                               when, "response", text_field, "done", done);
}

/* The text part of an answer object: chat's message, generate's response
 * (then thinking goes beside it, into o). */
static json_t *text_part(const oll_job *a, const char *content, size_t n_content,
                         const char *thinking, size_t n_thinking)
{
    if (!a->chat) return json_stringn(content ? content : "", n_content);
    json_t *m = json_pack("{s:s, s:s%}", "role", "assistant", "content", content ? content : "",
                          n_content);
    if (m && n_thinking) json_object_set_new(m, "thinking", json_stringn(thinking, n_thinking));
    return m;
}

static json_t *piece_obj(const oll_job *a, bool reasoning, const char *text, size_t len)
{
    json_t *o = answer_obj(a, reasoning ? text_part(a, "", 0, text, len)
                                        : text_part(a, text, len, NULL, 0), false);
    if (o && reasoning && !a->chat) json_object_set_new(o, "thinking", json_stringn(text, len));
    return o;
}

/* The counts and durations of the last object. */
static void add_stats(json_t *o, const srv_job *j)
{
    const oll_job *a = j->api;
    const uint64_t first = a->t_first ? a->t_first : a->t_end;
    const uint64_t begin = a->t_begin ? a->t_begin : a->t_start;
    json_object_set_new(o, "done_reason",
                        json_string(j->finish == SRV_FINISH_LENGTH ? "length" : "stop"));
    json_object_set_new(o, "total_duration", json_integer((json_int_t)(a->t_end - a->t_start)));
    json_object_set_new(o, "load_duration", json_integer((json_int_t)(begin - a->t_start)));
    json_object_set_new(o, "prompt_eval_count", json_integer(j->n_prompt));
    json_object_set_new(o, "prompt_eval_duration", json_integer((json_int_t)(first - begin)));
    json_object_set_new(o, "eval_count", json_integer(j->n_gen));
    json_object_set_new(o, "eval_duration", json_integer((json_int_t)(a->t_end - first)));
}

static json_t *tool_calls_json(const oll_job *a, const sl_answer_call *calls, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
        char id[96];
        snprintf(id, sizeof id, "call_%s_%d", a->id, i);
        json_array_append_new(arr, json_pack("{s:s, s:{s:i, s:s, s:o}}", "id", id, "function",
                                             "index", i, "name", calls[i].name,
                                             "arguments", srv_call_args_json(&calls[i])));
    }
    return arr;
}

/* sl_answer's output while streaming */
static void stream_out(void *ud, bool reasoning, const char *text, size_t len)
{
    srv_job *j = ud;
    if (len) emit_line(j, piece_obj(j->api, reasoning, text, len));
}

static void fmt_begin(srv_job *j)
{
    oll_job *a = j->api;
    a->t_begin = sl_now_ns();
}

static void fmt_piece(srv_job *j, const char *text, size_t len)
{
    oll_job *a = j->api;
    if (!a->t_first) a->t_first = sl_now_ns();
    if (!a->stream) return;
    if (a->split) sl_answer_feed(a->sp.ans, text, len);
    else if (len) emit_line(j, piece_obj(a, false, text, len));
}

static void fmt_end(srv_job *j)
{
    oll_job *a = j->api;
    a->t_end = sl_now_ns();
    if (!a->stream || j->finish == SRV_FINISH_CANCELLED) return;
    if (j->finish == SRV_FINISH_ERROR) {
        emit_line(j, srv_error(SRV_API_OLLAMA, 500, "generation failed: %s", j->error).body);
        return;
    }
    if (a->split) sl_answer_finish(a->sp.ans);
    int nc;
    const sl_answer_call *cs = srv_split_calls(&a->sp, &nc);
    if (a->chat && nc) {
        json_t *m = text_part(a, "", 0, NULL, 0);
        json_object_set_new(m, "tool_calls", tool_calls_json(a, cs, nc));
        emit_line(j, answer_obj(a, m, false));
    }
    json_t *o = answer_obj(a, text_part(a, "", 0, NULL, 0), true);
    if (o) add_stats(o, j);
    emit_line(j, o);
}

static const srv_format oll_format = {fmt_begin, fmt_piece, fmt_end};

/* The whole answer as one object (stream false). */
static json_t *whole_answer(const srv_job *j)
{
    const oll_job *a = j->api;
    if (!a->split) {
        json_t *o = answer_obj(a, text_part(a, j->text, j->text_len, NULL, 0), true);
        if (o) add_stats(o, j);
        return o;
    }
    sl_answer_text b;
    sl_answer *t = sl_answer_whole(&b, a->s->harmony, a->think_enabled, a->think_inside, a->tools,
                                   a->sp.prime, j->text, j->text_len);
    int nc = 0;
    const sl_answer_call *cs = t ? sl_answer_calls(t, &nc) : NULL;
    const bool calls = a->chat && nc > 0;
    if (calls) /* the text before calls: trailing blank space dropped */
        while (b.n[0] && strchr(" \t\r\n", b.p[0][b.n[0] - 1])) b.n[0]--;
    json_t *o = b.oom ? NULL
                      : answer_obj(a, text_part(a, b.p[0], b.n[0], b.p[1], b.n[1]), true);
    if (o && !a->chat && b.n[1])
        json_object_set_new(o, "thinking", json_stringn(b.p[1], b.n[1]));
    if (o && calls)
        json_object_set_new(json_object_get(o, "message"), "tool_calls",
                            tool_calls_json(a, cs, nc));
    if (o) add_stats(o, j);
    sl_answer_free(t);
    sl_answer_text_free(&b);
    return o;
}

/* ---- requests -------------------------------------------------------------- */

/* The fields both /api/chat and /api/generate read. */
typedef struct oll_req {
    const char *model;
    bool stream;
    json_t *obody;           /* the OpenAI-form body for srv_render_chat and
                                srv_prepare_job (owned) */
} oll_req;

/* Options whose value changes the answer in a way this server cannot
 * follow; the rest that are not sampling (num_gpu, num_thread, ...) are
 * load-time knobs and ignored. */
static bool read_options(srv *s, const json_t *opts, json_t *ob, char *msg)
{
    if (!opts || json_is_null(opts)) return true;
    if (!json_is_object(opts)) {
        snprintf(msg, MSG_CAP, "options must be an object, got %s", req_type_name(opts));
        return false;
    }
    sl_sampling_params sp = s->sp;
    if (!req_sampling(opts, &sp, msg, MSG_CAP)) {
        char inner[MSG_CAP];
        snprintf(inner, sizeof inner, "%s", msg);
        snprintf(msg, MSG_CAP, "options: %.480s", inner);
        return false;
    }
    static const char *const sampling[] = {"temperature", "top_p", "top_k", "min_p", "seed",
                                           "repeat_penalty", "repeat_last_n",
                                           "presence_penalty", "frequency_penalty", "stop"};
    for (size_t i = 0; i < sizeof sampling / sizeof sampling[0]; i++) {
        json_t *v = json_object_get(opts, sampling[i]);
        if (v) json_object_set(ob, sampling[i], v);
    }
    long n = 0;
    if (!req_int(opts, "num_predict", -2, 1 << 30, &n, msg, MSG_CAP)) return false;
    if (json_is_number(json_object_get(opts, "num_predict")))
        json_object_set_new(ob, "max_tokens", json_integer(n < 0 ? -1 : n)); /* -2: fill */
    long ctx = 0;
    if (!req_int(opts, "num_ctx", 1, 1L << 30, &ctx, msg, MSG_CAP)) return false;
    if (ctx > s->n_ctx) {
        snprintf(msg, MSG_CAP, "options.num_ctx is %ld but a slot of this server holds %d "
                 "tokens: ask for at most %d, or start the server with -c %ld", ctx, s->n_ctx,
                 s->n_ctx, ctx);
        return false;
    }
    long miro = 0;
    double typical = 1;
    if (!req_int(opts, "mirostat", 0, 2, &miro, msg, MSG_CAP) ||
        !req_num(opts, "typical_p", 0, 1, &typical, msg, MSG_CAP))
        return false;
    if (miro || typical < 1) {
        snprintf(msg, MSG_CAP, "options.%s is not supported: this server samples with "
                 "temperature, top_k, top_p, min_p and the penalties",
                 miro ? "mirostat" : "typical_p");
        return false;
    }
    return true;
}

/* Reads model, stream, format, options, think (and logprobs) into r;
 * 400 on what is wrong or cannot be done. The think field turns the
 * template's thinking on or off (a level: harmony's reasoning effort). */
static srv_reply read_common(srv *s, const json_t *body, oll_req *r)
{
    char msg[MSG_CAP] = "";
    r->stream = true;
    r->obody = json_object();
    if (!r->obody) return srv_error(SRV_API_OLLAMA, 500, "out of memory");
    if (!request_model(body, &r->model, msg) || !req_bool(body, "stream", &r->stream, msg,
                                                         sizeof msg))
        return srv_error(SRV_API_OLLAMA, 400, "%s", msg);
    const json_t *fmt = json_object_get(body, "format");
    if (fmt && !json_is_null(fmt) && !(json_is_string(fmt) && json_string_length(fmt) == 0))
        return srv_error(SRV_API_OLLAMA, 400, "format (%s) is not supported: this server has no "
                         "JSON-constrained sampling; ask for JSON in the prompt and leave "
                         "format out", json_is_string(fmt) ? "json" : "a JSON schema");
    bool lp = false;
    if (!req_bool(body, "logprobs", &lp, msg, sizeof msg))
        return srv_error(SRV_API_OLLAMA, 400, "%s", msg);
    if (lp)
        return srv_error(SRV_API_OLLAMA, 400, "logprobs are not given on the Ollama API: ask "
                         "/v1/chat/completions with \"logprobs\": true");
    if (!read_options(s, json_object_get(body, "options"), r->obody, msg))
        return srv_error(SRV_API_OLLAMA, 400, "%s", msg);
    const json_t *th = json_object_get(body, "think");
    if (th && !json_is_null(th)) {
        const char *level = json_is_string(th) ? json_string_value(th) : NULL;
        if (!json_is_boolean(th) && !(level && (!strcmp(level, "low") || !strcmp(level, "medium") ||
                                                !strcmp(level, "high"))))
            return srv_error(SRV_API_OLLAMA, 400, "think must be true, false, \"low\", "
                             "\"medium\" or \"high\"");
        const bool on = !json_is_false(th);
        if (on && !template_thinks(s))
            return srv_error(SRV_API_OLLAMA, 400, "\"%.200s\" does not support thinking (its "
                             "chat template, %s, has no thinking mode)", r->model,
                             sl_chat_family_name(sl_chat_family_of(s->chat)));
        json_object_set_new(r->obody, "chat_template_kwargs",
                            json_pack("{s:b}", "enable_thinking", on));
        /* harmony cannot stop reasoning: false asks for the least */
        if (s->harmony && (level || !on))
            json_object_set_new(r->obody, "reasoning_effort", json_string(level ? level : "low"));
    }
    return (srv_reply){0, NULL, NULL};
}

/* Ollama's answer to a request with nothing to generate (no messages, no
 * prompt): the model is loaded. */
static srv_reply load_reply(srv *s, bool chat)
{
    char when[64];
    now_rfc3339(when, sizeof when);
    json_t *o = chat ? json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:b}", "model", s->model_name,
                                 "created_at", when, "message", "role", "assistant", "content",
                                 "", "done_reason", "load", "done", 1)
                     : json_pack("{s:s, s:s, s:s, s:s, s:b}", "model", s->model_name,
                                 "created_at", when, "response", "", "done_reason", "load",
                                 "done", 1);
    return ok_or_oom(o);
}

/* Queues the job of prompt and answers (NDJSON stream, or one object). */
static srv_reply generate(srv *s, const oll_req *q, const char *prompt, size_t prime_len,
                          bool chat, bool templated, bool tools, uint64_t t_start)
{
    srv_job *j;
    srv_reply r = srv_prepare_job(s, SRV_API_OLLAMA, q->obody, prompt, templated, "stop", &j);
    if (r.status) return r;
    oll_job *a = srv_split_job_new(j, sizeof *a, &oll_format, prompt, prime_len, SRV_API_OLLAMA, &r);
    if (!a) return r;
    a->s = s;
    a->chat = chat;
    a->stream = q->stream;
    a->tools = tools;
    a->t_start = t_start;
    a->think_enabled = templated && srv_prompt_thinks(s, prompt, prime_len, &a->think_inside);
    a->split = templated && (tools || s->harmony || a->think_enabled);
    snprintf(a->id, sizeof a->id, "%lu", __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED));
    if (a->split &&
        srv_split_start(&a->sp, s, a->think_enabled, a->think_inside, tools, stream_out, j)) {
        srv_job_unref(j);
        return srv_error(SRV_API_OLLAMA, 500, "out of memory");
    }
    if (srv_answer_job(s, SRV_API_OLLAMA, j, q->stream, &r)) return r; /* a stream: NDJSON */
    r = ok_or_oom(whole_answer(j));
    srv_job_unref(j);
    return r;
}

/* Whether v is absent, null, or an empty array or string. */
static bool empty(const json_t *v)
{
    return !v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
           (json_is_string(v) && json_string_length(v) == 0);
}

/* Ollama messages in OpenAI's form for srv_render_chat (a new array in
 * *out), or a 400: thinking -> reasoning_content, tool_calls' object
 * arguments kept as objects, tool_name -> name; images refused. Shapes the
 * renderer checks (roles, content) are passed on as they are. */
static srv_reply convert_messages(const json_t *in, json_t **out)
{
    *out = json_array();
    if (!*out) return srv_error(SRV_API_OLLAMA, 500, "out of memory");
    size_t i;
    const json_t *m;
    json_array_foreach(in, i, m) {
        if (!json_is_object(m)) {
            json_array_append(*out, (json_t *)m);
            continue;
        }
        if (!empty(json_object_get(m, "images")))
            return srv_error(SRV_API_OLLAMA, 400, "messages[%zu].images: this server's models "
                             "read text only, not images", i);
        json_t *om = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)m, k, v) {
            if (!strcmp(k, "role") || !strcmp(k, "content") || !strcmp(k, "tool_call_id"))
                json_object_set(om, k, v);
            else if (!strcmp(k, "thinking") && json_is_string(v))
                json_object_set(om, "reasoning_content", v);
            else if (!strcmp(k, "tool_name") && json_is_string(v))
                json_object_set(om, "name", v);
        }
        const json_t *tc = json_object_get(m, "tool_calls");
        if (tc && !json_is_null(tc)) {
            if (!json_is_array(tc)) {
                json_decref(om);
                return srv_error(SRV_API_OLLAMA, 400, "messages[%zu].tool_calls must be an "
                                 "array", i);
            }
            json_t *calls = json_array();
            size_t c;
            const json_t *call;
            json_array_foreach(tc, c, call) {
                const json_t *f = json_object_get(call, "function");
                const json_t *id = json_object_get(call, "id");
                json_t *oc = json_pack("{s:s, s:O}", "type", "function", "function",
                                       f ? f : json_null());
                if (oc && json_is_string(id)) json_object_set(oc, "id", (json_t *)id);
                json_array_append_new(calls, oc);
            }
            json_object_set_new(om, "tool_calls", calls);
        }
        json_array_append_new(*out, om);
    }
    return (srv_reply){0, NULL, NULL};
}

srv_reply srv_ollama_chat(srv *s, json_t *body)
{
    const uint64_t t0 = sl_now_ns();
    oll_req q = {0};
    srv_reply r = read_common(s, body, &q);
    const json_t *msgs = json_object_get(body, "messages");
    if (!r.status && msgs && !json_is_null(msgs) && !json_is_array(msgs))
        r = srv_error(SRV_API_OLLAMA, 400, "messages must be an array");
    if (!r.status && empty(msgs)) {
        json_decref(q.obody);
        return load_reply(s, true);
    }
    const json_t *tools = json_object_get(body, "tools");
    if (!r.status && tools) json_object_set(q.obody, "tools", (json_t *)tools);
    json_t *om = NULL;
    if (!r.status) r = convert_messages(msgs, &om);
    char *prompt = NULL;
    bool has_tools = false;
    size_t prime = 0;
    if (!r.status)
        r = srv_render_chat(s, SRV_API_OLLAMA, NULL, om, q.obody, &has_tools, &prompt, &prime);
    json_decref(om);
    if (!r.status) r = generate(s, &q, prompt, prime, true, true, has_tools, t0);
    free(prompt);
    json_decref(q.obody);
    return r;
}

srv_reply srv_ollama_generate(srv *s, json_t *body)
{
    const uint64_t t0 = sl_now_ns();
    char msg[MSG_CAP] = "";
    oll_req q = {0};
    srv_reply r = read_common(s, body, &q);
    const char *text = NULL, *sys = NULL;
    size_t n = 0, ns = 0;
    bool raw = false;
    if (!r.status && (!req_str(body, "prompt", &text, &n, msg, sizeof msg) ||
                      !req_str(body, "system", &sys, &ns, msg, sizeof msg) ||
                      !req_bool(body, "raw", &raw, msg, sizeof msg)))
        r = srv_error(SRV_API_OLLAMA, 400, "%s", msg);
    static const char *const refused[][2] = {
        {"suffix", "fill-in-the-middle is not supported: put the model's own FIM tokens in "
                   "prompt with \"raw\": true"},
        {"template", "this server renders the model's own chat template: send \"raw\": true "
                     "with a prompt already in the form you want"},
        {"context", "is not kept by this server: send the conversation to /api/chat"},
        {"images", "this server's models read text only, not images"},
    };
    for (size_t i = 0; !r.status && i < sizeof refused / sizeof refused[0]; i++)
        if (!empty(json_object_get(body, refused[i][0])))
            r = srv_error(SRV_API_OLLAMA, 400, "%s: %s", refused[i][0], refused[i][1]);
    if (!r.status && (!text || n == 0)) {
        json_decref(q.obody);
        return load_reply(s, false);
    }
    if (!r.status && (memchr(text, 0, n) || (sys && memchr(sys, 0, ns))))
        r = srv_error(SRV_API_OLLAMA, 400, "prompt and system may not hold a NUL character");
    if (r.status) {
        json_decref(q.obody);
        return r;
    }
    if (raw) {
        r = generate(s, &q, text, 0, false, false, false, t0);
        json_decref(q.obody);
        return r;
    }
    json_t *msgs = json_array();
    if (sys && ns) json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system",
                                                         "content", sys));
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", text));
    char *prompt = NULL;
    r = srv_render_chat(s, SRV_API_OLLAMA, NULL, msgs, q.obody, NULL, &prompt, NULL);
    json_decref(msgs);
    if (!r.status) r = generate(s, &q, prompt, 0, false, true, false, t0);
    free(prompt);
    json_decref(q.obody);
    return r;
}

/* ---- what this server cannot serve ----------------------------------------- */

static const struct {
    const char *path;
    const char *why;
} refusals[] = {
    {"/api/embed", "sluice generates text and computes no embeddings: use an embedding "
                   "model on another server"},
    {"/api/embeddings", "sluice generates text and computes no embeddings: use an embedding "
                        "model on another server"},
    {"/api/pull", "sluice serves the one model file it was started with and downloads none: "
                  "fetch a GGUF file yourself and start `sluice serve -m FILE`"},
    {"/api/push", "sluice serves the one model file it was started with and uploads none"},
    {"/api/create", "sluice keeps no model library: the model is the file given to "
                    "`sluice serve -m`; system prompts and options go in each request"},
    {"/api/copy", "sluice keeps no model library: the model is the file given to "
                  "`sluice serve -m` (--alias names it)"},
    {"/api/delete", "sluice keeps no model library: stop the server to unload the model"},
    {"/api/blobs/", "sluice keeps no model library: the model is the file given to "
                    "`sluice serve -m`"},
};

/* Why refusals[] refuses url (an entry's path ending in '/' covers every
 * path under it), that entry's path in *path; NULL when it does not. */
static const char *refusal_of(const char *url, const char **path)
{
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const size_t n = strlen(refusals[i].path);
        if (refusals[i].path[n - 1] == '/' ? !strncmp(url, refusals[i].path, n)
                                           : !strcmp(url, refusals[i].path)) {
            *path = refusals[i].path;
            return refusals[i].why;
        }
    }
    return NULL;
}

bool srv_ollama_refusable(const char *url)
{
    const char *path;
    return refusal_of(url, &path) != NULL;
}

srv_reply srv_ollama_refused(srv *s, const char *url)
{
    (void)s;
    const char *path = NULL, *why = refusal_of(url, &path);
    if (!why) return srv_error(SRV_API_OLLAMA, 404, "no endpoint %.200s", url);
    return srv_error(SRV_API_OLLAMA, 501, "%s is not available: %s", path, why);
}
