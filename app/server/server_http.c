/* server_http.c - `sluice serve`'s HTTP side on libmicrohttpd (server.h).
 *
 * One thread per connection (libmicrohttpd's, polled with poll(), so
 * descriptors above 1023 work), so a handler may wait for its job. The
 * limits (srv_http_limits): connections in all and per client address, and
 * an idle timeout that counts only time the connection itself stalls: the
 * clock restarts whenever a reply or a streamed chunk is ready, so waiting
 * for generation never times out, while a client that sends nothing, or
 * stops reading its reply, is dropped; a request head must also arrive
 * whole within the timeout (server_deadline.h: one byte a second is not
 * activity enough). Each request: the framing checks
 * (conflicting Content-Length headers, Content-Length with chunked
 * transfer coding, or more than one Host: 400, the request-smuggling
 * ambiguities), the Host check (bound to loopback, a missing or malformed
 * Host is a 400, a Host that is not a loopback name a 403: DNS
 * rebinding), the API key, the body gathered up to the limit (413 past
 * it: told by Content-Length before anything is read, or as soon as a
 * chunked body's running sum passes it), JSON parsed strictly
 * (util/json.h), then the route's handler. A streamed reply is a
 * reader over its job's output: when the client goes away libmicrohttpd
 * frees the reader, which cancels the job at its next token. With --cors
 * ORIGIN every response allows that origin and OPTIONS preflights are
 * answered; without it no CORS header is sent (browsers keep other
 * origins' pages out). GET endpoints answer HEAD too. Until the model is
 * loaded (srv.ready) every request is a 503. A body that is not JSON is a
 * 400, or a 415 when its Content-Type says it was never meant to be. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "server.h"
#include "server_deadline.h"
#include "server_web.h"
#include "server_ollama.h"

typedef struct http_req {
    char *body;
    size_t len, cap;
    bool answered;    /* an error was queued before the body: ignore the rest */
    bool cut_off;     /* a 413 was written mid-body and the sending side shut:
                         drain a little, then close (no reply may follow) */
    size_t drained;   /* body bytes thrown away since the 413 */
    char *slot_id;    /* POST /slots/{id}: the id text and ?action= (owned) */
    char *action;
} http_req;

srv_reply srv_error(srv_api api, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = status == 401 ? "authentication_error"
                       : status == 403 ? "permission_error"
                       : status == 404 ? "not_found_error"
                       : status == 413 ? "request_too_large"
                       : status == 503 ? (api == SRV_API_ANTHROPIC ? "overloaded_error"
                                                                     : "unavailable_error")
                       : status >= 500 ? (api == SRV_API_ANTHROPIC ? "api_error" : "server_error")
                                       : "invalid_request_error";
    /* json_stringn_nocheck is not used: a message may quote request bytes */
    json_t *m = json_string(msg);
    if (!m) m = json_string("(the error message is not valid UTF-8)");
    json_t *body;
    if (api == SRV_API_OLLAMA)
        body = json_pack("{s:o}", "error", m);
    else if (api == SRV_API_ANTHROPIC)
        body = json_pack("{s:s, s:{s:s, s:o}}", "type", "error", "error", "type", type,
                         "message", m);
    else
        body = json_pack("{s:{s:o, s:s, s:n, s:i}}", "error", "message", m, "type", type,
                         "param", "code", status);
    return (srv_reply){status, body, NULL};
}

/* Headers every response gets, and the request counters. */
static enum MHD_Result queue(srv *s, struct MHD_Connection *c, unsigned status,
                             struct MHD_Response *r)
{
    if (s->cors_origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", s->cors_origin);
        MHD_add_response_header(r, "Vary", "Origin");
    }
    __atomic_add_fetch(&s->n_requests, 1, __ATOMIC_RELAXED);
    if (status >= 400 && status < 500) __atomic_add_fetch(&s->n_4xx, 1, __ATOMIC_RELAXED);
    if (status >= 500) __atomic_add_fetch(&s->n_5xx, 1, __ATOMIC_RELAXED);
    enum MHD_Result res = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return res;
}

static enum MHD_Result send_json(srv *s, struct MHD_Connection *c, int status, json_t *body)
{
    char *text = body ? sl_json_dump_text(body, false) : NULL;
    json_decref(body);
    if (!text) {
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
        struct MHD_Response *r = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom,
                                                                 MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Content-Type", "application/json");
        return queue(s, c, 500, r);
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
                                                             MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    /* loading, or the queue is full: the SDKs wait this long before retrying */
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1");
    return queue(s, c, (unsigned)status, r);
}

/* Restarts c's idle clock: libmicrohttpd counts from the last byte read
 * or written, and checks right after a handler or a stream reader returns,
 * so without this a reply that took longer than the timeout to generate
 * would be dropped before it is sent. Setting the timeout to 0 and back is
 * the library's one way to reset the clock (the connection's own thread
 * calls this, as every callback runs on it). */
static void touch(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_TIMEOUT);
    unsigned t = ci ? ci->connection_timeout : 0;
    if (!t) return;
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, t);
}

/* Queues r as a 200 whose body is of type ctype; no_cache adds
 * "Cache-Control: no-cache" (the page and the streams). r NULL (out of
 * memory): MHD_NO, and the connection closes. */
static enum MHD_Result send_ok(srv *s, struct MHD_Connection *c, struct MHD_Response *r,
                               const char *ctype, bool no_cache)
{
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    if (no_cache) MHD_add_response_header(r, "Cache-Control", "no-cache");
    return queue(s, c, 200, r);
}

/* A streamed body: its source (a job's formatted tokens or the telemetry
 * ticks), how to read it (waits for more; 0: the stream ended) and close
 * it, and the connection it goes out on. */
typedef struct http_stream {
    void *src;
    size_t (*read)(void *src, char *buf, size_t max);
    void (*close)(void *src);
    struct MHD_Connection *c;
} http_stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_stream *st = cls;
    size_t n = st->read(st->src, buf, max);
    touch(st->c);
    return n ? (ssize_t)n : (ssize_t)MHD_CONTENT_READER_END_OF_STREAM;
}

static void stream_free(void *cls)
{
    http_stream *st = cls;
    st->close(st->src); /* the client is gone, or the stream ended */
    free(st);
}

/* src read by rd as a 200 of ctype and unknown length; close_src(src) runs
 * when the stream ends, or at once (the connection then closing) when
 * the response cannot be made. */
static enum MHD_Result send_stream(srv *s, struct MHD_Connection *c, void *src,
                                   size_t (*rd)(void *, char *, size_t),
                                   void (*close_src)(void *), const char *ctype)
{
    http_stream *st = malloc(sizeof *st);
    if (!st) {
        close_src(src);
        return MHD_NO;
    }
    *st = (http_stream){.src = src, .read = rd, .close = close_src, .c = c};
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
                                                               stream_read, st, stream_free);
    if (!r) {
        stream_free(st);
        return MHD_NO;
    }
    return send_ok(s, c, r, ctype, true);
}

static size_t job_read(void *job, char *buf, size_t max)
{
    return srv_job_read(job, buf, max);
}

static void job_close(void *job)
{
    srv_job_cancel(job); /* nothing more to generate */
    srv_job_unref(job);
}

/* r as the response; a stream's bytes go out as ctype (the job's
 * formatter framed them). */
static enum MHD_Result send_reply_as(srv *s, struct MHD_Connection *c, srv_reply r,
                                     const char *ctype)
{
    if (!r.job) return send_json(s, c, r.status, r.body);
    return send_stream(s, c, r.job, job_read, job_close, ctype);
}

static enum MHD_Result send_reply(srv *s, struct MHD_Connection *c, srv_reply r)
{
    return send_reply_as(s, c, r, "text/event-stream");
}

static enum MHD_Result send_metrics(srv *s, struct MHD_Connection *c)
{
    size_t len = 0;
    char *t = srv_metrics_text(s, &len);
    if (!t) return send_reply(s, c, srv_error(SRV_API_OPENAI, 500, "out of memory"));
    struct MHD_Response *r = MHD_create_response_from_buffer(len, t, MHD_RESPMEM_MUST_FREE);
    if (!r) free(t);
    return send_ok(s, c, r, "text/plain; version=0.0.4", false);
}

/* GET /: the page (server_web.c). Its script is inline, and it loads
 * nothing from elsewhere: the policy forbids any other origin, frames
 * and plugins. */
static enum MHD_Result send_page(srv *s, struct MHD_Connection *c)
{
    size_t len = 0;
    const char *page = srv_web_page(&len);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)page,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; style-src "
                            "'unsafe-inline'; connect-src 'self'; "
                            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    return send_ok(s, c, r, "text/html; charset=utf-8", true);
}

static size_t events_read(void *e, char *buf, size_t max)
{
    return srv_events_read(e, buf, max); /* waits for the next tick */
}

static void events_close(void *e)
{
    srv_events_close(e);
}

/* GET /api/events[?interval_ms=N]: the telemetry as server-sent events. */
static enum MHD_Result send_events(srv *s, struct MHD_Connection *c)
{
    srv_reply refusal = {0};
    const char *iv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "interval_ms");
    srv_events *e = srv_events_open(s, iv, &refusal);
    if (!e) return send_reply(s, c, refusal);
    return send_stream(s, c, e, events_read, events_close, "text/event-stream");
}

/* Answers 413 in the middle of a request body (a chunked body past the
 * limit) and shuts the sending side. libmicrohttpd queues a reply only
 * before the body or after all of it, so this one is written to the socket
 * directly; the caller must queue no other and close the connection once
 * the rest of the body has been read or drained. False when it could not
 * be written. */
static bool send_413_now(srv *s, struct MHD_Connection *c, srv_api api)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    srv_reply r = srv_error(api, 413, "the request body is larger than the limit of %zu bytes",
                            s->max_body);
    char *text = r.body ? sl_json_dump_text(r.body, false) : NULL;
    json_decref(r.body);
    if (!text) return false;
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 413 Content Too Large\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n%s%.200s%s\r\n",
                      strlen(text), s->cors_origin ? "Access-Control-Allow-Origin: " : "",
                      s->cors_origin ? s->cors_origin : "",
                      s->cors_origin ? "\r\nVary: Origin\r\n" : "");
    bool sent = hn > 0 && (size_t)hn < sizeof head &&
                sl_sock_send_all(ci->connect_fd, head, (size_t)hn) &&
                sl_sock_send_all(ci->connect_fd, text, strlen(text));
    free(text);
    if (!sent) return false;
    sl_sock_shut_send(ci->connect_fd);
    __atomic_add_fetch(&s->n_requests, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->n_4xx, 1, __ATOMIC_RELAXED);
    return true;
}

/* A CORS preflight: which methods and headers a page of the allowed
 * origin may use. */
static enum MHD_Result send_preflight(srv *s, struct MHD_Connection *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
    /* the headers the page asks for (the SDKs send x-stainless-*,
     * anthropic-beta, ...), when they are plain header names */
    const char *want = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   "Access-Control-Request-Headers");
    bool plain = want && want[0] && strlen(want) < 1024;
    for (const char *p = want; plain && *p; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                *p == '-' || *p == '_' || *p == ',' || *p == ' ';
    MHD_add_response_header(r, "Access-Control-Allow-Headers",
                            plain ? want : "Authorization, Content-Type, x-api-key, "
                                           "anthropic-version, anthropic-beta");
    MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    return queue(s, c, 204, r);
}

/* What a Host header names (RFC 9110 7.2: uri-host [":" port]). */
typedef enum host_kind { HOST_MALFORMED, HOST_LOOPBACK, HOST_OTHER } host_kind;

/* Whether p[0..n) is a port: up to five digits (empty is allowed, as in
 * "host:"). */
static bool is_port(const char *p, size_t n)
{
    if (n > 5) return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9') return false;
    return true;
}

/* Classifies a Host header: localhost, 127.x.y.z or [::1] (with or
 * without a port) is loopback; any other name or address made of the
 * characters a host name or IPv4 address may hold, or a bracketed IPv6
 * address, is another host; anything else (userinfo such as
 * "127.0.0.1:80@evil.com", paths, spaces, a port that is not digits) is
 * malformed. */
static host_kind classify_host(const char *h)
{
    char name[256];
    size_t n = strlen(h);
    if (n == 0 || n >= sizeof name) return HOST_MALFORMED;
    memcpy(name, h, n + 1);
    if (name[0] == '[') {
        char *e = strchr(name, ']');
        if (!e || (e[1] && (e[1] != ':' || !is_port(e + 2, strlen(e + 2))))) return HOST_MALFORMED;
        *e = '\0';
        struct in6_addr a6;
        if (inet_pton(AF_INET6, name + 1, &a6) != 1) return HOST_MALFORMED;
        return IN6_IS_ADDR_LOOPBACK(&a6) ? HOST_LOOPBACK : HOST_OTHER;
    }
    char *colon = strchr(name, ':');
    if (colon) {
        if (!is_port(colon + 1, strlen(colon + 1))) return HOST_MALFORMED;
        *colon = '\0';
    }
    if (!name[0]) return HOST_MALFORMED;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.' || *p == '_'))
            return HOST_MALFORMED;
    if (!strcasecmp(name, "localhost") || !strcasecmp(name, "localhost.")) return HOST_LOOPBACK;
    struct in_addr a;
    if (inet_pton(AF_INET, name, &a) == 1)
        return (ntohl(a.s_addr) >> 24) == 127 ? HOST_LOOPBACK : HOST_OTHER;
    return HOST_OTHER;
}

/* The request headers that decide how a request is framed and whom it is
 * for, counted (names compare without case). */
typedef struct header_tally {
    unsigned n_length, n_host, n_te;
    const char *length;       /* the first Content-Length */
    bool lengths_differ;      /* a later Content-Length says something else */
} header_tally;

static enum MHD_Result tally_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    header_tally *t = cls;
    if (!key) return MHD_YES;
    if (!strcasecmp(key, "Content-Length")) {
        if (t->n_length++ == 0)
            t->length = value ? value : "";
        else if (strcmp(value ? value : "", t->length))
            t->lengths_differ = true;
    } else if (!strcasecmp(key, "Host")) {
        t->n_host++;
    } else if (!strcasecmp(key, "Transfer-Encoding")) {
        t->n_te++;
    }
    return MHD_YES;
}

/* Why a request's framing is ambiguous (RFC 9112 6.3 and 3.2: a proxy in
 * front may read it another way than this server), or NULL when it is
 * not. */
static const char *framing_problem(struct MHD_Connection *c)
{
    header_tally t = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, tally_header, &t);
    if (t.lengths_differ) return "the request has Content-Length headers that differ";
    if (t.n_length && t.n_te)
        return "the request has both Content-Length and Transfer-Encoding";
    if (t.n_length && (!t.length[0] || strspn(t.length, "0123456789") != strlen(t.length)))
        return "the request's Content-Length is not a number";
    if (t.n_host > 1) return "the request has more than one Host header";
    return NULL;
}

/* Constant-time comparison of a presented key with the configured one. */
static bool key_matches(const char *given, const char *key)
{
    size_t lg = strlen(given), lk = strlen(key);
    unsigned diff = (unsigned)(lg ^ lk);
    for (size_t i = 0; i < lk; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < lg ? given[i] : 0);
    return diff == 0;
}

static bool authorised(const srv *s, struct MHD_Connection *c)
{
    if (!s->api_key) return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (auth && !strncasecmp(auth, "Bearer ", 7) && key_matches(auth + 7, s->api_key))
        return true;
    const char *xk = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
    return xk && key_matches(xk, s->api_key);
}

typedef enum route_kind { R_GET, R_POST, R_ANY } route_kind;

typedef struct route {
    const char *path;
    route_kind kind;
    srv_api api;
    srv_reply (*get)(srv *s);
    srv_reply (*post)(srv *s, json_t *body);
} route;

static const route routes[] = {
    {"/health", R_GET, SRV_API_OPENAI, srv_health, NULL},
    {"/slots", R_GET, SRV_API_OPENAI, srv_slots, NULL},
    {"/metrics", R_GET, SRV_API_OPENAI, NULL, NULL},
    {"/v1/health", R_GET, SRV_API_OPENAI, srv_health, NULL},
    {"/v1/models", R_GET, SRV_API_OPENAI, srv_models, NULL},
    {"/models", R_GET, SRV_API_OPENAI, srv_models, NULL},
    {"/v1/chat/completions", R_POST, SRV_API_OPENAI, NULL, srv_chat_completions},
    {"/chat/completions", R_POST, SRV_API_OPENAI, NULL, srv_chat_completions},
    {"/v1/completions", R_POST, SRV_API_OPENAI, NULL, srv_completions},
    {"/completions", R_POST, SRV_API_OPENAI, NULL, srv_completions},
    {"/tokenize", R_POST, SRV_API_OPENAI, NULL, srv_tokenize},
    {"/detokenize", R_POST, SRV_API_OPENAI, NULL, srv_detokenize},
    {"/apply-template", R_POST, SRV_API_OPENAI, NULL, srv_apply_template},
    {"/props", R_GET, SRV_API_OPENAI, srv_props, NULL},
    {"/completion", R_POST, SRV_API_OPENAI, NULL, srv_llama_completion},
    {"/v1/messages", R_POST, SRV_API_ANTHROPIC, NULL, srv_messages},
    {"/v1/messages/count_tokens", R_POST, SRV_API_ANTHROPIC, NULL, srv_count_tokens},
    {"/", R_GET, SRV_API_OPENAI, NULL, NULL},           /* the page (send_page) */
    {"/api/events", R_GET, SRV_API_OPENAI, NULL, NULL}, /* telemetry (send_events) */
    {"/api/version", R_GET, SRV_API_OLLAMA, srv_ollama_version, NULL},
    {"/api/tags", R_GET, SRV_API_OLLAMA, srv_ollama_tags, NULL},
    {"/api/ps", R_GET, SRV_API_OLLAMA, srv_ollama_ps, NULL},
    {"/api/show", R_POST, SRV_API_OLLAMA, NULL, srv_ollama_show},
    {"/api/chat", R_POST, SRV_API_OLLAMA, NULL, srv_ollama_chat},
    {"/api/generate", R_POST, SRV_API_OLLAMA, NULL, srv_ollama_generate},
};

/* The Ollama endpoints this server cannot serve (embeddings, model
 * management), any method: srv_ollama_refused says why */
static const route ollama_refused_route = {"/api/", R_ANY, SRV_API_OLLAMA, NULL, NULL};

/* POST /slots/{id}?action=save|restore */
static const route slot_action_route = {"/slots/", R_POST, SRV_API_OPENAI, NULL, NULL};
/* GET /v1/models/{id} (and /models/{id}) */
static const route model_route = {"/v1/models/", R_GET, SRV_API_OPENAI, NULL, NULL};

/* The {id} of GET /v1/models/{id} or /models/{id} in url, else NULL. */
static const char *model_id_of(const char *url)
{
    if (!strncmp(url, "/v1/models/", 11)) return url + 11;
    if (!strncmp(url, "/models/", 8)) return url + 8;
    return NULL;
}

static const route *find_route(const char *url)
{
    if (!strncmp(url, "/slots/", 7)) return &slot_action_route;
    if (model_id_of(url)) return &model_route;
    if (srv_ollama_refusable(url)) return &ollama_refused_route;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(url, routes[i].path)) return &routes[i];
    return NULL;
}

/* Whether a Content-Type names JSON (application/json, a +json type) or
 * is one a JSON body is commonly sent under by mistake (curl -d's form
 * type, text/plain): those bodies are read as JSON, as llama-server and
 * OpenAI do. */
static bool type_may_be_json(const char *ct)
{
    static const char *const ok[] = {"application/json", "application/x-www-form-urlencoded",
                                     "text/plain"};
    size_t n = strcspn(ct, "; \t");
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (n == strlen(ok[i]) && !strncasecmp(ct, ok[i], n)) return true;
    return n > 5 && !strncasecmp(ct + n - 5, "+json", 5);
}

/* The API whose error shape answers url (rt: its route, or NULL): an
 * unknown path under /v1/messages still answers in Anthropic's shape. */
static srv_api api_of(const route *rt, const char *url)
{
    return rt                                ? rt->api
           : !strncmp(url, "/v1/messages", 12) ? SRV_API_ANTHROPIC
           : !strncmp(url, "/api/", 5)         ? SRV_API_OLLAMA
                                               : SRV_API_OPENAI;
}

/* 404 for a path no route serves, 405 for a method its route does not
 * take; status 0 when the request may go on. */
static srv_reply route_refusal(const route *rt, srv_api api, const char *url, const char *method)
{
    if (!rt)
        return srv_error(api, 404, "no endpoint %.200s: this server answers "
                         "POST /v1/chat/completions, /v1/completions, "
                         "/v1/messages (and count_tokens), /completion, "
                         "/tokenize, /detokenize, /apply-template, Ollama's "
                         "/api/chat, /api/generate, /api/show; GET /v1/models, /props, "
                         "/health, /metrics, /slots, /api/tags, /api/ps, /api/version, "
                         "/api/events and the page at / (no responses, embeddings, images "
                         "or audio)", url);
    bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
    bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    if ((rt->kind == R_POST && !post) || (rt->kind == R_GET && !get))
        return srv_error(api, 405, "%.200s takes %s requests, not %.20s", url,
                         rt->kind == R_POST ? "POST" : "GET (or HEAD)", method);
    return (srv_reply){0, NULL, NULL};
}

/* A routed request's answer: GET handlers as they are, POST bodies parsed
 * strictly as JSON objects first (slot_id and action: POST /slots/{id}). */
static srv_reply dispatch(srv *s, const route *rt, const char *url, const char *ctype,
                          const char *text, size_t len, const char *slot_id, const char *action)
{
    if (rt == &model_route) return srv_model_one(s, model_id_of(url));
    if (rt == &ollama_refused_route) return srv_ollama_refused(s, url);
    if (rt->kind == R_GET)
        return rt->get ? rt->get(s)
                       : srv_error(rt->api, 404, "%.200s is answered as text by the HTTP layer",
                                   url);
    json_t *body = NULL;
    sl_err err = {0};
    if (sl_json_parse(text ? text : "", len, SL_JSON_MAX_DEPTH, &body, &err)) {
        if (ctype && !type_may_be_json(ctype))
            return srv_error(rt->api, 415, "the request body must be JSON (Content-Type: "
                             "application/json), got Content-Type '%.80s'", ctype);
        return srv_error(rt->api, 400, "the request body is not valid JSON (UTF-8): %s", err.msg);
    }
    if (!json_is_object(body)) {
        json_decref(body);
        return srv_error(rt->api, 400, "the request body must be a JSON object");
    }
    srv_reply r = rt == &slot_action_route ? srv_slot_action(s, slot_id, action, body)
                                           : rt->post(s, body);
    json_decref(body);
    return r;
}

/* The path with repeated slashes collapsed and a trailing slash dropped
 * ("/v1//chat/completions/" from a base URL ending in "/"), into buf; a
 * path that does not fit is left as it is (no route is that long). */
static const char *tidy_path(const char *url, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *p = url; *p; p++) {
        if (*p == '/' && n && buf[n - 1] == '/') continue;
        if (n + 1 >= cap) return url;
        buf[n++] = *p;
    }
    if (n > 1 && buf[n - 1] == '/') n--;
    buf[n] = '\0';
    return buf;
}

srv_reply srv_answer_request(srv *s, const char *method, const char *raw_url,
                             const char *action, const char *ctype, const char *body, size_t len)
{
    char path[1024];
    const char *url = tidy_path(raw_url, path, sizeof path);
    const route *rt = find_route(url);
    srv_reply refusal = route_refusal(rt, api_of(rt, url), url, method);
    if (refusal.status) return refusal;
    return dispatch(s, rt, url, ctype, body, len, rt == &slot_action_route ? url + 7 : NULL,
                    action);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *raw_url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    srv *s = cls;
    http_req *q = *con_cls;
    char path[1024];
    const char *url = tidy_path(raw_url, path, sizeof path);
    const route *rt = find_route(url);
    const srv_api api = api_of(rt, url);
    if (!q) {
        if (s->deadline) {
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
            srv_deadline_head_done(s->deadline, ci ? ci->socket_context : NULL);
        }
        q = calloc(1, sizeof *q);
        if (!q) return MHD_NO;
        *con_cls = q;
        q->answered = true; /* until the checks pass */
        const char *bad_framing = framing_problem(c);
        if (bad_framing) return send_reply(s, c, srv_error(api, 400, "%s", bad_framing));
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        if (s->loopback) {
            host_kind hk = host ? classify_host(host) : HOST_MALFORMED;
            if (!host)
                return send_reply(s, c, srv_error(api, 400, "a Host header is needed (this "
                                               "server listens on loopback only)"));
            if (hk == HOST_MALFORMED)
                return send_reply(s, c, srv_error(api, 400, "the Host header '%.100s' is not "
                                               "a host name or address with an optional port",
                                               host));
            if (hk != HOST_LOOPBACK)
                return send_reply(s, c, srv_error(api, 403, "this server listens on loopback "
                                               "only; requests for the host '%.100s' are "
                                               "refused", host));
        }
        if (!strcmp(method, "OPTIONS") && s->cors_origin && rt) return send_preflight(s, c);
        /* /health is public (load balancers ask it without a key), and so
         * is the page (it asks for the key) */
        if (!(rt && (rt->get == srv_health || !strcmp(url, "/"))) && !authorised(s, c))
            return send_reply(s, c, srv_error(api, 401, "a valid API key is needed: send "
                                           "'Authorization: Bearer KEY'"));
        srv_reply refusal = route_refusal(rt, api, url, method);
        if (refusal.status) return send_reply(s, c, refusal);
        /* listening starts before the model is loaded: until it is, 503
         * (llama-server's answer, which clients wait out); the page loads
         * and waits too */
        if (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) && strcmp(url, "/"))
            return send_reply(s, c, srv_error(api, 503, "loading model: the server answers "
                                           "once '%.200s' is loaded", s->model_name));
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->max_body)
            return send_reply(s, c, srv_error(api, 413, "the request body (%.30s bytes) is larger "
                                           "than the limit of %zu bytes", cl, s->max_body));
        if (rt == &slot_action_route) {
            const char *act = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "action");
            q->slot_id = strdup(url + 7);
            q->action = act ? strdup(act) : NULL;
            if (!q->slot_id || (act && !q->action)) return MHD_NO;
        }
        q->answered = false;
        return MHD_YES;
    }
    if (q->cut_off) {
        /* the 413 is out: read on a while (closing with unread input would
         * reset the connection and could lose the 413 on the client's
         * side), then close; no reply may follow the one written */
        size_t n = *upload_size;
        *upload_size = 0;
        if (!n) return MHD_NO; /* the whole body came: close */
        q->drained += n;
        return q->drained <= s->max_body ? MHD_YES : MHD_NO;
    }
    if (q->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (q->len + n > s->max_body) {
            /* a chunked body (no Content-Length to refuse it by) has
             * passed the limit: answer now, not when the client is done */
            q->cut_off = send_413_now(s, c, api);
            if (!q->cut_off) return MHD_NO;
            return MHD_YES;
        }
        if (q->len + n + 1 > q->cap) {
            size_t nc = q->cap ? q->cap : 4096;
            while (nc < q->len + n + 1) nc *= 2;
            char *nb = realloc(q->body, nc);
            if (!nb) return MHD_NO;
            q->body = nb;
            q->cap = nc;
        }
        memcpy(q->body + q->len, upload, n);
        q->len += n;
        return MHD_YES;
    }
    q->answered = true;
    if (!strcmp(url, "/metrics")) return send_metrics(s, c);
    if (!strcmp(url, "/")) return send_page(s, c);
    if (!strcmp(url, "/api/events")) return send_events(s, c);
    const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    srv_reply r = dispatch(s, rt, url, ctype, q->body, q->len, q->slot_id, q->action);
    /* dispatch may have waited for generation */
    touch(c);
    /* the Ollama API streams NDJSON, the others server-sent events */
    return send_reply_as(s, c, r, api == SRV_API_OLLAMA ? "application/x-ndjson"
                                                        : "text/event-stream");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    srv *s = cls;
    if (s->deadline) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        srv_deadline_rearm(s->deadline, ci ? ci->socket_context : NULL);
    }
    http_req *q = *con_cls;
    if (!q) return;
    free(q->body);
    free(q->slot_id);
    free(q->action);
    free(q);
    *con_cls = NULL;
}

/* A connection opens or closes: the head deadline's table follows. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    srv *s = cls;
    if (!s->deadline) return;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) srv_deadline_opened(s->deadline, ci->connect_fd, socket_context);
    } else {
        srv_deadline_closed(s->deadline, socket_context);
    }
}

static bool addr_is_loopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
    return false;
}

/* The address --host names, numerically: an IPv4 dotted quad, an IPv6
 * address (brackets optional) or "localhost" (127.0.0.1, RFC 6761). Never a
 * name lookup: a static glibc's getaddrinfo needs its NSS modules at run
 * time, which a phone (Android, Termux) does not have. False for anything
 * else. */
static bool listen_addr(const char *host, int port, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    const char *name = !strcasecmp(host, "localhost") ? "127.0.0.1" : host;
    char inner[64];
    size_t n = strlen(name);
    if (n >= 2 && n < sizeof inner + 2 && name[0] == '[' && name[n - 1] == ']') {
        memcpy(inner, name + 1, n - 2);
        inner[n - 2] = 0;
        name = inner;
    } else if (inet_pton(AF_INET, name, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        return true;
    }
    if (inet_pton(AF_INET6, name, &v6->sin6_addr) != 1) return false;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    return true;
}

int srv_http_start(srv *s, const char *host, int port, const srv_http_limits *lim,
                   int *bound_port)
{
    /* a descriptor per connection, and the model's files, the I/O ring and
     * the prompt cache besides: where the soft limit is lower (1024 is
     * common), raise it, or hold fewer connections than asked */
    enum { FDS_BESIDES = 256 };
    unsigned max_conns = lim->max_conns;
    uint64_t fds = sl_fd_limit_raise((uint64_t)max_conns + FDS_BESIDES);
    if (fds < (uint64_t)max_conns + FDS_BESIDES) {
        unsigned fit = fds > FDS_BESIDES + 16 ? (unsigned)(fds - FDS_BESIDES) : 16;
        fprintf(stderr, "sluice serve: warning: the open-file limit is %llu; holding at most %u "
                "connections instead of %u\n", (unsigned long long)fds, fit, max_conns);
        max_conns = fit;
    }
    struct sockaddr_storage addr;
    if (!listen_addr(host, port, &addr)) {
        fprintf(stderr, "sluice serve: --host '%s' is not a numeric address (give one such as "
                "127.0.0.1, 0.0.0.0, ::1 or ::; host names are not looked up)\n", host);
        return 1;
    }
    const struct sockaddr *sa = (const struct sockaddr *)&addr;
    s->loopback = addr_is_loopback(sa);
    /* poll(), not select(): select cannot watch descriptors above 1023 */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL;
    if (sa->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->deadline = lim->timeout_s ? srv_deadline_start(lim->timeout_s) : NULL;
    s->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s,
                                 MHD_OPTION_SOCK_ADDR, sa,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                 MHD_OPTION_CONNECTION_LIMIT, max_conns,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, lim->max_conns_per_ip,
                                 MHD_OPTION_CONNECTION_TIMEOUT, lim->timeout_s,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        srv_deadline_halt(s->deadline);
        srv_deadline_free(s->deadline);
        s->deadline = NULL;
        fprintf(stderr, "sluice serve: cannot listen on %s port %d (in use, or not an address "
                "of this machine?)\n", host, port);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    *bound_port = di ? di->port : port;
    return 0;
}

void srv_http_stop(srv *s)
{
    srv_deadline_halt(s->deadline);
    if (s->daemon) MHD_stop_daemon(s->daemon); /* closes the rest: their entries go */
    s->daemon = NULL;
    srv_deadline_free(s->deadline);
    s->deadline = NULL;
}
