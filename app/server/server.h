/* server.h - `sluice serve`: what the HTTP side, the API handlers and the
 * command share.
 *
 * server_http.c   libmicrohttpd glue: request bodies and their limit, the
 *                 Host and API-key checks, routing, JSON and SSE responses
 * server_req.c    reading typed fields of a request body (400 on a bad one)
 * server_prompt.c a request made a job: chat template, tokens, limits
 * server_openai.c the OpenAI endpoints and /tokenize, /detokenize
 * server_anthropic.c the Anthropic Messages endpoints
 * server_ollama.c the Ollama API under /api/ (server_ollama.h); what it
 *                 tells of the model file: server_ollama_facts.c
 * server_llama.c  llama-server's own /props and /completion
 * server_metrics.c GET /metrics and /slots
 * server_web.c    GET / (the page) and server_events.c GET /api/events
 *                 (its telemetry) (server_web.h)
 * server_slots.c  slots, the job queue, worker threads (server_slots.h)
 * server_run.c    one job on one slot: prompt reuse and generation
 * server_batch.c  continuous batching: the busy slots' evaluations as one
 *                 forward pass per step (server_batch.h); a slot's prompt
 *                 chunks and its reply's tokens (the library's generation
 *                 step, sl_gen_*) are submitted to it
 * server_logprobs.c log-probabilities of the generated tokens (JSON)
 * The chat turns are rendered, and the answer's reasoning and tool calls
 * split, by the library (sluice.h: sl_chat_format_turns, sl_answer_*).
 * cmd_serve.c     flags, model, start-up line, signals */
#ifndef SL_APP_SERVER_H
#define SL_APP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server_slots.h"
#include "sluice.h"
#include "util/json.h"

struct MHD_Connection;
struct MHD_Daemon;

typedef struct srv {
    /* configuration */
    const char *api_key;      /* NULL: no key needed */
    bool loopback;            /* bound to a loopback address: Host must be one */
    size_t max_body;          /* request body limit in bytes */
    const char *model_name;   /* what /v1/models calls the model */
    /* state */
    sl_model *m;
    sl_chat *chat;
    srv_pool pool;
    int n_ctx;                /* per slot */
    sl_sampling_params sp;    /* the command line's sampling: request defaults */
    int n_predict;            /* default max tokens (-n); < 0: no limit */
    long created;             /* start time (Unix seconds) for "created" fields */
    struct MHD_Daemon *daemon;
    struct srv_deadline *deadline; /* the request-head deadline (server_deadline.h);
                                      NULL: none */
    unsigned long next_id;    /* for completion ids (atomic increments) */
    const char *cors_origin;  /* --cors: the Access-Control-Allow-Origin; NULL: off */
    uint64_t n_requests, n_4xx, n_5xx; /* answered, atomic adds */
    srv_pcache pcache;        /* --prompt-cache (dir NULL: off) */
    srv_ramcache ram;         /* --cache-ram (budget 0: off) */
    const char *slot_dir;     /* --slot-save-path, or NULL: slot actions refused */
    bool thinking;            /* the template's thinking switch by default (--no-think: off) */
    bool harmony;             /* the chat is harmony: answers split by channel */
    json_t *model_facts;      /* the model file's header facts for the Ollama API
                                 (srv_ollama_facts; owned, NULL: none) */
    int ready;                /* 0 while the model loads (every request: 503), then 1;
                                 atomic (release store, acquire loads) */
} srv;

/* Error style of the API an endpoint belongs to. */
typedef enum srv_api { SRV_API_OPENAI, SRV_API_ANTHROPIC, SRV_API_OLLAMA } srv_api;

/* What a handler answers: a status and a JSON body, or a started job whose
 * output streams (server-sent events; the Ollama API's: NDJSON lines). */
typedef struct srv_reply {
    int status;
    json_t *body;             /* owned; NULL when job is set */
    srv_job *job;             /* streaming: the reply's reference */
} srv_reply;

/* An error reply in the API's style: OpenAI {"error": {"message", "type",
 * "param", "code"}}, Anthropic {"type": "error", "error": {"type",
 * "message"}}, Ollama {"error": "message"}. */
srv_reply srv_error(srv_api api, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Renders system (NULL/null: none; a string or text parts) and messages
 * (an array of {role, content}; OpenAI's assistant tool_calls and
 * reasoning_content, tool messages with tool_call_id) with the model's chat
 * template into *prompt (malloc'd). body (NULL: none) gives OpenAI's
 * "tools", "tool_choice" ("none" leaves the tools out) and
 * "reasoning_effort" (harmony) and llama-server's "chat_template_kwargs":
 * {"enable_thinking": BOOL} (the template's thinking switch; absent: the
 * server's --no-think). *has_tools (may be NULL) says whether tools
 * were rendered. A forcing "tool_choice" ("required", or {"type":
 * "function", "function": {"name": X}}, X one of the tools) ends the
 * prompt with the template's tool-call opening (and X's name), so that the
 * model continues inside a call; *prime_len (may be NULL) receives the
 * length of that tail of *prompt (0: none), which the answer's parser must
 * see before the generated text. Returns a reply with status 0 on success, else the error
 * to answer (server_prompt.c). */
srv_reply srv_render_chat(srv *s, srv_api api, const json_t *system, const json_t *messages,
                          const json_t *body, bool *has_tools, char **prompt, size_t *prime_len);

/* Whether the answer to prompt (a rendered chat prompt whose last
 * prime_len bytes are a forced call's opening) has reasoning to split off:
 * sl_answer_thinks of the template's own end (*inside, may be NULL: the
 * answer starts inside the block) (server_prompt.c). */
bool srv_prompt_thinks(const srv *s, const char *prompt, size_t prime_len, bool *inside);

/* A chat answer as its formatter reads it: the parser that splits off
 * reasoning and tool calls, and a forced call's opening that ended the
 * prompt (owned; NULL: none). The first member of each chat formatter's job
 * (OpenAI, Anthropic, Ollama), so that srv_split_job_free frees any of them. */
typedef struct srv_split {
    sl_answer *ans;
    char *prime;
} srv_split;

/* A chat formatter's job state: size zeroed bytes that begin with an
 * srv_split whose prime is the last prime_len bytes of prompt (0: none),
 * attached to j with fmt and srv_split_job_free. NULL when out of memory:
 * j is released and *r is api's 500 (server_prompt.c). */
void *srv_split_job_new(srv_job *j, size_t size, const srv_format *fmt, const char *prompt,
                        size_t prime_len, srv_api api, srv_reply *r);

/* Creates sp->ans (the flags as sl_answer_create's, harmony: s's template)
 * and feeds it sp->prime; SL_ENOMEM (server_prompt.c). */
int srv_split_start(srv_split *sp, const srv *s, bool think_enabled, bool think_inside,
                    bool tools, sl_answer_out out, void *ud);

/* The calls sp's parser found, *n of them (0 when it has none). */
const sl_answer_call *srv_split_calls(const srv_split *sp, int *n);

/* A call's arguments as a new JSON object (text that is not one becomes {};
 * NULL only when out of memory) (server_prompt.c). */
json_t *srv_call_args_json(const sl_answer_call *c);

/* A job's api_free for a formatter job that begins with an srv_split: frees
 * the parser, the prime and the job (NULL: nothing) (server_prompt.c). */
void srv_split_job_free(void *job);

/* Tokenizes prompt, checks it against a slot's context, reads sampling,
 * limits and the stop texts (under stop_key) from body into a new job
 * (*out, one reference, no formatter yet). Status 0 on success, else the
 * error to answer. */
srv_reply srv_prepare_job(srv *s, srv_api api, const json_t *body, const char *prompt, bool chat,
                          const char *stop_key, srv_job **out);

/* Sends head, v as compact JSON and tail as one piece of j's stream (steals
 * v; NULL or out of memory marks the job oom) (server_openai.c): the one
 * framing of every streamed API (SSE events, NDJSON lines). */
void srv_emit_framed(srv_job *j, const char *head, json_t *v, const char *tail);

/* Sends v as one server-sent event, "data: JSON\n\n" (srv_emit_framed). */
void srv_emit_data(srv_job *j, json_t *v);

/* Queues a prepared job (its formatter set) and, unless stream, waits for
 * it. Returns true when *r is the reply already: a streamed job's 200 (the
 * reply takes the caller's reference), or an error in api's style, the job
 * released (503 when every slot is busy and the queue is full or the server
 * is stopping, 500 when generation failed). Returns false when the job
 * finished normally: the caller builds its answer from j and releases its
 * reference (server_prompt.c). */
bool srv_answer_job(srv *s, srv_api api, srv_job *j, bool stream, srv_reply *r);

/* Handlers (server_openai.c). body is the parsed JSON object of a POST. */
srv_reply srv_health(srv *s);
srv_reply srv_slots(srv *s);
srv_reply srv_models(srv *s);
/* GET /v1/models/{id}: the model's object when id is its name, else 404
 * (OpenAI's model_not_found). */
srv_reply srv_model_one(srv *s, const char *id);
srv_reply srv_chat_completions(srv *s, json_t *body);
srv_reply srv_completions(srv *s, json_t *body);
srv_reply srv_tokenize(srv *s, json_t *body);
/* POST /apply-template (llama-server's): the rendered chat prompt. */
srv_reply srv_apply_template(srv *s, json_t *body);
srv_reply srv_detokenize(srv *s, json_t *body);

/* llama-server's own endpoints (server_llama.c): GET /props (the slots'
 * context, the default sampling, the chat template's family) and POST
 * /completion (prompt text; "content" answers, streamed as "data:"
 * events ending with one whose "stop" is true). */
srv_reply srv_props(srv *s);
srv_reply srv_llama_completion(srv *s, json_t *body);

/* POST /slots/{id}?action=save|restore (server_metrics.c): id_text is what
 * follows "/slots/", action the query's value (NULL: absent), body holds
 * "filename": a plain name inside --slot-save-path (no slash, not "." or
 * "..", else 400). */
srv_reply srv_slot_action(srv *s, const char *id_text, const char *action, json_t *body);

/* Handlers (server_anthropic.c). */
srv_reply srv_messages(srv *s, json_t *body);
srv_reply srv_count_tokens(srv *s, json_t *body);

/* GET /metrics: Prometheus text (server_metrics.c). *len its length; the
 * text is malloc'd, NULL when out of memory. */
char *srv_metrics_text(srv *s, size_t *len);

/* Answers one request as the HTTP layer would once its headers passed
 * (Host, key, size) and its body arrived: the route of raw_url (slashes
 * tidied; 404, 405 for the wrong method), a POST body (len bytes, need not
 * end in NUL) parsed strictly as a JSON object (400; 415 when ctype says
 * it is not JSON), then the handler; action is POST /slots/{id}'s
 * ?action= (NULL: absent). GET /metrics is text and not answered here
 * (404). A reply with a job streams: the caller reads it to its end
 * (srv_job_read) and releases it (srv_job_cancel, srv_job_unref)
 * (server_http.c; the request-body fuzz target drives it). */
srv_reply srv_answer_request(srv *s, const char *method, const char *raw_url,
                             const char *action, const char *ctype, const char *body, size_t len);

/* The connection limits of the HTTP daemon (`serve --timeout`,
 * --max-connections, --max-connections-per-ip). */
typedef struct srv_http_limits {
    unsigned max_conns;        /* open connections in all (each one a thread) */
    unsigned max_conns_per_ip; /* from one client address; 0: no cap */
    unsigned timeout_s;        /* a connection idle this long (no byte read or
                                  written while not waiting for its reply) is
                                  closed; 0: never */
} srv_http_limits;

/* Starts the HTTP daemon on host:port (port 0: any free port, *bound_port
 * says which) with s answering, held to lim. Prints why and returns
 * non-zero on failure. */
int srv_http_start(srv *s, const char *host, int port, const srv_http_limits *lim,
                   int *bound_port);
void srv_http_stop(srv *s);

#endif
