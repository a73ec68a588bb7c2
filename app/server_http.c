/* server_http.c - `sluice serve`'s HTTP side on libmicrohttpd (server.h).
 *
 * One thread per connection (libmicrohttpd's), so a handler may wait for
 * its job. Each request: the Host check (bound to loopback, a Host that
 * is not a loopback name is refused: DNS rebinding), the API key, the
 * body gathered up to the limit (413 past it: told by Content-Length
 * before anything is read, or once the body grows past it), JSON parsed
 * strictly (util/json.h), then the route's handler. A streamed reply is a
 * reader over its job's output: when the client goes away libmicrohttpd
 * frees the reader, which cancels the job at its next token. With --cors
 * ORIGIN every response allows that origin and OPTIONS preflights are
 * answered; without it no CORS header is sent (browsers keep other
 * origins' pages out). GET endpoints answer HEAD too. Until the model is
 * loaded (srv.ready) every request is a 503. A body that is not JSON is a
 * 400, or a 415 when its Content-Type says it was never meant to be. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "server.h"

typedef struct http_req {
    char *body;
    size_t len, cap;
    bool too_large;
    bool answered;    /* an error was queued before the body: ignore the rest */
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
    if (api == SRV_API_ANTHROPIC)
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

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    srv_job *j = cls;
    size_t n = srv_job_read(j, buf, max);
    return n ? (ssize_t)n : (ssize_t)MHD_CONTENT_READER_END_OF_STREAM;
}

static void sse_free(void *cls)
{
    srv_job *j = cls;
    srv_job_cancel(j); /* the client is gone, or the stream ended: nothing more to do */
    srv_job_unref(j);
}

static enum MHD_Result send_reply(srv *s, struct MHD_Connection *c, srv_reply r)
{
    if (!r.job) return send_json(s, c, r.status, r.body);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
                                                                  sse_read, r.job, sse_free);
    if (!resp) {
        srv_job_cancel(r.job);
        srv_job_unref(r.job);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    return queue(s, c, 200, resp);
}

static enum MHD_Result send_metrics(srv *s, struct MHD_Connection *c)
{
    size_t len = 0;
    char *t = srv_metrics_text(s, &len);
    if (!t) return send_reply(s, c, srv_error(SRV_API_OPENAI, 500, "out of memory"));
    struct MHD_Response *r = MHD_create_response_from_buffer(len, t, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
    return queue(s, c, 200, r);
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

/* Whether a Host header names this machine's loopback: localhost,
 * 127.x.y.z or [::1], with or without a port. */
static bool host_is_loopback(const char *h)
{
    char name[256];
    size_t n = strlen(h);
    if (n == 0 || n >= sizeof name) return false;
    memcpy(name, h, n + 1);
    if (name[0] == '[') {
        char *e = strchr(name, ']');
        if (!e || (e[1] && e[1] != ':')) return false;
        *e = '\0';
        return !strcmp(name + 1, "::1");
    }
    char *colon = strchr(name, ':');
    if (colon) *colon = '\0';
    if (!strcasecmp(name, "localhost") || !strcasecmp(name, "localhost.")) return true;
    struct in_addr a;
    return inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
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

typedef enum route_kind { R_GET, R_POST } route_kind;

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
};

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

static srv_reply dispatch(srv *s, const route *rt, const char *url, const char *ctype,
                          const http_req *q)
{
    if (rt == &model_route) return srv_model_one(s, model_id_of(url));
    if (rt->kind == R_GET) return rt->get(s);
    if (q->too_large)
        return srv_error(rt->api, 413, "the request body is larger than the limit of %zu bytes",
                         s->max_body);
    json_t *body = NULL;
    sl_err err = {0};
    if (sl_json_parse(q->body ? q->body : "", q->len, SL_JSON_MAX_DEPTH, &body, &err)) {
        if (ctype && !type_may_be_json(ctype))
            return srv_error(rt->api, 415, "the request body must be JSON (Content-Type: "
                             "application/json), got Content-Type '%.80s'", ctype);
        return srv_error(rt->api, 400, "the request body is not valid JSON (UTF-8): %s", err.msg);
    }
    if (!json_is_object(body)) {
        json_decref(body);
        return srv_error(rt->api, 400, "the request body must be a JSON object");
    }
    srv_reply r = rt == &slot_action_route ? srv_slot_action(s, q->slot_id, q->action, body)
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
    /* an unknown path under /v1/messages still answers in Anthropic's shape */
    const srv_api api = rt ? rt->api
                           : !strncmp(url, "/v1/messages", 12) ? SRV_API_ANTHROPIC : SRV_API_OPENAI;
    if (!q) {
        q = calloc(1, sizeof *q);
        if (!q) return MHD_NO;
        *con_cls = q;
        q->answered = true; /* until the checks pass */
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        if (s->loopback && host && !host_is_loopback(host))
            return send_reply(s, c, srv_error(api, 403, "this server listens on loopback only; "
                                           "requests for the host '%.100s' are refused", host));
        if (!strcmp(method, "OPTIONS") && s->cors_origin && rt) return send_preflight(s, c);
        /* /health is public (load balancers ask it without a key) */
        if (!(rt && rt->get == srv_health) && !authorised(s, c))
            return send_reply(s, c, srv_error(api, 401, "a valid API key is needed: send "
                                           "'Authorization: Bearer KEY'"));
        if (!rt)
            return send_reply(s, c, srv_error(api, 404, "no endpoint %.200s: this server answers "
                                           "POST /v1/chat/completions, /v1/completions, "
                                           "/v1/messages (and count_tokens), /completion, "
                                           "/tokenize, /detokenize, /apply-template; GET "
                                           "/v1/models, /props, /health, /metrics, /slots "
                                           "(no responses, embeddings, images or audio)", url));
        bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
        bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
        if ((rt->kind == R_POST && !post) || (rt->kind == R_GET && !get))
            return send_reply(s, c, srv_error(api, 405, "%.200s takes %s requests, not %.20s", url,
                                           rt->kind == R_POST ? "POST" : "GET (or HEAD)", method));
        /* listening starts before the model is loaded: until it is, 503
         * (llama-server's answer, which clients wait out) */
        if (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE))
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
    if (q->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (q->too_large || q->len + n > s->max_body) {
            q->too_large = true;
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
    const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    return send_reply(s, c, dispatch(s, rt, url, ctype, q));
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    http_req *q = *con_cls;
    if (!q) return;
    free(q->body);
    free(q->slot_id);
    free(q->action);
    free(q);
    *con_cls = NULL;
}

static bool addr_is_loopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
    return false;
}

int srv_http_start(srv *s, const char *host, int port, int *bound_port)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int gai = getaddrinfo(host, ps, &hints, &res);
    if (gai) {
        fprintf(stderr, "sluice serve: --host '%s': %s\n", host, gai_strerror(gai));
        return 1;
    }
    s->loopback = addr_is_loopback(res->ai_addr);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    if (res->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s,
                                 MHD_OPTION_SOCK_ADDR, res->ai_addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
                                 MHD_OPTION_END);
    freeaddrinfo(res);
    if (!s->daemon) {
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
    if (s->daemon) MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}
